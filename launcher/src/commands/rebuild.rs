//! `scr rebuild-xor` (SCR's `scr_rebuild_xor`) and `scr rebuild-rs`: rebuild lost members
//! of a redundancy set from the others' parity files and files, serially and without MPI,
//! as the drain does after scavenging a set that lost nodes.

use scr::erasure::StripeCode;
use scr::layout;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Rebuild a lost member of an XOR set from the remaining members (no MPI)",
    long_about = "Rebuild a lost member of an XOR set from the remaining members, without MPI. \
                  Arguments are in the order of SCR's scr_rebuild_xor: the set size, the lost \
                  member's position in the set (0-based), the XOR file to write for it, then the \
                  remaining members' XOR files in set order. The lost member's file list comes \
                  from its right neighbour's XOR header; user files are read and written under \
                  the prefix by their names relative to it, and rebuilt files are checked \
                  against the CRCs their owner recorded. Prints each file written; exits 0 on \
                  success, 1 on failure."
)]
pub struct Args {
    /// Number of members in the set
    size: usize,
    /// Position of the lost member in the set (0-based)
    root: usize,
    /// XOR file to write for the lost member (e.g. .scr/scr.dataset.3/xor.0_2_of_4.scr)
    missing: PathBuf,
    /// XOR files of the remaining members, in set order
    #[arg(required = true)]
    remaining: Vec<PathBuf>,
    /// Directory the user files' names are relative to [default: the prefix the XOR
    /// files sit in (<prefix>/.scr/scr.dataset.<id>/), else the working directory]
    #[arg(short = 'p', long)]
    prefix: Option<PathBuf>,
    /// Bytes read and written at a time
    #[arg(long, default_value_t = 1 << 20)]
    buf_size: usize,
}

/// `<prefix>` of `<prefix>/.scr/scr.dataset.<id>/xor…`, if the file sits there.
fn prefix_of(xor_file: &Path) -> Option<PathBuf> {
    let dataset_dir = xor_file.parent()?;
    let hidden = dataset_dir.parent()?;
    let is_dataset = layout::parse_dataset_dir_name(dataset_dir.file_name()?.to_str()?).is_some();
    (is_dataset && hidden.file_name()? == ".scr").then(|| hidden.parent().map(Path::to_path_buf))?
}

/// The prefix given, else the one the parity files sit in, else the working directory.
fn resolve_prefix(given: Option<PathBuf>, parity_file: &Path) -> scr::Result<PathBuf> {
    match given.or_else(|| prefix_of(parity_file)) {
        Some(p) => Ok(p),
        None => std::env::current_dir()
            .map_err(|e| scr::Error::io(".", "read the working directory", e)),
    }
}

fn print_written(written: Vec<PathBuf>) -> ExitCode {
    for p in written {
        println!("{}", p.display());
    }
    ExitCode::SUCCESS
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let prefix = resolve_prefix(args.prefix, &args.missing)?;
    if args.size < 2 || args.root >= args.size || args.remaining.len() + 1 != args.size {
        return Err(scr::Error::invalid(
            &args.missing,
            format!(
                "an XOR set of {} needs the lost member's position below {} and {} remaining XOR \
                 files, got position {} and {} files",
                args.size,
                args.size,
                args.size.saturating_sub(1),
                args.root,
                args.remaining.len()
            ),
        ));
    }
    let mut remaining = args.remaining.into_iter();
    let parity: Vec<Option<PathBuf>> = (0..args.size)
        .map(|pos| {
            if pos == args.root {
                None
            } else {
                remaining.next()
            }
        })
        .collect();
    let written = scr::erasure::rebuild_serial(
        StripeCode::xor(args.size),
        &[args.root],
        &[args.missing],
        &parity,
        &prefix,
        args.buf_size,
    )?;
    Ok(print_written(written))
}

#[derive(clap::Args)]
#[command(
    about = "Rebuild lost members of a Reed–Solomon set from the remaining members (no MPI)",
    long_about = "Rebuild lost members of a Reed–Solomon set, without MPI. Give every member's \
                  RS file in set order (rs.<set>_<i>_of_<n>.scr); those that do not exist are the \
                  lost members and are rebuilt, with their files, from the others. Up to FAILURES \
                  members may be missing. User files are read and written under the prefix by \
                  their names relative to it and checked against their owners' CRCs. Prints each \
                  file written; exits 0 on success, 1 on failure."
)]
pub struct RsArgs {
    /// Lost members the set survives (SCR_SET_FAILURES when it was written)
    failures: usize,
    /// Every member's RS file, in set order; the missing ones are rebuilt
    #[arg(required = true, num_args = 2..)]
    files: Vec<PathBuf>,
    /// Directory the user files' names are relative to [default: the prefix the RS files
    /// sit in (<prefix>/.scr/scr.dataset.<id>/), else the working directory]
    #[arg(short = 'p', long)]
    prefix: Option<PathBuf>,
    /// Bytes read and written at a time
    #[arg(long, default_value_t = 1 << 20)]
    buf_size: usize,
}

pub fn run_rs(args: RsArgs) -> scr::Result<ExitCode> {
    let prefix = resolve_prefix(args.prefix, &args.files[0])?;
    let lost: Vec<usize> = (0..args.files.len())
        .filter(|&i| !args.files[i].exists())
        .collect();
    if lost.is_empty() {
        eprintln!("scr rebuild-rs: every member's file exists; nothing to rebuild");
        return Ok(ExitCode::SUCCESS);
    }
    let missing: Vec<PathBuf> = lost.iter().map(|&i| args.files[i].clone()).collect();
    let parity: Vec<Option<PathBuf>> = args
        .files
        .iter()
        .map(|f| f.exists().then(|| f.clone()))
        .collect();
    let code = StripeCode::reed_solomon(args.files.len(), args.failures);
    let written =
        scr::erasure::rebuild_serial(code, &lost, &missing, &parity, &prefix, args.buf_size)?;
    Ok(print_written(written))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_from_the_xor_file_location() {
        assert_eq!(
            prefix_of(Path::new("/p/run/.scr/scr.dataset.12/xor.0_1_of_4.scr")),
            Some(PathBuf::from("/p/run"))
        );
        assert_eq!(prefix_of(Path::new("/p/run/xor.0_1_of_4.scr")), None);
        assert_eq!(prefix_of(Path::new("xor.0_1_of_4.scr")), None);
    }
}
