//! One module per subcommand; each has clap `Args` and a `run` function.

pub mod print;
pub mod glob_hosts;
