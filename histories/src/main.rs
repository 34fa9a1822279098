//! `scr-histories`: runs random histories of SCR jobs, faults and operator commands against
//! the reference model, shrinks any violation and prints a table (see the crate's docs and
//! `scripts/histories.sh`).

use clap::Parser;
use scr_histories::driver::Env;
use scr_histories::history::{History, Seed};
use scr_histories::report::Report;
use scr_histories::rng::history_seed;
use scr_histories::{peer, planted, shrink};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Runs histories of SCR jobs as real MPI jobs on emulated nodes and checks each against a
/// model of what SCR promises. Exit codes: 0 no violation, 1 a violation, 2 bad usage or
/// setup.
#[derive(Parser, Debug)]
#[command(name = "scr-histories", version)]
struct Args {
    /// The seed of the batch: history i is drawn from a seed derived from it and i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many new histories to run.
    #[arg(long, default_value_t = 20)]
    count: u64,
    /// Run new histories for this many minutes instead of --count.
    #[arg(long, value_name = "MINUTES")]
    soak: Option<f64>,
    /// Stop starting new histories after this many seconds (a CI budget).
    #[arg(long, value_name = "SECONDS")]
    budget: Option<u64>,
    /// Run the one history drawn from SEED (a seed a violation was reported with, `G:SEED`
    /// for a generation after the second).
    #[arg(long, value_name = "SEED")]
    replay: Option<Seed>,
    /// A file of history seeds (one a line, # comments) run first: the kept regressions.
    #[arg(long, value_name = "FILE")]
    regressions: Option<PathBuf>,
    /// Where libscr_runtime.so and scr were built.
    #[arg(long, value_name = "DIR", default_value = "target/debug")]
    build: PathBuf,
    /// Where job directories and the application go (default: a directory under $TMPDIR).
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// Where the scripts of shrunk violations are written (default: the work directory).
    #[arg(long, value_name = "DIR")]
    scripts: Option<PathBuf>,
    /// Most runs of a history spent shrinking one violation.
    #[arg(long, default_value_t = 80)]
    shrink_budget: usize,
    /// Run against a copy of the workspace with histories/planted/NAME.patch applied.
    #[arg(long, value_name = "NAME")]
    planted: Option<String>,
    /// Histories run at once, each in a work directory of its own (a soak on a machine of
    /// more cores than one history keeps busy).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    jobs: u32,
    /// Run the histories against real SCR v2.0.0 installed at DIR instead of the build's
    /// library, cut down to what v2.0.0 does (the model's calibration; see `peer`).
    #[arg(long, value_name = "DIR", conflicts_with = "planted")]
    against_scr_v2: Option<PathBuf>,
}

/// What a worker reports of one history: the history, its outcome, and when it found a
/// violation, the history it shrank to and that one's outcome.
type Ran = (
    History,
    scr_histories::driver::Outcome,
    Option<(History, scr_histories::driver::Outcome)>,
);

fn main() -> ExitCode {
    let args = Args::parse();
    let build = match &args.planted {
        Some(name) => match planted::build(name) {
            Ok(dir) => dir,
            Err(e) => {
                eprintln!("scr-histories: {e}");
                return ExitCode::from(2);
            }
        },
        None => args.build.clone(),
    };
    // one work directory (and application) a worker: a history's check of processes left
    // behind looks for its own application's
    let mut envs = Vec::new();
    for k in 0..args.jobs {
        let work = match (&args.work, args.jobs) {
            (w, 1) => w.clone(),
            (Some(w), _) => Some(w.join(format!("w{k}"))),
            (None, _) => Some(
                std::env::temp_dir().join(format!("scr-histories.{}.w{k}", std::process::id())),
            ),
        };
        let prepared = match &args.against_scr_v2 {
            Some(real) => Env::prepare_peer(&build, real, work.as_deref()),
            None => Env::prepare(&build, work.as_deref()),
        };
        match prepared {
            Ok(e) => envs.push(e),
            Err(e) => {
                eprintln!("scr-histories: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let scripts = args.scripts.clone().unwrap_or_else(|| envs[0].work.clone());
    if let Err(e) = std::fs::create_dir_all(&scripts) {
        eprintln!("scr-histories: {}: {e}", scripts.display());
        return ExitCode::from(2);
    }
    let mut seeds: Vec<Seed> = Vec::new();
    if let Some(r) = args.replay {
        seeds.push(r);
    }
    if let Some(file) = &args.regressions {
        match std::fs::read_to_string(file) {
            Ok(text) => {
                for (n, line) in text.lines().enumerate() {
                    let line = line.split('#').next().unwrap_or_default().trim();
                    if line.is_empty() {
                        continue;
                    }
                    match line.parse() {
                        Ok(s) => seeds.push(s),
                        Err(e) => {
                            eprintln!(
                                "scr-histories: {}:{}: {line:?} is no seed: {e}",
                                file.display(),
                                n + 1
                            );
                            return ExitCode::from(2);
                        }
                    }
                }
            }
            Err(e) => {
                eprintln!("scr-histories: {}: {e}", file.display());
                return ExitCode::from(2);
            }
        }
    }
    let started = Instant::now();
    let soak = args.soak.map(|m| Duration::from_secs_f64(m * 60.0));
    let budget = args.budget.map(Duration::from_secs);
    let fresh = args.replay.is_none();
    // the seed of the i-th history of the batch, while there is one to run
    let next = std::sync::Mutex::new(0u64);
    let seed_of = |i: u64| -> Option<Seed> {
        if let Some(s) = seeds.get(i as usize) {
            return Some(*s);
        }
        let n = i - seeds.len() as u64;
        let more = match soak {
            Some(d) => started.elapsed() < d,
            None => fresh && n < args.count,
        };
        (more && budget.is_none_or(|b| started.elapsed() < b))
            .then(|| Seed::latest(history_seed(args.seed, n)))
    };
    let mut report = Report::default();
    let (sender, results) = std::sync::mpsc::channel::<Ran>();
    std::thread::scope(|scope| {
        for env in &envs {
            let sender = sender.clone();
            let (next, seed_of) = (&next, &seed_of);
            let shrink_budget = args.shrink_budget;
            scope.spawn(move || {
                loop {
                    let seed = {
                        let mut i = next.lock().unwrap_or_else(|e| e.into_inner());
                        let Some(seed) = seed_of(*i) else { break };
                        *i += 1;
                        seed
                    };
                    let h = match env.peer {
                        Some(_) => peer::restrict(&History::generate(seed)),
                        None => History::generate(seed),
                    };
                    let o = env.run(&h);
                    let shrunk = o.violation.as_ref().map(|v| {
                        eprintln!(
                            "history {seed}: violation ({}) at step {}: {}",
                            v.check, v.step, v.message
                        );
                        shrink::shrink(env, &h, o.clone(), shrink_budget)
                    });
                    if sender.send((h, o, shrunk)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        for (h, o, shrunk) in results {
            report.add(&h, &o);
            if let Some((small, so)) = shrunk {
                let seed = h.seed;
                let v = so
                    .violation
                    .clone()
                    .expect("a shrunk history keeps its violation");
                let path = scripts.join(format!("violation-{seed}.sh"));
                if let Err(e) = std::fs::write(&path, &so.script) {
                    eprintln!("scr-histories: {}: {e}", path.display());
                }
                eprintln!(
                    "history {seed} shrunk to {} step(s), {} run(s): {}\n{}",
                    small.steps.len(),
                    small.runs().count(),
                    path.display(),
                    so.script
                );
                report.violations.push((seed, v, so.script));
            }
            eprint!(
                "\r{} histories, {} violation(s)",
                report.histories,
                report.violations.len()
            );
        }
    });
    eprintln!();
    if report.violations.is_empty() && args.work.is_none() && args.scripts.is_none() {
        // the applications built for this batch, nothing else: no violation to look into
        for env in &envs {
            let _ = std::fs::remove_dir_all(&env.work);
        }
    }
    let batch = args.replay.unwrap_or(Seed::latest(args.seed));
    print!("{}", report.table(batch));
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
