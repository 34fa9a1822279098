//! Child processes, through duct: every command the launcher runs (SLURM queries, pdsh,
//! ssh, ping, the application) is started here, so a child that fails becomes an error
//! naming the command, its exit status and what it wrote on stderr.

use duct::Expression;
use std::fmt;

/// A child that could not be started or did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildError {
    /// The command line, for the message.
    pub command: String,
    /// Exit code, when it ran and exited.
    pub code: Option<i32>,
    /// What went wrong: its stderr, or why it could not be started.
    pub detail: String,
}

impl fmt::Display for ChildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "`{}` exited with {code}", self.command)?,
            None => write!(f, "`{}` failed", self.command)?,
        }
        let detail = self.detail.trim();
        if detail.is_empty() {
            Ok(())
        } else {
            write!(f, ": {detail}")
        }
    }
}

impl std::error::Error for ChildError {}

/// The expression for `program args…` and its command line for messages. Helpers that
/// only read a child's output close its stdin, so none waits on a terminal; the
/// application keeps the launcher's.
pub fn command<I, S>(program: &str, args: I) -> (Expression, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let args: Vec<String> = args.into_iter().map(|a| a.as_ref().to_string()).collect();
    let line = std::iter::once(program.to_string())
        .chain(args.iter().map(|a| shell_quote(a)))
        .collect::<Vec<_>>()
        .join(" ");
    (duct::cmd(program, args), line)
}

/// What a finished child printed and how it ended.
pub struct Captured {
    /// Its command line, for messages.
    pub command: String,
    pub stdout: String,
    pub stderr: String,
    pub code: Option<i32>,
}

/// Runs `program args…` to the end, capturing both streams, whatever its exit status.
/// Errors only when it could not be started.
pub fn capture<I, S>(program: &str, args: I) -> Result<Captured, ChildError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let (expr, line) = command(program, args);
    let out = expr
        .stdin_null()
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .map_err(|e| not_started(&line, &e))?;
    Ok(Captured {
        command: line,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    })
}

/// Runs `program args…` and returns its stdout; any failure (not started, non-zero exit,
/// killed) is an error carrying its stderr.
pub fn read<I, S>(program: &str, args: I) -> Result<String, ChildError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let out = capture(program, args)?;
    match out.code {
        Some(0) => Ok(out.stdout),
        code => Err(ChildError {
            command: out.command,
            code,
            detail: if code.is_none() {
                format!("killed by a signal; {}", out.stderr)
            } else {
                out.stderr
            },
        }),
    }
}

pub fn not_started(line: &str, e: &std::io::Error) -> ChildError {
    let hint = if e.kind() == std::io::ErrorKind::NotFound {
        " (not found on the PATH: install it or fix PATH)"
    } else {
        ""
    };
    ChildError {
        command: line.to_string(),
        code: None,
        detail: format!("could not be started: {e}{hint}"),
    }
}

/// Quotes a word for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:,=".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_child_reports_its_code_and_stderr() {
        let err = read("sh", ["-c", "echo partial; echo 'no such job' >&2; exit 3"]).unwrap_err();
        assert_eq!(err.code, Some(3));
        assert_eq!(
            err.to_string(),
            "`sh -c 'echo partial; echo '\\''no such job'\\'' >&2; exit 3'` exited with 3: no such job"
        );
        assert_eq!(read("sh", ["-c", "echo fine"]).unwrap(), "fine\n");
    }

    #[test]
    fn a_missing_program_says_so() {
        let err = read("scr-no-such-program", ["x"]).unwrap_err();
        assert_eq!(err.code, None);
        assert!(err.to_string().contains("not found on the PATH"), "{err}");
    }

    #[test]
    fn capture_keeps_both_streams_of_a_failure() {
        let out = capture("sh", ["-c", "echo out; echo err >&2; exit 1"]).unwrap();
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str(), out.code),
            ("out\n", "err\n", Some(1))
        );
    }
}
