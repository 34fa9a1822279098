//! `scr index` (SCR's `scr_index`): list the datasets in a prefix directory's index, choose
//! the one a restart starts from, or drop entries. (`--add`/`--build`, which scan, rebuild
//! and index a scavenged dataset, arrive with the drain.)

use scr::index::IndexFile;
use scr::{Error, HashView, layout};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "List, select or drop datasets in a prefix directory's index",
    long_about = "List the datasets recorded in <prefix>/.scr/index.scr (the default), mark one as \
                  current so the next restart starts from it, or drop entries (files are not deleted).\n\n\
                  Exit codes: 0 success; 1 the index cannot be read or the named dataset is not in it."
)]
pub struct Args {
    /// List indexed datasets (the default)
    #[arg(short = 'l', long)]
    list: bool,
    /// Set NAME as the dataset restarts start from
    #[arg(short = 'c', long, value_name = "NAME")]
    current: Option<String>,
    /// Drop NAME from the index (its files stay); SCR 1.1's --remove
    #[arg(long, visible_alias = "remove", short = 'r', value_name = "NAME")]
    drop: Option<String>,
    /// Drop every dataset newer than NAME from the index
    #[arg(long, value_name = "NAME")]
    drop_after: Option<String>,
    /// The prefix directory (default: the working directory)
    #[arg(short = 'p', long, value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// Print the list as JSON
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let prefix = match args.prefix {
        Some(p) => p,
        None => {
            std::env::current_dir().map_err(|e| Error::io(".", "read the working directory", e))?
        }
    };
    let path = layout::index_file(&prefix);
    if args.current.is_some() || args.drop.is_some() || args.drop_after.is_some() {
        // an index must exist to be changed (locking would create an empty one)
        std::fs::metadata(&path).map_err(|e| Error::io(&path, "open", e))?;
        let missing = |name: &str| {
            Error::invalid(
                &path,
                format!("dataset {name} is not in the index; `scr index --list` shows what is"),
            )
        };
        IndexFile::update(&path, 0o644, |index| {
            if let Some(name) = &args.drop {
                if !index.remove(name) {
                    return Err(missing(name));
                }
                println!("Dropped `{name}' from index");
            }
            if let Some(name) = &args.drop_after {
                let id = index.id_of(name).ok_or_else(|| missing(name))?;
                for dropped in index.remove_after(id) {
                    println!("Dropped `{dropped}' from index");
                }
            }
            if let Some(name) = &args.current {
                index.set_current(name).map_err(|_| missing(name))?;
                println!("Set `{name}' as current restart dataset");
            }
            Ok(())
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let index = IndexFile::read(&path)?;
    let entries: Vec<_> = index
        .entries()
        .into_iter()
        .filter(|e| {
            index
                .dataset(e.id, &e.name)
                .is_none_or(|d| d.is_checkpoint())
        })
        .collect();
    if args.json {
        let list: Vec<_> = entries
            .iter()
            .map(|e| {
                json!({"dset": e.id, "name": e.name, "valid": e.complete && e.failed.is_empty(), "complete": e.complete,
                       "flushed": e.flushed, "fetched": e.fetched, "failed": e.failed, "current": e.is_current})
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "prefix": prefix, "datasets": list }))
                .expect("JSON")
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("DSET VALID FLUSHED             CUR NAME");
    for e in entries {
        let valid = if e.complete && e.failed.is_empty() {
            "YES  "
        } else {
            "NO   "
        };
        let flushed = e.flushed.as_deref().unwrap_or("                   ");
        let cur = if e.is_current { "  *" } else { "   " };
        println!("{:4} {valid} {flushed} {cur} {}", e.id, e.name);
    }
    Ok(ExitCode::SUCCESS)
}
