//! Steps-to-target vs batch size on log-log axes (log2 B, log10 S): measured best points, the
//! perfect-scaling line from the smallest B that reached, the fitted S_min·(1 + B_crit/B) curve,
//! and the segments between measured points coloured by regime. Batch sizes where no trial reached
//! the target are drawn on the top edge: `×` when every finished trial diverged, `↑` when some ran
//! out of budget (not reached).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line as TextLine;
use ratatui::widgets::canvas::{Canvas, Line};
use ratatui::widgets::{Block, Widget};

use super::log_axis::{log10_bounds, log10_ticks, log2_bounds, pow2_ticks};
use super::{centered_note, draw_axes, PlotArea};
use crate::core::analysis::Analysis;
use crate::tui::theme::Theme;

/// One sweep on the chart.
#[derive(Clone, Debug)]
pub struct ScalingSeries<'a> {
    pub name: String,
    pub analysis: &'a Analysis,
    pub color: Color,
    pub marker: &'static str,
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

impl ScalingChart<'_> {
    fn bounds(&self) -> ([f64; 2], [f64; 2], bool) {
        let mut bs: Vec<usize> = self.planned.clone();
        let mut ss: Vec<f64> = Vec::new();
        for s in &self.series {
            for p in &s.analysis.per_batch {
                bs.push(p.batch_size);
                if let Some(st) = p.steps {
                    ss.push(st as f64);
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

fn lx(b: f64) -> f64 {
    b.max(1e-9).log2()
}
fn ly(s: f64) -> f64 {
    s.max(1e-9).log10()
}

impl Widget for ScalingChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let inner = match &self.block {
            Some(b) => {
                b.clone().render(area, buf);
                b.inner(area)
            }
            None => area,
        };
        let th = self.theme;
        let (xb, yb, have) = self.bounds();
        let xt = pow2_ticks(xb);
        let yt = log10_ticks(yb);
        let Some(pa) = draw_axes(buf, inner, xb, yb, &xt, &yt, th.dim()) else {
            centered_note(buf, inner, "(too small for the chart)", th.dim());
            return;
        };
        if !have && self.series.iter().all(|s| s.analysis.per_batch.is_empty()) {
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
        let regimes = self.regimes;
        let series = &self.series;
        let canvas = Canvas::default()
            .marker(self.marker)
            .x_bounds(xb)
            .y_bounds(yb)
            .paint(move |ctx| {
                for s in series {
                    let a = s.analysis;
                    if regimes {
                        if let Some((b0, s0)) = a.perfect_anchor {
                            let k = s0 as f64 * b0 as f64;
                            let x0 = lx(b0 as f64);
                            // perfect scaling: S = S0·B0/B, a straight line of slope −1 in log-log
                            // (log2 B vs log10 S: slope −log10 2 per octave)
                            let x1 = xb[1];
                            ctx.draw(&Line::new(
                                x0,
                                ly(k / 2f64.powf(x0)),
                                x1,
                                ly(k / 2f64.powf(x1)),
                                reference,
                            ));
                        }
                        ctx.layer();
                    }
                    if let Some(fit) = &a.fit {
                        let n = 48;
                        let mut prev: Option<(f64, f64)> = None;
                        for i in 0..=n {
                            let x = xb[0] + (xb[1] - xb[0]) * i as f64 / n as f64;
                            let y = ly(fit.steps_at(2f64.powf(x)));
                            if let Some((px, py)) = prev {
                                ctx.draw(&Line::new(
                                    px,
                                    py,
                                    x,
                                    y,
                                    if regimes { fitc } else { s.color },
                                ));
                            }
                            prev = Some((x, y));
                        }
                    }
                    ctx.layer();
                    // measured segments
                    let pts: Vec<(usize, f64)> = a
                        .per_batch
                        .iter()
                        .filter_map(|p| p.steps.map(|st| (p.batch_size, st as f64)))
                        .collect();
                    for w in pts.windows(2) {
                        let color = if regimes {
                            a.segments
                                .iter()
                                .find(|sg| sg.b_lo == w[0].0 && sg.b_hi == w[1].0)
                                .map(|sg| th.regime_color(sg.regime))
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
        // Points and failure marks on top, in cells.
        for s in &self.series {
            for p in &s.analysis.per_batch {
                let x = lx(p.batch_size as f64);
                let style = Style::default()
                    .fg(s.color)
                    .add_modifier(ratatui::style::Modifier::BOLD);
                match p.steps {
                    Some(st) => {
                        if let Some((c, r)) = pa.cell(x, ly(st as f64)) {
                            buf.set_string(c, r, s.marker, style);
                        }
                    }
                    None if p.trials > p.cancelled => {
                        let mark = if p.not_reached > 0 { "↑" } else { "×" };
                        let c = pa.col(x);
                        buf.set_string(c, pa.rect.y, mark, th.error());
                    }
                    None => {}
                }
            }
        }
        draw_legend(buf, &pa, &self, th);
    }
}

fn draw_legend(buf: &mut Buffer, pa: &PlotArea, chart: &ScalingChart<'_>, th: Theme) {
    let mut lines: Vec<TextLine<'static>> = Vec::new();
    if chart.regimes {
        let color = chart
            .series
            .first()
            .map(|s| s.color)
            .unwrap_or(Color::Reset);
        lines.push(TextLine::styled(
            format!(
                "{} best S",
                chart.series.first().map(|s| s.marker).unwrap_or("●")
            ),
            Style::default().fg(color),
        ));
        lines.push(TextLine::styled(
            "── fit",
            Style::default().fg(th.fit_color()),
        ));
        lines.push(TextLine::styled(
            "── perfect",
            Style::default().fg(th.reference_color()),
        ));
    } else {
        for s in &chart.series {
            lines.push(TextLine::styled(
                format!("{} {}", s.marker, s.name),
                Style::default().fg(s.color),
            ));
        }
    }
    let fails = chart
        .series
        .iter()
        .flat_map(|s| s.analysis.per_batch.iter())
        .any(|p| p.steps.is_none() && p.trials > p.cancelled);
    if fails {
        lines.push(TextLine::styled("× diverged ↑ budget", th.error()));
    }
    let w = lines.iter().map(|l| l.width()).max().unwrap_or(0) as u16;
    let h = lines.len() as u16;
    if w + 2 > pa.rect.width / 2 || h + 1 > pa.rect.height {
        return;
    }
    let x = pa.rect.x + pa.rect.width - w - 1;
    let y = pa.rect.y + 1;
    for (i, l) in lines.iter().enumerate() {
        // clear the cells under the legend so it stays readable over lines
        for c in x..x + w {
            buf[(c, y + i as u16)].set_symbol(" ");
        }
        buf.set_line(x, y + i as u16, l, w);
    }
}
