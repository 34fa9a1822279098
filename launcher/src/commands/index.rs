//! `scr index` (SCR's `scr_index`): list the datasets in a prefix directory's index, choose
//! the one a restart starts from, drop entries, or check, rebuild and index a scavenged
//! dataset (`--build ID`, `--add NAME`).

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
    /// The prefix directory [default: SCR_PREFIX, else the working directory]
    #[arg(short = 'p', long, value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// Print the list as JSON
    #[arg(long)]
    json: bool,
    /// Check scavenged dataset ID (its per-rank filemaps in .scr/scr.dataset.ID/), rebuild
    /// lost members from parity, write its summary and rank2file map, and index it
    #[arg(short = 'b', long, value_name = "ID")]
    build: Option<u64>,
    /// The same for the scavenged dataset named NAME; for a dataset already flushed to the
    /// prefix, check that every file (or container segment) its map lists is there and
    /// index it, complete only if all are
    #[arg(short = 'a', long, value_name = "NAME")]
    add: Option<String>,
}

/// The id of the scavenged dataset named `name` (from its per-rank filemaps).
fn scavenged_id(prefix: &std::path::Path, name: &str) -> scr::Result<u64> {
    let hidden = layout::prefix_hidden_dir(prefix);
    let ids =
        layout::prefix_dataset_ids(prefix).map_err(|e| Error::io(&hidden, "read directory", e))?;
    for id in ids {
        let Ok(files) = std::fs::read_dir(layout::dataset_meta_dir(prefix, id)) else {
            continue;
        };
        for f in files.flatten() {
            if !f.file_name().to_string_lossy().starts_with("fmap.") {
                continue;
            }
            let named = scr::filemap::Filemap::read(&f.path())
                .ok()
                .is_some_and(|m| {
                    m.ranks()
                        .iter()
                        .any(|&r| m.dataset(id, r).is_some_and(|d| d.name() == Some(name)))
                });
            if named {
                return Ok(id);
            }
            break;
        }
    }
    Err(Error::invalid(
        &hidden,
        format!(
            "no dataset named {name} on the prefix (neither scavenged nor flushed); \
             `scr scavenge` copies one from the nodes' caches first"
        ),
    ))
}

/// `--add` of a dataset already on the prefix (flushed, say, and dropped from the index
/// since): every file of its rank2file map — plain or in container segments — is checked,
/// and it is indexed complete only when all are there. `Err(None)`: no such dataset.
fn add_flushed(prefix: &std::path::Path, name: &str) -> Result<ExitCode, Option<Error>> {
    let found = scr::prefix::inspect_flushed(prefix, name).map_err(Some)?;
    let Some(found) = found else {
        return Err(None);
    };
    for p in &found.problems {
        println!("{name}: {p}");
    }
    // its summary was written last when the flush completed: that is when it was flushed
    let flushed_at = std::fs::metadata(layout::summary_file(prefix, found.id))
        .and_then(|m| m.modified())
        .ok()
        .filter(|_| found.complete)
        .map(chrono::DateTime::<chrono::Local>::from);
    let mut older_current = None;
    scr::prefix::update_index(prefix, |idx| {
        idx.add(&found.desc, name, found.complete);
        if let Some(at) = flushed_at {
            idx.set_flushed(found.id, name, at);
        }
        older_current = idx
            .current()
            .filter(|&current| current != name)
            .filter(|&current| idx.id_of(current).is_some_and(|id| id < found.id))
            .map(str::to_string);
        Ok(())
    })
    .map_err(Some)?;
    if found.complete {
        println!("Added `{name}' to index (complete)");
        if let Some(current) = older_current {
            println!(
                "The current dataset is still the older `{current}': the next job restarts from it; \
                 `scr index --current {name}` makes it restart from `{name}'"
            );
        }
        Ok(ExitCode::SUCCESS)
    } else {
        println!("Added `{name}' to index as incomplete");
        Ok(ExitCode::from(1))
    }
}

fn build(prefix: &std::path::Path, id: u64) -> scr::Result<ExitCode> {
    let report = scr::scavenge::index_dataset(prefix, id, 1 << 20)?;
    for w in &report.warnings {
        eprintln!("{}: WARNING: {w}", crate::program_name());
    }
    if !report.rebuilt.is_empty() {
        println!(
            "Rebuilt ranks {:?} of `{}' from parity",
            report.rebuilt, report.name
        );
    }
    if let Some(why) = &report.kept_for_newer {
        println!("Not added `{}' to index: {why}", report.name);
        return Ok(ExitCode::from(1));
    }
    if report.complete {
        let current = scr::index::IndexFile::read(&scr::layout::index_file(prefix))
            .is_ok_and(|i| i.current() == Some(report.name.as_str()));
        println!(
            "Added `{}' to index (complete{})",
            report.name,
            if current { ", current" } else { "" }
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "Added `{}' to index as incomplete: ranks {:?} are missing",
            report.name, report.missing
        );
        Ok(ExitCode::from(1))
    }
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let params = scr::params::Params::load(&scr::params::Sources::from_process())?;
    let prefix = super::owners_prefix_dir(args.prefix, &params)?;
    if let Some(id) = args.build {
        return build(&prefix, id);
    }
    if let Some(name) = &args.add {
        return match scavenged_id(&prefix, name) {
            Ok(id) => build(&prefix, id),
            Err(not_scavenged) => add_flushed(&prefix, name).map_err(|e| match e {
                None => not_scavenged,
                Some(e) => e,
            }),
        };
    }
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
        IndexFile::update(&path, scr::io::PRIVATE_FILE, |index| {
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
                let id = index.id_of(name).ok_or_else(|| missing(name))?;
                // a restart starts there and goes only to older ones: from a copy that is no
                // whole checkpoint it would pass over every newer checkpoint, and start over
                // when no older one is whole
                let entry = index.entries().into_iter().find(|e| e.id == id);
                let failed = entry.as_ref().and_then(|e| e.failed.first().cloned());
                let whole = entry.is_some_and(|e| {
                    e.complete && index.dataset(id, name).is_none_or(|d| d.is_checkpoint())
                });
                if !whole || failed.is_some() {
                    let usable: Vec<String> = index
                        .usable_checkpoints()
                        .into_iter()
                        .map(|e| e.name)
                        .collect();
                    let why = match failed {
                        Some(at) => format!("marked failed at {at}: a fetch found it damaged"),
                        None => "incomplete, or an output".to_string(),
                    };
                    return Err(Error::invalid(
                        &path,
                        format!(
                            "{name} is not a checkpoint a restart can load ({why}): made current, \
                             the next restart would pass over every newer checkpoint; choose one \
                             of {}",
                            if usable.is_empty() {
                                "none: the index holds no whole checkpoint".to_string()
                            } else {
                                usable.join(", ")
                            }
                        ),
                    ));
                }
                index.set_current(name).map_err(|_| missing(name))?;
                println!("Set `{name}' as current restart dataset");
            }
            Ok(())
        })?;
        // the link says the same as the index: a restart follows the user's own link first
        if let Some(name) = &args.current
            && let Some(w) = scr::prefix::update_current_link(&prefix, name)?
        {
            eprintln!("{}: WARNING: {w}", crate::program_name());
        }
        return Ok(ExitCode::SUCCESS);
    }
    // no index (a directory no job flushed to, or not the prefix at all: `scr index` run
    // in the job's directory with SCR_PREFIX elsewhere) is said, not listed as empty, which
    // would look as if nothing was saved
    std::fs::metadata(&prefix).map_err(|e| Error::io(&prefix, "open the prefix directory", e))?;
    let index = match IndexFile::read(&path) {
        Err(e) if e.is_not_found() => {
            return Err(Error::invalid(
                &path,
                "does not exist: no checkpoint was flushed to this directory, or it is not \
                 the prefix (give it with -p, or set SCR_PREFIX)",
            ));
        }
        read => read?,
    };
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
