//! `scr halt` (SCR's `scr_halt`): set, list or remove the conditions that stop a job — the
//! library checks them after every checkpoint, the launcher before every relaunch.

use chrono::{DateTime, Duration, Local, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use scr::halt::{
    CHECKPOINTS_LEFT, EXIT_AFTER, EXIT_BEFORE, EXIT_NOW, EXIT_REASON, HALT_SECONDS, HaltFile,
    reasons,
};
use scr::{Error, HashView, layout};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Stop a job after its next checkpoint, or at a time; list or remove halt conditions",
    long_about = "Update <prefix>/.scr/halt.scr of each PREFIX (default: SCR_PREFIX, else the working \
                  directory). Without a condition the job halts after its next checkpoint (ExitReason \
                  JOB_HALTED): SCR_Should_exit tells the application, which ends itself, and \
                  scr-run does not relaunch it (with SCR_HALT_EXIT=1 SCR exits the application \
                  itself, as SCR v2.0 did); with --immediate scr-run stops it at once. TIME is SCR's ISO form \
                  '2026-12-04T21:00:00' in local time, or '3pm', '3pm tomorrow', '15:30', \
                  '2026-12-01 08:00', '+30m' (s, m, h, d), or '@EPOCH'. Prints what it sets and \
                  unsets, then the halt file's settings, as SCR's scr_halt.\n\n\
                  Exit code: 1 if any halt file could not be updated.",
    disable_help_flag = true
)]
pub struct Args {
    /// Halt after N more checkpoints
    #[arg(short = 'c', long, value_name = "N", allow_negative_numbers = true,
          value_parser = count_of("checkpoints"))]
    checkpoints: Option<i64>,
    /// Halt before TIME (with --seconds: that many seconds before it)
    #[arg(short = 'b', long, value_name = "TIME")]
    before: Option<String>,
    /// Halt after TIME
    #[arg(short = 'a', long, value_name = "TIME")]
    after: Option<String>,
    /// Seconds before the allocation end (or --before) to halt
    #[arg(short = 's', long, value_name = "N", allow_negative_numbers = true,
          value_parser = count_of("seconds"))]
    seconds: Option<i64>,
    /// Stop the running job now, not after its next checkpoint (scr-run kills the run and
    /// does not relaunch; the drain still runs). With no scr-run watching the prefix, a
    /// warning says so: the job then halts at its next check of the halt file
    #[arg(short = 'i', long)]
    immediate: bool,
    /// Only list the conditions
    #[arg(short = 'l', long)]
    list: bool,
    #[arg(long)]
    unset_checkpoints: bool,
    #[arg(long)]
    unset_before: bool,
    #[arg(long)]
    unset_after: bool,
    #[arg(long)]
    unset_seconds: bool,
    #[arg(long)]
    unset_reason: bool,
    /// Remove the halt file
    #[arg(short = 'r', long)]
    remove: bool,
    /// Also say which halt file each prefix has
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Print help
    #[arg(short = 'h', long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Prefix directories of the jobs to halt
    prefixes: Vec<PathBuf>,
    /// A prefix directory, as the other commands take it (SCR's own scr_halt takes them
    /// as operands only; both may be given)
    #[arg(short = 'p', long = "prefix", value_name = "DIR")]
    prefix_option: Vec<PathBuf>,
}

/// A parser of a count of `what` (0 or more) that names what a negative number or a word
/// should have been; clap's own message would take `-5` for an option and suggest `-- -5`,
/// which makes it a prefix.
fn count_of(what: &'static str) -> impl Fn(&str) -> Result<i64, String> + Clone {
    move |text| match text.parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n),
        Ok(_) => Err(format!("a number of {what} is 0 or more")),
        Err(_) => Err(format!("expected a whole number of {what} (0 or more)")),
    }
}

/// Parses the TIME forms `scr halt` accepts, relative to `now`.
pub fn parse_time(text: &str, now: DateTime<Local>) -> Result<DateTime<Local>, String> {
    let t = text.trim().to_ascii_lowercase();
    let bad = || {
        format!(
            "cannot read time {text:?}: use SCR's ISO form '2026-12-04T21:00:00' (local time), \
             or '3pm', '3pm tomorrow', '15:30', '2026-12-01 08:00', '+30m' or '@EPOCH'"
        )
    };
    if let Some(epoch) = t.strip_prefix('@') {
        let secs: i64 = epoch.parse().map_err(|_| bad())?;
        return Local.timestamp_opt(secs, 0).single().ok_or_else(bad);
    }
    if let Some(rel) = t.strip_prefix('+') {
        let (num, unit) =
            rel.split_at(rel.find(|c: char| !c.is_ascii_digit()).unwrap_or(rel.len()));
        let n: i64 = num.parse().map_err(|_| bad())?;
        let secs = match unit.trim() {
            "" | "s" | "sec" | "secs" | "seconds" => n,
            "m" | "min" | "mins" | "minutes" => n * 60,
            "h" | "hour" | "hours" => n * 3600,
            "d" | "day" | "days" => n * 86400,
            _ => return Err(bad()),
        };
        return Ok(now + Duration::seconds(secs));
    }
    // `t` is lower case: SCR's ISO `T` separator reads as `t`
    for fmt in [
        "%Y-%m-%dt%H:%M:%S",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dt%H:%M",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(&t, fmt) {
            return Local.from_local_datetime(&n).earliest().ok_or_else(bad);
        }
    }
    let (clock, day, day_named) = match t.rsplit_once(' ') {
        Some((c, "today")) => (c, 0, true),
        Some((c, "tomorrow")) => (c, 1, true),
        _ => (t.as_str(), 0, false),
    };
    let time = if let Some(h) = clock
        .strip_suffix("am")
        .or_else(|| clock.strip_suffix("pm"))
    {
        let (h, m) = h.trim().split_once(':').unwrap_or((h.trim(), "0"));
        let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if !(1..=12).contains(&h) {
            return Err(bad());
        }
        let h24 = h % 12 + if clock.ends_with("pm") { 12 } else { 0 };
        NaiveTime::from_hms_opt(h24, m, 0).ok_or_else(bad)?
    } else {
        NaiveTime::parse_from_str(clock, "%H:%M:%S")
            .or_else(|_| NaiveTime::parse_from_str(clock, "%H:%M"))
            .map_err(|_| bad())?
    };
    let date: NaiveDate = now.date_naive() + Duration::days(day);
    let when = Local
        .from_local_datetime(&date.and_time(time))
        .earliest()
        .ok_or_else(bad)?;
    // a clock time alone that has passed today is more likely tomorrow's than a halt at once;
    // neither is guessed: the job would stop at its next check, or a day later than meant
    if when < now && !day_named {
        return Err(format!(
            "{text:?} today has passed (it is {}); say '{text} tomorrow', give the date \
                ('{}'), or '{text} today' to halt at the job's next check",
            now.format("%H:%M"),
            (date + Duration::days(1))
                .and_time(time)
                .format("%Y-%m-%d %H:%M")
        ));
    }
    Ok(when)
}

/// The halt file's settings as SCR's scr_halt prints them, under `Halt file settings for
/// <file>:` (`None` when there are none).
fn show(path: &std::path::Path, halt: &HaltFile) -> String {
    let when = |t: i64| {
        Local
            .timestamp_opt(t, 0)
            .single()
            .map(|d| d.format("%c").to_string())
            .unwrap_or_else(|| t.to_string())
    };
    let mut out = String::new();
    if let Some(r) = halt.exit_reason_shown() {
        out += &format!("  ExitReason:      {r}\n");
    }
    if let Some(n) = halt.checkpoints_left() {
        out += &format!("  CheckpointsLeft: {n}\n");
    }
    if let Some(t) = halt.exit_after() {
        out += &format!("  ExitAfter:       {}\n", when(t));
    }
    if let Some(t) = halt.exit_before() {
        out += &format!("  ExitBefore:      {}\n", when(t));
    }
    if let Some(s) = halt.halt_seconds() {
        out += &format!("  HaltSeconds:     {s}\n");
    }
    if let (Some(t), Some(s)) = (halt.exit_before(), halt.halt_seconds()) {
        out += &format!(
            "  ExitBefore - HaltSeconds: {}\n",
            when(t.saturating_sub(s))
        );
    }
    if halt.exit_now() {
        out += "  ExitNow:         yes (a scr-run watching the prefix stops the running job at once)\n";
    }
    if out.is_empty() {
        out = "  None\n".into();
    }
    format!("Halt file settings for {}:\n{out}", path.display())
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    let now = Local::now();
    let parse = |t: &Option<String>, flag: &str| -> scr::Result<Option<i64>> {
        t.as_ref()
            .map(|t| {
                parse_time(t, now)
                    .map(|d| d.timestamp())
                    .map_err(|what| Error::Config {
                        origin: format!("scr halt {flag}"),
                        what,
                    })
            })
            .transpose()
    };
    let before = parse(&args.before, "--before")?;
    let after = parse(&args.after, "--after")?;
    // the prefix as every command finds it: given, else SCR_PREFIX (environment or
    // configuration), else the working directory
    let mut args = args;
    args.prefixes.append(&mut args.prefix_option);
    let params = scr::params::Params::load(&scr::params::Sources::from_process())?;
    let prefixes = if args.prefixes.is_empty() {
        vec![super::owners_prefix_dir(None, &params)?]
    } else {
        // root acts as the first prefix's owner: another user's prefix after it is refused
        for p in &args.prefixes {
            super::owners_prefix_dir(Some(p.clone()), &params)?;
        }
        args.prefixes.clone()
    };
    let mut failed = false;
    for prefix in prefixes {
        // a mistyped prefix halts nothing: say so rather than create it
        if !prefix.is_dir() {
            eprintln!(
                "scr_halt: ERROR: {}: no such directory; give the prefix of the job to halt \
                 (its SCR_PREFIX, the directory its checkpoints are flushed to)",
                prefix.display()
            );
            failed = true;
            continue;
        }
        match change_halt_file(&args, &prefix, before, after) {
            Ok(text) => {
                print!("{text}");
                if !args.list {
                    log_change(&args, &params, &prefix, before, after);
                }
                if args.immediate && !scr::prefix::watch::is_watched(&prefix) {
                    eprintln!(
                        "scr_halt: WARNING: no scr-run watches {}: nothing stops the running \
                         job at once; a job launched without scr-run halts at its next check \
                         of the halt file (SCR_Should_exit, or the end of its next checkpoint). \
                         To stop it now, cancel it through its resource manager (scancel) or \
                         kill its launcher",
                        prefix.display()
                    );
                }
            }
            Err(e) => {
                eprintln!("scr_halt: ERROR: {e}");
                failed = true;
            }
        }
    }
    Ok(ExitCode::from(u8::from(failed)))
}

/// The change to the halt file of `prefix` in the database log (SCR_LOG_DB_ENABLE), under
/// the job of that prefix: one `SCR_HALT` record of what was set, unset or removed.
fn log_change(
    args: &Args,
    params: &scr::params::Params,
    prefix: &std::path::Path,
    before: Option<i64>,
    after: Option<i64>,
) {
    // root acting as the prefix's owner logs in the owner's name, as the owner's jobs do
    let Some(db) = super::db_log(params, prefix, params.typed().places.effective_user()) else {
        return;
    };
    let mut fields: Vec<(&str, String)> = Vec::new();
    if args.remove {
        fields.push(("removed", "1".into()));
    }
    for (key, value) in [
        ("checkpoints", args.checkpoints),
        ("before", before),
        ("after", after),
        ("seconds", args.seconds),
    ] {
        if let Some(v) = value {
            fields.push((key, v.to_string()));
        }
    }
    for (key, flag) in [
        ("unset_checkpoints", args.unset_checkpoints),
        ("unset_before", args.unset_before),
        ("unset_after", args.unset_after),
        ("unset_seconds", args.unset_seconds),
        ("unset_reason", args.unset_reason),
        ("immediate", args.immediate),
    ] {
        if flag {
            fields.push((key, "1".into()));
        }
    }
    if fields.is_empty() {
        fields.push(("reason", reasons::JOB_HALTED.into()));
    }
    db.record("SCR_HALT", Local::now(), &fields);
    db.close(super::DB_LOG_WAIT);
}

/// What `args` ask of the halt file of `prefix` (remove, list, or change it, with the
/// times already parsed); returns what to print: for a change, SCR's `Setting …` and
/// `Unsetting …` lines (in its order), then the settings.
fn change_halt_file(
    args: &Args,
    prefix: &std::path::Path,
    before: Option<i64>,
    after: Option<i64>,
) -> scr::Result<String> {
    let path = layout::halt_file(prefix);
    let mut out = String::new();
    if args.verbose {
        out += &format!("scr_halt: halt file {}\n", path.display());
    }
    if args.remove {
        scr::io::remove_durably(&path)?;
        return Ok(format!(
            "{out}Updating halt file {}: removed (no halt condition is left)\n",
            path.display()
        ));
    }
    if args.list {
        let halt = match super::read_state::<HaltFile>(prefix, &path) {
            Ok(h) => h,
            Err(e) if e.is_not_found() => HaltFile::new(),
            Err(e) => return Err(e),
        };
        return Ok(out + &show(&path, &halt));
    }
    let sets_something =
        args.checkpoints.is_some() || before.is_some() || after.is_some() || args.seconds.is_some();
    let unsets = args.unset_checkpoints
        || args.unset_before
        || args.unset_after
        || args.unset_seconds
        || args.unset_reason;
    // no condition given (or --immediate): the job halts at its next check
    let halt_now = (!sets_something && !unsets) || args.immediate;
    // SCR's order of the lines
    for (set, unset, key) in [
        (
            args.checkpoints.is_some(),
            args.unset_checkpoints,
            CHECKPOINTS_LEFT,
        ),
        (after.is_some(), args.unset_after, EXIT_AFTER),
        (before.is_some(), args.unset_before, EXIT_BEFORE),
        (args.seconds.is_some(), args.unset_seconds, HALT_SECONDS),
        (halt_now, args.unset_reason, EXIT_REASON),
    ] {
        if set {
            out += &format!("Setting {key}\n");
        } else if unset {
            out += &format!("Unsetting {key}\n");
        }
    }
    out += "\n";
    // an administrator may halt a user's job: an existing `.scr` passed check_prefix's
    // test for that; only a missing one is created (as this user's)
    let hidden = layout::prefix_hidden_dir(prefix);
    if std::fs::symlink_metadata(&hidden).is_err() {
        scr::safe_fs::create_dirs_in(prefix, &hidden, scr::layout::HIDDEN_DIR_MODE)?;
    }
    // a halt file that does not decode (an older version left it everyone's to write) is
    // replaced by what the user asks for, never a reason the user cannot halt their own job
    if let Err(e) = HaltFile::read(&path)
        && e.kind() == scr::ErrorKind::Corrupt
    {
        eprintln!(
            "{}: WARNING: {e}; replacing it with the conditions given",
            crate::program_name()
        );
        scr::io::remove_durably(&path)?;
    }
    let shown = HaltFile::change(&path, |halt| {
        for (flag, key) in [
            (args.unset_checkpoints, CHECKPOINTS_LEFT),
            (args.unset_before, EXIT_BEFORE),
            (args.unset_after, EXIT_AFTER),
            (args.unset_seconds, HALT_SECONDS),
            (args.unset_reason, EXIT_REASON),
            (args.unset_reason, EXIT_NOW),
        ] {
            if flag {
                halt.unset(key);
            }
        }
        if let Some(n) = args.checkpoints {
            halt.set_checkpoints_left(n);
        }
        if let Some(t) = before {
            halt.set_exit_before(t);
        }
        if let Some(t) = after {
            halt.set_exit_after(t);
        }
        if let Some(s) = args.seconds {
            halt.set_halt_seconds(s);
        }
        if halt_now {
            halt.set_exit_reason(reasons::JOB_HALTED);
        }
        if args.immediate {
            halt.set_exit_now();
        }
        Ok(show(&path, halt))
    })?;
    Ok(format!(
        "Updating halt file {}\n{out}{shown}",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A negative count is refused naming what it counts, not taken for an option (with
    /// clap's advice to write `-- -5`, which would name a prefix `-5`).
    #[test]
    fn a_negative_count_is_refused_as_a_count() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Halt {
            #[command(flatten)]
            args: Args,
        }
        let refused = |argv: &[&str]| {
            let full = std::iter::once("scr-halt").chain(argv.iter().copied());
            match Halt::try_parse_from(full) {
                Ok(_) => panic!("{argv:?} parsed"),
                Err(e) => e.to_string(),
            }
        };
        for (argv, says) in [
            (
                &["--seconds", "-5", "/p"][..],
                "a number of seconds is 0 or more",
            ),
            (&["-s", "-5"][..], "a number of seconds is 0 or more"),
            (
                &["-c", "-1", "/p"][..],
                "a number of checkpoints is 0 or more",
            ),
            (
                &["--seconds", "soon"][..],
                "expected a whole number of seconds",
            ),
        ] {
            let e = refused(argv);
            assert!(e.contains(says) && !e.contains("-- -"), "{argv:?}: {e}");
        }
        let ok = Halt::try_parse_from(["scr-halt", "-s", "0", "-c", "3", "/p"]).unwrap();
        assert_eq!((ok.args.seconds, ok.args.checkpoints), (Some(0), Some(3)));
    }

    #[test]
    fn times() {
        let now = Local.with_ymd_and_hms(2026, 11, 22, 10, 0, 0).unwrap();
        let at = |s: &str| {
            parse_time(s, now)
                .unwrap()
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        };
        assert_eq!(at("3pm"), "2026-11-22 15:00:00");
        assert_eq!(at("3pm today"), "2026-11-22 15:00:00");
        assert_eq!(at("12am tomorrow"), "2026-11-23 00:00:00");
        assert_eq!(at("12:30pm"), "2026-11-22 12:30:00");
        assert_eq!(at("15:30"), "2026-11-22 15:30:00");
        assert_eq!(at("2026-12-01 08:00"), "2026-12-01 08:00:00");
        // the form SCR v3.1's scr_halt takes, and its user guide shows
        assert_eq!(at("2026-12-04T21:00:00"), "2026-12-04 21:00:00");
        assert_eq!(at("2023-07-04T21:00:00"), "2023-07-04 21:00:00");
        assert_eq!(at("2026-12-04T21:00"), "2026-12-04 21:00:00");
        assert_eq!(at("+30m"), "2026-11-22 10:30:00");
        assert_eq!(at("+2h"), "2026-11-22 12:00:00");
        assert_eq!(
            parse_time("@1800000000", now).unwrap().timestamp(),
            1_800_000_000
        );
        // a clock time alone already past is refused, naming the ways to say it; a day named
        // is taken as said
        let past = parse_time("9:30", now).unwrap_err();
        assert!(!past.contains("  "), "{past:?}");
        assert!(
            past.contains("'9:30 tomorrow'") && past.contains("2026-11-23 09:30"),
            "{past}"
        );
        assert!(parse_time("9am", now).is_err());
        assert_eq!(at("9:30 today"), "2026-11-22 09:30:00");
        assert_eq!(at("9:30 tomorrow"), "2026-11-23 09:30:00");
        assert_eq!(at("10:00"), "2026-11-22 10:00:00");
        for bad in [
            "13pm",
            "later",
            "+5x",
            "25:00",
            "",
            "2026-13-04T21:00:00",
            "2026-12-04X21:00:00",
        ] {
            assert!(parse_time(bad, now).is_err(), "{bad}");
        }
    }
}

#[derive(clap::Args)]
#[command(
    about = "Change one halt file directly (SCR's scr_halt_cntl: -xc/-xb/-xa/-xs/-xr unset)",
    long_about = "Change the halt file FILE under its lock, as SCR's scr_halt_cntl does: -c N \
                  checkpoints left, -b EPOCH exit before, -a EPOCH exit after, -s N halt seconds, \
                  -r REASON exit reason; -xc, -xb, -xa, -xs, -xr unset them; -l lists. Exit 1 on \
                  failure.",
    disable_help_flag = true
)]
pub struct CntlArgs {
    /// SCR's flags, in its spelling (-f FILE, -c N, -xc …)
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "FLAGS"
    )]
    flags: Vec<String>,
}

/// `scr halt-cntl -f FILE …` with SCR's hand-written flags (`-xc` is one flag, not two).
pub fn cntl(args: CntlArgs) -> scr::Result<ExitCode> {
    let usage = |what: String| Error::Config {
        origin: "scr halt-cntl".into(),
        what: format!(
            "{what}; usage: scr halt-cntl -f FILE [-l] [-c N] [-b EPOCH] [-a EPOCH] [-s N] [-r REASON] [-xc|-xb|-xa|-xs|-xr]"
        ),
    };
    let mut file: Option<PathBuf> = None;
    let mut list = false;
    let mut changes: Vec<(&str, Option<String>)> = Vec::new();
    let mut it = args.flags.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| usage(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "-f" => file = Some(PathBuf::from(value()?)),
            "-l" => list = true,
            "-c" => changes.push((CHECKPOINTS_LEFT, Some(value()?))),
            "-b" => changes.push((EXIT_BEFORE, Some(value()?))),
            "-a" => changes.push((EXIT_AFTER, Some(value()?))),
            "-s" => changes.push((HALT_SECONDS, Some(value()?))),
            "-r" => changes.push((EXIT_REASON, Some(value()?))),
            "-xc" => changes.push((CHECKPOINTS_LEFT, None)),
            "-xb" => changes.push((EXIT_BEFORE, None)),
            "-xa" => changes.push((EXIT_AFTER, None)),
            "-xs" => changes.push((HALT_SECONDS, None)),
            "-xr" => changes.push((EXIT_REASON, None)),
            "-h" | "--help" => {
                println!("{}", usage(String::from("help")));
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(usage(format!("unknown flag {other}"))),
        }
    }
    let file = file.ok_or_else(|| usage("-f FILE is required".into()))?;
    // the file's directory is a prefix's `.scr`: root acts as the prefix's owner, as
    // `scr halt` does, and the directory must be theirs alone
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let prefix = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(dir);
    let _ = super::act_as_owner_of(prefix)?;
    scr::safe_fs::check_owned_dir(dir)?;
    for (key, value) in &changes {
        if let Some(v) = value
            && *key != EXIT_REASON
            && v.parse::<i64>().is_err()
        {
            return Err(usage(format!("{v:?} is not a number")));
        }
    }
    let shown = HaltFile::change(&file, |halt| {
        for (key, value) in &changes {
            match (key, value) {
                (_, None) => halt.unset(key),
                (&EXIT_REASON, Some(r)) => halt.set_exit_reason(r),
                (&CHECKPOINTS_LEFT, Some(n)) => {
                    halt.set_checkpoints_left(n.parse().expect("checked"))
                }
                (&EXIT_BEFORE, Some(n)) => halt.set_exit_before(n.parse().expect("checked")),
                (&EXIT_AFTER, Some(n)) => halt.set_exit_after(n.parse().expect("checked")),
                (_, Some(n)) => halt.set_halt_seconds(n.parse().expect("checked")),
            }
        }
        Ok(show(&file, halt))
    })?;
    if list || !changes.is_empty() {
        print!("{shown}");
    }
    Ok(ExitCode::SUCCESS)
}
