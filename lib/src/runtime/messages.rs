//! The messages ranks send each other, as typed values encoded one way (a packed `Hash`,
//! SCR's own codec): to recover a dataset at SCR_Init (reports, the plan, partner reports,
//! set members' descriptions) and to fetch one from the prefix (rank 0's choice, the
//! rank2file tree's deliveries). A message that does not decode is an error saying what
//! was wrong with it, never a rank quietly left out.

use scr::HashView;
use scr::dataset::Dataset;
use scr::hash::Hash;
use scr::rank2file::{self, FileRecord, RankFiles, TreeTask};
use scr::reddesc::RedDesc;
use scr::xor::XorHeader;

/// Why a message could not be read.
type Malformed = String;

fn ranks_under(h: &Hash, key: &str) -> Result<Vec<u64>, Malformed> {
    h.get(key)
        .into_iter()
        .flat_map(Hash::keys)
        .map(|r| {
            r.parse()
                .map_err(|_| format!("{key} names {r:?}, not a rank"))
        })
        .collect()
}

fn list(ranks: &[u64]) -> String {
    ranks
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_list(text: &str) -> Result<Vec<u64>, Malformed> {
    text.split(',')
        .map(|x| {
            x.parse()
                .map_err(|_| format!("{text:?} is not a list of ranks"))
        })
        .collect()
}

fn unpack(bytes: &[u8]) -> Result<Hash, Malformed> {
    Hash::unpack(bytes).map_err(|e| e.to_string())
}

/// A redundancy set as a parity file's header records it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct RedundancySet {
    /// How many lost members it rebuilds (XOR: 1).
    pub(super) failures: u64,
    pub(super) members: Vec<u64>,
}

/// What one rank has of a dataset, sent to rank 0 to plan its recovery.
#[derive(Clone, Debug, Default)]
pub(super) struct RecoveryReport {
    /// Its own files are in its cache, verified.
    pub(super) own: bool,
    /// Why its own files, which its node's filemap lists, are not usable as they are (a
    /// file gone, of another size): its node kept what it had, so a lost node is not why.
    pub(super) flaw: Option<String>,
    /// Its node's filemap records the dataset but not completed by this rank (the dataset,
    /// or a file of it, its redundancy data among them): the job ended while it wrote it.
    pub(super) unfinished: bool,
    /// Its node's filemap records nothing of the dataset for this rank but does record its
    /// other datasets: the node kept its cache, and this rank has no part of it there.
    pub(super) keeps_others: bool,
    /// Its files of the dataset were written straight to the prefix (SCR_CACHE_BYPASS):
    /// the cache records where they are, it holds none of them.
    pub(super) in_place: bool,
    /// The ranks whose files its node holds (verified copies).
    pub(super) held: Vec<u64>,
    /// The sets the parity headers at hand describe.
    pub(super) sets: Vec<RedundancySet>,
}

impl RecoveryReport {
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let mut h = Hash::new();
        h.set_value("OWN", u8::from(self.own));
        if let Some(flaw) = &self.flaw {
            h.set_value("FLAW", flaw);
        }
        for (key, set) in [
            ("UNFINISHED", self.unfinished),
            ("KEEPS_OTHERS", self.keeps_others),
            ("IN_PLACE", self.in_place),
        ] {
            if set {
                h.set_value(key, 1u8);
            }
        }
        for r in &self.held {
            h.child("HELD").child(r.to_string());
        }
        for s in &self.sets {
            h.child("SET")
                .child(format!("{}:{}", s.failures, list(&s.members)));
        }
        h.pack()
    }

    pub(super) fn from_bytes(bytes: &[u8]) -> Result<RecoveryReport, Malformed> {
        let h = unpack(bytes)?;
        let sets = h
            .get("SET")
            .into_iter()
            .flat_map(Hash::keys)
            .map(|text| {
                let (k, members) = text
                    .split_once(':')
                    .ok_or_else(|| format!("set {text:?} lacks its failure count"))?;
                Ok(RedundancySet {
                    failures: k
                        .parse()
                        .map_err(|_| format!("set {text:?}: {k:?} is no count"))?,
                    members: parse_list(members)?,
                })
            })
            .collect::<Result<_, Malformed>>()?;
        Ok(RecoveryReport {
            own: h.first_value("OWN") == Some("1"),
            flaw: h.first_value("FLAW").map(str::to_string),
            unfinished: h.first_value("UNFINISHED") == Some("1"),
            keeps_others: h.first_value("KEEPS_OTHERS") == Some("1"),
            in_place: h.first_value("IN_PLACE") == Some("1"),
            held: ranks_under(&h, "HELD")?,
            sets,
        })
    }
}

/// One set's rebuild as rank 0 planned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SetRebuild {
    pub(super) members: Vec<u64>,
    /// How many lost members the set's code rebuilds.
    pub(super) failures: u64,
    pub(super) lost: Vec<u64>,
}

/// Rank 0's plan to give every rank its files of a dataset, or why it cannot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum RecoveryPlan {
    Recover {
        /// (owner, holder): the holder's node sends the owner its files, in this order.
        moves: Vec<(u64, u64)>,
        rebuilds: Vec<SetRebuild>,
    },
    Impossible(String),
    /// Not every rank can get its files back from cache, but the dataset was written
    /// straight to the prefix (SCR_CACHE_BYPASS): nothing of it was in cache to lose.
    OnPrefix,
}

impl RecoveryPlan {
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let mut plan = Hash::new();
        match self {
            RecoveryPlan::Impossible(why) => {
                plan.set_value("WHY", why);
            }
            RecoveryPlan::OnPrefix => {
                plan.set_value("ON_PREFIX", 1u8);
            }
            RecoveryPlan::Recover { moves, rebuilds } => {
                for (i, (owner, holder)) in moves.iter().enumerate() {
                    // numbered: the order of the moves is the plan's
                    let m = plan.child("MOVE").child(i.to_string());
                    m.set_value("OWNER", owner);
                    m.set_value("HOLDER", holder);
                }
                for (i, r) in rebuilds.iter().enumerate() {
                    let h = plan.child("REBUILD").child(i.to_string());
                    h.set_value("MEMBERS", list(&r.members));
                    h.set_value("FAILURES", r.failures);
                    h.set_value("LOST", list(&r.lost));
                }
                plan.set_value("OK", 1);
            }
        }
        plan.pack()
    }

    /// A plan that does not decode is one no rank can follow: impossible, saying why.
    pub(super) fn from_bytes(bytes: &[u8]) -> RecoveryPlan {
        Self::decode(bytes).unwrap_or_else(|e| {
            RecoveryPlan::Impossible(format!("the recovery plan could not be read: {e}"))
        })
    }

    fn decode(bytes: &[u8]) -> Result<RecoveryPlan, Malformed> {
        let h = unpack(bytes)?;
        if h.first_value("ON_PREFIX") == Some("1") {
            return Ok(RecoveryPlan::OnPrefix);
        }
        if h.first_value("OK") != Some("1") {
            let why = h.first_value("WHY").unwrap_or("no reason given");
            return Ok(RecoveryPlan::Impossible(why.to_string()));
        }
        let number = |h: &Hash, key: &str| -> Result<u64, Malformed> {
            h.first_value(key)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{key} missing or not a number"))
        };
        let numbered = |key: &str| -> Result<Vec<&Hash>, Malformed> {
            let mut items: Vec<(u64, &Hash)> = h
                .get(key)
                .into_iter()
                .flat_map(Hash::iter)
                .map(|(i, x)| Ok((i.parse().map_err(|_| format!("{key} {i:?}"))?, x)))
                .collect::<Result<_, Malformed>>()?;
            items.sort_by_key(|(i, _)| *i);
            Ok(items.into_iter().map(|(_, x)| x).collect())
        };
        let moves = numbered("MOVE")?
            .into_iter()
            .map(|m| Ok((number(m, "OWNER")?, number(m, "HOLDER")?)))
            .collect::<Result<_, Malformed>>()?;
        let rebuilds = numbered("REBUILD")?
            .into_iter()
            .map(|r| {
                Ok(SetRebuild {
                    members: parse_list(r.first_value("MEMBERS").unwrap_or_default())?,
                    failures: number(r, "FAILURES")?,
                    lost: parse_list(r.first_value("LOST").unwrap_or_default())?,
                })
            })
            .collect::<Result<_, Malformed>>()?;
        Ok(RecoveryPlan::Recover { moves, rebuilds })
    }
}

/// What a rank tells every other before PARTNER copies are sent again: its node, its right
/// neighbour, and the partner copies its node holds intact.
#[derive(Clone, Debug, Default)]
pub(super) struct PartnerReport {
    pub(super) node: String,
    pub(super) right: u64,
    pub(super) held: Vec<u64>,
}

impl PartnerReport {
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let mut h = Hash::new();
        h.set_value("NODE", &self.node);
        h.set_value("RIGHT", self.right);
        for r in &self.held {
            h.child("HELD").child(r.to_string());
        }
        h.pack()
    }

    pub(super) fn from_bytes(bytes: &[u8]) -> Result<PartnerReport, Malformed> {
        let h = unpack(bytes)?;
        Ok(PartnerReport {
            node: h.first_value("NODE").ok_or("NODE missing")?.to_string(),
            right: h
                .parsed::<u64>("RIGHT")
                .ok()
                .flatten()
                .ok_or("RIGHT missing or not a rank")?,
            held: ranks_under(&h, "HELD")?,
        })
    }
}

/// What a member of a redundancy set tells the others before a lost member is rebuilt:
/// its parity file's header (a lost member, or one without its parity, sends none) and its
/// redundancy descriptor.
#[derive(Clone, Debug, Default)]
pub(super) struct MemberDescription {
    pub(super) header: Option<XorHeader>,
    pub(super) reddesc: Option<RedDesc>,
}

impl MemberDescription {
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let mut h = Hash::new();
        if let Some(header) = &self.header {
            h.set("HEADER", header.to_hash());
        }
        if let Some(rd) = &self.reddesc {
            h.set("REDDESC", rd.clone().into_hash());
        }
        h.pack()
    }

    pub(super) fn from_bytes(bytes: &[u8]) -> Result<MemberDescription, Malformed> {
        let h = unpack(bytes)?;
        Ok(MemberDescription {
            header: h
                .get("HEADER")
                .map(XorHeader::from_hash)
                .transpose()
                .map_err(|e| format!("its parity header: {e}"))?,
            reddesc: h.get("REDDESC").map(|r| RedDesc::wrap(r.clone())),
        })
    }
}

/// What a copy of one rank's files of a dataset carries ahead of the files (a PARTNER copy,
/// or a copy moved to its owner at SCR_Init): whose files they are, the node they come
/// from, the owner's filemap entry (their meta data), and the order the files follow in.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct CopyHeader {
    pub(super) rank: u64,
    pub(super) node: String,
    pub(super) entry: Hash,
    pub(super) order: Vec<String>,
}

impl CopyHeader {
    pub(super) fn to_hash(&self) -> Hash {
        let mut h = Hash::new();
        h.set_value("RANK", self.rank);
        h.set_value("NODE", &self.node);
        h.set("ENTRY", self.entry.clone());
        let order = h.child("ORDER");
        for (i, path) in self.order.iter().enumerate() {
            order.child(i.to_string()).child(path);
        }
        h
    }

    /// A sender that could not read its own files sends an empty header.
    pub(super) fn from_hash(h: &Hash) -> Result<CopyHeader, Malformed> {
        if h.is_empty() {
            return Err("the sender could not read its files (it says why)".into());
        }
        let rank = h
            .parsed::<u64>("RANK")
            .ok()
            .flatten()
            .ok_or("RANK missing or not a rank")?;
        let count = h.get("ORDER").map_or(0, Hash::len);
        let order = (0..count)
            .map(|i| {
                h.get_path(&[&"ORDER", &i])
                    .and_then(|x| x.keys().next())
                    .map(str::to_string)
                    .ok_or_else(|| format!("the copy of rank {rank} lacks its file {i}"))
            })
            .collect::<Result<_, Malformed>>()?;
        Ok(CopyHeader {
            rank,
            node: h.first_value("NODE").ok_or("NODE missing")?.to_string(),
            entry: h.get("ENTRY").cloned().ok_or("ENTRY missing")?,
            order,
        })
    }
}

/// Rank 0's choice of the checkpoint to fetch: its id, name and descriptor, how many ranks
/// wrote it, and where the ranks' file lists are: in the message itself (a 1.1-8 summary
/// holds the whole, small map; a checkpoint written by another number of ranks than this
/// job's goes to every rank whole), or in the rank2file tree on the prefix, which is
/// scattered next.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct FetchChoice {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) dataset: Dataset,
    pub(super) writers: u64,
    pub(super) embedded: Option<RankFiles>,
}

impl FetchChoice {
    /// `None`: nothing (more) to fetch.
    pub(super) fn to_bytes(choice: Option<&FetchChoice>) -> Vec<u8> {
        let mut h = Hash::new();
        if let Some(c) = choice {
            h.set_value("ID", c.id);
            h.set_value("NAME", &c.name);
            h.set_value("WRITERS", c.writers);
            h.set("DSET", c.dataset.clone().into_hash());
            if let Some(map) = &c.embedded {
                h.set("MAP", rank2file::leaf_hash(map));
            }
        }
        h.pack()
    }

    pub(super) fn from_bytes(bytes: &[u8]) -> Result<Option<FetchChoice>, Malformed> {
        let h = unpack(bytes)?;
        let Some(id) = h.first_value("ID") else {
            return Ok(None);
        };
        let embedded = match h.get("MAP") {
            Some(m) => {
                let mut map = RankFiles::new();
                rank2file::parse_leaf(m, &mut map).map_err(|e| format!("its file lists: {e}"))?;
                Some(map)
            }
            None => None,
        };
        Ok(Some(FetchChoice {
            id: id
                .parse()
                .map_err(|_| format!("ID {id:?} is not a dataset id"))?,
            name: h.first_value("NAME").ok_or("NAME missing")?.to_string(),
            writers: h
                .parsed::<u64>("WRITERS")
                .ok()
                .flatten()
                .ok_or("WRITERS missing or not a count")?,
            dataset: Dataset::from_hash(h.get("DSET").cloned().ok_or("DSET missing")?)
                .map_err(|e| format!("its descriptor: {e}"))?,
            embedded,
        }))
    }
}

/// What one step of scattering a rank2file tree brings a rank: files of the tree to read
/// next, and its own file list once a leaf named it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct TreeDelivery {
    pub(super) reads: Vec<TreeTask>,
    pub(super) files: Option<(u64, Vec<FileRecord>)>,
}

impl TreeDelivery {
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let mut h = Hash::new();
        for (n, t) in self.reads.iter().enumerate() {
            let task = h.child("TASK").child(n.to_string());
            task.set_value("FILE", &t.file);
            task.set_value("OFFSET", t.offset);
            task.set_value("LEVEL", t.parent_level);
        }
        if let Some((rank, files)) = &self.files {
            h.set("MINE", rank2file::leaf_hash([(rank, files)]));
        }
        h.pack()
    }

    pub(super) fn from_bytes(bytes: &[u8]) -> Result<TreeDelivery, Malformed> {
        let h = unpack(bytes)?;
        let number = |t: &Hash, key: &str| -> Result<u64, Malformed> {
            t.first_value(key)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("a task's {key} is missing or not a number"))
        };
        let reads = h
            .get("TASK")
            .into_iter()
            .flat_map(Hash::iter)
            .map(|(_, t)| {
                Ok(TreeTask {
                    file: t
                        .first_value("FILE")
                        .ok_or("a task names no FILE")?
                        .to_string(),
                    offset: number(t, "OFFSET")?,
                    parent_level: number(t, "LEVEL")?,
                })
            })
            .collect::<Result<_, Malformed>>()?;
        let files = match h.get("MINE") {
            Some(leaf) => {
                let mut map = RankFiles::new();
                rank2file::parse_leaf(leaf, &mut map)?;
                let mut entries = map.into_iter();
                match (entries.next(), entries.next()) {
                    (Some(one), None) => Some(one),
                    _ => return Err("MINE must list exactly one rank's files".into()),
                }
            }
            None => None,
        };
        Ok(TreeDelivery { reads, files })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_reads_back_as_written() {
        let report = RecoveryReport {
            own: true,
            flaw: Some("/cache/rank_0.ckpt: No such file or directory".into()),
            unfinished: true,
            keeps_others: false,
            in_place: true,
            held: vec![3, 7],
            sets: vec![RedundancySet {
                failures: 2,
                members: vec![0, 1, 2, 3],
            }],
        };
        let back = RecoveryReport::from_bytes(&report.to_bytes()).unwrap();
        assert_eq!(
            (back.own, back.flaw, back.held, back.sets),
            (true, report.flaw, vec![3, 7], report.sets)
        );
        assert_eq!(
            (back.unfinished, back.keeps_others, back.in_place),
            (true, false, true)
        );

        // the moves keep their order past ten (numbered, not sorted as text)
        let plan = RecoveryPlan::Recover {
            moves: (0..12).map(|r| (11 - r, r)).collect(),
            rebuilds: vec![SetRebuild {
                members: vec![8, 9, 10, 11],
                failures: 1,
                lost: vec![11],
            }],
        };
        assert_eq!(RecoveryPlan::from_bytes(&plan.to_bytes()), plan);
        let no = RecoveryPlan::Impossible("why".into());
        assert_eq!(RecoveryPlan::from_bytes(&no.to_bytes()), no);
        let on_prefix = RecoveryPlan::OnPrefix;
        assert_eq!(RecoveryPlan::from_bytes(&on_prefix.to_bytes()), on_prefix);

        let partner = PartnerReport {
            node: "n2".into(),
            right: 5,
            held: vec![1],
        };
        let back = PartnerReport::from_bytes(&partner.to_bytes()).unwrap();
        assert_eq!(
            (back.node, back.right, back.held),
            ("n2".into(), 5, vec![1])
        );
    }

    #[test]
    fn a_message_that_does_not_decode_says_what_is_wrong() {
        let mut h = Hash::new();
        h.child("SET").child("0,1,2");
        assert!(
            RecoveryReport::from_bytes(&h.pack())
                .unwrap_err()
                .contains("failure count")
        );
        let mut h = Hash::new();
        h.child("HELD").child("three");
        assert!(
            RecoveryReport::from_bytes(&h.pack())
                .unwrap_err()
                .contains("not a rank")
        );
        assert!(RecoveryReport::from_bytes(b"garbage").is_err());
        let mut h = Hash::new();
        h.set_value("OK", 1);
        h.child("MOVE").child("0").set_value("OWNER", 1);
        match RecoveryPlan::from_bytes(&h.pack()) {
            RecoveryPlan::Impossible(why) => assert!(why.contains("HOLDER"), "{why}"),
            plan => panic!("{plan:?}"),
        }
        assert!(
            PartnerReport::from_bytes(&Hash::new().pack())
                .unwrap_err()
                .contains("NODE")
        );
        let mut h = Hash::new();
        h.child("HEADER").set_value("NOT", "a header");
        assert!(
            MemberDescription::from_bytes(&h.pack())
                .unwrap_err()
                .contains("parity header")
        );
        let none = MemberDescription::from_bytes(&MemberDescription::default().to_bytes()).unwrap();
        assert!(none.header.is_none() && none.reddesc.is_none());
        assert!(
            FetchChoice::from_bytes(&{
                let mut h = Hash::new();
                h.set_value("ID", "twelve");
                h.pack()
            })
            .unwrap_err()
            .contains("not a dataset id")
        );
        assert!(
            TreeDelivery::from_bytes(&{
                let mut h = Hash::new();
                h.child("TASK").child("0").set_value("FILE", "x");
                h.pack()
            })
            .unwrap_err()
            .contains("OFFSET")
        );
    }

    #[test]
    fn a_copy_header_reads_back_as_written_and_an_empty_one_is_a_failed_sender() {
        let mut entry = Hash::new();
        entry.child("FILE").child("/cache/a");
        let header = CopyHeader {
            rank: 3,
            node: "n2".into(),
            entry,
            order: (0..12).map(|i| format!("/cache/f{i}")).collect(),
        };
        assert_eq!(CopyHeader::from_hash(&header.to_hash()).unwrap(), header);
        assert!(
            CopyHeader::from_hash(&Hash::new())
                .unwrap_err()
                .contains("could not read its files")
        );
    }

    #[test]
    fn fetch_messages_read_back_as_written() {
        assert_eq!(
            FetchChoice::from_bytes(&FetchChoice::to_bytes(None)).unwrap(),
            None
        );
        let record = |name: &str| FileRecord {
            name: name.into(),
            size: 12,
            crc: Some(7),
            segments: vec![],
        };
        let mut dataset = Dataset::default();
        dataset.set_totals(2, 24, true);
        let choice = FetchChoice {
            id: 12,
            name: "ckpt.12".into(),
            writers: 2,
            dataset,
            embedded: Some(RankFiles::from([
                (0, vec![record("ckpt.12/a")]),
                (1, vec![record("ckpt.12/b")]),
            ])),
        };
        let back = FetchChoice::from_bytes(&FetchChoice::to_bytes(Some(&choice))).unwrap();
        assert_eq!(back, Some(choice));
        let delivery = TreeDelivery {
            reads: (0..11)
                .map(|n| TreeTask {
                    file: format!("rank2file.{n}"),
                    offset: 3 * n,
                    parent_level: 1,
                })
                .collect(),
            files: Some((5, vec![record("ckpt.1/c")])),
        };
        let back = TreeDelivery::from_bytes(&delivery.to_bytes()).unwrap();
        assert_eq!(back.files, delivery.files);
        // (the order of reads does not matter: each is read once)
        let mut files: Vec<_> = back.reads.iter().map(|t| t.file.clone()).collect();
        files.sort();
        let mut want: Vec<_> = delivery.reads.iter().map(|t| t.file.clone()).collect();
        want.sort();
        assert_eq!(files, want);
    }
}
