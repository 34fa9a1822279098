//! `SCR_Config` in a process: before `SCR_Init` the application's settings collect here
//! and every change is checked by resolving the parameters with it; `SCR_Init` loads the
//! parameters with this layer and rank 0 records it in `<prefix>/.scr/app.conf` for SCR's
//! commands (the drain after the job reads the prefix the application set, as SCR v3.1's
//! scripts do). A later run of the library never reads that file: what an application sets
//! configures the run that sets it, and a setting one run made (`SCR_PREFIX_PURGE=1`) must
//! not act in a run that did not ask for it. After `SCR_Init` only queries are answered,
//! from the parameters the job runs with.

use scr::app_config::{self, AppConfig, Request};
use scr::params::{Params, Sources};
use scr::{Error, Result};
use std::path::PathBuf;
use std::sync::Mutex;

/// What this process's application set through `SCR_Config`, and where it was last recorded.
#[derive(Default)]
struct Layer {
    settings: AppConfig,
    /// The `app.conf` this process recorded the settings in (none yet).
    recorded_in: Option<PathBuf>,
    changed: bool,
}

static LAYER: Mutex<Option<Layer>> = Mutex::new(None);

fn with_layer<R>(f: impl FnOnce(&mut Layer) -> Result<R>) -> Result<R> {
    let mut guard = LAYER.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(Layer::default))
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
    with_layer(|l| Ok(sources_with(&l.settings, "SCR_Config")))
}

/// Records this run's settings in `<prefix>/.scr/app.conf` for SCR's commands (rank 0, in
/// SCR_Init, once the prefix's `.scr` exists): a run that set nothing removes what an
/// earlier run recorded, so the drain after it never acts on settings it did not make.
/// Recorded already, and nothing changed since: nothing written.
pub fn keep(prefix: &std::path::Path) -> Result<()> {
    with_layer(|l| {
        let path = app_config::app_config_path(prefix);
        if l.changed || l.recorded_in.as_ref() != Some(&path) {
            l.settings.write(&path)?;
            l.recorded_in = Some(path);
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
