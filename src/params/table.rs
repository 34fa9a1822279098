//! The parameter table: every name SCR's library and scripts read, its default, how its
//! value is checked, and which attributes each descriptor line takes.

use crate::reddesc::Scheme;
use crate::units::parse_bytecount;

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
    "SCR_LOG_ENABLE", Some("0"), Bool, "log events (job start and end, checkpoints, flushes, fetches, restarts, halts, failures) to the text log, syslog and the database as enabled below";
    "SCR_LOG_TXT_ENABLE", Some("1"), Bool, "with SCR_LOG_ENABLE: the text log <prefix>/.scr/log";
    "SCR_LOG_SYSLOG_ENABLE", Some("1"), Bool, "with SCR_LOG_ENABLE: syslog";
    "SCR_LOG_SYSLOG_FACILITY", Some("LOG_LOCAL7"), Text, "syslog facility (LOG_USER, LOG_DAEMON, LOG_LOCAL0 … LOG_LOCAL7)";
    "SCR_LOG_SYSLOG_LEVEL", Some("LOG_INFO"), Text, "syslog level (LOG_EMERG … LOG_DEBUG)";
    "SCR_LOG_SYSLOG_PREFIX", Some("SCR"), Text, "syslog identity of the messages";
    "SCR_LOG_DB_ENABLE", Some("0"), Bool, "with SCR_LOG_ENABLE: the database log, SCR v3.1's MySQL tables on a MariaDB or MySQL server (rank 0 writes; a server that fails costs at most a bounded wait once, and the other logs go on)";
    "SCR_LOG_DB_DEBUG", Some("0"), Bool, "print each statement of the database log on stdout, its values in place";
    "SCR_LOG_DB_HOST", None, Text, "the database server: a host name, host:port, or the absolute path of its unix socket (unset: localhost). Over TCP a password goes only by TLS: the server must offer TLS with a certificate for that name, signed by a public authority or the one ssl-ca= of ~/.my.cnf names";
    "SCR_LOG_DB_NAME", None, Text, "the database (unset: scr, as scr db init creates it)";
    "SCR_LOG_DB_USER", None, Text, "the account the log writes with (unset: user= of ~/.my.cnf, else the login name)";
    "SCR_LOG_DB_PASS", None, Text, "its password: from the environment, or a configuration file only its owner can read (refused from one others can read); unset: password= of ~/.my.cnf, which must be the owner's alone too";
    "SCR_USER_NAME", None, Text, "user name for directory names (default $USER)";
    "SCR_JOB_ID", None, Text, "job id for directory names (default: the resource manager's, else defjobid)";
    "SCR_JOB_NAME", None, Text, "job name recorded with datasets";
    "SCR_CLUSTER_NAME", None, Text, "cluster name recorded with datasets";
    "SCR_NODE_NAME", None, Text, "this node's name instead of the host name (for emulated nodes), from each process's own environment: a configuration file is read for every node alike";
    "SCR_LOCK_TIMEOUT", Some("60"), Float, "seconds SCR waits for a lock on a state file it shares with other processes (halt, flush, index files) before it gives up, naming the process that holds it";
    "SCR_PREFIX", None, Text, "prefix directory on the parallel file system (default: working directory)";
    "SCR_CURRENT", None, Text, "the checkpoint a restart loads (SCR v3.1; as SCR_Current after SCR_Init), once per job allocation: a relaunch in the same allocation restarts from the newest checkpoint written since; a name no checkpoint has is a warning, and the newest is restarted";
    "SCR_CNTL_BASE", Some("/tmp"), Text, "base of the control directory (environment or configuration files; not SCR_Config, which SCR's commands never see)";
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
    "SCR_FLUSH", Some("10"), Count, "flush every N checkpoints (0 never); set nowhere in a job no drain follows, every checkpoint (see SCR_DRAIN_FOLLOWS)";
    "SCR_FLUSH_WIDTH", Some("256"), Count, "processes writing the prefix at once";
    "SCR_FLUSH_ON_RESTART", Some("0"), Bool, "flush the cached checkpoint during SCR_Init";
    "SCR_GLOBAL_RESTART", Some("0"), Bool, "flush the checkpoint restarted from cache in SCR_Init and read the restart on the prefix, where any rank may route any file of it (SCR v3.1's read with shared access)";
    "SCR_FLUSH_ASYNC", Some("0"), Bool, "flush in the background";
    "SCR_DRAIN_FOLLOWS", Some("0"), Bool, "1: a drain (scr postrun) takes what the job leaves in cache once it ends; scr-run sets it in the runs it launches. Unset, a job killed before SCR_Finalize would strand the checkpoints only its caches hold, so unless SCR_FLUSH, SCR_FLUSH_ASYNC or SCR_FLUSH_TYPE is set every checkpoint flushes to the prefix in the background as it completes";
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
    "SCR_HALT_ENABLED", None, Bool, "SCR v1.2/v2.0's name for SCR_HALT_EXIT: where SCR_HALT_EXIT is not set, 1 exits the application inside SCR when a halt condition holds, as v2.0 did";
    "SCR_HALT_EXIT", Some("0"), Bool, "1: exit the job inside SCR (after flushing the newest checkpoint) when a halt condition holds; 0: SCR_Should_exit says so and the application ends itself";
    "SCR_PREFIX_SIZE", Some("0"), Count, "keep at most this many checkpoints on the prefix, deleting older ones once a newer one is flushed (never the current one); 0 keeps all (SCR v3.1)";
    "SCR_PREFIX_PURGE", Some("0"), Bool, "delete every dataset on the prefix in SCR_Init (SCR v3.1)";
    "SCR_PREFIX_SHARED", Some("0"), Bool, "1: use a prefix others may write (sticky, as /tmp is), where they can take the names of the datasets' directories and of .scr first, and checkpoints then stay in cache only, or a prefix whose path others may change (a directory on the way that is theirs or a group may write without the sticky bit, a link of theirs), which they could swap for another of yours, or a prefix another user owns (a team's), whose owner could swap a dataset's directory while a job reads or writes it; 0: SCR_Init refuses such a prefix, saying why, and so do the commands that write a prefix (but for one another user owns, where a drain of the user's job still goes)";
    "SCR_CACHE_BYPASS", Some("0"), Bool, "write checkpoints straight to the prefix, keeping only SCR's metadata in cache (SCR v3.1, where it defaults to 1; a CKPT line's BYPASS= wins)";
    "SCR_FETCH_BYPASS", Some("0"), Bool, "restart by reading the prefix's files in place instead of copying them into cache (SCR v3.1)";
    "SCR_CACHE_PURGE", Some("0"), Bool, "delete every dataset in cache in SCR_Init, so a restart reads the prefix (SCR v3.1)";
    "SCR_CONF_FILE", None, Text, "user configuration file (default <prefix>/.scrconf)";
    "SCR_RUNS", None, Int, "runs scr-run makes (-1 unlimited; default SCR_RETRIES+1)";
    "SCR_RETRIES", Some("0"), Count, "legacy: runs = retries + 1";
    "SCR_RUN_DELAY", Some("60"), Count, "seconds scr-run waits between runs (SCR's scr_srun sleeps 60)";
    "SCR_MIN_NODES", None, Count, "nodes a run needs (default: the nodes file, else all)";
    "SCR_RESHAPE", Some("0"), Bool, "the application restarts on any number of ranks (it lists a restart's files with SCR_Restart_file_count and SCR_Restart_file_name): a checkpoint written by another number of ranks is offered to it (without, one is passed over, as SCR v3.1 refuses it), and with too few nodes left for the run's node count, scr-run relaunches on the nodes left (at least SCR_MIN_NODES) with as many ranks per node as before (beyond SCR)";
    "SCR_EXCLUDE_NODES", None, Text, "nodes never to use (a host list)";
    "SCR_NODELIST", None, Text, "nodes of the allocation (default from the resource manager)";
    "SCR_END_TIME", None, Int, "allocation end, seconds since the epoch";
    "SCR_WATCHDOG", Some("0"), Bool, "kill a run whose flush makes no progress";
    "SCR_WATCHDOG_TIMEOUT", None, Count, "seconds without progress before the watchdog acts";
    "SCR_WATCHDOG_TIMEOUT_PFS", None, Count, "the same while flushing to the prefix";
}

/// A built-in default that differs from SCR v3.1's (its user guide, `config.rst`): what
/// v3.1 uses and why this one is kept. `scr.conf(5)` and `scr(7)` print them.
#[derive(Clone, Copy, Debug)]
pub struct V31Default {
    pub name: &'static str,
    /// v3.1's default as its user guide gives it.
    pub v31: &'static str,
    pub why: &'static str,
}

/// Every parameter whose default here is not SCR v3.1's.
pub const V31_DEFAULTS: &[V31Default] = &[
    V31Default {
        name: "SCR_CNTL_BASE",
        v31: "/dev/shm",
        why: "SCR v2.0's default is kept, as for every default v3.1 changed; sites set their own in the system configuration",
    },
    V31Default {
        name: "SCR_CACHE_BASE",
        v31: "/dev/shm",
        why: "SCR v2.0's default is kept; set SCR_CACHE_BASE=/dev/shm (or a STORE line) to cache in memory as v3.1 does",
    },
    V31Default {
        name: "SCR_CACHE_BYPASS",
        v31: "1",
        why: "Checkpoints go to cache, as in SCR v2.0, which has no bypass; set 1 for v3.1's behaviour",
    },
    V31Default {
        name: "SCR_MPI_BUF_SIZE",
        v31: "131072",
        why: "4 MiB pieces make redundancy encoding 10-40x faster where ranks share cores (benches/redundancy.sh)",
    },
];

/// `SCR_*` environment variables that are no parameters but are no typos either: read by
/// SCR itself (`SCR_SYSTEM_CONF_FILE`), its Python module
/// (`SCR_LIBRARY`), set by its modulefile (`SCR_ROOT`, `SCR_INSTALL_DIR`) and the examples'
/// Makefile (`SCR_PREFIX_DIR`, `SCR_LIBDIR`), the build's `SCR_CONFIG_FILE`, SCR v3.1's
/// node tests (`SCR_NODE_TESTS`, `SCR_NODE_TESTS_FILE`), and this project's scripts and
/// test clusters (`SCR_SETUP_ROOT`, `SCR_CLUSTER_STATE`, `SCR_REPORT_SCREENSHOT`). Any other
/// `SCR_*` name that is no parameter is warned of.
pub const NOT_PARAMETERS: &[&str] = &[
    "SCR_SYSTEM_CONF_FILE",
    "SCR_LIBRARY",
    "SCR_ROOT",
    "SCR_INSTALL_DIR",
    "SCR_PREFIX_DIR",
    "SCR_LIBDIR",
    "SCR_CONFIG_FILE",
    "SCR_NODE_TESTS",
    "SCR_NODE_TESTS_FILE",
    "SCR_SETUP_ROOT",
    "SCR_CLUSTER_STATE",
    "SCR_REPORT_SCREENSHOT",
    // what scr-run gives each run it launches, for its START record
    crate::event_log::LAUNCH_ID_VAR,
];

/// Beginnings of such names: the test suite's (`SCR_TEST_MPI`, `SCR_TEST_FAULT` …) and a
/// package manager's (`SCR_PKG…`).
pub const NOT_PARAMETER_PREFIXES: &[&str] = &["SCR_TEST_", "SCR_PKG"];

/// The system configuration file path this build was given (`scripts/install.sh
/// --config-file`, SCR's `SCR_CONFIG_FILE`), if any.
pub const BUILT_SYSTEM_CONFIG: Option<&str> = option_env!("SCR_CONFIG_FILE");

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
pub fn allowed_children(parent: &str) -> Option<&'static [&'static str]> {
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

pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// The sane range of a size or count parameter, where one is needed: a value outside it
/// would do harm (a container per byte, a buffer MPI cannot count, sets too small to
/// protect anything or too large for the code) rather than be merely slow.
pub fn bounds(name: &str) -> Option<(u64, u64)> {
    const GIB: u64 = 1 << 30;
    Some(match name {
        // a piece of redundancy communication is one MPI message: its count is an int
        "SCR_MPI_BUF_SIZE" => (1, GIB),
        "SCR_FILE_BUF_SIZE" => (1, GIB),
        "SCR_CONTAINER_SIZE" => (4096, u64::MAX),
        "SCR_SET_SIZE" => (2, 255),
        "SCR_SET_FAILURES" => (1, 254),
        "SCR_FETCH_WIDTH" | "SCR_FLUSH_WIDTH" => (1, u64::MAX),
        _ => return None,
    })
}

pub(super) fn check_value(spec: &ParamSpec, value: &str) -> std::result::Result<(), String> {
    let in_bounds = |n: u64| match bounds(spec.name) {
        Some((lo, hi)) if n < lo || n > hi => Err(format!(
            "{}={value:?} is out of range: it must be {}",
            spec.name,
            if hi == u64::MAX {
                format!("at least {lo}")
            } else {
                format!("between {lo} and {hi}")
            }
        )),
        _ => Ok(()),
    };
    let ok = match spec.kind {
        Kind::Bool => parse_bool(value).is_some(),
        Kind::Count => match value.parse::<u64>() {
            Ok(n) => return in_bounds(n),
            Err(_) => false,
        },
        Kind::Int => value.parse::<i64>().is_ok(),
        Kind::Bytes => {
            return parse_bytecount(value)
                .map_err(|e| format!("{}: {e}", spec.name))
                .and_then(in_bounds);
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
