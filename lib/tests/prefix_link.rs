//! A prefix named through a symbolic link: what a job caches belongs to the directory the
//! link named when it ran, and a later job whose link names another directory does not
//! restart it there (its checkpoints would go on in a prefix that never had them).

mod common;

use common::*;

const HOSTS: &str = "n1,n2,n3,n4";

/// SCR_PREFIX names a link to A; a job caches its checkpoints (not flushed); the link is
/// then made to name B. The next job refuses A's cached checkpoints (naming A, and keeping
/// them in cache) instead of restarting them into B; with the link back on A it restarts.
#[test]
fn a_cached_checkpoint_is_not_restarted_into_the_other_directory_a_repointed_prefix_link_names() {
    let job = Job::new();
    let (a, b) = (job.dir.path().join("a"), job.dir.path().join("b"));
    let link = job.dir.path().join("link");
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
    }
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let env = [
        ("SCR_PREFIX", link.to_str().unwrap()),
        ("SCR_COPY_TYPE", "XOR"),
        ("SCR_FLUSH", "0"),
    ];
    let run = |ckpts: &str| {
        job.command(Some(HOSTS), 4, &["4000", ckpts], &env)
            .current_dir(&link)
            .output()
            .unwrap()
    };
    let first = run("2");
    assert!(first.status.success(), "{}", text(&first));
    let cached = job.cached("rank_0.ckpt");
    assert!(!cached.is_empty());

    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&b, &link).unwrap();
    let second = run("1");
    let t = text(&second);
    assert!(!second.status.success(), "{t}");
    assert!(!t.contains("restarted from"), "{t}");
    assert!(
        t.contains("whose prefix is") && t.contains(&a.display().to_string()),
        "names the directory the checkpoints belong to: {t}"
    );
    assert_eq!(job.cached("rank_0.ckpt"), cached, "the cache is intact");
    assert!(!b.join("ckpt.2").exists() && !b.join("ckpt.3").exists());

    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let third = run("0");
    let t = text(&third);
    assert!(third.status.success(), "{t}");
    assert!(
        t.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{t}"
    );
}
