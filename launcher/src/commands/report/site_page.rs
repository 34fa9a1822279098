//! The site report's page (self-contained HTML) and its JSON, from what [`Site::read`]
//! read.

use super::html::escape;
use super::site::Site;
use super::units;
use scr::event_log::Ending;
use scr_db::read::Selection;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The most rows a table of the page lists, of jobs, applications or nodes (a page of every
/// job of a year of a site would be one no browser opens, and one user's records may name
/// any number of applications and nodes); the figures count every one, and the JSON lists
/// them all.
const MOST_ROWS_LISTED: usize = 2000;

/// The most reasons a node's row shows.
const MOST_REASONS_LISTED: usize = 5;

/// After a table of `rows` rows: how many more it does not list ([`MOST_ROWS_LISTED`]), and
/// where they are, as the paragraph `id`.
fn not_listed(out: &mut String, id: &str, rows: usize, things: (&str, &str)) {
    let Some(more) = rows.checked_sub(MOST_ROWS_LISTED).filter(|&n| n > 0) else {
        return;
    };
    let _ = write!(
        out,
        "<p id=\"{id}\">{more} more {} not listed here (the figures count them): \
         <code>--json</code> lists every one; <code>--user</code>, <code>--app</code> and \
         <code>--since</code> narrow the page.</p>",
        if more == 1 { things.0 } else { things.1 }
    );
}

/// A set's first [`MOST_REASONS_LISTED`] members joined, and how many more.
fn some_of(set: &BTreeSet<String>, sep: &str) -> String {
    let mut text = set
        .iter()
        .take(MOST_REASONS_LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(sep);
    if set.len() > MOST_REASONS_LISTED {
        let _ = write!(text, "{sep}and {} more", set.len() - MOST_REASONS_LISTED);
    }
    text
}

/// `n` things, in the singular for one.
fn counted(n: u64, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or("-".to_string(), f)
}

fn mib_per_s(v: f64) -> String {
    format!("{} MiB/s", units::significant(v))
}

/// The selection in words, for the page's header.
fn selection_text(s: &Selection, app_holding: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let Some(u) = &s.user {
        parts.push(format!("user {u}"));
    }
    if let Some(a) = app_holding {
        parts.push(format!("applications or job names holding “{a}”"));
    }
    if let Some(t) = &s.since {
        parts.push(format!("since {}", t.format("%Y-%m-%d %H:%M")));
    }
    if parts.is_empty() {
        "every job".into()
    } else {
        parts.join(", ")
    }
}

/// The page: self-contained like the job's report (inline CSS and SVG, no script).
pub fn page(site: &Site) -> String {
    let apps = site.apps();
    let weeks = site.failures_by_week();
    let nodes = site.nodes();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>SCR site report: {source}</title><style>{style}</style></head><body>\
         <header><h1>SCR site report</h1><p>From the event log's database <code>{source}</code>: \
         {selection}</p><p>Generated {generated}</p></header><main>",
        source = escape(&site.source),
        style = super::html::STYLE,
        selection = escape(&selection_text(
            &site.selection,
            site.app_holding.as_deref()
        )),
        generated = site.generated.format("%Y-%m-%d %H:%M:%S"),
    );
    if !site.unread.is_empty() {
        out.push_str(
            "<section id=\"unread\"><h2>Not read, or read in part</h2><p>These records could not be read, \
             and nothing of them is in the figures below:</p><ul>",
        );
        for (what, why) in &site.unread {
            let _ = write!(
                out,
                "<li><code>{}</code>: {}</li>",
                escape(what),
                escape(why)
            );
        }
        out.push_str("</ul></section>");
    }
    let runs: u64 = apps.iter().map(|a| a.stats.runs).sum();
    let died: u64 = apps.iter().map(|a| a.stats.failures).sum();
    let halted: u64 = site
        .jobs
        .iter()
        .map(|j| j.figures.runs_ending(Ending::Halted))
        .sum();
    let failures: u64 = apps.iter().map(|a| a.failures).sum();
    let missing: u64 = site.jobs.iter().map(|j| j.figures.records_missing).sum();
    let lost: f64 = apps.iter().map(|a| a.time_lost).sum();
    let users: BTreeSet<&String> = site.jobs.iter().map(|j| &j.job.user).collect();
    out.push_str("<section id=\"summary\"><div class=\"cards\">");
    let card = |out: &mut String, id: &str, label: &str, value: String, detail: String| {
        let _ = write!(
            out,
            "<div class=\"card\" id=\"card-{id}\"><div class=\"label\">{label}</div>\
             <div class=\"value\">{value}</div><div class=\"detail\">{detail}</div></div>"
        );
    };
    card(
        &mut out,
        "jobs",
        "Jobs",
        site.jobs.len().to_string(),
        format!(
            "{}, {}",
            counted(users.len() as u64, "user"),
            counted(apps.len() as u64, "application")
        ),
    );
    card(
        &mut out,
        "runs",
        "Runs",
        runs.to_string(),
        if missing > 0 {
            format!(
                "{died} died ({missing} of them before records that are missing: the next \
                 run restarted from a checkpoint newer than any logged), {halted} halted"
            )
        } else {
            format!("{died} died, {halted} halted")
        },
    );
    card(
        &mut out,
        "failures",
        "Failures",
        failures.to_string(),
        "runs that died, failed checkpoints and fetches".into(),
    );
    card(
        &mut out,
        "lost",
        "Time lost",
        units::duration(lost),
        "work redone and restarts".into(),
    );
    out.push_str("</div></section>");

    out.push_str(
        "<section><h2>By application</h2><p class=\"lead\">Each application's jobs \
         together: the checkpoint cost and flush bandwidth measured, the interval in use \
         (end of one checkpoint to the start of the next in a run) against Young's \
         √(2CM) and Daly's optimum for that cost C and the mean time between failures M \
         (MTBF: the runs' time from START to their last event, summed, over the runs that \
         died; a lower bound, marked ≥, while an application has not failed yet).</p>\
         <table id=\"apps\"><thead><tr><th>application</th><th>users</th><th class=\"num\">jobs</th>\
         <th class=\"num\">runs</th><th class=\"num\">failures</th><th class=\"num\">time lost</th>\
         <th class=\"num\">checkpoints</th><th class=\"num\">checkpoint cost</th>\
         <th class=\"num\">flush bandwidth</th><th class=\"num\">interval in use</th>\
         <th class=\"num\">MTBF</th><th class=\"num\">Young</th><th class=\"num\">Daly</th>\
         </tr></thead><tbody>",
    );
    for a in apps.iter().take(MOST_ROWS_LISTED) {
        let bound = |v: Option<f64>| {
            let lower = a.mtbf.is_some_and(|(_, lower)| lower);
            v.map_or("-".to_string(), |v| {
                format!("{}{}", if lower { "≥ " } else { "" }, units::duration(v))
            })
        };
        let _ = write!(
            out,
            "<tr data-app=\"{app}\"><td>{app}</td><td>{users}</td><td class=\"num\">{jobs}</td>\
             <td class=\"num\">{runs}</td><td class=\"num\">{failures}</td>\
             <td class=\"num\" data-seconds=\"{lost:.3}\">{lost_text}</td>\
             <td class=\"num\">{checkpoints}</td><td class=\"num\" data-seconds=\"{cost_raw}\">{cost}</td>\
             <td class=\"num\">{bw}</td><td class=\"num\">{interval}</td><td class=\"num\">{mtbf}</td>\
             <td class=\"num\">{young}</td><td class=\"num\">{daly}</td></tr>",
            app = escape(&a.app),
            users = escape(&a.users.iter().cloned().collect::<Vec<_>>().join(", ")),
            jobs = a.jobs,
            runs = a.stats.runs,
            failures = a.failures,
            lost = a.time_lost,
            lost_text = units::duration(a.time_lost),
            checkpoints = a.stats.checkpoints,
            cost_raw = a.cost.map_or(String::new(), |c| format!("{c:.3}")),
            cost = opt(a.cost, units::duration),
            bw = opt(a.flush_bandwidth, mib_per_s),
            interval = opt(a.interval, units::duration),
            mtbf = bound(a.mtbf.map(|(m, _)| m)),
            young = bound(a.young),
            daly = bound(a.daly),
        );
    }
    out.push_str("</tbody></table>");
    not_listed(
        &mut out,
        "apps-not-listed",
        apps.len(),
        ("application", "applications"),
    );
    out.push_str("</section>");

    out.push_str(
        "<section><h2>Failures per week</h2><p class=\"lead\">Runs that died (no \
         SCR_Finalize nor halt, and another run followed or scr-run saw them end badly), \
         checkpoints that failed, and \
         fetches that failed, by the ISO week they happened in.</p>",
    );
    if weeks.is_empty() {
        out.push_str("<p id=\"no-failures\">No failure in what this page covers.</p>");
    } else {
        out.push_str(&weeks_chart(&weeks));
    }
    out.push_str(
        "<table id=\"weeks\"><thead><tr><th>week</th><th class=\"num\">runs died</th>\
         <th class=\"num\">checkpoints failed</th><th class=\"num\">fetches failed</th></tr></thead><tbody>",
    );
    for (week, counts) in &weeks {
        let _ = write!(
            out,
            "<tr data-week=\"{week}\"><td>{week}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            counts[0], counts[1], counts[2]
        );
    }
    out.push_str("</tbody></table></section>");

    out.push_str(
        "<section><h2>Failures per node</h2><p class=\"lead\">The nodes scr-run found \
         down before a run (the resource manager's word, no answer to a ping, a failed \
         node test, or excluded), why, and whose jobs said so.</p>",
    );
    if nodes.is_empty() {
        out.push_str(
            "<p id=\"no-nodes-down\">No node was found down in what this page covers.</p>",
        );
    }
    out.push_str(
        "<table id=\"nodes\"><thead><tr><th>node</th>\
         <th class=\"num\">times down</th><th>reasons</th><th>users</th></tr></thead><tbody>",
    );
    for row in nodes.iter().take(MOST_ROWS_LISTED) {
        let _ = write!(
            out,
            "<tr data-node=\"{n}\"><td>{n}</td><td class=\"num\">{count}</td><td>{w}</td><td>{u}</td></tr>",
            n = escape(&row.node),
            count = row.times_down,
            w = escape(&some_of(&row.reasons, "; ")),
            u = escape(&some_of(&row.users, ", ")),
        );
    }
    out.push_str("</tbody></table>");
    not_listed(&mut out, "nodes-not-listed", nodes.len(), ("node", "nodes"));
    out.push_str("</section>");

    out.push_str(
        "<section><h2>Jobs</h2><table id=\"jobs\"><thead><tr><th>user</th><th>job name (prefix)</th>\
         <th>application</th><th class=\"num\">runs</th><th class=\"num\">died</th>\
         <th class=\"num\">halted</th><th class=\"num\">failures</th><th class=\"num\">time lost</th>\
         <th class=\"num\">checkpoints</th><th class=\"num\">checkpoint cost</th>\
         <th class=\"num\">flush bandwidth</th></tr></thead><tbody>",
    );
    for j in site.jobs.iter().take(MOST_ROWS_LISTED) {
        let f = &j.figures;
        let _ = write!(
            out,
            "<tr><td>{user}</td><td>{name}</td><td>{app}</td><td class=\"num\">{runs}</td>\
             <td class=\"num\">{died}</td><td class=\"num\">{halted}</td>\
             <td class=\"num\">{failures}</td>\
             <td class=\"num\">{lost}</td><td class=\"num\">{checkpoints}</td>\
             <td class=\"num\">{cost}</td><td class=\"num\">{bw}</td></tr>",
            user = escape(&j.job.user),
            name = escape(&j.job.name),
            app = escape(&j.app),
            runs = f.stats.runs,
            died = f.stats.failures,
            halted = f.runs_ending(Ending::Halted),
            failures = f.failures.total,
            lost = units::duration(f.time_lost()),
            checkpoints = f.stats.checkpoints,
            cost = opt(f.interval.cost, units::duration),
            bw = opt(f.flush_bandwidth, mib_per_s),
        );
    }
    out.push_str("</tbody></table>");
    not_listed(
        &mut out,
        "jobs-not-listed",
        site.jobs.len(),
        ("job", "jobs"),
    );
    out.push_str("</section>");
    out.push_str(
        "<section><h2>How these are counted</h2><dl>\
         <dt>Job, application</dt><dd>A job is a user's computation in one prefix across its \
         runs (SCR's job name is the prefix). An application is the program's name its runs \
         logged at their start, else the job name.</dd>\
         <dt>Time lost</dt><dd>For a run that died: the work since the checkpoint the next run \
         restarted from, and the restart; for a failed checkpoint, the time it took — as \
         <code>scr report</code> counts them for one prefix.</dd>\
         <dt>Times</dt><dd>The database's records are to the second, each in the local time of \
         the machine that wrote it (as SCR v3.1 writes them); ours note that time's offset \
         from UTC, so runs logged in other zones, or either side of a daylight-saving change, \
         keep their order. Times are shown at their writer's offset; v3.1's records, which \
         note none, at this machine's.</dd></dl></section></main></body></html>\n",
    );
    out
}

/// Failures per week as bars (inline SVG), one colour a kind.
fn weeks_chart(weeks: &BTreeMap<String, [u64; 3]>) -> String {
    const COLORS: [&str; 3] = ["#c81e1e", "#b48700", "#7d5bb0"];
    const NAMES: [&str; 3] = ["runs died", "checkpoints failed", "fetches failed"];
    let (width, height, left, bottom) = (1100.0, 260.0, 50.0, 40.0);
    let most = weeks
        .values()
        .map(|c| c.iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let mut svg = format!(
        "<figure id=\"chart-weeks\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" \
         role=\"img\" aria-label=\"failures per week\">"
    );
    let plot_h = height - bottom - 20.0;
    // a bar no wider than a week's label, however few the weeks
    let slot = ((width - left - 200.0) / weeks.len().max(1) as f64).min(90.0);
    for (i, (week, counts)) in weeks.iter().enumerate() {
        let x = left + i as f64 * slot + slot * 0.15;
        let mut y = 20.0 + plot_h;
        for (k, count) in counts.iter().enumerate() {
            if *count == 0 {
                continue;
            }
            let h = plot_h * *count as f64 / most;
            y -= h;
            let _ = write!(
                svg,
                "<rect class=\"bar\" data-week=\"{week}\" data-kind=\"{kind}\" x=\"{x:.1}\" y=\"{y:.1}\" \
                 width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{color}\"><title>{week}: {count} {kind}</title></rect>",
                kind = NAMES[k],
                w = slot * 0.7,
                color = COLORS[k],
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\" font-family=\"sans-serif\">{week}</text>",
            x + slot * 0.35,
            height - bottom + 18.0
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"16\" font-size=\"12\" font-family=\"sans-serif\">{}</text>",
        left,
        counted(most as u64, "failure")
    );
    for (k, name) in NAMES.iter().enumerate() {
        let y = 30.0 + k as f64 * 20.0;
        let _ = write!(
            svg,
            "<rect x=\"{x}\" y=\"{y}\" width=\"12\" height=\"12\" fill=\"{c}\"/><text x=\"{tx}\" y=\"{ty}\" \
             font-size=\"13\" font-family=\"sans-serif\">{name}</text>",
            x = width - 190.0,
            c = COLORS[k],
            tx = width - 172.0,
            ty = y + 11.0,
        );
    }
    svg.push_str("</svg></figure>");
    svg
}

/// The figures as JSON (for scripts): applications, weeks, nodes and jobs.
pub fn json(site: &Site) -> serde_json::Value {
    use serde_json::json;
    let apps: Vec<_> = site
        .apps()
        .iter()
        .map(|a| {
            json!({
                "application": a.app,
                "users": a.users,
                "jobs": a.jobs,
                "runs": a.stats.runs,
                "runs_died": a.stats.failures,
                "runs_died_records_missing": a.records_missing,
                "failures": a.failures,
                "time_lost_seconds": a.time_lost,
                "checkpoints": a.stats.checkpoints,
                "checkpoint_seconds": a.cost,
                "flush_mib_per_s": a.flush_bandwidth,
                "interval_in_use_seconds": a.interval,
                "mtbf_seconds": a.mtbf.map(|(m, _)| m),
                "mtbf_is_lower_bound": a.mtbf.map(|(_, lower)| lower),
                "young_seconds": a.young,
                "daly_seconds": a.daly,
            })
        })
        .collect();
    let weeks: Vec<_> = site
        .failures_by_week()
        .into_iter()
        .map(|(week, c)| {
            json!({"week": week, "runs_died": c[0], "checkpoints_failed": c[1], "fetches_failed": c[2]})
        })
        .collect();
    let nodes: Vec<_> = site
        .nodes()
        .into_iter()
        .map(|r| {
            json!({
                "node": r.node,
                "times_down": r.times_down,
                "reasons": r.reasons,
                "users": r.users,
            })
        })
        .collect();
    let jobs: Vec<_> = site
        .jobs
        .iter()
        .map(|j| {
            let f = &j.figures;
            json!({
                "user": j.job.user,
                "database": j.job.database,
                "job_name": j.job.name,
                "application": j.app,
                "runs": f.stats.runs,
                "runs_died": f.stats.failures,
                "runs_halted": f.runs_ending(Ending::Halted),
                "failures": f.failures.total,
                "time_lost_seconds": f.time_lost() + 0.0,
                "checkpoints": f.stats.checkpoints,
                "checkpoint_seconds": f.interval.cost,
                "flush_mib_per_s": f.flush_bandwidth,
                "failure_kinds": f.failures.iter().map(|x| x.kind.as_str()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "source": site.source,
        "applications": apps,
        "weeks": weeks,
        "nodes": nodes,
        "jobs": jobs,
        "unread": site
            .unread
            .iter()
            .map(|(what, why)| json!({"records": what, "why": why}))
            .collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::report::figures::FiguresSoFar;
    use crate::commands::report::site::JobFigures;
    use scr::event_log::Skipped;
    use scr_db::read::StoredJob;

    /// A site of more jobs, applications and nodes than a page lists (one user's records may
    /// name any number): each table stops at the bound and says how many more there are and
    /// where they are, a node's reasons too; the JSON lists every one.
    #[test]
    fn a_page_lists_a_bounded_number_of_rows_and_says_how_many_more() {
        let extra = 3;
        let jobs = (0..MOST_ROWS_LISTED + extra)
            .map(|i| JobFigures {
                job: StoredJob {
                    database: "scr".into(),
                    id: i as u64,
                    user: "alice".into(),
                    name: format!("/p/run{i}"),
                },
                app: format!("app{i}"),
                figures: FiguresSoFar::default().finish(Skipped::default()),
                nodes_down: (0..7)
                    .map(|r| {
                        let when = chrono::Local::now().fixed_offset();
                        (format!("n{i}"), format!("reason {r}"), when)
                    })
                    .collect(),
            })
            .collect();
        let site = Site {
            source: "test".into(),
            selection: Default::default(),
            app_holding: None,
            generated: chrono::Local::now(),
            jobs,
            unread: Vec::new(),
        };
        let page = page(&site);
        let table = |id: &str| {
            let t = &page[page.find(&format!("<table id=\"{id}\">")).unwrap()..];
            t[..t.find("</table>").unwrap()].to_string()
        };
        let jobs = table("jobs");
        assert_eq!(jobs.matches("<tr><td>").count(), MOST_ROWS_LISTED);
        assert!(jobs.contains("/p/run0<") && !jobs.contains("/p/run2000<"));
        // (and its head's row)
        assert_eq!(table("apps").matches("<tr").count(), MOST_ROWS_LISTED + 1);
        let nodes = table("nodes");
        assert_eq!(nodes.matches("<tr data-node").count(), MOST_ROWS_LISTED);
        assert!(nodes.contains("reason 4; and 2 more<"), "{nodes}");
        for (id, what) in [
            ("jobs", "jobs"),
            ("apps", "applications"),
            ("nodes", "nodes"),
        ] {
            let said = format!("id=\"{id}-not-listed\">{extra} more {what} not listed");
            assert!(page.contains(&said), "{id}");
        }
        let json = json(&site);
        for key in ["jobs", "applications", "nodes"] {
            let listed = json[key].as_array().map(Vec::len);
            assert_eq!(listed, Some(MOST_ROWS_LISTED + extra), "{key}");
        }
    }
}
