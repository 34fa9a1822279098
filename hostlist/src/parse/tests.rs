use super::*;

fn hosts(s: &str) -> Vec<String> {
    s.parse::<HostList>().unwrap().iter().collect()
}

#[test]
fn expands_like_slurm() {
    assert_eq!(
        hosts("rack[1-2]-node[01-02]"),
        [
            "rack1-node01",
            "rack1-node02",
            "rack2-node01",
            "rack2-node02"
        ]
    );
    assert_eq!(hosts("node[8-011]"), ["node8", "node9", "node10", "node11"]);
    assert_eq!(
        hosts("node[008-11]"),
        ["node008", "node009", "node010", "node011"]
    );
    assert_eq!(hosts("a b,c"), ["a", "b", "c"]);
    assert_eq!(
        hosts("n[3,1],n1"),
        ["n3", "n1", "n1"],
        "a list keeps order and duplicates"
    );
    assert_eq!(
        hosts("rhea[2-4,6].llnl.gov"),
        [
            "rhea2.llnl.gov",
            "rhea3.llnl.gov",
            "rhea4.llnl.gov",
            "rhea6.llnl.gov"
        ]
    );
    assert_eq!(hosts("n[1-9/4]"), ["n1", "n5", "n9"]);
    assert_eq!(hosts(""), Vec::<String>::new());
    assert_eq!(hosts("login"), ["login"]);
}

#[test]
fn padding() {
    for (n, w, s) in [
        (0, 0, "0"),
        (7, 3, "007"),
        (123, 2, "123"),
        (u64::MAX / 10, 0, "1844674407370955161"),
    ] {
        let mut out = String::new();
        push_padded(&mut out, n, w);
        assert_eq!(out, s);
    }
}

#[test]
fn count_and_nth_without_expanding() {
    let l: HostList = "a[0-9999999],b[1-3]".parse().unwrap();
    assert_eq!(l.count(), 10_000_003);
    assert_eq!(l.nth(1).as_deref(), Some("a0"));
    assert_eq!(l.nth(-1).as_deref(), Some("b3"));
    assert_eq!(l.nth(10_000_000).as_deref(), Some("a9999999"));
    assert_eq!(l.nth(0), None);
    assert_eq!(l.nth(-10_000_004), None);
    assert_eq!(l.nth(10_000_004), None);
    assert!(
        l.contains("a9999999") && l.contains("b2") && !l.contains("a10000000") && !l.contains("b")
    );
}

#[test]
fn host_names_from_outside_are_checked_alike() {
    for good in ["node01", "rack1-node.2", "n_1", "localhost"] {
        assert_eq!(check_host_name(good), Ok(()), "{good}");
        assert!(good.parse::<HostList>().is_ok(), "{good}");
    }
    for bad in [
        "", "..", ".", "-n1", "n 1", "n'1", "n;1", "n$x", "a/b", "n\n1", "é",
    ] {
        assert!(check_host_name(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn malformed_input_is_an_error_with_a_column() {
    for (input, column, needle) in [
        ("node[", 5, "never closed"),
        ("node[1-3", 5, "never closed"),
        ("node[3-1]", 6, "backwards"),
        ("node[a-b]", 6, "expected a number"),
        ("node[1,,3]", 8, "empty range"),
        ("node[]", 6, "empty range"),
        ("node[1-3]]", 10, "without a matching"),
        ("a]", 2, "without a matching"),
        ("n[1[2]]", 4, "do not nest"),
        ("n[1-]", 5, "expected a number"),
        ("n[1-5/0]", 7, "step 0"),
        ("n[12345678901234567890]", 3, "digits"),
        ("n\u{7f}", 2, "cannot be part"),
        ("n1,n2';touch /tmp/x;'", 6, "'\\'' cannot be part"),
        ("n$(id)", 2, "'$' cannot be part"),
        ("n`id`", 2, "'`' cannot be part"),
        ("n1;n2", 3, "';' cannot be part"),
        ("-oProxyCommand=x", 1, "cannot start with '-'"),
        ("n1,-n2", 4, "cannot start with '-'"),
        ("n/../x", 2, "'/' cannot be part"),
        ("n1,..", 4, "needs a letter or digit"),
    ] {
        let e = input.parse::<HostList>().unwrap_err();
        assert_eq!(e.column, column, "{input}: {e}");
        assert!(e.to_string().contains(needle), "{input}: {e}");
    }
}
