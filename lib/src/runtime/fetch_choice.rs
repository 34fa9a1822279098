//! Which checkpoint a fetch tries and what its failure means: rank 0's choice of the next
//! candidate on the prefix, the file lists scattered down the rank2file tree, and the
//! verdict the ranks agree on when a fetch fails.

use super::fetch::{Fetch, Told};
use super::messages::{FetchChoice, TreeDelivery};
use crate::comm;
use scr::dataset::Dataset;
use scr::index::IndexFile;
use scr::prefix::update_index;
use scr::rank2file::{self, Delivery, FileRecord, RankFiles, TreeTask};
use scr::summary::Summary;
use scr::{Error, ErrorKind, HashView, Result, layout};
use std::collections::BTreeMap;
use std::path::Path;

/// What a failed fetch says about the checkpoint, from least to most: the ranks' verdicts
/// are agreed by their maximum.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Verdict {
    /// Nothing: this rank did its part (another failed), or this job's own nodes failed (a
    /// cache or control directory full or failing): the checkpoint may be read in place.
    HereOnly = 0,
    /// The prefix's files could not be read by this job, for reasons that say nothing of
    /// their data: a file refused (others could have written it), a permission, an I/O
    /// error. The checkpoint is passed over for this restart and left as it is.
    Unreadable = 1,
    /// The data is proven broken (a CRC32 or size that does not match, a listed file gone,
    /// a file list that does not decode): marked FAILED for good.
    Broken = 2,
}

impl Verdict {
    pub(super) fn of(error: &Error, prefix: &Path) -> Verdict {
        match error.kind() {
            ErrorKind::Corrupt => Verdict::Broken,
            ErrorKind::Refused => Verdict::Unreadable,
            ErrorKind::Io if error.is_io_in(prefix) => Verdict::Unreadable,
            _ => Verdict::HereOnly,
        }
    }

    pub(super) fn from_max(x: u64) -> Verdict {
        match x {
            0 => Verdict::HereOnly,
            1 => Verdict::Unreadable,
            _ => Verdict::Broken,
        }
    }
}

/// Most files one rank reads while the rank2file tree is scattered.
const MAX_TREE_READS: usize = 1024;

impl Fetch<'_> {
    /// The rank2file tree scattered level by level: rank 0 reads the root and sends each
    /// reader its part, readers read theirs (at most 1 MB each step) and pass on, until
    /// every rank holds its own file list. Collective; `root` is rank 0's. A tree written
    /// by SCR has each reader read a file or two per level; a rank sent more than
    /// [`MAX_TREE_READS`] files in all is reading a crafted graph, not a tree, and stops.
    pub(super) fn scatter_rank2file(&self, root: Option<TreeTask>) -> Result<Vec<FileRecord>> {
        let (job, prefix) = (self.job, self.prefix.path());
        let mut tasks: Vec<TreeTask> = root.into_iter().collect();
        let mut mine: Option<Vec<FileRecord>> = None;
        // what went wrong, as what it says of the dataset (a tree file gone or undecodable is
        // the dataset broken; one this job may not read is not)
        let mut problem: Option<Error> = None;
        let mut reads = 0usize;
        loop {
            let mut outgoing: BTreeMap<u64, TreeDelivery> = BTreeMap::new();
            reads += tasks.len();
            if reads > MAX_TREE_READS {
                problem.get_or_insert(Error::corrupt(format!(
                    "the rank2file map sends rank {} more than {MAX_TREE_READS} files to read; \
                     it is not the tree SCR writes",
                    job.rank
                )));
                tasks.clear();
            }
            for task in tasks.drain(..) {
                let deliveries = match rank2file::scatter_step(prefix, &task) {
                    Ok(d) => d,
                    Err(e) => {
                        problem = Some(e.blaming(prefix));
                        continue;
                    }
                };
                for d in deliveries {
                    let to = match &d {
                        Delivery::Read { reader, .. } => *reader,
                        Delivery::Files { rank, .. } => *rank,
                    };
                    if to >= job.ranks {
                        problem = Some(Error::corrupt(format!(
                            "{}: names rank {to}, this job has {}",
                            task.file, job.ranks
                        )));
                        continue;
                    }
                    let msg = outgoing.entry(to).or_default();
                    match d {
                        Delivery::Read { task, .. } => msg.reads.push(task),
                        Delivery::Files { rank, files } => msg.files = Some((rank, files)),
                    }
                }
            }
            if job.sum(outgoing.len() as u64) == 0 {
                break;
            }
            let packed = outgoing
                .into_iter()
                .map(|(r, m)| (r, m.to_bytes()))
                .collect();
            for bytes in comm::exchange(job.world(), &packed) {
                match TreeDelivery::from_bytes(&bytes) {
                    Ok(delivery) => {
                        tasks.extend(delivery.reads);
                        if let Some((_, files)) = delivery.files {
                            mine = Some(files);
                        }
                    }
                    Err(e) => problem = Some(Error::corrupt(format!("a rank2file message: {e}"))),
                }
            }
        }
        if mine.is_none() && problem.is_none() {
            problem = Some(Error::corrupt(format!(
                "the rank2file map lists nothing for rank {}",
                job.rank
            )));
        }
        let mine = match problem {
            Some(p) => Err(p),
            None => Ok(mine.unwrap_or_default()),
        };
        job.agree(mine, "another rank could not read its file list")
    }

    /// Rank 0: the next dataset to try (below `below` when given, above `above`), with its
    /// descriptor and where its file lists are (in the choice, or the rank2file tree's root
    /// to scatter).
    pub(super) fn next_candidate(
        &mut self,
        below: Option<u64>,
        above: u64,
        passed_over: &[String],
    ) -> Option<(FetchChoice, Option<TreeTask>)> {
        let prefix = self.prefix.path();
        let ranks = self.job.ranks;
        let index = match IndexFile::read(&layout::index_file(prefix)) {
            Ok(index) => index,
            Err(e) => {
                // an index that is there but does not read leaves nothing to fetch: said, as
                // the user's checkpoints on the prefix would else be passed over in silence
                if !e.is_not_found() && self.told.insert(Told::UnreadableIndex) {
                    say!(
                        "SCR: WARNING: {e}: no checkpoint on the prefix is offered for the \
                         restart. Its datasets are as they were: `scr index -p {}` says what \
                         is wrong; move the file aside and `scr index --add NAME` lists each \
                         checkpoint again",
                        prefix.display()
                    );
                }
                return None;
            }
        };
        let link = scr::prefix::read_current_link(prefix);
        // checkpoints of another size this program did not say it re-partitions: passed over,
        // said once in the job (the fallback to older checkpoints comes back here)
        let mut other_size: Option<(String, u64)> = None;
        let told = &mut *self.told;
        let mut said = |other_size: &Option<(String, u64)>| {
            if let Some((name, writers)) = other_size
                && told.insert(Told::NotOffered(name.clone()))
            {
                say!(
                    "SCR: {name} was written by {writers} rank(s) and this job has {ranks}: not \
                     offered (nor any older checkpoint of another size), as a program that reads \
                     its own rank's files would restart from part of it; a program that \
                     re-partitions a checkpoint through the restart file list \
                     (SCR_Restart_file_count, SCR_Restart_file_name) says so with SCR_RESHAPE=1, \
                     and one that reads the prefix's files itself (the v3.1 guide's restart \
                     without SCR) sets SCR_FLUSH_ON_RESTART=1 SCR_FETCH=0. Nothing is marked \
                     failed: a job of {writers} ranks restarts it, unless \
                     this job first writes a checkpoint of the same name, which replaces it"
                );
            }
        };
        for entry in index.restart_candidates(link.as_deref()) {
            if below.is_some_and(|b| entry.id >= b)
                || entry.id <= above
                || passed_over.contains(&entry.name)
            {
                continue;
            }
            // what a fetch needs of the checkpoint, or (Err) how many ranks wrote one this
            // program is not offered
            type Loaded =
                std::result::Result<(Dataset, u64, Option<RankFiles>, Option<TreeTask>), u64>;
            let loaded = (|| -> Result<Loaded> {
                let summary = Summary::read(&layout::summary_file(prefix, entry.id))?;
                if !summary.is_complete() {
                    return Err(Error::corrupt("summary says incomplete"));
                }
                let (embedded, root, written_by) = match summary.embedded_rank2file() {
                    Some(map) => {
                        let n = map.len() as u64;
                        (Some(map), None, n)
                    }
                    None => {
                        let root = TreeTask::root(&layout::dataset_meta_rel(entry.id));
                        let n = rank2file::tree_ranks(prefix, &root)?;
                        (None, Some(root), n)
                    }
                };
                let desc = summary
                    .dataset()
                    .or_else(|| index.dataset(entry.id, &entry.name))
                    .unwrap_or_default();
                if written_by == ranks {
                    if embedded
                        .as_ref()
                        .is_some_and(|m| m.keys().any(|&r| r >= ranks))
                    {
                        return Err(Error::corrupt("its map names ranks this job does not have"));
                    }
                    return Ok(Ok((desc, written_by, embedded, root)));
                }
                // a checkpoint SCR adopted (written without it) records one writer only
                // because SCR cannot know which process wrote what: the program reads it by
                // its own names, whatever its size
                if !self.settings.fetch.any_size && !desc.is_adopted() {
                    return Ok(Err(written_by));
                }
                // written by another number of ranks: every rank gets the whole list
                let map = match (embedded, root) {
                    (Some(map), _) => map,
                    (None, Some(root)) => rank2file::read_tree(prefix, &prefix.join(&root.file))?,
                    (None, None) => RankFiles::new(),
                };
                if map.len() as u64 != written_by || map.keys().any(|&r| r >= written_by) {
                    return Err(Error::corrupt(format!(
                        "its map lists the files of {} ranks, not the {written_by} that wrote it",
                        map.len()
                    )));
                }
                Ok(Ok((desc, written_by, Some(map), None)))
            })()
            .map_err(|e| e.blaming(prefix));
            match loaded {
                Ok(Err(writers)) => {
                    other_size.get_or_insert((entry.name, writers));
                }
                Ok(Ok((dataset, writers, embedded, root))) => {
                    said(&other_size);
                    let choice = FetchChoice {
                        id: entry.id,
                        name: entry.name,
                        dataset,
                        writers,
                        embedded,
                    };
                    return Some((choice, root));
                }
                // only a dataset proven broken is marked failed (see `Verdict`)
                Err(e) if Verdict::of(&e, prefix) == Verdict::Broken => {
                    say!("SCR: cannot fetch {}: {e}", entry.name);
                    let _ = update_index(prefix, |idx| {
                        idx.mark_failed(entry.id, &entry.name, chrono::Local::now());
                        Ok(())
                    });
                }
                Err(e) => say!(
                    "SCR: cannot fetch {} in this job: {e}; it is not marked failed",
                    entry.name
                ),
            }
        }
        said(&other_size);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::Verdict;
    use scr::Error;
    use std::path::Path;

    /// Only data proven broken marks a checkpoint FAILED; what says nothing of the data
    /// passes it over (the prefix unreadable to this job) or blames this job's own nodes.
    #[test]
    fn only_data_proven_broken_marks_the_checkpoint_failed() {
        let prefix = Path::new("/p/prefix");
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let cases = [
            (
                Error::corrupt("a CRC32 that does not match"),
                Verdict::Broken,
            ),
            (
                Error::refused("a file others could have written"),
                Verdict::Unreadable,
            ),
            (
                Error::io(prefix.join("ckpt.1/a"), "open", denied()),
                Verdict::Unreadable,
            ),
            (Error::io("/cache/a", "write", denied()), Verdict::HereOnly),
            (Error::collective("another rank failed"), Verdict::HereOnly),
            (
                Error::Config {
                    origin: "SCR_Init".into(),
                    what: "no redundancy set".into(),
                },
                Verdict::HereOnly,
            ),
        ];
        for (error, verdict) in cases {
            assert!(Verdict::of(&error, prefix) == verdict, "{error}");
        }
    }
}
