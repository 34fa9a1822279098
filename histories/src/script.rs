//! A history as the shell script that does the same: every run's `mpiexec` line, every fault
//! as the command that does it, every operator command; paths below the job directory as
//! `$J`, so the script runs anywhere.

use crate::history::History;
use std::path::{Path, PathBuf};

/// The commands a history ran, as it ran them.
#[derive(Debug)]
pub struct Transcript {
    job: PathBuf,
    head: Vec<String>,
    lines: Vec<String>,
}

impl Transcript {
    /// A transcript for a history run in `job` with the application `app` and `scr`.
    pub fn new(job: &Path, app: &Path, scr: &Path, history: &History) -> Transcript {
        let head = vec![
            "#!/bin/sh".into(),
            format!(
                "# history {} of scr-histories (replay: ./scripts/histories.sh --replay {}), {} step(s)",
                history.seed,
                history.seed,
                history.steps.len()
            ),
            "# Every run's application (histories/app/hist_app.c) checks each byte it restarts from;".into(),
            "# lines 'hist: attempt NAME verified=0' mean SCR handed it bytes that checkpoint never wrote.".into(),
            "set -eu".into(),
            format!("APP=${{APP:-{}}}", app.display()),
            format!("SCR=${{SCR:-{}}}", scr.display()),
            "J=$(mktemp -d)".into(),
            "mkdir \"$J/prefix\" \"$J/cache\" \"$J/cntl\"".into(),
            "echo \"SCR_CNTL_BASE=$J/cntl\" > \"$J/scr.conf\"".into(),
            // every SCR_* and SLURM_* variable of the caller's (not `SCR`, the command's path)
            "for v in $(env | sed -n 's/^\\(S[CL][RU][A-Z]*_[A-Z0-9_]*\\)=.*/\\1/p'); do unset \"$v\"; done".into(),
            format!(
                "export SCR_SYSTEM_CONF_FILE=\"$J/scr.conf\" SCR_CACHE_BASE=\"$J/cache\" SCR_PREFIX=\"$J/prefix\" SCR_JOB_ID={} MPIEXEC_TIMEOUT=60",
                crate::driver::JOB_ID
            ),
            "cd \"$J/prefix\"".into(),
        ];
        Transcript {
            job: job.to_path_buf(),
            head,
            lines: Vec::new(),
        }
    }

    /// `p` with the job directory written `$J`, quoted for the shell.
    pub fn path(&self, p: &Path) -> String {
        match p.strip_prefix(&self.job) {
            Ok(rest) => format!("\"$J/{}\"", rest.display()),
            Err(_) => format!("'{}'", p.display()),
        }
    }

    /// A run of `ranks` ranks on `hosts` with `env` and the application's `args`.
    pub fn run(&mut self, env: &[(String, String)], hosts: &str, ranks: u32, args: &[String]) {
        let vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        self.lines.push(format!(
            "env {} mpiexec -launcher fork -hosts {hosts} -n {ranks} \"$APP\" {} || true",
            vars.join(" "),
            args.join(" ")
        ));
    }

    /// A command as it stands.
    pub fn line(&mut self, line: &str) {
        self.lines.push(line.to_string());
    }

    /// A comment.
    pub fn comment(&mut self, text: &str) {
        for l in text.lines() {
            self.lines.push(format!("# {l}"));
        }
    }

    /// The script.
    pub fn script(&self) -> String {
        let mut s = self.head.join("\n");
        s.push('\n');
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str("\"$SCR\" index -p \"$J/prefix\" || true\n");
        s
    }
}
