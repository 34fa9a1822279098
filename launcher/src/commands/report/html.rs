//! The report as one self-contained HTML page: inline CSS, the charts as inline SVG, no
//! script and nothing fetched, so it opens from a login node's file system, a mail
//! attachment or a ticket alike. Every name taken from the prefix's files is escaped.

use super::Report;
use super::charts::Chart;
use super::datasets::Place;
use super::figures::{
    FailureKind, Figures, Kept, MAX_ROWS, Measured, Time, ending_name, ending_text,
};
use super::units;
use scr::event_log::Ending;
use std::fmt::Write;

pub use super::markup::{STYLE, escape};

fn time_cell(t: Time) -> String {
    format!(
        "<td><time datetime=\"{}\">{}</time></td>",
        t.to_rfc3339_opts(chrono::SecondsFormat::Millis, false),
        t.format("%Y-%m-%d %H:%M:%S%.3f")
    )
}

fn num(text: impl std::fmt::Display) -> String {
    format!("<td class=\"num\">{text}</td>")
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or("-".to_string(), f)
}

fn card(out: &mut String, class: &str, label: &str, value: &str, detail: &str) {
    let _ = write!(
        out,
        "<div class=\"card {class}\"><div class=\"label\">{label}</div>\
         <div class=\"value\">{value}</div><div class=\"detail\">{detail}</div></div>"
    );
}

fn figure(out: &mut String, charts: &[Chart], name: &str) {
    if let Some(c) = charts.iter().find(|c| c.name == name) {
        let _ = write!(out, "<figure id=\"chart-{name}\">{}</figure>", c.svg.trim());
    }
}

/// The whole page.
pub fn page(report: &Report, charts: &[Chart]) -> String {
    let fig = &report.figures;
    let mut out = String::new();
    let prefix = escape(&report.prefix.display().to_string());
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>SCR report: {prefix}</title><style>{STYLE}</style></head><body>\
         <header><h1>SCR report</h1><p>prefix <code>{prefix}</code></p>\
         <p>from the event log <code>{}</code>, the index and the flush file; written {}</p>\
         </header><main>",
        escape(&report.log.display().to_string()),
        report.generated.format("%Y-%m-%d %H:%M:%S %:z"),
    );
    summary(&mut out, report);
    left_out(&mut out, report);
    out.push_str(
        "<section id=\"timeline\"><h2>Timeline</h2><p class=\"lead\">Each run of the \
         application is a bar from its start to its last logged event, colored by how it \
         ended; the marks are its checkpoints (with their names), flushes, restarts and \
         failures.</p>",
    );
    figure(&mut out, charts, "timeline");
    if fig.runs.is_empty() {
        out.push_str("<p>The log records no run yet.</p>");
    }
    out.push_str("</section>");
    out.push_str(
        "<section id=\"cost\"><h2>Checkpoint cost and flush bandwidth</h2><p class=\"lead\">\
         The cost is the time SCR_Complete_checkpoint (or Complete_output) kept the \
         application from computing, from the start of the checkpoint; the bandwidth is \
         the bytes a flush copied to the prefix over the time it took.</p>",
    );
    figure(&mut out, charts, "checkpoint-cost");
    figure(&mut out, charts, "flush-bandwidth");
    if fig.checkpoints.is_empty() && fig.flushes.is_empty() {
        out.push_str("<p>No checkpoint or flush is logged yet.</p>");
    }
    out.push_str("</section>");
    failures(&mut out, fig, charts);
    interval(&mut out, fig, charts);
    datasets(&mut out, report);
    runs(&mut out, fig);
    events(&mut out, fig);
    definitions(&mut out);
    let _ = writeln!(
        out,
        "</main><footer>scr report {} &middot; SCR in Rust</footer></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn summary(out: &mut String, report: &Report) {
    let fig = &report.figures;
    let count = |e: Ending| fig.runs_ending(e);
    out.push_str("<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");
    let mut ends = vec![format!("{} ended", count(Ending::Finalized))];
    for (e, word) in [
        (Ending::Failed, "died"),
        (Ending::Halted, "halted"),
        (Ending::Open, "without an end"),
    ] {
        if count(e) > 0 {
            ends.push(format!("{} {word}", count(e)));
        }
    }
    card(
        out,
        "",
        "Runs",
        &fig.runs.total.to_string(),
        &ends.join(", "),
    );
    let detail = format!(
        "{} failed, {} output datasets",
        fig.failed_checkpoints, fig.outputs.total
    );
    let value = fig.checkpoints.total.to_string();
    card(out, "", "Checkpoints completed", &value, &detail);
    let cost = fig.interval.cost.map_or("-".into(), units::duration);
    card(
        out,
        "",
        "Mean checkpoint cost",
        &cost,
        "C, over the completed checkpoints",
    );
    let mean_bw = fig.flush_bandwidth.map_or("-".to_string(), |bw| {
        format!("{} MiB/s", units::significant(bw))
    });
    let detail = format!("mean over {} flushes", fig.flushes.total);
    card(out, "", "Flush bandwidth", &mean_bw, &detail);
    let lost = fig.time_lost();
    // the share of the job's time from its first start to its last event, which holds
    // the restarts between runs too
    let span = fig.wall_seconds();
    let share = if span > 0.0 {
        format!(
            "{:.1} % of the {} since the first start",
            100.0 * lost / span,
            units::duration(span)
        )
    } else {
        String::new()
    };
    let class = if lost > 0.0 { "bad" } else { "good" };
    let detail = format!("{} failures; {share}", fig.failures.total);
    card(
        out,
        class,
        "Time lost to failures",
        &units::duration(lost),
        &detail,
    );
    let (mtbf, detail) = match fig.interval.mtbf {
        Some((m, true)) => (units::duration(m), "no failure yet: a lower bound"),
        Some((m, false)) => (units::duration(m), "run time / runs that died"),
        None => ("-".into(), "nothing has run"),
    };
    card(out, "", "Mean time between failures", &mtbf, detail);
    let i = &fig.interval;
    let detail = format!(
        "Young {}, Daly {}",
        opt(i.young, units::duration),
        opt(i.daly, units::duration)
    );
    card(
        out,
        "",
        "Interval in use",
        &opt(i.in_use, units::duration),
        &detail,
    );
    let current = report.current.as_deref().map_or("none".into(), escape);
    card(
        out,
        "",
        "A restart would load",
        &current,
        "the current checkpoint",
    );
    out.push_str("</div></section>");
}

/// What the page leaves out of the log, when it leaves anything: lines not read as events,
/// and rows older than the newest [`MAX_ROWS`] of a kind (which the figures still count).
fn left_out(out: &mut String, report: &Report) {
    let fig = &report.figures;
    let unlisted: Vec<String> = [
        ("runs", fig.runs.unlisted()),
        ("checkpoints", fig.checkpoints.unlisted()),
        ("output datasets", fig.outputs.unlisted()),
        ("flushes", fig.flushes.unlisted()),
        ("fetches", fig.fetches.unlisted()),
        ("restarts", fig.restarts.unlisted()),
        ("halts", fig.halts.unlisted()),
        ("failures", fig.failures.unlisted()),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(what, n)| format!("{n} {what}"))
    .collect();
    if fig.skipped.nothing() && unlisted.is_empty() {
        return;
    }
    out.push_str("<section id=\"left-out\"><h2>What the report leaves out</h2>");
    if !fig.skipped.nothing() {
        let _ = write!(
            out,
            "<p id=\"skipped\">Skipped in the log: {}. Whoever can write to the log may \
             have put them there; the figures are computed from the events read.</p>",
            escape(&fig.skipped.to_string())
        );
    }
    if !unlisted.is_empty() {
        let _ = write!(
            out,
            "<p id=\"unlisted\">The tables and charts list the newest {MAX_ROWS} rows of \
             each kind at most, of the runs listed; older, not listed: {}. The counts, means, \
             time lost and interval count them all.</p>",
            unlisted.join(", ")
        );
    }
    out.push_str("</section>");
}

/// " (the newest N listed)" when the log has more rows of a kind than are listed.
fn newest<T>(rows: &Kept<T>) -> String {
    if rows.unlisted() == 0 {
        String::new()
    } else {
        format!(" (the newest {} listed)", rows.len())
    }
}

fn failures(out: &mut String, fig: &Figures, charts: &[Chart]) {
    out.push_str(
        "<section id=\"failures\"><h2>Time lost to failures</h2><p class=\"lead\">A run \
         that died loses the work since the checkpoint the next run restarted from, and the \
         time until that run had the checkpoint back (the restart); a failed checkpoint \
         loses the time it took. See <a href=\"#definitions\">the definitions</a>.</p>",
    );
    if fig.failures.is_empty() {
        out.push_str("<p>No failure is logged.</p></section>");
        return;
    }
    figure(out, charts, "time-lost");
    if fig.failures.unlisted() > 0 {
        let _ = write!(
            out,
            "<p>{} failures{}; the total counts them all.</p>",
            fig.failures.total,
            newest(&fig.failures)
        );
    }
    out.push_str(
        "<table id=\"failure-table\"><thead><tr><th>failure</th><th>run</th><th>at</th>\
         <th>dataset</th><th class=\"num\">lost work</th><th class=\"num\">restart</th>\
         <th class=\"num\">failed checkpoint</th><th class=\"num\">time lost</th>\
         <th>note</th></tr></thead><tbody>",
    );
    for f in &fig.failures {
        let kind = match f.kind {
            FailureKind::RunDied => "run died",
            FailureKind::CheckpointFailed => "checkpoint failed",
            FailureKind::FetchFailed => "fetch failed",
        };
        let _ = write!(
            out,
            "<tr class=\"failure\" data-kind=\"{}\" data-run=\"{}\"><td>{kind}</td>\
             <td>run {}</td>{}<td>{}</td>{}{}{}{}<td>{}</td></tr>",
            f.kind.as_str(),
            f.run,
            f.run,
            time_cell(f.time),
            escape(f.dataset.as_deref().unwrap_or("-")),
            num(units::duration(f.lost_work)),
            num(units::duration(f.restart)),
            num(units::duration(f.failed_checkpoint)),
            num(units::duration(f.time_lost())),
            escape(f.note.as_deref().unwrap_or("")),
        );
    }
    let _ = write!(
        out,
        "</tbody><tfoot><tr><th colspan=\"7\">total</th><th class=\"num\">{}</th><th></th>\
         </tr></tfoot></table></section>",
        units::duration(fig.time_lost())
    );
}

fn interval(out: &mut String, fig: &Figures, charts: &[Chart]) {
    let i = &fig.interval;
    out.push_str(
        "<section id=\"interval\"><h2>Checkpoint interval</h2><p class=\"lead\">The \
         interval in use is the mean time from the end of one checkpoint to the start of \
         the next in the same run. Young's optimum is &radic;(2CM); Daly's adds the \
         higher-order terms, &radic;(2CM)&middot;(1 + &radic;(C/2M)/3 + (C/2M)/9) &minus; C \
         (M when C &ge; 2M), for the mean checkpoint cost C and mean time between failures \
         M. The curve is the share of time an interval &tau; wastes by Young's model, \
         C/&tau; writing checkpoints plus &tau;/2M of work lost per failure.</p>",
    );
    figure(out, charts, "interval");
    if let (Some(in_use), Some(daly)) = (i.in_use, i.daly) {
        let ratio = in_use / daly.max(1e-9);
        let advice = if ratio < 0.5 {
            format!(
                "Checkpoints come {} more often than Daly's optimum: fewer checkpoints \
                 (SCR_CHECKPOINT_INTERVAL, SCR_CHECKPOINT_SECONDS) would waste less time.",
                format_ratio(1.0 / ratio)
            )
        } else if ratio > 2.0 {
            format!(
                "Checkpoints come {} less often than Daly's optimum: more frequent \
                 checkpoints would lose less work to each failure.",
                format_ratio(ratio)
            )
        } else {
            "The interval in use is within a factor of two of Daly's optimum.".to_string()
        };
        let bound = if i.mtbf.is_some_and(|m| m.1) {
            " No failure is logged yet, so M and the optimum are lower bounds: they grow as \
             the job keeps running without one."
        } else {
            ""
        };
        let _ = write!(out, "<p class=\"advice\">{advice}{bound}</p>");
    } else if charts.iter().all(|c| c.name != "interval") {
        out.push_str(
            "<p>Not enough in the log yet: the optimum needs a completed checkpoint and a \
             run's time; the interval in use needs two checkpoints in one run.</p>",
        );
    }
    let _ = write!(
        out,
        "<table id=\"interval-table\"><tbody>\
         <tr><th>interval in use</th>{}<td>mean of {} gaps between checkpoints</td></tr>\
         <tr><th>Young's optimum</th>{}<td>&radic;(2CM)</td></tr>\
         <tr><th>Daly's optimum</th>{}<td>Daly's higher-order estimate</td></tr>\
         <tr><th>C, mean checkpoint cost</th>{}<td>{} checkpoints</td></tr>\
         <tr><th>M, mean time between failures</th>{}<td>{}</td></tr></tbody></table>\
         </section>",
        num(opt(i.in_use, units::duration)),
        i.gaps,
        num(opt(i.young, units::duration)),
        num(opt(i.daly, units::duration)),
        num(opt(i.cost, units::duration)),
        fig.stats.checkpoints,
        num(opt(i.mtbf.map(|m| m.0), units::duration)),
        match i.mtbf {
            Some((_, true)) => "no failure yet: the run time observed, a lower bound",
            _ => "run time divided by the runs that died",
        },
    );
}

fn format_ratio(r: f64) -> String {
    format!("{}&times;", units::significant(r))
}

fn datasets(out: &mut String, report: &Report) {
    out.push_str(
        "<section id=\"datasets\"><h2>Where the datasets are</h2><p class=\"lead\">From \
         the flush file (what the job's caches hold) and the index (what the prefix holds). \
         A dataset in cache only is lost with its nodes unless the drain (scr postrun) \
         copies it; the current checkpoint is the one a restart would load.</p>",
    );
    if report.datasets.is_empty() {
        out.push_str("<p>Neither the index nor the flush file names a dataset.</p></section>");
        return;
    }
    let places = [
        Place::CacheOnly,
        Place::Flushing,
        Place::CacheAndPrefix,
        Place::Prefix,
        Place::Unknown,
    ];
    let counts: Vec<String> = places
        .iter()
        .map(|p| (p, report.datasets.iter().filter(|d| d.place == *p).count()))
        .filter(|(p, n)| *n > 0 || **p == Place::CacheOnly)
        .map(|(p, n)| format!("{n} {}", p.as_str()))
        .collect();
    let _ = write!(out, "<p>{}.</p>", counts.join(", "));
    out.push_str(
        "<table id=\"dataset-table\"><thead><tr><th class=\"num\">dset</th><th>name</th>\
         <th>kind</th><th>where</th><th>on the prefix</th><th>flushed</th><th>restart</th></tr>\
         </thead><tbody>",
    );
    for d in &report.datasets {
        let place = d.place.as_str();
        let _ = write!(
            out,
            "<tr class=\"dataset\" data-dset=\"{}\" data-place=\"{}\">{}<td>{}</td><td>{}</td>\
             <td><span class=\"tag {}\">{place}</span></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            d.id,
            place,
            num(d.id),
            escape(&d.name),
            d.kind,
            place.replace(' ', "-"),
            d.prefix_state.map_or(String::new(), |s| format!(
                "<span class=\"tag {s}\">{s}</span>"
            )),
            escape(&d.flushed.as_deref().unwrap_or("").replace('T', " ")),
            if d.current {
                "<span class=\"tag current\">current</span>"
            } else {
                ""
            },
        );
    }
    out.push_str("</tbody></table></section>");
}

fn runs(out: &mut String, fig: &Figures) {
    if fig.runs.is_empty() {
        return;
    }
    out.push_str("<section id=\"runs\"><h2>Runs</h2>");
    if fig.runs.unlisted() > 0 {
        let _ = write!(out, "<p>{} runs{}.</p>", fig.runs.total, newest(&fig.runs));
    }
    out.push_str(
        "<table id=\"run-table\"><thead><tr><th>run</th>\
         <th>job</th><th>started</th><th>last event</th><th class=\"num\">duration</th>\
         <th>ended</th><th>restarted from</th><th class=\"num\">checkpoints</th></tr>\
         </thead><tbody>",
    );
    for r in &fig.runs {
        let class = ending_name(r.ending);
        let _ = write!(
            out,
            "<tr class=\"run {class}\" data-run=\"{}\" data-ending=\"{class}\"><td>run {}</td>\
             <td>{}</td>{}{}{}<td><span class=\"tag {class}\">{}</span></td><td>{}</td>{}</tr>",
            r.number,
            r.number,
            escape(r.jobid.as_deref().unwrap_or("-")),
            time_cell(r.start),
            time_cell(r.last),
            num(units::duration(r.seconds())),
            ending_text(r.ending),
            escape(r.restarted_from.as_deref().unwrap_or("-")),
            num(r.checkpoints),
        );
    }
    out.push_str("</tbody></table></section>");
}

fn measured_table(out: &mut String, id: &str, class: &str, what: &str, rows: &Kept<Measured>) {
    let _ = write!(
        out,
        "<table id=\"{id}\"><thead><tr><th>run</th><th class=\"num\">dset</th><th>name</th>\
         <th>{what}</th><th class=\"num\">time</th><th class=\"num\">size</th>\
         <th class=\"num\">bandwidth</th></tr></thead><tbody>"
    );
    for m in rows {
        let name = escape(&m.name);
        let background = if m.background { " (background)" } else { "" };
        let _ = write!(
            out,
            "<tr class=\"{class}\" data-dset=\"{}\" data-name=\"{name}\"><td>run {}</td>{}\
             <td>{name}</td>{}{}{}{}</tr>",
            m.dset.map_or(String::new(), |d| d.to_string()),
            m.run,
            num(m.dset.map_or("-".into(), |d| d.to_string())),
            time_cell(m.time),
            num(opt(m.secs, units::duration) + background),
            num(m.bytes.map_or("-".into(), |b| units::bytes(b as f64))),
            num(opt(m.mb_per_s, |v| format!(
                "{} MiB/s",
                units::significant(v)
            ))),
        );
    }
    out.push_str("</tbody></table>");
}

/// Tables longer than this start folded: a long job's page stays quick to scroll.
const FOLDED_ROWS: usize = 200;

fn events(out: &mut String, fig: &Figures) {
    out.push_str("<section id=\"events\"><h2>Checkpoints and flushes</h2>");
    if fig.checkpoints.is_empty() {
        out.push_str("<p>No checkpoint completed.</p>");
    }
    let tables = [
        (
            "checkpoint",
            "checkpoints completed",
            "completed",
            &fig.checkpoints,
        ),
        ("flush", "flushes to the prefix", "finished", &fig.flushes),
        ("output", "output datasets", "completed", &fig.outputs),
        ("fetch", "fetches from the prefix", "finished", &fig.fetches),
    ];
    for (class, title, what, rows) in tables {
        if rows.is_empty() {
            continue;
        }
        let open = if rows.len() <= FOLDED_ROWS {
            " open"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<details{open}><summary>{} {title}{}</summary>",
            rows.total,
            newest(rows)
        );
        measured_table(out, &format!("{class}-table"), class, what, rows);
        out.push_str("</details>");
    }
    out.push_str("</section>");
}

fn definitions(out: &mut String) {
    out.push_str(
        "<section id=\"definitions\"><h2>How the figures are computed</h2><dl>\
         <dt>Run</dt><dd>A START line of the log (SCR_Init) and the events up to the next. \
         It was halted when a halt condition stopped it (HALT, or scr-run stopping it for \
         <code>scr halt --immediate</code>, a SIGTERM or ^C: on purpose, as at a time \
         limit), else ended when it logged END (SCR_Finalize), and died when it did neither \
         and another run started after it, or scr-run saw it end badly (an exit code other \
         than 0, a signal). The last run with none of these may still be running, or was \
         killed with nothing to say so: it is not counted as a failure.</dd>\
         <dt>Failures</dt><dd>Runs that died, checkpoints that failed \
         (CHECKPOINT_FAILED), and fetches of a checkpoint from the prefix that failed \
         (FETCH_FAILED).</dd>\
         <dt>Time lost to a run that died</dt><dd>Its lost work: from the checkpoint the \
         next run restarted from (when this run wrote it; else from this run's start) to \
         its last logged event, a lower bound, as it died after that. Plus its restart: \
         from that last event to the next run's RESTART (its START when it restarted from \
         nothing). When the next run is another job, only from that job's START: the wait \
         for a new allocation is not counted.</dd>\
         <dt>Time lost to a failed checkpoint</dt><dd>The time it took, unless a run that \
         died after it already counts that time in its lost work. A failed fetch's time \
         is part of its run's restart.</dd>\
         <dt>Checkpoint cost C</dt><dd>The mean of the completed checkpoints' times, from \
         SCR_Start_checkpoint to the end of SCR_Complete_checkpoint.</dd>\
         <dt>Mean time between failures M</dt><dd>The runs' time (each from its START to \
         its last event) divided by the runs that died; with none yet, the run time \
         itself, a lower bound. scr ckpt-interval computes the same.</dd>\
         <dt>Interval in use</dt><dd>The mean time from the end of one checkpoint to the \
         start of the next within a run.</dd>\
         <dt>Where a dataset is</dt><dd>cache only: the flush file says CACHE and the prefix \
         does not hold it; flushing: a flush started and has not finished; cache and \
         prefix, or prefix: the index holds it. Current: the index's CURRENT, or the \
         user's own scr.current link when it names another dataset of the index.</dd>\
         </dl></section>",
    );
}
