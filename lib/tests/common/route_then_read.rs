//! Running `lib/tests/c/route_then_read.c`: a restart whose ranks route their files, wait
//! while the test changes the prefix, then route them again and read them.

use super::*;

/// `job`'s application becomes route_then_read.
pub fn use_route_then_read(job: &mut Job) {
    job.app = build_c(
        job.dir.path(),
        &workspace().join("lib/tests/c/route_then_read.c"),
        "route_then_read",
    );
}

/// Runs `cmd` (route_then_read, arguments still to add) and, once its ranks routed their
/// files, calls `between`; then lets them route again and read. When the job ends without
/// routing (no restart), `between` is not called. What the job printed.
pub fn route_then_read(dir: &Path, cmd: &mut Command, between: impl FnOnce()) -> String {
    let routed = dir.join("routed");
    let go = dir.join("go");
    let mut child = cmd
        .arg(&routed)
        .arg(&go)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !routed.exists() && child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed().as_secs() < 120,
            "neither routed nor ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if routed.exists() {
        between();
    }
    std::fs::write(&go, b"").unwrap();
    text(&wait_within(child, std::time::Duration::from_secs(180)))
}
