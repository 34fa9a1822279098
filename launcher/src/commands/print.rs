//! `scr print FILE` (SCR's `scr_print_hash_file`): prints a hash file as SCR does, or as
//! JSON for scripts.

use scr::io::read_hash_file;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Print an SCR hash file (filemap, index, summary, halt, flush …)",
    long_about = "Print an SCR hash file in the layout of SCR's scr_print_hash_file: one key per \
                  line, indented two spaces per level. Files written by SCR v1.2/v2.0 and by this \
                  implementation are understood; a damaged file is reported with what is wrong."
)]
pub struct Args {
    /// The hash file to print
    file: PathBuf,
    /// Print JSON instead: a key holding one bare value becomes a string, several bare values
    /// an array, anything else an object; keys keep the file's order
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let hash = read_hash_file(&args.file)?;
    let text = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&hash.to_json_object()).expect("JSON of strings")
        )
    } else {
        hash.to_string()
    };
    let mut out = std::io::stdout().lock();
    // A closed pipe (`scr print f | head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(ExitCode::SUCCESS)
}
