//! The exported chart (`export --svg`, the picture that goes into a paper): S(B) against B on
//! log-log axes — the curve's points with their 95 % intervals, the best trials beside a
//! confirmed curve, the perfect-scaling line, the fitted curve, batch sizes where no trial
//! reached, the ordered regimes with their boundaries' intervals.
//!
//! Layout: the plot on top, the legend in its own band below it (it covers nothing), every
//! marker the plot uses in the legend. Labels inside the plot (the regimes' names, the failed
//! trials' counts) are placed as boxes estimated from their font size and character count
//! ([`text_box`], the estimate the tests hold the SVG to): each is kept inside the plot and moved
//! down, row by row, off any label placed before it.

use plotters::coord::combinators::LogCoord;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::notes::evidence_rule;
use crate::core::analysis::{target_text, Analysis, BatchPoint, Readout};
use crate::runlog::reader::RunLog;

/// One curve of a chart.
pub struct ChartSeries<'a> {
    pub label: String,
    pub analysis: &'a Analysis,
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

const GREY: RGBColor = RGBColor(120, 120, 120);
const BAND_GREY: RGBColor = RGBColor(150, 150, 150);

/// The canvas width and the height of the plot above the legend (px).
const WIDTH: u32 = 900;
const PLOT_HEIGHT: u32 = 600;
/// The plot's margin and the axes' label areas (px).
const MARGIN: u32 = 15;
const X_LABELS: u32 = 45;
const Y_LABELS: u32 = 65;
/// Pixels between the top of the data and the top of the plot: the regimes' names, the
/// crosses of batch sizes where nothing reached and their counts live there.
const TOP_BAND: f64 = 80.0;
/// A legend row (px).
const LEGEND_ROW: u32 = 17;

/// Font sizes as plotters is asked for them; its SVG backend writes a size s as s / 1.24 px.
const LABEL_FONT: f64 = 13.0;
const NOTE_FONT: f64 = 11.0;
const LEGEND_FONT: f64 = 13.0;
const TICK_FONT: f64 = 12.0;
const SVG_FONT_SCALE: f64 = 1.24;

/// The width of a character of sans-serif text as a share of its font size: the estimate every
/// label's box is placed with (generous for digits and lower case).
pub(crate) const CHAR_WIDTH: f64 = 0.62;

/// A text's box on the canvas (px): left, top, right, bottom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TextBox {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl TextBox {
    pub fn overlaps(&self, o: &TextBox) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
    pub fn inside(&self, o: &TextBox) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

/// The box of `text` set at `font_px` (the SVG's font size) with its top-left corner at (x, y).
pub(crate) fn text_box(text: &str, font_px: f64, x: f64, y: f64) -> TextBox {
    let w = text.chars().count() as f64 * font_px * CHAR_WIDTH;
    TextBox {
        x0: x,
        y0: y,
        x1: x + w,
        y1: y + font_px,
    }
}

/// Places labels inside `area` without overlapping each other.
struct Placer {
    area: TextBox,
    taken: Vec<TextBox>,
}

impl Placer {
    /// A free place for `text` at `font` (as asked of plotters) starting at x = `x` (centred
    /// on it when `centre`), its top at `y` or the first free row below it (then above it);
    /// None where the plot has no room.
    fn place(&mut self, text: &str, font: f64, x: f64, centre: bool, y: f64) -> Option<(i32, i32)> {
        let px = font / SVG_FONT_SCALE;
        let w = text_box(text, px, 0.0, 0.0).x1;
        let x = if centre { x - w / 2.0 } else { x };
        let x = x.clamp(self.area.x0 + 2.0, (self.area.x1 - w - 2.0).max(0.0));
        let row = px + 2.0;
        let tries = (0..40)
            .map(|i| y + row * i as f64)
            .chain((1..10).map(|i| y - row * i as f64));
        for ty in tries {
            // whole pixels, as the SVG writes them
            let (xi, yi) = (x.floor(), ty.round());
            let b = text_box(text, px, xi, yi);
            if b.inside(&self.area) && !self.taken.iter().any(|t| t.overlaps(&b)) {
                self.taken.push(b);
                return Some((xi as i32, yi as i32));
            }
        }
        None
    }
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>;
type Area<'b> = DrawingArea<SVGBackend<'b>, plotters::coord::Shift>;

fn svg_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("svg: {e}")
}

/// The chart's extent: batch sizes (x) and steps (y), with margins; room above the data for
/// the top band.
#[derive(Clone, Copy)]
struct Extent {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

fn extent(series: &[ChartSeries]) -> anyhow::Result<Extent> {
    let mut bs: Vec<f64> = Vec::new();
    let mut ss: Vec<f64> = Vec::new();
    for s in series {
        for p in &s.analysis.per_batch {
            bs.push(p.batch_size as f64);
            if let Some(st) = p.steps {
                ss.push(st as f64);
            }
            if let Some([lo, hi]) = p.steps_ci {
                ss.push(lo.max(1) as f64);
                ss.push(hi as f64);
            }
            if let Some(c) = &p.confirmed {
                ss.extend(c.steps.map(|x| x as f64));
                if let Some(ci) = c.steps_ci {
                    ss.push(ci.lo.max(1) as f64);
                    ss.extend(ci.hi.map(|h| h as f64));
                }
            }
        }
    }
    anyhow::ensure!(!bs.is_empty(), "nothing to plot: the run log has no trials");
    let bmin = bs.iter().copied().fold(f64::INFINITY, f64::min);
    let bmax = bs.iter().copied().fold(0.0, f64::max);
    let (smin, smax) = if ss.is_empty() {
        (1.0, 10.0)
    } else {
        (
            ss.iter().copied().fold(f64::INFINITY, f64::min),
            ss.iter().copied().fold(0.0, f64::max),
        )
    };
    let y0 = (smin / 2.0).max(0.5);
    let top = smax * 1.3;
    // the top band: TOP_BAND px of the plot's height above the data, in log units
    let plot_px = (PLOT_HEIGHT - 2 * MARGIN - X_LABELS - 30) as f64;
    let span = (top / y0).ln().max(1.0);
    let y1 = top * (span * TOP_BAND / (plot_px - TOP_BAND)).exp();
    Ok(Extent {
        x0: bmin / 1.5,
        x1: bmax * 1.5,
        y0,
        y1,
    })
}

/// A marker of the legend.
#[derive(Clone, Copy)]
enum Glyph {
    /// The curve: a line through a filled dot with an error bar.
    Curve(RGBColor),
    /// An open square (the best trial beside a confirmed curve).
    Square(RGBColor),
    /// An open ring (a best trial at the search-space edge).
    Ring(RGBColor),
    /// A dashed line of this opacity and width (perfect scaling; an uncertain fit).
    Dashed(RGBColor, f64, u32),
    /// A solid line of this opacity and width (the fit).
    Line(RGBColor, f64, u32),
    /// A cross (no trial reached).
    Cross(RGBColor),
    /// A regime boundary: a dashed vertical line over a grey band.
    Boundary,
    /// A label in the plot ("diminishing", "6 n/r").
    Label(RGBColor),
    /// Words only.
    None,
}

/// One legend entry.
struct Entry {
    glyph: Glyph,
    text: String,
}

/// The legend of `series`: every marker the plot draws, in the report's words.
fn legend(series: &[ChartSeries]) -> Vec<Entry> {
    let mut v = Vec::new();
    let one = series.len() == 1;
    for (k, s) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let a = s.analysis;
        let what = match a.readout {
            Readout::Confirmed => {
                "S(B) confirmed: the seed median of the best confirmed configuration"
            }
            Readout::BestTrial => "S(B): the best trial, fewest steps over the search trials",
        };
        v.push(Entry {
            glyph: Glyph::Curve(colour),
            text: format!("{}: {what}, with its 95 % interval", s.label),
        });
        if a.readout == Readout::Confirmed {
            v.push(Entry {
                glyph: Glyph::Square(colour),
                text: format!(
                    "{}: the best trial (Shallue et al.'s readout), beside the confirmed S(B)",
                    s.label
                ),
            });
        }
        if a.perfect_anchor.is_some() {
            v.push(Entry {
                glyph: Glyph::Dashed(colour, 0.5, 1),
                text: format!(
                    "{}: perfect scaling S(B0)·B0/B from the smallest B",
                    s.label
                ),
            });
        }
        if let Some(f) = &a.fit {
            let ci = f
                .b_crit_ci
                .map(|[lo, hi]| format!(" [{lo:.0}–{hi:.0}]"))
                .unwrap_or_default();
            v.push(Entry {
                glyph: if f.uncertain {
                    Glyph::Dashed(colour, 0.5, 3)
                } else {
                    Glyph::Line(colour, 0.35, 3)
                },
                text: format!(
                    "{}: fit S = S_min·(1 + B_crit/B), S_min {:.0}, B_crit {:.0}{ci}{}",
                    s.label,
                    f.s_min,
                    f.b_crit,
                    if f.uncertain {
                        " (uncertain: dashed)"
                    } else {
                        ""
                    }
                ),
            });
        }
        if a.withheld() && !(a.evidence.curve.is_empty() && a.evidence.thin.is_empty()) {
            v.push(Entry {
                glyph: Glyph::None,
                text: format!(
                    "{}: fit and regimes withheld (too little evidence: they need {})",
                    s.label,
                    evidence_rule()
                ),
            });
        }
        let c = COLOURS[0];
        if a.per_batch
            .iter()
            .any(|p| p.at_search_edge && p.steps.is_some())
            && !v.iter().any(|e| matches!(e.glyph, Glyph::Ring(_)))
        {
            v.push(Entry {
                glyph: Glyph::Ring(if one { colour } else { c }),
                text: "best trial at the search-space edge: S(B) there is an upper bound (†)"
                    .into(),
            });
        }
        if a.per_batch.iter().any(|p| p.steps.is_none())
            && !v.iter().any(|e| matches!(e.glyph, Glyph::Cross(_)))
        {
            v.push(Entry {
                glyph: Glyph::Cross(if one { colour } else { c }),
                text: "no trial reached the target at this B".into(),
            });
        }
        if one {
            if a.per_batch.iter().any(|p| !failure_label(p).is_empty()) {
                v.push(Entry {
                    glyph: Glyph::Label(GREY),
                    text: "grey counts: trials that did not reach (n/r) or diverged (div)".into(),
                });
            }
            if !a.regimes.is_empty() {
                v.push(Entry {
                    glyph: Glyph::Label(colour),
                    text:
                        "regimes: the ordered partition of a monotone fit (? a poorly determined \
                           boundary)"
                            .into(),
                });
            }
            if a.regimes.iter().any(|r| r.b_hi_ci.is_some()) {
                v.push(Entry {
                    glyph: Glyph::Boundary,
                    text: "regime boundary (dashed) and its 95 % interval (grey band)".into(),
                });
            }
        }
    }
    v
}

/// An SVG log-log chart of steps-to-target vs batch size for one or more sweeps.
pub fn svg_chart(title: &str, series: &[ChartSeries]) -> anyhow::Result<String> {
    let e = extent(series)?;
    let entries = legend(series);
    let height = PLOT_HEIGHT + LEGEND_ROW * entries.len() as u32 + 16;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_err)?;
        let (top, _) = root.split_vertically(PLOT_HEIGHT);
        let mut chart = ChartBuilder::on(&top)
            .caption(title, ("sans-serif", 20))
            .margin(MARGIN)
            .x_label_area_size(X_LABELS)
            .y_label_area_size(Y_LABELS)
            .build_cartesian_2d((e.x0..e.x1).log_scale(), (e.y0..e.y1).log_scale())
            .map_err(svg_err)?;
        // the grid from plotters, the tick labels placed here (plotters' log axes can write
        // one label twice)
        chart
            .configure_mesh()
            .x_desc("batch size B")
            .y_desc("steps to target S(B)")
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&|_| String::new())
            .draw()
            .map_err(svg_err)?;
        draw_ticks(&chart, &top, series, e)?;
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let mut placer = Placer {
            area: TextBox {
                x0: xr.start as f64,
                y0: yr.start as f64,
                x1: xr.end as f64,
                y1: yr.end as f64,
            },
            taken: Vec::new(),
        };
        let grid: Vec<f64> = (0..=100)
            .map(|i| e.x0 * (e.x1 / e.x0).powf(i as f64 / 100.0))
            .collect();
        for (k, s) in series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            draw_measured(&mut chart, s, colour)?;
            draw_reference_and_fit(&mut chart, s, colour, &grid, e)?;
        }
        // labels: the regimes' names first (the top row), then the failed trials' counts
        if let [s] = series {
            draw_regimes(&mut chart, &top, &mut placer, s.analysis, COLOURS[0], e)?;
        }
        for (k, s) in series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            draw_failures(&chart, &top, &mut placer, s, colour, series.len() == 1)?;
        }
        draw_legend(&root, &entries)?;
        root.present().map_err(svg_err)?;
    }
    Ok(out)
}

/// The axes' tick labels: every measured batch size on x, 1–2–5 × 10^k steps on y (up to the
/// top of the data), each left out where it would touch the one before it.
fn draw_ticks(chart: &Chart, top: &Area, series: &[ChartSeries], e: Extent) -> anyhow::Result<()> {
    let px = TICK_FONT / SVG_FONT_SCALE;
    let style = ("sans-serif", TICK_FONT)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Top));
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let mut bs: Vec<usize> = series
        .iter()
        .flat_map(|s| s.analysis.per_batch.iter().map(|p| p.batch_size))
        .collect();
    bs.sort_unstable();
    bs.dedup();
    let mut last: Option<TextBox> = None;
    for b in bs {
        let text = b.to_string();
        let (x, _) = chart.backend_coord(&(b as f64, e.y0));
        let w = text_box(&text, px, 0.0, 0.0).x1;
        let bx = text_box(&text, px, (x as f64 - w / 2.0).floor(), (yr.end + 5) as f64);
        if last.is_some_and(|l| l.x1 + 4.0 > bx.x0) {
            continue;
        }
        top.draw(&Text::new(
            text,
            (bx.x0 as i32, bx.y0 as i32),
            style.clone(),
        ))
        .map_err(svg_err)?;
        last = Some(bx);
    }
    let mut last: Option<TextBox> = None;
    let top_y = e.y0 * (e.y1 / e.y0).powf(0.97);
    let mut decade = 10f64.powf(e.y0.log10().floor());
    while decade <= top_y {
        for m in [1.0, 2.0, 5.0] {
            let y = decade * m;
            if y < e.y0 || y > top_y {
                continue;
            }
            let text = format!("{}", y.round() as u64);
            let (_, py) = chart.backend_coord(&(e.x0, y));
            let w = text_box(&text, px, 0.0, 0.0).x1;
            let bx = text_box(
                &text,
                px,
                (xr.start as f64 - 6.0 - w).floor(),
                (py as f64 - px / 2.0).round(),
            );
            // upwards: the next label must sit above the last one
            if last.is_some_and(|l| bx.y1 + 2.0 > l.y0) {
                continue;
            }
            top.draw(&Text::new(
                text,
                (bx.x0 as i32, bx.y0 as i32),
                style.clone(),
            ))
            .map_err(svg_err)?;
            last = Some(bx);
        }
        decade *= 10.0;
    }
    Ok(())
}

/// The curve's points (the best trials, or the confirmed seed medians once the confirm stage is
/// complete) joined by a line, their error bars (the 95 % interval; an unbounded one runs to the
/// top) and an open ring where the best trial is at the search-space edge (S(B) there is an
/// upper bound). With the confirmed readout the best trials (the paper's readout) are small open
/// squares beside it.
fn draw_measured(chart: &mut Chart, s: &ChartSeries, colour: RGBColor) -> anyhow::Result<()> {
    let a = s.analysis;
    let confirmed = a.readout == Readout::Confirmed;
    let pts: Vec<(f64, f64)> = a
        .per_batch
        .iter()
        .filter_map(|p| a.curve_steps(p).map(|st| (p.batch_size as f64, st as f64)))
        .collect();
    chart
        .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
        .map_err(svg_err)?;
    chart
        .draw_series(pts.iter().map(|&p| Circle::new(p, 4, colour.filled())))
        .map_err(svg_err)?;
    if confirmed {
        let best: Vec<(f64, f64)> = a
            .per_batch
            .iter()
            .filter_map(|p| p.steps.map(|st| (p.batch_size as f64, st as f64)))
            .collect();
        let sq = |(x, y): (f64, f64)| {
            Rectangle::new(
                [(x / 1.03, y / 1.03), (x * 1.03, y * 1.03)],
                colour.stroke_width(1),
            )
        };
        chart
            .draw_series(best.into_iter().map(sq))
            .map_err(svg_err)?;
    }
    let top = chart.y_range().end;
    for p in &a.per_batch {
        let (lo, hi) = match (confirmed, p.confirmed.as_ref()) {
            (true, Some(c)) => match (c.steps, c.steps_ci) {
                (Some(_), Some(ci)) => (ci.lo, ci.hi.map_or(top, |h| h as f64)),
                _ => continue,
            },
            (true, None) => continue,
            (false, _) => match (p.steps, p.steps_ci) {
                (Some(_), Some([lo, hi])) => (lo, hi as f64),
                _ => continue,
            },
        };
        let (b, lo, hi) = (p.batch_size as f64, lo.max(1) as f64, hi);
        let cap = 1.04f64;
        for path in [
            vec![(b, lo), (b, hi)],
            vec![(b / cap, lo), (b * cap, lo)],
            vec![(b / cap, hi), (b * cap, hi)],
        ] {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    path,
                    colour.stroke_width(1),
                )))
                .map_err(svg_err)?;
        }
    }
    chart
        .draw_series(
            a.per_batch
                .iter()
                .filter(|p| p.at_search_edge)
                .filter_map(|p| p.steps.map(|s| (p.batch_size as f64, s as f64)))
                .map(|p| Circle::new(p, 8, colour.stroke_width(1))),
        )
        .map_err(svg_err)?;
    Ok(())
}

/// The perfect-scaling line (dashed) and the fitted curve (dashed when uncertain).
fn draw_reference_and_fit(
    chart: &mut Chart,
    s: &ChartSeries,
    colour: RGBColor,
    grid: &[f64],
    e: Extent,
) -> anyhow::Result<()> {
    let a = s.analysis;
    let inside = |&(_, y): &(f64, f64)| y >= e.y0 && y <= e.y1;
    if let Some(anchor) = a.perfect_anchor {
        let line: Vec<(f64, f64)> = grid
            .iter()
            .map(|&b| (b, crate::analysis::perfect_scaling_steps(anchor, b)))
            .filter(inside)
            .collect();
        chart
            .draw_series(DashedLineSeries::new(
                line,
                6,
                4,
                colour.mix(0.5).stroke_width(1),
            ))
            .map_err(svg_err)?;
    }
    let Some(f) = &a.fit else { return Ok(()) };
    let curve: Vec<(f64, f64)> = grid
        .iter()
        .map(|&b| (b, f.steps_at(b)))
        .filter(inside)
        .collect();
    let style = if f.uncertain {
        colour.mix(0.5).stroke_width(3)
    } else {
        colour.mix(0.35).stroke_width(3)
    };
    if f.uncertain {
        chart.draw_series(DashedLineSeries::new(curve, 3, 5, style))
    } else {
        chart.draw_series(LineSeries::new(curve, style))
    }
    .map_err(svg_err)?;
    Ok(())
}

/// Batch sizes where no trial reached the target (a cross in the top band) and, for one series,
/// the count of failed trials under each point.
fn draw_failures(
    chart: &Chart,
    top: &Area,
    placer: &mut Placer,
    s: &ChartSeries,
    colour: RGBColor,
    labels: bool,
) -> anyhow::Result<()> {
    let a = s.analysis;
    let cross_y = placer.area.y0 + 30.0;
    for p in &a.per_batch {
        // where the point is drawn: the curve's S(B), else the best trial
        let at = a.curve_steps(p).or(p.steps);
        let (px, py) = chart.backend_coord(&(
            p.batch_size as f64,
            at.map_or(chart.y_range().end, |s| s as f64),
        ));
        // beside its point, right of the error bar; under its cross
        let (x, centre, y) = match p.steps {
            Some(_) => (px as f64 + 12.0, false, py as f64 + 3.0),
            None => {
                top.draw(&Cross::new((px, cross_y as i32), 6, colour.stroke_width(2)))
                    .map_err(svg_err)?;
                (px as f64, true, cross_y + 9.0)
            }
        };
        let parts = failure_label(p);
        if parts.is_empty() || !labels {
            continue;
        }
        let text = parts.join(", ");
        if let Some(at) = placer.place(&text, NOTE_FONT, x, centre, y) {
            top.draw(&Text::new(
                text,
                at,
                ("sans-serif", NOTE_FONT)
                    .into_font()
                    .color(&GREY)
                    .pos(Pos::new(HPos::Left, VPos::Top)),
            ))
            .map_err(svg_err)?;
        }
    }
    Ok(())
}

fn failure_label(p: &BatchPoint) -> Vec<String> {
    let mut parts = Vec::new();
    if p.steps.is_none() {
        parts.push("none reached".to_string());
    }
    if p.counts.diverged > 0 {
        parts.push(format!("{} div", p.counts.diverged));
    }
    if p.counts.not_reached > 0 {
        parts.push(format!("{} n/r", p.counts.not_reached));
    }
    parts
}

/// The ordered regime partition: its name at the geometric middle of each span in the top row,
/// thin vertical lines at the boundaries with their intervals as a band.
fn draw_regimes(
    chart: &mut Chart,
    top: &Area,
    placer: &mut Placer,
    a: &Analysis,
    colour: RGBColor,
    e: Extent,
) -> anyhow::Result<()> {
    for r in &a.regimes {
        if let Some([lo, hi]) = r.b_hi_ci {
            let b = r.b_hi;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(b, e.y0), (b, e.y1)],
                    4,
                    4,
                    BAND_GREY.stroke_width(1),
                ))
                .map_err(svg_err)?;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(lo.max(e.x0), e.y0), (hi.min(e.x1), e.y0 * 1.15)],
                    BAND_GREY.mix(0.4).filled(),
                )))
                .map_err(svg_err)?;
        }
    }
    for r in &a.regimes {
        let (px, _) = chart.backend_coord(&((r.b_lo * r.b_hi).sqrt(), e.y1));
        let text = format!("{}{}", r.regime.short(), if r.uncertain { "?" } else { "" });
        let y = placer.area.y0 + 4.0;
        if let Some(at) = placer.place(&text, LABEL_FONT, px as f64, true, y) {
            top.draw(&Text::new(
                text,
                at,
                ("sans-serif", LABEL_FONT)
                    .into_font()
                    .color(&colour)
                    .pos(Pos::new(HPos::Left, VPos::Top)),
            ))
            .map_err(svg_err)?;
        }
    }
    Ok(())
}

/// The legend in its band below the plot: one entry a row, its marker, then its words.
fn draw_legend(root: &Area, entries: &[Entry]) -> anyhow::Result<()> {
    let x = (MARGIN + 10) as i32;
    for (i, en) in entries.iter().enumerate() {
        let y = (PLOT_HEIGHT + 4 + LEGEND_ROW * i as u32) as i32;
        let mid = y + (LEGEND_ROW as i32) / 2 - 2;
        let (gx, gw) = (x, 24);
        match en.glyph {
            Glyph::Curve(c) => {
                root.draw(&PathElement::new(
                    vec![(gx, mid), (gx + gw, mid)],
                    c.stroke_width(2),
                ))
                .map_err(svg_err)?;
                root.draw(&Circle::new((gx + gw / 2, mid), 4, c.filled()))
                    .map_err(svg_err)?;
                root.draw(&PathElement::new(
                    vec![(gx + gw / 2, mid - 7), (gx + gw / 2, mid + 7)],
                    c.stroke_width(1),
                ))
                .map_err(svg_err)?;
            }
            Glyph::Square(c) => root
                .draw(&Rectangle::new(
                    [(gx + gw / 2 - 4, mid - 4), (gx + gw / 2 + 4, mid + 4)],
                    c.stroke_width(1),
                ))
                .map_err(svg_err)?,
            Glyph::Ring(c) => root
                .draw(&Circle::new((gx + gw / 2, mid), 7, c.stroke_width(1)))
                .map_err(svg_err)?,
            Glyph::Dashed(c, alpha, w) => {
                for k in 0..3 {
                    root.draw(&PathElement::new(
                        vec![(gx + 9 * k, mid), (gx + 9 * k + 5, mid)],
                        c.mix(alpha).stroke_width(w),
                    ))
                    .map_err(svg_err)?;
                }
            }
            Glyph::Line(c, alpha, w) => root
                .draw(&PathElement::new(
                    vec![(gx, mid), (gx + gw, mid)],
                    c.mix(alpha).stroke_width(w),
                ))
                .map_err(svg_err)?,
            Glyph::Cross(c) => root
                .draw(&Cross::new((gx + gw / 2, mid), 5, c.stroke_width(2)))
                .map_err(svg_err)?,
            Glyph::Boundary => {
                root.draw(&Rectangle::new(
                    [(gx + 4, mid + 3), (gx + gw - 4, mid + 6)],
                    BAND_GREY.mix(0.4).filled(),
                ))
                .map_err(svg_err)?;
                root.draw(&PathElement::new(
                    vec![(gx + gw / 2, mid - 7), (gx + gw / 2, mid + 6)],
                    BAND_GREY.stroke_width(1),
                ))
                .map_err(svg_err)?;
            }
            Glyph::Label(c) => root
                .draw(&Rectangle::new(
                    [(gx + 6, mid - 3), (gx + gw - 6, mid + 3)],
                    c.filled(),
                ))
                .map_err(svg_err)?,
            Glyph::None => {}
        }
        root.draw(&Text::new(
            en.text.clone(),
            (gx + gw + 8, y),
            ("sans-serif", LEGEND_FONT)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Top)),
        ))
        .map_err(svg_err)?;
    }
    Ok(())
}

/// The chart of one run log's analysis.
pub fn svg_for_log(log: &RunLog, a: &Analysis) -> anyhow::Result<String> {
    let target = a.target.as_ref().map(target_text).unwrap_or_default();
    let title = format!(
        "{} — S(B): steps to {} vs batch size B",
        log.header.preset.name, target
    );
    svg_chart(
        &title,
        &[ChartSeries {
            label: log.header.preset.workload.optimizer.name().to_string(),
            analysis: a,
        }],
    )
}

#[cfg(test)]
mod tests;
