//! A hostile neighbour and the Python module: a copy of an installed `scr.py` in a directory
//! another user can write above loads the install's libscr, never one the neighbour left
//! where a path relative to the copy leads. The user is root; the neighbour is another user
//! (nobody, through setpriv).

mod common;

use common::neighbour::*;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `python/scr.py` as scripts/install.sh writes it for an install whose library directory
/// is `libdir`.
fn installed_module(libdir: &Path) -> String {
    let source = std::fs::read_to_string(workspace().join("python/scr.py")).unwrap();
    let line = "_INSTALL_LIBDIR = None\n";
    assert!(source.contains(line), "python/scr.py has no {line}");
    source.replace(
        line,
        &format!("_INSTALL_LIBDIR = {:?}\n", libdir.display().to_string()),
    )
}

/// A shared library that, loaded, writes `marker` (a neighbour's code running as the user).
fn library_that_marks(dir: &Path, marker: &Path) -> PathBuf {
    let source = dir.join("mark.c");
    std::fs::write(
        &source,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void mark(void) {{\n\
             FILE* f = fopen(\"{}\", \"w\"); if (f) fclose(f); }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let lib = dir.join("mark.so");
    let o = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&source)
        .output()
        .unwrap();
    assert!(o.status.success(), "cc: {}", text(&o));
    lib
}

/// Imports the module in `module_dir` as the user would, with no library chosen in the
/// environment; returns whether it imported and what it printed (the library it loaded).
/// Without Python's site directories, so without Debian's mpi4py (Open MPI's: the module
/// refuses one of another MPI than the freshly built libscr's).
fn import_scr(module_dir: &Path) -> (bool, String) {
    let o = Command::new("/usr/bin/python3")
        .args(["-S", "-c", "import scr; print(scr._lib_path)"])
        .env("PYTHONPATH", module_dir)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("SCR_LIBRARY")
        .output()
        .unwrap();
    (o.status.success(), text(&o))
}

#[test]
fn a_copy_of_the_module_loads_only_the_install_s_library() {
    let s = Shared::new();
    let shared = &s.prefix;
    // the install: its library directory the user's own, outside the shared directory
    let libdir = s.job.dir.path().join("install/lib");
    std::fs::create_dir_all(&libdir).unwrap();
    link_library_into(&libdir);
    // the user's copy of the installed module three levels below the shared directory
    let copy = shared.join("a/b/c");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::write(copy.join("scr.py"), installed_module(&libdir)).unwrap();
    // the neighbour's library where ../../../lib from the copy leads
    let marker = s.job.dir.path().join("neighbour-code-ran");
    let theirs = library_that_marks(s.job.dir.path(), &marker);
    as_nobody(&format!(
        "mkdir {0}/lib && cp {1} {0}/lib/libscr.so",
        shared.display(),
        theirs.display()
    ));

    let (ok, t) = import_scr(&copy);
    assert!(!marker.exists(), "the neighbour's library was loaded: {t}");
    assert!(ok, "{t}");
    assert_eq!(t.trim(), libdir.join("libscr.so").display().to_string());

    // the install's library gone: the import fails naming it, and loads nothing else
    std::fs::remove_file(libdir.join("libscr.so")).unwrap();
    let (ok, t) = import_scr(&copy);
    assert!(!ok, "{t}");
    assert!(!marker.exists(), "the neighbour's library was loaded: {t}");
    assert!(
        t.contains(&libdir.join("libscr.so").display().to_string()) && t.contains("SCR_LIBRARY"),
        "{t}"
    );
}
