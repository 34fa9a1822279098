//! Containers on the prefix (SCR_USE_CONTAINERS): a flush packs every rank's files into
//! `ctr.<n>.scr` at offsets agreed across nodes, files crossing container boundaries; a
//! restart with every cache gone reassembles them and verifies every byte; a damaged
//! container is caught by the CRC and the older checkpoint is used.

mod common;

use common::*;
use scr::HashView;

const CONTAINERS: [(&str, &str); 4] = [
    ("SCR_USE_CONTAINERS", "1"),
    // smaller than most files: they span two or more containers
    ("SCR_CONTAINER_SIZE", "7000"),
    ("SCR_FLUSH", "1"),
    ("TEST_API_VARY", "1"),
];

fn containers_of(job: &Job, id: u64) -> Vec<std::path::PathBuf> {
    let dir = scr::layout::dataset_meta_dir(&job.prefix(), id);
    let mut found: Vec<_> = walk(&dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("ctr."))
        })
        .collect();
    // by container number: ctr.10 after ctr.9
    found.sort_by_key(|p| {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        name.trim_start_matches("ctr.")
            .trim_end_matches(".scr")
            .parse::<u64>()
            .unwrap()
    });
    found
}

#[test]
fn a_flush_into_containers_restarts_from_them_with_every_cache_gone() {
    let job = Job::new();
    // ranks round robin over three nodes (n1: 0 and 3, n2: 1 and 4, n3: 2 and 5); with
    // TEST_API_VARY rank r writes r % 3 files ((r + 1) * SIZE / 2 bytes, and an empty
    // one), so some ranks write none
    run_ok_on(&job, "n1,n2,n3", 6, &["20000", "3"], &CONTAINERS);
    // the user files live only in containers
    assert!(!job.prefix().join("ckpt.3").exists());
    let ctrs = containers_of(&job, 3);
    let bytes: u64 = ctrs
        .iter()
        .map(|c| std::fs::metadata(c).unwrap().len())
        .sum();
    // ranks 1, 2, 4, 5 write 20000, 30000, 50000, 60000 header-led bytes: their sum
    let summary =
        scr::summary::Summary::read(&scr::layout::summary_file(&job.prefix(), 3)).unwrap();
    let size = summary
        .dataset()
        .and_then(|d| d.size())
        .expect("dataset size");
    assert_eq!(
        bytes, size,
        "the containers hold exactly the dataset's bytes"
    );
    assert_eq!(ctrs.len() as u64, size.div_ceil(7000), "{ctrs:?}");
    for c in &ctrs[..ctrs.len() - 1] {
        assert_eq!(
            std::fs::metadata(c).unwrap().len(),
            7000,
            "{} is full",
            c.display()
        );
    }
    // each node's files lie together, nodes in order: ranks 0, 3, then 1, 4, then 2, 5
    let map = scr::rank2file::read_tree(
        &job.prefix(),
        &scr::layout::rank2file_root(&job.prefix(), 3),
    )
    .unwrap();
    let start_of = |rank: u64| {
        let seg = &map[&rank].first()?.segments[0];
        let n: u64 = seg
            .container
            .rsplit("ctr.")
            .next()?
            .trim_end_matches(".scr")
            .parse()
            .ok()?;
        Some(n * 7000 + seg.offset)
    };
    let order: Vec<u64> = [0, 3, 1, 4, 2, 5]
        .into_iter()
        .filter(|&r| start_of(r).is_some())
        .collect();
    assert_eq!(order, vec![1, 4, 2, 5], "ranks 0 and 3 write no files");
    let starts: Vec<u64> = order.iter().map(|&r| start_of(r).unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    assert_eq!(starts[0], 0);
    delete_caches(&job);
    let out = run_ok_on(&job, "n1,n2,n3", 6, &["20000", "1"], &CONTAINERS);
    assert!(
        out.contains("restarted from ckpt.3 (timestep 3), data verified"),
        "{out}"
    );
}

#[test]
fn a_damaged_container_is_caught_and_the_older_checkpoint_is_used() {
    let job = Job::new();
    run_ok_on(&job, "n1:2,n2:2", 4, &["20000", "3"], &CONTAINERS);
    let ctrs = containers_of(&job, 3);
    let victim = &ctrs[ctrs.len() / 2];
    let mut bytes = std::fs::read(victim).unwrap();
    bytes[100] ^= 0x55;
    std::fs::write(victim, bytes).unwrap();
    delete_caches(&job);
    let out = run_ok_on(&job, "n1:2,n2:2", 4, &["20000", "0"], &CONTAINERS);
    assert!(out.contains("CRC32"), "the mismatch is reported: {out}");
    assert!(
        out.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{out}"
    );
    assert_eq!(job.index_entry("ckpt.3").failed.len(), 1);
}

#[test]
fn scr_index_add_checks_every_container_segment() {
    let job = Job::new();
    run_ok_on(&job, "n1:2,n2:2", 4, &["20000", "2"], &CONTAINERS);
    let index = |args: &[&str]| {
        let out = std::process::Command::new(scr_command())
            .arg("index")
            .args(args)
            .arg("-p")
            .arg(job.prefix())
            .output()
            .unwrap();
        (out.status.code(), text(&out))
    };
    let (code, out) = index(&["--drop", "ckpt.2"]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = index(&["--add", "ckpt.2"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Added `ckpt.2' to index (complete)"), "{out}");
    assert!(job.index_entry("ckpt.2").complete);
    // the last container cut short: the dataset is indexed, but as incomplete
    let ctrs = containers_of(&job, 2);
    let last = ctrs.last().unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(last)
        .unwrap()
        .set_len(1)
        .unwrap();
    let (code, out) = index(&["--add", "ckpt.2"]);
    assert_eq!(code, Some(1), "{out}");
    let last_name = last.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        out.contains(&last_name) && out.contains("a segment ends at"),
        "{out}"
    );
    assert!(!job.index_entry("ckpt.2").complete);
    let (code, out) = index(&["--add", "ckpt.9"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no dataset named ckpt.9"), "{out}");
}

#[test]
fn a_checkpoint_of_empty_files_flushes_into_containers_and_restarts_from_the_prefix() {
    let job = hist_app_job();
    let env = [
        ("SCR_USE_CONTAINERS", "1"),
        ("SCR_CONTAINER_SIZE", "4096"),
        ("SCR_FLUSH", "1"),
    ];
    // every file empty (checkpoint 1: two files a rank, size class 0): a flush with nothing
    // to pack
    let args = ["init", "restart", "ckpt=1:2:0", "finalize"];
    let out = run_ok_on(&job, "n1,n2", 2, &args, &env);
    assert!(out.contains("hist: ckpt ckpt.1 serial=1 rc=0"), "{out}");
    assert!(!out.contains("ERROR"), "{out}");
    delete_caches(&job);
    let args = ["layout=1:1:2:0:2", "init", "restart", "finalize"];
    let out = run_ok_on(&job, "n1,n2", 2, &args, &env);
    assert!(
        out.contains("hist: attempt ckpt.1 verified=1 rc=0 serials=1"),
        "{out}"
    );
}
