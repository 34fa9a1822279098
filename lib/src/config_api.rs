//! `SCR_Config` in a process: before `SCR_Init` the application's settings collect here
//! (starting from what earlier runs kept in `<prefix>/.scr/app.conf`) and every change is
//! checked by resolving the parameters with it; `SCR_Init` loads the parameters with this
//! layer and rank 0 keeps it for later runs. After `SCR_Init` only queries are answered,
//! from the parameters the job runs with.

use scr::app_config::{self, AppConfig, Request};
use scr::params::{Params, Sources};
use scr::{Error, Result};
use std::path::PathBuf;
use std::sync::Mutex;

struct Layer {
    settings: AppConfig,
    /// Where earlier runs' settings were read from (the prefix as known before SCR_Init).
    kept_in: PathBuf,
    changed: bool,
}

static LAYER: Mutex<Option<Layer>> = Mutex::new(None);

/// The prefix before SCR_Init: SCR_PREFIX, else the working directory.
fn prefix_before_init() -> PathBuf {
    std::env::var_os("SCR_PREFIX")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."))
}

fn with_layer<R>(f: impl FnOnce(&mut Layer) -> Result<R>) -> Result<R> {
    let mut guard = LAYER.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() {
        let kept_in = app_config::app_config_path(&prefix_before_init());
        let settings = AppConfig::read_or_warn(&kept_in, |e| {
            say!("SCR: WARNING: {e}; the SCR_Config settings kept there are ignored")
        })?;
        *guard = Some(Layer {
            settings,
            kept_in,
            changed: false,
        });
    }
    f(guard.as_mut().expect("loaded above"))
}

/// The process's sources with `settings` as the SCR_Config layer; `origin` names the layer
/// in messages.
fn sources_with(settings: &AppConfig, origin: &str) -> Sources {
    let mut sources = Sources::from_process();
    sources.app_config = Some(settings.as_file(origin));
    sources
}

/// Where SCR_Init reads its parameters from: the process's sources and this layer.
pub fn sources() -> Result<Sources> {
    with_layer(|l| {
        let origin = format!("SCR_Config settings (kept in {})", l.kept_in.display());
        Ok(sources_with(&l.settings, &origin))
    })
}

/// Keeps this run's settings in `<prefix>/.scr/app.conf` for later runs (rank 0, in
/// SCR_Init, once the prefix's `.scr` exists). Nothing changed: nothing written.
pub fn keep(prefix: &std::path::Path) -> Result<()> {
    with_layer(|l| {
        let path = app_config::app_config_path(prefix);
        if l.changed || path != l.kept_in {
            if l.changed || !l.settings.is_empty() {
                l.settings.write(&path)?;
            }
            l.kept_in = path;
            l.changed = false;
        }
        Ok(())
    })
}

/// `SCR_Config` before SCR_Init: applies a set or unset, or answers a query from the
/// parameters as they would resolve now.
pub fn before_init(line: &str) -> Result<Option<String>> {
    let request = app_config::parse_request(line)?;
    with_layer(|l| match &request {
        Request::Query { .. } => {
            let params = Params::load(&sources_with(&l.settings, "SCR_Config"))?;
            Ok(app_config::answer(&params, &request))
        }
        _ => {
            let mut next = l.settings.clone();
            next.apply(&request)?;
            // a bad value is refused now, not at SCR_Init
            Params::load(&sources_with(&next, "SCR_Config"))?;
            l.settings = next;
            l.changed = true;
            Ok(None)
        }
    })
}

/// `SCR_Config` after SCR_Init: queries only.
pub fn after_init(params: &Params, line: &str) -> Result<Option<String>> {
    let request = app_config::parse_request(line)?;
    match request {
        Request::Query { .. } => Ok(app_config::answer(params, &request)),
        _ => Err(Error::Config {
            origin: "SCR_Config".into(),
            what: format!(
                "{line:?}: settings take effect only before SCR_Init; call SCR_Config before it"
            ),
        }),
    }
}
