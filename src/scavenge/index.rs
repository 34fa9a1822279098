//! Indexing a scavenged dataset: checking what arrived from every node, rebuilding the
//! members of XOR and Reed–Solomon sets that did not, and publishing the dataset (SCR's
//! `scr_index --add`).

use super::{MAX_RANKS, destination, drained_dir_rel, fmap_path, waiting_rel};
use crate::dataset::Dataset;
use crate::erasure::{self, StripeCode};
use crate::filemap::Filemap;
use crate::meta::{FileType, Meta};
use crate::rank2file::{self, FileRecord, RankFiles};
use crate::view::HashView;
use crate::xor::{MemberFiles, XorHeader};
use crate::{Error, Result, layout};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What indexing a scavenged dataset found.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexReport {
    pub name: String,
    pub complete: bool,
    /// Ranks whose files were rebuilt from parity.
    pub rebuilt: Vec<u64>,
    /// Ranks still missing (when incomplete).
    pub missing: Vec<u64>,
    /// What the user should know of the publishing (an `scr.current` left alone).
    pub warnings: Vec<String>,
    /// Why a whole dataset was neither placed nor published: a file of it is a newer
    /// dataset's on the prefix (the dataset stays in cache).
    pub kept_for_newer: Option<String>,
}

/// Where a drained dataset's files are on the prefix: its user files wait in its
/// `drained` directory until it is whole; a dataset drained before files waited there (or
/// already moved to their places) has them at their places.
struct Drain<'a> {
    prefix: &'a Path,
    id: u64,
    waiting: bool,
}

impl Drain<'_> {
    /// Where file `f` (as its filemap names it, relative to the prefix) is now.
    fn path(&self, f: &str, meta: &Meta) -> PathBuf {
        if self.waiting {
            self.prefix.join(waiting_rel(self.id, f, meta))
        } else {
            self.prefix.join(f)
        }
    }

    /// Where the rebuild finds and recreates user files by their ORIG names.
    fn user_root(&self) -> PathBuf {
        if self.waiting {
            self.prefix.join(drained_dir_rel(self.id))
        } else {
            self.prefix.to_path_buf()
        }
    }

    /// A rank's scavenged files are all there: every expected file complete, of its size.
    fn rank_complete(&self, map: &Filemap, rank: u64) -> bool {
        let id = self.id;
        map.has_all_files(id, rank)
            && map.files(id, rank).iter().all(|f| {
                let meta = map.meta(id, rank, f).unwrap_or_default();
                std::fs::metadata(self.path(f, &meta)).is_ok_and(|m| Some(m.len()) == meta.size())
            })
    }

    /// Moves every user file of the whole dataset from where it waited to its place
    /// (replacing what an older dataset left there), then removes the `drained` directory.
    fn place(&self, maps: &BTreeMap<u64, Filemap>) -> Result<()> {
        if !self.waiting {
            return Ok(());
        }
        let beneath = crate::safe_fs::Beneath::open(self.prefix)?;
        // (a file several ranks list is moved once)
        let mut moved = std::collections::BTreeSet::new();
        for (rank, map) in maps {
            for f in map.files(self.id, *rank) {
                let meta = map.meta(self.id, *rank, f).unwrap_or_default();
                if matches!(meta.filetype(), Some(FileType::User) | None) && moved.insert(f) {
                    rank2file::check_relative(f).map_err(|e| Error::invalid(self.prefix, e))?;
                    let from = waiting_rel(self.id, f, &meta);
                    beneath.move_file(Path::new(&from), Path::new(f), crate::layout::DIR_MODE)?;
                }
            }
        }
        beneath
            .remove_tree(Path::new(&drained_dir_rel(self.id)))
            .map(drop)
    }

    /// Removes what the drain copied of a dataset that is not placed: its user files where
    /// they wait and the ranks' filemaps (the cache still holds it all).
    fn discard_waiting(&self, maps: &BTreeMap<u64, Filemap>) -> Result<()> {
        if self.waiting {
            let drained = self.prefix.join(drained_dir_rel(self.id));
            std::fs::remove_dir_all(&drained).map_err(|e| Error::io(&drained, "remove", e))?;
        }
        let beneath = crate::safe_fs::Beneath::open(self.prefix)?;
        for rank in maps.keys() {
            beneath.remove_path(&fmap_path(self.prefix, self.id, *rank))?;
        }
        Ok(())
    }
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
    let drain = Drain {
        prefix,
        id,
        waiting: prefix.join(drained_dir_rel(id)).is_dir(),
    };
    sweep_temporaries(&drain, &dir, &maps);
    let ranks = job_ranks(&dir, id, &maps)?;
    let mut missing: Vec<u64> = (0..ranks)
        .filter(|r| !maps.get(r).is_some_and(|m| drain.rank_complete(m, *r)))
        .collect();

    // rebuild the lost members of each parity set that lost no more than it survives
    let mut rebuilt = Vec::new();
    let job = DrainedJob {
        drain: &drain,
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
    // a whole dataset never goes over the files of a newer one already on the prefix (an
    // abandoned timeline's, a copy dropped from the index): what waited goes, the cache
    // keeps it
    if complete && let Some(newer) = newer_owner(prefix, id, &maps) {
        drain.discard_waiting(&maps)?;
        return Ok(IndexReport {
            name,
            complete: false,
            rebuilt,
            missing,
            warnings: Vec::new(),
            kept_for_newer: Some(newer),
        });
    }
    // an incomplete dataset's files stay where they wait: at their places they would mix
    // with an older dataset's files there
    if complete {
        drain.place(&maps)?;
    }
    let files = user_records(&maps, id);
    let mut desc = desc;
    if !complete {
        let (f, b) = files
            .values()
            .flatten()
            .fold((0, 0), |(f, b), r| (f + 1, b + r.size));
        desc.set_totals(f, b, false);
    }
    let warnings = crate::prefix::publish(prefix, id, &desc, ranks, &files, complete)?;
    Ok(IndexReport {
        name,
        complete,
        rebuilt,
        missing,
        warnings: warnings.into_iter().collect(),
        kept_for_newer: None,
    })
}

/// The first file of drained dataset `id` that a newer complete dataset indexed on the
/// prefix lists too, said with that dataset: placing `id` would replace its files.
fn newer_owner(prefix: &Path, id: u64, maps: &BTreeMap<u64, Filemap>) -> Option<String> {
    let index = crate::index::IndexFile::read(&layout::index_file(prefix)).ok()?;
    let mine: std::collections::BTreeSet<String> = user_records(maps, id)
        .into_values()
        .flatten()
        .map(|r| r.name)
        .collect();
    index
        .entries()
        .into_iter()
        .filter(|e| e.id > id && e.complete)
        .find_map(|e| {
            let theirs = crate::prefix::placing::plain_files(prefix, e.id)?;
            let file = mine.iter().find(|f| theirs.contains(*f))?;
            Some(format!(
                "its file {file} on the prefix is dataset {} ({})'s, a newer one",
                e.id, e.name
            ))
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
fn sweep_temporaries(drain: &Drain, dir: &Path, maps: &BTreeMap<u64, Filemap>) {
    let (prefix, id) = (drain.prefix, drain.id);
    // through directory handles: a link planted below the prefix leads nowhere
    let Ok(beneath) = crate::safe_fs::Beneath::open(prefix) else {
        return;
    };
    let mut dirs = std::collections::BTreeSet::<PathBuf>::new();
    dirs.extend(crate::safe_fs::below(prefix, dir).ok().map(|(_, rel)| rel));
    for (r, m) in maps {
        for f in m.files(id, *r) {
            if rank2file::check_relative(f).is_err() {
                continue;
            }
            // where the drain's copies wait, and where a flush the job's end cut short
            // left its own temporaries (the files' places)
            let meta = m.meta(id, *r, f).unwrap_or_default();
            let waiting = crate::safe_fs::below(prefix, &drain.path(f, &meta)).ok();
            let places = [waiting.map(|(_, rel)| rel), Some(PathBuf::from(f))];
            dirs.extend(
                places
                    .iter()
                    .flatten()
                    .filter_map(|rel| Some(rel.parent()?.to_path_buf())),
            );
        }
    }
    for d in &dirs {
        beneath.remove_temporaries(d);
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
    drain: &'a Drain<'a>,
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
        // a lost rank whose copy was cut short (its node's `scr copy` killed before its
        // filemap arrived) may have left whole files its filemap would have listed: in the
        // dataset's own drained directory they make way for the rebuild, as the survivors'
        // headers list them
        if self.drain.waiting {
            let surviving: Vec<Option<XorHeader>> = given
                .iter()
                .map(|f| {
                    f.as_ref()
                        .and_then(|f| XorHeader::read(f).ok().map(|(h, _)| h))
                })
                .collect();
            let beneath = crate::safe_fs::Beneath::open(self.drain.prefix)?;
            let user_root = self.drain.user_root();
            for &p in &lost {
                let Some(list) = erasure::member_files(&surviving, p, code.k) else {
                    continue;
                };
                for orig in list.files.iter().filter_map(|m| m.orig()) {
                    if rank2file::check_relative(orig).is_ok() {
                        beneath.remove_path(&user_root.join(orig))?;
                    }
                }
            }
        }
        let dirs = (self.drain.prefix, self.drain.user_root());
        let dirs = (dirs.0, dirs.1.as_path());
        erasure::rebuild_serial_in(code, &lost, &missing_paths, &given, dirs, self.buf_size)?;
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
        // through directory handles: never through a link planted below the prefix
        let beneath = crate::safe_fs::Beneath::open(self.drain.prefix)?;
        for &rank in lost {
            let Some(map) = maps.get(&rank) else {
                continue;
            };
            for f in map.files(self.id, rank) {
                let meta = map.meta(self.id, rank, f).unwrap_or_default();
                if rank2file::check_relative(f).is_ok() {
                    beneath.remove_path(&self.drain.path(f, &meta))?;
                }
            }
        }
        for path in parity_paths {
            beneath.remove_path(path)?;
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
        fmap.write(&fmap_path(self.drain.prefix, id, rank))?;
        Ok(fmap)
    }
}
