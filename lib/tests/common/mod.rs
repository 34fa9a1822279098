//! What every MPI test shares: building C programs against the freshly built libscr, and
//! a job directory (prefix, cache, control) to run them in with real `mpiexec`.
#![allow(dead_code)]

pub mod install;
pub mod neighbour;
pub mod route_then_read;
pub mod scr_run;

use scr::HashView;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds test_api against the freshly built libscr (named libscr.so in `dir`).
pub fn build_app(dir: &Path) -> PathBuf {
    build_c(dir, &workspace().join("examples/c/test_api.c"), "test_api")
}

/// The library artifact, rebuilt first: `cargo test` builds the rlib it links into tests
/// but not the shared and static libraries C programs link.
pub fn library(file: &str) -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    built(&BUILT, &["-p", "scr-runtime", "--lib"], file, None)
}

/// The library artifact built against Open MPI whatever this test run's MPI: in its own
/// target directory (`target/openmpi`), binding the MPI that `mpicc.openmpi` wraps.
pub fn open_mpi_library(file: &str) -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    let target = workspace().join("target/openmpi");
    built(
        &BUILT,
        &["-p", "scr-runtime", "--lib"],
        file,
        Some(("mpicc.openmpi", &target)),
    )
}

/// The `scr` command, built first (it belongs to another package of the workspace).
pub fn scr_command() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    built(&BUILT, &["-p", "scr-launcher"], "scr", None)
}

/// Waits for `child` (its output piped) at most `limit`: a call that should end but hangs
/// fails the test, the child killed, instead of blocking it forever.
pub fn wait_within(mut child: std::process::Child, limit: std::time::Duration) -> Output {
    use std::io::Read;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            // (the pipes are not read to their end: a process the child started may hold
            // them open long after)
            let _ = child.kill();
            let _ = child.wait();
            panic!("did not end within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs `cmd` and waits at most `limit` for it (see [`wait_within`]).
pub fn output_within(cmd: &mut Command, limit: std::time::Duration) -> Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_within(child, limit)
}

/// When a file was created and when it was last written, in seconds since the epoch (the
/// file system's own record, not anything SCR says about it).
pub fn write_interval(path: &Path) -> (f64, f64) {
    let m = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let secs = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let born = m
        .created()
        .unwrap_or_else(|e| panic!("{}: no birth time on this file system: {e}", path.display()));
    (secs(born), secs(m.modified().unwrap()))
}

/// Asserts that the files were written one after another in the order given, none while
/// another was being written.
pub fn assert_written_one_at_a_time(files: &[PathBuf]) {
    let spans: Vec<(f64, f64)> = files.iter().map(|f| write_interval(f)).collect();
    for (i, pair) in spans.windows(2).enumerate() {
        assert!(
            pair[0].1 <= pair[1].0,
            "{} was still written ({:.6}) when {} was created ({:.6}): {spans:?}",
            files[i].display(),
            pair[0].1,
            files[i + 1].display(),
            pair[1].0
        );
    }
}

/// When test_api's checkpoint `t` returned (its TEST_API_TIMES line), in seconds since the
/// epoch.
pub fn checkpoint_ended_at(out: &str, t: u64) -> f64 {
    let line = format!("test_api: checkpoint {t} ended at ");
    out.lines()
        .find_map(|l| l.strip_prefix(&line)?.parse().ok())
        .unwrap_or_else(|| panic!("no end time of checkpoint {t}: {out}"))
}

/// The Rust example program `name` (lib/examples), built first.
pub fn rust_example(name: &str) -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    built(
        &BUILT,
        &["-p", "scr-runtime", "--example", name],
        &format!("examples/{name}"),
        None,
    )
}

/// Where the tests build the artifacts they run (the library C programs link, the `scr`
/// command, examples): a target directory of their own. A `cargo build -p …` resolves
/// features apart from the test build, and in the workspace's own target directory it
/// would put its artifacts in place of the test build's (and back) while other tests run
/// them: one exec in that moment finds no file.
pub fn tests_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
        .join("for-tests")
}

/// Runs `cargo build <what>` once per test process (in the profile the tests run in) and
/// returns the path of `file` among its outputs; `mpi` names an MPI compiler wrapper and a
/// target directory to build against another MPI than the run's.
fn built(once: &std::sync::Once, what: &[&str], file: &str, mpi: Option<(&str, &Path)>) -> PathBuf {
    let release = !cfg!(debug_assertions);
    let target = match mpi {
        Some((_, dir)) => dir.to_path_buf(),
        None => tests_target_dir(),
    };
    once.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet"])
            .args(what)
            .current_dir(workspace())
            .env("CARGO_TARGET_DIR", &target);
        if let Some((mpicc, _)) = mpi {
            cmd.env("MPICC", mpicc);
        }
        if release {
            cmd.arg("--release");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "cargo build {}: {}",
            what.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    });
    target
        .join(if release { "release" } else { "debug" })
        .join(file)
}

/// Makes `dir/libscr.so` the freshly built library, so `-L dir -lscr` links it.
pub fn link_library_into(dir: &Path) {
    let lib = library("libscr_runtime.so");
    assert!(
        lib.exists(),
        "{} missing: build the workspace first",
        lib.display()
    );
    if !dir.join("libscr.so").exists() {
        std::os::unix::fs::symlink(&lib, dir.join("libscr.so")).unwrap();
    }
}

pub fn build_c(dir: &Path, source: &Path, exe: &str) -> PathBuf {
    build_with(Mpi::current().cc(), dir, source, exe)
}

/// The MPI the tests run under: MPICH (hydra's `mpiexec`), the default, or Open MPI with
/// `SCR_TEST_MPI=openmpi` (then the test run also sets `MPICC=mpicc.openmpi` and its own
/// `CARGO_TARGET_DIR`, so libscr is built against Open MPI; see scripts/test.sh).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mpi {
    Mpich,
    OpenMpi,
}

impl Mpi {
    pub fn current() -> Mpi {
        match std::env::var("SCR_TEST_MPI").as_deref() {
            Ok("openmpi") => Mpi::OpenMpi,
            Ok("mpich") | Err(_) => Mpi::Mpich,
            Ok(other) => panic!("SCR_TEST_MPI={other}: expected mpich or openmpi"),
        }
    }

    /// The C compiler wrapper.
    pub fn cc(self) -> &'static str {
        match self {
            Mpi::Mpich => "mpicc",
            Mpi::OpenMpi => "mpicc.openmpi",
        }
    }

    /// The Fortran compiler wrapper.
    pub fn fortran(self) -> &'static str {
        match self {
            Mpi::Mpich => "mpif90",
            Mpi::OpenMpi => "mpif90.openmpi",
        }
    }

    /// A job of `ranks` ranks of `app args`, killed after `timeout` seconds. `hosts` names
    /// emulated nodes as hydra takes them (`n1,n2` places ranks round robin, `n1:2,n2:2`
    /// two consecutive ranks per node): hydra's fork launcher under MPICH; under Open MPI,
    /// one application context per run of ranks on a node, each told its node through
    /// SCR_NODE_NAME (Open MPI would try to reach a named host).
    pub fn launch(
        self,
        hosts: Option<&str>,
        ranks: u32,
        timeout: u32,
        app: &Path,
        args: &[&str],
    ) -> Command {
        match self {
            Mpi::Mpich => {
                let mut cmd = Command::new("mpiexec");
                if let Some(h) = hosts {
                    cmd.args(["-launcher", "fork", "-hosts", h]);
                }
                cmd.args(["-n", &ranks.to_string()])
                    .arg(app)
                    .args(args)
                    .env("MPIEXEC_TIMEOUT", timeout.to_string());
                cmd
            }
            Mpi::OpenMpi => {
                let mut cmd = Command::new("mpirun.openmpi");
                cmd.args(["--oversubscribe", "--timeout", &timeout.to_string()])
                    // containers forbid the cross-memory attach shared memory uses by default
                    .args(["--mca", "btl_vader_single_copy_mechanism", "none"])
                    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
                match hosts {
                    None => {
                        cmd.args(["-np", &ranks.to_string()]).arg(app).args(args);
                    }
                    Some(h) => {
                        let nodes = rank_nodes(h, ranks);
                        let mut i = 0;
                        while i < nodes.len() {
                            let run = nodes[i..].iter().take_while(|n| **n == nodes[i]).count();
                            if i > 0 {
                                cmd.arg(":");
                            }
                            cmd.args(["-np", &run.to_string()])
                                .args(["-x", &format!("SCR_NODE_NAME={}", nodes[i])])
                                .arg(app)
                                .args(args);
                            i += run;
                        }
                    }
                }
                cmd
            }
        }
    }
}

/// The node of each rank for a hydra host list: `n1,n2` one slot each, `n1:2` two; ranks
/// fill the slots in order and wrap around.
pub fn rank_nodes(hosts: &str, ranks: u32) -> Vec<String> {
    let slots: Vec<String> = hosts
        .split(',')
        .flat_map(|h| {
            let (name, count) = h.split_once(':').unwrap_or((h, "1"));
            std::iter::repeat_n(name.to_string(), count.parse().expect("host:count"))
        })
        .collect();
    (0..ranks as usize)
        .map(|r| slots[r % slots.len()].clone())
        .collect()
}

/// Compiles and links `source` with an MPI compiler wrapper against libscr.
pub fn build_with(compiler: &str, dir: &Path, source: &Path, exe: &str) -> PathBuf {
    link_library_into(dir);
    let app = dir.join(exe);
    let out = Command::new(compiler)
        .arg(source)
        .arg("-I")
        .arg(workspace().join("lib/include"))
        .arg(format!("-L{}", dir.display()))
        .arg("-lscr")
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-o")
        .arg(&app)
        .output()
        .expect("mpicc must be installed (scripts/setup.sh installs libmpich-dev)");
    assert!(
        out.status.success(),
        "mpicc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    app
}

pub struct Job {
    pub dir: tempfile::TempDir,
    pub app: PathBuf,
}

impl Job {
    pub fn new() -> Job {
        let dir = tempfile::tempdir().unwrap();
        let app = build_app(dir.path());
        for d in ["prefix", "cache", "cntl"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        std::fs::write(
            dir.path().join("scr.conf"),
            format!("SCR_CNTL_BASE={}\n", dir.path().join("cntl").display()),
        )
        .unwrap();
        Job { dir, app }
    }

    /// A job whose application is `lib/tests/c/<source>`, built against our libscr.
    pub fn with_c_program(source: &str) -> Job {
        let job = Job::new();
        let exe = source.trim_end_matches(".c");
        let app = build_c(
            job.dir.path(),
            &workspace().join("lib/tests/c").join(source),
            exe,
        );
        Job { app, ..job }
    }

    pub fn prefix(&self) -> PathBuf {
        self.dir.path().join("prefix")
    }

    /// Runs the job, asserts it succeeded, and returns what it printed.
    pub fn run_ok(&self, ranks: u32, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = self.run(ranks, args, env);
        let t = text(&out);
        assert!(out.status.success(), "{t}");
        t
    }

    /// Runs the job on `hosts` (as [`Job::run_on`]) under `umask`, as a shell would start
    /// it; asserts it succeeded and returns what it printed.
    pub fn run_ok_under_umask(
        &self,
        umask: &str,
        hosts: Option<&str>,
        ranks: u32,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> String {
        let o = under_umask(umask, &self.command(hosts, ranks, args, env))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        text(&o)
    }

    /// The prefix's index, which must read.
    pub fn index(&self) -> scr::index::IndexFile {
        scr::index::IndexFile::read(&scr::layout::index_file(&self.prefix())).unwrap()
    }

    pub fn index_entry(&self, name: &str) -> scr::index::IndexEntry {
        self.index()
            .entries()
            .into_iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name} not in the index"))
    }

    /// Cached files whose path ends in `name`.
    pub fn cached(&self, name: &str) -> Vec<PathBuf> {
        walk(&self.dir.path().join("cache"))
            .into_iter()
            .filter(|p| p.ends_with(name))
            .collect()
    }

    pub fn run(&self, ranks: u32, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_on(None, ranks, args, env)
    }

    /// Runs on emulated nodes: `hosts` as hydra takes it (`n1,n2` places ranks round
    /// robin, `n1:2,n2:2` two consecutive ranks per node); each rank's node name is its host.
    pub fn run_on(
        &self,
        hosts: Option<&str>,
        ranks: u32,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Output {
        self.command(hosts, ranks, args, env)
            .output()
            .expect("the MPI launcher must be installed (scripts/setup.sh installs it)")
    }

    /// The launch [`Job::run_on`] runs, in the job's directories, for a test to adjust.
    pub fn command(
        &self,
        hosts: Option<&str>,
        ranks: u32,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Command {
        let mut cmd = Mpi::current().launch(hosts, ranks, 120, &self.app, args);
        cmd.current_dir(self.prefix())
            .env("SCR_SYSTEM_CONF_FILE", self.dir.path().join("scr.conf"))
            .env("SCR_CACHE_BASE", self.dir.path().join("cache"))
            .env("SCR_PREFIX", self.prefix())
            .env("SCR_JOB_ID", "4242")
            .env_remove("SCR_CONF_FILE");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }
}

/// `cmd` run under `umask`, as a shell would start it (in its directory, with its
/// environment).
pub fn under_umask(umask: &str, cmd: &Command) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh
}

/// Whether process `pid` is there and not a zombie left for whoever reaps orphans.
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // the state follows the command name's closing parenthesis (the name may hold any)
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Byte `i` of the data of file `k` of rank `rank` at timestep `t`, as test_api writes it
/// (examples/c/test_api.c): every 8 bytes of a checkpoint say where they belong.
pub fn pattern(rank: usize, k: usize, t: i64, i: usize) -> u8 {
    let w = ((t as u64) << 56) ^ ((rank as u64) << 40) ^ ((k as u64) << 32) ^ (i as u64 / 8);
    (w >> (8 * (i % 8))) as u8
}

/// Checks rank `rank`'s (first) file of timestep `t`: its header and `size` bytes of data,
/// each where test_api put it.
pub fn check_file(path: &Path, rank: usize, t: i64, size: usize) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(bytes.len(), 8 + size, "{}", path.display());
    assert_eq!(i64::from_ne_bytes(bytes[..8].try_into().unwrap()), t);
    for (i, b) in bytes[8..].iter().enumerate() {
        assert_eq!(*b, pattern(rank, 0, t, i), "{} byte {i}", path.display());
    }
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p))
        } else {
            out.push(p)
        }
    }
    out
}

pub fn delete_caches(job: &Job) {
    for d in ["cache", "cntl"] {
        std::fs::remove_dir_all(job.dir.path().join(d)).unwrap();
        std::fs::create_dir(job.dir.path().join(d)).unwrap();
    }
}

/// The job id `Job::run` gives the library.
pub const JOB_ID: &str = "4242";

/// `scr` as a command for the job's emulated nodes n1–n4: the job's configuration, cache
/// base and job id, and nothing from the caller's environment that would name another job,
/// configuration or excluded node.
pub fn scr_for(job: &Job) -> Command {
    let mut cmd = Command::new(scr_command());
    cmd.env("SCR_SYSTEM_CONF_FILE", job.dir.path().join("scr.conf"))
        .env("SCR_CACHE_BASE", job.dir.path().join("cache"))
        .env("SCR_JOB_ID", JOB_ID)
        .env("SCR_NODELIST", "n[1-4]")
        .env_remove("SCR_CONF_FILE")
        .env_remove("SLURM_JOBID")
        .env_remove("SLURM_JOB_ID")
        .env_remove("SCR_EXCLUDE_NODES");
    cmd
}

pub fn user() -> String {
    scr::layout::user_name()
}

/// A node's cache and control directories, as the library names emulated nodes.
pub fn node_dirs(job: &Job, node: &str) -> [PathBuf; 2] {
    ["cache", "cntl"].map(|d| {
        job.dir
            .path()
            .join(format!("{d}/{}/scr.{JOB_ID}/node.{node}", user()))
    })
}

/// Flips the byte at `offset` of a file, in place (same size: only a CRC can tell).
pub fn flip_byte(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes[offset] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

/// Loses a node: everything in its cache and control directory is gone.
pub fn lose_node(job: &Job, node: &str) {
    for d in node_dirs(job, node) {
        assert!(d.is_dir(), "{} should exist before losing it", d.display());
        std::fs::remove_dir_all(&d).unwrap();
    }
}

/// Runs on emulated nodes and asserts success.
pub fn run_ok_on(
    job: &Job,
    hosts: &str,
    ranks: u32,
    args: &[&str],
    env: &[(&str, &str)],
) -> String {
    let out = job.run_on(Some(hosts), ranks, args, env);
    let t = text(&out);
    assert!(out.status.success(), "{hosts}: {t}");
    t
}

/// A small tmpfs mounted over a directory for the test (root only), unmounted when dropped:
/// a file system that fills up.
pub struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    pub fn mount(dir: &std::path::Path, bytes: usize) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes},mode=0700")])
            .arg("tmpfs")
            .arg(dir)
            .status()
            .expect("mount(8) runs");
        assert!(
            status.success(),
            "mounting a {bytes}-byte tmpfs on {} failed: this test needs root (CI runs as root)",
            dir.display()
        );
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A job whose application is the user guide suite's driver of SCR's C API
/// (`lib/tests/c/guide_steps.c`: one step per argument; see its head).
/// A job of the history checker's application (`histories/app/hist_app.c`): each step
/// names a dataset's layout, and a restart checks every byte of every file routed to it.
pub fn hist_app_job() -> Job {
    let job = Job::new();
    let app = build_c(
        job.dir.path(),
        &workspace().join("histories/app/hist_app.c"),
        "hist_app",
    );
    Job { app, ..job }
}

pub fn steps_job() -> Job {
    Job::with_c_program("guide_steps.c")
}

/// Runs a [`steps_job`] on 4 ranks of nodes n1…n4 (XOR, nothing flushed) writing ckpt.1 and
/// ckpt.2, with rank 1 killed in its encoding of ckpt.2's parity: every rank's files of
/// ckpt.2 written, its parity never finished, no rank's Complete returned.
pub fn kill_a_rank_encoding_the_second_checkpoint(job: &Job) {
    let out = job.run_on(
        Some("n1,n2,n3,n4"),
        4,
        &["init", "ckpt=ckpt.1:1", "ckpt=ckpt.2:2", "quit"],
        &[
            ("SCR_COPY_TYPE", "XOR"),
            ("SCR_CACHE_SIZE", "2"),
            ("SCR_FLUSH", "0"),
            ("SCR_TEST_FAULT", "encode@1#2!"),
        ],
    );
    assert!(!out.status.success(), "rank 1 was killed: {}", text(&out));
}

/// Runs a [`steps_job`] on 2 ranks that writes checkpoints `ckpt.1` … `ckpt.n` (timestep t
/// in `ckpt.t`) and quits.
pub fn write_steps_checkpoints(job: &Job, n: u32, env: &[(&str, &str)]) -> String {
    let steps: Vec<String> = std::iter::once("init".to_string())
        .chain((1..=n).map(|t| format!("ckpt=ckpt.{t}:{t}")))
        .chain(std::iter::once("quit".to_string()))
        .collect();
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    job.run_ok(2, &steps, env)
}

/// Every answer rank 0 printed for `step` (what follows `guide: <step> -> `), in order.
pub fn answers<'a>(out: &'a str, step: &str) -> Vec<&'a str> {
    let head = format!("guide: {step} -> ");
    out.lines().filter_map(|l| l.strip_prefix(&head)).collect()
}

/// The first answer rank 0 printed for `step`.
pub fn answer<'a>(out: &'a str, step: &str) -> &'a str {
    answers(out, step)
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no answer to {step}:\n{out}"))
}

/// What rank `rank` got routing in `step`: the path when SCR_Route_file succeeded.
pub fn routed(out: &str, rank: usize, step: &str) -> Option<PathBuf> {
    let head = format!("guide: rank {rank}: {step} -> ");
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(&head))
        .unwrap_or_else(|| panic!("rank {rank} did not route in {step}:\n{out}"));
    line.strip_prefix("rc=0 ").map(PathBuf::from)
}

/// Runs a restart on `ranks` ranks and asserts what rank 0 restarted from, as
/// "NAME t=STEP data=verified rc=RC".
pub fn assert_restarts(job: &Job, ranks: u32, env: &[(&str, &str)], expected: &str) {
    let out = job.run_ok(ranks, &["init", "restart", "quit"], env);
    assert_eq!(answer(&out, "restart"), expected, "{out}");
}
