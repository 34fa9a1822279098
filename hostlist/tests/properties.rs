//! Property tests: compress is exact (parse(compress(x)) is the set of x), and counting and
//! indexing a list agree with expanding it.

use hostlist::{HostList, HostSet};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn name() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["n", "node", "rack1-n", "a", "x.y", "login"]),
        prop::option::of((0u64..2000, 0usize..5)),
        prop::sample::select(vec!["", "", ".gov", "-ib0", "b"]),
    )
        .prop_map(|(p, num, s)| match num {
            Some((n, pad)) => format!("{p}{n:0pad$}{s}"),
            None => format!("{p}{s}"),
        })
}

fn expression() -> impl Strategy<Value = String> {
    let range = (0u64..50, 0u64..20, 1usize..4).prop_map(|(lo, len, pad)| {
        if len == 0 {
            format!("{lo:0pad$}")
        } else {
            format!("{lo:0pad$}-{:0pad$}", lo + len)
        }
    });
    let bracket = prop::collection::vec(range, 1..4).prop_map(|rs| format!("[{}]", rs.join(",")));
    let term = (
        prop::sample::select(vec!["n", "r", "cn-", "a1b"]),
        bracket.clone(),
        prop::option::of(bracket),
        prop::sample::select(vec!["", ".x", "-ib"]),
    )
        .prop_map(|(p, b1, b2, s)| match b2 {
            Some(b2) => format!("{p}{b1}-m{b2}{s}"),
            None => format!("{p}{b1}{s}"),
        });
    prop::collection::vec(term, 1..4).prop_map(|ts| ts.join(","))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn compress_then_parse_is_the_set(names in prop::collection::vec(name(), 0..60)) {
        let mut set = HostSet::new();
        for n in &names {
            set.insert(n);
        }
        let folded = set.to_string();
        let back: HostSet = folded.parse().unwrap();
        prop_assert_eq!(&back, &set, "{}", folded);
        let expected: BTreeSet<&String> = names.iter().collect();
        let got: BTreeSet<String> = back.iter().collect();
        prop_assert_eq!(got.len(), expected.len());
        prop_assert!(expected.iter().all(|n| got.contains(*n)));
        prop_assert_eq!(back.count() as usize, expected.len());
    }

    #[test]
    fn list_count_nth_and_expansion_agree(expr in expression()) {
        let list: HostList = expr.parse().unwrap();
        let hosts: Vec<String> = list.iter().collect();
        prop_assert_eq!(list.count() as usize, hosts.len());
        for (i, h) in hosts.iter().enumerate().step_by(7) {
            prop_assert_eq!(list.nth(i as i64 + 1), Some(h.clone()));
            prop_assert_eq!(list.nth(i as i64 - hosts.len() as i64), Some(h.clone()));
        }
        // the set of a list built by ranges equals the set built host by host
        let by_host = HostSet::from_names(hosts.iter().map(String::as_str));
        prop_assert_eq!(list.to_set().unwrap(), by_host);
    }

    #[test]
    fn set_algebra_matches_btreesets(a in prop::collection::vec(name(), 0..30), b in prop::collection::vec(name(), 0..30)) {
        let (sa, sb): (HostSet, HostSet) = (a.join(",").parse().unwrap(), b.join(",").parse().unwrap());
        let (ba, bb): (BTreeSet<String>, BTreeSet<String>) = (a.into_iter().collect(), b.into_iter().collect());
        let as_set = |s: HostSet| s.iter().collect::<BTreeSet<String>>();
        prop_assert_eq!(as_set(sa.union(&sb)), ba.union(&bb).cloned().collect::<BTreeSet<_>>());
        prop_assert_eq!(as_set(sa.intersection(&sb)), ba.intersection(&bb).cloned().collect::<BTreeSet<_>>());
        prop_assert_eq!(as_set(sa.difference(&sb)), ba.difference(&bb).cloned().collect::<BTreeSet<_>>());
        prop_assert_eq!(as_set(sa.symmetric_difference(&sb)), ba.symmetric_difference(&bb).cloned().collect::<BTreeSet<_>>());
    }
}
