//! A hostile neighbour on a shared prefix: the job's prefix is a directory everyone can
//! write (1777, as scratch areas and /tmp are), and the neighbour is another user (nobody,
//! through setpriv).

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

    pub fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = self.job.command(None, 2, args, env);
        // the user chose this prefix knowing anyone may write it
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

    pub fn index(&self) -> scr::index::IndexFile {
        scr::index::IndexFile::read(&scr::layout::index_file(&self.prefix)).unwrap()
    }
}

/// Runs a shell command as another user (nobody).
pub fn as_nobody(script: &str) {
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            script,
        ])
        .output()
        .expect("setpriv (util-linux)");
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
