//! One module per subcommand; each has clap `Args` and a `run` function.

pub mod dirs;
pub mod drain;
pub mod glob_hosts;
pub mod halt;
pub mod index;
pub mod links;
pub mod nodes;
pub mod print;
pub mod rebuild;
pub mod run;
pub mod state_files;
