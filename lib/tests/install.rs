//! `scripts/install.sh` as a user meets it: install to a fresh prefix, then build the example
//! against the installed SCR the three ways HPC users do (pkg-config, CMake's
//! `find_package(scr)`, plain `mpicc -I -L -lscr`) plus Fortran with SCR's `-lscrf` alone and
//! CMake's `scr::scrf`/`scr::scrf-static`, and run each checkpoint → restart under real MPI; the
//! same against an Open MPI install under Open MPI's `mpirun`; every man page renders; the
//! uninstall removes exactly what was installed. Under Open MPI also: scr-run relaunches
//! around a down node, and the installed Python module checkpoints, is killed, restarts.

mod common;

use common::*;
use scr::HashView;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn must(out: Output, what: &str) -> String {
    let t = text(&out);
    assert!(out.status.success(), "{what}: {t}");
    t
}

/// The system configuration the installs are built to read (`--config-file`): one path
/// for every install test, so the release builds they share are not rebuilt for each. It
/// sets only the control base, shared by the jobs, which keep apart by their job ids.
fn system_config() -> PathBuf {
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
fn install_target() -> PathBuf {
    workspace().join("target/install-test/target")
}

fn install(prefix: &Path, mpi: &str, more: &[&str]) {
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
fn shared_release_artifacts() -> Vec<(PathBuf, Option<std::time::SystemTime>)> {
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

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `pkg-config --cflags --libs scr` against the scr.pc of the install's library directory.
fn pkg_config(libdir: &Path) -> String {
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
fn dynamic_section(file: &Path) -> String {
    must(
        Command::new("readelf")
            .arg("-d")
            .arg(file)
            .output()
            .unwrap(),
        "readelf -d",
    )
}

fn uninstall(prefix: &Path) {
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
fn private_job(cmd: &mut Command, dir: &Path, prefix: &Path, jobid: &str) {
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
fn private_job_id(dir: &Path, jobid: &str) -> String {
    let unique: String = dir
        .to_string_lossy()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("{jobid}-{unique}")
}

/// The control directory a job of `private_job` gets from the installed configuration.
fn control_dir(dir: &Path, jobid: &str) -> PathBuf {
    let jobid = private_job_id(dir, jobid);
    workspace()
        .join("target/install-test/cntl")
        .join(user())
        .join(format!("scr.{jobid}"))
}

/// Runs `app` twice on 2 ranks in a job directory of its own: the first run writes two
/// checkpoints, the second must restart from the newest and verify it.
fn checkpoint_then_restart(mpi: Mpi, app: &Path, args: &[&str], restarted: &str) {
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
fn quoted(path: &Path) -> String {
    let text = path.to_str().unwrap();
    assert!(!text.contains('\''), "{text}");
    format!("'{text}'")
}

/// What `script` prints in a login shell after `module use <prefix>/share/modulefiles;
/// module load scr` with Debian's Lmod, as on an HPC site; the variables the module sets
/// are unset first.
fn with_module_loaded(prefix: &Path, script: &str) -> String {
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
const APPLICATION_MAKEFILE: &str = "\
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

fn copy_example(prefix: &Path, dir: &Path, file: &str) -> PathBuf {
    let to = dir.join(file);
    std::fs::copy(prefix.join("share/scr/examples").join(file), &to).unwrap();
    to
}

/// Copies the installed C and Fortran examples with their Makefile into `dir` and builds
/// them there with make, as a user starting from them would.
fn make_installed_examples(prefix: &Path, dir: &Path) -> PathBuf {
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

#[test]
fn installed_scr_builds_apps_three_ways_and_uninstalls_cleanly() {
    let top = tempfile::tempdir().unwrap();
    let prefix = top.path().join("scr");
    let shared_before = shared_release_artifacts();
    install(&prefix, "mpich", &[]);

    // the configuration path the install was built to read is in its library, and in
    // nothing this install wrote to the shared target/release
    let config = system_config();
    let config = config.to_str().unwrap().as_bytes();
    assert!(
        contains(
            &std::fs::read(prefix.join("lib/libscr.so")).unwrap(),
            config
        ),
        "the installed libscr.so reads the configuration it was built with"
    );
    for (path, before) in shared_before {
        let after = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        if after.is_some() && after != before {
            assert!(
                !contains(&std::fs::read(&path).unwrap(), config),
                "{} was built by the install test with its configuration path compiled in",
                path.display()
            );
        }
    }

    // the layout
    for f in [
        "bin/scr",
        "bin/scr-run",
        "lib/libscr.so",
        "lib/libscr.a",
        "include/scr.h",
        "include/scrf.h",
        "lib/pkgconfig/scr.pc",
        "share/scr/cmake/scrConfig.cmake",
        "share/scr/cmake/scrConfigVersion.cmake",
        "share/bash-completion/completions/scr",
        "share/zsh/site-functions/_scr",
        "etc/scr.conf.example",
        "share/scr/examples/Makefile",
        "share/scr/python/scr.py",
        "share/scr/python/setup.py",
        "share/scr/python/scr_example.py",
        "share/scr/python/README.md",
    ] {
        let meta = std::fs::symlink_metadata(prefix.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(meta.is_file(), "{f} is a real file");
    }
    // SCR's Fortran library is libscr under its name (libscr carries the Fortran interface)
    for (name, target) in [("libscrf.so", "libscr.so"), ("libscrf.a", "libscr.a")] {
        assert_eq!(
            std::fs::read_link(prefix.join("lib").join(name)).unwrap(),
            Path::new(target),
            "{name}"
        );
    }
    // Debian's mpi4py is built against Open MPI: with this MPICH install, importing scr
    // (in either order) names both MPIs and the fix, instead of crashing in SCR_Init
    for program in [
        "from mpi4py import MPI\nimport scr",
        "import scr\nfrom mpi4py import MPI",
    ] {
        let o = Command::new("/usr/bin/python3")
            .args(["-c", program])
            .env("PYTHONPATH", prefix.join("share/scr/python"))
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap();
        let t = text(&o);
        assert!(!o.status.success(), "{program}: {t}");
        assert!(
            t.contains("ImportError: scr: mpi4py uses Open MPI but libscr")
                && t.contains(&format!("libscr ({}/lib/libscr.so)", prefix.display()))
                && t.contains("was built against MPICH")
                && t.contains("install.sh --mpi openmpi"),
            "{program}: {t}"
        );
    }
    for name in [
        "scr_srun",
        "scr_index",
        "scr_halt",
        "scr_glob_hosts",
        "scr_postrun",
    ] {
        let link = prefix.join("bin").join(name);
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("scr"),
            "{name}"
        );
    }
    // SCR's command names work from the installed links
    let hosts = must(
        Command::new(prefix.join("bin/scr_glob_hosts"))
            .args(["-c", "-h", "n[1-3]"])
            .output()
            .unwrap(),
        "scr_glob_hosts",
    );
    assert_eq!(hosts.trim(), "3");
    let dynamic = dynamic_section(&prefix.join("lib/libscr.so"));
    assert!(dynamic.contains("Library soname: [libscr.so]"), "{dynamic}");

    // every man page renders without a warning, every command has one under each of its
    // names, scr.conf(5) and scr(7) are there, and every page a SEE ALSO names is installed
    let man = prefix.join("share/man/man1");
    let mut pages: Vec<PathBuf> = Vec::new();
    for section in ["man1", "man5", "man7"] {
        for e in std::fs::read_dir(prefix.join("share/man").join(section)).unwrap() {
            pages.push(e.unwrap().path());
        }
    }
    for page in ["man5/scr.conf.5", "man7/scr.7"] {
        assert!(prefix.join("share/man").join(page).is_file(), "{page}");
    }
    for page in [
        "scr",
        "scr-run",
        "scr_srun",
        "scr_index",
        "scr-index",
        "scr_halt",
        "scr_postrun",
    ] {
        assert!(
            man.join(format!("{page}.1")).is_file(),
            "no man page {page}.1"
        );
    }
    for page in &pages {
        let out = Command::new("man")
            .arg("-l")
            .arg(page)
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_STDERR", "1")
            .output()
            .unwrap();
        let t = must(out, &format!("man -l {}", page.display()));
        let name = page.file_stem().unwrap().to_str().unwrap();
        assert!(
            t.contains("NAME") && t.contains(name),
            "{}: {t}",
            page.display()
        );
        let warnings = Command::new("groff")
            .args(["-k", "-ww", "-z", "-t", "-man"])
            .arg(page)
            .output()
            .unwrap();
        assert_eq!(text(&warnings), "", "{}", page.display());
        let see_also = t
            .split("\nSEE ALSO\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{} has no SEE ALSO", page.display()));
        let see_also = see_also
            .lines()
            .take_while(|l| l.is_empty() || l.starts_with(' '))
            .collect::<Vec<_>>()
            .join(" ");
        let mut named = 0;
        for word in see_also.split([' ', ',']) {
            let Some((name, section)) = word.strip_suffix(')').and_then(|w| w.split_once('('))
            else {
                continue;
            };
            let file = prefix
                .join("share/man")
                .join(format!("man{section}"))
                .join(format!("{name}.{section}"));
            assert!(
                file.is_file(),
                "{} names {word}, which is not installed",
                page.display()
            );
            named += 1;
        }
        assert!(named > 0, "{}: SEE ALSO {see_also}", page.display());
    }
    // man finds the pages by name through MANPATH
    let out = Command::new("man")
        .args(["-w", "scr_index"])
        .env("MANPATH", prefix.join("share/man"))
        .output()
        .unwrap();
    assert!(must(out, "man -w").contains("scr_index.1"));
    for (args, page) in [
        (&["scr.conf"][..], "man5/scr.conf.5"),
        (&["7", "scr"][..], "man7/scr.7"),
    ] {
        let out = Command::new("man")
            .arg("-w")
            .args(args)
            .env("MANPATH", prefix.join("share/man"))
            .output()
            .unwrap();
        assert_eq!(
            Path::new(must(out, "man -w").trim()),
            prefix.join("share/man").join(page)
        );
    }

    let mpi = Mpi::Mpich;
    let work = top.path().join("apps");
    std::fs::create_dir(&work).unwrap();
    let source = copy_example(&prefix, &work, "test_api.c");
    let restarted = "restarted from ckpt.2 (timestep 2), data verified";

    // 1. pkg-config
    let pc = pkg_config(&prefix.join("lib"));
    assert!(
        pc.contains(&format!("-I{}/include", prefix.display())),
        "{pc}"
    );
    // a build that asks for SCR v3.1's API finds it (SCR's own scr.pc says 3.1.0)
    must(
        Command::new("pkg-config")
            .args(["--atleast-version=3.1", "scr"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
            .output()
            .unwrap(),
        "pkg-config --atleast-version=3.1 scr",
    );
    let app = work.join("app_pkgconfig");
    must(
        Command::new("mpicc")
            .arg(&source)
            .args(pc.split_whitespace())
            .arg("-o")
            .arg(&app)
            .output()
            .unwrap(),
        "mpicc with pkg-config",
    );
    checkpoint_then_restart(mpi, &app, &["4000", "2"], restarted);

    // 2. CMake: find_package(scr), scr::scr and scr::scr-static; SCR's Fortran targets
    // scr::scrf and scr::scrf-static
    let project = work.join("cmake");
    std::fs::create_dir(&project).unwrap();
    std::fs::copy(&source, project.join("test_api.c")).unwrap();
    copy_example(&prefix, &project, "test_ckpt.F90");
    std::fs::write(
        project.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.14)\nproject(app C Fortran)\nfind_package(scr 3.1 REQUIRED)\n\
         add_executable(app test_api.c)\ntarget_link_libraries(app scr::scr)\n\
         add_executable(app_static test_api.c)\ntarget_link_libraries(app_static scr::scr-static)\n\
         add_executable(appf test_ckpt.F90)\ntarget_link_libraries(appf scr::scrf)\n\
         add_executable(appf_static test_ckpt.F90)\ntarget_link_libraries(appf_static scr::scrf-static)\n",
    )
    .unwrap();
    let build = project.join("build");
    must(
        Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
            .output()
            .unwrap(),
        "cmake configure",
    );
    must(
        Command::new("cmake")
            .arg("--build")
            .arg(&build)
            .output()
            .unwrap(),
        "cmake --build",
    );
    checkpoint_then_restart(mpi, &build.join("app"), &["4000", "2"], restarted);
    let linked = dynamic_section(&build.join("app_static"));
    assert!(
        !linked.contains("[libscr.so]"),
        "app_static links libscr.a: {linked}"
    );
    checkpoint_then_restart(mpi, &build.join("app_static"), &["4000", "2"], restarted);
    let fortran_restarted = "restarted from ckpt.2, data verified";
    let linked = dynamic_section(&build.join("appf"));
    assert!(
        linked.contains("[libscr.so]") && !linked.contains("libscrf"),
        "scr::scrf records libscr.so: {linked}"
    );
    checkpoint_then_restart(mpi, &build.join("appf"), &[], fortran_restarted);
    let linked = dynamic_section(&build.join("appf_static"));
    assert!(
        !linked.contains("[libscr.so]"),
        "appf_static links libscrf.a: {linked}"
    );
    checkpoint_then_restart(mpi, &build.join("appf_static"), &[], fortran_restarted);

    // 3. plain mpicc -I -L -lscr (the run finds libscr through LD_LIBRARY_PATH)
    let app = work.join("app_plain");
    must(
        Command::new("mpicc")
            .arg(&source)
            .arg(format!("-I{}/include", prefix.display()))
            .arg(format!("-L{}/lib", prefix.display()))
            .arg("-lscr")
            .arg("-o")
            .arg(&app)
            .output()
            .unwrap(),
        "mpicc -lscr",
    );
    // SAFETY of the test: nothing else in this process reads the environment meanwhile
    unsafe { std::env::set_var("LD_LIBRARY_PATH", prefix.join("lib")) };
    checkpoint_then_restart(mpi, &app, &["4000", "2"], restarted);
    unsafe { std::env::remove_var("LD_LIBRARY_PATH") };

    // Fortran with SCR's documented link line, -lscrf alone (no -lscr)
    let app = work.join("app_fortran");
    must(
        Command::new("mpif90")
            .arg(format!("-I{}/include", prefix.display()))
            .arg(prefix.join("share/scr/examples/test_ckpt.F90"))
            .arg("-o")
            .arg(&app)
            .arg(format!("-L{}/lib", prefix.display()))
            .arg("-lscrf")
            .arg(format!("-Wl,-rpath,{}/lib", prefix.display()))
            .output()
            .unwrap(),
        "mpif90 -lscrf",
    );
    let linked = dynamic_section(&app);
    assert!(
        linked.contains("[libscr.so]") && !linked.contains("libscrf"),
        "one libscr whatever the name it was linked by: {linked}"
    );
    checkpoint_then_restart(mpi, &app, &[], fortran_restarted);

    // and through the installed examples' Makefile, which uses the same line
    let examples = make_installed_examples(&prefix, &work.join("examples"));
    checkpoint_then_restart(mpi, &examples.join("test_ckpt"), &[], fortran_restarted);

    // uninstall: exactly what was installed goes; a file of the user's stays
    let mine = prefix.join("etc/site.conf");
    std::fs::write(&mine, "SCR_FLUSH=1\n").unwrap();
    uninstall(&prefix);
    let left: Vec<PathBuf> = walk(&prefix);
    assert_eq!(left, vec![mine.clone()], "only the user's file is left");
    std::fs::remove_file(&mine).unwrap();
    std::fs::remove_dir(prefix.join("etc")).unwrap();
    std::fs::remove_dir(&prefix).unwrap();

    // installed again into an empty prefix and uninstalled: nothing at all is left
    install(&prefix, "mpich", &[]);
    uninstall(&prefix);
    assert!(
        !prefix.exists() || walk(&prefix).is_empty(),
        "{:?}",
        walk(&prefix)
    );
}

#[test]
fn an_open_mpi_install_in_lib64_restarts_under_open_mpi() {
    let top = tempfile::tempdir().unwrap();
    let prefix = top.path().join("scr-openmpi");
    // as CMake's GNUInstallDirs on distributions that use lib64: relative to the prefix
    install(&prefix, "openmpi", &["--libdir", "lib64"]);
    let lib64 = prefix.join("lib64");
    for f in ["libscr.so", "libscr.a", "pkgconfig/scr.pc"] {
        assert!(lib64.join(f).is_file(), "{f} in lib64");
    }
    assert_eq!(
        std::fs::read_link(lib64.join("libscrf.so")).unwrap(),
        Path::new("libscr.so")
    );
    assert!(!prefix.join("lib").exists(), "nothing in lib");
    let pc = pkg_config(&lib64);
    assert!(
        pc.contains("openmpi"),
        "scr.pc requires Open MPI's flags: {pc}"
    );
    let lib64_flags = [
        format!("-L{}", lib64.display()),
        format!("-Wl,-rpath,{}", lib64.display()),
    ];
    for flag in &lib64_flags {
        assert!(pc.contains(flag.as_str()), "{flag} in {pc}");
    }
    let dynamic = dynamic_section(&lib64.join("libscr.so"));
    assert!(
        dynamic.contains("libmpi.so.40"),
        "libscr links Open MPI: {dynamic}"
    );
    let app = top.path().join("app");
    must(
        Command::new("mpicc.openmpi")
            .arg(prefix.join("share/scr/examples/test_api.c"))
            .args(pc.split_whitespace())
            .arg("-o")
            .arg(&app)
            .output()
            .unwrap(),
        "mpicc.openmpi",
    );
    let restarted = "restarted from ckpt.2 (timestep 2), data verified";
    checkpoint_then_restart(Mpi::OpenMpi, &app, &["4000", "2"], restarted);

    // Lmod: in a login shell, `module use <prefix>/share/modulefiles; module load scr` sets
    // what building and running need, and nothing else is needed: an application's own
    // Makefile (SCR's documented link lines in $(SCR_ROOT)/lib64) and a CMake project
    // build in that environment alone
    let apps = top.path().join("apps");
    std::fs::create_dir(&apps).unwrap();
    for f in ["test_api.c", "test_ckpt.F90"] {
        copy_example(&prefix, &apps, f);
    }
    std::fs::write(apps.join("Makefile"), APPLICATION_MAKEFILE).unwrap();
    let project = top.path().join("cmake");
    std::fs::create_dir(&project).unwrap();
    copy_example(&prefix, &project, "test_api.c");
    std::fs::write(
        project.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.14)\nproject(app C)\nfind_package(scr REQUIRED)\n\
         add_executable(app test_api.c)\ntarget_link_libraries(app scr::scr)\n",
    )
    .unwrap();
    let build = project.join("build");
    let loaded = with_module_loaded(
        &prefix,
        &format!(
            "make -C {apps} >&2\ncmake -S {project} -B {build} >&2\ncmake --build {build} >&2\n\
             for v in PATH MANPATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH PYTHONPATH SCR_ROOT; do\n\
               printf '%s=%s\\n' \"$v\" \"${{!v-}}\"\n\
             done\n\
             printf 'LD_LIBRARY_PATH=%s\\n' \"${{LD_LIBRARY_PATH-unset}}\"\n\
             printf 'scr=%s\\n' \"$(command -v scr)\"\n\
             printf 'pkg-config=%s\\n' \"$(pkg-config --libs scr)\"\n\
             printf 'man=%s\\n' \"$(man -w scr_srun)\"\n\
             printf 'python=%s\\n' \"$(python3 -c 'import scr; print(scr._lib_path)')\"\n\
             module unload scr\n\
             printf 'unloaded=%s\\n' \"$PATH\"\n",
            apps = quoted(&apps),
            project = quoted(&project),
            build = quoted(&build),
        ),
    );
    let var = |name: &str| -> String {
        loaded
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {loaded}"))
            .to_string()
    };
    let has = |name: &str, dir: PathBuf| {
        assert!(
            var(name).split(':').any(|d| Path::new(d) == dir),
            "{name} has {}: {loaded}",
            dir.display()
        );
    };
    has("PATH", prefix.join("bin"));
    has("MANPATH", prefix.join("share/man"));
    has("PKG_CONFIG_PATH", lib64.join("pkgconfig"));
    has("CMAKE_PREFIX_PATH", prefix.clone());
    has("PYTHONPATH", prefix.join("share/scr/python"));
    assert_eq!(Path::new(&var("SCR_ROOT")), prefix, "{loaded}");
    assert_eq!(
        var("LD_LIBRARY_PATH"),
        "unset",
        "rpaths, not a library path"
    );
    assert_eq!(Path::new(&var("scr")), prefix.join("bin/scr"));
    assert!(var("pkg-config").contains(&lib64_flags[0]), "{loaded}");
    assert_eq!(
        Path::new(&var("man")),
        prefix.join("share/man/man1/scr_srun.1")
    );
    assert_eq!(Path::new(&var("python")), lib64.join("libscr.so"));
    assert!(
        !var("unloaded")
            .split(':')
            .any(|d| Path::new(d) == prefix.join("bin")),
        "module unload scr takes it out of PATH: {loaded}"
    );
    checkpoint_then_restart(Mpi::OpenMpi, &apps.join("app"), &["4000", "2"], restarted);
    checkpoint_then_restart(
        Mpi::OpenMpi,
        &apps.join("appf"),
        &[],
        "restarted from ckpt.2, data verified",
    );
    // the installed examples' Makefile and CMake's package name lib64 too
    let examples = make_installed_examples(&prefix, &top.path().join("examples"));
    for app in ["test_api", "test_ckpt"] {
        let linked = dynamic_section(&examples.join(app));
        assert!(
            linked.contains(&format!("[{}]", lib64.display())),
            "{app} finds libscr in lib64: {linked}"
        );
    }
    let linked = dynamic_section(&build.join("app"));
    assert!(
        linked.contains("[libscr.so]") && linked.contains(&lib64.display().to_string()),
        "scr::scr is lib64's libscr: {linked}"
    );

    // the Python module finds lib64's libscr with neither SCR_LIBRARY nor LD_LIBRARY_PATH:
    // installed, copied elsewhere (as pip install does), and from the source tree
    let elsewhere = top.path().join("site-packages");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::copy(
        prefix.join("share/scr/python/scr.py"),
        elsewhere.join("scr.py"),
    )
    .unwrap();
    let library_of = |module_dir: &Path, library: Option<&Path>| {
        let mut cmd = Command::new("/usr/bin/python3");
        cmd.args(["-c", "import scr; print(scr._lib_path)"])
            .env("PYTHONPATH", module_dir)
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("SCR_LIBRARY");
        if let Some(l) = library {
            cmd.env("SCR_LIBRARY", l);
        }
        PathBuf::from(must(cmd.output().unwrap(), "import scr").trim())
    };
    for dir in [prefix.join("share/scr/python"), elsewhere] {
        assert_eq!(
            library_of(&dir, None),
            lib64.join("libscr.so"),
            "{}",
            dir.display()
        );
    }
    assert_eq!(
        library_of(&workspace().join("python"), Some(&lib64.join("libscr.so"))),
        lib64.join("libscr.so")
    );

    // scr-run relaunches the Open MPI job around a down node: n1..n4 emulated through an
    // rsh agent that starts each node's daemon here, telling it its node name; n3 is down
    let work = top.path().join("job");
    let cntl = top.path().join("cntl");
    std::fs::create_dir_all(work.join("prefix")).unwrap();
    std::fs::create_dir_all(&cntl).unwrap();
    std::fs::create_dir_all(top.path().join("cache")).unwrap();
    let agent = work.join("agent.sh");
    let started = work.join("started");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do case $1 in -*) shift;; *) break;; esac; done\n\
             echo \"$1\" >> '{}'\nexport SCR_NODE_NAME=$1\nshift\nexec sh -c \"$*\"\n",
            started.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        work.join("scr.conf"),
        format!("SCR_CNTL_BASE={}\n", cntl.display()),
    )
    .unwrap();
    // `mpirun` is Open MPI's here (Debian's alternatives keep MPICH's as the default), so
    // scr_mpirun must tell the two apart by asking it
    let bin = work.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink("/usr/bin/mpirun.openmpi", bin.join("mpirun")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = Command::new(prefix.join("bin/scr_mpirun"))
        .args(["-np", "3"])
        .arg(&app)
        .args(["4000", "2"])
        .current_dir(work.join("prefix"))
        .env("PATH", path)
        .env("OMPI_MCA_plm_rsh_agent", &agent)
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("SCR_SYSTEM_CONF_FILE", work.join("scr.conf"))
        .env("SCR_PREFIX", work.join("prefix"))
        .env("SCR_CACHE_BASE", top.path().join("cache"))
        .env("SCR_JOB_ID", "ompi")
        .env("SCR_NODELIST", "n[1-4]")
        .env("SCR_EXCLUDE_NODES", "n3")
        .env("SCR_MIN_NODES", "3")
        .env("SCR_COPY_TYPE", "XOR")
        .env("SCR_FLUSH", "0")
        .env("SCR_RUNS", "3")
        .env("SCR_RUN_DELAY", "0")
        .env("TEST_API_FAIL_FIRST", "1")
        .env_remove("SLURM_JOBID")
        .env_remove("SLURM_JOB_ID")
        .env_remove("SCR_CONF_FILE")
        .output()
        .unwrap();
    let t = must(out, "scr_mpirun");
    assert!(
        t.contains("n3 is down: User excluded via SCR_EXCLUDE_NODES"),
        "{t}"
    );
    assert!(t.contains("failing on purpose"), "{t}");
    assert!(t.contains("attempt 2: launching on 3 node(s)"), "{t}");
    assert!(
        t.contains("restarted from ckpt.2 (timestep 2), data verified"),
        "{t}"
    );
    let mut hosts: Vec<String> = std::fs::read_to_string(&started)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    hosts.sort();
    hosts.dedup();
    assert_eq!(
        hosts,
        ["n1", "n2", "n4"],
        "Open MPI started daemons only on the nodes up"
    );
    // XOR protected the checkpoint across the three nodes
    let xor = walk(&top.path().join("cache"))
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("xor."))
        .count();
    assert!(xor >= 3, "an XOR file per rank");

    // Python: Debian's mpi4py (Open MPI) with the installed module checkpoints, is killed
    // with SIGKILL, and the next run restarts from the checkpoint in cache
    let py = top.path().join("py");
    std::fs::create_dir_all(py.join("prefix")).unwrap();
    let script = workspace().join("lib/tests/python/test_ckpt.py");
    let run_sized = |ranks: u32, kill_after: &str, refuse_first: &str| {
        let mut cmd = Mpi::OpenMpi.launch(
            None,
            ranks,
            120,
            Path::new("/usr/bin/python3"),
            &[script.to_str().unwrap(), "3"],
        );
        private_job(&mut cmd, &py, &py.join("prefix"), "python");
        cmd.env("PYTHONPATH", prefix.join("share/scr/python"))
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("SCR_LIBRARY")
            .env("KILL_AFTER", kill_after)
            .env("REFUSE_FIRST", refuse_first)
            .env("SCR_FLUSH", "1")
            // it re-partitions a checkpoint of another size, and says so
            .env("SCR_RESHAPE", "1");
        cmd.output().unwrap()
    };
    let run_with = |kill_after: &str, refuse_first: &str| run_sized(2, kill_after, refuse_first);
    let run = |kill_after: &str| run_with(kill_after, "0");
    let killed = run("2");
    let t = text(&killed);
    assert!(!killed.status.success(), "{t}");
    assert!(
        t.contains("no checkpoint, starting from the beginning"),
        "{t}"
    );
    assert!(t.contains("killed after ckpt.2"), "{t}");
    let t = must(run("0"), "python restart");
    assert!(t.contains("restarted from ckpt.2, data verified"), "{t}");
    assert!(t.contains("test_ckpt.py: done"), "{t}");
    // v3.1's calls from Python: ckpt.2 dropped from the index, ckpt.1 deleted
    let index = scr::index::IndexFile::read(&scr::layout::index_file(&py.join("prefix"))).unwrap();
    assert_eq!(index.id_of("ckpt.2"), None);
    assert!(index.id_of("ckpt.5").is_some());
    assert!(
        py.join("prefix/ckpt.2").exists(),
        "SCR_Drop keeps the files"
    );
    assert!(
        !py.join("prefix/ckpt.1").exists(),
        "SCR_Delete removed ckpt.1"
    );
    // python_api: complete_restart() returns False on every rank when one could not read its
    // files, and the next checkpoint offered is an older one
    let t = must(run_with("0", "1"), "python restart refused once");
    assert!(
        t.contains("complete_restart(ckpt.5) returned False")
            && t.contains("complete_restart(ckpt.4) returned True")
            && t.contains("restarted from ckpt.4, data verified"),
        "{t}"
    );
    // beyond SCR: 3 ranks restart the checkpoint 2 wrote, re-partitioned through
    // scr.restart_files(), every byte checked against its writer
    let t = must(run_sized(3, "0", "0"), "python restart on 3 ranks");
    assert!(t.contains("restarted from ckpt.7, data verified"), "{t}");
    // (the ranks' lines may run together: each is found wherever it starts)
    let read: u32 = t
        .split("test_ckpt.py: rank ")
        .skip(1)
        .filter_map(|l| {
            let (_, n) = l.split_once(" read ")?;
            let (n, rest) = n.split_once(" of the ")?;
            rest.starts_with("2 files 2 ranks wrote")
                .then(|| n.parse::<u32>().ok())?
        })
        .sum();
    assert_eq!(read, 2, "{t}");

    // the example v3.1 installs, in its place, runs as it is and restarts
    let example = prefix.join("share/scr/python/scr_example.py");
    let run_example = || {
        let mut cmd = Mpi::OpenMpi.launch(
            None,
            2,
            120,
            Path::new("/usr/bin/python3"),
            &[example.to_str().unwrap(), "4"],
        );
        private_job(&mut cmd, &py, &py.join("example"), "example");
        cmd.env("PYTHONPATH", prefix.join("share/scr/python"));
        must(cmd.output().unwrap(), "scr_example.py")
    };
    std::fs::create_dir_all(py.join("example")).unwrap();
    let t = run_example();
    assert!(
        t.contains("checkpoint timestep_4 complete") && t.contains("done at timestep 4"),
        "{t}"
    );
    let t = run_example();
    assert!(
        t.contains("restarted from timestep_4") && t.contains("done at timestep 8"),
        "{t}"
    );

    uninstall(&prefix);
    assert!(!prefix.exists(), "{:?}", walk(&prefix));
}

#[test]
fn cargo_install_of_the_launcher_still_installs_the_commands_alone() {
    let root = tempfile::tempdir().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    must(
        Command::new(cargo)
            .args(["install", "--quiet", "--debug", "--path"])
            .arg(workspace().join("launcher"))
            .arg("--root")
            .arg(root.path())
            // the workspace's own build, so nothing is compiled twice
            .env("CARGO_TARGET_DIR", workspace().join("target"))
            .output()
            .unwrap(),
        "cargo install --path launcher",
    );
    let mut bins: Vec<String> = std::fs::read_dir(root.path().join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    bins.sort();
    assert_eq!(bins, ["scr", "scr-run"]);
    let version = must(
        Command::new(root.path().join("bin/scr"))
            .arg("--version")
            .output()
            .unwrap(),
        "scr --version",
    );
    assert!(version.starts_with("scr "), "{version}");
}
