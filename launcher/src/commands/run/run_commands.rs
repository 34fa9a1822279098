//! SCR v3.1's `scr_run --run-cmd/--restart-cmd`: which command each run launches, and the
//! checkpoint a restart would load.

use super::fail;
use scr::layout;

/// SCR v3.1's `scr_run` commands among the launcher's arguments: `-rc`/`--run-cmd` is run
/// when there is no checkpoint to restart from, `-rs`/`--restart-cmd` when there is one
/// (with SCR_CKPT_NAME replaced by its name). Each is split at white space into arguments;
/// no shell reads them.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct RunCommands {
    pub(super) run: Option<String>,
    pub(super) restart: Option<String>,
}

/// Takes `-rc CMD`, `-rc=CMD`, `--run-cmd CMD`, `--run-cmd=CMD` and the same of `-rs` /
/// `--restart-cmd` out of the launcher's arguments, up to the program the launcher runs
/// (or `--`): what follows the program is the program's own (an application may have a
/// `-rs` option of its own).
pub(super) fn take_run_commands(command: &mut Vec<String>) -> scr::Result<RunCommands> {
    let mut found = RunCommands::default();
    let mut i = 1;
    while i < command.len() {
        let arg = &command[i];
        if arg == "--" || (!arg.starts_with('-') && names_a_program(arg)) {
            break;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (arg.as_str(), None),
        };
        let slot = match flag {
            "-rc" | "--run-cmd" => &mut found.run,
            "-rs" | "--restart-cmd" => &mut found.restart,
            _ => {
                i += 1;
                continue;
            }
        };
        let flag = flag.to_string();
        command.remove(i);
        let value = match inline {
            Some(v) => v,
            None if i < command.len() => command.remove(i),
            None => return Err(fail(format!("{flag} needs a command"))),
        };
        if value.split_whitespace().next().is_none() {
            return Err(fail(format!("{flag} needs a command, not an empty one")));
        }
        *slot = Some(value);
    }
    Ok(found)
}

/// Whether a launcher argument names the program to run: a path to an executable file, or
/// an executable's name on the PATH (a value such as the `4` of `-n 4` is neither).
fn names_a_program(arg: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if arg.contains('/') {
        return executable(std::path::Path::new(arg));
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| executable(&d.join(arg))))
}

/// The command line of one run: the launcher and its arguments, then the run or restart
/// command v3.1's `--run-cmd`/`--restart-cmd` gave (the restart one when `restart` names
/// the checkpoint a restart would load).
pub(super) fn launch_line(
    base: &[String],
    commands: &RunCommands,
    restart: Option<&str>,
) -> Vec<String> {
    let mut line = base.to_vec();
    let chosen = match (restart, &commands.restart) {
        (Some(name), Some(cmd)) => Some(cmd.replace("SCR_CKPT_NAME", name)),
        _ => commands.run.clone(),
    };
    if let Some(cmd) = chosen {
        line.extend(cmd.split_whitespace().map(str::to_string));
    }
    line
}

/// The checkpoint a restart of the job would load, as far as the prefix tells: the newest
/// of those the flush file says this allocation holds and the index's restart choice.
pub(super) fn restart_name(prefix: &std::path::Path) -> Option<String> {
    let cached =
        super::super::read_state::<scr::flush::FlushFile>(prefix, &layout::flush_file(prefix))
            .ok()
            .and_then(|f| {
                f.datasets()
                    .into_iter()
                    .rev()
                    .find(|&d| f.is_checkpoint(d))
                    .and_then(|d| f.name(d).map(|n| (d, n.to_string())))
            });
    let link = scr::prefix::read_current_link(prefix);
    let on_prefix =
        super::super::read_state::<scr::index::IndexFile>(prefix, &layout::index_file(prefix))
            .ok()
            .and_then(|i| {
                i.restart_candidates(link.as_deref())
                    .into_iter()
                    .next()
                    .map(|e| (e.id, e.name))
            });
    [cached, on_prefix]
        .into_iter()
        .flatten()
        .max_by_key(|(id, _)| *id)
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn run_commands_are_taken_before_the_program_never_from_its_arguments() {
        let mut line = args("srun -N 2 -rc=/bin/true --restart-cmd /bin/echo SCR_CKPT_NAME");
        let found = take_run_commands(&mut line).unwrap();
        assert_eq!(found.run.as_deref(), Some("/bin/true"));
        assert_eq!(found.restart.as_deref(), Some("/bin/echo"));
        assert_eq!(line, args("srun -N 2 SCR_CKPT_NAME"));
        // the application's own -rs, and everything after `--`, are the application's
        for whole in [
            "srun -n 4 /bin/true -rs 5",
            "srun -n 4 true -rs 5",
            "srun -- x -rc y",
        ] {
            let mut line = args(whole);
            assert_eq!(
                take_run_commands(&mut line).unwrap(),
                RunCommands::default()
            );
            assert_eq!(line, args(whole));
        }
        let mut line = args("srun -rc");
        assert!(take_run_commands(&mut line).is_err());
    }

    #[test]
    fn a_launch_line_takes_the_restart_command_only_with_a_checkpoint() {
        let commands = RunCommands {
            run: Some("./app fresh".into()),
            restart: Some("./app --from SCR_CKPT_NAME".into()),
        };
        let base = args("srun -N 2");
        assert_eq!(
            launch_line(&base, &commands, None),
            args("srun -N 2 ./app fresh")
        );
        assert_eq!(
            launch_line(&base, &commands, Some("ckpt.7")),
            args("srun -N 2 ./app --from ckpt.7")
        );
    }
}
