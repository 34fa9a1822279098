//! The timeline: a row per run, a bar from its start to its last event colored by how it
//! ended, and its checkpoints (named), flushes, fetches, restarts, halts and failures.

use super::{
    AMBER, BLUE, DARK_RED, Mark, ORANGE, PURPLE, SvgResult, TEAL, ending_color, font, quiet_mesh,
    svg,
};
use crate::commands::report::figures::{FailureKind, Figures, Measured};
use crate::commands::report::units::{self, TimeAxis};
use plotters::prelude::*;
use scr::event_log::Ending;

/// A checkpoint's label on the timeline: its name when short, else its id.
fn label(m: &Measured) -> String {
    match m.dset {
        _ if !m.name.is_empty() && m.name.len() <= 14 => m.name.clone(),
        Some(id) => format!("#{id}"),
        None => String::new(),
    }
}

pub(super) fn timeline(fig: &Figures, axis: &TimeAxis) -> SvgResult {
    let n = fig.runs.len();
    // one row per listed run, the oldest at the top
    let row = |run: usize| (n + 1 - fig.row_of(run)) as f64;
    let row_px = (520 / n as u32).clamp(26, 90);
    let height = 170 + row_px * n as u32;
    let mut legend: Vec<(Mark, String)> = vec![
        (Mark::Dot(BLUE), "checkpoint (name)".into()),
        (Mark::Triangle(ORANGE), "flush to the prefix".into()),
        (Mark::Square(PURPLE), "restart".into()),
        (Mark::Cross(DARK_RED), "failure".into()),
    ];
    let extra = [
        (!fig.outputs.is_empty(), Mark::Ring(TEAL), "output dataset"),
        (
            !fig.fetches.is_empty(),
            Mark::Triangle(TEAL),
            "fetch from the prefix",
        ),
        (!fig.halts.is_empty(), Mark::Hollow(AMBER), "halt"),
    ];
    legend.extend(extra.iter().filter(|e| e.0).map(|e| (e.1, e.2.to_string())));
    for ending in [
        Ending::Finalized,
        Ending::Failed,
        Ending::Halted,
        Ending::Open,
    ] {
        if fig.runs.iter().any(|r| r.ending == ending) {
            let text = match ending {
                Ending::Finalized => "run ended (SCR_Finalize)",
                Ending::Failed => "run died",
                Ending::Halted => "run halted",
                Ending::Open => "run without an end yet",
            };
            legend.push((Mark::Bar(ending_color(ending), 0.25), text.to_string()));
        }
    }
    svg(height, &legend, |area| {
        let mut chart = ChartBuilder::on(area)
            .caption(
                "Timeline: runs, checkpoints, flushes, failures and restarts",
                font(22),
            )
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(110)
            .build_cartesian_2d(axis.range(), 0.4..n as f64 + 0.6)?;
        let run_label = |y: &f64| {
            let r = n as f64 + 1.0 - y.round();
            if (y - y.round()).abs() < 1e-6 && r >= 1.0 && r <= n as f64 {
                let run = &fig.runs[r as usize - 1];
                match &run.jobid {
                    Some(j) => format!("run {} (job {j})", run.number),
                    None => format!("run {}", run.number),
                }
            } else {
                String::new()
            }
        };
        quiet_mesh(
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(n + 2)
                .y_label_formatter(&run_label)
                .x_label_formatter(&|v| units::significant(*v))
                .x_desc(axis.description()),
        )
        .draw()?;
        for r in &fig.runs {
            let (y, c) = (row(r.number), ending_color(r.ending));
            let bar = [(axis.x(r.start), y - 0.3), (axis.x(r.last), y + 0.3)];
            chart.draw_series([Rectangle::new(bar, c.mix(0.22).filled())])?;
            chart.draw_series([Rectangle::new(bar, c.stroke_width(1))])?;
        }
        let at = |m: &Measured, dy: f64| (axis.x(m.time), row(m.run) + dy);
        chart.draw_series(
            fig.flushes
                .iter()
                .map(|f| TriangleMarker::new(at(f, -0.17), 6, ORANGE.filled())),
        )?;
        chart.draw_series(
            fig.fetches
                .iter()
                .map(|f| TriangleMarker::new(at(f, -0.17), 6, TEAL.filled())),
        )?;
        chart.draw_series(
            fig.outputs
                .iter()
                .map(|o| Circle::new(at(o, 0.0), 5, TEAL.stroke_width(2))),
        )?;
        let square = |c: RGBColor| {
            move |m: &Measured| {
                EmptyElement::at(at(m, 0.0)) + Rectangle::new([(-5, -5), (5, 5)], c.filled())
            }
        };
        chart.draw_series(fig.restarts.iter().map(square(PURPLE)))?;
        // checkpoint names above their dots, on a second line where the first is taken,
        // left out where both are (the table below lists every checkpoint)
        // names above the row, failures below: as many lines of text as half a row holds
        let half = row_px as i32 / 2;
        let mut above = Lanes::new(n, (half - 22).div_euclid(15) + 1);
        for c in &fig.checkpoints {
            chart.draw_series([Circle::new(at(c, 0.0), 5, BLUE.filled())])?;
            let text = label(c);
            let (px, _) = chart.backend_coord(&at(c, 0.0));
            let width = text_width(&text);
            if let Some(lane) = above.place(fig.row_of(c.run), px - width / 2, width) {
                let dy = -22 - 15 * lane as i32;
                chart.draw_series([EmptyElement::at(at(c, 0.0))
                    + Text::new(text, (-width / 2, dy), font(13).color(&BLUE))])?;
            }
        }
        // a halt comes right after a checkpoint: a hollow square leaves its dot visible
        chart.draw_series(fig.halts.iter().map(|h| {
            EmptyElement::at(at(h, 0.0)) + Rectangle::new([(-8, -8), (8, 8)], AMBER.stroke_width(2))
        }))?;
        let mut below = Lanes::new(n, (half - 33).div_euclid(15) + 1);
        for f in &fig.failures {
            let y = row(f.run)
                + if f.kind == FailureKind::FetchFailed {
                    -0.17
                } else {
                    0.0
                };
            let (px, _) = chart.backend_coord(&(axis.x(f.time), y));
            if f.kind == FailureKind::RunDied {
                // a run died after its last event: its cross stands past the bar's end,
                // where nothing else is drawn until the next run
                chart.draw_series([EmptyElement::at((axis.x(f.time), y))
                    + Cross::new((12, 0), 7, DARK_RED.stroke_width(3))
                    + Text::new("died", (22, -8), font(13).color(&DARK_RED))])?;
                continue;
            }
            chart.draw_series([Cross::new((axis.x(f.time), y), 7, DARK_RED.stroke_width(3))])?;
            let text = match (f.kind, &f.dataset) {
                (FailureKind::FetchFailed, Some(d)) => format!("fetch of {d} failed"),
                (_, Some(d)) => format!("{d} failed"),
                (_, None) => "failed".to_string(),
            };
            let width = text_width(&text);
            if let Some(lane) = below.place(fig.row_of(f.run), px - width / 2, width) {
                let dy = 20 + 15 * lane as i32;
                chart.draw_series([EmptyElement::at((axis.x(f.time), y))
                    + Text::new(text, (-width / 2, dy), font(13).color(&DARK_RED))])?;
            }
        }
        Ok(())
    })
}

/// Where labels go along each run's row: a few lanes (lines of text) each filled from
/// the left; a label that fits in no lane is left out (the tables list everything).
struct Lanes {
    /// For each run's row (1-based), the first free pixel of each lane.
    free: Vec<Vec<i32>>,
}

impl Lanes {
    /// `lanes` lines of text by run (none when the rows are too narrow for text).
    fn new(runs: usize, lanes: i32) -> Lanes {
        let lanes = lanes.clamp(0, 2) as usize;
        Lanes {
            free: vec![vec![i32::MIN; lanes]; runs + 1],
        }
    }

    /// The lane a label from pixel `left`, `width` wide, goes in on row `row`.
    fn place(&mut self, row: usize, left: i32, width: i32) -> Option<usize> {
        let lanes = &mut self.free[row];
        let lane = (0..lanes.len()).find(|&l| lanes[l] < left)?;
        lanes[lane] = left + width + 4;
        Some(lane)
    }
}

/// About how wide a label of 13-pixel text is.
fn text_width(text: &str) -> i32 {
    7 * text.chars().count() as i32
}
