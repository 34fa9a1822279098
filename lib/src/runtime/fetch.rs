//! Fetch: copying a checkpoint from the prefix into cache for a restart (the fetch loop
//! over the index, the scattered rank2file tree, the copies with their CRC checks).

use super::*;

/// Most files one rank reads while the rank2file tree is scattered.
const MAX_TREE_READS: usize = 1024;

impl Scr {
    /// The fetch loop: copies the newest complete, not-failed dataset from the prefix into
    /// cache (starting at a user-adjusted `scr.current`, else the index's CURRENT, and only
    /// below `below` when given). A copy that fails (missing file, size or CRC mismatch) is
    /// marked FAILED in the index and the next older one is tried.
    pub(super) fn fetch(&mut self, below: Option<u64>) -> Result<()> {
        let mut failed: Vec<String> = Vec::new();
        loop {
            // rank 0 picks the candidate and reads its file list
            let mut pick = Hash::new();
            let mut root = None;
            if self.rank == 0
                && let Some((id, name, desc, files)) = self.next_fetch_candidate(below, &failed)
            {
                pick.set_value("ID", id);
                pick.set_value("NAME", &name);
                pick.set("DSET", desc.into_hash());
                match files {
                    // a 1.1-8 summary holds the whole (small) map: it goes to every rank
                    FileList::Embedded(map) => {
                        pick.set("MAP", rank2file::leaf_hash(&map));
                    }
                    FileList::Tree(task) => root = Some(task),
                }
            }
            let pick = comm::bcast_hash(&self.world, 0, &pick);
            let (Some(id), Some(name)) = (
                pick.parsed::<u64>("ID").ok().flatten(),
                pick.first_value("NAME").map(str::to_string),
            ) else {
                return Ok(()); // nothing (more) to fetch: a clean start
            };
            let desc = Dataset::wrap(pick.get("DSET").cloned().unwrap_or_default());
            self.debug(1, format_args!("Attempting fetch: {name}"));
            let fetch_started = Instant::now();
            let mine = match pick.get("MAP") {
                Some(m) => {
                    let mut map = RankFiles::new();
                    rank2file::parse_leaf(m, &mut map)
                        .map_err(|e| failure(format!("{name}: file list: {e}")))
                        .map(|()| map.remove(&self.rank).unwrap_or_default())
                }
                None => self.scatter_rank2file(root),
            };
            let result = match mine {
                Ok(mine) => self.fetch_files_in_waves(id, &desc, &mine),
                Err(e) => Err(failure(format!("{name}: file list: {e}"))),
            };
            if let Err(e) = &result {
                say!("SCR: rank {}: fetch of {name} failed: {e}", self.rank);
            }
            if comm::all_true(&self.world, result.is_ok()) {
                self.log_transfer(kinds::FETCH, id, fetch_started);
                let secs = fetch_started.elapsed().as_secs_f64();
                self.debug(
                    1,
                    format_args!("scr_fetch: {}", self.transfer_cost(id, secs)),
                );
                self.debug(1, format_args!("Fetch of dataset {id} `{name}' succeeded"));
                self.note_on_prefix("the fetch", || {
                    update_index(&self.config.prefix, |idx| {
                        idx.mark_fetched(id, &name, chrono::Local::now());
                        // the checkpoint restarted from is the current one, as in SCR: a
                        // newer one that failed to fetch no longer is
                        idx.set_current(&name).map_err(|what| {
                            Error::invalid(layout::index_file(&self.config.prefix), what)
                        })
                    })?;
                    if let Some(w) = scr::prefix::update_current_link(&self.config.prefix, &name)? {
                        say!("SCR: WARNING: {w}");
                    }
                    update_flush_file(&self.config.prefix, |f| {
                        f.describe_dataset(id, &desc);
                        f.set_location(id, Location::Cache);
                        f.set_location(id, Location::Pfs);
                    })
                });
                self.checkpoint_id = self.checkpoint_id.max(desc.checkpoint_id().unwrap_or(id));
                self.restart = Some((id, name));
                return Ok(());
            }
            self.debug(1, format_args!("Failed to fetch dataset {id} `{name}'"));
            self.log.event(
                kinds::FETCH_FAILED,
                &[("name", name.clone()), ("dset", id.to_string())],
            );
            self.note_on_prefix("the failed fetch in the index", || {
                update_index(&self.config.prefix, |idx| {
                    idx.mark_failed(id, &name, chrono::Local::now());
                    Ok(())
                })
            });
            self.delete_cached(id);
            failed.push(name);
        }
    }

    /// The rank2file tree scattered level by level: rank 0 reads the root and sends each
    /// reader its part, readers read theirs (at most 1 MB each step) and pass on, until
    /// every rank holds its own file list. Collective; `root` is rank 0's. A tree written
    /// by SCR has each reader read a file or two per level; a rank sent more than
    /// [`MAX_TREE_READS`] files in all is reading a crafted graph, not a tree, and stops.
    pub(super) fn scatter_rank2file(&self, root: Option<TreeTask>) -> Result<Vec<FileRecord>> {
        let mut tasks: Vec<TreeTask> = root.into_iter().collect();
        let mut mine: Option<Vec<FileRecord>> = None;
        let mut problem: Option<String> = None;
        let mut reads = 0usize;
        loop {
            let mut outgoing: BTreeMap<u64, Hash> = BTreeMap::new();
            reads += tasks.len();
            if reads > MAX_TREE_READS {
                problem.get_or_insert(format!(
                    "the rank2file map sends rank {} more than {MAX_TREE_READS} files to read; \
                     it is not the tree SCR writes",
                    self.rank
                ));
                tasks.clear();
            }
            for task in tasks.drain(..) {
                let deliveries = match rank2file::scatter_step(&self.config.prefix, &task) {
                    Ok(d) => d,
                    Err(e) => {
                        problem = Some(e.to_string());
                        continue;
                    }
                };
                for d in deliveries {
                    let to = match &d {
                        Delivery::Read { reader, .. } => *reader,
                        Delivery::Files { rank, .. } => *rank,
                    };
                    if to >= self.ranks {
                        problem = Some(format!(
                            "{}: names rank {to}, this job has {}",
                            task.file, self.ranks
                        ));
                        continue;
                    }
                    let msg = outgoing.entry(to).or_default();
                    match d {
                        Delivery::Read { task, .. } => {
                            let n = msg.get("TASK").map_or(0, |t| t.iter().count());
                            let t = msg.set_kv("TASK", n);
                            t.set_value("FILE", &task.file);
                            t.set_value("OFFSET", task.offset);
                            t.set_value("LEVEL", task.parent_level);
                        }
                        Delivery::Files { rank, files } => {
                            msg.set("MINE", rank2file::leaf_hash([(&rank, &files)]));
                        }
                    }
                }
            }
            if comm::sum_u64(&self.world, outgoing.len() as u64) == 0 {
                break;
            }
            let packed = outgoing.into_iter().map(|(r, h)| (r, h.pack())).collect();
            for bytes in comm::exchange(&self.world, &packed) {
                let h =
                    Hash::unpack(&bytes).map_err(|e| failure(format!("rank2file message: {e}")))?;
                for (_, t) in h.get("TASK").into_iter().flat_map(Hash::iter) {
                    tasks.push(TreeTask {
                        file: t.first_value("FILE").unwrap_or_default().to_string(),
                        offset: t.parsed("OFFSET").ok().flatten().unwrap_or(0),
                        parent_level: t.parsed("LEVEL").ok().flatten().unwrap_or(0),
                    });
                }
                if let Some(leaf) = h.get("MINE") {
                    let mut map = RankFiles::new();
                    match rank2file::parse_leaf(leaf, &mut map) {
                        Ok(()) => mine = map.remove(&self.rank),
                        Err(e) => problem = Some(e),
                    }
                }
            }
        }
        if mine.is_none() && problem.is_none() {
            problem = Some(format!(
                "the rank2file map lists nothing for rank {}",
                self.rank
            ));
        }
        let mine = match problem {
            Some(p) => Err(failure(p)),
            None => Ok(mine.unwrap_or_default()),
        };
        comm::agree(
            &self.world,
            mine,
            "another rank could not read its file list",
        )
    }

    /// Rank 0: the next dataset to try, with its descriptor and where its file lists are.
    pub(super) fn next_fetch_candidate(
        &self,
        below: Option<u64>,
        failed: &[String],
    ) -> Option<(u64, String, Dataset, FileList)> {
        let index = IndexFile::read(&layout::index_file(&self.config.prefix)).ok()?;
        let link = scr::prefix::read_current_link(&self.config.prefix);
        for entry in index.restart_candidates(link.as_deref()) {
            if below.is_some_and(|b| entry.id >= b) || failed.contains(&entry.name) {
                continue;
            }
            let loaded = (|| -> Result<(Dataset, FileList)> {
                let summary = Summary::read(&layout::summary_file(&self.config.prefix, entry.id))?;
                if !summary.is_complete() {
                    return Err(failure("summary says incomplete"));
                }
                let (files, written_by) = match summary.embedded_rank2file() {
                    Some(map) => {
                        let n = map.len() as u64;
                        if map.keys().any(|&r| r >= self.ranks) {
                            return Err(failure("its map names ranks this job does not have"));
                        }
                        (FileList::Embedded(map), n)
                    }
                    None => {
                        let root = TreeTask::root(&layout::dataset_meta_rel(entry.id));
                        let n = rank2file::tree_ranks(&self.config.prefix, &root)?;
                        (FileList::Tree(root), n)
                    }
                };
                if written_by != self.ranks {
                    return Err(failure(format!(
                        "written by {written_by} ranks, this job has {}",
                        self.ranks
                    )));
                }
                let desc = summary
                    .dataset()
                    .or_else(|| index.dataset(entry.id, &entry.name))
                    .unwrap_or_default();
                Ok((desc, files))
            })();
            match loaded {
                Ok((desc, files)) => return Some((entry.id, entry.name, desc, files)),
                Err(e) => {
                    say!("SCR: cannot fetch {}: {e}", entry.name);
                    let _ = update_index(&self.config.prefix, |idx| {
                        idx.mark_failed(entry.id, &entry.name, chrono::Local::now());
                        Ok(())
                    });
                }
            }
        }
        None
    }

    /// [`Scr::fetch_files`], at most SCR_FETCH_WIDTH ranks reading the prefix at once: ranks
    /// go in waves, as the flush's writers do. Collective.
    fn fetch_files_in_waves(
        &mut self,
        id: u64,
        desc: &Dataset,
        files: &[FileRecord],
    ) -> Result<()> {
        let width = self.config.settings.fetch.width;
        let mut result = Ok(());
        for wave in 0..self.ranks.div_ceil(width) {
            if wave > 0 {
                comm::relaxed_barrier(&self.world);
            }
            if self.rank / width == wave {
                result = self.fetch_files(id, desc, files);
            }
        }
        result
    }

    /// Copies this rank's files of a dataset from the prefix into cache (or, with
    /// SCR_FETCH_BYPASS, uses them in place), checking sizes and CRCs, recording each file
    /// in the filemap before it is created.
    pub(super) fn fetch_files(
        &mut self,
        id: u64,
        desc: &Dataset,
        files: &[FileRecord],
    ) -> Result<()> {
        // what a failed recovery left in cache of this dataset is replaced by the fetched copy
        if self.cache.filemap.have_rank_by_dataset(id, self.rank) {
            self.delete_cached(id);
        }
        self.record_dataset(id, desc, files.len() as u64)?;
        let buf = self.file_buf_size();
        let in_place = self.config.settings.fetch.in_place;
        // what is read back from the prefix is opened through directory handles: every
        // directory on the way and the file this user's, nobody else's to swap
        let prefix = safe_fs::Beneath::open(&self.config.prefix)?;
        for rec in files {
            rank2file::check_relative(&rec.name).map_err(failure)?;
            let src = self.config.prefix.join(&rec.name);
            let opened = if rec.segments.is_empty() {
                let file = prefix.open_file(Path::new(&rec.name))?;
                // a file that is not what the summary says is refused before a byte moves
                let len = file
                    .metadata()
                    .map_err(|e| Error::io(&src, "stat", e))?
                    .len();
                if len != rec.size {
                    return Err(failure(format!(
                        "{}: not a regular file of {} bytes as the summary records",
                        src.display(),
                        rec.size
                    )));
                }
                Some(file)
            } else {
                None
            };
            // SCR_FETCH_BYPASS: the restart reads the prefix's file where it is (measured and
            // CRC-checked like a copy); the cache keeps only the filemap entry
            let dst = if in_place && rec.segments.is_empty() {
                src.clone()
            } else {
                self.dataset_dir(id).join(&rec.name)
            };
            let key = dst.to_string_lossy().into_owned();
            let base = src
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let dir = src
                .parent()
                .unwrap_or(&self.config.prefix)
                .to_string_lossy()
                .into_owned();
            let mut meta = Meta::for_user_file(&base, self.ranks, &rec.name, &dir, &base);
            self.cache.filemap.add_file(id, self.rank, &key);
            self.cache.filemap.set_meta(id, self.rank, &key, &meta);
            self.cache.filemap.write(&self.cache.filemap_path)?;
            let (size, crc) = match opened {
                Some(file) => {
                    let (size, crc) = io::copy_open_file_with_crc(
                        file,
                        &src,
                        &dst,
                        Some(&self.dataset_dir(id)),
                        buf,
                        &mut |_| {},
                    )?;
                    (size, rec.crc.is_some().then_some(crc))
                }
                None => {
                    let (size, crc) = container::read_file(&prefix, &rec.segments, &dst, buf)?;
                    (size, Some(crc))
                }
            };
            if size != rec.size {
                return Err(failure(format!(
                    "{}: {size} bytes, the summary records {}",
                    src.display(),
                    rec.size
                )));
            }
            if let (Some(want), Some(got)) = (rec.crc, crc) {
                if want != got {
                    return Err(failure(format!(
                        "CRC32 mismatch detected when fetching file from {} to {} of dataset \
                         {id}: it has {}, the summary records {}",
                        src.display(),
                        dst.display(),
                        scr::hash::format_crc32(got),
                        scr::hash::format_crc32(want)
                    )));
                }
                meta.set_crc32(got);
            }
            meta.set_size(size);
            meta.set_complete(true);
            self.cache.filemap.set_meta(id, self.rank, &key, &meta);
        }
        self.cache.filemap.write(&self.cache.filemap_path)
    }
}
