use super::*;

fn fold(s: &str) -> String {
    s.parse::<HostSet>().unwrap().to_string()
}

#[test]
fn several_brackets_cannot_escape_the_host_limit() {
    let started = std::time::Instant::now();
    let e = "n[1-9]x[1-9999999]y[1-9999999]"
        .parse::<HostSet>()
        .unwrap_err();
    assert!(e.to_string().contains("must be expanded one by one"), "{e}");
    assert!(started.elapsed().as_secs() < 2, "refused at once");
    // a realistic two-level list is still fine
    let s: HostSet = "rack[1-4]-node[001-128]".parse().unwrap();
    assert_eq!(s.count(), 512);
}

#[test]
fn compresses_like_clustershell_nodeset() {
    // each pair was checked against `nodeset -f` (ClusterShell 1.9)
    for (input, folded) in [
        ("b1,a2,a1", "a[1-2],b1"),
        ("node08,node09,node10,node100", "node[08-10,100]"),
        ("node1-ib0,node2-ib0", "node[1-2]-ib0"),
        ("login,node1,node2,admin", "admin,login,node[1-2]"),
        ("n[1-9/2]", "n[1,3,5,7,9]"),
        ("n1.x,n2.x,m3", "m3,n[1-2].x"),
        ("rhea[2-4,6].llnl.gov", "rhea[2-4,6].llnl.gov"),
        ("n5,n005,n05", "n[5,05,005]"),
        ("a1,a", "a,a1"),
        ("node[01-02],node[1-2]", "node[1-2,01-02]"),
        ("x[9-10]", "x[9-10]"),
        ("rack[1-2]-node[01-04]", "rack[1-2]-node[01-04]"),
        ("n1,n3,n2,n2", "n[1-3]"),
        ("n1,n2,n05,n10,n11,n12", "n[1-2,05,10-12]"),
        ("n05,n10,n100,n0100", "n[05,10,100,0100]"),
        ("n05,n006,n10,n100", "n[05,10,006,100]"),
        ("n9,n10", "n[9-10]"),
        ("n09,n10,n11", "n[09-11]"),
        ("n10,n11,n012", "n[10-11,012]"),
        ("n0,n00,n1", "n[0-1,00]"),
        ("a1b2,a1b3,a2b2,a2b3", "a[1-2]b[2-3]"),
        ("a1b2,a1b3,a2b2", "a1b[2-3],a2b2"),
        ("x1y1,x2y2", "x1y1,x2y2"),
        ("n01,n1", "n[1,01]"),
        ("node[008-011]", "node[008-011]"),
    ] {
        assert_eq!(fold(input), folded, "{input}");
    }
}

#[test]
fn set_operations() {
    let a: HostSet = "n[1-5],login".parse().unwrap();
    let b: HostSet = "n[4-8]".parse().unwrap();
    assert_eq!(a.difference(&b).to_string(), "login,n[1-3]");
    assert_eq!(a.intersection(&b).to_string(), "n[4-5]");
    assert_eq!(a.union(&b).to_string(), "login,n[1-8]");
    assert_eq!(a.symmetric_difference(&b).to_string(), "login,n[1-3,6-8]");
    assert!(a.contains("n3") && !a.contains("n03") && a.contains("login"));
}

#[test]
fn fast_path_and_host_by_host_agree() {
    for input in [
        "rack[1-3]-n[08-12].x",
        "a[1-2]b[3-4]c",
        "n[1-3]-ib0",
        "n0[1-3]",
        "n[1-2][3-4]",
        "n[98-102,7]",
    ] {
        let fast: HostSet = input.parse().unwrap();
        let hosts: Vec<String> = input.parse::<HostList>().unwrap().iter().collect();
        let slow = HostSet::from_names(hosts.iter().map(String::as_str));
        let mut one_by_one = HostSet::new();
        for h in &hosts {
            one_by_one.insert(h);
        }
        assert_eq!(slow, one_by_one, "{input}");
        assert_eq!(fast, slow, "{input}");
        assert_eq!(fast.iter().count() as u64, fast.count());
    }
}

#[test]
fn per_host_terms_are_bounded() {
    assert!(
        "n0[0-99999999999]"
            .parse::<HostSet>()
            .unwrap_err()
            .to_string()
            .contains("inside the brackets")
    );
    assert!("n[0-99999999999/2]".parse::<HostSet>().is_err());
    assert_eq!(
        "n0[1-3]".parse::<HostSet>().unwrap().to_string(),
        "n[01-03]"
    );
}

#[test]
fn ten_million_hosts_stay_small() {
    let big: HostSet = "n[0-9999999]".parse().unwrap();
    let other: HostSet = "n[5000000-14999999]".parse().unwrap();
    assert_eq!(big.count(), 10_000_000);
    assert_eq!(big.intersection(&other).to_string(), "n[5000000-9999999]");
    assert_eq!(big.difference(&other).count(), 5_000_000);
    assert_eq!(big.to_string(), "n[0-9999999]");
}
