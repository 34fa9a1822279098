//! A job that loses a node and has no spare goes on with fewer ranks (beyond SCR: the
//! application restarts on any number of ranks, SCR_RESHAPE=1): scr-run relaunches on the
//! three nodes left with `srun -N3 -n3`, the new job's SCR_Init drains the checkpoint the four
//! ranks left only in cache (the dead node's files rebuilt from XOR) to the prefix, and the
//! three ranks restart it through the restart API, each reading its share of the four ranks'
//! files, every byte checked against its writer.

use super::*;

#[test]
fn a_job_without_a_spare_goes_on_with_fewer_ranks_from_its_cached_checkpoint() {
    let started = Instant::now();
    let c = Cluster::up(4, "reshape");
    let killer = kill_node_after_checkpoint(&c, 4, 3);
    let (out, t) = run(c.scr_run(
        4,
        4,
        &["200000", "8"],
        &[
            ("SCR_FLUSH", "0"),
            ("SCR_COPY_TYPE", "XOR"),
            ("SCR_RUNS", "3"),
            ("SCR_MIN_NODES", "3"),
            ("SCR_RESHAPE", "1"),
            ("TEST_API_SLEEP_MS", "400"),
            ("TEST_API_TIMES", "1"),
        ],
    ));
    killer.join().unwrap();
    assert!(out.status.success(), "{t}");
    assert!(t.contains("node4 is down"), "{t}");
    assert!(
        t.contains("this run starts as srun") && t.contains("-N3 -n3"),
        "scr-run narrowed the run to the nodes left: {t}"
    );
    // the newest checkpoint the first run saw complete, by its own word, was the restart
    let newest = newest_completed(&t);
    assert!(
        t.contains(&format!(
            "test_api: restarted from ckpt.{newest} (timestep {newest}), data verified"
        )),
        "{t}"
    );
    assert!(t.contains("drained to the prefix"), "{t}");
    let read: u32 = t
        .split("test_api: rank ")
        .skip(1)
        .filter_map(|l| {
            let (_, rest) = l.split_once(" read ")?;
            let (n, rest) = rest.split_once(" of the ")?;
            rest.starts_with("4 files 4 ranks wrote")
                .then(|| n.parse::<u32>().ok())?
        })
        .sum();
    assert_eq!(
        read, 4,
        "the three ranks read the four ranks' files between them: {t}"
    );
    assert!(t.contains("test_api: done"), "{t}");
    eprintln!(
        "reshape scenario wall time: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
