//! Rank2file map: which rank wrote which files of a flushed dataset,
//! stored as a tree of hash files under `<prefix>/.scr/scr.dataset.<id>/` so that no file,
//! and so no reader, handles more than [`MAX_FILE_BYTES`].
//!
//! ```text
//! rank2file.scr            LEVEL 1  RANKS n  RANK <reader> {OFFSET o, FILE .scr/scr.dataset.<id>/rank2file.0.<w>.scr}
//! rank2file.<level>.<w>.scr LEVEL 0  RANKS k  RANK <r> FILE <name> {SIZE, CRC, SEG <k> {FILE, OFFSET, LENGTH}}
//! ```
//! File names under `FILE` are relative to the dataset directory on the prefix; `FILE` of a
//! tree entry is relative to the prefix. A tree file may hold several hashes back to back;
//! `OFFSET` says where the one to read starts.

use crate::error::{Error, Result};
use crate::hash::{Hash, format_crc32};
use crate::io;
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

/// Largest tree file written, and largest read in one step (1 MB, as SCR writes them).
pub const MAX_FILE_BYTES: usize = 1 << 20;

const LEVEL: &str = "LEVEL";
const RANKS: &str = "RANKS";
const RANK: &str = "RANK";
const FILE: &str = "FILE";
const OFFSET: &str = "OFFSET";
const SIZE: &str = "SIZE";
const CRC: &str = "CRC";
const SEG: &str = "SEG";
const LENGTH: &str = "LENGTH";
/// 1.1-8 summaries embed the map under this key.
pub const EMBEDDED: &str = "RANK2FILE";

/// A piece of a file stored inside a container (`ctr.<id>.scr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub container: String,
    pub offset: u64,
    pub length: u64,
}

/// One file a rank wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRecord {
    /// Path relative to the dataset directory.
    pub name: String,
    pub size: u64,
    pub crc: Option<u32>,
    /// Where the bytes are when containers are used (in order), else empty.
    pub segments: Vec<Segment>,
}

impl FileRecord {
    /// Opens the file on the prefix `prefix` holds (through its directory handles), refused
    /// as corrupt unless it has the size recorded ([`crate::safe_fs::Beneath::open_file_of_size`]).
    pub fn open_in(&self, prefix: &crate::safe_fs::Beneath) -> Result<std::fs::File> {
        prefix.open_file_of_size(Path::new(&self.name), self.size)
    }
}

/// The whole map: rank → files.
pub type RankFiles = BTreeMap<u64, Vec<FileRecord>>;

/// Rejects names that would leave the dataset directory (absolute, `..`, empty).
pub fn check_relative(name: &str) -> std::result::Result<(), String> {
    let path = Path::new(name);
    if name.is_empty() || path.is_absolute() {
        return Err(format!(
            "file name {name:?} must be a relative path inside the dataset"
        ));
    }
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!("file name {name:?} leaves the dataset directory"));
    }
    Ok(())
}

fn file_hash(rec: &FileRecord) -> Hash {
    let mut h = Hash::new();
    h.set_value(SIZE, rec.size);
    if let Some(crc) = rec.crc {
        h.set_value(CRC, format_crc32(crc));
    }
    for (k, seg) in rec.segments.iter().enumerate() {
        let s = h.set_kv(SEG, k);
        s.set_value(FILE, &seg.container);
        s.set_value(OFFSET, seg.offset);
        s.set_value(LENGTH, seg.length);
    }
    h
}

/// Builds the level-0 hash for some ranks.
pub fn leaf_hash<'a>(ranks: impl IntoIterator<Item = (&'a u64, &'a Vec<FileRecord>)>) -> Hash {
    let mut by_rank = Hash::new();
    let mut count = 0u64;
    for (rank, files) in ranks {
        count += 1;
        let rh = by_rank.child(rank.to_string());
        let fh = rh.child(FILE);
        for rec in files {
            fh.set(rec.name.as_str(), file_hash(rec));
        }
    }
    let mut h = Hash::new();
    h.set_value(RANKS, count);
    h.set_value(LEVEL, 0);
    h.set(RANK, by_rank);
    h
}

/// Parses the `RANK` section of a level-0 hash (or of an embedded 1.1-8 map) into `out`.
pub fn parse_leaf(h: &Hash, out: &mut RankFiles) -> std::result::Result<(), String> {
    for (rank, rh) in h.get(RANK).into_iter().flat_map(Hash::iter) {
        let rank: u64 = rank
            .parse()
            .map_err(|_| format!("rank {rank:?} is not a non-negative integer"))?;
        let files = out.entry(rank).or_default();
        for (name, fh) in rh.get(FILE).into_iter().flat_map(Hash::iter) {
            check_relative(name)?;
            let at = |e: crate::hash::ValueError| format!("rank {rank} file {name}: {e}");
            let size = fh
                .parsed::<u64>(SIZE)
                .map_err(at)?
                .ok_or_else(|| format!("rank {rank} file {name}: no SIZE"))?;
            let crc = fh.crc32(CRC).map_err(at)?;
            let mut segments = Vec::new();
            let mut seg_ids: Vec<(u64, &Hash)> = Vec::new();
            for (k, s) in fh.get(SEG).into_iter().flat_map(Hash::iter) {
                let k = k.parse().map_err(|_| {
                    format!("rank {rank} file {name}: segment {k:?} is not a number")
                })?;
                seg_ids.push((k, s));
            }
            seg_ids.sort_by_key(|(k, _)| *k);
            for (_, s) in seg_ids {
                let container = s
                    .first_value(FILE)
                    .ok_or_else(|| format!("rank {rank} file {name}: segment without FILE"))?;
                check_relative(container)?;
                segments.push(Segment {
                    container: container.to_string(),
                    offset: s.parsed(OFFSET).map_err(at)?.unwrap_or(0),
                    length: s.parsed(LENGTH).map_err(at)?.unwrap_or(0),
                });
            }
            files.push(FileRecord {
                name: name.to_string(),
                size,
                crc,
                segments,
            });
        }
    }
    Ok(())
}

/// The bytes of entries (ranks' file lists) a leaf written by [`write_leaf`] starts with:
/// leaves are cut by the entries' byte offsets in rank order, a leaf per this many bytes,
/// so a leaf of entries no larger than this stays under [`MAX_FILE_BYTES`] (a larger
/// entry gets a leaf of its own).
pub const LEAF_SHARE: usize = ENTRIES_BUDGET / 2;

/// The bytes of entries a tree file holds: [`MAX_FILE_BYTES`] less room for the file's
/// header and its own keys.
pub const ENTRIES_BUDGET: usize = MAX_FILE_BYTES - 64;

/// Writes the tree for `files` under `<prefix>/<dset_rel>/` (`dset_rel` is
/// `.scr/scr.dataset.<id>`), every file at most [`MAX_FILE_BYTES`]. Returns the root path.
pub fn write_tree(
    prefix: &Path,
    dset_rel: &str,
    total_ranks: u64,
    files: &RankFiles,
) -> Result<std::path::PathBuf> {
    // Level 0: cut the ranks into leaves that each pack under the bound.
    let mut entries: Vec<(u64, Hash)> = Vec::new(); // (reader rank, pointer hash) for the level above
    let mut pending = RankFiles::new();
    let mut pending_bytes = 0usize;
    let budget = ENTRIES_BUDGET;
    for (rank, recs) in files {
        let one = leaf_hash([(rank, recs)]).pack_size();
        if one > budget {
            return Err(Error::invalid(
                prefix.join(dset_rel),
                format!("rank {rank}'s file list alone exceeds {MAX_FILE_BYTES} bytes"),
            ));
        }
        if pending_bytes + one > budget {
            entries.extend(write_leaf(prefix, dset_rel, &std::mem::take(&mut pending))?);
            pending_bytes = 0;
        }
        pending.insert(*rank, recs.clone());
        pending_bytes += one;
    }
    entries.extend(write_leaf(prefix, dset_rel, &pending)?);
    write_upper(prefix, dset_rel, total_ranks, entries)
}

/// Writes one leaf of the tree (`rank2file.0.<first rank>.scr`) holding `files`; returns
/// the entry the level above keeps for it (first rank, pointer), none for no ranks.
pub fn write_leaf(prefix: &Path, dset_rel: &str, files: &RankFiles) -> Result<Option<(u64, Hash)>> {
    let Some(&first) = files.keys().next() else {
        return Ok(None);
    };
    let rel = format!("{dset_rel}/rank2file.0.{first}.scr");
    io::write_hash_file_below(prefix, Path::new(&rel), &leaf_hash(files))?;
    Ok(Some((first, pointer(&rel, 0))))
}

/// Writes the levels above the leaves (each group of pointers that packs under the bound
/// a file) up to the root, `rank2file.scr`, whose path it returns.
pub fn write_upper(
    prefix: &Path,
    dset_rel: &str,
    total_ranks: u64,
    mut entries: Vec<(u64, Hash)>,
) -> Result<std::path::PathBuf> {
    let budget = ENTRIES_BUDGET;
    let mut level = 0u64;
    loop {
        level += 1;
        let groups = group_by_size(&entries, budget);
        if groups.len() <= 1 {
            let rel = Path::new(dset_rel).join("rank2file.scr");
            io::write_hash_file_below(prefix, &rel, &pointer_hash(level, total_ranks, &entries))?;
            return Ok(prefix.join(rel));
        }
        let mut next = Vec::new();
        for group in groups {
            let first = group[0].0;
            let rel = format!("{dset_rel}/rank2file.{level}.{first}.scr");
            io::write_hash_file_below(
                prefix,
                Path::new(&rel),
                &pointer_hash(level, total_ranks, group),
            )?;
            next.push((first, pointer(&rel, 0)));
        }
        entries = next;
    }
}

/// A tree entry as bytes, to send to the rank that writes the level above.
pub fn pack_entry((first, pointer): &(u64, Hash)) -> Vec<u8> {
    let mut h = Hash::new();
    h.set(first.to_string(), pointer.clone());
    h.pack()
}

/// What [`pack_entry`] packed.
pub fn unpack_entry(bytes: &[u8]) -> std::result::Result<(u64, Hash), String> {
    let h = Hash::unpack(bytes).map_err(|e| format!("a rank2file tree entry: {e}"))?;
    let (first, pointer) = h.iter().next().ok_or("an empty rank2file tree entry")?;
    let first = first
        .parse()
        .map_err(|_| format!("rank2file tree entry for {first:?}, not a rank"))?;
    Ok((first, pointer.clone()))
}

fn pointer(rel: &str, offset: u64) -> Hash {
    let mut h = Hash::new();
    h.set_value(OFFSET, offset);
    h.set_value(FILE, rel);
    h
}

fn pointer_hash(level: u64, ranks: u64, entries: &[(u64, Hash)]) -> Hash {
    let mut h = Hash::new();
    h.set_value(RANKS, ranks);
    h.set_value(LEVEL, level);
    let r = h.child(RANK);
    for (reader, p) in entries {
        r.set(reader.to_string(), p.clone());
    }
    h
}

fn group_by_size(entries: &[(u64, Hash)], budget: usize) -> Vec<&[(u64, Hash)]> {
    let mut groups = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (reader, p)) in entries.iter().enumerate() {
        let one = reader.to_string().len() + 1 + p.pack_size();
        if bytes + one > budget && i > start {
            groups.push(&entries[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += one;
    }
    if start < entries.len() {
        groups.push(&entries[start..]);
    }
    groups
}

/// One tree file for a reader to read: where (relative to the prefix, with the offset of its
/// hash), and the level of the file that pointed to it (levels must descend).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeTask {
    pub file: String,
    pub offset: u64,
    pub parent_level: u64,
}

impl TreeTask {
    /// The root of a dataset's tree, `<dset_rel>/rank2file.scr`.
    pub fn root(dset_rel: &str) -> TreeTask {
        TreeTask {
            file: format!("{dset_rel}/rank2file.scr"),
            offset: 0,
            parent_level: u64::MAX,
        }
    }
}

/// What reading one tree file hands on: a lower file for the rank that reads it, or a
/// rank's own file list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    Read { reader: u64, task: TreeTask },
    Files { rank: u64, files: Vec<FileRecord> },
}

/// The deepest rank2file tree read: each level divides the ranks by up to a million
/// entries per file, so a handful of levels covers any job.
pub const MAX_LEVEL: u64 = 16;

/// One step of the scatter: read one tree file (at most
/// [`MAX_FILE_BYTES`]) and say what goes to whom. Rank 0 starts with the root; each file's
/// `RANK` entries name the rank that reads the next level, and a leaf's name the ranks whose
/// files it lists. A restart so never has one process read the whole map.
pub fn scatter_step(prefix: &Path, task: &TreeTask) -> Result<Vec<Delivery>> {
    let path = prefix.join(&task.file);
    check_relative(&task.file).map_err(|e| Error::invalid(&path, e))?;
    let h = read_at(&path, task.offset)?;
    let level: u64 = h
        .parsed(LEVEL)
        .map_err(|e| Error::invalid(&path, e.to_string()))?
        .unwrap_or(0);
    if level > MAX_LEVEL {
        return Err(Error::invalid(
            &path,
            format!("rank2file level {level} is deeper than any tree SCR writes ({MAX_LEVEL})"),
        ));
    }
    if level >= task.parent_level {
        return Err(Error::invalid(
            &path,
            format!(
                "rank2file level {level} does not descend from level {}",
                task.parent_level
            ),
        ));
    }
    if level == 0 {
        let mut map = RankFiles::new();
        parse_leaf(h.get(EMBEDDED).unwrap_or(&h), &mut map)
            .map_err(|e| Error::invalid(&path, e))?;
        return Ok(map
            .into_iter()
            .map(|(rank, files)| Delivery::Files { rank, files })
            .collect());
    }
    let mut out = Vec::new();
    for (reader, p) in h.get(RANK).into_iter().flat_map(Hash::iter) {
        let bad =
            |what: String| Error::invalid(&path, format!("entry for reader {reader}: {what}"));
        let reader: u64 = reader.parse().map_err(|_| bad("not a rank".into()))?;
        let file = p.first_value(FILE).ok_or_else(|| bad("no FILE".into()))?;
        check_relative(file).map_err(bad)?;
        let offset = p
            .parsed::<u64>(OFFSET)
            .map_err(|e| bad(e.to_string()))?
            .unwrap_or(0);
        out.push(Delivery::Read {
            reader,
            task: TreeTask {
                file: file.to_string(),
                offset,
                parent_level: level,
            },
        });
    }
    Ok(out)
}

/// The `RANKS` a tree's root records: how many ranks wrote the dataset.
pub fn tree_ranks(prefix: &Path, root: &TreeTask) -> Result<u64> {
    let path = prefix.join(&root.file);
    read_at(&path, root.offset)?
        .parsed(RANKS)
        .map_err(|e| Error::invalid(&path, e.to_string()))?
        .ok_or_else(|| Error::invalid(&path, "rank2file root without RANKS"))
}

/// Reads the whole tree in this process, step by step as the scatter would (for the
/// commands; the library scatters it across ranks).
pub fn read_tree(prefix: &Path, root: &Path) -> Result<RankFiles> {
    let rel = root
        .strip_prefix(prefix)
        .map_err(|_| Error::invalid(root, "rank2file root outside the prefix"))?;
    let mut out = RankFiles::new();
    let mut queue = vec![TreeTask {
        file: rel.to_string_lossy().into_owned(),
        offset: 0,
        parent_level: u64::MAX,
    }];
    let mut steps = 0usize;
    while let Some(task) = queue.pop() {
        steps += 1;
        if steps > 1_000_000 {
            return Err(Error::invalid(
                root,
                "rank2file tree has more than a million files; it loops or is corrupt",
            ));
        }
        for d in scatter_step(prefix, &task)? {
            match d {
                Delivery::Read { task, .. } => queue.push(task),
                Delivery::Files { rank, files } => out.entry(rank).or_default().extend(files),
            }
        }
    }
    Ok(out)
}

/// Reads the hash file that starts at `offset` in `path`, refusing more than the bound.
fn read_at(path: &Path, offset: u64) -> Result<Hash> {
    let mut f = crate::io::open_regular(path)?;
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| Error::io(path, "seek", e))?;
    let mut buf = Vec::new();
    f.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(path, "read", e))?;
    let (h, size) = Hash::from_file_bytes(&buf).map_err(|source| Error::Decode {
        path: path.to_path_buf(),
        source,
    })?;
    if size > MAX_FILE_BYTES {
        return Err(Error::invalid(
            path,
            format!("rank2file part of {size} bytes exceeds the {MAX_FILE_BYTES}-byte bound"),
        ));
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(ranks: u64, per_rank: usize) -> RankFiles {
        (0..ranks)
            .map(|r| {
                let recs = (0..per_rank)
                    .map(|i| FileRecord {
                        name: format!("ckpt.7/rank_{r}.{i}.ckpt"),
                        size: r * 1000 + i as u64,
                        crc: Some(r as u32),
                        segments: vec![],
                    })
                    .collect();
                (r, recs)
            })
            .collect()
    }

    #[test]
    fn metadata_is_never_written_through_a_hidden_directory_swapped_for_a_link() {
        // whoever may rename in the prefix put a link where `.scr` was, to a directory of
        // theirs or to another prefix's `.scr` of the user's
        use crate::view::HashView;
        let dir = tempfile::tempdir().unwrap();
        let (prefix, elsewhere) = (dir.path().join("prefix"), dir.path().join("elsewhere"));
        std::fs::create_dir(&prefix).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, prefix.join(crate::layout::HIDDEN)).unwrap();
        let rel = crate::layout::dataset_meta_rel(7);
        assert!(write_tree(&prefix, &rel, 2, &files(2, 1)).is_err());
        let desc = crate::dataset::Dataset::create(
            7,
            "ckpt.7",
            true,
            false,
            &crate::dataset::Origin::default(),
            Some(7),
        );
        let summary = crate::summary::Summary::create(&desc, true);
        assert!(
            summary
                .write_below(&prefix, &crate::layout::summary_rel(7))
                .is_err()
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn a_tree_deeper_than_scr_writes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = Hash::new();
        h.set_value(LEVEL, 40u64);
        let p = dir.path().join("rank2file.scr");
        crate::io::write_hash_file(&p, &h).unwrap();
        let task = TreeTask {
            file: "rank2file.scr".into(),
            offset: 0,
            parent_level: u64::MAX,
        };
        let e = scatter_step(dir.path(), &task).unwrap_err().to_string();
        assert!(e.contains("deeper than any tree SCR writes"), "{e}");
    }

    /// Leaves written apart (as the ranks of a flush write them), one of them holding ranks
    /// around another's, entries sent through their packed form: the tree reads back whole.
    #[test]
    fn leaves_written_apart_and_joined_above_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let rel = ".scr/scr.dataset.5";
        std::fs::create_dir_all(dir.path().join(rel)).unwrap();
        let map = files(4, 2);
        let leaf =
            |ranks: &[u64]| -> RankFiles { ranks.iter().map(|r| (*r, map[r].clone())).collect() };
        let mut entries = Vec::new();
        for ranks in [&[0u64, 1, 3][..], &[2]] {
            let entry = write_leaf(dir.path(), rel, &leaf(ranks)).unwrap().unwrap();
            entries.push(unpack_entry(&pack_entry(&entry)).unwrap());
        }
        assert_eq!(
            write_leaf(dir.path(), rel, &RankFiles::new()).unwrap(),
            None
        );
        entries.sort_by_key(|(first, _)| *first);
        let root = write_upper(dir.path(), rel, 4, entries).unwrap();
        assert_eq!(read_tree(dir.path(), &root).unwrap(), map);
        assert!(unpack_entry(b"junk").is_err());
    }

    #[test]
    fn small_tree_matches_golden_shape() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".scr/scr.dataset.3")).unwrap();
        let map = files(4, 1);
        let root = write_tree(dir.path(), ".scr/scr.dataset.3", 4, &map).unwrap();
        let rh = io::read_hash_file(&root).unwrap();
        assert_eq!(rh.first_value("LEVEL"), Some("1"));
        assert_eq!(
            rh.get_path(&[&"RANK", &0]).unwrap().first_value("FILE"),
            Some(".scr/scr.dataset.3/rank2file.0.0.scr")
        );
        assert_eq!(read_tree(dir.path(), &root).unwrap(), map);
    }

    #[test]
    fn ten_thousand_ranks_respect_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".scr/scr.dataset.1")).unwrap();
        let map = files(10_000, 3);
        let root = write_tree(dir.path(), ".scr/scr.dataset.1", 10_000, &map).unwrap();
        let mut n = 0;
        for e in std::fs::read_dir(dir.path().join(".scr/scr.dataset.1")).unwrap() {
            let len = e.unwrap().metadata().unwrap().len() as usize;
            assert!(len <= MAX_FILE_BYTES, "{len}");
            n += 1;
        }
        assert!(n > 2, "the map needed several leaves");
        assert_eq!(read_tree(dir.path(), &root).unwrap(), map);
    }

    #[test]
    fn a_scatter_over_ten_thousand_simulated_ranks_reads_at_most_a_megabyte_per_step() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".scr/scr.dataset.1")).unwrap();
        let ranks = 10_000u64;
        let map = files(ranks, 3);
        write_tree(dir.path(), ".scr/scr.dataset.1", ranks, &map).unwrap();
        let root = TreeTask::root(".scr/scr.dataset.1");
        assert_eq!(tree_ranks(dir.path(), &root).unwrap(), ranks);
        // each simulated rank's tasks for the coming step, and what it ends up with
        let mut tasks: BTreeMap<u64, Vec<TreeTask>> = BTreeMap::from([(0, vec![root])]);
        let mut got: BTreeMap<u64, Vec<FileRecord>> = BTreeMap::new();
        let mut steps = 0;
        while !tasks.is_empty() {
            steps += 1;
            let mut next: BTreeMap<u64, Vec<TreeTask>> = BTreeMap::new();
            for (rank, mine) in std::mem::take(&mut tasks) {
                let mut read = 0u64;
                for task in mine {
                    read += std::fs::metadata(dir.path().join(&task.file))
                        .unwrap()
                        .len();
                    for d in scatter_step(dir.path(), &task).unwrap() {
                        match d {
                            Delivery::Read { reader, task } => {
                                next.entry(reader).or_default().push(task)
                            }
                            Delivery::Files { rank, files } => {
                                assert!(
                                    got.insert(rank, files).is_none(),
                                    "rank {rank} served twice"
                                )
                            }
                        }
                    }
                }
                assert!(
                    read <= MAX_FILE_BYTES as u64,
                    "rank {rank} read {read} bytes in step {steps}"
                );
            }
            tasks = next;
        }
        assert!(steps >= 2, "a root and its leaves at least");
        assert_eq!(got, map, "every rank got exactly its own files");
    }

    #[test]
    fn escaping_names_are_refused() {
        for bad in ["../etc/passwd", "/etc/passwd", "a/../../b", ""] {
            assert!(check_relative(bad).is_err(), "{bad}");
        }
        assert!(check_relative("ckpt.3/rank_0.ckpt").is_ok());
        let mut h = Hash::new();
        h.set_path(&[&"RANK", &0, &"FILE", &"../x"])
            .set_value("SIZE", 1);
        assert!(
            parse_leaf(&h, &mut RankFiles::new())
                .unwrap_err()
                .contains("leaves")
        );
    }

    #[test]
    fn segments_round_trip() {
        let mut map = files(1, 1);
        map.get_mut(&0).unwrap()[0].segments = vec![
            Segment {
                container: "ctr.1.scr".into(),
                offset: 10,
                length: 5,
            },
            Segment {
                container: "ctr.2.scr".into(),
                offset: 0,
                length: 7,
            },
        ];
        let mut back = RankFiles::new();
        parse_leaf(&leaf_hash(&map), &mut back).unwrap();
        assert_eq!(back, map);
    }
}
