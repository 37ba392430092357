//! Steps-to-target vs batch size on log-log axes (log2 B, log10 S): the curve's points (the best
//! trials, or the confirmed seed medians with the best trials as `○` beside them), the
//! perfect-scaling line from the smallest B that reached, the fitted S_min·(1 + B_crit/B) curve,
//! and the segments between measured points coloured by regime. Batch sizes where no trial reached
//! the target are drawn on the top edge: `×` when every finished trial diverged, `↑` when some ran
//! out of budget (not reached). Given per-point intervals the chart draws vertical whiskers; an
//! uncertain fit is dashed. Without colour the lines differ by pattern: measured solid, fit
//! dashed, perfect-scaling dotted.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line as TextLine;
use ratatui::widgets::canvas::{Canvas, Context, Line, Points};
use ratatui::widgets::{Block, Widget};

use super::log_axis::{log10_bounds, log10_ticks, log2_bounds, pow2_ticks};
use super::{centered_note, draw_axes, PlotArea};
use crate::core::analysis::{Analysis, Readout};
use crate::tui::theme::Theme;

/// One sweep on the chart.
#[derive(Clone, Debug)]
pub struct ScalingSeries<'a> {
    pub name: String,
    pub analysis: &'a Analysis,
    pub color: Color,
    pub marker: &'static str,
}

/// What a series may add to the chart beyond its analysis (see `ScalingChart::with_extras`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesExtras {
    /// Interval of S per point of `analysis.per_batch` (same index; empty or None: no whisker).
    pub intervals: Vec<Option<[u64; 2]>>,
    /// The fit is uncertain (poor r², wide intervals): drawn dashed and labelled.
    pub fit_uncertain: bool,
}

/// A scaling chart with per-series extras (whiskers, uncertain fits), index-aligned with
/// `chart.series`.
pub struct ScalingChartWith<'a> {
    pub chart: ScalingChart<'a>,
    pub extras: Vec<SeriesExtras>,
}

pub struct ScalingChart<'a> {
    pub series: Vec<ScalingSeries<'a>>,
    /// Batch sizes of the plan: the x axis covers them from the start, so it does not jump.
    pub planned: Vec<usize>,
    /// Colour segments by regime and draw the perfect-scaling line (single-sweep view).
    pub regimes: bool,
    pub block: Option<Block<'a>>,
    pub theme: Theme,
    pub marker: Marker,
}

impl<'a> ScalingChart<'a> {
    /// The chart with whiskers and fit uncertainty per series.
    pub fn with_extras(self, extras: Vec<SeriesExtras>) -> ScalingChartWith<'a> {
        ScalingChartWith {
            chart: self,
            extras,
        }
    }

    fn bounds(&self, extras: &[SeriesExtras]) -> ([f64; 2], [f64; 2], bool) {
        let none = SeriesExtras::default();
        let mut bs: Vec<usize> = self.planned.clone();
        let mut ss: Vec<f64> = Vec::new();
        for (si, s) in self.series.iter().enumerate() {
            let ex = extras.get(si).unwrap_or(&none);
            let a = s.analysis;
            for (i, p) in a.per_batch.iter().enumerate() {
                bs.push(p.batch_size);
                if a.readout == Readout::Confirmed {
                    // the best trials are drawn beside the confirmed curve
                    ss.extend(p.steps.map(|st| st as f64));
                }
                if let Some(st) = a.curve_steps(p) {
                    ss.push(st as f64);
                    if let Some(Some([lo, hi])) = ex.intervals.get(i) {
                        ss.extend([*lo as f64, *hi as f64].into_iter().filter(|v| *v > 0.0));
                    }
                }
            }
        }
        let bmin = bs.iter().copied().min().unwrap_or(16);
        let bmax = bs.iter().copied().max().unwrap_or(1024);
        let have = !ss.is_empty();
        let (smin, smax) = if have {
            let lo = ss.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = ss.iter().cloned().fold(0.0, f64::max);
            (lo / 1.3, hi * 1.3)
        } else {
            (10.0, 1000.0)
        };
        (log2_bounds(bmin, bmax), log10_bounds(smin, smax), have)
    }
}

/// Draws a line solid or as dots.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pattern {
    Solid,
    Dotted,
}

fn patterned(ctx: &mut Context, a: (f64, f64), b: (f64, f64), color: Color, p: Pattern) {
    match p {
        Pattern::Solid => ctx.draw(&Line::new(a.0, a.1, b.0, b.1, color)),
        Pattern::Dotted => {
            let n = 24;
            let pts: Vec<(f64, f64)> = (0..=n)
                .map(|i| {
                    let t = i as f64 / n as f64;
                    (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t)
                })
                .collect();
            ctx.draw(&Points {
                coords: &pts,
                color,
            });
        }
    }
}

/// Where a series reads the confirmed S(B), its best trials (the paper's readout) are
/// drawn with this mark beside the confirmed points.
pub const BEST_TRIAL_MARK: &str = "○";

fn lx(b: f64) -> f64 {
    b.max(1e-9).log2()
}
fn ly(s: f64) -> f64 {
    s.max(1e-9).log10()
}

impl Widget for ScalingChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.with_extras(Vec::new()).render(area, buf);
    }
}

impl Widget for ScalingChartWith<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let extras = self.extras;
        let this = self.chart;
        let inner = match &this.block {
            Some(b) => {
                b.clone().render(area, buf);
                b.inner(area)
            }
            None => area,
        };
        let th = this.theme;
        let (xb, yb, have) = this.bounds(&extras);
        let xt = pow2_ticks(xb);
        let yt = log10_ticks(yb);
        let Some(pa) = draw_axes(buf, inner, xb, yb, &xt, &yt, th.dim()) else {
            centered_note(buf, inner, "(too small for the chart)", th.dim());
            return;
        };
        if !have && this.series.iter().all(|s| s.analysis.per_batch.is_empty()) {
            centered_note(
                buf,
                pa.rect,
                "waiting for the first finished trial…",
                th.dim(),
            );
            return;
        }
        // Lines on a Braille canvas.
        let reference = th.reference_color();
        let fitc = th.fit_color();
        let regimes = this.regimes;
        let series = &this.series;
        let mono = !th.color;
        let extras_ref = &extras;
        let canvas = Canvas::default()
            .marker(this.marker)
            .x_bounds(xb)
            .y_bounds(yb)
            .paint(move |ctx| {
                let none = SeriesExtras::default();
                for (si, s) in series.iter().enumerate() {
                    let ex = extras_ref.get(si).unwrap_or(&none);
                    let a = s.analysis;
                    if regimes {
                        if let Some((b0, s0)) = a.perfect_anchor {
                            let k = s0 as f64 * b0 as f64;
                            let x0 = lx(b0 as f64);
                            // perfect scaling: S = S0·B0/B, a straight line of slope −1 in log-log
                            // (log2 B vs log10 S: slope −log10 2 per octave)
                            let x1 = xb[1];
                            patterned(
                                ctx,
                                (x0, ly(k / 2f64.powf(x0))),
                                (x1, ly(k / 2f64.powf(x1))),
                                reference,
                                if mono {
                                    Pattern::Dotted
                                } else {
                                    Pattern::Solid
                                },
                            );
                        }
                        ctx.layer();
                    }
                    if let Some(fit) = &a.fit {
                        let n = 48;
                        let dashed = ex.fit_uncertain || (mono && regimes);
                        let mut prev: Option<(f64, f64)> = None;
                        for i in 0..=n {
                            let x = xb[0] + (xb[1] - xb[0]) * i as f64 / n as f64;
                            let y = ly(fit.steps_at(2f64.powf(x)));
                            if let Some((px, py)) = prev {
                                // dashed: every other piece of the curve is left out
                                if !dashed || i % 2 == 0 {
                                    ctx.draw(&Line::new(
                                        px,
                                        py,
                                        x,
                                        y,
                                        if regimes { fitc } else { s.color },
                                    ));
                                }
                            }
                            prev = Some((x, y));
                        }
                    }
                    // whiskers: the interval of S at each batch size
                    for (i, p) in a.per_batch.iter().enumerate() {
                        let (Some(_), Some(Some([lo, hi]))) =
                            (a.curve_steps(p), ex.intervals.get(i))
                        else {
                            continue;
                        };
                        if *lo == 0 || hi <= lo {
                            continue;
                        }
                        let x = lx(p.batch_size as f64);
                        let (y0, y1) = (ly(*lo as f64), ly(*hi as f64));
                        let cap = (xb[1] - xb[0]) / 80.0;
                        ctx.draw(&Line::new(x, y0, x, y1, s.color));
                        ctx.draw(&Line::new(x - cap, y0, x + cap, y0, s.color));
                        ctx.draw(&Line::new(x - cap, y1, x + cap, y1, s.color));
                    }
                    ctx.layer();
                    // measured segments, in the colour of the regime (the ordered partition)
                    // at their geometric middle
                    let pts: Vec<(usize, f64)> = a
                        .per_batch
                        .iter()
                        .filter_map(|p| a.curve_steps(p).map(|st| (p.batch_size, st as f64)))
                        .collect();
                    for w in pts.windows(2) {
                        let color = if regimes {
                            let mid = ((w[0].0 * w[1].0) as f64).sqrt().round() as usize;
                            crate::report::regime_at(a, mid)
                                .map(|r| th.regime_color(r))
                                .unwrap_or(s.color)
                        } else {
                            s.color
                        };
                        ctx.draw(&Line::new(
                            lx(w[0].0 as f64),
                            ly(w[0].1),
                            lx(w[1].0 as f64),
                            ly(w[1].1),
                            color,
                        ));
                    }
                    ctx.layer();
                }
            });
        canvas.render(pa.rect, buf);
        draw_marks(buf, &pa, &this.series, &th);
        draw_legend(buf, &pa, &this, &extras, th);
    }
}

/// Points and failure marks (↑ not reached, × failed) on top of the canvas, in cells.
fn draw_marks(buf: &mut Buffer, pa: &PlotArea, series: &[ScalingSeries<'_>], th: &Theme) {
    for s in series {
        let a = s.analysis;
        for p in &a.per_batch {
            let x = lx(p.batch_size as f64);
            let style = Style::default()
                .fg(s.color)
                .add_modifier(ratatui::style::Modifier::BOLD);
            if a.readout == Readout::Confirmed {
                // the best trial (the paper's readout) under the confirmed point
                if let Some((c, r)) = p.steps.and_then(|st| pa.cell(x, ly(st as f64))) {
                    buf.set_string(c, r, BEST_TRIAL_MARK, Style::default().fg(s.color));
                }
            }
            match a.curve_steps(p) {
                Some(st) => {
                    if let Some((c, r)) = pa.cell(x, ly(st as f64)) {
                        buf.set_string(c, r, s.marker, style);
                    }
                }
                None if p.steps.is_none() && p.counts.trials > p.counts.cancelled => {
                    let mark = if p.counts.not_reached > 0 {
                        "↑"
                    } else {
                        "×"
                    };
                    let c = pa.col(x);
                    buf.set_string(c, pa.rect.y, mark, th.error());
                }
                None => {}
            }
        }
    }
}

fn draw_legend(
    buf: &mut Buffer,
    pa: &PlotArea,
    chart: &ScalingChart<'_>,
    extras: &[SeriesExtras],
    th: Theme,
) {
    let mut lines: Vec<TextLine<'static>> = Vec::new();
    if chart.regimes {
        let color = chart
            .series
            .first()
            .map(|s| s.color)
            .unwrap_or(Color::Reset);
        let confirmed = chart
            .series
            .first()
            .is_some_and(|s| s.analysis.readout == Readout::Confirmed);
        lines.push(TextLine::styled(
            format!(
                "{} {}",
                chart.series.first().map(|s| s.marker).unwrap_or("●"),
                // what the curve reads (the report's words)
                if confirmed {
                    "S(B): confirmed"
                } else {
                    "S(B): best trial"
                }
            ),
            Style::default().fg(color),
        ));
        if confirmed {
            lines.push(TextLine::styled(
                format!("{BEST_TRIAL_MARK} best trial"),
                Style::default().fg(color),
            ));
        }
        let uncertain = extras.first().is_some_and(|e| e.fit_uncertain);
        let fit = match (th.color, uncertain) {
            (_, true) => "╌╌ fit (uncertain)",
            (false, false) => "╌╌ fit",
            (true, false) => "── fit",
        };
        lines.push(TextLine::styled(fit, Style::default().fg(th.fit_color())));
        lines.push(TextLine::styled(
            if th.color {
                "── perfect"
            } else {
                "⋯⋯ perfect"
            },
            Style::default().fg(th.reference_color()),
        ));
        if !th.color {
            lines.push(TextLine::raw("━━ measured"));
        }
    } else {
        // each run's points are its S(B): the confirmed seed medians where its confirm stage
        // ran to the end, else its best trials; a confirmed run's best trials are drawn as ○
        let any_confirmed = chart
            .series
            .iter()
            .any(|s| s.analysis.readout == Readout::Confirmed);
        for s in &chart.series {
            let reads = match (any_confirmed, s.analysis.readout) {
                (false, _) => "",
                (true, Readout::Confirmed) => ": confirmed",
                (true, Readout::BestTrial) => ": best trial",
            };
            lines.push(TextLine::styled(
                format!("{} {}{reads}", s.marker, s.name),
                Style::default().fg(s.color),
            ));
        }
        if any_confirmed {
            lines.push(TextLine::styled(
                format!("{BEST_TRIAL_MARK} best trial of a confirmed run"),
                th.dim(),
            ));
        }
    }
    let fails = chart
        .series
        .iter()
        .flat_map(|s| s.analysis.per_batch.iter())
        .any(|p| p.steps.is_none() && p.counts.trials > p.counts.cancelled);
    if fails {
        lines.push(TextLine::styled("× diverged ↑ budget", th.error()));
    }
    if extras
        .iter()
        .any(|e| e.intervals.iter().any(|i| i.is_some()))
    {
        lines.push(TextLine::styled("┿ 95 % interval of S(B)", th.dim()));
    }
    let w = lines.iter().map(|l| l.width()).max().unwrap_or(0) as u16;
    let h = lines.len() as u16;
    if w + 2 > pa.rect.width / 2 || h + 1 > pa.rect.height {
        return;
    }
    let x = pa.rect.x + pa.rect.width - w - 1;
    let y = pa.rect.y + 1;
    for l in &lines {
        super::fit::note(
            &super::fit::line_text(l),
            w as usize,
            super::fit::Kind::Label,
        );
    }
    for (i, l) in lines.iter().enumerate() {
        // clear the cells under the legend so it stays readable over lines
        for c in x..x + w {
            buf[(c, y + i as u16)].set_symbol(" ");
        }
        buf.set_line(x, y + i as u16, l, w);
    }
}
