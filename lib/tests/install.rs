//! `scripts/install.sh` as a user meets it: install to a fresh prefix, then build the example
//! against the installed SCR the three ways HPC users do (pkg-config, CMake's
//! `find_package(scr)`, plain `mpicc -I -L -lscr`) plus Fortran with SCR's `-lscrf` alone and
//! CMake's `scr::scrf`/`scr::scrf-static`, and run each checkpoint → restart under real MPI;
//! every man page renders; the uninstall removes exactly what was installed; `cargo install`
//! of the launcher still installs the commands alone.

mod common;

use common::install::*;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

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
fn cargo_install_of_the_launcher_still_installs_the_commands_alone() {
    let root = tempfile::tempdir().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    must(
        Command::new(cargo)
            .args(["install", "--quiet", "--debug", "--path"])
            .arg(workspace().join("launcher"))
            .arg("--root")
            .arg(root.path())
            // the tests' own build, so nothing is compiled twice (and nothing replaces
            // what other tests run)
            .env("CARGO_TARGET_DIR", tests_target_dir())
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
