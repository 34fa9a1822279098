//! The annotated configuration examples in conf/ must stay valid.

use scr::params::{Params, Sources};
use std::path::Path;

#[test]
fn shipped_examples_load() {
    let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("conf");
    let user = conf.join("scrconf.user").display().to_string();
    let params = Params::load(&Sources {
        env: Box::new(move |k| (k == "SCR_CONF_FILE").then(|| user.clone())),
        env_names: vec!["SCR_CONF_FILE".into()],
        system_config: Some(conf.join("scr.conf")),
        prefix: None,
        app_config: None,
    })
    .unwrap();
    assert!(params.warnings.is_empty(), "{:?}", params.warnings);
    assert_eq!(params.get("SCR_CNTL_BASE"), Some("/dev/shm"));
    assert_eq!(
        params.count("SCR_FLUSH"),
        Some(20),
        "user file overrides the system file"
    );
    assert_eq!(params.descriptors_of("CKPT").count(), 2);
    assert_eq!(
        params
            .descriptors_of("CNTLDIR")
            .next()
            .unwrap()
            .attr("BYTES"),
        Some("64MB")
    );
}
