//! Publishing a dataset on the prefix: once its files are there, its rank2file
//! tree and summary under `.scr/scr.dataset.<id>/`, its index entry (COMPLETE, FLUSHED,
//! CURRENT), the `scr.current` link and the flush file's PFS location — in that order, so
//! the index never names a dataset whose description is not durable. The library's flush
//! and the post-run drain share it; deleting datasets is in `delete`.

use crate::dataset::Dataset;
use crate::flush::{FlushFile, Location};
use crate::index::IndexFile;
use crate::rank2file::{self, RankFiles};
use crate::summary::Summary;
use crate::view::HashView;
use crate::{Error, Result, io, layout};
use std::path::Path;

mod delete;
pub mod guard;
pub mod placing;
pub mod watch;
pub mod writing;
pub use delete::{
    Deletions, beyond_window, delete_dataset, delete_dataset_files, enforce_window, purge,
};

/// Changes the prefix's flush file under its lock.
pub fn update_flush_file(prefix: &Path, f: impl FnOnce(&mut FlushFile)) -> Result<()> {
    FlushFile::update(&layout::flush_file(prefix), io::PRIVATE_FILE, |flush| {
        f(flush);
        Ok(())
    })
}

/// Changes the prefix's index under its lock.
pub fn update_index(prefix: &Path, f: impl FnOnce(&mut IndexFile) -> Result<()>) -> Result<()> {
    // the user's alone: whoever can open a file can hold its lock
    IndexFile::update(&layout::index_file(prefix), io::PRIVATE_FILE, f)
}

/// Points `<prefix>/scr.current` at a dataset directory, replacing the link atomically.
/// The index's CURRENT is what SCR goes by; the link is for the user. Where something that
/// is not the user's link stands in its place (a directory, another user's link in a shared
/// prefix, which only its owner may replace there), it is left alone and the returned
/// warning says so.
pub fn update_current_link(prefix: &Path, name: &str) -> Result<Option<String>> {
    let link = layout::current_link(prefix);
    if let Ok(m) = std::fs::symlink_metadata(&link)
        && !m.file_type().is_symlink()
    {
        return Ok(Some(format!(
            "{} is not SCR's link (something of user id {} stands there): left alone; the \
             index names {name} current",
            link.display(),
            std::os::unix::fs::MetadataExt::uid(&m)
        )));
    }
    // a name nobody can have taken ahead (the prefix may be anyone's to write): the link is
    // created where none exists, and another name is tried when one does
    let mut tries = 0;
    let tmp = loop {
        let tmp = crate::temp_name::temporary_name(&link, "tmp");
        match std::os::unix::fs::symlink(name, &tmp) {
            Ok(()) => break tmp,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 64 => tries += 1,
            Err(e) => return Err(Error::io(&tmp, "create symlink", e)),
        }
    };
    if let Err(e) = std::fs::rename(&tmp, &link) {
        let _ = std::fs::remove_file(&tmp);
        return Ok(Some(format!(
            "{} could not be replaced ({e}; another user's link?): left alone; the index \
             names {name} current",
            link.display()
        )));
    }
    io::sync_dir(prefix)?;
    Ok(None)
}

/// The dataset `<prefix>/scr.current` names, when it is a link of the user's own (a user
/// may point it at an older checkpoint to restart from; a link someone else planted in a
/// shared prefix is not theirs to steer with). The name is the link target's last
/// component: `ckpt.2` and `/p/run/ckpt.2` name the same dataset.
pub fn read_current_link(prefix: &Path) -> Option<String> {
    let link = layout::current_link(prefix);
    let m = std::fs::symlink_metadata(&link).ok()?;
    let mine = std::os::unix::fs::MetadataExt::uid(&m) == rustix::process::geteuid().as_raw();
    if !m.file_type().is_symlink() || !mine {
        return None;
    }
    std::fs::read_link(&link)
        .ok()
        .and_then(|t| Some(t.file_name()?.to_string_lossy().into_owned()))
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
) -> Result<Option<String>> {
    crate::safe_fs::create_dirs_in(
        prefix,
        &layout::dataset_meta_dir(prefix, id),
        layout::DIR_MODE,
    )?;
    rank2file::write_tree(prefix, &layout::dataset_meta_rel(id), ranks, files)?;
    publish_written(prefix, id, desc, complete)
}

/// [`publish`] once the dataset's rank2file tree is written (the ranks of a flush write
/// its leaves themselves): the summary, the index entry, `scr.current` and the flush
/// file's PFS location, in that order; then older copies whose files it replaced leave the
/// index ([`placing::retire_replaced`]). Returns a warning for the user when the
/// `scr.current` link could not be set ([`update_current_link`]).
///
/// A complete checkpoint becomes current only when no newer checkpoint a restart could
/// load is indexed already: publishing an older one (the drain of a checkpoint the job
/// left in cache after a newer one was flushed, an output dataset) never moves CURRENT
/// backwards. Only `SCR_Current` and `scr index --current` choose an older one.
pub fn publish_written(
    prefix: &Path,
    id: u64,
    desc: &Dataset,
    complete: bool,
) -> Result<Option<String>> {
    let name = desc
        .name()
        .map(str::to_string)
        .unwrap_or_else(|| layout::dataset_dir_name(id));
    Summary::create(desc, complete).write_below(prefix, &layout::summary_rel(id))?;
    let mut becomes_current = false;
    update_index(prefix, |idx| {
        idx.add(desc, &name, complete);
        idx.set_flushed(id, &name, chrono::Local::now());
        becomes_current = complete
            && desc.is_checkpoint()
            && idx.newest_usable_checkpoint().is_some_and(|e| e.id == id);
        if becomes_current {
            idx.set_current(&name)
                .map_err(|what| Error::invalid(layout::index_file(prefix), what))?;
        }
        Ok(())
    })?;
    guard::mark_dataset_dir(prefix, &name, id);
    let warning = if becomes_current {
        update_current_link(prefix, &name)?
    } else {
        None
    };
    if complete {
        update_flush_file(prefix, |f| {
            f.unset_location(id, Location::Flushing);
            f.set_location(id, Location::Pfs);
        })?;
    }
    // older copies whose files this one replaced are no longer what their entries record
    if complete && let Err(e) = placing::retire_replaced(prefix, id) {
        let retire = format!(
            "{name} is published, but older copies whose files it replaced stay indexed: {e}"
        );
        return Ok(Some(match warning {
            Some(w) => format!("{w}; {retire}"),
            None => retire,
        }));
    }
    Ok(warning)
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
        let files = flushed_files(prefix, id, &summary)?;
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

/// The files of flushed dataset `id`, by rank: the map a 1.1-8 summary embeds, else the
/// rank2file tree under `.scr/scr.dataset.<id>/`.
fn flushed_files(prefix: &Path, id: u64, summary: &Summary) -> Result<RankFiles> {
    match summary.embedded_rank2file() {
        Some(map) => Ok(map),
        None => rank2file::read_tree(prefix, &layout::rank2file_root(prefix, id)),
    }
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

/// The checkpoint that becomes current when the current one, dataset `gone_id`, leaves the
/// index: its successor ([`IndexFile::successor_of_current`]), else the newest one a restart
/// could load (a marker the `scr.current` link can follow).
fn next_current(index: &IndexFile, gone_id: u64) -> Option<String> {
    index
        .successor_of_current(gone_id)
        .or_else(|| index.newest_usable_checkpoint())
        .map(|e| e.name)
}

/// Whether dataset `id` was flushed whole to `prefix` (its summary there says complete) and
/// `index` (the prefix's, None when it has none) lists it no more: dropped from the index
/// since (`scr index --drop`, `SCR_Drop`), its files left where they are.
pub fn dropped_from_index(prefix: &Path, index: Option<&IndexFile>, id: u64) -> bool {
    !index.is_some_and(|index| index.entries().iter().any(|e| e.id == id))
        && Summary::read(&layout::summary_file(prefix, id)).is_ok_and(|s| s.is_complete())
}

/// A dataset forgotten by the prefix's index.
#[derive(Debug)]
pub struct Dropped {
    pub id: u64,
    /// Why `scr.current` could not follow the index (the index is what a restart reads).
    pub link_warning: Option<String>,
}

/// Forgets dataset `name` in the prefix's index (SCR_Drop): its files stay. When it was
/// current, the next older complete checkpoint becomes current, in the index and in the
/// `scr.current` link. A name written again stands for its newest copy. None when the index
/// does not name it.
pub fn drop_dataset(prefix: &Path, name: &str) -> Result<Option<Dropped>> {
    drop_copy(prefix, name, None)
}

/// Forgets one copy in the prefix's index, dataset `id` named `name`, as [`drop_dataset`]
/// does: another copy of the same name (a checkpoint written again after a restart from an
/// older one) stays, and so do CURRENT and the `scr.current` link when they name that copy.
/// None when the index holds no such copy.
pub fn drop_entry(prefix: &Path, id: u64, name: &str) -> Result<Option<Dropped>> {
    drop_copy(prefix, name, Some(id))
}

/// Drops copy `id` of `name`, or the copy the name stands for (read under the index's lock).
fn drop_copy(prefix: &Path, name: &str, id: Option<u64>) -> Result<Option<Dropped>> {
    if !layout::index_file(prefix).exists() {
        return Ok(None);
    }
    let mut dropped = None;
    let mut was_current = false;
    let mut name_left = false;
    let mut successor = None;
    update_index(prefix, |idx| {
        let Some(id) = id.or_else(|| idx.id_of(name)) else {
            return Ok(());
        };
        was_current = idx.current() == Some(name) && idx.id_of(name) == Some(id);
        if !idx.remove_entry(id, name) {
            return Ok(());
        }
        dropped = Some(id);
        name_left = idx.id_of(name).is_some();
        if was_current && let Some(next) = next_current(idx, id) {
            idx.set_current(&next)
                .map_err(|what| Error::invalid(layout::index_file(prefix), what))?;
            successor = Some(next);
        }
        Ok(())
    })?;
    let Some(id) = dropped else {
        return Ok(None);
    };
    let link = layout::current_link(prefix);
    let mut link_warning = None;
    // a link naming a copy that stays (the name's other copy) is left as it is
    if read_current_link(prefix).as_deref() == Some(name) && (was_current || !name_left) {
        link_warning = match &successor {
            Some(next) => update_current_link(prefix, next)?,
            None => io::remove_durably(&link).err().map(|e| {
                format!("{e}; remove it yourself, as it names a dataset the index forgot")
            }),
        };
    }
    Ok(Some(Dropped { id, link_warning }))
}

/// SCR's prerun: a new job starts without the last job's flush and nodes files (but the
/// record of a flush a kill cut short, [`FlushFile::keep_only_cut_short`]), and with
/// no "finalize called" halt reason (which would end the relaunch loop after a failed first
/// run) and no immediate stop meant for the last job. Returns a warning when the halt file
/// could not be changed (it does not decode): a launch goes on with the conditions it has.
pub fn prerun(prefix: &Path) -> Result<Option<String>> {
    crate::safe_fs::create_dirs_in(
        prefix,
        &layout::prefix_hidden_dir(prefix),
        layout::HIDDEN_DIR_MODE,
    )?;
    // the flushes a kill cut short stay recorded, for the next SCR_Init or drain to sweep
    // what they left (whatever job id it has); the rest of the flush file goes
    let flush = layout::flush_file(prefix);
    let cut_short = FlushFile::read(&flush).is_ok_and(|f| {
        f.datasets()
            .iter()
            .any(|&d| f.has_location(d, Location::Flushing))
    });
    let kept = cut_short
        && matches!(
            FlushFile::update(&flush, io::PRIVATE_FILE, |f| Ok(f.keep_only_cut_short())),
            Ok(true)
        );
    // through `.scr` opened once: a `.scr` swapped for a link meanwhile is never reached
    let files = [layout::flush_file(prefix), layout::nodes_file(prefix)];
    for file in files.iter().skip(usize::from(kept)) {
        io::replace_in_held_dir(file, &[], 0o600, true)?;
    }
    let halt_path = layout::halt_file(prefix);
    if halt_path.exists() {
        let cleared = crate::halt::HaltFile::change(&halt_path, |h| {
            if h.exit_reason() == Some(crate::halt::reasons::FINALIZE_CALLED) {
                h.unset(crate::halt::EXIT_REASON);
            }
            h.unset(crate::halt::EXIT_NOW);
            Ok(())
        });
        if let Err(e) = cleared {
            return Ok(Some(format!(
                "the last job's halt conditions stay as they are: {e} (`scr halt --list -p {}` shows them)",
                prefix.display()
            )));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod drop_tests {
    use super::*;
    use crate::dataset::Origin;

    fn checkpoint(id: u64, name: &str) -> Dataset {
        Dataset::create(id, name, true, false, &Origin::default(), Some(id))
    }

    #[test]
    fn dropping_the_current_checkpoint_makes_the_next_older_one_current() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        crate::safe_fs::create_dirs_in(prefix, &layout::prefix_hidden_dir(prefix), 0o700).unwrap();
        update_index(prefix, |idx| {
            for id in 1..=3 {
                idx.add(
                    &checkpoint(id, &format!("ckpt.{id}")),
                    &format!("ckpt.{id}"),
                    true,
                );
            }
            idx.set_current("ckpt.3")
                .map_err(|w| Error::invalid(prefix, w))
        })
        .unwrap();
        update_current_link(prefix, "ckpt.3").unwrap();
        assert!(drop_dataset(prefix, "nothing").unwrap().is_none());
        assert_eq!(
            drop_dataset(prefix, "ckpt.3").unwrap().map(|d| d.id),
            Some(3)
        );
        let index = IndexFile::read(&layout::index_file(prefix)).unwrap();
        assert_eq!(index.current(), Some("ckpt.2"));
        assert_eq!(index.entries().len(), 2);
        assert_eq!(
            std::fs::read_link(layout::current_link(prefix)).unwrap(),
            Path::new("ckpt.2")
        );
        // dropping one that is not current changes nothing else
        assert_eq!(
            drop_dataset(prefix, "ckpt.1").unwrap().map(|d| d.id),
            Some(1)
        );
        let index = IndexFile::read(&layout::index_file(prefix)).unwrap();
        assert_eq!(index.current(), Some("ckpt.2"));
        assert_eq!(
            drop_dataset(prefix, "ckpt.2").unwrap().map(|d| d.id),
            Some(2)
        );
        assert!(layout::current_link(prefix).symlink_metadata().is_err());
    }

    #[test]
    fn a_current_link_by_hand_names_its_dataset_however_written() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        let publish_one =
            |d: &Dataset| publish(prefix, d.id().unwrap(), d, 1, &RankFiles::new(), true);
        for id in 1..=3 {
            publish_one(&checkpoint(id, &format!("ckpt.{id}"))).unwrap();
        }
        let link = layout::current_link(prefix);
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(prefix.join("ckpt.2"), &link).unwrap();
        assert_eq!(read_current_link(prefix).as_deref(), Some("ckpt.2"));
        let index = IndexFile::read(&layout::index_file(prefix)).unwrap();
        let first = |start: Option<&str>| index.restart_candidates(start)[0].name.clone();
        assert_eq!(first(read_current_link(prefix).as_deref()), "ckpt.2");
        // a link to a name the index does not know starts where the index says
        assert_eq!(first(Some("elsewhere")), "ckpt.3");
    }

    #[test]
    fn publishing_never_moves_current_backwards_nor_onto_output() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        let current = || {
            let index = IndexFile::read(&layout::index_file(prefix)).unwrap();
            let link = std::fs::read_link(layout::current_link(prefix)).unwrap();
            (index.current().map(str::to_string), link)
        };
        let publish_one =
            |d: &Dataset| publish(prefix, d.id().unwrap(), d, 1, &RankFiles::new(), true);
        publish_one(&checkpoint(3, "ckpt.3")).unwrap();
        assert_eq!(current(), (Some("ckpt.3".into()), "ckpt.3".into()));
        // an older checkpoint drained later is indexed complete, not current
        publish_one(&checkpoint(2, "ckpt.2")).unwrap();
        assert_eq!(current(), (Some("ckpt.3".into()), "ckpt.3".into()));
        let index = IndexFile::read(&layout::index_file(prefix)).unwrap();
        assert!(
            index
                .entries()
                .iter()
                .any(|e| e.name == "ckpt.2" && e.complete)
        );
        // output alone is never restarted from, however new
        let out = Dataset::create(4, "out.4", false, true, &Origin::default(), None);
        publish_one(&out).unwrap();
        assert_eq!(current(), (Some("ckpt.3".into()), "ckpt.3".into()));
        // a newer checkpoint does become current
        publish_one(&checkpoint(5, "ckpt.5")).unwrap();
        assert_eq!(current(), (Some("ckpt.5".into()), "ckpt.5".into()));
        // one that failed a fetch does not hold CURRENT back
        update_index(prefix, |idx| {
            idx.mark_failed(5, "ckpt.5", chrono::Local::now());
            Ok(())
        })
        .unwrap();
        publish_one(&checkpoint(4, "ckpt.4")).unwrap();
        assert_eq!(current(), (Some("ckpt.4".into()), "ckpt.4".into()));
    }
}
