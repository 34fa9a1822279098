//! `scr-run <launcher> [args] <app> [args]`: `scr run` under its own name.

fn main() -> std::process::ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    args[0] = "scr-run".into();
    scr_launcher::main_with(args)
}
