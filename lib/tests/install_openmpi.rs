//! An Open MPI install of SCR in `lib64` used under Open MPI's `mpirun`: applications build
//! against it and restart, scr-run relaunches around a down node, and the installed Python
//! module checkpoints, is killed, restarts.

mod common;

use common::install::*;
use common::*;
use scr::HashView;
use std::path::{Path, PathBuf};
use std::process::Command;

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
             printf 'python=%s\\n' \"$(/usr/bin/python3 -c 'import scr; print(scr._lib_path)')\"\n\
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
