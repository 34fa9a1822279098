//! What an application sets through `SCR_Config` (SCR v3.1): a configuration layer that
//! ranks below the environment and the user's configuration file and above the system
//! file, recorded in `<prefix>/.scr/app.conf` for SCR's commands (never read back by a later
//! run of the library: a setting configures the run that makes it).
//!
//! A request is one line of SCR's configuration syntax: `KEY=VALUE` sets, `KEY=` unsets,
//! `KEY` asks for the value in effect; descriptor lines (`CKPT=0 TYPE=XOR SET_SIZE=16`,
//! `STORE=/dev/shm COUNT=1`) set a descriptor and `CKPT=0 TYPE` asks for one attribute.

use crate::config::{ConfigEntry, ConfigFile, escape_value};
use crate::error::{Error, Result};
use crate::params::{DESCRIPTOR_KEYS, Params};
use std::path::{Path, PathBuf};

/// Why `SCR_Config` cannot set a parameter: SCR's commands read it without the
/// application, so a setting only the application made would never reach them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotSettable {
    /// Where the cache or control directory is.
    Place,
    /// What scr-run reads before it launches the application.
    Launch,
}

impl NotSettable {
    /// Why, as a sentence about one parameter ("it …").
    pub fn why(self) -> &'static str {
        match self {
            NotSettable::Place => {
                "it says where the cache or control directory is, which scr-run's scavenge and \
                 drain and scr list-dir find from the environment and configuration files, \
                 without the application"
            }
            NotSettable::Launch => "scr-run reads it before it launches the application",
        }
    }
}

/// The parameters `SCR_Config` refuses, each with why. SCR v3.1 refuses a longer list (its
/// job scripts' parameters); those only the library reads here (SCR_CACHE_SIZE,
/// SCR_JOB_NAME, the event log's switches) are set, as the user guide shows with
/// SCR_CACHE_SIZE.
pub const NOT_SETTABLE: &[(&str, NotSettable)] = &[
    ("CACHE", NotSettable::Place),
    ("CACHEDIR", NotSettable::Place),
    ("CNTLDIR", NotSettable::Place),
    ("SCR_CACHE_BASE", NotSettable::Place),
    ("SCR_CNTL_BASE", NotSettable::Place),
    ("SCR_EXCLUDE_NODES", NotSettable::Launch),
    ("SCR_WATCHDOG_TIMEOUT", NotSettable::Launch),
    ("SCR_WATCHDOG_TIMEOUT_PFS", NotSettable::Launch),
];

/// One `SCR_Config` call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// `KEY=VALUE [ATTR=VALUE …]`
    Set(ConfigEntry),
    /// `KEY=` (a parameter) or `KEY=NAME ATTR=` (one attribute of a descriptor)
    Unset {
        key: String,
        name: Option<String>,
        attr: Option<String>,
    },
    /// `KEY`, or `KEY=NAME ATTR` for a descriptor's attribute
    Query {
        key: String,
        name: Option<String>,
        attr: Option<String>,
    },
}

const ORIGIN: &str = "SCR_Config";

fn bad(line: &str, what: &str) -> Error {
    Error::Config {
        origin: ORIGIN.into(),
        what: format!("{line:?}: {what}"),
    }
}

/// Reads one request. Keys are case-insensitive, as in configuration files.
pub fn parse_request(line: &str) -> Result<Request> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.is_empty() {
        return Err(bad(line, "empty; write KEY=VALUE, KEY= or KEY"));
    }
    if line.contains('\n') {
        return Err(bad(line, "one setting per call"));
    }
    let key_of = |w: &str| w.split('=').next().unwrap_or(w).to_ascii_uppercase();
    match words.as_slice() {
        [key] if !key.contains('=') => Ok(Request::Query {
            key: key.to_ascii_uppercase(),
            name: None,
            attr: None,
        }),
        [setting] if setting.ends_with('=') && setting.matches('=').count() == 1 => {
            Ok(Request::Unset {
                key: key_of(setting),
                name: None,
                attr: None,
            })
        }
        [first, .., last] if !last.contains('=') || last.ends_with('=') => {
            // a descriptor's attribute: `CKPT=0 TYPE` asks, `CKPT=0 TYPE=` unsets
            let (key, name) = first
                .split_once('=')
                .filter(|(_, n)| !n.is_empty())
                .ok_or_else(|| bad(line, "expected KEY=NAME before the attribute"))?;
            if words.len() != 2 {
                return Err(bad(
                    line,
                    "name one attribute: KEY=NAME ATTR or KEY=NAME ATTR=",
                ));
            }
            let key = key.to_ascii_uppercase();
            if !DESCRIPTOR_KEYS.contains(&key.as_str()) {
                return Err(bad(
                    line,
                    &format!("{key} is not a descriptor (CKPT, STORE, …)"),
                ));
            }
            let name = Some(name.to_string());
            let attr = Some(key_of(last));
            if last.ends_with('=') {
                Ok(Request::Unset { key, name, attr })
            } else {
                Ok(Request::Query { key, name, attr })
            }
        }
        _ => {
            let file = ConfigFile::parse(line, ORIGIN)?;
            let entry = file
                .entries
                .into_iter()
                .next()
                .ok_or_else(|| bad(line, "nothing to set"))?;
            Ok(Request::Set(entry))
        }
    }
}

/// The settings made through `SCR_Config`, in the order made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppConfig {
    entries: Vec<ConfigEntry>,
}

/// Where the settings of earlier runs are kept.
pub fn app_config_path(prefix: &Path) -> PathBuf {
    crate::layout::prefix_hidden_dir(prefix).join("app.conf")
}

impl AppConfig {
    /// The settings kept by earlier runs; none when the file does not exist.
    /// Only a file of the user's that nobody else can write, in a `.scr` of the user's, is
    /// read: otherwise [`Error::Untrusted`] (callers pass over it with a warning).
    pub fn read(path: &Path) -> Result<AppConfig> {
        if path.symlink_metadata().is_err() {
            return Ok(AppConfig::default());
        }
        if let Some(dir) = path.parent() {
            crate::safe_fs::check_owned_dir(dir).map_err(|e| match e {
                Error::Invalid { path, what } => Error::Untrusted { path, what },
                e => e,
            })?;
        }
        Ok(AppConfig {
            entries: ConfigFile::read_trusted(path)?.entries,
        })
    }

    /// [`AppConfig::read`], where settings someone else could have written are passed over:
    /// `warn` is told why, and no settings are read.
    pub fn read_or_warn(path: &Path, warn: impl FnOnce(&Error)) -> Result<AppConfig> {
        match AppConfig::read(path) {
            Err(e) if e.is_untrusted() => {
                warn(&e);
                Ok(AppConfig::default())
            }
            read => read,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Applies a set or unset (a query changes nothing). A parameter set again replaces its
    /// value; a descriptor set again (same key and name) gains or replaces attributes.
    pub fn apply(&mut self, request: &Request) -> Result<()> {
        match request {
            Request::Set(entry) => {
                if let Some((_, kind)) = NOT_SETTABLE.iter().find(|(k, _)| *k == entry.key) {
                    return Err(bad(
                        &entry.key,
                        &format!(
                            "SCR_Config cannot set it: {}; set it in the environment or a \
                             configuration file",
                            kind.why()
                        ),
                    ));
                }
                if DESCRIPTOR_KEYS.contains(&entry.key.as_str()) {
                    match self
                        .entries
                        .iter_mut()
                        .find(|e| e.key == entry.key && e.value == entry.value)
                    {
                        Some(existing) => {
                            for (k, v) in &entry.children {
                                existing.children.retain(|(ek, _)| ek != k);
                                existing.children.push((k.clone(), v.clone()));
                            }
                        }
                        None => self.entries.push(entry.clone()),
                    }
                } else {
                    if !entry.children.is_empty() {
                        return Err(bad(
                            &entry.key,
                            "takes a single value, but attributes follow it",
                        ));
                    }
                    self.entries.retain(|e| e.key != entry.key);
                    self.entries.push(entry.clone());
                }
            }
            Request::Unset { key, name, attr } => match (name, attr) {
                (Some(name), Some(attr)) => {
                    for e in self
                        .entries
                        .iter_mut()
                        .filter(|e| &e.key == key && &e.value == name)
                    {
                        e.children.retain(|(k, _)| k != attr);
                    }
                }
                _ => self.entries.retain(|e| &e.key != key),
            },
            Request::Query { .. } => {}
        }
        for (n, e) in self.entries.iter_mut().enumerate() {
            e.line = n + 1;
        }
        Ok(())
    }

    /// The layer as a configuration file for [`Params::load`]; `origin` names it in messages.
    pub fn as_file(&self, origin: &str) -> ConfigFile {
        ConfigFile {
            origin: origin.to_string(),
            entries: self.entries.clone(),
            others_may_read: None,
        }
    }

    /// The layer in configuration-file syntax, one setting a line.
    pub fn text(&self) -> String {
        let mut out = String::from(
            "# Settings made through SCR_Config in the last run, for SCR's commands.\n",
        );
        for e in &self.entries {
            // a password stays in the run's memory: the commands take theirs from the
            // environment or ~/.my.cnf, as the job's other processes do
            if e.key.eq_ignore_ascii_case("SCR_LOG_DB_PASS") {
                out.push_str("# SCR_LOG_DB_PASS was set, and is not recorded in a file\n");
                continue;
            }
            // values are stored expanded: written so that reading them expands nothing
            out.push_str(&format!("{}={}", e.key, escape_value(&e.value)));
            for (k, v) in &e.children {
                out.push_str(&format!(" {k}={}", escape_value(v)));
            }
            out.push('\n');
        }
        out
    }

    /// Writes the layer to `path` atomically (or removes the file when the layer is empty).
    pub fn write(&self, path: &Path) -> Result<()> {
        // through `.scr` opened once: whoever may rename in the prefix cannot point the
        // write or the removal at a directory of the user's elsewhere
        let text = if self.is_empty() {
            String::new()
        } else {
            self.text()
        };
        crate::io::replace_in_held_dir(path, text.as_bytes(), crate::io::PRIVATE_FILE, true)
    }
}

/// The value a query asks for, from resolved parameters: a parameter's value, or the
/// attribute of the last descriptor of that kind and name.
pub fn answer(params: &Params, request: &Request) -> Option<String> {
    let Request::Query { key, name, attr } = request else {
        return None;
    };
    match (name, attr) {
        (Some(name), Some(attr)) => params
            .descriptors_of(key)
            .filter(|d| &d.name == name)
            .filter_map(|d| d.attr(attr))
            .last()
            .map(str::to_string),
        // a job no drain follows flushes each checkpoint in the background where no flush
        // is chosen: what it runs with is 1 and 1, whatever the built-in default says
        _ if ["SCR_FLUSH", "SCR_FLUSH_ASYNC"]
            .iter()
            .any(|k| k.eq_ignore_ascii_case(key))
            && crate::params::settings::flush_each_for_want_of_a_drain(params) =>
        {
            Some("1".to_string())
        }
        _ => params.get(key).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(line: &str) -> Request {
        let r = parse_request(line).unwrap();
        assert!(matches!(r, Request::Set(_)), "{line}: {r:?}");
        r
    }

    #[test]
    fn requests_set_unset_and_query_parameters_and_descriptors() {
        assert_eq!(
            parse_request("scr_flush").unwrap(),
            Request::Query {
                key: "SCR_FLUSH".into(),
                name: None,
                attr: None
            }
        );
        assert_eq!(
            parse_request("SCR_FLUSH=").unwrap(),
            Request::Unset {
                key: "SCR_FLUSH".into(),
                name: None,
                attr: None
            }
        );
        assert_eq!(
            parse_request("CKPT=0 TYPE").unwrap(),
            Request::Query {
                key: "CKPT".into(),
                name: Some("0".into()),
                attr: Some("TYPE".into())
            }
        );
        assert_eq!(
            parse_request("CKPT=0 SET_SIZE=").unwrap(),
            Request::Unset {
                key: "CKPT".into(),
                name: Some("0".into()),
                attr: Some("SET_SIZE".into())
            }
        );
        set("SCR_FLUSH=4");
        set("CKPT=0 INTERVAL=1 STORE=/dev/shm TYPE=XOR SET_SIZE=16");
        for bad in [
            "",
            "A B C",
            "SCR_FLUSH=1 X",
            "SCR_FLUSH TYPE",
            "=3",
            "a\nb=1",
        ] {
            assert!(parse_request(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn settings_replace_merge_and_unset() {
        let mut app = AppConfig::default();
        app.apply(&set("SCR_FLUSH=4")).unwrap();
        app.apply(&set("SCR_FLUSH=6")).unwrap();
        app.apply(&set("CKPT=0 INTERVAL=1 TYPE=XOR")).unwrap();
        app.apply(&set("CKPT=0 TYPE=PARTNER SET_SIZE=4")).unwrap();
        app.apply(&set("STORE=/dev/shm COUNT=1")).unwrap();
        assert_eq!(
            app.text().lines().skip(1).collect::<Vec<_>>(),
            [
                "SCR_FLUSH=6",
                "CKPT=0 INTERVAL=1 TYPE=PARTNER SET_SIZE=4",
                "STORE=/dev/shm COUNT=1"
            ]
        );
        app.apply(&parse_request("CKPT=0 SET_SIZE=").unwrap())
            .unwrap();
        app.apply(&parse_request("SCR_FLUSH=").unwrap()).unwrap();
        assert_eq!(
            app.text().lines().skip(1).collect::<Vec<_>>(),
            ["CKPT=0 INTERVAL=1 TYPE=PARTNER", "STORE=/dev/shm COUNT=1"]
        );
        let err = app.apply(&set("SCR_CNTL_BASE=/x")).unwrap_err().to_string();
        assert!(
            err.contains("SCR_CNTL_BASE") && err.contains("environment"),
            "{err}"
        );
        // what is written reads back the same
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.conf");
        app.write(&path).unwrap();
        assert_eq!(AppConfig::read(&path).unwrap().text(), app.text());
        AppConfig::default().write(&path).unwrap();
        assert!(!path.exists(), "an empty layer removes the file");
    }

    /// A password an application sets through SCR_Config is the run's, in memory: the file
    /// SCR's commands read says only that it was set.
    #[test]
    fn a_password_set_through_scr_config_is_not_recorded() {
        let mut app = AppConfig::default();
        app.apply(&set("SCR_LOG_DB_PASS=s3cret")).unwrap();
        app.apply(&set("SCR_FLUSH=2")).unwrap();
        let text = app.text();
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("SCR_LOG_DB_PASS was set"), "{text}");
        assert!(text.contains("SCR_FLUSH=2"), "{text}");
        // the run itself has it
        let file = app.as_file("SCR_Config");
        assert!(file.entries.iter().any(|e| e.value == "s3cret"));
    }
}
