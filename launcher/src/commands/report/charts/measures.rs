//! The charts of measures: checkpoint cost and flush bandwidth over time, the time lost
//! to each failure, and the checkpoint interval on the curve of time wasted.

use super::{BLUE, DARK_RED, GRAY, GREEN, Mark, ORANGE, PURPLE, SvgResult, font, quiet_mesh, svg};
use crate::commands::report::figures::{FailureKind, Figures, Measured};
use crate::commands::report::units::{self, TimeAxis};
use plotters::prelude::*;

/// What a chart over time measures.
#[derive(Clone, Copy)]
pub(super) enum Unit {
    Seconds,
    MibPerSecond,
}

/// A measure over time: a line per run, the mean, and the failures as red lines.
pub(super) fn over_time(
    fig: &Figures,
    axis: &TimeAxis,
    title: &str,
    (what, unit): (&str, Unit),
    color: RGBColor,
    points: Vec<(&Measured, f64)>,
) -> SvgResult {
    let max = points.iter().map(|p| p.1).fold(0.0, f64::max);
    // seconds below one read better as milliseconds
    let (scale, unit_name) = match unit {
        Unit::Seconds if max < 1.0 => (1000.0, "ms"),
        Unit::Seconds => (1.0, "s"),
        Unit::MibPerSecond => (1.0, "MiB/s"),
    };
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len().max(1) as f64;
    let mean_text = match unit {
        Unit::Seconds => units::duration(mean),
        Unit::MibPerSecond => format!("{} MiB/s", units::significant(mean)),
    };
    let legend = vec![
        (Mark::Dot(color), format!("{what} ({})", points.len())),
        (Mark::Line(GRAY), format!("mean: {mean_text}")),
        (Mark::Line(DARK_RED), "failure".to_string()),
    ];
    svg(380, &legend, |area| {
        let top = (max * scale * 1.15).max(1e-3);
        let mut chart = ChartBuilder::on(area)
            .caption(title, font(22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(axis.range(), 0.0..top)?;
        quiet_mesh(
            chart
                .configure_mesh()
                .x_label_formatter(&|v| units::significant(*v))
                .x_desc(axis.description())
                .y_desc(format!("{what} ({unit_name})"))
                .y_label_formatter(&|v| units::significant(*v)),
        )
        .draw()?;
        for f in &fig.failures {
            let x = axis.x(f.time);
            chart.draw_series(LineSeries::new(
                [(x, 0.0), (x, top)],
                DARK_RED.mix(0.6).stroke_width(2),
            ))?;
        }
        let y_mean = mean * scale;
        chart.draw_series(LineSeries::new(
            [(axis.range().start, y_mean), (axis.range().end, y_mean)],
            GRAY.stroke_width(1),
        ))?;
        for run in &fig.runs {
            let line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.0.run == run.number)
                .map(|p| (axis.x(p.0.time), p.1 * scale))
                .collect();
            chart.draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))?;
            chart.draw_series(line.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
        }
        Ok(())
    })
}

/// One bar per failure: its lost work, restart and failed checkpoint, stacked.
pub(super) fn time_lost(fig: &Figures) -> SvgResult {
    let n = fig.failures.len();
    let longest = fig
        .failures
        .iter()
        .map(|f| f.time_lost())
        .fold(0.0, f64::max);
    let (scale, unit) = if longest < 1.0 {
        (1000.0, "ms")
    } else if longest < 600.0 {
        (1.0, "s")
    } else {
        (1.0 / 60.0, "min")
    };
    let legend = vec![
        (
            Mark::Bar(DARK_RED, 0.8),
            "work lost since the checkpoint".into(),
        ),
        (Mark::Bar(PURPLE, 0.8), "restart".into()),
        (Mark::Bar(ORANGE, 0.8), "failed checkpoint".into()),
    ];
    let height = 150 + (360 / n as u32).clamp(26, 50) * n as u32;
    svg(height, &legend, |area| {
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!(
                    "Time lost to failures: {} in all",
                    units::duration(fig.time_lost())
                ),
                font(22),
            )
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(190)
            .build_cartesian_2d(0.0..(longest * scale * 1.1).max(1e-3), 0.4..n as f64 + 0.6)?;
        let row = |i: usize| (n - i) as f64;
        let name = |y: &f64| {
            let i = n as f64 - y.round();
            if (y - y.round()).abs() > 1e-6 || i < 0.0 || i >= n as f64 {
                return String::new();
            }
            let f = &fig.failures[i as usize];
            match (f.kind, &f.dataset) {
                (FailureKind::RunDied, _) => format!("run {} died", f.run),
                (FailureKind::CheckpointFailed, Some(d)) => format!("{d} failed (run {})", f.run),
                (FailureKind::FetchFailed, Some(d)) => format!("fetch of {d} (run {})", f.run),
                (_, None) => format!("failure in run {}", f.run),
            }
        };
        quiet_mesh(
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(n + 2)
                .y_label_formatter(&name)
                .x_label_formatter(&|v| units::significant(*v))
                .x_desc(format!("time lost ({unit})")),
        )
        .draw()?;
        for (i, f) in fig.failures.iter().enumerate() {
            let y = row(i);
            let mut x = 0.0;
            for (secs, c) in [
                (f.lost_work, DARK_RED),
                (f.restart, PURPLE),
                (f.failed_checkpoint, ORANGE),
            ] {
                let w = secs * scale;
                if w > 0.0 {
                    let bar = [(x, y - 0.3), (x + w, y + 0.3)];
                    chart.draw_series([Rectangle::new(bar, c.mix(0.8).filled())])?;
                }
                x += w;
            }
            let text = match &f.note {
                Some(note) if f.time_lost() == 0.0 => note.clone(),
                _ => units::duration(f.time_lost()),
            };
            chart.draw_series([
                EmptyElement::at((x, y)) + Text::new(text, (6, -8), font(14).color(&BLACK))
            ])?;
        }
        Ok(())
    })
}

/// The share of time a checkpoint interval τ wastes by Young's first-order model: C/τ
/// writing checkpoints, and half an interval of work lost per failure, τ/2M.
pub fn waste(interval: f64, cost: f64, mtbf: f64) -> f64 {
    (cost / interval + interval / (2.0 * mtbf)).min(1.0)
}

/// The waste curve with the interval in use, Young's and Daly's marked; None without a
/// cost and a time between failures to draw it from.
pub(super) fn interval(fig: &Figures) -> Result<Option<String>, Box<dyn std::error::Error>> {
    let i = &fig.interval;
    let (Some(cost), Some((mtbf, lower)), Some(young), Some(daly)) =
        (i.cost, i.mtbf, i.young, i.daly)
    else {
        return Ok(None);
    };
    if cost <= 0.0 || mtbf <= 0.0 {
        return Ok(None);
    }
    let marks: Vec<(f64, RGBColor, String)> = [
        i.in_use
            .map(|v| (v, BLUE, format!("in use: {}", units::duration(v)))),
        Some((young, GREEN, format!("Young: {}", units::duration(young)))),
        Some((daly, ORANGE, format!("Daly: {}", units::duration(daly)))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let floor = 1e-3;
    let lo = (marks.iter().map(|m| m.0).fold(f64::MAX, f64::min) / 10.0).max(floor);
    let hi = (marks.iter().map(|m| m.0).fold(0.0, f64::max) * 10.0).max(lo * 100.0);
    let curve: Vec<(f64, f64)> = (0..=200)
        .map(|k| lo * (hi / lo).powf(k as f64 / 200.0))
        .map(|t| (t, 100.0 * waste(t, cost, mtbf)))
        .collect();
    let top = (curve.iter().map(|p| p.1).fold(0.0, f64::max) * 1.08).clamp(1e-3, 105.0);
    let mut legend = vec![(Mark::Line(GRAY), "time wasted (model)".to_string())];
    legend.extend(marks.iter().map(|m| (Mark::Line(m.1), m.2.clone())));
    let bound = if lower { " (a lower bound)" } else { "" };
    legend.push((Mark::Blank, format!("C = {}", units::duration(cost))));
    legend.push((Mark::Blank, format!("M = {}{bound}", units::duration(mtbf))));
    let svg = svg(400, &legend, |area| {
        let mut chart = ChartBuilder::on(area)
            .caption(
                "Checkpoint interval: in use, and the optimum for this cost and MTBF",
                font(22),
            )
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d((lo..hi).log_scale(), 0.0..top)?;
        quiet_mesh(
            chart
                .configure_mesh()
                .x_labels(12)
                .x_desc("interval between checkpoints (log scale)")
                .y_desc("time wasted (%)")
                .x_label_formatter(&|v| units::tick(*v))
                .y_label_formatter(&|v| units::significant(*v)),
        )
        .draw()?;
        chart.draw_series(LineSeries::new(curve.clone(), GRAY.stroke_width(2)))?;
        for (x, c, _) in &marks {
            let x = x.max(lo);
            chart.draw_series(LineSeries::new([(x, 0.0), (x, top)], c.stroke_width(2)))?;
            let y = 100.0 * waste(x, cost, mtbf);
            chart.draw_series([Circle::new((x, y.min(top)), 5, c.filled())])?;
        }
        Ok(())
    })?;
    Ok(Some(svg))
}
