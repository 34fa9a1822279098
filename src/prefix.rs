//! Publishing a dataset on the prefix (manual §9): once its files are there, its rank2file
//! tree and summary under `.scr/scr.dataset.<id>/`, its index entry (COMPLETE, FLUSHED,
//! CURRENT), the `scr.current` link and the flush file's PFS location — in that order, so
//! the index never names a dataset whose description is not durable. The library's flush
//! and the post-run drain share it.

use crate::dataset::Dataset;
use crate::flush::{FlushFile, Location};
use crate::index::IndexFile;
use crate::rank2file::{self, RankFiles};
use crate::summary::Summary;
use crate::view::HashView;
use crate::{Error, Result, io, layout};
use std::path::Path;

/// Changes the prefix's flush file under its lock.
pub fn update_flush_file(prefix: &Path, f: impl FnOnce(&mut FlushFile)) -> Result<()> {
    FlushFile::update(&layout::flush_file(prefix), io::PRIVATE_FILE, |flush| {
        f(flush);
        Ok(())
    })
}

/// Changes the prefix's index under its lock.
pub fn update_index(prefix: &Path, f: impl FnOnce(&mut IndexFile) -> Result<()>) -> Result<()> {
    IndexFile::update(&layout::index_file(prefix), 0o644, f)
}

/// Points `<prefix>/scr.current` at a dataset directory, replacing the link atomically.
pub fn update_current_link(prefix: &Path, name: &str) -> Result<()> {
    let link = layout::current_link(prefix);
    let tmp = prefix.join(format!(".scr.current.tmp.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(name, &tmp).map_err(|e| Error::io(&tmp, "create symlink", e))?;
    std::fs::rename(&tmp, &link).map_err(|e| Error::io(&link, "replace symlink", e))?;
    io::sync_dir(prefix)
}

/// Records dataset `id`, whose files (`files`, by rank, names relative to the prefix) are
/// on the prefix and durable: rank2file tree, summary, index entry, and — when complete —
/// CURRENT, `scr.current` and the PFS location. An incomplete dataset is indexed as such
/// (so a restart skips it) and its flush location is left alone.
pub fn publish(
    prefix: &Path,
    id: u64,
    desc: &Dataset,
    ranks: u64,
    files: &RankFiles,
    complete: bool,
) -> Result<()> {
    let name = desc
        .name()
        .map(str::to_string)
        .unwrap_or_else(|| layout::dataset_dir_name(id));
    io::create_dirs(&layout::dataset_meta_dir(prefix, id), 0o755)?;
    rank2file::write_tree(prefix, &layout::dataset_meta_rel(id), ranks, files)?;
    Summary::create(desc, complete).write(&layout::summary_file(prefix, id))?;
    update_index(prefix, |idx| {
        idx.add(desc, &name, complete);
        idx.set_flushed(id, &name, chrono::Local::now());
        if complete {
            idx.set_current(&name)
                .map_err(|what| Error::invalid(layout::index_file(prefix), what))?;
        }
        Ok(())
    })?;
    if complete {
        update_current_link(prefix, &name)?;
        update_flush_file(prefix, |f| {
            f.unset_location(id, Location::Flushing);
            f.set_location(id, Location::Pfs);
        })?;
    }
    Ok(())
}

/// A dataset already on the prefix, as its summary and rank2file map describe it.
pub struct FlushedDataset {
    pub id: u64,
    pub desc: Dataset,
    /// The summary says complete and every file (or container segment) is there.
    pub complete: bool,
    /// What is missing or short, each naming the file.
    pub problems: Vec<String>,
}

/// Finds the flushed dataset named `name` (by the summaries under `.scr/`) and checks that
/// every file its rank2file map lists is on the prefix with its size — plain files, or the
/// container segments holding them.
pub fn inspect_flushed(prefix: &Path, name: &str) -> Result<Option<FlushedDataset>> {
    for id in layout::prefix_dataset_ids(prefix).unwrap_or_default() {
        let Ok(summary) = Summary::read(&layout::summary_file(prefix, id)) else {
            continue;
        };
        let Some(desc) = summary.dataset().filter(|d| d.name() == Some(name)) else {
            continue;
        };
        let files = match summary.embedded_rank2file() {
            Some(map) => map,
            None => rank2file::read_tree(prefix, &layout::rank2file_root(prefix, id))?,
        };
        let problems = missing_files(prefix, &files);
        return Ok(Some(FlushedDataset {
            id,
            desc,
            complete: summary.is_complete() && problems.is_empty(),
            problems,
        }));
    }
    Ok(None)
}

fn missing_files(prefix: &Path, files: &RankFiles) -> Vec<String> {
    let mut problems = Vec::new();
    let len_of = |rel: &str| std::fs::metadata(prefix.join(rel)).map(|m| m.len());
    for (rank, recs) in files {
        for rec in recs {
            if rec.segments.is_empty() {
                match len_of(&rec.name) {
                    Ok(len) if len == rec.size => {}
                    Ok(len) => problems.push(format!(
                        "rank {rank}: {} has {len} bytes, the map records {}",
                        rec.name, rec.size
                    )),
                    Err(e) => problems.push(format!("rank {rank}: {}: {e}", rec.name)),
                }
                continue;
            }
            let stored: u64 = rec.segments.iter().map(|s| s.length).sum();
            if stored != rec.size {
                problems.push(format!(
                    "rank {rank}: {}: its segments hold {stored} bytes, the map records {}",
                    rec.name, rec.size
                ));
            }
            for seg in rec.segments.iter().filter(|s| s.length > 0) {
                match len_of(&seg.container) {
                    Ok(len) if len >= seg.offset + seg.length => {}
                    Ok(len) => problems.push(format!(
                        "rank {rank}: {}: container {} has {len} bytes, a segment ends at {}",
                        rec.name,
                        seg.container,
                        seg.offset + seg.length
                    )),
                    Err(e) => problems.push(format!(
                        "rank {rank}: {}: container {}: {e}",
                        rec.name, seg.container
                    )),
                }
            }
        }
    }
    problems
}
