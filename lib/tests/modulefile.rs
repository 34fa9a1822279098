//! The Lmod modulefile `scripts/install.sh` installs (`scripts/modulefile.sh`), loaded with
//! Debian's Lmod as on an HPC site: what it does to the user's MANPATH. The whole install
//! and what the module sets for building is `install.rs`'s.

mod common;

use common::*;
use std::process::Command;

/// What `script` prints in a bash with Lmod, after writing the modulefile of an install
/// in `root` to `<dir>/scr/0.lua` and `module use <dir>`.
fn with_modulefile(dir: &std::path::Path, root: &str, script: &str) -> String {
    let script = format!(
        "set -e\ncd {ws}\n. scripts/modulefile.sh\nmkdir -p {dir}/scr\n\
         modulefile {root} {root}/lib 0.0.0 3.1.0 mpich > {dir}/scr/0.lua\n\
         source /usr/share/lmod/lmod/init/bash\nmodule use {dir}\n{script}",
        ws = workspace().display(),
        dir = dir.display(),
    );
    let out = Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn loading_the_module_keeps_the_systems_man_pages_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = "/opt/scr-test";
    // MANPATH unset, as in most login shells: man ls still finds ls's page afterwards
    let out = with_modulefile(
        dir.path(),
        root,
        "unset MANPATH\nmodule load scr\nprintf 'loaded=%s\\n' \"$MANPATH\"\n\
         man -w ls >/dev/null && echo 'man ls: found'\n\
         module unload scr\nprintf 'unloaded=%s\\n' \"${MANPATH-unset}\"\n",
    );
    assert!(
        out.contains("loaded=/opt/scr-test/share/man:"),
        "the install's pages first: {out}"
    );
    assert!(out.contains("man ls: found"), "{out}");
    assert!(out.contains("unloaded=unset"), "unloading undoes it: {out}");
    // a MANPATH the user set is left as the user wrote it, the install's pages before it
    let out = with_modulefile(
        dir.path(),
        root,
        "export MANPATH=/usr/share/man\nmodule load scr\nprintf 'loaded=%s\\n' \"$MANPATH\"\n\
         module unload scr\nprintf 'unloaded=%s\\n' \"$MANPATH\"\n",
    );
    assert!(
        out.contains("loaded=/opt/scr-test/share/man:/usr/share/man\n"),
        "{out}"
    );
    assert!(out.contains("unloaded=/usr/share/man\n"), "{out}");
}
