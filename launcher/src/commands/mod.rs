//! One module per subcommand; each has clap `Args` and a `run` function.

pub mod config;
pub mod dirs;
pub mod docs;
pub mod drain;
pub mod glob_hosts;
pub mod halt;
pub mod hostlist;
pub mod index;
pub mod jobs;
pub mod links;
pub mod nodes;
pub mod print;
pub mod rebuild;
pub mod report;
pub mod run;
pub mod state_files;
pub mod transfer;

/// The prefix directory a command works on: the one given, else SCR_PREFIX, else the
/// working directory.
pub fn prefix_dir(
    given: Option<std::path::PathBuf>,
    params: &scr::params::Params,
) -> scr::Result<std::path::PathBuf> {
    let prefix =
        scr::layout::prefix_dir(given.as_deref(), params.typed().places.prefix.as_deref())?;
    scr::safe_fs::check_prefix(&prefix)?;
    Ok(prefix)
}

/// The job id that names the job's directories: the library's rule ([`scr::layout::job_id`]),
/// from the parameters and this process's environment.
pub fn job_id(params: &scr::params::Params) -> String {
    scr::layout::job_id(params.typed().places.job_id.as_deref(), |k| {
        std::env::var(k).ok()
    })
}

/// A state file, or an empty one when it does not exist (nothing recorded yet).
pub fn read_or_empty<T: scr::HashView + Default>(path: &std::path::Path) -> scr::Result<T> {
    match T::read(path) {
        Ok(v) => Ok(v),
        Err(e) if e.is_not_found() => Ok(T::default()),
        Err(e) => Err(e),
    }
}

/// A host list given as an option or parameter (`what` names it in the error); none is
/// the empty set.
pub fn host_set(text: Option<&str>, what: &str) -> scr::Result<::hostlist::HostSet> {
    match text {
        Some(t) => t
            .parse::<::hostlist::HostSet>()
            .map_err(|e| scr::Error::refused(format!("{what}={t:?} is not a host list: {e}"))),
        None => Ok(::hostlist::HostSet::new()),
    }
}

/// SCR_EXCLUDE_NODES: the nodes never to use.
pub fn excluded_nodes(params: &scr::params::Params) -> scr::Result<::hostlist::HostSet> {
    host_set(
        params.typed().launch.exclude_nodes.as_deref(),
        "SCR_EXCLUDE_NODES",
    )
}
