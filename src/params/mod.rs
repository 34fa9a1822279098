//! SCR parameters: every name with its default in one table, resolved with SCR's
//! precedence — environment > user config (`$SCR_CONF_FILE`, else `<prefix>/.scrconf`) >
//! system config > built-in default, as SCR v3.1 (whose user guide sets `SCR_CNTL_BASE`
//! per test case in a user's file; v2.0 took it from the system config only).

use crate::config::{ConfigEntry, ConfigFile};
use crate::error::{Error, Result};
use crate::reddesc::Scheme;
use crate::units::parse_bytecount;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod environment;
pub mod settings;
mod table;
pub use settings::Settings;
pub use table::*;

/// Where SCR v2.0 keeps the system configuration.
pub const SYSTEM_CONFIG_PATH: &str = "/etc/scr.conf";
/// Where SCR v3.1 keeps it.
pub const SYSTEM_CONFIG_PATH_V3: &str = "/etc/scr/scr.conf";

/// The system configuration file: the one `SCR_SYSTEM_CONF_FILE` names at run time (so tests
/// and unprivileged installs need no root), else the one the build was given
/// (`SCR_CONFIG_FILE`, as SCR's CMake option; `scripts/install.sh --config-file`), else
/// `/etc/scr.conf`, or `/etc/scr/scr.conf` when only that one exists (a site set up for
/// SCR v3.1).
pub fn system_config_path(
    env: &dyn Fn(&str) -> Option<String>,
    built_with: Option<&str>,
    exists: &dyn Fn(&Path) -> bool,
) -> PathBuf {
    if let Some(p) = env("SCR_SYSTEM_CONF_FILE").filter(|p| !p.is_empty()) {
        return p.into();
    }
    if let Some(p) = built_with.filter(|p| !p.is_empty()) {
        return p.into();
    }
    let v2 = Path::new(SYSTEM_CONFIG_PATH);
    let v3 = Path::new(SYSTEM_CONFIG_PATH_V3);
    if !exists(v2) && exists(v3) {
        v3.into()
    } else {
        v2.into()
    }
}

/// Where a setting came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Environment,
    File(String),
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Environment => f.write_str("environment"),
            Origin::File(at) => f.write_str(at),
            Origin::Default => f.write_str("built-in default"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Setting {
    pub value: String,
    pub origin: Origin,
}

/// A descriptor line with where it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub kind: String,
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub origin: String,
}

impl Descriptor {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The origin [`Params::effective`] gives a parameter nobody set that has no default.
pub const UNSET: &str = "unset, no default";

/// Resolved parameters.
#[derive(Clone, Debug, Default)]
pub struct Params {
    settings: BTreeMap<String, Setting>,
    /// Descriptor lines: system config first, then user config.
    pub descriptors: Vec<Descriptor>,
    /// Things worth telling the user that are not errors.
    pub warnings: Vec<String>,
}

/// Looks up an environment variable.
pub type EnvLookup = Box<dyn Fn(&str) -> Option<String>>;

/// Where to look for configuration.
pub struct Sources {
    /// Environment lookup (a closure so tests need not touch the process environment).
    pub env: EnvLookup,
    /// The environment's variable names, so that an `SCR_*` name no parameter has (a
    /// typo) is warned of.
    pub env_names: Vec<String>,
    /// System configuration file; missing is fine.
    pub system_config: Option<PathBuf>,
    /// Prefix directory, for `<prefix>/.scrconf`.
    pub prefix: Option<PathBuf>,
    /// What the application set through `SCR_Config`: above the system file, below the
    /// user's file and the environment (SCR v3.1's order).
    pub app_config: Option<ConfigFile>,
}

impl Sources {
    /// The process environment, the system config it names (or the default path), and
    /// `SCR_PREFIX` or the working directory.
    pub fn from_process() -> Sources {
        let env = |k: &str| std::env::var(k).ok();
        let system = system_config_path(&env, BUILT_SYSTEM_CONFIG, &|p| p.exists());
        let prefix = std::env::var_os("SCR_PREFIX")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok());
        let env_names = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .filter(|k| k.starts_with("SCR_"))
            .collect();
        Sources {
            env: Box::new(env),
            env_names,
            system_config: Some(system),
            prefix,
            app_config: None,
        }
    }
}

impl Params {
    /// How many datasets a store keeps: its STORE line's COUNT, else SCR_CACHE_SIZE, at
    /// least one.
    pub fn cache_size(&self, store: &str) -> u64 {
        let store_count = self
            .descriptors_of("STORE")
            .filter(|d| Path::new(&d.name) == Path::new(store))
            .filter_map(|d| d.attr("COUNT")?.parse::<u64>().ok())
            .last();
        store_count
            .or(self.count("SCR_CACHE_SIZE"))
            .unwrap_or(1)
            .max(1)
    }

    /// The parameters as typed values (see [`Settings`]).
    pub fn typed(&self) -> Settings {
        Settings::from_params(self)
    }

    /// Whether checkpoints flush in the background: SCR_FLUSH_ASYNC=1, or SCR v3.1's
    /// SCR_FLUSH_TYPE naming anything but SYNC (burst-buffer methods run as PTHREAD here).
    pub fn flush_in_background(&self) -> bool {
        match self.get("SCR_FLUSH_TYPE") {
            Some(t) => !t.eq_ignore_ascii_case("SYNC"),
            None => self.bool("SCR_FLUSH_ASYNC"),
        }
    }

    /// Resolves every parameter. Bad values anywhere are errors naming where they came from.
    pub fn load(sources: &Sources) -> Result<Params> {
        let mut params = Params::default();
        for spec in PARAMS {
            if let Some(d) = spec.default {
                params.settings.insert(
                    spec.name.into(),
                    Setting {
                        value: d.into(),
                        origin: Origin::Default,
                    },
                );
            }
        }
        // configuration comes only from files the user or root owns and nobody else can
        // write: the system's and one the user names are errors otherwise (someone must fix
        // them); a `.scrconf` found in the prefix, where a neighbour may have planted it, is
        // passed over with a warning
        if let Some(path) = sources.system_config.as_deref().filter(|p| p.exists()) {
            params.apply_file(&ConfigFile::read_trusted(path)?, true)?;
        }
        if let Some(app) = &sources.app_config {
            params.apply_file(app, false)?;
        }
        let user = match (sources.env)("SCR_CONF_FILE") {
            Some(p) => {
                let p = PathBuf::from(p);
                if !p.exists() {
                    return Err(Error::Config {
                        origin: "environment variable SCR_CONF_FILE".into(),
                        what: format!(
                            "{} does not exist; create it or unset SCR_CONF_FILE",
                            p.display()
                        ),
                    });
                }
                Some(ConfigFile::read_trusted(&p)?)
            }
            None => {
                let found = sources
                    .prefix
                    .as_ref()
                    .map(|p| (p, p.join(".scrconf")))
                    .filter(|(_, f)| f.symlink_metadata().is_ok());
                // in a prefix others may create names in, a `.scrconf` of the user's own with
                // one name proves nothing: a neighbour may have linked a file of the user's
                // there and waited for the user to remove its other name
                let shared = found.as_ref().and_then(|(prefix, file)| {
                    let why = crate::safe_fs::others_may_create_in(prefix)
                        .ok()
                        .flatten()?;
                    Some(format!(
                        "{} is not read: the prefix {} {why}, so anyone may have put it there; \
                         name your configuration file with SCR_CONF_FILE instead",
                        file.display(),
                        prefix.display()
                    ))
                });
                let found = match shared {
                    Some(warning) => {
                        params.warnings.push(warning);
                        None
                    }
                    None => found.map(|(_, f)| f),
                };
                match found.map(|p| ConfigFile::read_trusted(&p)) {
                    Some(Err(e)) if e.is_untrusted() => {
                        params
                            .warnings
                            .push(format!("{e}; its settings are ignored"));
                        None
                    }
                    other => other.transpose()?,
                }
            }
        };
        if let Some(file) = user {
            params.apply_file(&file, false)?;
        }
        for spec in PARAMS {
            if let Some(raw) = (sources.env)(spec.name) {
                let origin = format!("environment variable {}", spec.name);
                // `$NAME` in an environment value expands too, as in SCR v3.1
                let value = if raw.contains('$') {
                    crate::config::expand_value(&raw, &|name| (sources.env)(name)).map_err(
                        |what| Error::Config {
                            origin: origin.clone(),
                            what,
                        },
                    )?
                } else {
                    raw
                };
                check_value(spec, &value).map_err(|what| Error::Config { origin, what })?;
                params.settings.insert(
                    spec.name.into(),
                    Setting {
                        value,
                        origin: Origin::Environment,
                    },
                );
            }
        }
        params.warnings.extend(environment::unknown_variables(
            sources.env_names.iter().map(String::as_str),
        ));
        if !params.descriptor_lines_apply()
            && let Some(line) = params
                .descriptors
                .iter()
                .find(|d| d.kind == "CKPT" || d.kind == "CKPTDESC")
        {
            let copy = params
                .setting("SCR_COPY_TYPE")
                .expect("set, or the lines apply");
            params.warnings.push(format!(
                "{}: the {} descriptor lines are ignored because SCR_COPY_TYPE={} ({}); set SCR_COPY_TYPE=FILE to use them",
                line.origin, line.kind, copy.value, copy.origin
            ));
        }
        Ok(params)
    }

    /// Takes in `file`'s settings; `system`: it is the system configuration file, which
    /// every user reads.
    fn apply_file(&mut self, file: &ConfigFile, system: bool) -> Result<()> {
        for entry in &file.entries {
            let at = file.location(entry);
            let err = |what: String| Error::Config {
                origin: at.clone(),
                what,
            };
            if DESCRIPTOR_KEYS.contains(&entry.key.as_str()) {
                self.add_descriptor(entry, &at).map_err(err)?;
                continue;
            }
            let Some(spec) = spec(&entry.key) else {
                self.warnings.push(format!(
                    "{at}: unknown parameter {} (ignored; check the spelling)",
                    entry.key
                ));
                continue;
            };
            if !entry.children.is_empty() {
                return Err(err(format!(
                    "{} takes a single value, but attributes follow it",
                    entry.key
                )));
            }
            check_value(spec, &entry.value).map_err(err)?;
            if spec.name == "SCR_LOG_DB_PASS"
                && let Some(mode) = file.others_may_read
            {
                // the system's file is every user's to read: no mode makes a password there
                // one user's
                let fix = if system {
                    "the system configuration file is read by every user, so a password there is \
                     everyone's: each user puts theirs in ~/.my.cnf (password= under [client], \
                     mode 600), or in a configuration file of their own named by SCR_CONF_FILE \
                     (mode 600)"
                        .to_string()
                } else {
                    format!(
                        "make it yours alone (chmod 600 {}) or put the password in ~/.my.cnf \
                         (password= under [client], mode 600)",
                        file.origin
                    )
                };
                self.warnings.push(format!(
                    "{at}: SCR_LOG_DB_PASS is not used: others can read this file (mode \
                     {mode:04o}); {fix}"
                ));
                continue;
            }
            if spec.name == "SCR_NODE_NAME" {
                // rank 0 reads the files for every rank: a value here would put every
                // process on one node
                self.warnings.push(format!(
                    "{at}: SCR_NODE_NAME is not used: a configuration file is read for every \
                     node alike, and the node name is each process's own; set it in the \
                     environment of each node's processes"
                ));
                continue;
            }
            self.settings.insert(
                spec.name.into(),
                Setting {
                    value: entry.value.clone(),
                    origin: Origin::File(at),
                },
            );
        }
        Ok(())
    }

    fn add_descriptor(&mut self, entry: &ConfigEntry, at: &str) -> std::result::Result<(), String> {
        // an attribute the descriptor does not know is ignored, as an unknown parameter is
        // (a newer SCR's attribute, a typo): said, never the end of the job
        if let Some(allowed) = allowed_children(&entry.key) {
            for (k, _) in &entry.children {
                if !allowed.contains(&k.as_str()) {
                    self.warnings.push(format!(
                        "{at}: {} does not take {k} (ignored; it takes {}; check the spelling)",
                        entry.key,
                        allowed.join(", ")
                    ));
                }
            }
        }
        for (k, v) in &entry.children {
            let bad = |what: &str| format!("{}={} {k}={v}: {what}", entry.key, entry.value);
            match k.as_str() {
                "TYPE" => {
                    Scheme::parse(v)
                        .ok_or_else(|| bad("unknown scheme (SINGLE, PARTNER, XOR or RS)"))?;
                }
                "BYTES" => {
                    parse_bytecount(v).map_err(|e| bad(&e))?;
                }
                "INTERVAL" | "SET_SIZE" | "SET_FAILURES" | "HOP_DISTANCE" | "COUNT" | "SIZE"
                | "INDEX" | "REPLICAS" => {
                    v.parse::<u64>()
                        .map_err(|_| bad("not a non-negative integer"))?;
                }
                "ENABLED" | "OUTPUT" | "MKDIR" | "BYPASS" => {
                    parse_bool(v).ok_or_else(|| bad("expected 0 or 1"))?;
                }
                "FLUSH"
                    if entry.key == "STORE"
                        && !table::FLUSH_TYPES.iter().any(|t| t.eq_ignore_ascii_case(v)) =>
                {
                    return Err(bad("unknown flush type (SYNC, PTHREAD, BBAPI or DATAWARP)"));
                }
                _ => {}
            }
        }
        if matches!(entry.key.as_str(), "CKPT" | "CKPTDESC" | "CACHEDESC")
            && entry.value.parse::<u64>().is_err()
        {
            return Err(format!(
                "{}={}: descriptor index must be a non-negative integer",
                entry.key, entry.value
            ));
        }
        if entry.key == "CKPT"
            && entry
                .children
                .iter()
                .any(|(k, v)| k == "INTERVAL" && v == "0")
        {
            return Err("INTERVAL must be at least 1".into());
        }
        self.descriptors.push(Descriptor {
            kind: entry.key.clone(),
            name: entry.value.clone(),
            attrs: entry.children.clone(),
            origin: at.to_string(),
        });
        Ok(())
    }

    pub fn setting(&self, name: &str) -> Option<&Setting> {
        self.settings.get(name)
    }

    /// The raw value of a parameter.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.settings.get(name).map(|s| s.value.as_str())
    }

    /// Sets a value (the library uses this for values broadcast from rank 0).
    pub fn set(&mut self, name: &str, value: &str, origin: Origin) -> Result<()> {
        if let Some(spec) = spec(name) {
            check_value(spec, value).map_err(|what| Error::Config {
                origin: origin.to_string(),
                what,
            })?;
        }
        self.settings.insert(
            name.into(),
            Setting {
                value: value.into(),
                origin,
            },
        );
        Ok(())
    }

    pub fn bool(&self, name: &str) -> bool {
        self.get(name).and_then(parse_bool).unwrap_or(false)
    }
    pub fn count(&self, name: &str) -> Option<u64> {
        self.get(name)?.parse().ok()
    }
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name)?.parse().ok()
    }
    pub fn bytes(&self, name: &str) -> Option<u64> {
        parse_bytecount(self.get(name)?).ok()
    }
    /// Whether the `CKPT=` (and 1.1-8 `CKPTDESC=`) lines decide the redundancy. SCR uses
    /// them only with SCR_COPY_TYPE=FILE and otherwise implies one descriptor from
    /// SCR_COPY_TYPE; here they also apply when SCR_COPY_TYPE is set nowhere, where SCR
    /// would ignore them without a word.
    pub fn descriptor_lines_apply(&self) -> bool {
        match self.setting("SCR_COPY_TYPE") {
            Some(s) if s.origin != Origin::Default => s.value.eq_ignore_ascii_case("FILE"),
            _ => true,
        }
    }

    /// Whether a halt condition exits the job inside SCR (after flushing): SCR v3.1's
    /// SCR_HALT_EXIT where it is set, else v1.2/v2.0's SCR_HALT_ENABLED where it is set (a
    /// v2.0 program that relies on SCR to end it), else v3.1's default: no, the application
    /// learns it from SCR_Should_exit and runs what follows its loop.
    pub fn halt_exits(&self) -> bool {
        match self.setting("SCR_HALT_EXIT") {
            Some(s) if s.origin != Origin::Default => s.value == "1",
            _ if self.get("SCR_HALT_ENABLED").is_some() => self.bool("SCR_HALT_ENABLED"),
            _ => self.bool("SCR_HALT_EXIT"),
        }
    }

    pub fn scheme(&self, name: &str) -> Option<Scheme> {
        Scheme::parse(self.get(name)?)
    }

    /// Descriptor lines of one kind (`"CKPT"`, `"STORE"` …), in the order read.
    pub fn descriptors_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Descriptor> {
        self.descriptors.iter().filter(move |d| d.kind == kind)
    }

    /// The configuration in effect, one line each, as `SCR_DEBUG=1` shows it and `scr config`
    /// prints it: every parameter in the table's order (`NAME=VALUE`, and where the value
    /// came from; `NAME=` and [`UNSET`] for one nobody set and without a default), then every
    /// descriptor line. `prefix` is the prefix directory and what chose it, shown for
    /// SCR_PREFIX where nobody set it (the working directory, or a command's `--prefix`).
    pub fn effective(&self, prefix: Option<(&Path, &str)>) -> Vec<(String, String)> {
        let mut lines: Vec<(String, String)> = table::PARAMS
            .iter()
            .map(|spec| match (self.settings.get(spec.name), prefix) {
                // the database password is never shown, only that and where it is set
                (Some(s), _) if spec.name == "SCR_LOG_DB_PASS" => {
                    (format!("{}=(hidden)", spec.name), s.origin.to_string())
                }
                (Some(s), _) => (format!("{}={}", spec.name, s.value), s.origin.to_string()),
                (None, Some((dir, chosen_by))) if spec.name == "SCR_PREFIX" => (
                    format!("SCR_PREFIX={}", dir.display()),
                    chosen_by.to_string(),
                ),
                (None, _) => (format!("{}=", spec.name), UNSET.to_string()),
            })
            .collect();
        // names the table does not know, given to [`Params::set`]
        for (name, s) in &self.settings {
            if table::spec(name).is_none() {
                lines.push((format!("{name}={}", s.value), s.origin.to_string()));
            }
        }
        // with no drain to follow, the table's flush defaults are not what runs: the values
        // in effect, and why
        if settings::flush_each_for_want_of_a_drain(self) {
            for (line, origin) in &mut lines {
                for name in ["SCR_FLUSH", "SCR_FLUSH_ASYNC"] {
                    if line.split_once('=').is_some_and(|(n, _)| n == name) {
                        *line = format!("{name}=1");
                        *origin = NO_DRAIN_FLUSH.to_string();
                    }
                }
            }
        }
        for d in &self.descriptors {
            let mut line = format!("{}={}", d.kind, d.name);
            for (k, v) in &d.attrs {
                line.push_str(&format!(" {k}={v}"));
            }
            lines.push((line, d.origin.clone()));
        }
        lines
    }

    /// All resolved settings, by name.
    pub fn settings(&self) -> impl Iterator<Item = (&str, &Setting)> {
        self.settings.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The resolved values and descriptors as a hash, so rank 0 can broadcast what it read
    /// (`SETTING <name> <value>`, `DESC <n> {KIND, NAME, ORIGIN, ATTR <i> {<key> <value>}}`).
    pub fn to_hash(&self) -> crate::hash::Hash {
        let mut h = crate::hash::Hash::new();
        for (name, setting) in &self.settings {
            h.child("SETTING").set_value(name, &setting.value);
            // which values nobody set: some rules ask (descriptor_lines_apply, halt_exits)
            if setting.origin == Origin::Default {
                h.child("DEFAULTED").child(name);
            }
        }
        for (i, d) in self.descriptors.iter().enumerate() {
            let dh = h.set_kv("DESC", i);
            dh.set_value("KIND", &d.kind);
            dh.set_value("NAME", &d.name);
            dh.set_value("ORIGIN", &d.origin);
            for (j, (k, v)) in d.attrs.iter().enumerate() {
                dh.set_kv("ATTR", j).set_value(k, v);
            }
        }
        h
    }

    /// Rebuilds what [`Params::to_hash`] wrote (values keep no origin but "rank 0", or
    /// "built-in default").
    pub fn from_hash(h: &crate::hash::Hash) -> Params {
        let mut params = Params::default();
        for (name, v) in h
            .get("SETTING")
            .into_iter()
            .flat_map(crate::hash::Hash::iter)
        {
            if let Some(value) = v.first_value(name).or_else(|| v.keys().next()) {
                let defaulted = h.get("DEFAULTED").is_some_and(|d| d.get(name).is_some());
                params.settings.insert(
                    name.into(),
                    Setting {
                        value: value.into(),
                        origin: if defaulted {
                            Origin::Default
                        } else {
                            Origin::File("rank 0".into())
                        },
                    },
                );
            }
        }
        let mut descs: Vec<(u64, &crate::hash::Hash)> = h
            .get("DESC")
            .into_iter()
            .flat_map(crate::hash::Hash::iter)
            .filter_map(|(k, d)| Some((k.parse().ok()?, d)))
            .collect();
        descs.sort_by_key(|(i, _)| *i);
        for (_, d) in descs {
            let mut attrs: Vec<(u64, (String, String))> = d
                .get("ATTR")
                .into_iter()
                .flat_map(crate::hash::Hash::iter)
                .filter_map(|(j, a)| {
                    let (k, v) = a.iter().next()?;
                    Some((
                        j.parse().ok()?,
                        (k.to_string(), v.keys().next()?.to_string()),
                    ))
                })
                .collect();
            attrs.sort_by_key(|(j, _)| *j);
            params.descriptors.push(Descriptor {
                kind: d.first_value("KIND").unwrap_or_default().into(),
                name: d.first_value("NAME").unwrap_or_default().into(),
                origin: d.first_value("ORIGIN").unwrap_or_default().into(),
                attrs: attrs.into_iter().map(|(_, a)| a).collect(),
            });
        }
        params
    }
}

/// Where the flush settings in effect come from when no drain follows a job.
const NO_DRAIN_FLUSH: &str = "no drain follows a job launched here without scr-run \
    (SCR_DRAIN_FOLLOWS=0) and no flush is set, so every checkpoint flushes to the prefix in the \
    background as it completes (under scr-run: SCR_FLUSH=10, SCR_FLUSH_ASYNC=0); set SCR_FLUSH to choose \
    another";

#[cfg(test)]
mod tests;
