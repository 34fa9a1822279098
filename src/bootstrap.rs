//! Bootstrapping SCR on a simulation that already has checkpoints written without it
//! (LLNL/scr issue 232): a directory `<prefix>/<name>` the application wrote itself is
//! adopted as checkpoint `name`, so SCR's restart API can serve it and SCR takes over from
//! there.
//!
//! What SCR needs of a checkpoint of its own is written for it: its files (every regular
//! file below the directory, by its path relative to the prefix, with its size and CRC32,
//! which a restart checks as it checks a flushed file's), recorded
//! as written by one rank (SCR cannot know which process wrote which file; a job of any
//! size then reads any of them, see the runtime's restart on another number of ranks), a
//! summary, an index entry (flushed, complete) and `scr.current`. Nothing of the
//! application's files is changed, and the adoption happens once: afterwards the name is
//! a checkpoint the index knows.

use crate::dataset::{Dataset, Origin};
use crate::error::{Error, Result};
use crate::rank2file::{self, FileRecord, RankFiles};
use crate::{layout, prefix, safe_fs};
use std::path::Path;

/// The most files an adopted checkpoint may hold.
pub const MAX_FILES: usize = 1_000_000;

/// What an adoption recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adopted {
    pub id: u64,
    pub files: u64,
    pub bytes: u64,
    /// What the user should know of the publishing (an `scr.current` left alone).
    pub warning: Option<String>,
}

/// Whether `<prefix>/<name>` is a directory SCR could adopt (a plain name, not SCR's own).
pub fn is_candidate(prefix: &Path, name: &str) -> bool {
    layout::check_component(name, "the checkpoint name").is_ok()
        && layout::refuse_reserved(Path::new(name), "the checkpoint").is_ok()
        && std::fs::symlink_metadata(prefix.join(name)).is_ok_and(|m| m.is_dir())
}

/// Adopts `<prefix>/<name>` as checkpoint `name` with dataset and checkpoint id `id`
/// (newer than any the prefix or the cache knows: the caller's choice). Fails, changing
/// nothing, when the directory holds no file or anything SCR would not read back (a link,
/// a special file, a file of another user's).
pub fn adopt(prefix: &Path, name: &str, id: u64, origin: &Origin) -> Result<Adopted> {
    layout::check_component(name, "the checkpoint name")?;
    layout::refuse_reserved(Path::new(name), "the checkpoint")?;
    let beneath = safe_fs::Beneath::open(prefix)?;
    let listed = beneath.list_files(Path::new(name), MAX_FILES)?;
    if listed.is_empty() {
        return Err(Error::invalid(
            prefix.join(name),
            "holds no file: there is no checkpoint to adopt",
        ));
    }
    let records = listed
        .iter()
        .map(|(rel, _)| record_of(&beneath, rel))
        .collect::<Result<Vec<FileRecord>>>()?;
    let bytes = records.iter().map(|r| r.size).sum();
    let files = records.len() as u64;
    let mut desc = Dataset::create(id, name, true, false, origin, Some(id));
    desc.set_totals(files, bytes, true);
    // the files are the application's: SCR_PREFIX_SIZE's window never deletes them
    desc.set_adopted();
    let dset_rel = layout::dataset_meta_rel(id);
    safe_fs::create_dirs_in(
        prefix,
        &layout::dataset_meta_dir(prefix, id),
        layout::DIR_MODE,
    )?;
    rank2file::write_tree(prefix, &dset_rel, 1, &RankFiles::from([(0, records)]))?;
    let warning = prefix::publish_written(prefix, id, &desc, true)?;
    Ok(Adopted {
        id,
        files,
        bytes,
        warning,
    })
}

/// What a restart checks an adopted file `rel` (relative to the prefix) against: its size
/// and CRC32, read through the handle that judged it (the user's regular file, through the
/// user's directories, none of which anyone else may write, access control lists included).
/// A file changed after its adoption is then refused, as a flushed one is.
fn record_of(beneath: &safe_fs::Beneath, rel: &Path) -> Result<FileRecord> {
    let path = beneath.root().join(rel);
    let file = beneath.open_file(rel)?;
    let size = file
        .metadata()
        .map_err(|e| Error::io(&path, "inspect", e))?
        .len();
    Ok(FileRecord {
        name: rel.to_string_lossy().into_owned(),
        size,
        crc: Some(crate::io::open_file_crc32(&path, &file)?),
        segments: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexFile;
    use crate::summary::Summary;
    use crate::view::HashView;

    #[test]
    fn a_directory_of_files_becomes_an_indexed_checkpoint_written_by_one_rank() {
        let prefix = tempfile::tempdir().unwrap();
        let p = prefix.path();
        std::fs::create_dir_all(p.join("step.100/parts")).unwrap();
        std::fs::write(p.join("step.100/root.dat"), b"root").unwrap();
        std::fs::write(p.join("step.100/parts/a"), vec![1u8; 1000]).unwrap();
        assert!(is_candidate(p, "step.100"));
        assert!(!is_candidate(p, "step.101"));
        assert!(!is_candidate(p, ".scr"));
        let adopted = adopt(p, "step.100", 7, &Origin::default()).unwrap();
        assert_eq!((adopted.id, adopted.files, adopted.bytes), (7, 2, 1004));
        let mut index = IndexFile::read(&layout::index_file(p)).unwrap();
        assert_eq!(index.id_of("step.100"), Some(7));
        assert_eq!(index.current(), Some("step.100"));
        // SCR_PREFIX_SIZE's window passes over it, however old: with two newer checkpoints
        // of SCR's own and a window of one, only the older of those goes
        for (id, name) in [(8, "ckpt.8"), (9, "ckpt.9")] {
            let d = Dataset::create(id, name, true, false, &Origin::default(), Some(id));
            index.add(&d, name, true);
            index.set_flushed(id, name, chrono::Local::now());
        }
        index.set_current("ckpt.9").unwrap();
        let gone: Vec<String> = crate::prefix::beyond_window(&index, 1)
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(gone, ["ckpt.8"]);
        assert!(
            Summary::read(&layout::summary_file(p, 7))
                .unwrap()
                .is_complete()
        );
        let map = rank2file::read_tree(p, &p.join(".scr/scr.dataset.7/rank2file.scr")).unwrap();
        let names: Vec<(&str, u64)> = map[&0].iter().map(|r| (r.name.as_str(), r.size)).collect();
        assert_eq!(
            names,
            [("step.100/parts/a", 1000), ("step.100/root.dat", 4)]
        );
        let crcs: Vec<Option<u32>> = map[&0].iter().map(|r| r.crc).collect();
        assert_eq!(
            crcs,
            [
                Some(crc32fast::hash(&[1u8; 1000])),
                Some(crc32fast::hash(b"root"))
            ]
        );
    }

    #[test]
    fn a_link_or_an_empty_directory_is_refused_and_nothing_is_recorded() {
        let prefix = tempfile::tempdir().unwrap();
        let p = prefix.path();
        std::fs::create_dir_all(p.join("empty")).unwrap();
        let e = adopt(p, "empty", 1, &Origin::default()).unwrap_err();
        assert!(e.to_string().contains("holds no file"), "{e}");
        std::fs::create_dir_all(p.join("linked")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", p.join("linked/passwd")).unwrap();
        let e = adopt(p, "linked", 1, &Origin::default()).unwrap_err();
        assert!(e.to_string().contains("link"), "{e}");
        // a file others may write would be refused by the restart that reads it: refused
        // when adopting already
        std::fs::create_dir_all(p.join("open")).unwrap();
        std::fs::write(p.join("open/data"), b"x").unwrap();
        std::fs::set_permissions(
            p.join("open/data"),
            std::os::unix::fs::PermissionsExt::from_mode(0o666),
        )
        .unwrap();
        let e = adopt(p, "open", 1, &Origin::default()).unwrap_err();
        assert!(e.to_string().contains("open/data"), "{e}");
        assert!(!layout::index_file(p).exists());
        assert!(adopt(p, "../x", 1, &Origin::default()).is_err());
    }
}
