//! `scripts/setup.sh` detects each dependency by the file or command that uses it: run
//! against fake roots that lack one package each, it asks for exactly that package, and a
//! look-alike (the image's `libclang-cpp.so.14`) never passes for `libclang`. Each proof it
//! relies on is checked against dpkg: the file belongs to the package it asks for, or to
//! one that package pulls in. Runs on Debian after setup (scripts/test.sh runs it first).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const STANDARD_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

fn setup_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup.sh")
}

/// Runs `setup.sh <flag>` with SCR_SETUP_ROOT=root (None: the real root).
fn setup(flag: &str, root: Option<&Path>) -> Vec<String> {
    let mut cmd = Command::new("bash");
    cmd.arg(setup_script()).arg(flag).env("PATH", STANDARD_PATH);
    match root {
        Some(r) => cmd.env("SCR_SETUP_ROOT", r),
        None => cmd.env_remove("SCR_SETUP_ROOT"),
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "setup.sh {flag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// package -> the paths that prove it, as setup found them on this machine.
fn proofs() -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in setup("--proofs", None) {
        let (pkg, path) = line.split_once('\t').expect("package<TAB>path");
        map.entry(pkg.into()).or_default().push(path.into());
    }
    map
}

/// A fake root holding placeholders for the given proofs and the image's look-alikes.
fn fake_root(proofs: &BTreeMap<String, Vec<String>>, without: Option<&str>) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let lookalikes = [
        "/usr/lib/x86_64-linux-gnu/libclang-cpp.so.14",
        "/usr/lib/llvm-14/lib/libclang-cpp.so.14",
        "/usr/lib/llvm-14/lib/libclang-cpp.so",
    ];
    let kept = proofs
        .iter()
        .filter(|(pkg, _)| Some(pkg.as_str()) != without)
        .flat_map(|(_, paths)| paths.iter().map(String::as_str));
    for path in kept.chain(lookalikes) {
        let file = root.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    root
}

#[test]
fn setup_asks_for_each_missing_package_and_nothing_else() {
    let proofs = proofs();
    assert!(
        setup("--check", None).is_empty(),
        "run scripts/setup.sh first: it reports {:?} missing",
        setup("--check", None)
    );
    for pkg in [
        "libclang-dev",
        "libmpich-dev",
        "mpich",
        "gfortran",
        "cmake",
        "lmod",
        "slurm-wlm",
        "mariadb-server-core",
        "mariadb-client-core",
    ] {
        assert!(proofs.contains_key(pkg), "no proof for {pkg}: {proofs:?}");
    }

    let all = fake_root(&proofs, None);
    assert_eq!(setup("--check", Some(all.path())), Vec::<String>::new());
    for pkg in proofs.keys() {
        let root = fake_root(&proofs, Some(pkg));
        assert_eq!(
            setup("--check", Some(root.path())),
            vec![pkg.clone()],
            "a root without {pkg}'s files"
        );
    }
    // an empty root lacks every package
    let empty = tempfile::tempdir().unwrap();
    let asked = setup("--check", Some(empty.path()));
    assert_eq!(asked.len(), proofs.len(), "{asked:?}");
}

/// Who ships `path`: dpkg's owner of the path itself, else of the file it resolves to
/// (alternatives and symbolic links such as /usr/bin/cc are not owned by any package), or
/// its name before /usr was merged (dpkg records /bin/ip, found as /usr/bin/ip).
fn owner(path: &str) -> Option<String> {
    let resolved = std::fs::canonicalize(path).unwrap();
    let unmerged = |p: &Path| {
        p.strip_prefix("/usr")
            .ok()
            .map(|rest| Path::new("/").join(rest))
    };
    let candidates = [Some(Path::new(path).to_path_buf()), Some(resolved.clone())]
        .into_iter()
        .chain([unmerged(Path::new(path)), unmerged(&resolved)])
        .flatten();
    for p in candidates {
        let out = Command::new("dpkg").arg("-S").arg(p).output().unwrap();
        if out.status.success() {
            let text = String::from_utf8(out.stdout).unwrap();
            let pkg = text.split(':').next().unwrap().trim().to_string();
            return Some(pkg);
        }
    }
    None
}

/// The package and everything it depends on, recursively.
fn closure(pkg: &str) -> Vec<String> {
    let out = Command::new("apt-cache")
        .args([
            "depends",
            "--recurse",
            "--no-recommends",
            "--no-suggests",
            "--no-conflicts",
            "--no-breaks",
            "--no-replaces",
            "--no-enhances",
            "--installed",
            pkg,
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches("|")
                .trim_start_matches("Depends: ")
                .trim_start_matches("PreDepends: ")
                .trim_matches(|c| c == '<' || c == '>')
                .split(':')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn every_proof_is_a_file_of_the_package_setup_installs() {
    for (pkg, paths) in proofs() {
        let deps = closure(&pkg);
        for path in paths {
            let owner = owner(&path).unwrap_or_else(|| panic!("no package owns {path}"));
            assert!(
                deps.contains(&owner),
                "{path} belongs to {owner}, which {pkg} does not pull in ({deps:?})"
            );
        }
    }
}

/// Every documented command that builds or runs MPI programs on its own (the fault
/// campaign, the history checker, each benchmark) installs what is missing before it
/// builds: on a fresh machine it must not stop in the mpi crate's build script.
#[test]
fn every_script_that_builds_installs_what_it_needs_first() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut scripts = vec![
        root.join("tests/cluster/faults.sh"),
        root.join("scripts/histories.sh"),
    ];
    for entry in std::fs::read_dir(root.join("benches")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sh") {
            scripts.push(path);
        }
    }
    assert!(scripts.len() > 5, "{scripts:?}");
    for script in scripts {
        let text = std::fs::read_to_string(&script).unwrap();
        let commands: Vec<&str> = text
            .lines()
            .map(str::trim_start)
            .filter(|l| !l.starts_with('#'))
            .collect();
        let first = |pattern: &str| commands.iter().position(|l| l.contains(pattern));
        let setup = first("scripts/setup.sh --no-build");
        let build = ["cargo build", "mpicc", "cargo run"]
            .iter()
            .filter_map(|p| first(p))
            .min();
        assert!(
            build.is_some(),
            "{} builds nothing: is it still one of these?",
            script.display()
        );
        assert!(
            setup.is_some() && setup < build,
            "{} builds before it runs `./scripts/setup.sh --no-build`",
            script.display()
        );
    }
}
