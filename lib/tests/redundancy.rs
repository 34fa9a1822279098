//! PARTNER and XOR over emulated nodes (real `mpiexec`, hydra's fork launcher, one cache
//! and control directory per node name): losing a node's cache, restarting in another
//! node order, losing too much, and the XOR files themselves.

mod common;

use common::*;
use scr::HashView;
use scr::filemap::Filemap;
use scr::reddesc::Scheme;
use scr::redset::RedundancySets;
use std::path::{Path, PathBuf};

fn hosts(nodes: usize, per_node: usize) -> String {
    (1..=nodes)
        .map(|n| {
            if per_node > 1 {
                format!("n{n}:{per_node}")
            } else {
                format!("n{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes two checkpoints with ranks of differing file counts and sizes (some none, some
/// empty files), loses one node, and restarts with fetching off: the data can only come
/// back through the scheme.
fn lose_one_node_and_rebuild(scheme: &str) {
    // (the last: many pieces a file, in messages of 1000 bytes: test_api's data says where
    // each 8 bytes belong, so a piece misplaced in the transfer or the rebuild fails)
    for (ranks, per_node, size, buf) in [
        (4u32, 1usize, "3000", "4194304"),
        (4, 2, "3000", "4194304"),
        (8, 1, "3000", "4194304"),
        (8, 2, "3000", "4194304"),
        (4, 1, "50000", "1000"),
    ] {
        let job = Job::new();
        let nodes = ranks as usize / per_node;
        let h = hosts(nodes, per_node);
        // RS tolerates 2 lost members where sets are big enough (2 nodes: sets of 2)
        let failures = (nodes - 1).min(2).to_string();
        let env = [
            ("SCR_COPY_TYPE", scheme),
            ("SCR_SET_FAILURES", failures.as_str()),
            ("TEST_API_VARY", "1"),
            ("SCR_FLUSH", "0"),
            ("SCR_FETCH", "0"),
            ("SCR_MPI_BUF_SIZE", buf),
        ];
        run_ok_on(&job, &h, ranks, &[size, "2"], &env);
        lose_node(&job, "n2");
        let out = run_ok_on(&job, &h, ranks, &[size, "1"], &env);
        assert!(
            out.contains("restarted from ckpt.2 (timestep 2), data verified"),
            "{scheme} {ranks} ranks {per_node} per node: {out}"
        );
        assert!(!out.contains("WARNING"), "{out}");
    }
}

/// A recovered checkpoint is protected again without being encoded anew (PARTNER sends
/// only the copies lost with the node, a rebuilt XOR or RS member gets its parity back):
/// losing a second node, before any new checkpoint, is survived too.
#[test]
fn a_recovered_checkpoint_survives_the_loss_of_another_node() {
    for scheme in ["PARTNER", "XOR", "RS"] {
        let job = Job::new();
        let h = "n1,n2,n3,n4";
        let env = [
            ("SCR_COPY_TYPE", scheme),
            ("SCR_SET_FAILURES", "1"),
            ("TEST_API_VARY", "1"),
            ("SCR_FLUSH", "0"),
            ("SCR_FETCH", "0"),
        ];
        run_ok_on(&job, h, 4, &["3000", "2"], &env);
        for lost in ["n2", "n1", "n4"] {
            lose_node(&job, lost);
            let run = job.run_on(Some(h), 4, &["3000", "0"], &env);
            let out = text(&run);
            assert!(
                run.status.success()
                    && out.contains("restarted from ckpt.2 (timestep 2), data verified"),
                "{scheme}, after losing {lost}: {out}"
            );
            assert!(!out.contains("WARNING"), "{out}");
        }
    }
}

#[test]
fn partner_rebuilds_a_lost_node_at_one_and_two_ranks_per_node() {
    lose_one_node_and_rebuild("PARTNER");
}

#[test]
fn xor_rebuilds_a_lost_node_at_one_and_two_ranks_per_node() {
    lose_one_node_and_rebuild("XOR");
}

#[test]
fn reed_solomon_rebuilds_a_lost_node_at_one_and_two_ranks_per_node() {
    lose_one_node_and_rebuild("RS");
}

#[test]
fn reed_solomon_with_two_failures_tolerated_survives_two_lost_nodes() {
    for (ranks, h) in [
        (4u32, "n1,n2,n3,n4"),
        (8, "n1:2,n2:2,n3:2,n4:2"),
        (8, "n1,n2,n3,n4,n5,n6,n7,n8"),
    ] {
        let job = Job::new();
        let env = [
            ("SCR_COPY_TYPE", "RS"),
            ("SCR_SET_FAILURES", "2"),
            ("TEST_API_VARY", "1"),
            ("SCR_FLUSH", "0"),
            ("SCR_FETCH", "0"),
        ];
        run_ok_on(&job, h, ranks, &["3000", "2"], &env);
        lose_node(&job, "n1");
        lose_node(&job, "n3");
        let out = run_ok_on(&job, h, ranks, &["3000", "1"], &env);
        assert!(
            out.contains("restarted from ckpt.2 (timestep 2), data verified"),
            "{ranks} ranks on {h}: {out}"
        );
        // three lost members of a set of four are too many: a clean start (fetch is off)
        if ranks == 4 {
            lose_node(&job, "n1");
            lose_node(&job, "n2");
            lose_node(&job, "n3");
            let out = run_ok_on(&job, h, ranks, &["3000", "1"], &env);
            assert!(
                out.contains("its Reed–Solomon code rebuilds at most 2"),
                "{out}"
            );
            assert!(
                out.contains("no checkpoint, starting from the beginning"),
                "{out}"
            );
        }
    }
}

#[test]
fn ranks_restarted_in_another_node_order_get_their_files_back() {
    for scheme in ["XOR", "PARTNER", "RS"] {
        let job = Job::new();
        let env = [
            ("SCR_COPY_TYPE", scheme),
            ("TEST_API_VARY", "1"),
            ("SCR_FLUSH", "0"),
            ("SCR_FETCH", "0"),
        ];
        run_ok_on(&job, "n1,n2,n3,n4", 8, &["2000", "1"], &env);
        // every rank lands on another node: files move, nothing is lost
        let out = run_ok_on(&job, "n2,n3,n4,n1", 8, &["2000", "0"], &env);
        assert!(out.contains("restarted from ckpt.1"), "{scheme}: {out}");
        // lose a node, and restart in yet another order: moves and a rebuild at once
        lose_node(&job, "n3");
        let out = run_ok_on(&job, "n4,n3,n2,n1", 8, &["2000", "0"], &env);
        assert!(out.contains("restarted from ckpt.1"), "{scheme}: {out}");
        // the restart protected the dataset again where ranks now run: another loss is survived
        lose_node(&job, "n1");
        let out = run_ok_on(&job, "n1,n2,n3,n4", 8, &["2000", "1"], &env);
        assert!(
            out.contains("restarted from ckpt.1 (timestep 1), data verified"),
            "{scheme}: {out}"
        );
        // no copy is left behind: each rank's files once, plus one redundancy copy
        let cached = walk(&job.dir.path().join("cache"));
        let user_files = cached
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "ckpt"));
        let expected = match scheme {
            "PARTNER" => 14, // r % 3 files for r in 0..8, and a partner's copy of each
            _ => 7,          // parity files are .scr
        };
        assert_eq!(user_files.count(), expected, "{scheme}: {cached:#?}");
    }
}

/// After a restart in another node order, what a node still holds of a PARTNER checkpoint
/// for ranks that moved (their own files, sent to them; the copy of a rank whose partner
/// moved) goes once every rank's copy is where its partner runs: the cache holds each
/// rank's file once and one copy of it, and the loss of a node is still survived.
#[test]
fn a_restart_in_another_order_leaves_no_partner_copy_behind() {
    let job = Job::new();
    let env = [
        ("SCR_COPY_TYPE", "PARTNER"),
        ("SCR_FLUSH", "0"),
        ("SCR_FETCH", "0"),
    ];
    run_ok_on(&job, "n1,n2,n3,n4,n5,n6", 6, &["2000", "1"], &env);
    // ranks 1 and 4 trade nodes: n2 keeps rank 1's files and rank 0's copy (rank 0's
    // partner, rank 1, now runs on n5), n5 rank 4's files and rank 3's copy
    let moved = "n1,n5,n3,n4,n2,n6";
    let out = run_ok_on(&job, moved, 6, &["2000", "0"], &env);
    assert!(out.contains("restarted from ckpt.1"), "{out}");
    let cached = walk(&job.dir.path().join("cache"));
    let files = cached
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ckpt"))
        .count();
    assert_eq!(files, 12, "each rank's file and one copy: {cached:#?}");
    lose_node(&job, "n5");
    let out = run_ok_on(&job, moved, 6, &["2000", "1"], &env);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
}

#[test]
fn two_lost_members_of_one_xor_set_fall_back_to_the_flushed_checkpoint() {
    let job = Job::new();
    let env = [("SCR_COPY_TYPE", "XOR"), ("SCR_FLUSH", "2")];
    // ckpt.2 is flushed; ckpt.3 only cached when the job ends without SCR_Finalize
    run_ok_on(
        &job,
        "n1,n2,n3,n4",
        4,
        &["5000", "3"],
        &[env[0], env[1], ("TEST_API_NO_FINALIZE", "1")],
    );
    for r in 0..4 {
        check_file(
            &job.prefix().join(format!("ckpt.2/rank_{r}.ckpt")),
            r,
            2,
            5000,
        );
    }
    assert!(!job.prefix().join("ckpt.3").exists());
    lose_node(&job, "n1");
    lose_node(&job, "n2");
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["5000", "1"], &env);
    assert!(
        out.contains("ranks 0, 1 of one redundancy set are all lost; XOR rebuilds at most 1"),
        "{out}"
    );
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    assert_eq!(
        job.index_entry("ckpt.2").fetched.len(),
        1,
        "came from the prefix"
    );
    assert!(
        job.index_entry("ckpt.3").complete,
        "the new ckpt.3 replaced the lost one"
    );
}

#[test]
fn schemes_the_nodes_cannot_satisfy_are_disabled_with_a_warning() {
    let job = Job::new();
    // every rank on one node: no set can span nodes
    let out = job.run_ok(2, &["1000", "1"], &[("SCR_COPY_TYPE", "XOR")]);
    assert!(out.contains("redundancy is disabled"), "{out}");
    assert!(out.contains("2 ranks on 1 node"), "{out}");
    assert!(out.contains("SINGLE"), "{out}");
    // RS surviving 2 failures needs sets of at least 3
    let out = run_ok_on(&job, "n1,n2", 2, &["1000", "1"], &[("SCR_COPY_TYPE", "RS")]);
    assert!(out.contains("RS needs sets of at least 3 ranks"), "{out}");
    // uneven ranks per node: the third rank of n1 has no partner on another node
    let out = run_ok_on(
        &job,
        "n1:3,n2:2",
        5,
        &["1000", "1"],
        &[("SCR_COPY_TYPE", "PARTNER")],
    );
    assert!(out.contains("redundancy is disabled"), "{out}");
}

fn cached_dataset_dir(job: &Job, node: &str, id: u64) -> PathBuf {
    node_dirs(job, node)[0].join(format!("scr.dataset.{id}"))
}

/// The Reed–Solomon files hold the code's parity (computed here from the cached data with
/// the code's own roles and coefficients), for a set of 5 with 2 parity slots each and
/// pieces much smaller than a chunk, and the CRC SCR_CRC_ON_COPY records is the whole
/// file's, header and both slots in file order.
#[test]
fn reed_solomon_files_hold_the_codes_parity_and_their_crc() {
    let job = Job::new();
    let env = [
        ("SCR_COPY_TYPE", "RS"),
        ("SCR_SET_FAILURES", "2"),
        ("SCR_CRC_ON_COPY", "1"),
        ("TEST_API_VARY", "1"),
        ("SCR_FLUSH", "0"),
        ("SCR_MPI_BUF_SIZE", "1000"), // several pieces per chunk
    ];
    let nodes = ["n1", "n2", "n3", "n4", "n5"];
    run_ok_on(&job, &nodes.join(","), 5, &["7000", "1"], &env);
    let n = nodes.len();
    let code = scr::erasure::StripeCode::reed_solomon(n, 2);
    let (mut logical, mut files) = (Vec::new(), Vec::new());
    let mut chunk = 0u64;
    for (pos, node) in nodes.iter().enumerate() {
        let dir = cached_dataset_dir(&job, node, 1);
        let rs = dir.join(format!(
            ".scr/{}",
            scr::layout::rs_file_name(0, pos as u64, 5)
        ));
        let (header, offset) = scr::xor::XorHeader::read(&rs).unwrap();
        assert_eq!(header.current.rank, pos as u64);
        chunk = header.chunk;
        let bytes = std::fs::read(&rs).unwrap();
        assert_eq!(bytes.len() as u64, offset + 2 * chunk);
        // the recorded CRC is the file's
        let map = scr::filemap::Filemap::read(&node_dirs(&job, node)[1].join("filemap_0.scrinfo"))
            .unwrap();
        let key = rs.to_string_lossy().into_owned();
        let crc = map.meta(1, pos as u64, &key).and_then(|m| m.crc32());
        assert_eq!(crc, Some(scr::io::file_crc32(&rs).unwrap()), "{key}");
        let mut data = Vec::new();
        for meta in &header.current.files {
            data.extend(std::fs::read(dir.join(meta.orig().unwrap())).unwrap());
        }
        logical.push(data);
        files.push((bytes, offset as usize));
    }
    let max = logical.iter().map(Vec::len).max().unwrap() as u64;
    assert_eq!(chunk, max.div_ceil(3), "n - k data chunks per member");
    for l in &mut logical {
        l.resize(3 * chunk as usize, 0);
    }
    let c = chunk as usize;
    for (holder, (bytes, offset)) in files.iter().enumerate() {
        for slot in 0..2 {
            let stripe = code.stripe_held(holder, slot);
            let mut expect = vec![0u8; c];
            for (m, data) in logical.iter().enumerate() {
                if let scr::erasure::Role::Data { chunk: at, index } = code.role(m, stripe) {
                    let weight = code.coefficient(slot, index);
                    scr::erasure::gf::mul_add(&mut expect, &data[at * c..(at + 1) * c], weight);
                }
            }
            let got = &bytes[offset + slot * c..offset + (slot + 1) * c];
            assert!(got == &expect[..], "member {holder}, parity slot {slot}");
        }
    }
}

#[test]
fn xor_files_have_scr_layout_and_correct_parity() {
    let job = Job::new();
    let env = [
        ("SCR_COPY_TYPE", "XOR"),
        ("TEST_API_VARY", "1"),
        ("SCR_FLUSH", "0"),
        ("SCR_MPI_BUF_SIZE", "1000"), // several pieces per chunk
    ];
    run_ok_on(&job, "n1,n2,n3,n4", 4, &["7000", "1"], &env);
    let n = 4usize;
    let mut logical: Vec<Vec<u8>> = Vec::new();
    let mut parity: Vec<Vec<u8>> = Vec::new();
    let mut chunk = 0u64;
    for (pos, node) in ["n1", "n2", "n3", "n4"].iter().enumerate() {
        let dir = cached_dataset_dir(&job, node, 1);
        let xor = dir.join(format!(".scr/xor.0_{}_of_4.scr", pos + 1));
        let (header, offset) = scr::xor::XorHeader::read(&xor).unwrap();
        assert_eq!(header.group, [0, 1, 2, 3]);
        assert_eq!(header.current.rank, pos as u64);
        assert_eq!(header.partner.rank, ((pos + n - 1) % n) as u64);
        assert_eq!(header.ranks, 4);
        assert_eq!(header.dataset.name(), Some("ckpt.1"));
        chunk = header.chunk;
        let bytes = std::fs::read(&xor).unwrap();
        assert_eq!(bytes.len() as u64, offset + chunk);
        parity.push(bytes[offset as usize..].to_vec());
        // the logical file: this rank's files in header order
        let mut data = Vec::new();
        for meta in &header.current.files {
            let f = dir.join(meta.orig().unwrap());
            let content = std::fs::read(&f).unwrap();
            assert_eq!(content.len() as u64, meta.size().unwrap());
            data.extend(content);
        }
        logical.push(data);
    }
    let max = logical.iter().map(Vec::len).max().unwrap() as u64;
    assert_eq!(chunk, max.div_ceil(3), "SCR's chunk rule");
    for l in &mut logical {
        l.resize(3 * chunk as usize, 0);
    }
    for (t, got) in parity.iter().enumerate() {
        let mut expect = vec![0u8; chunk as usize];
        for m in (0..n).filter(|&m| m != t) {
            let c = scr::xor::chunk_for(m, t) * chunk as usize;
            scr::xor::xor_into(&mut expect, &logical[m][c..c + chunk as usize]);
        }
        assert_eq!(got, &expect, "parity of member {t}");
    }
    // the filemap records the XOR file and the set
    let map =
        scr::filemap::Filemap::read(&node_dirs(&job, "n2")[1].join("filemap_0.scrinfo")).unwrap();
    let reddesc = map.reddesc(1, 1).unwrap();
    assert_eq!(reddesc.scheme(), Some(scr::reddesc::Scheme::Xor));
    let pos = reddesc.position().unwrap();
    assert_eq!((pos.group_id, pos.group_size, pos.group_rank), (0, 4, 1));
    assert_eq!(
        map.files(1, 1).len() as u64,
        map.expected_files(1, 1).unwrap()
    );
}

#[test]
fn partner_copies_name_the_owner_node_and_are_not_flushed() {
    let job = Job::new();
    let env = [("SCR_COPY_TYPE", "PARTNER"), ("SCR_FLUSH", "1")];
    run_ok_on(&job, "n1,n2,n3,n4", 4, &["3000", "1"], &env);
    // rank 0 (on n1) has its copy on n2, recorded under rank 0 with the owner's node
    let map =
        scr::filemap::Filemap::read(&node_dirs(&job, "n2")[1].join("filemap_0.scrinfo")).unwrap();
    assert_eq!(map.tag(1, 0, "PARTNER"), Some("n1"));
    let copy = map.files(1, 0);
    assert_eq!(copy.len(), 1);
    assert!(
        Path::new(copy[0]).ends_with(".scr/partner.0/ckpt.1/rank_0.ckpt"),
        "{copy:?}"
    );
    assert_eq!(
        std::fs::read(copy[0]).unwrap(),
        std::fs::read(job.prefix().join("ckpt.1/rank_0.ckpt")).unwrap()
    );
    // the flush wrote each rank's file once, and nothing of the scheme
    let flushed: Vec<PathBuf> = walk(&job.prefix().join("ckpt.1"));
    assert_eq!(flushed.len(), 4, "{flushed:?}");
}

#[test]
fn scr_rebuild_xor_restores_a_member_after_the_files_reach_the_prefix() {
    let job = Job::new();
    let env = [
        ("SCR_COPY_TYPE", "XOR"),
        ("TEST_API_VARY", "1"),
        ("SCR_FLUSH", "0"),
    ];
    run_ok_on(
        &job,
        "n1,n2,n3,n4",
        4,
        &["20000", "1"],
        &[env[0], env[1], env[2], ("TEST_API_NO_FINALIZE", "1")],
    );
    let drained = drain_caches(&job, 4);
    let meta_dir = drained.path().join(".scr/scr.dataset.1");
    // rank 2 (two files, one of them empty) is lost
    let lost: Vec<PathBuf> = walk(drained.path())
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("rank_2.") || name == "xor.0_3_of_4.scr"
        })
        .collect();
    assert_eq!(lost.len(), 3, "{lost:?}");
    let originals: Vec<Vec<u8>> = lost.iter().map(|p| std::fs::read(p).unwrap()).collect();
    for p in &lost {
        std::fs::remove_file(p).unwrap();
    }
    let xor = |i: usize| meta_dir.join(format!("xor.0_{i}_of_4.scr"));
    let out = std::process::Command::new(scr_command())
        .args(["rebuild-xor", "4", "2"])
        .arg(xor(3))
        .args([xor(1), xor(2), xor(4)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for (p, bytes) in lost.iter().zip(&originals) {
        assert_eq!(&std::fs::read(p).unwrap(), bytes, "{} rebuilt", p.display());
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);
    // SCR's name and a wrong member order: a clear failure, exit 1
    let link = drained.path().join("scr_rebuild_xor");
    std::os::unix::fs::symlink(scr_command(), &link).unwrap();
    let out = std::process::Command::new(&link)
        .args(["4", "2"])
        .arg(xor(3))
        .args([xor(1), xor(2)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("3 remaining XOR files"),
        "{}",
        text(&out)
    );
}

/// What a drain gathers from the nodes' caches: every user file under a prefix by its ORIG
/// name, the parity files under `.scr/scr.dataset.1/`.
fn drain_caches(job: &Job, nodes: usize) -> tempfile::TempDir {
    let drained = tempfile::tempdir().unwrap();
    let meta_dir = drained.path().join(".scr/scr.dataset.1");
    std::fs::create_dir_all(&meta_dir).unwrap();
    for node in (1..=nodes).map(|n| format!("n{n}")) {
        let dir = cached_dataset_dir(job, &node, 1);
        for f in walk(&dir) {
            let rel = f.strip_prefix(&dir).unwrap();
            let dst = if rel.starts_with(".scr") {
                meta_dir.join(rel.file_name().unwrap())
            } else {
                drained.path().join(rel)
            };
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::fs::copy(&f, &dst).unwrap();
        }
    }
    drained
}

/// Deletes the drained files of the given ranks and their parity files; returns what
/// they held.
fn delete_members(drained: &Path, ranks: &[usize], parity: &[PathBuf]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut gone = Vec::new();
    for p in walk(drained) {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let is_member = ranks
            .iter()
            .any(|r| name.starts_with(&format!("rank_{r}.")))
            || parity.contains(&p);
        if is_member {
            gone.push((p.clone(), std::fs::read(&p).unwrap()));
            std::fs::remove_file(&p).unwrap();
        }
    }
    gone
}

#[test]
fn scr_rebuild_rs_restores_two_members_after_the_files_reach_the_prefix() {
    let job = Job::new();
    let env = [
        ("SCR_COPY_TYPE", "RS"),
        ("SCR_SET_FAILURES", "2"),
        ("TEST_API_VARY", "1"),
        ("SCR_FLUSH", "0"),
        ("TEST_API_NO_FINALIZE", "1"),
    ];
    run_ok_on(&job, "n1,n2,n3,n4", 4, &["20000", "1"], &env);
    let drained = drain_caches(&job, 4);
    let rs = |i: usize| {
        drained
            .path()
            .join(format!(".scr/scr.dataset.1/rs.0_{i}_of_4.scr"))
    };
    let gone = delete_members(drained.path(), &[1, 2], &[rs(2), rs(3)]);
    assert_eq!(
        gone.len(),
        2 + 3,
        "rank 1: one file, rank 2: two; two RS files"
    );
    let out = std::process::Command::new(scr_command())
        .args(["rebuild-rs", "2"])
        .args([rs(1), rs(2), rs(3), rs(4)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for (p, bytes) in &gone {
        assert_eq!(&std::fs::read(p).unwrap(), bytes, "{} rebuilt", p.display());
    }
    // three missing of four is beyond the code: a clear failure, exit 1
    delete_members(drained.path(), &[0, 1, 2], &[rs(1), rs(2), rs(3)]);
    let out = std::process::Command::new(scr_command())
        .args(["rebuild-rs", "2"])
        .args([rs(1), rs(2), rs(3), rs(4)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("survives 2"), "{}", text(&out));
}

/// Appends lines to the job's system configuration.
fn configure(job: &Job, lines: &str) {
    let path = job.dir.path().join("scr.conf");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(lines);
    std::fs::write(path, text).unwrap();
}

#[test]
fn failure_groups_from_the_configuration_keep_a_set_out_of_one_rack() {
    let racks = "GROUPS=n1 RACK=a\nGROUPS=n2 RACK=a\nGROUPS=n3 RACK=b\nGROUPS=n4 RACK=b\n";
    for (group, survives) in [("RACK", true), ("NODE", false)] {
        let job = Job::new();
        configure(
            &job,
            &format!("{racks}CKPT=0 INTERVAL=1 TYPE=XOR SET_SIZE=2 GROUP={group}\n"),
        );
        let env = [("SCR_FLUSH", "0"), ("SCR_FETCH", "0")];
        run_ok_on(&job, "n1,n2,n3,n4", 4, &["3000", "1"], &env);
        // rack a fails: nodes n1 and n2
        lose_node(&job, "n1");
        lose_node(&job, "n2");
        let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["3000", "0"], &env);
        assert_eq!(
            out.contains("restarted from ckpt.1 (timestep 1), data verified"),
            survives,
            "GROUP={group}: {out}"
        );
    }
}

#[test]
fn partner_replicas_survive_two_neighbouring_lost_nodes() {
    let job = Job::new();
    configure(&job, "CKPT=0 INTERVAL=1 TYPE=PARTNER REPLICAS=2\n");
    let env = [
        ("SCR_FLUSH", "0"),
        ("SCR_FETCH", "0"),
        ("TEST_API_VARY", "1"),
    ];
    run_ok_on(&job, "n1,n2,n3,n4", 4, &["3000", "1"], &env);
    // every rank's files are on its node and the next two
    let copies = walk(&job.dir.path().join("cache"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/partner."))
        .count();
    assert_eq!(
        copies,
        2 * 3,
        "ranks 1 and 2 (one and two files) × 2 replicas: {copies}"
    );
    lose_node(&job, "n2");
    lose_node(&job, "n3");
    let out = run_ok_on(&job, "n1,n2,n3,n4", 4, &["3000", "0"], &env);
    assert!(
        out.contains("restarted from ckpt.1 (timestep 1), data verified"),
        "{out}"
    );
}

/// Each node's rack, as GROUPS= lines give it.
type Racks<'a> = [(&'a str, &'a str)];

/// Every rank chooses its own set without learning the job's node list; what it records
/// (its set's id, size and its place in it, and how many sets there are) is what the
/// whole-job rule (`RedundancySets::select` over every rank's failure group) gives, on
/// nodes with uneven rank counts, for each scheme and for racks from GROUPS= lines; and
/// where the rule finds the layout cannot be protected, the library says the same.
#[test]
fn every_rank_records_the_set_the_whole_job_rule_gives() {
    let hosts = "n1:3,n2:2,n3:3,n4:1,n5:3";
    let ranks = 12u32;
    let nodes = rank_nodes(hosts, ranks);
    // two racks of 6 ranks; the other layout leaves rack a's fifth rank without a peer
    let even = [
        ("n1", "a"),
        ("n2", "a"),
        ("n4", "a"),
        ("n3", "b"),
        ("n5", "b"),
    ];
    let uneven = [
        ("n1", "a"),
        ("n2", "a"),
        ("n3", "b"),
        ("n4", "b"),
        ("n5", "c"),
    ];
    let cases: [(&str, Scheme, u64, u64, Option<&Racks>); 5] = [
        ("TYPE=XOR SET_SIZE=2", Scheme::Xor, 2, 0, None),
        ("TYPE=PARTNER", Scheme::Partner, 8, 0, None),
        (
            "TYPE=RS SET_SIZE=3 SET_FAILURES=2",
            Scheme::ReedSolomon,
            3,
            2,
            None,
        ),
        (
            "TYPE=XOR SET_SIZE=2 GROUP=RACK",
            Scheme::Xor,
            2,
            0,
            Some(&even),
        ),
        (
            "TYPE=XOR SET_SIZE=2 GROUP=RACK",
            Scheme::Xor,
            2,
            0,
            Some(&uneven),
        ),
    ];
    for (line, scheme, set_size, failures, racks) in cases {
        let job = Job::new();
        let rack_lines: String = racks
            .unwrap_or(&[])
            .iter()
            .map(|(n, r)| format!("GROUPS={n} RACK={r}\n"))
            .collect();
        configure(&job, &format!("{rack_lines}CKPT=0 INTERVAL=1 {line}\n"));
        let out = run_ok_on(&job, hosts, ranks, &["2000", "1"], &[("SCR_FLUSH", "0")]);
        let groups: Vec<String> = nodes
            .iter()
            .map(|n| match racks {
                Some(racks) => racks.iter().find(|(m, _)| m == n).unwrap().1.to_string(),
                None => n.clone(),
            })
            .collect();
        let expect = match RedundancySets::select(scheme, &groups, set_size, failures) {
            Ok(sets) => sets,
            Err(why) => {
                assert!(
                    out.contains(&why),
                    "{line} {racks:?}: expected {why:?} in {out}"
                );
                continue;
            }
        };
        assert!(!out.contains("WARNING"), "{line}: {out}");
        let mut local = std::collections::HashMap::new();
        for (rank, node) in nodes.iter().enumerate() {
            let here = local.entry(node.clone()).or_insert(0u64);
            let path = node_dirs(&job, node)[1].join(format!("filemap_{here}.scrinfo"));
            *here += 1;
            let map = Filemap::read(&path).unwrap();
            let reddesc = map
                .reddesc(1, rank as u64)
                .expect("a redundancy descriptor");
            assert_eq!(reddesc.scheme(), Some(scheme), "{line}, rank {rank}");
            assert_eq!(
                reddesc.position().unwrap(),
                expect.position(rank as u64),
                "{line} {racks:?}, rank {rank} on {node}"
            );
        }
    }
}
