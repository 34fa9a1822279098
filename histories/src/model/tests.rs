use super::*;

fn config(scheme: Scheme, flush: u32, prefix_size: u32, cache_size: u32) -> Config {
    Config {
        scheme,
        flush,
        prefix_size,
        cache_size,
        reshape: false,
        flush_async: false,
        containers: false,
    }
}

fn ckpt(size: u32) -> CkptSpec {
    CkptSpec {
        output: false,
        nfiles: 1,
        size,
        bad_rank: None,
    }
}

/// An attempt at `name` whose bytes were checkpoint `serial`'s (when verified).
fn attempt(name: &str, verified: i32, rc: i32) -> Attempt {
    let serial = name.strip_prefix("ckpt.").unwrap().parse().unwrap();
    Attempt {
        name: name.into(),
        verified,
        rc,
        serials: if verified == 1 { vec![serial] } else { vec![] },
    }
}

fn entry(name: &str, valid: bool, current: bool) -> Entry {
    Entry {
        name: name.into(),
        valid,
        current,
    }
}

#[test]
fn the_newest_cached_checkpoint_must_load() {
    let mut m = Model::new(1);
    let cfg = config(Scheme::Xor, 0, 0, 1);
    m.begin_run(4);
    m.checkpoint(&ckpt(100), 4, &cfg, Avail::Yes);
    m.checkpoint(&ckpt(100), 4, &cfg, Avail::Yes);
    m.begin_run(4);
    let c = m.candidates(4, false);
    assert_eq!(c.len(), 1, "cache size 1 keeps only ckpt.2: {c:?}");
    assert_eq!((c[0].serial, c[0].status), (2, Avail::Yes));
    assert!(Model::judge_restart(&c, &[attempt("ckpt.2", 1, 0)], Some("ckpt.2")).is_ok());
    assert!(Model::judge_restart(&c, &[], None).is_err());
}

#[test]
fn a_lost_node_costs_single_its_cache_but_not_xor() {
    for (scheme, left) in [(Scheme::Single, 0), (Scheme::Xor, 1), (Scheme::Partner, 1)] {
        let mut m = Model::new(1);
        m.begin_run(4);
        m.checkpoint(&ckpt(100), 4, &config(scheme, 0, 0, 1), Avail::Yes);
        m.lose_node();
        m.begin_run(4);
        assert_eq!(m.candidates(4, false).len(), left, "{scheme:?}");
    }
}

#[test]
fn rs_must_come_back_from_two_lost_nodes_of_three_and_may_not_from_more() {
    for (writers, lost, status) in [
        (3, 2, Some(Avail::Yes)),
        (3, 3, Some(Avail::Maybe)),
        // two nodes are too few for RS: cached with SINGLE, a lost node loses it
        (2, 1, None),
        (4, 2, Some(Avail::Yes)),
    ] {
        let mut m = Model::new(1);
        m.begin_run(writers);
        m.checkpoint(
            &ckpt(100),
            writers,
            &config(Scheme::Rs, 0, 0, 1),
            Avail::Yes,
        );
        for _ in 0..lost {
            m.lose_node();
        }
        m.begin_run(writers);
        let c = m.candidates(writers, false);
        assert_eq!(c.first().map(|c| c.status), status, "{writers} {lost}");
    }
}

#[test]
fn a_flushed_checkpoint_survives_the_loss_of_its_cache() {
    let mut m = Model::new(1);
    m.begin_run(2);
    m.checkpoint(&ckpt(100), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    m.checkpoint(&ckpt(100), 2, &config(Scheme::Single, 0, 0, 1), Avail::Yes);
    m.lose_node();
    m.begin_run(2);
    let c = m.candidates(2, false);
    assert_eq!(
        c,
        [Candidate {
            serial: 1,
            step: 1,
            status: Avail::Yes,
            may_read_wrong: false,
            may_miss_files: false
        }]
    );
    // restarting the older one is exactly what must happen; ckpt.2 is gone with the node
    assert!(Model::judge_restart(&c, &[attempt("ckpt.2", 1, 0)], Some("ckpt.2")).is_err());
}

#[test]
fn the_prefix_window_deletes_the_oldest_for_certain_only_after_certain_flushes() {
    let mut m = Model::new(1);
    m.begin_run(2);
    for _ in 0..3 {
        m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 2, 1), Avail::Yes);
    }
    let c1 = m.get(1).unwrap();
    assert!(c1.window_deleted && c1.prefix == Avail::No);
    assert!(m.get(2).unwrap().surely_on_prefix());
    let mut m = Model::new(1);
    m.begin_run(2);
    for _ in 0..3 {
        m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 2, 2, 1), Avail::Yes);
    }
    assert!(
        !m.get(1).unwrap().window_deleted,
        "SCR_FLUSH=2: which ones flushed is SCR's count"
    );
}

#[test]
fn a_damaged_prefix_file_sends_the_restart_to_an_older_checkpoint() {
    let mut m = Model::new(1);
    m.begin_run(2);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    m.lose_node();
    m.damage_prefix(2);
    m.begin_run(2);
    let c = m.candidates(2, false);
    assert_eq!(c.iter().map(|c| c.serial).collect::<Vec<_>>(), [1]);
    // wrong bytes handed to the application are never allowed from a CRC-checked fetch
    assert!(Model::judge_restart(&c, &[attempt("ckpt.2", 0, 1)], Some("ckpt.1")).is_err());
}

#[test]
fn a_damaged_cached_file_may_be_read_and_rejected_then_an_older_one_loads() {
    let mut m = Model::new(1);
    m.begin_run(2);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 0, 0, 1), Avail::Yes);
    m.damage_cached(2);
    m.begin_run(2);
    let c = m.candidates(2, false);
    let attempts = [attempt("ckpt.2", 0, 1), attempt("ckpt.1", 1, 0)];
    assert!(Model::judge_restart(&c, &attempts, Some("ckpt.1")).is_ok());
    let (resolved, loaded) = Model::judge_restart(&c, &attempts, Some("ckpt.1")).unwrap();
    m.after_restart(&attempts, &resolved, loaded, 2, Scheme::Partner);
    assert!(m.get(2).unwrap().rejected);
    assert_eq!(
        m.candidates(2, false)[0].serial,
        1,
        "no later run loads a rejected one"
    );
}

#[test]
fn another_size_loads_only_with_reshape() {
    let mut m = Model::new(1);
    m.begin_run(4);
    m.checkpoint(&ckpt(10), 4, &config(Scheme::Partner, 1, 0, 1), Avail::Yes);
    m.begin_run(2);
    assert!(m.candidates(2, false).is_empty());
    assert_eq!(m.candidates(2, true)[0].status, Avail::Yes);
}

#[test]
fn operator_current_bounds_the_restart_and_the_index() {
    let mut m = Model::new(1);
    m.begin_run(2);
    for _ in 0..3 {
        m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    }
    m.set_current(2);
    m.lose_node();
    m.begin_run(2);
    let c = m.candidates(2, false);
    assert_eq!(c[0].serial, 2);
    let e = |n: &str, cur: bool| entry(n, true, cur);
    assert!(
        m.judge_index(&[e("ckpt.3", false), e("ckpt.2", true), e("ckpt.1", false)])
            .is_ok()
    );
    assert!(
        m.judge_index(&[e("ckpt.3", false), e("ckpt.2", false), e("ckpt.1", true)])
            .is_err()
    );
    m.drop_entry(3);
    assert!(
        m.judge_index(&[e("ckpt.3", false), e("ckpt.2", true), e("ckpt.1", false)])
            .is_err()
    );
}

#[test]
fn an_invalid_rank_leaves_the_checkpoint_out_and_the_last_good_one_cached() {
    let mut m = Model::new(1);
    m.begin_run(2);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Xor, 0, 0, 1), Avail::Yes);
    let bad = CkptSpec {
        bad_rank: Some(1),
        ..ckpt(10)
    };
    m.checkpoint(&bad, 2, &config(Scheme::Xor, 0, 0, 1), Avail::Yes);
    m.begin_run(2);
    assert_eq!(m.candidates(2, false)[0].serial, 1);
}

#[test]
fn a_flushed_cached_copy_may_make_room_for_the_next_checkpoint_but_an_unflushed_one_stays() {
    let bad = CkptSpec {
        bad_rank: Some(0),
        ..ckpt(10)
    };
    for (flush, kept) in [(1, Avail::Maybe), (0, Avail::Yes)] {
        let mut m = Model::new(1);
        m.begin_run(2);
        m.checkpoint(&ckpt(10), 2, &config(Scheme::Xor, flush, 0, 1), Avail::Yes);
        m.checkpoint(&bad, 2, &config(Scheme::Xor, flush, 0, 1), Avail::Yes);
        assert_eq!(m.get(1).unwrap().cache, kept, "SCR_FLUSH={flush}");
    }
}

#[test]
fn dropping_the_current_entry_may_leave_none_current_until_the_next_flush() {
    let mut m = Model::new(1);
    m.begin_run(2);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    let valid = |n: &str| entry(n, true, false);
    assert!(m.judge_index(&[valid("ckpt.2"), valid("ckpt.1")]).is_err());
    m.drop_entry(2);
    assert!(m.judge_index(&[valid("ckpt.1")]).is_ok());
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    assert!(m.judge_index(&[valid("ckpt.3"), valid("ckpt.1")]).is_err());
}

#[test]
fn a_damaged_prefix_copy_may_be_offered_at_another_size_and_stays_for_the_writers_size() {
    let mut m = Model::new(1);
    m.begin_run(3);
    m.checkpoint(&ckpt(100), 3, &config(Scheme::Xor, 1, 0, 1), Avail::Yes);
    m.damage_prefix(1);
    m.begin_run(2);
    let c = m.candidates(2, true);
    assert_eq!(
        (c[0].serial, c[0].status, c[0].may_miss_files),
        (1, Avail::Maybe, true)
    );
    let attempts = [attempt("ckpt.1", -1, 1)];
    assert!(Model::judge_restart(&c, &attempts, None).is_ok());
    let (resolved, loaded) = Model::judge_restart(&c, &attempts, None).unwrap();
    m.after_restart(&attempts, &resolved, loaded, 2, Scheme::Partner);
    assert!(!m.get(1).unwrap().rejected);
}

#[test]
fn a_finalize_flush_that_may_have_happened_before_the_operator_s_choice_may_leave_it() {
    let mut m = Model::new(1);
    m.begin_run(2);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
    // a rank killed right after ckpt.2's Complete: its flush may or may not have run
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 0, 1), Avail::Maybe);
    m.set_current(1);
    m.begin_run(2);
    // the restart takes ckpt.2 from cache (before the operator's older choice)
    m.after_restart(
        &[attempt("ckpt.2", 1, 0)],
        &[2],
        Some(2),
        2,
        Scheme::Partner,
    );
    m.finalize(&config(Scheme::Partner, 2, 0, 1));
    let e = |n: &str, cur: bool| entry(n, true, cur);
    for current_is_newest in [false, true] {
        assert!(
            m.judge_index(&[
                e("ckpt.2", current_is_newest),
                e("ckpt.1", !current_is_newest)
            ])
            .is_ok()
        );
    }
    // the operator's choice dropped: none may be current, until a flush surely publishes
    m.drop_entry(1);
    assert!(m.judge_index(&[e("ckpt.2", false)]).is_ok());
    m.finalize(&config(Scheme::Partner, 2, 0, 1));
    assert!(m.judge_index(&[e("ckpt.2", false)]).is_ok());
}

#[test]
fn a_drain_that_may_find_the_newest_flushed_already_may_leave_the_operator_s_choice() {
    let mut m = Model::new(1);
    m.begin_run(3);
    m.checkpoint(&ckpt(10), 3, &config(Scheme::Partner, 1, 0, 1), Avail::Yes);
    // SCR_FLUSH=2: ckpt.2 perhaps flushed by the count, perhaps only cached
    m.checkpoint(&ckpt(10), 3, &config(Scheme::Xor, 2, 0, 1), Avail::Yes);
    m.set_current(1);
    m.drain(0);
    let e = |n: &str, cur: bool| entry(n, true, cur);
    for current_is_newest in [false, true] {
        assert!(
            m.judge_index(&[
                e("ckpt.2", current_is_newest),
                e("ckpt.1", !current_is_newest)
            ])
            .is_ok(),
            "found flushed already, ckpt.2 is not published over the operator's ckpt.1; \
             drained now, it is"
        );
    }
    // a checkpoint surely only in cache is drained and published over the older choice
    let mut m = Model::new(1);
    m.begin_run(3);
    m.checkpoint(&ckpt(10), 3, &config(Scheme::Partner, 1, 0, 1), Avail::Yes);
    m.checkpoint(&ckpt(10), 3, &config(Scheme::Xor, 0, 0, 1), Avail::Yes);
    m.set_current(1);
    m.drain(0);
    assert!(
        m.judge_index(&[e("ckpt.2", false), e("ckpt.1", true)])
            .is_err()
    );
}

#[test]
fn finalize_flushes_again_a_window_deleted_checkpoint_restarted_from_cache() {
    // partner-protected ckpt.1 and single ckpt.2 in cache, the window deleting ckpt.1 from
    // the prefix; a node lost costs ckpt.2, so a run restarts ckpt.1 from cache and its
    // Finalize flushes it again: its files and index entry are back
    let mut m = Model::new(1);
    m.begin_run(2);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Partner, 1, 0, 2), Avail::Yes);
    m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 1, 1, 2), Avail::Yes);
    assert!(m.get(1).unwrap().window_deleted);
    m.lose_node();
    m.drop_entry(2);
    m.begin_run(2);
    let c = m.candidates(2, false);
    let a = [attempt("ckpt.1", 1, 0)];
    let (resolved, loaded) = Model::judge_restart(&c, &a, Some("ckpt.1")).unwrap();
    m.after_restart(&a, &resolved, loaded, 2, Scheme::Rs);
    assert_eq!(
        m.get(2).unwrap().cache,
        Avail::No,
        "single cannot rebuild ckpt.2"
    );
    m.finalize(&config(Scheme::Rs, 1, 0, 1));
    let c1 = m.get(1).unwrap();
    assert!(!c1.window_deleted && c1.surely_on_prefix(), "{c1:?}");
}

#[test]
fn a_smaller_job_leaves_the_old_size_cache_on_nodes_it_does_not_run_on() {
    // 3 ranks on n1-n3 cache ckpt.2 under RS; 2 ranks on n1-n2 drain it, discard their part
    // and write their own ckpt.1 and ckpt.2, the later drained over the first's files; n3's
    // part of the first ckpt.2 rebuilds it for a job of 3 ranks
    let mut m = Model::new(1);
    m.begin_run(3);
    for _ in 0..2 {
        m.checkpoint(&ckpt(10), 3, &config(Scheme::Rs, 3, 0, 1), Avail::Yes);
    }
    m.begin_run(2);
    for _ in 0..2 {
        m.checkpoint(&ckpt(10), 2, &config(Scheme::Single, 0, 0, 1), Avail::Yes);
    }
    assert_ne!(m.get(2).unwrap().cache, Avail::No, "n3 keeps its part");
    m.begin_run(3);
    let c = m.candidates(3, false);
    assert!(c.iter().any(|c| c.serial == 2), "{c:?}");
    assert!(Model::judge_restart(&c, &[attempt("ckpt.2", 1, 0)], Some("ckpt.2")).is_ok());
}

#[test]
fn finalize_flushes_the_older_checkpoint_a_restart_fell_back_to() {
    // ckpt.2's cached file cut short: the restart passes it over for ckpt.1, and the run's
    // Finalize flushes ckpt.1, not the checkpoint the cache no longer holds
    let mut m = Model::new(1);
    m.begin_run(2);
    for _ in 0..2 {
        m.checkpoint(&ckpt(100), 2, &config(Scheme::Single, 0, 0, 2), Avail::Yes);
    }
    m.damage_cached(2);
    m.begin_run(2);
    let c = m.candidates(2, false);
    let a = [attempt("ckpt.1", 1, 0)];
    let (resolved, loaded) = Model::judge_restart(&c, &a, Some("ckpt.1")).unwrap();
    m.after_restart(&a, &resolved, loaded, 2, Scheme::Xor);
    m.finalize(&config(Scheme::Xor, 2, 0, 1));
    assert!(m.get(1).unwrap().surely_on_prefix());
    assert_eq!(m.get(2).unwrap().prefix, Avail::No);
}

#[test]
fn another_size_s_init_drain_may_supersede_an_older_current_the_operator_chose() {
    // SCR_FLUSH=0: ckpt.2 surely only in cache; SCR_FLUSH=3: perhaps flushed, perhaps not
    for flush in [0, 3] {
        let mut m = Model::new(1);
        m.begin_run(3);
        m.checkpoint(&ckpt(10), 3, &config(Scheme::Single, 1, 0, 1), Avail::Yes);
        m.checkpoint(
            &ckpt(10),
            3,
            &config(Scheme::Single, flush, 0, 1),
            Avail::Yes,
        );
        m.set_current(1);
        m.begin_run(3);
        let same_size: Vec<u32> = m.candidates(3, false).iter().map(|c| c.serial).collect();
        assert_eq!(same_size[0], 2, "the newest of all, in cache, comes first");
        m.begin_run(4);
        let reshaped: Vec<u32> = m.candidates(4, true).iter().map(|c| c.serial).collect();
        assert_eq!(
            reshaped,
            [2, 1],
            "the drain may publish ckpt.2 over the chosen ckpt.1"
        );
    }
}

#[test]
fn a_run_that_flushes_may_flush_at_init_what_an_earlier_run_left_in_cache() {
    let mut m = Model::new(1);
    m.begin_run(4);
    m.checkpoint(&ckpt(100), 4, &config(Scheme::Xor, 0, 0, 1), Avail::Yes);
    let unflushed = [entry("ckpt.1", true, true)];
    m.begin_run(4);
    m.init_flush(4, &config(Scheme::Xor, 0, 0, 1));
    assert!(
        m.judge_index(&unflushed).is_err(),
        "a run without SCR_FLUSH flushes nothing at SCR_Init"
    );
    m.begin_run(4);
    m.init_flush(4, &config(Scheme::Partner, 1, 0, 1));
    assert!(
        m.judge_index(&unflushed).is_ok(),
        "{:?}",
        m.judge_index(&unflushed)
    );
    assert!(
        m.judge_index(&[]).is_ok(),
        "nor must it: the flush at SCR_Init is allowed, not promised"
    );
}

/// A run of two ranks under SINGLE with SCR_FLUSH=`flush`, packing flushes into
/// containers or not, that writes one checkpoint.
fn run_writing_one(m: &mut Model, flush: u32, packs: bool) {
    let cfg = Config {
        containers: packs,
        ..config(Scheme::Single, flush, 0, 1)
    };
    m.begin_run(2);
    m.init_flush(2, &cfg);
    m.checkpoint(&ckpt(1000), 2, &cfg, Avail::Yes);
}

#[test]
fn a_name_written_again_replaces_the_older_copy_only_when_neither_is_packed() {
    // ckpt.1 flushed, then a restart from scratch writes ckpt.1 again, flushed too
    let written_twice = |first: bool, second: bool| {
        let mut m = Model::new(1);
        run_writing_one(&mut m, 1, first);
        run_writing_one(&mut m, 1, second);
        let older = m.get(1).unwrap().clone();
        assert_eq!(m.get(2).unwrap().may_be_packed, second);
        older
    };
    // plain over plain: the newer copy's files replace the older one's
    let older = written_twice(false, false);
    assert!(older.prefix_damaged && !older.may_be_packed);
    // packed either way: no file of the older copy need be replaced
    for (first, second) in [(true, false), (false, true), (true, true)] {
        let older = written_twice(first, second);
        assert!(!older.prefix_damaged, "{first} {second}");
        assert_eq!(older.prefix, Avail::Maybe, "{first} {second}");
        assert_eq!(older.may_be_packed, first);
    }
}

#[test]
fn the_drain_writes_plain_files_whatever_the_last_run_packed() {
    let mut m = Model::new(1);
    run_writing_one(&mut m, 0, true);
    m.drain(0);
    let c = m.get(1).unwrap();
    assert_eq!(c.prefix, Avail::Yes);
    assert!(!c.may_be_packed);
}

#[test]
fn files_a_stopped_init_drain_copied_may_let_a_drain_with_a_node_down_complete_it() {
    let mut m = Model::new(1);
    m.begin_run(4);
    m.checkpoint(&ckpt(100), 4, &config(Scheme::Single, 0, 0, 1), Avail::Yes);
    // a 2-rank job's SCR_Init may copy ranks 0 and 1 from n1 and n2, and stops: it cannot
    // complete ckpt.1 from its nodes
    assert!(m.init_may_stop(2));
    m.init_stopped();
    // scr postrun with n1 down: rank 0's file may be on the prefix from that Init already
    m.drain(1);
    assert!(m.judge_index(&[entry("ckpt.1", true, true)]).is_ok());
    assert!(
        m.judge_index(&[]).is_ok(),
        "or the drain may not complete it"
    );
}
