//! `scr report [PREFIX]`: a page to look at after a job — the timeline of its runs,
//! checkpoints, flushes, failures and restarts, checkpoint cost and flush bandwidth over
//! time, the time failures cost, the checkpoint interval in use against Young's and Daly's
//! optimum, and where each dataset is — from the prefix's event log (SCR_LOG_ENABLE=1),
//! index and flush file. There is no SCR command like it, so no SCR name.
//!
//! [`figures`] computes from the log, [`datasets`] reads where the datasets are,
//! [`charts`] draws, [`html`] and [`json`] write the outputs.

pub mod charts;
pub mod datasets;
pub mod figures;
pub mod html;
pub mod json;
pub mod launches;
pub mod markup;
pub mod site;
pub mod site_page;
pub mod units;

use scr::event_log;
use scr::flush::FlushFile;
use scr::index::IndexFile;
use scr::params::{Params, Sources};
use scr::{Error, layout};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    about = "Write an HTML report of a job's runs, checkpoints, failures and datasets",
    long_about = "Read the prefix's event log (<prefix>/.scr/log, written when the job runs \
                  with SCR_LOG_ENABLE=1), its index and its flush file, and write one \
                  self-contained HTML page (inline SVG charts and CSS, no script, nothing \
                  fetched) showing: a timeline of the runs with their checkpoints, flushes, \
                  failures and restarts; checkpoint cost and flush bandwidth over time; the \
                  time lost to failures; the checkpoint interval in use against Young's and \
                  Daly's optimum for the measured cost and mean time between failures (as \
                  `scr ckpt-interval` computes them); and which datasets are in cache only, \
                  on the prefix, and current.\n\n\
                  Failures are runs that died (no SCR_Finalize nor halt, and another run \
                  started after them or scr-run saw them end badly; a run scr-run stopped for \
                  `scr halt --immediate`, a SIGTERM or ^C was halted), failed checkpoints and \
                  failed fetches. A run with a halt condition logged (HALT) was halted, \
                  SCR_Finalize or not. Time lost to a \
                  run that died = the work since the checkpoint the next run restarted from \
                  (to the run's last logged event) + the restart (from that event to the next \
                  run's RESTART; from its START only when it is another job, so a queue wait \
                  is not counted); a failed checkpoint loses the time it took. The page \
                  defines every figure it shows.\n\n\
                  The log is read one line at a time in bounded memory, whatever its size or \
                  whoever wrote to it: lines that are no event and lines over 4096 bytes are \
                  skipped, and of a log over 1 GiB only its last GiB is read. The tables and \
                  charts list the newest 1000 runs, checkpoints, flushes, failures … of each \
                  kind; the counts, means, time lost and interval count them all. What was \
                  skipped or not listed is said on the page, in the JSON (\"skipped\", \
                  \"unlisted\") and on standard error.\n\n\
                  The page goes to <prefix>/.scr/report.html unless -o says where ('-' for \
                  standard output), and its path is printed. With --svg or --json alone, only \
                  those are written. Root reporting on another user's prefix reads it as that \
                  user (nothing of root's is read through the user's links) and so writes the \
                  page as that user too: where that user may write, and that user may change \
                  it afterwards; to keep a copy of root's, write it to standard output (-o -) \
                  and redirect it.\n\n\
                  With --db, the page is the site's instead: every job the event log's \
                  database holds (SCR_LOG_DB_HOST, SCR_LOG_DB_NAME, SCR_LOG_DB_USER and its \
                  password as `scr db` takes them; --option-file), or those of --user, --app \
                  and --since: failures per week and per node, time lost, checkpoint cost and \
                  flush bandwidth by application, and each application's interval in use \
                  against Young's and Daly's. A user whose account `scr db grant` gave a \
                  database of their own sees their own jobs alone. It goes to \
                  scr-site-report.html in the working directory unless -o says where.\n\n\
                  Exit codes: 0 written; 1 no event log, or a state file or output that \
                  cannot be read or written, or a database that cannot be read (said)."
)]
pub struct Args {
    /// The prefix directory (default: SCR_PREFIX, scr.conf, the working directory)
    #[arg(value_name = "PREFIX")]
    prefix: Option<PathBuf>,
    /// The prefix directory, as the other commands take it
    #[arg(
        short = 'p',
        long = "prefix",
        value_name = "DIR",
        conflicts_with = "prefix"
    )]
    prefix_option: Option<PathBuf>,
    /// Write the page to FILE ('-': standard output) [default: <prefix>/.scr/report.html]
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write each chart as its own SVG file into DIR (created when missing):
    /// timeline.svg, checkpoint-cost.svg, flush-bandwidth.svg, time-lost.svg, interval.svg
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
    /// Print the computed figures as JSON on standard output (runs, checkpoints, flushes,
    /// failures, time lost, interval in use, Young's and Daly's, datasets by location)
    #[arg(long)]
    json: bool,
    /// The site's page, from the event log's database (SCR_LOG_DB_*) across jobs
    #[arg(long, conflicts_with_all = ["prefix", "prefix_option", "svg"])]
    db: bool,
    /// With --db: only this user's jobs
    #[arg(long, value_name = "USER", requires = "db")]
    user: Option<String>,
    /// With --db: only jobs whose application (the program's name) or job name (the
    /// prefix) holds TEXT
    #[arg(long, value_name = "TEXT", requires = "db")]
    app: Option<String>,
    /// With --db: only events since WHEN (YYYY-MM-DD, YYYY-MM-DD HH:MM, or Nd: N days ago)
    #[arg(long, value_name = "WHEN", requires = "db", value_parser = since)]
    since: Option<chrono::NaiveDateTime>,
    /// With --db: a MariaDB option file (mode 600) with the account's user= and password=
    #[arg(long, value_name = "FILE", requires = "db")]
    option_file: Option<PathBuf>,
}

/// `--since`: a date, a date and time, or `Nd` (N days before now), in local time.
fn since(text: &str) -> Result<chrono::NaiveDateTime, String> {
    if let Some(days) = text.strip_suffix('d')
        && let Ok(days) = days.parse::<u32>()
    {
        return chrono::Duration::try_days(days.into())
            .and_then(|d| chrono::Local::now().naive_local().checked_sub_signed(d))
            .ok_or_else(|| format!("{days} days ago is before any date this takes"));
    }
    for format in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text, format) {
            return Ok(t);
        }
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight"))
        .map_err(|_| {
            format!(
                "{text:?} is no time: expected YYYY-MM-DD, YYYY-MM-DD HH:MM, or Nd (N days ago)"
            )
        })
}

/// What the outputs are made from.
pub struct Report {
    pub prefix: PathBuf,
    pub log: PathBuf,
    pub generated: chrono::DateTime<chrono::Local>,
    pub figures: figures::Figures,
    pub datasets: Vec<datasets::DatasetRow>,
    /// The checkpoint a restart would load.
    pub current: Option<String>,
}

impl Report {
    /// Reads the prefix's log, index, flush file and `scr.current` link.
    pub fn read(prefix: &Path) -> scr::Result<Report> {
        let log = event_log::log_path(prefix);
        // one event at a time: a log of any size (anyone who can write to it may have
        // grown it) takes bounded memory
        let mut so_far = figures::FiguresSoFar::default();
        // scr-run's lines (its launches, how each run ended) read as the database's are
        let mut launches = launches::Launches::default();
        let skipped = event_log::stream(&log, |e| launches.add(e, &mut so_far)).map_err(|e| {
            if e.is_not_found() {
                Error::invalid(
                    &log,
                    "no event log here: run the job with SCR_LOG_ENABLE=1 (and \
                     SCR_LOG_TXT_ENABLE=1, its default: SCR's text log) to record one, give the \
                     prefix the job used, or read the database log with --db",
                )
            } else {
                e
            }
        })?;
        let index: IndexFile = super::read_or_empty(prefix, &layout::index_file(prefix))?;
        let flush: FlushFile = super::read_or_empty(prefix, &layout::flush_file(prefix))?;
        let link = scr::prefix::read_current_link(prefix);
        let datasets = datasets::rows(&index, &flush, link.as_deref());
        let current = datasets.iter().find(|d| d.current).map(|d| d.name.clone());
        Ok(Report {
            prefix: prefix.to_path_buf(),
            log,
            generated: chrono::Local::now(),
            figures: so_far.finish(skipped),
            datasets,
            current,
        })
    }
}

pub fn run(args: Args) -> scr::Result<ExitCode> {
    if args.json && args.output.as_deref() == Some(Path::new("-")) {
        return Err(Error::refused(
            "--json and -o - would both write to standard output: write the page to a file \
             (-o FILE) or leave one of them out",
        ));
    }
    if args.db {
        return run_site(args);
    }
    // (clap's `requires` counts a flag's default as given: said here instead)
    for (given, flag) in [
        (args.user.is_some(), "--user"),
        (args.app.is_some(), "--app"),
        (args.since.is_some(), "--since"),
        (args.option_file.is_some(), "--option-file"),
    ] {
        if given {
            return Err(Error::refused(format!(
                "{flag} chooses what the site's page (--db) reads from the database: add --db, \
                 or leave {flag} out for one prefix's page"
            )));
        }
    }
    let params = Params::load(&Sources::from_process())?;
    let prefix = super::owners_prefix_dir(args.prefix.or(args.prefix_option), &params)?;
    let report = Report::read(&prefix)?;
    let skipped = &report.figures.skipped;
    if !skipped.nothing() {
        eprintln!("scr report: {}: skipped {skipped}", report.log.display());
    }
    let page_wanted = args.output.is_some() || (args.svg.is_none() && !args.json);
    // with --json, standard output is the JSON alone: the paths written go to stderr
    let say = |path: &Path| say_written(args.json, path);
    if page_wanted || args.svg.is_some() {
        let charts = charts::all(&report.figures).map_err(|e| {
            Error::io(
                &report.log,
                "draw the charts of the events of",
                std::io::Error::other(e.to_string()),
            )
        })?;
        if let Some(dir) = &args.svg {
            way_is_yours(dir)?;
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
            // the directory the charts go in is judged as -o judges a page's: one another
            // user may rename in could lead the next chart over a file of the user's
            for c in &charts {
                let path = checked_way(dir.join(format!("{}.svg", c.name)))?;
                scr::io::replace_in_held_dir(&path, c.svg.as_bytes(), REPORT_MODE, false)?;
                say(&path);
            }
        }
        if page_wanted {
            // (the prefix's own directory: its way was checked with the prefix)
            let in_prefix = layout::prefix_hidden_dir(&prefix).join("report.html");
            write_page(
                &html::page(&report, &charts),
                args.output.as_deref(),
                PageDefault::InPrefix(in_prefix),
                &say,
            )?;
        }
    }
    if args.json {
        println!("{}", json::render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// `scr report --db`: the site's page (or its JSON) from the event log's database.
fn run_site(args: Args) -> scr::Result<ExitCode> {
    // a page that could not be written is known before the records are read
    if let Some(path) = args.output.as_deref().filter(|p| *p != Path::new("-")) {
        checked_way(path.to_path_buf())?;
    }
    let mut target = super::db::account_target(args.option_file.as_deref())?;
    // a report is no job's step: a large log may take its time to read
    target.timeout = REPORT_DB_TIMEOUT;
    let source = format!("{} at {}", target.database, target.address);
    let mut conn = scr_db::Connection::open(&target, true).map_err(super::db::said)?;
    let selection = scr_db::read::Selection {
        user: args.user,
        since: args.since,
    };
    let site = site::Site::read(&mut conn, &target.database, source, selection, args.app)
        .map_err(super::db::said)?;
    if site.jobs.is_empty() {
        eprintln!(
            "scr report: no job in {} matches the selection (--user, --app, --since): the page \
             shows none",
            site.source
        );
    }
    for (what, why) in &site.unread {
        eprintln!("scr report: WARNING: {what} not read: {why}");
    }
    if args.output.is_some() || !args.json {
        let say = |path: &Path| say_written(args.json, path);
        write_page(
            &site_page::page(&site),
            args.output.as_deref(),
            PageDefault::Elsewhere(PathBuf::from(SITE_PAGE)),
            &say,
        )?;
    }
    if args.json {
        println!("{}", site_page::json(&site));
    }
    Ok(ExitCode::SUCCESS)
}

/// Says a path written: on standard output, or on standard error when that is the JSON's.
fn say_written(json: bool, path: &Path) {
    if json {
        eprintln!("{}", path.display());
    } else {
        println!("{}", path.display());
    }
}

/// Where a page goes when -o does not say.
enum PageDefault {
    /// In the prefix's `.scr`, whose way was checked with the prefix.
    InPrefix(PathBuf),
    /// Anywhere else: checked like a path given.
    Elsewhere(PathBuf),
}

/// Writes `page` to `output` ('-': standard output), else to `default`, and `say`s the
/// path written; a path of a directory others may redirect is refused ([`way_is_yours`]).
fn write_page(
    page: &str,
    output: Option<&Path>,
    default: PageDefault,
    say: &dyn Fn(&Path),
) -> scr::Result<()> {
    let path = match (output, default) {
        (Some(p), _) if p == Path::new("-") => {
            let mut out = std::io::stdout().lock();
            return out
                .write_all(page.as_bytes())
                .and_then(|_| out.flush())
                .map_err(|e| Error::io("standard output", "write the page to", e));
        }
        (None, PageDefault::InPrefix(path)) => {
            only_over_a_file(&path)?;
            path
        }
        (Some(path), _) => checked_way(path.to_path_buf())?,
        (None, PageDefault::Elsewhere(path)) => checked_way(path)?,
    };
    scr::io::replace_in_held_dir(&path, page.as_bytes(), REPORT_MODE, false)?;
    say(&path);
    Ok(())
}

/// `path`, once the way to it is the user's ([`way_is_yours`]): its directory too (a
/// directory of another's is theirs to change) and the name, if a link.
fn checked_way(path: PathBuf) -> scr::Result<PathBuf> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(Error::invalid(
            dir,
            "is no directory to write the page in: create it, or name another with -o",
        ));
    }
    way_is_yours(&path)?;
    only_over_a_file(&path)?;
    Ok(path)
}

/// Refuses a path that is something other than a file: a page written over a device (root's
/// `-o /dev/null`) or a FIFO would replace it with a file.
fn only_over_a_file(path: &Path) -> scr::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() => Err(Error::invalid(
            path,
            "is no regular file (a device, a FIFO, a directory or a link): scr report \
             replaces only a file; -o - writes to standard output",
        )),
        _ => Ok(()),
    }
}

/// How long `scr report --db` waits for the server to connect or answer one query.
const REPORT_DB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Where `scr report --db` writes the site's page unless -o says where.
const SITE_PAGE: &str = "scr-site-report.html";

/// Refuses to write into `dir` when someone besides root and the user may change where it
/// leads (a link of theirs on the way, a directory they own or may rename in): the page
/// and the charts would go where they chose, over a file of the user's.
fn way_is_yours(dir: &Path) -> scr::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    // SAFETY: geteuid has no preconditions
    let me = unsafe { libc::geteuid() };
    match scr::safe_fs::others_may_redirect_name(dir, |uid| uid == me)? {
        None => Ok(()),
        Some(who) => Err(Error::untrusted(
            dir,
            format!(
                "{who}: others may change where it leads, and what scr report writes there \
                 could go over a file of yours; write it where only you and root may change \
                 the way"
            ),
        )),
    }
}

/// The page and charts tell what the prefix's private state files do (the index is the
/// user's alone): the user's alone too, shared by choice (`chmod`, or `-o` elsewhere).
const REPORT_MODE: u32 = 0o600;
