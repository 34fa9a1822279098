//! Restart from cache: find the newest checkpoint every
//! rank can get back, move each rank's files to where it runs now (from the node that
//! holds them, own copy or a partner's), rebuild lost members from the rest of their XOR
//! or RS set, and protect the result anew when anything moved. When a dataset cannot be
//! recovered it stays in cache (for the drain) and the next older one is tried, then the
//! prefix.

use super::cache::{CacheManager, mark_complete};
use super::job::Job;
use super::messages::{PartnerReport, RecoveryPlan, RecoveryReport, RedundancySet};
use super::prefix_store::PrefixStore;
use super::recovery_plan::plan_recovery;
use super::redundancy::{Redundancy, copy_header, place_copy, read_copy_header};
use crate::comm;
use crate::shuffle::{self, Incoming, Outgoing};
use hostlist::HostSet;
use scr::hash::Hash;
use scr::reddesc::{RedDesc, Scheme};
use scr::{Error, HashView, Result, layout};
use std::path::Path;
use std::time::Instant;

/// What a recovery in cache needs: the job, the cache it restores, the descriptors that
/// protect what it restored. Every method is collective.
pub(super) struct Recovery<'a> {
    pub(super) job: &'a Job,
    pub(super) cache: &'a mut CacheManager,
    pub(super) redundancy: &'a Redundancy,
}

/// What SCR_Init's restart from cache found.
pub(super) struct CacheRestart {
    /// The newest dataset id in any cache or recorded on the prefix: numbering continues
    /// after it, so no id is ever given twice.
    pub(super) dataset_id: u64,
    /// The checkpoint id of the restart dataset (0 without one).
    pub(super) checkpoint_id: u64,
    /// The dataset restarted from (id, name), when one could be recovered.
    pub(super) restart: Option<(u64, String)>,
    /// The checkpoints newer than the restart that this job's caches hold but could not
    /// give back (the ranks said why).
    pub(super) unrecovered: Vec<u64>,
    /// Those of `unrecovered` lost for good: every node that wrote them runs this job, so
    /// no later job or drain sees more of them, and their pieces would only make a job of
    /// another size stop over a checkpoint it cannot drain either.
    pub(super) lost: Vec<u64>,
}

impl Recovery<'_> {
    /// Chooses the restart dataset: the newest checkpoint in any cache on any node that
    /// can be recovered (with SCR_DISTRIBUTE, `distribute`), else none (the fetch loop or a
    /// clean start come later). Every older dataset still cached is rebuilt too.
    pub(super) fn restart_from_cache(
        &mut self,
        prefix: &PrefixStore,
        distribute: bool,
        known_down: Option<&str>,
    ) -> Result<CacheRestart> {
        let job = self.job;
        let dataset_id = job.max(prefix.newest_recorded().max(self.cache.newest_recorded()));
        let mut found = CacheRestart {
            dataset_id,
            checkpoint_id: 0,
            restart: None,
            unrecovered: Vec::new(),
            lost: Vec::new(),
        };
        // SCR_DISTRIBUTE=0: no rebuild in cache; a restart comes from the prefix
        let mut below = if distribute { u64::MAX } else { 0 };
        let started = Instant::now();
        let mut attempted = false;
        loop {
            let d = job.max(self.cache.newest_cached(below, true));
            if d == 0 {
                break;
            }
            attempted = true;
            match self.recover_and_say(d)? {
                Recovered::Whole => {
                    let ckpt = self.cache.checkpoint_of(d).unwrap_or(d);
                    found.checkpoint_id = job.max(ckpt);
                    found.restart = Some((d, self.cache.dataset_name(d)));
                    break;
                }
                // nothing of it was in cache to lose (it said so at SCR_DEBUG=1)
                Recovered::OnPrefix => {}
                Recovered::Lost => {
                    let gone = self.stop_if_whole_elsewhere(d, prefix, known_down)?;
                    if job.is_root() {
                        say!(
                            "SCR: dataset {d} cannot be recovered from cache; looking for \
                             another checkpoint (older ones in cache, then the prefix)"
                        );
                    }
                    // what is left of one the nodes of this job alone wrote goes (the
                    // caller deletes it once it has said so); else it stays in cache (the
                    // drain may see more nodes than this run) until it ages out like any
                    // dataset
                    if gone {
                        found.lost.push(d);
                    }
                    found.unrecovered.push(d);
                }
            }
            below = d;
        }
        // every older dataset still cached is rebuilt too, so a later failure of the
        // restart checkpoint still finds them protected (what cannot be is left as it is)
        if let Some((restart, _)) = found.restart {
            let mut older = restart;
            loop {
                let d = job.max(self.cache.newest_cached(older, false));
                if d == 0 {
                    break;
                }
                self.recover_and_say(d)?;
                older = d;
            }
        }
        if attempted {
            let secs = started.elapsed().as_secs_f64();
            match found.restart {
                Some(_) => job.debug(
                    1,
                    format_args!(
                        "Scalable restart succeeded for checkpoint {}, took {secs:.6} secs",
                        found.checkpoint_id
                    ),
                ),
                None => job.debug(
                    1,
                    format_args!("Scalable restart failed, took {secs:.6} secs"),
                ),
            }
        }
        Ok(found)
    }

    /// Checkpoint `d`, which this job's nodes cannot give back, newer than every checkpoint
    /// the prefix can: when nodes of the job that wrote it are not among this job's and
    /// not known down (`known_down`: SCR_EXCLUDE_NODES, which scr-run sets to the nodes
    /// it found down), its missing files may be whole there. Going on from an older
    /// checkpoint would throw it away (its pieces here age out of cache as this run
    /// checkpoints), so SCR_Init stops, naming those nodes and the ways on, as it does for
    /// a checkpoint of another size it cannot drain. Returns whether `d` is lost for good:
    /// every node that wrote it is one of this job's (the same answer on every rank).
    /// Collective.
    fn stop_if_whole_elsewhere(
        &self,
        d: u64,
        prefix: &PrefixStore,
        known_down: Option<&str>,
    ) -> Result<bool> {
        let job = self.job;
        let mine = self.cache.writer_hosts(d).unwrap_or_default();
        let gathered = comm::gather_bytes(job.world(), 0, mine.as_bytes());
        let mut why = String::new();
        let mut gone = false;
        if job.is_root() {
            let writers = gathered
                .iter()
                .find_map(|h| std::str::from_utf8(h).ok().filter(|h| !h.is_empty()))
                .and_then(|h| h.parse::<HostSet>().ok());
            // this job's own nodes unknown (a name the host-list syntax cannot hold): which
            // writers are elsewhere is unknown too, and the restart goes on as before
            let here = job.hosts.parse::<HostSet>().ok();
            let down = known_down
                .and_then(|d| d.parse::<HostSet>().ok())
                .unwrap_or_default();
            let elsewhere = writers.zip(here).map(|(w, here)| w.difference(&here));
            gone = elsewhere.as_ref().is_some_and(HostSet::is_empty);
            let elsewhere = elsewhere.map(|e| e.difference(&down));
            let on_prefix = prefix.newest_usable_checkpoint();
            if let Some(elsewhere) = elsewhere.filter(|e| !e.is_empty() && d > on_prefix) {
                let name = self.cache.dataset_name(d);
                why = format!(
                    "{name} (dataset {d}) is newer than every checkpoint on the prefix {}, and \
                     this job's nodes cannot rebuild it; the nodes {elsewhere} of the job that \
                     wrote it are not among this job's and may hold the rest. To keep it, run \
                     this job on them too, or drain it first with `scr postrun` (setting \
                     SCR_EXCLUDE_NODES to those that are down); if they are lost, set \
                     SCR_EXCLUDE_NODES={elsewhere} to go on from an older checkpoint",
                    prefix.path().display()
                );
            }
        }
        // rank 0 stops the job saying why; the others wait for it
        let why = String::from_utf8(job.root_bytes(why.into_bytes())).unwrap_or_default();
        let gone = job.root_decides(gone);
        match (why.is_empty(), job.is_root()) {
            (true, _) => Ok(gone),
            (false, true) => Err(Error::refused(why)),
            (false, false) => Err(Error::collective(format!(
                "rank 0 found the newest checkpoint held by nodes this job does not run on: {why}"
            ))),
        }
    }

    /// [`Recovery::recover`], saying so at SCR_DEBUG=1 as SCR does.
    fn recover_and_say(&mut self, d: u64) -> Result<Recovered> {
        self.job.debug(
            1,
            format_args!("Attempting to distribute and rebuild dataset {d}"),
        );
        let recovered = self.recover_outcome(d)?;
        if recovered == Recovered::Whole {
            self.job.debug(1, format_args!("Rebuilt dataset {d}"));
        } else {
            self.job
                .debug(1, format_args!("Failed to rebuild dataset {d}"));
        }
        Ok(recovered)
    }

    /// Tries to give every rank its files of `d`; true when every rank has them, verified.
    pub(super) fn recover(&mut self, d: u64) -> Result<bool> {
        Ok(self.recover_outcome(d)? == Recovered::Whole)
    }

    /// [`Recovery::recover`], telling a dataset lost from cache from one written straight
    /// to the prefix, which had nothing in cache to lose.
    fn recover_outcome(&mut self, d: u64) -> Result<Recovered> {
        let job = self.job;
        // 1. what each rank has, what each node holds for others, and rank 0's plan
        let own_ok = self.cache.verify_own(d, self.cache.crc_on_copy);
        let (moves, rebuilds) = match self.plan_for(d, own_ok) {
            RecoveryPlan::Recover { moves, rebuilds } => (moves, rebuilds),
            RecoveryPlan::Impossible(why) => {
                if job.is_root() {
                    say!("SCR: dataset {d}: {why}");
                }
                return Ok(Recovered::Lost);
            }
            RecoveryPlan::OnPrefix => {
                job.debug(
                    1,
                    format_args!(
                        "dataset {d} was written straight to the prefix (SCR_CACHE_BYPASS) and \
                         not every rank's cache records it: it is not restarted from cache; a \
                         fetch reads it on the prefix"
                    ),
                );
                return Ok(Recovered::OnPrefix);
            }
        };

        // 2. move copies to their owners, in one global order so no pair waits on another
        let mut moved: Result<()> = Ok(());
        for &(owner, holder) in &moves {
            if (job.rank == holder || job.rank == owner)
                && let Err(e) = self.move_copy(d, owner, holder)
            {
                say!(
                    "SCR: rank {}: moving rank {owner}'s files of dataset {d}: {e}",
                    job.rank
                );
                moved = Err(e);
            }
        }
        if job
            .agree(moved, "another rank's files could not be moved to it")
            .is_err()
        {
            return Ok(Recovered::Lost);
        }

        // 3. rebuild the lost members of each set that lost some
        let checked_as_written = if rebuilds.is_empty() {
            false
        } else {
            let result = self.rebuild_sets(d, &rebuilds);
            if let Err(e) = &result {
                say!("SCR: rank {}: rebuilding dataset {d}: {e}", job.rank);
            }
            match job.agree(result, "another set member could not be rebuilt") {
                Ok(checked) => checked,
                Err(_) => return Ok(Recovered::Lost),
            }
        };
        // only ranks whose files arrived or were rebuilt need checking again: every byte
        // against the CRCs recorded at Complete, whatever SCR_CRC_ON_COPY says (a rebuilt
        // member checked its bytes as it wrote them)
        if !job.all(own_ok || self.cache.verify_own(d, !checked_as_written)) {
            return Ok(Recovered::Lost);
        }

        // 4. protect the dataset where the ranks now run. A rebuild alone recreates the lost
        // members' parity too, so where every set is still the one this run's placement
        // chooses the dataset stands protected; after PARTNER copies moved to their owners
        // only the copies lost with their holders are sent again; anything else (a
        // partner's copy that became its owner's, sets that changed) is encoded anew.
        let adopted = !job.all(!self.cache.reprotect.contains(&d));
        let refit = adopted
            || (!rebuilds.is_empty() && !job.all(self.parity_still_fits(d)))
            || (!moves.is_empty() && !self.restore_partner_copies(d)?);
        if refit {
            self.reprotect(d);
        }
        Ok(Recovered::Whole)
    }

    /// Every rank reports what it has of `d` (its own files, verified; the copies its node
    /// holds; the redundancy sets their parity headers describe); rank 0 plans the
    /// recovery and every rank gets the plan (collective).
    fn plan_for(&self, d: u64, own_ok: bool) -> RecoveryPlan {
        let job = self.job;
        let held = self.cache.held_copies(d, false);
        // the sets, as the headers of the parity files at hand record them (RS headers say
        // how many failures they survive; XOR survives one)
        let sets = self
            .cache
            .parity_headers(d, own_ok, &held)
            .into_iter()
            .map(|header| RedundancySet {
                failures: header.failures.unwrap_or(1),
                members: header.group,
            })
            .collect();
        let flaw = if own_ok {
            None
        } else {
            self.cache.own_flaw(d, self.cache.crc_on_copy)
        };
        let report = RecoveryReport {
            own: own_ok,
            flaw,
            unfinished: !own_ok && self.cache.unfinished(d),
            keeps_others: !own_ok && self.cache.keeps_others_but_not(d),
            in_place: self.cache.written_to_prefix(d),
            held,
            sets,
        };
        let reports = comm::gather_bytes(job.world(), 0, &report.to_bytes());
        let plan = if job.is_root() {
            plan_recovery(job.ranks, &reports).to_bytes()
        } else {
            Vec::new()
        };
        RecoveryPlan::from_bytes(&comm::bcast_bytes(job.world(), 0, plan))
    }

    /// One move: the node master `holder` sends rank `owner`'s copy, `owner` stores it in
    /// its own cache directory.
    fn move_copy(&mut self, d: u64, owner: u64, holder: u64) -> Result<()> {
        let job = self.job;
        let buf = self.redundancy.mpi_buf;
        if job.rank == owner {
            job.debug_rank(
                1,
                format_args!(
                    "Receiving its files of dataset {d} from the copy rank {holder}'s node holds"
                ),
            );
        }
        if job.rank == holder {
            let files = self.cache.held_files(d, owner);
            let held = self.cache.held().expect("only node masters hold copies");
            let header = copy_header(held, d, owner, job.node.name(), &files);
            return shuffle::exchange(
                job.world(),
                Some(Outgoing {
                    to: owner as i32,
                    header,
                    files: files.into_iter().map(|(p, s, _)| (p, s)).collect(),
                }),
                None,
                buf,
            );
        }
        let cache = &mut *self.cache;
        let mut placed_paths = Vec::new();
        let mut place = |h: &Hash| -> Result<Vec<shuffle::Placed>> {
            let header = read_copy_header(h)?;
            let store = header
                .entry
                .get("REDDESC")
                .and_then(|r| RedDesc::wrap(r.clone()).store().map(str::to_string))
                .ok_or_else(|| Error::corrupt("the copy has no redundancy descriptor"))?;
            let place = cache.place();
            let store_dir = place
                .node
                .job_dir(Path::new(&store), &place.user, &place.jobid)?;
            let base = layout::cache_dataset_dir(&store_dir, d);
            let (owner, placed) =
                place_copy(&mut cache.filemap, d, &header, |_, rel| base.join(rel))?;
            if let Some(mut rd) = cache.filemap.reddesc(d, owner) {
                rd.set_directory(&store_dir.to_string_lossy());
                cache.filemap.set_reddesc(d, owner, &rd);
            }
            cache.write()?;
            placed_paths = placed
                .iter()
                .map(|(p, _, _)| p.to_string_lossy().into_owned())
                .collect();
            Ok(placed)
        };
        shuffle::exchange(
            job.world(),
            None,
            Some(Incoming {
                from: holder as i32,
                place: &mut place,
            }),
            buf,
        )?;
        mark_complete(&mut cache.filemap, d, owner, &placed_paths);
        cache.write()
    }

    /// PARTNER with one copy, after copies moved to their owners: each rank whose partner
    /// (where the ranks run now) holds no verified copy of its files sends one again; the
    /// rest send nothing, where encoding anew would send every rank's files. Returns false,
    /// having done nothing, for other schemes: the caller encodes the dataset anew.
    fn restore_partner_copies(&mut self, d: u64) -> Result<bool> {
        let job = self.job;
        let redundancy = self.redundancy;
        let output = self.cache.dataset(d).is_output();
        let i = redundancy.descriptor_index(self.cache.checkpoint_of(d), output);
        let (scheme, replicas, hop) = {
            let desc = &redundancy.descriptors[i];
            (desc.scheme, desc.replicas, desc.hop)
        };
        if !job.all(scheme == Scheme::Partner && replicas <= 1) {
            return Ok(false);
        }
        // every rank's node and partner, and the partner copies each node master holds intact
        let sets = &redundancy.sets[i];
        let (left, right) = sets.neighbours(job.rank, hop);
        let report = PartnerReport {
            node: job.node.name().to_string(),
            right,
            held: self.cache.held_copies(d, true),
        };
        // every rank decodes the same reports, so every rank reaches the same answer: one
        // that does not decode has the dataset encoded anew
        let decoded: std::result::Result<Vec<PartnerReport>, String> =
            comm::allgather_bytes(job.world(), &report.to_bytes())
                .iter()
                .enumerate()
                .map(|(r, b)| PartnerReport::from_bytes(b).map_err(|e| format!("rank {r}: {e}")))
                .collect();
        let reports = match decoded {
            Ok(reports) => reports,
            Err(e) => {
                if job.is_root() {
                    say!(
                        "SCR: WARNING: dataset {d}: a report on partner copies could not be read ({e}); it is protected anew"
                    );
                }
                return Ok(false);
            }
        };
        let node_of = |r: u64| reports.get(r as usize).map(|p| p.node.as_str());
        let missing = |r: u64| {
            let (_, right) = sets.neighbours(r, hop);
            !reports
                .iter()
                .any(|p| Some(p.node.as_str()) == node_of(right) && p.held.contains(&r))
        };
        let flags = (missing(job.rank), missing(left));
        // what this node holds of `d` that is no rank's partner copy here: a departed rank's
        // own files (moved to it already), a copy for a rank whose partner runs elsewhere now,
        // a copy that does not verify
        let partner_node = |r: u64| node_of(reports.get(r as usize)?.right);
        let kept = self.cache.held_copies(d, true);
        let stale: Vec<u64> = self
            .cache
            .held()
            .map(|held| held.ranks_by_dataset(d))
            .unwrap_or_default()
            .into_iter()
            .filter(|&r| !(kept.contains(&r) && partner_node(r) == Some(job.node.name())))
            .collect();
        let result = redundancy.send_partner_copy(job, self.cache, d, i, hop, flags);
        if let Err(e) = &result {
            say!(
                "SCR: ERROR: rank {}: sending a partner copy of dataset {d} again: {e}",
                job.rank
            );
        }
        if job
            .agree(result, "another rank could not send its partner copy again")
            .is_err()
        {
            if job.is_root() {
                say!(
                    "SCR: WARNING: dataset {d} was recovered but could not be protected again; \
                     it is safe only once flushed"
                );
            }
            return Ok(true);
        }
        // every rank's files are in place and copied to its partner: what this node still
        // holds for a rank whose partner runs elsewhere (a departed rank's own files, a copy
        // for a partner that moved) protects nothing
        self.cache.drop_held_ranks(d, &stale);
        Ok(true)
    }

    /// Whether this rank's parity file of `d` is the one this run's placement asks for: the
    /// dataset's scheme is XOR or Reed–Solomon with the same failures, and the set its
    /// header names is the set chosen for this rank now.
    fn parity_still_fits(&self, d: u64) -> bool {
        let (ckpt, output) = (
            self.cache.checkpoint_of(d),
            self.cache.dataset(d).is_output(),
        );
        let desc = self.redundancy.descriptor_for(ckpt, output);
        let failures = match desc.scheme {
            Scheme::Xor => 1,
            Scheme::ReedSolomon => desc.failures,
            _ => return false,
        };
        let i = self.redundancy.descriptor_index(ckpt, output);
        let members = self.redundancy.sets[i].members(self.job.rank);
        self.cache
            .parity_file(d)
            .is_some_and(|(_, h, _)| h.failures.unwrap_or(1) == failures && h.group == members)
    }

    /// Drops a dataset's old redundancy data (XOR files, partners' copies held on this
    /// node) and applies the scheme again for where the ranks run now. What cannot be done
    /// is said: the dataset stays recovered, safe once flushed.
    fn reprotect(&mut self, d: u64) {
        let job = self.job;
        let cleared = self.cache.clear_redundancy(d);
        if let Err(e) = &cleared {
            say!("SCR: ERROR: rank {}: {e}", job.rank);
        }
        // every rank encodes anew or none does: the scheme is collective
        if job
            .agree(
                cleared,
                "another node could not clear its old redundancy data",
            )
            .is_err()
        {
            if job.is_root() {
                say!(
                    "SCR: WARNING: dataset {d} was recovered but its old redundancy data could \
                     not be cleared on every node; it is not protected again, and is safe only \
                     once flushed"
                );
            }
            return;
        }
        self.cache.reprotect.retain(|&x| x != d);
        if self.redundancy.apply(job, self.cache, d).is_err() && job.is_root() {
            say!(
                "SCR: WARNING: dataset {d} was recovered but could not be protected again; \
                 it is safe only once flushed"
            );
        }
    }
}

/// How a recovery in cache ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recovered {
    /// Every rank has its files, verified.
    Whole,
    /// Not every rank can have its files back: the dataset is lost to this run's cache.
    Lost,
    /// Not every rank's cache records the dataset, but its files were written straight to
    /// the prefix: nothing of it was in cache to lose.
    OnPrefix,
}
