//! `scr`: see the library's documentation for the commands.

fn main() -> std::process::ExitCode {
    scr_launcher::main_with(std::env::args_os().collect())
}
