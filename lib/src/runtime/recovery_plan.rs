//! The recovery plan rank 0 makes in SCR_Init from every rank's report of what its cache
//! holds: who sends whose files where and which redundancy sets rebuild which members, or
//! why the dataset cannot be recovered. Pure: no collective, no file.

use super::messages::{RecoveryPlan, RecoveryReport, RedundancySet, SetRebuild};
use std::collections::{HashMap, HashSet};

/// Rank 0: from every rank's report, who sends whose files where, which sets rebuild
/// which members, or why the dataset cannot be recovered; a dataset whose files were
/// written straight to the prefix (SCR_CACHE_BYPASS) is not lost when the cache cannot
/// give it back.
pub(super) fn plan_recovery(ranks: u64, reports: &[Vec<u8>]) -> RecoveryPlan {
    let decoded: std::result::Result<Vec<RecoveryReport>, String> = reports
        .iter()
        .enumerate()
        .map(|(r, b)| {
            RecoveryReport::from_bytes(b)
                .map_err(|e| format!("rank {r}'s report could not be read: {e}"))
        })
        .collect();
    let reports = match decoded {
        Ok(reports) => reports,
        Err(why) => return RecoveryPlan::Impossible(why),
    };
    match plan_from_cache(ranks, &reports) {
        RecoveryPlan::Impossible(_) if reports.iter().any(|r| r.in_place) => RecoveryPlan::OnPrefix,
        plan => plan,
    }
}

/// [`plan_recovery`] from what the caches hold.
fn plan_from_cache(ranks: u64, reports: &[RecoveryReport]) -> RecoveryPlan {
    // every set some header described, once; maps instead of scans, so a job of N ranks
    // that all moved plans in O(N), not O(N^2), on rank 0
    let mut sets: Vec<&RedundancySet> = Vec::new();
    let mut known: HashSet<&RedundancySet> = HashSet::new();
    let mut set_of: HashMap<u64, usize> = HashMap::new(); // member -> first set naming it
    for set in reports.iter().flat_map(|r| &r.sets) {
        if known.insert(set) {
            for &member in &set.members {
                set_of.entry(member).or_insert(sets.len());
            }
            sets.push(set);
        }
    }
    // the first rank (in rank order) whose node holds a copy of each rank's files
    let mut holder_of: HashMap<u64, u64> = HashMap::new();
    for (h, report) in reports.iter().enumerate() {
        for &r in &report.held {
            holder_of.entry(r).or_insert(h as u64);
        }
    }
    let mut moves = Vec::new();
    let mut missing = Vec::new();
    for r in 0..ranks {
        if reports.get(r as usize).is_some_and(|x| x.own) {
            continue;
        }
        match holder_of.get(&r) {
            Some(&h) => moves.push((r, h)),
            None => missing.push(r),
        }
    }
    // the sets to rebuild, in the order their first lost member comes
    let mut rebuild: Vec<(usize, Vec<u64>)> = Vec::new();
    let mut rebuild_of: HashMap<usize, usize> = HashMap::new();
    for &m in &missing {
        let Some(&s) = set_of.get(&m) else {
            // a node that kept its cache but not all of a rank's files lost no node
            let report = &reports[m as usize];
            let why = match &report.flaw {
                Some(flaw) if report.unfinished => format!(
                    "rank {m} never completed its part of it ({flaw}), and no redundancy set \
                     can rebuild that part: the dataset is incomplete"
                ),
                Some(flaw) => format!(
                    "rank {m}'s files in its node's cache are not whole ({flaw}), no other \
                     node holds a copy, and no redundancy set can rebuild them"
                ),
                None if report.keeps_others => format!(
                    "rank {m}'s node keeps its other datasets but no record of this one (rank \
                     {m} did not complete it there, or discarded it), and no redundancy set can \
                     rebuild that part: the dataset is incomplete"
                ),
                None => format!(
                    "rank {m}'s files are on no surviving node and no redundancy set can \
                     rebuild them"
                ),
            };
            return RecoveryPlan::Impossible(why);
        };
        let at = *rebuild_of.entry(s).or_insert_with(|| {
            rebuild.push((s, Vec::new()));
            rebuild.len() - 1
        });
        rebuild[at].1.push(m);
    }
    for (s, lost) in &rebuild {
        let k = sets[*s].failures;
        if lost.len() as u64 > k {
            let names: Vec<String> = lost.iter().map(u64::to_string).collect();
            let scheme = if k > 1 {
                "its Reed–Solomon code"
            } else {
                "XOR"
            };
            return RecoveryPlan::Impossible(format!(
                "ranks {} of one redundancy set are all lost; {scheme} rebuilds at most {k}",
                names.join(", ")
            ));
        }
    }
    let rebuilds = rebuild
        .into_iter()
        .map(|(s, lost)| SetRebuild {
            members: sets[s].members.clone(),
            failures: sets[s].failures,
            lost,
        })
        .collect();
    RecoveryPlan::Recover { moves, rebuilds }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank's report: whether its own files are intact, the ranks whose copies its node
    /// holds, the sets its parity headers describe (`(failures, members)`).
    fn report(own: bool, held: &[u64], sets: &[(u64, &[u64])]) -> Vec<u8> {
        RecoveryReport {
            own,
            held: held.to_vec(),
            sets: sets
                .iter()
                .map(|&(failures, members)| RedundancySet {
                    failures,
                    members: members.to_vec(),
                })
                .collect(),
            ..RecoveryReport::default()
        }
        .to_bytes()
    }

    fn recovered(plan: RecoveryPlan) -> (Vec<(u64, u64)>, Vec<SetRebuild>) {
        match plan {
            RecoveryPlan::Recover { moves, rebuilds } => (moves, rebuilds),
            plan => panic!("no plan: {plan:?}"),
        }
    }

    fn impossible(plan: RecoveryPlan) -> String {
        match plan {
            RecoveryPlan::Impossible(why) => why,
            plan => panic!("a plan where none should be: {plan:?}"),
        }
    }

    #[test]
    fn a_held_copy_moves_and_a_lost_set_member_is_rebuilt() {
        let set = (1, &[0, 1, 2, 3][..]);
        // rank 1's copy is held by rank 2's node; rank 3 is gone but its set survives
        let reports = [
            report(true, &[], &[set]),
            report(false, &[], &[]),
            report(true, &[1], &[set]),
            report(false, &[], &[]),
        ];
        let (moves, rebuilds) = recovered(plan_recovery(4, &reports));
        assert_eq!(moves, [(1, 2)]);
        assert_eq!(
            rebuilds,
            [SetRebuild {
                members: vec![0, 1, 2, 3],
                failures: 1,
                lost: vec![3]
            }]
        );
    }

    #[test]
    fn more_lost_members_than_the_code_rebuilds_is_refused_with_the_reason() {
        let set = (1, &[0, 1, 2, 3][..]);
        let reports = [
            report(true, &[], &[set]),
            report(false, &[], &[]),
            report(false, &[], &[]),
            report(true, &[], &[set]),
        ];
        let why = impossible(plan_recovery(4, &reports));
        assert!(
            why.contains("ranks 1, 2") && why.contains("XOR rebuilds at most 1"),
            "{why}"
        );
        // a Reed–Solomon set tolerating two rebuilds both
        let rs = (2, &[0, 1, 2, 3][..]);
        let reports = [
            report(true, &[], &[rs]),
            report(false, &[], &[]),
            report(false, &[], &[]),
            report(true, &[], &[rs]),
        ];
        let (_, rebuilds) = recovered(plan_recovery(4, &reports));
        assert_eq!(
            (rebuilds[0].failures, &rebuilds[0].lost[..]),
            (2, &[1, 2][..])
        );
    }

    #[test]
    fn a_whole_job_restarted_in_another_order_is_planned_rank_by_rank() {
        // 3000 ranks, none where its files are: rank r's copy is held by rank (r + 7) % N,
        // and rank 5's also by rank 2 (the first holder in rank order is the one chosen);
        // rank 11's files are held nowhere, and two sets of 4 cover ranks 8..16
        let n = 3000u64;
        let held_by = |h: u64| -> Vec<u64> {
            let mut held = vec![(h + n - 7) % n];
            held.retain(|&r| r != 11);
            if h == 2 {
                held.push(5);
            }
            held
        };
        let reports: Vec<Vec<u8>> = (0..n)
            .map(|h| {
                let sets: &[(u64, &[u64])] = match h {
                    8 => &[(1, &[8, 9, 10, 11])],
                    12 => &[(1, &[12, 13, 14, 15]), (1, &[8, 9, 10, 11])],
                    _ => &[],
                };
                report(false, &held_by(h), sets)
            })
            .collect();
        let plan = plan_recovery(n, &reports);
        // the plan every rank receives is the one rank 0 made
        assert_eq!(RecoveryPlan::from_bytes(&plan.to_bytes()), plan);
        let (moves, rebuilds) = recovered(plan);
        assert_eq!(moves.len() as u64, n - 1);
        for &(r, h) in &moves {
            let expect = if r == 5 { 2 } else { (r + 7) % n };
            assert_eq!(h, expect, "rank {r}");
        }
        assert_eq!(rebuilds.len(), 1, "one set rebuilds, once");
        assert_eq!(
            (&rebuilds[0].members[..], &rebuilds[0].lost[..]),
            (&[8, 9, 10, 11][..], &[11][..])
        );
    }

    #[test]
    fn a_rank_no_node_holds_and_no_set_covers_cannot_be_recovered() {
        let reports = [report(true, &[], &[]), report(false, &[], &[])];
        let why = impossible(plan_recovery(2, &reports));
        assert!(
            why.contains("rank 1's files are on no surviving node"),
            "{why}"
        );
        // a node that still lists the rank's files, one of them gone, lost no node
        let mut damaged = RecoveryReport::from_bytes(&reports[1]).unwrap();
        damaged.flaw = Some("/cache/rank_1.ckpt: No such file or directory".into());
        let reports = [reports[0].clone(), damaged.to_bytes()];
        let why = impossible(plan_recovery(2, &reports));
        assert!(
            why.starts_with(
                "rank 1's files in its node's cache are not whole (/cache/rank_1.ckpt: No such \
                 file or directory), no other node holds a copy"
            ) && !why.contains("surviving"),
            "{why}"
        );
    }

    #[test]
    fn a_rank_that_kept_its_cache_but_no_part_of_the_dataset_is_not_blamed_on_a_lost_node() {
        let with = |f: &dyn Fn(&mut RecoveryReport)| {
            let mut r = RecoveryReport::default();
            f(&mut r);
            [report(true, &[], &[]), r.to_bytes()]
        };
        // its node records its other datasets, none of this one: it never completed it
        // there (or discarded it), and no node was lost
        let why = impossible(plan_recovery(2, &with(&|r| r.keeps_others = true)));
        assert!(
            why.starts_with("rank 1's node keeps its other datasets but no record of this one")
                && why.ends_with("the dataset is incomplete")
                && !why.contains("surviving"),
            "{why}"
        );
        // its node records the dataset, never completed by it (the job ended in its
        // encoding): said so, not that its files were damaged
        let why = impossible(plan_recovery(
            2,
            &with(&|r| {
                r.unfinished = true;
                r.flaw = Some("/cache/.scr/xor.1_2_of_2.scr was never completed".into());
            }),
        ));
        assert!(
            why.starts_with(
                "rank 1 never completed its part of it (/cache/.scr/xor.1_2_of_2.scr was never \
                 completed)"
            ) && !why.contains("surviving")
                && !why.contains("not whole"),
            "{why}"
        );
    }

    #[test]
    fn a_dataset_written_to_the_prefix_is_not_lost_with_a_cache() {
        // rank 1's node lost its records; rank 0's name files on the prefix (bypass)
        let mut bypassed = RecoveryReport::from_bytes(&report(true, &[], &[])).unwrap();
        bypassed.in_place = true;
        let reports = [bypassed.to_bytes(), report(false, &[], &[])];
        assert_eq!(plan_recovery(2, &reports), RecoveryPlan::OnPrefix);
        // every rank's records there: it restarts in place as from cache
        let reports = [bypassed.to_bytes(), bypassed.to_bytes()];
        recovered(plan_recovery(2, &reports));
    }

    #[test]
    fn a_report_that_does_not_decode_makes_no_plan_and_says_whose() {
        let reports = [report(true, &[], &[]), b"not a report".to_vec()];
        let why = impossible(plan_recovery(2, &reports));
        assert!(why.contains("rank 1's report could not be read"), "{why}");
    }
}
