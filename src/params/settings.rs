//! The parameters parsed once into typed values, a struct for each part of SCR that reads
//! them. Every value comes from [`Params`] (its value checked when it was set) with the
//! table's default: no part looks a parameter up by name or restates a default.

use super::{Origin, Params, parse_bool, parse_bytecount, spec};
use crate::reddesc::Scheme;
use std::str::FromStr;

/// A parameter's value, or the table's default; `None` when it has neither.
fn value<T: FromStr>(p: &Params, name: &str) -> Option<T> {
    let text = p.get(name).or_else(|| spec(name)?.default)?;
    text.parse().ok()
}

fn count(p: &Params, name: &str) -> u64 {
    value(p, name).unwrap_or(0)
}

fn flag(p: &Params, name: &str) -> bool {
    p.get(name)
        .or_else(|| spec(name)?.default)
        .and_then(parse_bool)
        .unwrap_or(false)
}

fn bytes(p: &Params, name: &str) -> u64 {
    p.get(name)
        .or_else(|| spec(name)?.default)
        .and_then(|t| parse_bytecount(t).ok())
        .unwrap_or(0)
}

fn text(p: &Params, name: &str) -> Option<String> {
    p.get(name)
        .or_else(|| spec(name)?.default)
        .map(str::to_string)
}

/// Every typed setting the library and the commands use.
#[derive(Clone, Debug)]
pub struct Settings {
    /// SCR_ENABLE.
    pub enable: bool,
    /// SCR_DEBUG: 1 says what SCR does, 2 each file and directory, 3 every routed file.
    pub debug: u64,
    /// SCR_LOCK_TIMEOUT: seconds a lock on a shared state file is waited for (what it
    /// comes to: [`crate::io::lock_timeout`]).
    pub lock_timeout: Option<f64>,
    pub crc: Crc,
    pub buffers: Buffers,
    pub schedule: Schedule,
    pub flush: Flush,
    pub fetch: Fetch,
    pub cache: Cache,
    pub prefix: PrefixStore,
    pub halt: Halt,
    pub origin: DatasetOrigin,
    pub redundancy: Redundancy,
    pub places: Places,
    pub log: Log,
    pub launch: Launch,
    /// SCR_CURRENT: the checkpoint a restart loads.
    pub current: Option<String>,
}

/// What scr-run does between runs.
#[derive(Clone, Debug)]
pub struct Launch {
    /// SCR_RUNS (negative: no limit), when set.
    pub runs: Option<i64>,
    /// SCR_RETRIES: the legacy spelling of SCR_RUNS - 1.
    pub retries: u64,
    /// SCR_RUN_DELAY: seconds between runs.
    pub run_delay_secs: u64,
    /// SCR_MIN_NODES: nodes a run needs, when set.
    pub min_nodes: Option<u64>,
    /// SCR_RESHAPE: a relaunch may run fewer ranks on fewer nodes.
    pub reshape: bool,
    /// SCR_EXCLUDE_NODES: a host list never used.
    pub exclude_nodes: Option<String>,
    /// SCR_WATCHDOG.
    pub watchdog: bool,
    /// SCR_WATCHDOG_TIMEOUT: seconds a run may go without progress.
    pub watchdog_timeout: Option<u64>,
    /// SCR_WATCHDOG_TIMEOUT_PFS: the same while it flushes.
    pub watchdog_timeout_pfs: Option<u64>,
    /// SCR_TRANSFER_SECS: seconds between a transfer agent's polls.
    pub transfer_poll_secs: f64,
}

/// The event log.
#[derive(Clone, Debug)]
pub struct Log {
    /// SCR_LOG_ENABLE.
    pub enable: bool,
    /// SCR_LOG_TXT_ENABLE.
    pub text: bool,
    /// SCR_LOG_SYSLOG_ENABLE.
    pub syslog: bool,
    /// SCR_LOG_SYSLOG_FACILITY.
    pub facility: String,
    /// SCR_LOG_SYSLOG_LEVEL.
    pub level: String,
    /// SCR_LOG_SYSLOG_PREFIX.
    pub identity: String,
    /// SCR_LOG_DB_*.
    pub db: LogDb,
}

/// The database log's parameters.
#[derive(Clone, Default)]
pub struct LogDb {
    /// SCR_LOG_DB_ENABLE.
    pub enable: bool,
    /// SCR_LOG_DB_DEBUG.
    pub debug: bool,
    /// SCR_LOG_DB_HOST.
    pub host: Option<String>,
    /// SCR_LOG_DB_NAME.
    pub name: Option<String>,
    /// SCR_LOG_DB_USER.
    pub user: Option<String>,
    /// SCR_LOG_DB_PASS (never from a configuration file others can read: see
    /// `Params::load`).
    pub pass: Option<String>,
}

impl std::fmt::Debug for LogDb {
    /// Everything but the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogDb")
            .field("enable", &self.enable)
            .field("debug", &self.debug)
            .field("host", &self.host)
            .field("name", &self.name)
            .field("user", &self.user)
            .field("pass", &self.pass.as_ref().map(|_| "(hidden)"))
            .finish()
    }
}

/// Where a job's directories are, and whose they are.
#[derive(Clone, Debug)]
pub struct Places {
    /// SCR_PREFIX (default: the working directory).
    pub prefix: Option<String>,
    /// SCR_CNTL_BASE.
    pub cntl_base: String,
    /// SCR_JOB_ID (default: the resource manager's, else `layout::DEFAULT_JOB_ID`).
    pub job_id: Option<String>,
    /// SCR_USER_NAME (default: [`crate::layout::user_name`]'s USER, else the account's).
    pub user_name: Option<String>,
}

impl Places {
    /// The user name in directory names: SCR_USER_NAME from the environment or a
    /// configuration file, else USER, else the account's.
    pub fn user(&self) -> String {
        crate::layout::user_name_given(self.user_name.as_deref())
    }

    /// The user a command works for: SCR_USER_NAME, else the effective user's account
    /// ([`crate::layout::effective_user_name`]).
    pub fn effective_user(&self) -> String {
        crate::layout::effective_user_name(self.user_name.as_deref())
    }
}

/// The checkpoint descriptor SCR implies when no `CKPT=` line applies, and the values a
/// line that leaves them out takes.
#[derive(Clone, Debug)]
pub struct Redundancy {
    /// SCR_CACHE_BASE.
    pub cache_base: String,
    /// SCR_COPY_TYPE (FILE: the `CKPT=` lines decide).
    pub scheme: Scheme,
    /// SCR_SET_SIZE.
    pub set_size: u64,
    /// SCR_SET_FAILURES.
    pub set_failures: u64,
    /// SCR_HOP_DISTANCE (at least 1).
    pub hop_distance: u64,
    /// SCR_GROUP, upper case.
    pub group: String,
    /// SCR_CACHE_BYPASS.
    pub bypass: bool,
}

/// When CRC32s are computed and checked.
#[derive(Clone, Copy, Debug)]
pub struct Crc {
    /// SCR_CRC_ON_COPY: when redundancy is applied, and every cached file at a restart.
    pub on_copy: bool,
    /// SCR_CRC_ON_FLUSH: on flush and fetch.
    pub on_flush: bool,
    /// SCR_CRC_ON_DELETE: before a dataset leaves the cache.
    pub on_delete: bool,
}

/// Buffer sizes of copies and of redundancy messages.
#[derive(Clone, Copy, Debug)]
pub struct Buffers {
    /// SCR_FILE_BUF_SIZE.
    pub file: usize,
    /// SCR_MPI_BUF_SIZE (at most 1 GiB: an MPI count is an int).
    pub mpi: usize,
}

/// When SCR_Need_checkpoint says yes.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// SCR_CHECKPOINT_INTERVAL: every N calls (0: not by count).
    pub interval: u64,
    /// SCR_CHECKPOINT_SECONDS: after N seconds (0: not by time).
    pub seconds: u64,
    /// SCR_CHECKPOINT_OVERHEAD: keep the checkpoints' cost under N percent (0: not by cost).
    pub overhead_percent: f64,
}

/// How and when checkpoints go to the prefix.
#[derive(Clone, Copy, Debug)]
pub struct Flush {
    /// SCR_FLUSH: every N checkpoints (0: never).
    pub every: u64,
    /// SCR_FLUSH_WIDTH: ranks writing to the prefix at once.
    pub width: u64,
    /// SCR_FLUSH_ON_RESTART, or SCR_GLOBAL_RESTART: the checkpoint restarted from cache is
    /// flushed in SCR_Init.
    pub on_restart: bool,
    /// SCR_FLUSH_ASYNC=1, or SCR_FLUSH_TYPE naming anything but SYNC.
    pub in_background: bool,
    /// SCR_FLUSH_ASYNC_BW: bytes per second a background flush may use.
    pub async_bytes_per_sec: u64,
    /// SCR_FLUSH_ASYNC_PERCENT: CPU share of the transfer agent (0: no cap).
    pub async_percent: f64,
    /// SCR_FLUSH_ASYNC_STALL: seconds an agent may go without finishing a file.
    pub async_stall_secs: u64,
    /// SCR_USE_CONTAINERS.
    pub containers: bool,
    /// SCR_CONTAINER_SIZE.
    pub container_size: u64,
    /// SCR_PRESERVE_DIRECTORIES.
    pub preserve_directories: bool,
    /// No drain follows the job and the user chose no flush: `every` is 1 and
    /// `in_background` set, whatever SCR_FLUSH's and SCR_FLUSH_ASYNC's defaults say.
    pub each_for_want_of_a_drain: bool,
}

/// How a restart reads the prefix.
#[derive(Clone, Copy, Debug)]
pub struct Fetch {
    /// SCR_FETCH.
    pub enabled: bool,
    /// SCR_FETCH_WIDTH: ranks reading the prefix at once.
    pub width: u64,
    /// SCR_FETCH_BYPASS, or SCR_GLOBAL_RESTART: the prefix's files are read in place.
    pub in_place: bool,
    /// SCR_GLOBAL_RESTART: the restart reads the prefix in place (after the flush on
    /// restart), whatever is cached.
    pub global_restart: bool,
    /// SCR_DISTRIBUTE: cached files are redistributed and rebuilt in SCR_Init.
    pub distribute: bool,
    /// SCR_RESHAPE: the application re-partitions a checkpoint written by another number
    /// of ranks (it lists the restart's files), so one is offered to it.
    pub any_size: bool,
}

/// The cache at SCR_Init.
#[derive(Clone, Copy, Debug)]
pub struct Cache {
    /// SCR_CACHE_PURGE.
    pub purge: bool,
}

/// What is kept on the prefix.
#[derive(Clone, Copy, Debug)]
pub struct PrefixStore {
    /// SCR_PREFIX_SIZE: checkpoints kept (0: all).
    pub size: u64,
    /// SCR_PREFIX_PURGE: every dataset deleted in SCR_Init.
    pub purge: bool,
    /// SCR_PREFIX_SHARED: a prefix everyone may write is used, not refused.
    pub shared: bool,
}

/// When the job halts.
#[derive(Clone, Copy, Debug)]
pub struct Halt {
    /// SCR_HALT_SECONDS (0: not by the allocation's end).
    pub seconds: u64,
    /// SCR_END_TIME: the allocation's end, seconds since the epoch (positive).
    pub end_time: Option<i64>,
    /// Whether a halt exits inside SCR ([`Params::halt_exits`]).
    pub exits: bool,
}

/// What every dataset records of where it came from.
#[derive(Clone, Debug)]
pub struct DatasetOrigin {
    /// SCR_JOB_NAME.
    pub job_name: Option<String>,
    /// SCR_CLUSTER_NAME.
    pub cluster_name: Option<String>,
}

/// Whether every checkpoint flushes in the background because nothing else would bring it
/// to the prefix: no drain follows the job (SCR_DRAIN_FOLLOWS, which scr-run sets in its
/// runs), so a job killed before SCR_Finalize would leave whatever only its node caches
/// hold to be lost with them, and the user chose no flush of their own (SCR_FLUSH,
/// SCR_FLUSH_ASYNC, SCR_FLUSH_TYPE or a STORE line's FLUSH= set anywhere).
pub fn flush_each_for_want_of_a_drain(p: &Params) -> bool {
    let chosen = ["SCR_FLUSH", "SCR_FLUSH_ASYNC", "SCR_FLUSH_TYPE"]
        .iter()
        .any(|n| p.setting(n).is_some_and(|s| s.origin != Origin::Default))
        || p.descriptors_of("STORE").any(|d| d.attr("FLUSH").is_some());
    !flag(p, "SCR_DRAIN_FOLLOWS") && !chosen
}

impl Settings {
    pub fn from_params(p: &Params) -> Settings {
        let global_restart = flag(p, "SCR_GLOBAL_RESTART");
        let each_for_want_of_a_drain = flush_each_for_want_of_a_drain(p);
        Settings {
            enable: flag(p, "SCR_ENABLE"),
            lock_timeout: value(p, "SCR_LOCK_TIMEOUT"),
            debug: count(p, "SCR_DEBUG"),
            crc: Crc {
                on_copy: flag(p, "SCR_CRC_ON_COPY"),
                on_flush: flag(p, "SCR_CRC_ON_FLUSH"),
                on_delete: flag(p, "SCR_CRC_ON_DELETE"),
            },
            buffers: Buffers {
                file: bytes(p, "SCR_FILE_BUF_SIZE").max(1) as usize,
                mpi: bytes(p, "SCR_MPI_BUF_SIZE").clamp(1, 1 << 30) as usize,
            },
            schedule: Schedule {
                interval: count(p, "SCR_CHECKPOINT_INTERVAL"),
                seconds: count(p, "SCR_CHECKPOINT_SECONDS"),
                overhead_percent: value(p, "SCR_CHECKPOINT_OVERHEAD").unwrap_or(0.0),
            },
            flush: Flush {
                every: if each_for_want_of_a_drain {
                    1
                } else {
                    count(p, "SCR_FLUSH")
                },
                width: count(p, "SCR_FLUSH_WIDTH").max(1),
                on_restart: flag(p, "SCR_FLUSH_ON_RESTART") || global_restart,
                in_background: each_for_want_of_a_drain || p.flush_in_background(),
                async_bytes_per_sec: bytes(p, "SCR_FLUSH_ASYNC_BW"),
                async_percent: value(p, "SCR_FLUSH_ASYNC_PERCENT").unwrap_or(0.0),
                async_stall_secs: count(p, "SCR_FLUSH_ASYNC_STALL"),
                containers: flag(p, "SCR_USE_CONTAINERS"),
                container_size: bytes(p, "SCR_CONTAINER_SIZE"),
                preserve_directories: flag(p, "SCR_PRESERVE_DIRECTORIES"),
                each_for_want_of_a_drain,
            },
            fetch: Fetch {
                enabled: flag(p, "SCR_FETCH"),
                width: count(p, "SCR_FETCH_WIDTH").max(1),
                in_place: flag(p, "SCR_FETCH_BYPASS") || global_restart,
                global_restart,
                distribute: flag(p, "SCR_DISTRIBUTE"),
                any_size: flag(p, "SCR_RESHAPE"),
            },
            cache: Cache {
                purge: flag(p, "SCR_CACHE_PURGE"),
            },
            prefix: PrefixStore {
                size: count(p, "SCR_PREFIX_SIZE"),
                purge: flag(p, "SCR_PREFIX_PURGE"),
                shared: flag(p, "SCR_PREFIX_SHARED"),
            },
            halt: Halt {
                seconds: count(p, "SCR_HALT_SECONDS"),
                end_time: value(p, "SCR_END_TIME").filter(|&t: &i64| t > 0),
                exits: p.halt_exits(),
            },
            origin: DatasetOrigin {
                job_name: text(p, "SCR_JOB_NAME"),
                cluster_name: text(p, "SCR_CLUSTER_NAME"),
            },
            places: Places {
                prefix: text(p, "SCR_PREFIX"),
                cntl_base: text(p, "SCR_CNTL_BASE").unwrap_or_default(),
                job_id: text(p, "SCR_JOB_ID"),
                user_name: text(p, "SCR_USER_NAME"),
            },
            current: text(p, "SCR_CURRENT"),
            launch: Launch {
                runs: value(p, "SCR_RUNS"),
                retries: count(p, "SCR_RETRIES"),
                run_delay_secs: count(p, "SCR_RUN_DELAY"),
                min_nodes: value(p, "SCR_MIN_NODES"),
                reshape: flag(p, "SCR_RESHAPE"),
                exclude_nodes: text(p, "SCR_EXCLUDE_NODES"),
                watchdog: flag(p, "SCR_WATCHDOG"),
                watchdog_timeout: value(p, "SCR_WATCHDOG_TIMEOUT"),
                watchdog_timeout_pfs: value(p, "SCR_WATCHDOG_TIMEOUT_PFS"),
                transfer_poll_secs: value(p, "SCR_TRANSFER_SECS").unwrap_or(60.0),
            },
            log: Log {
                enable: flag(p, "SCR_LOG_ENABLE"),
                text: flag(p, "SCR_LOG_TXT_ENABLE"),
                syslog: flag(p, "SCR_LOG_SYSLOG_ENABLE"),
                facility: text(p, "SCR_LOG_SYSLOG_FACILITY").unwrap_or_default(),
                level: text(p, "SCR_LOG_SYSLOG_LEVEL").unwrap_or_default(),
                identity: text(p, "SCR_LOG_SYSLOG_PREFIX").unwrap_or_default(),
                db: LogDb {
                    enable: flag(p, "SCR_LOG_DB_ENABLE"),
                    debug: flag(p, "SCR_LOG_DB_DEBUG"),
                    host: text(p, "SCR_LOG_DB_HOST"),
                    name: text(p, "SCR_LOG_DB_NAME"),
                    user: text(p, "SCR_LOG_DB_USER"),
                    pass: text(p, "SCR_LOG_DB_PASS"),
                },
            },
            redundancy: Redundancy {
                cache_base: text(p, "SCR_CACHE_BASE").unwrap_or_default(),
                scheme: text(p, "SCR_COPY_TYPE")
                    .and_then(|t| Scheme::parse(&t))
                    .unwrap_or(Scheme::Xor),
                set_size: count(p, "SCR_SET_SIZE"),
                set_failures: count(p, "SCR_SET_FAILURES"),
                hop_distance: count(p, "SCR_HOP_DISTANCE").max(1),
                group: text(p, "SCR_GROUP")
                    .unwrap_or_default()
                    .to_ascii_uppercase(),
                bypass: flag(p, "SCR_CACHE_BYPASS"),
            },
        }
    }
}
