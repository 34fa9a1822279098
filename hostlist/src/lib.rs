//! Hostlist algebra for SCR: parse node lists as SLURM and ClusterShell write them, expand,
//! count and index them as lists, and combine and compress them as sets.
//!
//! ```
//! use hostlist::{HostList, HostSet};
//! let list: HostList = "rack[1-2]-node[01-02],login".parse().unwrap();
//! assert_eq!(list.count(), 5);
//! assert_eq!(list.nth(-1).as_deref(), Some("login"));
//! let up = list.to_set().unwrap().difference(&"rack2-node01".parse::<HostSet>().unwrap());
//! assert_eq!(up.to_string(), "login,rack1-node[01-02],rack2-node02");
//! ```
//!
//! No I/O and no MPI: the launcher and the library both build on it. Memory follows the
//! number of ranges, not hosts, wherever the input is written as ranges.

mod intervals;
mod parse;
mod set;

pub use intervals::IntervalSet;
pub use parse::{HostList, ParseError, check_host_name};
pub use set::{HostSet, PER_HOST_LIMIT};
