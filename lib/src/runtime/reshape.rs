//! Restarts read in place on the prefix, where any rank may route any file of the
//! checkpoint ([`PrefixRestart`]): one written by another number of ranks than this job
//! has, through the restart API (what SCR asks such applications to do without it), and
//! one of this job's size whose files the restart reads on the prefix (SCR_CACHE_BYPASS,
//! SCR_GLOBAL_RESTART, SCR_FETCH_BYPASS: SCR v3.1's "read with shared access").
//!
//! A checkpoint cached by a job of another size cannot be handed back rank by rank: each
//! rank's files belong to a rank this job may not have. So SCR_Init drains it first
//! (`super::shape_drain`). A checkpoint on the prefix written by another number of
//! ranks is then served in place: every rank learns the dataset's whole file list and
//! may route any file of it by its name, which comes back as the file on the prefix,
//! checked against the size and CRC32 the flush recorded the first time it is routed, and
//! through directory handles each time (a file inside a container is first copied out
//! into this rank's cache). A restart of this job's size read on the prefix serves a
//! rank's own files from its filemap, as any restart does, and another rank's the same
//! way, from the whole file list the prefix records, read when the rank first routes one.

use super::cache::CacheManager;
use super::job::Job;
use scr::meta::Meta;
use scr::rank2file::{self, FileRecord, RankFiles, TreeTask};
use scr::summary::Summary;
use scr::{Error, HashView, Result, container, io, layout, safe_fs};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A restart served from the prefix, any file of it to any rank.
pub(super) struct PrefixRestart {
    /// How many ranks wrote the checkpoint.
    pub(super) writers: u64,
    /// Every file of the dataset, in the order of the ranks that wrote them.
    pub(super) files: Vec<FileRecord>,
    /// The files this rank checked already (by their names relative to the prefix), and
    /// which file each was on the prefix (device and inode; none for a file copied out of
    /// its container).
    checked: HashMap<String, Option<(u64, u64)>>,
}

impl PrefixRestart {
    pub(super) fn new(map: RankFiles) -> PrefixRestart {
        PrefixRestart {
            writers: map.len() as u64,
            files: map.into_values().flatten().collect(),
            checked: HashMap::new(),
        }
    }

    /// Dataset `id` on the prefix, its whole file list as its summary (or its rank2file
    /// tree) records it: what a rank reads when it first routes a file of another rank.
    pub(super) fn read(prefix: &Path, id: u64) -> Result<PrefixRestart> {
        let summary = Summary::read(&layout::summary_file(prefix, id))?;
        let map = match summary.embedded_rank2file() {
            Some(map) => map,
            None => {
                let root = TreeTask::root(&layout::dataset_meta_rel(id));
                rank2file::read_tree(prefix, &prefix.join(&root.file))?
            }
        };
        Ok(PrefixRestart::new(map))
    }

    /// Every file of the dataset, as paths on the prefix.
    pub(super) fn paths(&self, prefix: &Path) -> Vec<PathBuf> {
        self.files.iter().map(|f| prefix.join(&f.name)).collect()
    }

    /// Where this rank reads `rel` (a file of the dataset by its path relative to the
    /// prefix, else by a file name only one of its files has): the file on the prefix, or,
    /// for a file inside a container, its copy in this rank's cache. Checked against the
    /// size and CRC32 recorded at the flush the first time; a file on the prefix is checked
    /// again through directory handles each time it is routed (the application opens it
    /// by the path returned: every directory on the way must still be the user's alone to
    /// change, and the file the one whose CRC32 was checked).
    pub(super) fn route(
        &mut self,
        prefix: &Path,
        cache: &mut CacheManager,
        id: u64,
        ranks: u64,
        rel: Option<&str>,
        name: &str,
    ) -> Result<PathBuf> {
        let base = Path::new(name).file_name().map(|n| n.to_string_lossy());
        let record = match self.files.iter().find(|f| Some(f.name.as_str()) == rel) {
            Some(f) => f,
            None => {
                let same_name: Vec<&FileRecord> = self
                    .files
                    .iter()
                    .filter(|f| {
                        base.is_some()
                            && Path::new(&f.name).file_name().map(|n| n.to_string_lossy()) == base
                    })
                    .collect();
                match same_name[..] {
                    [one] => one,
                    [] => {
                        return Err(Error::refused(format!(
                            "{name} is not part of the restart dataset"
                        )));
                    }
                    ref several => {
                        return Err(Error::refused(format!(
                            "{name} matches {} files of the restart dataset; route it by its \
                             path relative to the prefix",
                            several.len()
                        )));
                    }
                }
            }
        };
        let on_prefix = prefix.join(&record.name);
        let checked = self.checked.get(&record.name).copied();
        if record.segments.is_empty() {
            let identity = check_in_place(prefix, record, checked.flatten())?;
            self.checked.insert(record.name.clone(), Some(identity));
            Ok(on_prefix)
        } else {
            let dst = cache.dataset_dir(id).join(&record.name);
            if checked.is_none() {
                extract(prefix, cache, id, ranks, record, &dst)?;
                self.checked.insert(record.name.clone(), None);
            }
            Ok(dst)
        }
    }
}

/// Checks a file on the prefix against what the flush recorded, through directory handles
/// (every directory on the way and the file this user's, nobody else's to write): its size,
/// and its CRC32 unless `seen` names the file (device and inode) whose CRC32 was checked
/// already, which it must then be. Returns which file it is.
fn check_in_place(
    prefix: &Path,
    record: &FileRecord,
    seen: Option<(u64, u64)>,
) -> Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let path = prefix.join(&record.name);
    let beneath = safe_fs::Beneath::open(prefix)?;
    let file = record.open_in(&beneath).map_err(|e| e.blaming(prefix))?;
    let meta = file.metadata().map_err(|e| Error::io(&path, "stat", e))?;
    let identity = (meta.dev(), meta.ino());
    match seen {
        Some(seen) if seen != identity => Err(Error::corrupt(format!(
            "{} was replaced since this rank first routed it and checked its CRC32: the \
             file there now is not read (a later restart checks it anew)",
            path.display()
        ))),
        Some(_) => Ok(identity),
        None => {
            if let Some(want) = record.crc {
                let got = io::open_file_crc32(&path, &file)?;
                if got != want {
                    return Err(Error::corrupt(format!(
                        "CRC32 mismatch detected when restarting from {}: it has {}, SCR \
                         recorded {} (at its flush or adoption)",
                        path.display(),
                        scr::hash::format_crc32(got),
                        scr::hash::format_crc32(want)
                    )));
                }
            }
            Ok(identity)
        }
    }
}

/// Copies a file out of its containers into this rank's cache (recorded in its filemap
/// first) and checks it against what the flush recorded. The node's ranks share the
/// dataset's cache directory, and several may route the same file at once: each copies it
/// into a file of its own (below `.scr`, a name no application file can have) and renames
/// it into place once checked, so the path routed only ever holds a whole, checked file,
/// and a rank reading it is never cut short by another's copy.
fn extract(
    prefix: &Path,
    cache: &mut CacheManager,
    id: u64,
    ranks: u64,
    record: &FileRecord,
    dst: &Path,
) -> Result<()> {
    let base = Path::new(&record.name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = prefix
        .join(&record.name)
        .parent()
        .unwrap_or(prefix)
        .to_string_lossy()
        .into_owned();
    let mut meta = Meta::for_user_file(&base, ranks, &record.name, &dir, &base);
    let key = dst.to_string_lossy().into_owned();
    cache.record_file(id, &key, &meta)?;
    let dataset_dir = cache.dataset_dir(id);
    let rank = cache.rank();
    let part = dataset_dir
        .join(layout::HIDDEN)
        .join(format!("extracting.rank{rank}"));
    let part_key = part.to_string_lossy().into_owned();
    // recorded too, so that what a rank killed while copying leaves goes with the dataset
    cache.record_file(id, &part_key, &meta)?;
    let beneath = safe_fs::Beneath::open(prefix)?;
    let copied = container::read_file(&beneath, &record.segments, &part, 1 << 20)
        .map_err(|e| e.blaming(prefix));
    let (size, crc) = match copied {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    if size != record.size || record.crc.is_some_and(|want| want != crc) {
        let _ = std::fs::remove_file(&part);
        return Err(Error::corrupt(format!(
            "{} from its containers: {size} bytes and CRC32 {}, the flush recorded {} bytes{}",
            record.name,
            scr::hash::format_crc32(crc),
            record.size,
            record
                .crc
                .map(|c| format!(" and CRC32 {}", scr::hash::format_crc32(c)))
                .unwrap_or_default()
        )));
    }
    if let Some(parent) = dst.parent() {
        safe_fs::create_dirs_in(&dataset_dir, parent, scr::layout::DIR_MODE)?;
    }
    std::fs::rename(&part, dst).map_err(|e| Error::io(dst, "rename into place", e))?;
    cache.filemap.remove_file(id, rank, &part_key);
    meta.set_size(size);
    meta.set_crc32(crc);
    meta.set_complete(true);
    cache.filemap.set_meta(id, rank, &key, &meta);
    cache.write()
}

/// Checks that every file of a reshaped restart is on the prefix with its recorded size,
/// the files shared out over the ranks (a file inside a container is checked when it is
/// routed). This rank's outcome; the caller agrees on it.
pub(super) fn check_files(job: &Job, prefix: &Path, files: &[FileRecord]) -> Result<()> {
    let beneath = safe_fs::Beneath::open(prefix).map_err(|e| e.blaming(prefix))?;
    for record in files
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as u64 % job.ranks == job.rank)
        .map(|(_, r)| r)
        .filter(|r| r.segments.is_empty())
    {
        record.open_in(&beneath).map_err(|e| e.blaming(prefix))?;
    }
    Ok(())
}
