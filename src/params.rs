//! SCR parameters: every name with its default in one table, resolved with SCR's
//! precedence — environment > user config (`$SCR_CONF_FILE`, else `<prefix>/.scrconf`) >
//! system config > built-in default. `SCR_CNTL_BASE` may only come from the system config
//! or the default (an administrator's choice); a user setting is ignored with a warning.

use crate::config::{ConfigEntry, ConfigFile};
use crate::error::{Error, Result};
use crate::reddesc::Scheme;
use crate::units::parse_bytecount;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// How a parameter's value is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 0 or 1.
    Bool,
    /// A non-negative integer.
    Count,
    /// An integer that may be negative (`SCR_RUNS=-1` means unlimited).
    Int,
    /// A byte count with optional unit.
    Bytes,
    /// A decimal number.
    Float,
    /// A redundancy scheme name.
    Scheme,
    /// Free text (names, paths, host lists).
    Text,
    /// SCR_FLUSH_TYPE's methods: SYNC, PTHREAD (a background flush), or a burst buffer's
    /// (BBAPI, DATAWARP), which this machine kind has none of.
    FlushType,
}

/// The values SCR_FLUSH_TYPE takes (SCR v3.1).
pub const FLUSH_TYPES: &[&str] = &["SYNC", "PTHREAD", "BBAPI", "DATAWARP"];

/// One known parameter.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: Option<&'static str>,
    pub kind: Kind,
    pub help: &'static str,
}

macro_rules! params {
    ($($name:literal, $default:expr, $kind:ident, $help:literal;)*) => {
        /// Every parameter SCR's library and scripts read, with SCR v1.2/v2.0 defaults.
        pub const PARAMS: &[ParamSpec] = &[$(ParamSpec { name: $name, default: $default, kind: Kind::$kind, help: $help }),*];
    };
}

params! {
    "SCR_ENABLE", Some("1"), Bool, "0 disables SCR: calls return at once and scr-run runs the launcher once";
    "SCR_DEBUG", Some("0"), Count, "verbosity: 1 or 2 print more";
    "SCR_LOG_ENABLE", Some("0"), Bool, "log events (job start and end, checkpoints, flushes, fetches, restarts, halts, failures) to the text log and syslog as enabled below (SCR's MySQL logging is not provided)";
    "SCR_LOG_TXT_ENABLE", Some("1"), Bool, "with SCR_LOG_ENABLE: the text log <prefix>/.scr/log";
    "SCR_LOG_SYSLOG_ENABLE", Some("1"), Bool, "with SCR_LOG_ENABLE: syslog";
    "SCR_LOG_SYSLOG_FACILITY", Some("LOG_LOCAL7"), Text, "syslog facility (LOG_USER, LOG_DAEMON, LOG_LOCAL0 … LOG_LOCAL7)";
    "SCR_LOG_SYSLOG_LEVEL", Some("LOG_INFO"), Text, "syslog level (LOG_EMERG … LOG_DEBUG)";
    "SCR_LOG_SYSLOG_PREFIX", Some("SCR"), Text, "syslog identity of the messages";
    "SCR_USER_NAME", None, Text, "user name for directory names (default $USER)";
    "SCR_JOB_ID", None, Text, "job id for directory names (default from the resource manager)";
    "SCR_JOB_NAME", None, Text, "job name recorded with datasets";
    "SCR_CLUSTER_NAME", None, Text, "cluster name recorded with datasets";
    "SCR_NODE_NAME", None, Text, "this node's name instead of the host name (for emulated nodes)";
    "SCR_PREFIX", None, Text, "prefix directory on the parallel file system (default: working directory)";
    "SCR_CURRENT", None, Text, "the checkpoint a restart loads (SCR v3.1; as SCR_Current after SCR_Init)";
    "SCR_CNTL_BASE", Some("/tmp"), Text, "base of the control directory (system config only)";
    "SCR_CACHE_BASE", Some("/tmp"), Text, "base of the cache directory";
    "SCR_CACHE_SIZE", Some("1"), Count, "datasets kept in each cache store";
    "SCR_COPY_TYPE", Some("XOR"), Scheme, "redundancy scheme when no CKPT descriptor is given: SINGLE, PARTNER, XOR or RS";
    "SCR_SET_SIZE", Some("8"), Count, "minimum XOR/RS set size";
    "SCR_SET_FAILURES", Some("2"), Count, "failures an RS set tolerates";
    "SCR_HOP_DISTANCE", Some("1"), Count, "1.1-8 partner distance";
    "SCR_GROUP", Some("NODE"), Text, "failure group of the implied descriptor";
    "SCR_MPI_BUF_SIZE", Some("4194304"), Bytes, "bytes per message of redundancy communication (SCR uses 128 KiB; 4 MiB is 10-40x faster where ranks share cores, see benches/redundancy.sh)";
    "SCR_FILE_BUF_SIZE", Some("1048576"), Bytes, "buffer size of file copies";
    "SCR_DISTRIBUTE", Some("1"), Bool, "redistribute and rebuild cached files in SCR_Init";
    "SCR_FETCH", Some("1"), Bool, "fetch the newest checkpoint from the prefix on restart";
    "SCR_FETCH_WIDTH", Some("256"), Count, "processes reading the prefix at once";
    "SCR_FLUSH", Some("10"), Count, "flush every N checkpoints (0 never)";
    "SCR_FLUSH_WIDTH", Some("256"), Count, "processes writing the prefix at once";
    "SCR_FLUSH_ON_RESTART", Some("0"), Bool, "flush the cached checkpoint during SCR_Init";
    "SCR_GLOBAL_RESTART", Some("0"), Bool, "flush on restart and disable fetch";
    "SCR_FLUSH_ASYNC", Some("0"), Bool, "flush in the background";
    "SCR_FLUSH_TYPE", None, FlushType, "SCR v3.1's flush method: SYNC, or PTHREAD to flush in the background (as SCR_FLUSH_ASYNC=1); BBAPI and DATAWARP (burst buffers) are not provided and flush as PTHREAD does";
    "SCR_FLUSH_POSTSTAGE", Some("0"), Bool, "SCR v3.1: leave a burst buffer's flush to finish after the job; not provided (no burst buffer): background flushes finish in SCR_Finalize";
    "SCR_FLUSH_ASYNC_BW", Some("209715200"), Bytes, "bytes per second an asynchronous flush may use";
    "SCR_FLUSH_ASYNC_PERCENT", Some("0.0"), Float, "CPU share of the transfer agent (0 no cap)";
    "SCR_FLUSH_ASYNC_STALL", Some("30"), Count, "seconds a node's transfer agent may go without finishing a file (plus three times what its largest file takes at SCR_FLUSH_ASYNC_BW) before the ranks copy their files themselves: a stopped or hung agent must not hold a flush forever";
    "SCR_TRANSFER_SECS", Some("60.0"), Float, "seconds between transfer-file polls";
    "SCR_CRC_ON_COPY", Some("0"), Bool, "compute CRC32 when applying redundancy";
    "SCR_CRC_ON_FLUSH", Some("1"), Bool, "compute and check CRC32 on flush and fetch";
    "SCR_CRC_ON_DELETE", Some("0"), Bool, "check CRC32 before deleting from cache";
    "SCR_PRESERVE_DIRECTORIES", Some("1"), Bool, "keep the application's directories on the prefix";
    "SCR_USE_CONTAINERS", Some("0"), Bool, "pack files into containers on the prefix";
    "SCR_CONTAINER_SIZE", Some("107374182400"), Bytes, "largest container";
    "SCR_CHECKPOINT_INTERVAL", Some("0"), Count, "Need_checkpoint says yes every N calls";
    "SCR_CHECKPOINT_SECONDS", Some("0"), Count, "Need_checkpoint says yes after N seconds";
    "SCR_CHECKPOINT_OVERHEAD", Some("0"), Float, "Need_checkpoint keeps checkpoint cost under N percent";
    "SCR_HALT_SECONDS", Some("0"), Count, "halt when the allocation has N seconds left";
    "SCR_HALT_ENABLED", Some("1"), Bool, "exit the application when a halt condition is met";
    "SCR_HALT_EXIT", None, Bool, "SCR v3.1's name for SCR_HALT_ENABLED: exit the job when a halt condition holds (v3.1 defaults to 0; unset here, SCR_HALT_ENABLED decides)";
    "SCR_PREFIX_SIZE", Some("0"), Count, "keep at most this many checkpoints on the prefix, deleting older ones once a newer one is flushed (never the current one); 0 keeps all (SCR v3.1)";
    "SCR_PREFIX_PURGE", Some("0"), Bool, "delete every dataset on the prefix in SCR_Init (SCR v3.1)";
    "SCR_CACHE_BYPASS", Some("0"), Bool, "write checkpoints straight to the prefix, keeping only SCR's metadata in cache (SCR v3.1, where it defaults to 1; a CKPT line's BYPASS= wins)";
    "SCR_FETCH_BYPASS", Some("0"), Bool, "restart by reading the prefix's files in place instead of copying them into cache (SCR v3.1)";
    "SCR_CACHE_PURGE", Some("0"), Bool, "delete every dataset in cache in SCR_Init, so a restart reads the prefix (SCR v3.1)";
    "SCR_CONF_FILE", None, Text, "user configuration file (default <prefix>/.scrconf)";
    "SCR_RUNS", None, Int, "runs scr-run makes (-1 unlimited; default SCR_RETRIES+1)";
    "SCR_RETRIES", Some("0"), Count, "legacy: runs = retries + 1";
    "SCR_RUN_DELAY", Some("60"), Count, "seconds scr-run waits between runs (SCR's scr_srun sleeps 60)";
    "SCR_MIN_NODES", None, Count, "nodes a run needs (default: the nodes file, else all)";
    "SCR_EXCLUDE_NODES", None, Text, "nodes never to use (a host list)";
    "SCR_NODELIST", None, Text, "nodes of the allocation (default from the resource manager)";
    "SCR_END_TIME", None, Int, "allocation end, seconds since the epoch";
    "SCR_WATCHDOG", Some("0"), Bool, "kill a run whose flush makes no progress";
    "SCR_WATCHDOG_TIMEOUT", None, Count, "seconds without progress before the watchdog acts";
    "SCR_WATCHDOG_TIMEOUT_PFS", None, Count, "the same while flushing to the prefix";
}

/// Parents of descriptor lines (entries with attributes), current and 1.1-8.
pub const DESCRIPTOR_KEYS: &[&str] = &[
    "STORE",
    "CKPT",
    "GROUPS",
    "CACHEDESC",
    "CKPTDESC",
    "CNTLDIR",
    "CACHEDIR",
];

/// Attributes each descriptor accepts.
fn allowed_children(parent: &str) -> Option<&'static [&'static str]> {
    Some(match parent {
        "STORE" => &["GROUP", "COUNT", "ENABLED", "MKDIR", "FLUSH"],
        "CKPT" => &[
            "INTERVAL",
            "TYPE",
            "SET_SIZE",
            "SET_FAILURES",
            "GROUP",
            "STORE",
            "BASE",
            "ENABLED",
            "OUTPUT",
            "INDEX",
            "REPLICAS",
            "HOP_DISTANCE",
            "BYPASS",
        ],
        "CKPTDESC" => &[
            "INTERVAL",
            "TYPE",
            "SET_SIZE",
            "HOP_DISTANCE",
            "BASE",
            "DIRECTORY",
            "ENABLED",
            "INDEX",
        ],
        "CACHEDESC" => &["BASE", "SIZE", "ENABLED", "INDEX"],
        "CNTLDIR" | "CACHEDIR" => &["BYTES"],
        _ => return None, // GROUPS takes any attribute names
    })
}

pub fn spec(name: &str) -> Option<&'static ParamSpec> {
    PARAMS.iter().find(|p| p.name == name)
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
        let system = system_config_path(&env, option_env!("SCR_CONFIG_FILE"), &|p| p.exists());
        let prefix = std::env::var_os("SCR_PREFIX")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok());
        Sources {
            env: Box::new(env),
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
        if let Some(path) = sources.system_config.as_deref().filter(|p| p.exists()) {
            params.apply_file(&ConfigFile::read(path)?, false)?;
        }
        if let Some(app) = &sources.app_config {
            params.apply_file(app, true)?;
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
                Some(p)
            }
            None => sources
                .prefix
                .as_ref()
                .map(|p| p.join(".scrconf"))
                .filter(|p| p.exists()),
        };
        if let Some(path) = user {
            params.apply_file(&ConfigFile::read(&path)?, true)?;
        }
        for spec in PARAMS {
            if let Some(value) = (sources.env)(spec.name) {
                if spec.name == "SCR_CNTL_BASE" {
                    params.warnings.push(
                        "SCR_CNTL_BASE cannot be set in the environment or a user configuration file, ignoring setting".into(),
                    );
                    continue;
                }
                let origin = format!("environment variable {}", spec.name);
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

    fn apply_file(&mut self, file: &ConfigFile, is_user: bool) -> Result<()> {
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
            if is_user && spec.name == "SCR_CNTL_BASE" {
                self.warnings.push(format!(
                    "{at}: SCR_CNTL_BASE cannot be set in the environment or a user configuration file, ignoring setting"
                ));
                continue;
            }
            check_value(spec, &entry.value).map_err(err)?;
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
        if let Some(allowed) = allowed_children(&entry.key) {
            for (k, _) in &entry.children {
                if !allowed.contains(&k.as_str()) {
                    return Err(format!(
                        "{} does not take {k} (it takes {})",
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
    pub fn float(&self, name: &str) -> Option<f64> {
        self.get(name)?.parse().ok()
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

    /// Whether a halt condition exits the job (after flushing): SCR v3.1's SCR_HALT_EXIT
    /// where it is set, else v1.2/v2.0's SCR_HALT_ENABLED (default 1, v2.0's behaviour).
    pub fn halt_exits(&self) -> bool {
        match self.setting("SCR_HALT_EXIT") {
            Some(s) if s.origin != Origin::Default => s.value == "1",
            _ => self.bool("SCR_HALT_ENABLED"),
        }
    }

    pub fn scheme(&self, name: &str) -> Option<Scheme> {
        Scheme::parse(self.get(name)?)
    }

    /// Descriptor lines of one kind (`"CKPT"`, `"STORE"` …), in the order read.
    pub fn descriptors_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Descriptor> {
        self.descriptors.iter().filter(move |d| d.kind == kind)
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

pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

fn check_value(spec: &ParamSpec, value: &str) -> std::result::Result<(), String> {
    let ok = match spec.kind {
        Kind::Bool => parse_bool(value).is_some(),
        Kind::Count => value.parse::<u64>().is_ok(),
        Kind::Int => value.parse::<i64>().is_ok(),
        Kind::Bytes => {
            return parse_bytecount(value)
                .map(|_| ())
                .map_err(|e| format!("{}: {e}", spec.name));
        }
        Kind::Float => value
            .parse::<f64>()
            .is_ok_and(|f| f.is_finite() && f >= 0.0),
        // FILE: take the redundancy from the CKPT descriptor lines
        Kind::Scheme => Scheme::parse(value).is_some() || value.eq_ignore_ascii_case("FILE"),
        Kind::Text => true,
        Kind::FlushType => FLUSH_TYPES.iter().any(|t| t.eq_ignore_ascii_case(value)),
    };
    if ok {
        return Ok(());
    }
    let expected = match spec.kind {
        Kind::Bool => "0 or 1",
        Kind::Count => "a non-negative integer",
        Kind::Int => "an integer",
        Kind::Float => "a non-negative number",
        Kind::Scheme => "SINGLE, PARTNER, XOR, RS or FILE",
        Kind::FlushType => "SYNC, PTHREAD, BBAPI or DATAWARP",
        Kind::Bytes | Kind::Text => unreachable!(),
    };
    Err(format!(
        "{}={value:?} is not valid: expected {expected}",
        spec.name
    ))
}

/// The user configuration file in effect for a prefix (SCR v1.1.8+ rule).
pub fn user_config_path(env: &dyn Fn(&str) -> Option<String>, prefix: &Path) -> PathBuf {
    env("SCR_CONF_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| prefix.join(".scrconf"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(env: &[(&str, &str)], system: Option<&str>, user: Option<&str>) -> Result<Params> {
        load_with_app(env, system, user, None)
    }

    fn load_with_app(
        env: &[(&str, &str)],
        system: Option<&str>,
        user: Option<&str>,
        app: Option<&str>,
    ) -> Result<Params> {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("scr.conf");
        if let Some(text) = system {
            std::fs::write(&sys, text).unwrap();
        }
        if let Some(text) = user {
            std::fs::write(dir.path().join(".scrconf"), text).unwrap();
        }
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let lookup = move |k: &str| env.get(k).cloned();
        Params::load(&Sources {
            env: Box::new(lookup),
            system_config: Some(sys),
            prefix: Some(dir.path().into()),
            app_config: app.map(|text| ConfigFile::parse(text, "SCR_Config").unwrap()),
        })
    }

    #[test]
    fn precedence_env_user_system_default() {
        let p = load(
            &[("SCR_FLUSH", "3")],
            Some("SCR_FLUSH=1\nSCR_CACHE_SIZE=4\nSCR_SET_SIZE=5"),
            Some("SCR_FLUSH=2\nSCR_CACHE_SIZE=6"),
        )
        .unwrap();
        assert_eq!(p.count("SCR_FLUSH"), Some(3));
        assert_eq!(p.setting("SCR_FLUSH").unwrap().origin, Origin::Environment);
        assert_eq!(p.count("SCR_CACHE_SIZE"), Some(6));
        assert_eq!(p.count("SCR_SET_SIZE"), Some(5));
        assert_eq!(p.count("SCR_FETCH_WIDTH"), Some(256));
        assert!(
            p.setting("SCR_SET_SIZE")
                .unwrap()
                .origin
                .to_string()
                .ends_with("scr.conf:3")
        );
    }

    #[test]
    fn cntl_base_is_not_user_settable() {
        let p = load(
            &[("SCR_CNTL_BASE", "/evil")],
            Some("SCR_CNTL_BASE=/ssd"),
            Some("SCR_CNTL_BASE=/user"),
        )
        .unwrap();
        assert_eq!(p.get("SCR_CNTL_BASE"), Some("/ssd"));
        assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
    }

    #[test]
    fn bad_values_name_their_origin() {
        let e = load(&[("SCR_FLUSH", "often")], None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("environment variable SCR_FLUSH") && e.contains("non-negative integer"),
            "{e}"
        );
        let e = load(&[], None, Some("\nSCR_COPY_TYPE=RAID5"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(".scrconf:2") && e.contains("RAID5"), "{e}");
        let e = load(&[], Some("CKPT=0 TYPE=MIRROR"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("scr.conf:1") && e.contains("MIRROR"), "{e}");
        let e = load(&[], Some("CNTLDIR=/tmp BYTES=lots"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("BYTES=lots"), "{e}");
        let e = load(&[], Some("STORE=/tmp COLOR=blue"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not take COLOR"), "{e}");
        let e = load(&[("SCR_MPI_BUF_SIZE", "4QB")], None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown unit"), "{e}");
    }

    #[test]
    fn descriptors_in_both_syntaxes() {
        let p = load(
            &[],
            Some("CACHEDESC=0 BASE=/tmp SIZE=2\nCKPTDESC=0 INTERVAL=1 BASE=/tmp TYPE=LOCAL HOP_DISTANCE=1\nCNTLDIR=/tmp BYTES=1GB"),
            Some("STORE=/dev/shm GROUP=NODE COUNT=1\nCKPT=0 INTERVAL=1 TYPE=XOR SET_SIZE=4\nGROUPS=host1 POWER=psu1"),
        )
        .unwrap();
        let kinds: Vec<_> = p.descriptors.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "CACHEDESC",
                "CKPTDESC",
                "CNTLDIR",
                "STORE",
                "CKPT",
                "GROUPS"
            ]
        );
        assert_eq!(
            p.descriptors_of("CKPT").next().unwrap().attr("SET_SIZE"),
            Some("4")
        );
    }

    #[test]
    fn round_trips_through_a_hash_for_broadcast() {
        let p = load(
            &[("SCR_FLUSH", "3")],
            Some("CKPT=0 INTERVAL=1 TYPE=XOR SET_SIZE=4\nSTORE=/dev/shm COUNT=2"),
            None,
        )
        .unwrap();
        let back = Params::from_hash(&crate::hash::Hash::unpack(&p.to_hash().pack()).unwrap());
        assert_eq!(back.count("SCR_FLUSH"), Some(3));
        assert_eq!(back.get("SCR_CACHE_BASE"), Some("/tmp"));
        assert_eq!(back.descriptors, p.descriptors);
    }

    #[test]
    fn unknown_parameters_warn() {
        let p = load(&[], None, Some("SCR_FLUHS=3")).unwrap();
        assert!(p.warnings[0].contains("SCR_FLUHS"));
    }

    #[test]
    fn scr_conf_file_must_exist_when_named() {
        let e = load(&[("SCR_CONF_FILE", "/nonexistent/x.conf")], None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/x.conf does not exist"), "{e}");
    }

    #[test]
    fn scr_config_ranks_between_the_user_file_and_the_system_file() {
        let system = Some("SCR_FLUSH=1\nSCR_CACHE_SIZE=3\nSCR_CHECKPOINT_INTERVAL=7\n");
        let user = Some("SCR_CACHE_SIZE=4\n");
        let app = Some("SCR_FLUSH=2\nSCR_CACHE_SIZE=5\nSCR_CHECKPOINT_INTERVAL=8\n");
        let p = load_with_app(&[("SCR_CHECKPOINT_INTERVAL", "9")], system, user, app).unwrap();
        assert_eq!(
            p.get("SCR_FLUSH"),
            Some("2"),
            "SCR_Config over the system file"
        );
        assert_eq!(
            p.get("SCR_CACHE_SIZE"),
            Some("4"),
            "the user file over SCR_Config"
        );
        assert_eq!(
            p.get("SCR_CHECKPOINT_INTERVAL"),
            Some("9"),
            "the environment over all"
        );
        let err = load_with_app(&[], None, None, Some("SCR_FLUSH=often\n")).unwrap_err();
        assert!(err.to_string().contains("SCR_Config"), "{err}");
    }

    #[test]
    fn ckpt_lines_apply_with_copy_type_file_or_when_it_is_set_nowhere() {
        let lines = "CKPT=0 INTERVAL=1 TYPE=PARTNER\n";
        let p = load(&[], Some(lines), None).unwrap();
        assert!(p.descriptor_lines_apply() && p.warnings.is_empty());
        let p = load(&[("SCR_COPY_TYPE", "FILE")], Some(lines), None).unwrap();
        assert!(p.descriptor_lines_apply());
        let p = load(&[("SCR_COPY_TYPE", "file")], Some(lines), None).unwrap();
        assert!(p.descriptor_lines_apply());
        let p = load(&[("SCR_COPY_TYPE", "XOR")], Some(lines), None).unwrap();
        assert!(!p.descriptor_lines_apply());
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("ignored because SCR_COPY_TYPE=XOR")
                    && w.contains("environment")),
            "{:?}",
            p.warnings
        );
        let p = load(
            &[],
            Some("SCR_COPY_TYPE=SINGLE\nCKPT=0 INTERVAL=1 TYPE=XOR\n"),
            None,
        )
        .unwrap();
        assert!(!p.descriptor_lines_apply());
        assert!(load(&[("SCR_COPY_TYPE", "FILES")], None, None).is_err());
    }

    #[test]
    fn values_nobody_set_stay_defaults_through_the_broadcast_form() {
        let p = load(
            &[("SCR_FLUSH", "3")],
            Some("CKPT=0 INTERVAL=1 TYPE=XOR\n"),
            None,
        )
        .unwrap();
        let q = Params::from_hash(&p.to_hash());
        assert_eq!(q.setting("SCR_COPY_TYPE").unwrap().origin, Origin::Default);
        assert_ne!(q.setting("SCR_FLUSH").unwrap().origin, Origin::Default);
        assert!(q.descriptor_lines_apply());
    }

    #[test]
    fn the_system_config_is_the_run_time_choice_then_the_build_time_one_then_v2_then_v3() {
        let none = |_: &str| None;
        let set = |k: &str| (k == "SCR_SYSTEM_CONF_FILE").then(|| "/run/scr.conf".to_string());
        let only_v3 = |p: &Path| p == Path::new(SYSTEM_CONFIG_PATH_V3);
        let both = |_: &Path| true;
        let neither = |_: &Path| false;
        assert_eq!(
            system_config_path(&set, Some("/opt/scr/etc/scr.conf"), &both),
            Path::new("/run/scr.conf")
        );
        assert_eq!(
            system_config_path(&none, Some("/opt/scr/etc/scr.conf"), &both),
            Path::new("/opt/scr/etc/scr.conf")
        );
        assert_eq!(
            system_config_path(&none, None, &both),
            Path::new("/etc/scr.conf")
        );
        assert_eq!(
            system_config_path(&none, None, &neither),
            Path::new("/etc/scr.conf")
        );
        assert_eq!(
            system_config_path(&none, None, &only_v3),
            Path::new("/etc/scr/scr.conf")
        );
    }

    #[test]
    fn a_store_keeps_its_own_count_else_the_cache_size_and_at_least_one() {
        let lines = "STORE=/dev/shm COUNT=3\nSTORE=/ssd\n";
        let p = load(&[("SCR_CACHE_SIZE", "2")], Some(lines), None).unwrap();
        assert_eq!(p.cache_size("/dev/shm"), 3);
        assert_eq!(p.cache_size("/ssd"), 2);
        let p = load(&[("SCR_CACHE_SIZE", "0")], None, None).unwrap();
        assert_eq!(p.cache_size("/tmp"), 1);
    }
}
