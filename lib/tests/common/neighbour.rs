//! A hostile neighbour on a shared prefix: another user (nobody, through setpriv) who plants
//! files, directories and links where the job (root) works — in a prefix everyone can write
//! (1777, as scratch areas and /tmp are) — or writes where an access control list lets the
//! neighbour's group write.

use super::*;

/// A job whose prefix is a shared directory (1777) of its own.
pub struct Shared {
    pub job: Job,
    pub prefix: PathBuf,
}

impl Shared {
    pub fn new() -> Shared {
        use std::os::unix::fs::PermissionsExt;
        let job = Job::new();
        std::fs::set_permissions(job.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let prefix = job.dir.path().join("shared");
        std::fs::create_dir(&prefix).unwrap();
        std::fs::set_permissions(&prefix, std::fs::Permissions::from_mode(0o1777)).unwrap();
        Shared { job, prefix }
    }

    /// A prefix of the user's that the neighbour's group (nogroup) may write through an
    /// access control list, as projects share a directory: `mode` (sticky or not), the
    /// group's entry, and the same entry as the default every file and directory created
    /// there inherits.
    pub fn shared_by_acl(mode: u32) -> Shared {
        use std::os::unix::fs::PermissionsExt;
        let s = Shared::new();
        std::fs::set_permissions(&s.prefix, std::fs::Permissions::from_mode(mode)).unwrap();
        setfacl(&["-m", "g:65534:rwx", "-d", "-m", "g:65534:rwx"], &s.prefix);
        s
    }

    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = self.job.command(None, 2, args, env);
        // the user chose this prefix knowing others may write it
        cmd.current_dir(&self.prefix)
            .env("SCR_PREFIX", &self.prefix)
            .env("SCR_PREFIX_SHARED", "1");
        cmd
    }

    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
        let out = self.command(args, env).output().unwrap();
        (out.status.success(), text(&out))
    }

    pub fn run_ok(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let (ok, t) = self.run(args, env);
        assert!(ok, "{t}");
        t
    }

    /// A job without SCR_PREFIX_SHARED that must be refused in SCR_Init before any work,
    /// its message naming the prefix, each of `said` and SCR_PREFIX_SHARED=1: the output.
    pub fn refused_before_any_work(&self, said: &[&str]) -> String {
        let o = self
            .command(&["1000", "2"], &[("SCR_FLUSH", "1")])
            .env_remove("SCR_PREFIX_SHARED")
            .output()
            .unwrap();
        let t = text(&o);
        assert!(!o.status.success(), "{t}");
        assert!(t.contains(&self.prefix.display().to_string()), "{t}");
        for s in said.iter().chain(&["SCR_PREFIX_SHARED=1"]) {
            assert!(t.contains(s), "no {s:?}: {t}");
        }
        assert!(!t.contains("checkpoint 1"), "work began: {t}");
        assert!(self.job.cached("rank_0.ckpt").is_empty(), "work began: {t}");
        t
    }

    pub fn index(&self) -> scr::index::IndexFile {
        scr::index::IndexFile::read(&scr::layout::index_file(&self.prefix)).unwrap()
    }
}

/// Runs a shell command as another user (nobody, group nogroup), and says how it went.
pub fn try_as_nobody(script: &str) -> Output {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            script,
        ])
        .output()
        .expect("setpriv (util-linux)")
}

/// Runs a shell command as another user (nobody), which must succeed.
pub fn as_nobody(script: &str) {
    let o = try_as_nobody(script);
    assert!(o.status.success(), "{script}: {}", text(&o));
}

/// A directory of the neighbour's, anyone may read.
pub fn neighbours_dir(parent: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = parent.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// The permission bits of `p`.
pub fn mode_of(p: &Path) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions()) & 0o777
}

/// The prefix's halt file as an older version of SCR left it: everyone's to write, in a
/// `.scr` everyone may enter.
pub fn halt_file_left_everyones(prefix: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let halt = scr::layout::halt_file(prefix);
    std::fs::set_permissions(
        halt.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(&halt, std::fs::Permissions::from_mode(0o666)).unwrap();
    halt
}

/// `setfacl ARGS PATH`, which must succeed.
pub fn setfacl(args: &[&str], path: &Path) {
    let o = Command::new("setfacl")
        .args(args)
        .arg(path)
        .output()
        .expect("setfacl (Debian's acl package: scripts/setup.sh installs it)");
    assert!(o.status.success(), "setfacl {args:?}: {}", text(&o));
}

/// A sticky directory everyone may write (as /tmp is) in the job's directory.
pub fn sticky_tmp(job: &Job) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let tmp = job.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    tmp
}

/// A neighbour's link, in a sticky directory, to `target`.
pub fn neighbours_link(tmp: &Path, name: &str, target: &Path) -> PathBuf {
    let link = tmp.join(name);
    std::os::unix::fs::symlink(target, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    link
}
