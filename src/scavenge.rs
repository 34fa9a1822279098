//! The post-run drain without MPI:
//! [`copy_node`] copies what one node's cache holds of a dataset to the prefix (SCR's
//! `scr_copy`), and [`index_dataset`] checks what arrived from all nodes, rebuilds lost
//! members from XOR or Reed–Solomon parity, and publishes the dataset (SCR's
//! `scr_index --add`).
//!
//! A scavenged dataset on the prefix: user files at `<prefix>/<ORIG>`, redundancy files
//! and one filemap per rank (`fmap.<rank>.scr`, file names relative to the prefix) in
//! `<prefix>/.scr/scr.dataset.<id>/`.

use crate::dataset::Dataset;
use crate::erasure::{self, StripeCode};
use crate::filemap::{Filemap, MasterFilemap};
use crate::meta::{FileType, Meta};
use crate::rank2file::{self, FileRecord, RankFiles};
use crate::view::HashView;
use crate::xor::{MemberFiles, XorHeader};
use crate::{Error, Result, io, layout};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The filemap tag on a partner's copy (the owner's node).
pub const PARTNER_TAG: &str = "PARTNER";

/// The per-rank filemap a scavenge leaves for the indexer.
pub fn fmap_path(prefix: &Path, id: u64, rank: u64) -> PathBuf {
    layout::dataset_meta_dir(prefix, id).join(format!("fmap.{rank}.scr"))
}

/// What one node's copy did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CopyReport {
    /// Owner nodes whose partner copies this node holds.
    pub partners: Vec<String>,
    pub ranks: Vec<u64>,
    pub files: u64,
    pub bytes: u64,
    /// Problems, each naming the file; the copy goes on with the other ranks.
    pub errors: Vec<String>,
}

/// The most ranks a scavenged dataset may record: counts come from files anyone with
/// access to the prefix could have written, and the index lists every missing rank.
pub const MAX_RANKS: u64 = 1 << 24;

/// Options of [`copy_node`].
#[derive(Clone, Debug)]
pub struct CopyOptions {
    pub buf_size: usize,
    /// Also copy partners' copies of these failed owner nodes (second scavenge round).
    pub failed_owners: Vec<String>,
}

/// Where a cached file goes on the prefix, relative to it: user files by their ORIG name
/// (refused if it would escape the prefix), redundancy files into the dataset's `.scr`.
fn destination(meta: &Meta, id: u64) -> std::result::Result<String, String> {
    match meta.filetype() {
        Some(FileType::User) | None => {
            let orig = meta
                .orig()
                .ok_or("a user file's meta data has no ORIG name")?;
            rank2file::check_relative(orig)?;
            Ok(orig.to_string())
        }
        Some(_) => {
            let name = meta
                .filename()
                .ok_or("a redundancy file has no FILE name")?;
            if name.is_empty() || name.contains('/') || name == ".." {
                return Err(format!("redundancy file name {name:?} is not a plain name"));
            }
            Ok(format!("{}/{name}", layout::dataset_meta_rel(id)))
        }
    }
}

/// Bytes copied so far of what one node's copy will write in all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyProgress {
    pub done: u64,
    pub total: u64,
}

/// Copies everything the node whose control directory is `cntl_dir` holds of dataset
/// `id` to `prefix`: each rank's own files, and partners' copies of `failed_owners`.
/// Each copied file is checked against the size and CRC its meta records, and each rank's
/// filemap is written to the prefix once its files are there. `progress` hears of every
/// piece written, against the total the filemaps announce.
pub fn copy_node(
    cntl_dir: &Path,
    id: u64,
    prefix: &Path,
    opts: &CopyOptions,
    progress: &mut dyn FnMut(CopyProgress),
) -> Result<CopyReport> {
    if std::fs::symlink_metadata(cntl_dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        // a node the job never ran on (a spare): nothing to copy
        return Ok(CopyReport::default());
    }
    crate::safe_fs::check_owned_dir(cntl_dir)?;
    let master = MasterFilemap::read(&layout::master_filemap(cntl_dir))?;
    // the job's user: a filemap may name only that user's files (a drain run with more
    // privileges must not copy, say, /etc/shadow because a filemap lists it)
    let owner = std::fs::metadata(cntl_dir)
        .map_err(|e| Error::io(cntl_dir, "inspect", e))?
        .uid();
    let mut report = CopyReport::default();
    crate::safe_fs::create_dirs_in(prefix, &layout::dataset_meta_dir(prefix, id), 0o755)?;
    let (to_copy, total) = ranks_to_copy(&master, id, opts, &mut report);
    let mut state = CopyProgress {
        total,
        ..Default::default()
    };
    progress(state);
    let node = NodeCopy {
        id,
        prefix,
        owner,
        buf_size: opts.buf_size,
    };
    for (map, ranks) in &to_copy {
        for &rank in ranks {
            let mut fmap = Filemap::new();
            let mut entry = map.entry_hash(id, rank).cloned().unwrap_or_default();
            entry.unset("FILE");
            entry.unset(PARTNER_TAG);
            fmap.set_entry(id, rank, entry);
            let mut ok = true;
            for f in map.files(id, rank) {
                let meta = map.meta(id, rank, f).unwrap_or_default();
                let mut piece_done = |n: u64| {
                    state.done += n;
                    progress(state);
                };
                match node.copy(f, &meta, &mut report, &mut piece_done) {
                    Some((rel, copied, copied_ok)) => {
                        ok &= copied_ok;
                        fmap.add_file(id, rank, &rel);
                        fmap.set_meta(id, rank, &rel, &copied);
                    }
                    None => ok = false,
                }
            }
            fmap.write(&fmap_path(prefix, id, rank))?;
            if ok {
                report.ranks.push(rank);
            }
        }
    }
    Ok(report)
}

/// Which ranks' files a node copies, decided before any byte moves so the total is known:
/// every rank of its filemaps, but a partner's copy only when its owner's node failed
/// (otherwise the owner copies its own files). Returns the filemaps with their ranks,
/// and the bytes to copy; partners seen and unreadable filemaps go into `report`.
fn ranks_to_copy(
    master: &MasterFilemap,
    id: u64,
    opts: &CopyOptions,
    report: &mut CopyReport,
) -> (Vec<(Filemap, Vec<u64>)>, u64) {
    let mut to_copy = Vec::new();
    let mut total = 0;
    for path in master.filemaps() {
        let map = match Filemap::read(Path::new(path)) {
            Ok(m) => m,
            Err(e) => {
                report.errors.push(e.to_string());
                continue;
            }
        };
        let mut ranks = Vec::new();
        for rank in map.ranks_by_dataset(id) {
            if let Some(owner) = map.tag(id, rank, PARTNER_TAG) {
                if !report.partners.iter().any(|p| p == owner) {
                    report.partners.push(owner.to_string());
                }
                if !opts.failed_owners.iter().any(|f| f == owner) {
                    continue; // its owner copies its own files
                }
            }
            total += map
                .files(id, rank)
                .iter()
                .filter_map(|f| map.meta(id, rank, f)?.size())
                .sum::<u64>();
            ranks.push(rank);
        }
        to_copy.push((map, ranks));
    }
    (to_copy, total)
}

/// One node's copy of a dataset to the prefix.
struct NodeCopy<'a> {
    id: u64,
    prefix: &'a Path,
    /// The job's user: only that user's regular files are copied.
    owner: u32,
    buf_size: usize,
}

impl NodeCopy<'_> {
    /// Copies cached file `f` to its place under the prefix, checked against `meta`.
    /// Returns its name there, its meta data (incomplete when the copy failed or came out
    /// other than recorded) and whether it was copied as recorded, or none when it is not
    /// copied at all (a name that would leave the dataset, not the user's regular file);
    /// problems go into `report`.
    fn copy(
        &self,
        f: &str,
        meta: &Meta,
        report: &mut CopyReport,
        piece_done: &mut dyn FnMut(u64),
    ) -> Option<(String, Meta, bool)> {
        let rel = match destination(meta, self.id) {
            Ok(r) => r,
            Err(e) => {
                report.errors.push(format!("{f}: {e}"));
                return None;
            }
        };
        match std::fs::symlink_metadata(f) {
            Ok(m) if m.is_file() && m.uid() == self.owner => {}
            Ok(_) => {
                report.errors.push(format!(
                    "{f}: not a regular file of the job's user (id {}); not copied",
                    self.owner
                ));
                return None;
            }
            Err(e) => {
                report
                    .errors
                    .push(Error::io(Path::new(f), "inspect", e).to_string());
                return None;
            }
        }
        let mut copied = meta.clone();
        let mut ok = true;
        let dst = self.prefix.join(&rel);
        let result = io::copy_file_with_crc(
            Path::new(f),
            &dst,
            Some(self.prefix),
            self.buf_size,
            piece_done,
        );
        match result {
            Ok((size, crc)) => {
                if let Err(e) = meta.verify(size, meta.crc32().map(|_| crc)) {
                    // the damaged copy goes: a rebuild recreates the file, and it never
                    // writes into one
                    let _ = std::fs::remove_file(&dst);
                    report.errors.push(format!("{f}: {e}"));
                    copied.set_complete(false);
                    ok = false;
                } else {
                    copied.set_crc32(crc);
                    report.files += 1;
                    report.bytes += size;
                }
            }
            Err(e) => {
                report.errors.push(e.to_string());
                copied.set_complete(false);
                ok = false;
            }
        }
        Some((rel, copied, ok))
    }
}

/// What indexing a scavenged dataset found.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexReport {
    pub name: String,
    pub complete: bool,
    /// Ranks whose files were rebuilt from parity.
    pub rebuilt: Vec<u64>,
    /// Ranks still missing (when incomplete).
    pub missing: Vec<u64>,
}

/// A rank's scavenged files are all there: every expected file complete, of its size.
fn rank_complete(map: &Filemap, id: u64, rank: u64, prefix: &Path) -> bool {
    map.has_all_files(id, rank)
        && map.files(id, rank).iter().all(|f| {
            let meta = map.meta(id, rank, f).unwrap_or_default();
            std::fs::metadata(prefix.join(f)).is_ok_and(|m| Some(m.len()) == meta.size())
        })
}

/// Checks, rebuilds and publishes dataset `id` scavenged to `prefix`.
pub fn index_dataset(prefix: &Path, id: u64, buf_size: usize) -> Result<IndexReport> {
    let Drained {
        dir,
        mut maps,
        parity,
        desc,
    } = read_drained(prefix, id)?;
    let name = desc
        .name()
        .map(str::to_string)
        .unwrap_or_else(|| layout::dataset_dir_name(id));
    sweep_temporaries(prefix, id, &dir, &maps);
    let ranks = job_ranks(&dir, id, &maps)?;
    let mut missing: Vec<u64> = (0..ranks)
        .filter(|r| {
            !maps
                .get(r)
                .is_some_and(|m| rank_complete(m, id, *r, prefix))
        })
        .collect();

    // rebuild the lost members of each parity set that lost no more than it survives
    let mut rebuilt = Vec::new();
    let job = DrainedJob {
        prefix,
        dir: &dir,
        id,
        ranks,
        desc: &desc,
        buf_size,
    };
    for set in parity_sets(&parity) {
        for (rank, fmap) in job.rebuild_set(&set, &missing, &maps)? {
            maps.insert(rank, fmap);
            rebuilt.push(rank);
        }
        missing.retain(|r| !rebuilt.contains(r));
    }
    rebuilt.sort_unstable();

    let complete = missing.is_empty() && ranks > 0;
    let files = user_records(&maps, id);
    let mut desc = desc;
    if !complete {
        let (f, b) = files
            .values()
            .flatten()
            .fold((0, 0), |(f, b), r| (f + 1, b + r.size));
        desc.set_totals(f, b, false);
    }
    crate::prefix::publish(prefix, id, &desc, ranks, &files, complete)?;
    Ok(IndexReport {
        name,
        complete,
        rebuilt,
        missing,
    })
}

/// What the drain left of a dataset in its metadata directory: each rank's filemap
/// (`fmap.<rank>.scr`), the parity files, and the dataset as the filemaps describe it.
struct Drained {
    dir: PathBuf,
    maps: BTreeMap<u64, Filemap>,
    parity: Vec<PathBuf>,
    desc: Dataset,
}

fn read_drained(prefix: &Path, id: u64) -> Result<Drained> {
    let dir = layout::dataset_meta_dir(prefix, id);
    let mut maps: BTreeMap<u64, Filemap> = BTreeMap::new();
    let mut parity: Vec<PathBuf> = Vec::new();
    let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, "read directory", e))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(rank) = name
            .strip_prefix("fmap.")
            .and_then(|r| r.strip_suffix(".scr"))
            .and_then(|r| r.parse::<u64>().ok())
        {
            maps.insert(rank, Filemap::read(&e.path())?);
        } else if name.starts_with("xor.") || name.starts_with("rs.") {
            parity.push(e.path());
        }
    }
    let desc: Dataset = maps
        .iter()
        .find_map(|(r, m)| m.dataset(id, *r))
        .ok_or_else(|| {
            Error::invalid(
                &dir,
                "no rank's filemap describes the dataset; nothing was scavenged",
            )
        })?;
    Ok(Drained {
        dir,
        maps,
        parity,
        desc,
    })
}

/// Every copy of the drain has ended: what a killed one left half-written goes.
fn sweep_temporaries(prefix: &Path, id: u64, dir: &Path, maps: &BTreeMap<u64, Filemap>) {
    let mut dirs: std::collections::BTreeSet<PathBuf> = [dir.to_path_buf()].into();
    for (r, m) in maps {
        for f in m.files(id, *r) {
            if rank2file::check_relative(f).is_ok()
                && let Some(parent) = prefix.join(f).parent()
            {
                dirs.insert(parent.to_path_buf());
            }
        }
    }
    for d in &dirs {
        io::remove_temporaries(d);
    }
}

/// How many ranks the job had, as the files' metadata (else the filemaps) say; bounded.
fn job_ranks(dir: &Path, id: u64, maps: &BTreeMap<u64, Filemap>) -> Result<u64> {
    let ranks = maps
        .iter()
        .flat_map(|(r, m)| {
            m.files(id, *r)
                .into_iter()
                .filter_map(move |f| m.meta(id, *r, f)?.ranks())
        })
        .max()
        .or_else(|| maps.keys().max().map(|r| r + 1))
        .unwrap_or(0);
    if ranks > MAX_RANKS {
        return Err(Error::invalid(
            dir,
            format!(
                "the rank filemaps say the job had {ranks} ranks; more than {MAX_RANKS} is not a job SCR ran"
            ),
        ));
    }
    Ok(ranks)
}

/// One parity set as the drained parity files describe it: its ranks, a member's header,
/// and each member's parity file where it arrived.
struct ParitySet {
    group: Vec<u64>,
    header: XorHeader,
    files: Vec<Option<PathBuf>>,
}

fn parity_sets(parity: &[PathBuf]) -> Vec<ParitySet> {
    let mut sets: Vec<ParitySet> = Vec::new();
    for p in parity {
        let Ok((h, _)) = XorHeader::read(p) else {
            continue;
        };
        let Some(pos) = h.group.iter().position(|&r| r == h.current.rank) else {
            continue;
        };
        let i = match sets.iter().position(|s| s.group == h.group) {
            Some(i) => i,
            None => {
                let n = h.group.len();
                sets.push(ParitySet {
                    group: h.group.clone(),
                    header: h.clone(),
                    files: vec![None; n],
                });
                sets.len() - 1
            }
        };
        sets[i].files[pos] = Some(p.clone());
    }
    sets
}

/// Each rank's user files as the filemaps record them, for the rank2file map.
fn user_records(maps: &BTreeMap<u64, Filemap>, id: u64) -> RankFiles {
    let mut files = RankFiles::new();
    for (rank, map) in maps {
        let records = map
            .files(id, *rank)
            .into_iter()
            .filter_map(|f| {
                let meta = map.meta(id, *rank, f)?;
                matches!(meta.filetype(), Some(FileType::User) | None).then(|| FileRecord {
                    name: f.to_string(),
                    size: meta.size().unwrap_or(0),
                    crc: meta.crc32(),
                    segments: vec![],
                })
            })
            .collect();
        files.insert(*rank, records);
    }
    files
}

/// The dataset being indexed, as a rebuild needs it.
struct DrainedJob<'a> {
    prefix: &'a Path,
    dir: &'a Path,
    id: u64,
    ranks: u64,
    desc: &'a Dataset,
    buf_size: usize,
}

impl DrainedJob<'_> {
    /// Rebuilds the members of `set` that are `missing`, when no more are lost than its code
    /// rebuilds and every survivor's parity file arrived; returns the rebuilt ranks with
    /// their new filemaps (written beside the others).
    fn rebuild_set(
        &self,
        set: &ParitySet,
        missing: &[u64],
        maps: &BTreeMap<u64, Filemap>,
    ) -> Result<Vec<(u64, Filemap)>> {
        let ParitySet {
            group,
            header,
            files,
        } = set;
        let lost: Vec<usize> = group
            .iter()
            .enumerate()
            .filter(|(_, r)| missing.contains(r))
            .map(|(i, _)| i)
            .collect();
        if lost.is_empty() {
            return Ok(Vec::new());
        }
        let n = group.len();
        let code = match header.failures {
            Some(k) => StripeCode::reed_solomon(n, k as usize),
            None => StripeCode::xor(n),
        };
        if lost.len() > code.k {
            return Ok(Vec::new()); // they stay missing
        }
        // the lost members' parity files are named like the survivors'
        let Some(template) = files.iter().flatten().next() else {
            return Ok(Vec::new());
        };
        let template_name = template
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let (gid, _, _) = layout::parse_xor_file_name(&template_name)
            .or_else(|| layout::parse_rs_file_name(&template_name))
            .ok_or_else(|| {
                Error::invalid(
                    template,
                    "parity file name is not <xor|rs>.<set>_<i>_of_<n>.scr",
                )
            })?;
        let missing_paths: Vec<PathBuf> = lost
            .iter()
            .map(|&p| self.dir.join(code.file_name(gid, p as u64)))
            .collect();
        let given: Vec<Option<PathBuf>> = (0..n)
            .map(|p| {
                if lost.contains(&p) {
                    None
                } else {
                    files[p].clone()
                }
            })
            .collect();
        if given.iter().flatten().count() < n - lost.len() {
            return Ok(Vec::new()); // a survivor's parity file did not arrive either
        }
        let lost_ranks: Vec<u64> = lost.iter().map(|&p| group[p]).collect();
        self.clear_lost(&lost_ranks, &missing_paths, maps)?;
        let (prefix, buf_size) = (self.prefix, self.buf_size);
        erasure::rebuild_serial(code, &lost, &missing_paths, &given, prefix, buf_size)?;
        // the rebuilt ranks' filemaps, from the file lists in the parity headers
        let headers: Vec<Option<XorHeader>> = (0..n)
            .map(|p| {
                let path = match lost.iter().position(|&l| l == p) {
                    Some(i) => Some(&missing_paths[i]),
                    None => files[p].as_ref(),
                };
                path.and_then(|f| XorHeader::read(f).ok().map(|(h, _)| h))
            })
            .collect();
        lost.iter()
            .zip(&missing_paths)
            .map(|(&p, parity_path)| {
                let rank = group[p];
                let list = erasure::member_files(&headers, p, code.k).ok_or_else(|| {
                    Error::invalid(self.dir, format!("no header records rank {rank}'s files"))
                })?;
                Ok((rank, self.rebuilt_filemap(rank, &list, code, parity_path)?))
            })
            .collect()
    }

    /// What this drain copied of the lost ranks (a damaged or partial copy, as their fmaps
    /// list it), and any parity file under the names to rebuild, make way: a rebuild
    /// recreates files and never writes into one.
    fn clear_lost(
        &self,
        lost: &[u64],
        parity_paths: &[PathBuf],
        maps: &BTreeMap<u64, Filemap>,
    ) -> Result<()> {
        for &rank in lost {
            let listed = maps
                .get(&rank)
                .map(|m| m.files(self.id, rank))
                .unwrap_or_default();
            for f in listed {
                let path = self.prefix.join(f);
                if rank2file::check_relative(f).is_ok()
                    && crate::safe_fs::check_no_links_below(self.prefix, &path).is_ok()
                {
                    io::remove_durably(&path)?;
                }
            }
        }
        for path in parity_paths {
            io::remove_durably(path)?;
        }
        Ok(())
    }

    /// The filemap of a rebuilt rank: its files as its set's headers list them, and its
    /// rebuilt parity file; written as `fmap.<rank>.scr`.
    fn rebuilt_filemap(
        &self,
        rank: u64,
        list: &MemberFiles,
        code: StripeCode,
        parity_path: &Path,
    ) -> Result<Filemap> {
        let id = self.id;
        let mut fmap = Filemap::new();
        fmap.set_dataset(id, rank, self.desc);
        for meta in &list.files {
            let rel = destination(meta, id).map_err(|e| Error::invalid(self.dir, e))?;
            fmap.add_file(id, rank, &rel);
            fmap.set_meta(id, rank, &rel, meta);
        }
        let pname = parity_path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let mut pmeta = Meta::for_parity_file(
            &pname,
            code.file_type(),
            std::fs::metadata(parity_path).map_or(0, |m| m.len()),
            self.ranks,
        );
        pmeta.set_complete(true);
        let prel = format!("{}/{pname}", layout::dataset_meta_rel(id));
        fmap.add_file(id, rank, &prel);
        fmap.set_meta(id, rank, &prel, &pmeta);
        fmap.set_expected_files(id, rank, list.files.len() as u64 + 1);
        fmap.write(&fmap_path(self.prefix, id, rank))?;
        Ok(fmap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scavenged_rank_count_beyond_any_job_is_refused_before_anything_is_allocated() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        std::fs::create_dir_all(layout::dataset_meta_dir(prefix, 1)).unwrap();
        std::fs::create_dir_all(prefix.join("ckpt.1")).unwrap();
        std::fs::write(prefix.join("ckpt.1/rank_0"), b"data").unwrap();
        let mut meta =
            Meta::for_user_file("rank_0", 1_000_000_000_000, "ckpt.1/rank_0", "/p", "rank_0");
        meta.set_size(4);
        meta.set_complete(true);
        let mut map = Filemap::new();
        map.add_file(1, 0, "ckpt.1/rank_0");
        map.set_meta(1, 0, "ckpt.1/rank_0", &meta);
        map.set_expected_files(1, 0, 1);
        map.set_dataset(1, 0, &Dataset::new());
        map.write(&fmap_path(prefix, 1, 0)).unwrap();
        let started = std::time::Instant::now();
        let e = index_dataset(prefix, 1, 4096).unwrap_err().to_string();
        assert!(
            e.contains("1000000000000 ranks") && e.contains("more than"),
            "{e}"
        );
        assert!(started.elapsed().as_secs() < 2);
    }
}
