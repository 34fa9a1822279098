//! `scr report --json`: the figures the page shows, for scripts — seconds as numbers,
//! times as RFC 3339 with the log's own offset, every failure listed with the time it
//! cost, and what was skipped in the log or not listed.

use super::Report;
use super::figures::{Measured, Time, ending_name, ending_text};
use serde_json::{Value, json};

fn time(t: Time) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
}

fn measured(m: &Measured) -> Value {
    json!({
        "run": m.run,
        "time": time(m.time),
        "dset": m.dset,
        "name": m.name,
        "seconds": m.secs,
        "bytes": m.bytes,
        "mib_per_s": m.mb_per_s,
    })
}

pub fn render(report: &Report) -> Value {
    let fig = &report.figures;
    let runs: Vec<Value> = fig
        .runs
        .iter()
        .map(|r| {
            json!({
                "run": r.number,
                "jobid": r.jobid,
                "start": time(r.start),
                "last_event": time(r.last),
                "seconds": r.seconds(),
                "ending": ending_name(r.ending),
                "ending_text": ending_text(r.ending),
                "restarted_from": r.restarted_from,
                "checkpoints": r.checkpoints,
            })
        })
        .collect();
    let flushes: Vec<Value> = fig
        .flushes
        .iter()
        .map(|f| {
            let mut v = measured(f);
            v["background"] = json!(f.background);
            v
        })
        .collect();
    let failures: Vec<Value> = fig
        .failures
        .iter()
        .map(|f| {
            json!({
                "kind": f.kind.as_str(),
                "run": f.run,
                "time": time(f.time),
                "dataset": f.dataset,
                "lost_work_seconds": f.lost_work,
                "restart_seconds": f.restart,
                "failed_checkpoint_seconds": f.failed_checkpoint,
                "time_lost_seconds": f.time_lost(),
                "note": f.note,
            })
        })
        .collect();
    let i = &fig.interval;
    let datasets: Vec<Value> = report
        .datasets
        .iter()
        .map(|d| {
            json!({
                "dset": d.id,
                "name": d.name,
                "kind": d.kind,
                "location": d.place.as_str(),
                "prefix_state": d.prefix_state,
                "flushed": d.flushed,
                "current": d.current,
            })
        })
        .collect();
    json!({
        "prefix": report.prefix,
        "log": report.log,
        "runs": runs,
        "checkpoints": fig.checkpoints.iter().map(measured).collect::<Vec<_>>(),
        "outputs": fig.outputs.iter().map(measured).collect::<Vec<_>>(),
        "flushes": flushes,
        "fetches": fig.fetches.iter().map(measured).collect::<Vec<_>>(),
        "restarts": fig.restarts.iter().map(measured).collect::<Vec<_>>(),
        "halts": fig.halts.iter().map(measured).collect::<Vec<_>>(),
        "failures": failures,
        "time_lost_seconds": fig.time_lost(),
        "runs_died_records_missing": fig.records_missing,
        "run_seconds": fig.stats.run_seconds,
        "wall_seconds": fig.wall_seconds(),
        "interval": {
            "in_use_seconds": i.in_use,
            "gaps_measured": i.gaps,
            "mean_checkpoint_seconds": i.cost,
            "mtbf_seconds": i.mtbf.map(|m| m.0),
            "mtbf_lower_bound": i.mtbf.map(|m| m.1),
            "young_seconds": i.young,
            "daly_seconds": i.daly,
        },
        "datasets": datasets,
        "current": report.current,
        "skipped": {
            "head_bytes": fig.skipped.head_bytes,
            "malformed_lines": fig.skipped.malformed_lines,
            "over_long_lines": fig.skipped.over_long_lines,
        },
        // rows older than the newest MAX_ROWS of a kind: in the figures, not in the lists
        "unlisted": {
            "runs": fig.runs.unlisted(),
            "checkpoints": fig.checkpoints.unlisted(),
            "outputs": fig.outputs.unlisted(),
            "flushes": fig.flushes.unlisted(),
            "fetches": fig.fetches.unlisted(),
            "restarts": fig.restarts.unlisted(),
            "halts": fig.halts.unlisted(),
            "failures": fig.failures.unlisted(),
        },
    })
}
