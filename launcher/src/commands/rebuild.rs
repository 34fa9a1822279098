//! `scr rebuild-xor` (SCR's `scr_rebuild_xor`): rebuilds one lost member of an XOR set from
//! the others' XOR files and files, serially and without MPI, as the drain does after
//! scavenging a set that lost a node.

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
    let is_dataset = dataset_dir
        .file_name()?
        .to_str()?
        .strip_prefix("scr.dataset.")?
        .parse::<u64>()
        .is_ok();
    (is_dataset && hidden.file_name()? == ".scr").then(|| hidden.parent().map(Path::to_path_buf))?
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let prefix = match args.prefix {
        Some(p) => p,
        None => prefix_of(&args.missing)
            .map(Ok)
            .unwrap_or_else(std::env::current_dir)
            .map_err(|e| scr::Error::io(".", "read the working directory", e))?,
    };
    let written = scr::xor::rebuild_member(
        args.size,
        args.root,
        &args.missing,
        &args.remaining,
        &prefix,
        args.buf_size,
    )?;
    for p in written {
        println!("{}", p.display());
    }
    Ok(ExitCode::SUCCESS)
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
