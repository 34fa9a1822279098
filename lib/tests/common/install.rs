//! Installing SCR with `scripts/install.sh` and using the install as an application does,
//! for the install tests.

use super::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn must(out: Output, what: &str) -> String {
    let t = text(&out);
    assert!(out.status.success(), "{what}: {t}");
    t
}

/// The system configuration the installs are built to read (`--config-file`): one path
/// for every install test, so the release builds they share are not rebuilt for each. It
/// sets only the control base, shared by the jobs, which keep apart by their job ids.
pub fn system_config() -> PathBuf {
    let dir = workspace().join("target/install-test");
    std::fs::create_dir_all(dir.join("cntl")).unwrap();
    let conf = dir.join("scr.conf");
    let tmp = dir.join(format!("scr.conf.{}", std::process::id()));
    std::fs::write(
        &tmp,
        format!("SCR_CNTL_BASE={}\n", dir.join("cntl").display()),
    )
    .unwrap();
    std::fs::rename(&tmp, &conf).unwrap();
    conf
}

/// Where the installs build: a target directory of their own, since their library and
/// commands have the test's configuration path compiled in and target/release's are taken
/// by benchmarks and users.
pub fn install_target() -> PathBuf {
    workspace().join("target/install-test/target")
}

pub fn install(prefix: &Path, mpi: &str, more: &[&str]) {
    let out = Command::new(workspace().join("scripts/install.sh"))
        .arg("--prefix")
        .arg(prefix)
        .args(["--mpi", mpi])
        .args(more)
        .arg("--config-file")
        .arg(system_config())
        .env("CARGO_TARGET_DIR", install_target())
        .env_remove("MPICC")
        .output()
        .unwrap();
    must(out, "install.sh");
}

/// The release artifacts of the workspace's shared target directory, each with when it
/// was last written (None: not there).
pub fn shared_release_artifacts() -> Vec<(PathBuf, Option<std::time::SystemTime>)> {
    let release = workspace().join("target/release");
    ["libscr_runtime.so", "libscr_runtime.a", "scr", "scr-run"]
        .into_iter()
        .map(|f| {
            let path = release.join(f);
            let written = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            (path, written)
        })
        .collect()
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `pkg-config --cflags --libs scr` against the scr.pc of the install's library directory.
pub fn pkg_config(libdir: &Path) -> String {
    must(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "scr"])
            .env("PKG_CONFIG_PATH", libdir.join("pkgconfig"))
            .output()
            .unwrap(),
        "pkg-config",
    )
}

/// What `readelf -d` says of an ELF file's dynamic section.
pub fn dynamic_section(file: &Path) -> String {
    must(
        Command::new("readelf")
            .arg("-d")
            .arg(file)
            .output()
            .unwrap(),
        "readelf -d",
    )
}

pub fn uninstall(prefix: &Path) {
    let out = Command::new(workspace().join("scripts/install.sh"))
        .arg("--prefix")
        .arg(prefix)
        .arg("--uninstall")
        .output()
        .unwrap();
    must(out, "install.sh --uninstall");
}

/// Gives a job its own prefix and cache under `dir`, and a job id of its own: the control
/// base comes from the system configuration the install was built to read, as SCR allows
/// no other way, and jobs of tests running side by side must not see each other's filemaps.
pub fn private_job(cmd: &mut Command, dir: &Path, prefix: &Path, jobid: &str) {
    let jobid = private_job_id(dir, jobid);
    cmd.current_dir(prefix)
        .env("SCR_PREFIX", prefix)
        .env("SCR_CACHE_BASE", dir.join("cache"))
        .env("SCR_JOB_ID", &jobid)
        .env_remove("SCR_SYSTEM_CONF_FILE")
        .env_remove("SCR_CONF_FILE");
}

/// A job id no other test's job has: `jobid` and the whole of `dir`'s path (two tests'
/// directories may end alike, `<tempdir>/py`).
pub fn private_job_id(dir: &Path, jobid: &str) -> String {
    let unique: String = dir
        .to_string_lossy()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("{jobid}-{unique}")
}

/// The control directory a job of `private_job` gets from the installed configuration.
pub fn control_dir(dir: &Path, jobid: &str) -> PathBuf {
    let jobid = private_job_id(dir, jobid);
    workspace()
        .join("target/install-test/cntl")
        .join(user())
        .join(format!("scr.{jobid}"))
}

/// Runs `app` twice on 2 ranks in a job directory of its own: the first run writes two
/// checkpoints, the second must restart from the newest and verify it.
pub fn checkpoint_then_restart(mpi: Mpi, app: &Path, args: &[&str], restarted: &str) {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    std::fs::create_dir(&prefix).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = mpi.launch(None, 2, 120, app, args);
        private_job(&mut cmd, dir.path(), &prefix, "install");
        cmd.env("SCR_FLUSH", "1");
        must(cmd.output().unwrap(), &format!("{}", app.display()))
    };
    let first = run(args);
    assert!(
        first.contains("no checkpoint, starting from the beginning"),
        "{first}"
    );
    let second = run(args);
    assert!(second.contains(restarted), "{}: {second}", app.display());
    // the control base came from the configuration file built into the install
    let cntl = control_dir(dir.path(), "install");
    assert!(cntl.is_dir(), "{} missing", cntl.display());
}

/// A path as one shell word.
pub fn quoted(path: &Path) -> String {
    let text = path.to_str().unwrap();
    assert!(!text.contains('\''), "{text}");
    format!("'{text}'")
}

/// What `script` prints in a login shell after `module use <prefix>/share/modulefiles;
/// module load scr` with Debian's Lmod, as on an HPC site; the variables the module sets
/// are unset first.
pub fn with_module_loaded(prefix: &Path, script: &str) -> String {
    let script = format!(
        "set -e\nsource /usr/share/lmod/lmod/init/bash\n\
         unset LD_LIBRARY_PATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH PYTHONPATH SCR_ROOT SCR_LIBRARY\n\
         module use {}/share/modulefiles\nmodule load scr\n{script}",
        quoted(prefix)
    );
    let out = Command::new("bash")
        .arg("-lc")
        .arg(script)
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "module load scr: {}", text(&out));
    t
}

/// An application's own Makefile, with the link lines of SCR's user guide (integration.rst)
/// for an SCR installed in `$(SCR_ROOT)` with its libraries in lib64.
pub const APPLICATION_MAKEFILE: &str = "\
SCR_ROOT ?= /opt/scr
MPICC = mpicc.openmpi
MPIF90 = mpif90.openmpi
CFLAGS = -O2 -I$(SCR_ROOT)/include
all: app appf
app: test_api.c
\t$(MPICC) $(CFLAGS) -o $@ $< -L$(SCR_ROOT)/lib64 -lscr -Wl,-rpath,$(SCR_ROOT)/lib64
appf: test_ckpt.F90
\t$(MPIF90) $(CFLAGS) -o $@ $< -L$(SCR_ROOT)/lib64 -lscrf -Wl,-rpath,$(SCR_ROOT)/lib64
";

pub fn copy_example(prefix: &Path, dir: &Path, file: &str) -> PathBuf {
    let to = dir.join(file);
    std::fs::copy(prefix.join("share/scr/examples").join(file), &to).unwrap();
    to
}

/// Copies the installed C and Fortran examples with their Makefile into `dir` and builds
/// them there with make, as a user starting from them would.
pub fn make_installed_examples(prefix: &Path, dir: &Path) -> PathBuf {
    std::fs::create_dir(dir).unwrap();
    for f in ["Makefile", "test_api.c", "test_ckpt.F90"] {
        copy_example(prefix, dir, f);
    }
    must(
        Command::new("make").arg("-C").arg(dir).output().unwrap(),
        "make in the installed examples",
    );
    dir.to_path_buf()
}
