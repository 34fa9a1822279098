//! SCR v3.1's user guide, `python_api.rst` (SCR Python API): installing the `scr` module
//! with its `setup.py` and reading its documentation. (Checkpointing and restarting through
//! it, which needs an mpi4py of libscr's MPI, is lib/tests/install.rs's Open MPI install.)

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

/// The functions SCR v3.1's module offers (api.rst's calls).
const FUNCTIONS: [&str; 14] = [
    "init",
    "finalize",
    "config",
    "route_file",
    "have_restart",
    "start_restart",
    "complete_restart",
    "need_checkpoint",
    "start_output",
    "complete_output",
    "should_exit",
    "current",
    "drop",
    "delete",
];

/// Debian's Python without its site directories (so without Debian's mpi4py, which is
/// Open MPI's: the module refuses one of another MPI than libscr's), loading the freshly
/// built libscr.
fn python(path: &Path) -> Command {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg("-S")
        .env("PYTHONPATH", path)
        .env("SCR_LIBRARY", library("libscr_runtime.so"))
        .env_remove("PYTHONHOME");
    cmd
}

/// python_api.rst, "Installing the SCR Python module": `setup.py` installs `scr.py` into a
/// Python environment (here with pip, offline, into a directory of its own), where
/// `import scr` finds it. "Using the SCR Python module": its docstrings document each call
/// (`help(scr)` shows them: pydoc's rendering, which help prints).
#[test]
fn setup_py_installs_the_module_and_help_documents_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for f in ["scr.py", "setup.py", "README.md", "scr_example.py"] {
        std::fs::copy(workspace().join("python").join(f), src.join(f)).unwrap();
    }
    let target = dir.path().join("site");
    let o = Command::new("/usr/bin/python3")
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--no-build-isolation",
            "--no-index",
        ])
        .arg("--target")
        .arg(&target)
        .arg(&src)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(target.join("scr.py").is_file());

    let o = python(&target)
        .args([
            "-c",
            "import pydoc, scr; print(scr.__file__); print(pydoc.render_doc(scr, renderer=pydoc.plaintext))",
        ])
        .output()
        .unwrap();
    let doc = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        doc.starts_with(&*target.join("scr.py").to_string_lossy()),
        "{doc}"
    );
    for f in FUNCTIONS {
        let at = doc
            .find(&format!("\n    {f}("))
            .unwrap_or_else(|| panic!("{f} undocumented:\n{doc}"));
        let text = doc[at..].lines().nth(2).unwrap_or_default().trim();
        assert!(!text.is_empty(), "{f} has no docstring:\n{doc}");
    }
    let version = python(&target)
        .args(["-c", "import scr; print(scr.get_version())"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&version.stdout).contains("SCR"),
        "{}",
        text(&version)
    );
}
