//! The report's charts, drawn with plotters' SVG backend (text stays `<text>`, so no font
//! is needed to draw them and the page's own font renders them): the timeline of runs and
//! events, checkpoint cost and flush bandwidth over time, the time lost to each failure,
//! and the checkpoint interval in use on the curve of time wasted against the interval.
//! Each chart carries its own title, axis descriptions with units, and legend (in a panel
//! beside the plot, where it never hides data), so it reads alone as an `--svg` file.

mod measures;
mod timeline;

use super::figures::Figures;
use super::units::TimeAxis;
use plotters::coord::Shift;
use plotters::prelude::*;
use scr::event_log::Ending;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = Result<(), Box<dyn std::error::Error>>;
type SvgResult = Result<String, Box<dyn std::error::Error>>;

const WIDTH: u32 = 1100;
const LEGEND_WIDTH: u32 = 230;
const FONT: &str = "sans-serif";

const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(230, 120, 20);
const GREEN: RGBColor = RGBColor(44, 160, 44);
const DARK_RED: RGBColor = RGBColor(200, 30, 30);
const PURPLE: RGBColor = RGBColor(148, 103, 189);
const GRAY: RGBColor = RGBColor(127, 127, 127);
const AMBER: RGBColor = RGBColor(200, 150, 0);
const TEAL: RGBColor = RGBColor(23, 170, 190);

/// One chart: the file name `--svg` writes it to, and its SVG.
pub struct Chart {
    pub name: &'static str,
    pub svg: String,
}

/// How a legend entry is drawn.
#[derive(Clone, Copy)]
enum Mark {
    Dot(RGBColor),
    Ring(RGBColor),
    Triangle(RGBColor),
    Square(RGBColor),
    Hollow(RGBColor),
    Cross(RGBColor),
    Line(RGBColor),
    Bar(RGBColor, f64),
    /// No mark: a line of text under the entries above.
    Blank,
}

/// Draws into an SVG of `height` pixels: `plot` gets the area left of the legend panel.
fn svg(height: u32, legend: &[(Mark, String)], plot: impl FnOnce(&Area) -> Drawn) -> SvgResult {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (left, right) = root.split_horizontally(WIDTH - LEGEND_WIDTH);
        plot(&left)?;
        draw_legend(&right, legend)?;
        root.present()?;
    }
    Ok(text)
}

fn font(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().into()
}

/// The grid and text every chart shares: readable labels, one faint line between the
/// labelled ones.
fn quiet_mesh<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged,
    Y: Ranged,
    DB: DrawingBackend,
{
    mesh.axis_desc_style(font(15))
        .label_style(font(14))
        .light_line_style(RGBColor(240, 240, 240))
        .max_light_lines(1)
}

fn draw_legend(area: &Area, entries: &[(Mark, String)]) -> Drawn {
    if entries.is_empty() {
        return Ok(());
    }
    let top = 50;
    let row = 24;
    let bottom = top + row * entries.len() as i32;
    area.draw(&Rectangle::new(
        [(4, top - 14), (LEGEND_WIDTH as i32 - 8, bottom - 6)],
        ShapeStyle::from(&RGBColor(200, 200, 200)).stroke_width(1),
    ))?;
    for (i, (mark, label)) in entries.iter().enumerate() {
        let y = top + row * i as i32;
        draw_mark(area, *mark, (20, y))?;
        area.draw(&Text::new(label.clone(), (36, y - 8), font(14)))?;
    }
    Ok(())
}

fn draw_mark(area: &Area, mark: Mark, (x, y): (i32, i32)) -> Drawn {
    match mark {
        Mark::Dot(c) => area.draw(&Circle::new((x, y), 5, c.filled()))?,
        Mark::Ring(c) => area.draw(&Circle::new((x, y), 5, c.stroke_width(2)))?,
        Mark::Triangle(c) => area.draw(&TriangleMarker::new((x, y), 6, c.filled()))?,
        Mark::Square(c) => area.draw(&Rectangle::new(
            [(x - 5, y - 5), (x + 5, y + 5)],
            c.filled(),
        ))?,
        Mark::Hollow(c) => area.draw(&Rectangle::new(
            [(x - 6, y - 6), (x + 6, y + 6)],
            c.stroke_width(2),
        ))?,
        Mark::Cross(c) => area.draw(&Cross::new((x, y), 6, c.stroke_width(3)))?,
        Mark::Line(c) => area.draw(&PathElement::new(
            vec![(x - 10, y), (x + 10, y)],
            c.stroke_width(2),
        ))?,
        Mark::Blank => {}
        Mark::Bar(c, alpha) => {
            area.draw(&Rectangle::new(
                [(x - 10, y - 6), (x + 10, y + 6)],
                c.mix(alpha).filled(),
            ))?;
            area.draw(&Rectangle::new(
                [(x - 10, y - 6), (x + 10, y + 6)],
                c.stroke_width(1),
            ))?
        }
    }
    Ok(())
}

fn ending_color(e: Ending) -> RGBColor {
    match e {
        Ending::Finalized => GREEN,
        Ending::Halted => AMBER,
        Ending::Failed => DARK_RED,
        Ending::Open => GRAY,
    }
}

/// Every chart the figures allow (a chart with nothing to show is left out).
pub fn all(fig: &Figures) -> Result<Vec<Chart>, Box<dyn std::error::Error>> {
    let (Some(origin), Some(end)) = (fig.origin(), fig.end()) else {
        return Ok(Vec::new());
    };
    let axis = TimeAxis::new(origin, end);
    let mut out = vec![Chart {
        name: "timeline",
        svg: timeline::timeline(fig, &axis)?,
    }];
    // a chart of a measure the log never gave would be empty: it is left out
    let costs: Vec<_> = fig
        .checkpoints
        .iter()
        .filter_map(|c| Some((c, c.secs?)))
        .collect();
    if !costs.is_empty() {
        let svg = measures::over_time(
            fig,
            &axis,
            "Checkpoint cost over time",
            ("checkpoint cost", measures::Unit::Seconds),
            BLUE,
            costs,
        )?;
        out.push(Chart {
            name: "checkpoint-cost",
            svg,
        });
    }
    let bandwidths: Vec<_> = fig
        .flushes
        .iter()
        .filter_map(|f| Some((f, f.mb_per_s?)))
        .collect();
    if !bandwidths.is_empty() {
        let svg = measures::over_time(
            fig,
            &axis,
            "Flush bandwidth over time",
            ("flush bandwidth", measures::Unit::MibPerSecond),
            ORANGE,
            bandwidths,
        )?;
        out.push(Chart {
            name: "flush-bandwidth",
            svg,
        });
    }
    if !fig.failures.is_empty() {
        out.push(Chart {
            name: "time-lost",
            svg: measures::time_lost(fig)?,
        });
    }
    if let Some(svg) = measures::interval(fig)? {
        out.push(Chart {
            name: "interval",
            svg,
        });
    }
    Ok(out)
}
