//! Training-loss curves of the running (and most recently finished) trials, one colour per trial,
//! legend by batch size. Histories are bounded (see `app::History`), so drawing costs the same
//! after a week as after a minute. The y axis is log10(loss) when every loss is positive; with
//! `log_x` the x axis is log10(step) too (a finished sweep's best-trial metric curves).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line as TextLine;
use ratatui::widgets::canvas::{Canvas, Line};
use ratatui::widgets::{Block, Widget};

use super::log_axis::{format_si, linear_ticks, log10_bounds, log10_ticks};
use super::{centered_note, draw_axes};
use crate::tui::theme::Theme;

pub struct LossSeries<'a> {
    pub label: String,
    /// (step, loss)
    pub points: &'a [(f64, f64)],
    pub color: Color,
}

pub struct LossChart<'a> {
    pub series: Vec<LossSeries<'a>>,
    pub block: Option<Block<'a>>,
    pub theme: Theme,
    pub marker: Marker,
    /// Steps on a log axis (points at step 0 are left out).
    pub log_x: bool,
}

impl Widget for LossChart<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let inner = match &self.block {
            Some(b) => {
                b.clone().render(area, buf);
                b.inner(area)
            }
            None => area,
        };
        let th = self.theme;
        let log_x = self.log_x;
        let keep = move |p: &&(f64, f64)| p.1.is_finite() && (!log_x || p.0 > 0.0);
        let all = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(keep);
        let (mut x0, mut x1, mut y0, mut y1) = (
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
        );
        for &(x, y) in all {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if !x0.is_finite() {
            centered_note(buf, inner, "no running trial", th.dim());
            return;
        }
        let (xb, xt) = if log_x {
            let b = log10_bounds(x0, x1.max(x0 * 1.5));
            (b, log10_ticks(b))
        } else {
            let x0 = 0f64.min(x0);
            let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
            ([x0, x1], linear_ticks(x0, x1, 5))
        };
        let log = y0 > 0.0;
        let (yb, yt) = if log {
            let b = log10_bounds(y0, y1);
            (b, log10_ticks(b))
        } else {
            let pad = ((y1 - y0) * 0.05).max(1e-6);
            let b = [y0 - pad, y1 + pad];
            (b, linear_ticks(b[0], b[1], 4))
        };
        let Some(pa) = draw_axes(buf, inner, xb, yb, &xt, &yt, th.dim()) else {
            centered_note(buf, inner, "(too small)", th.dim());
            return;
        };
        let tf = move |y: f64| if log { y.max(1e-12).log10() } else { y };
        let tx = move |x: f64| if log_x { x.max(1e-12).log10() } else { x };
        let series = &self.series;
        Canvas::default()
            .marker(self.marker)
            .x_bounds(xb)
            .y_bounds(yb)
            .paint(move |ctx| {
                for s in series {
                    let pts: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .filter(keep)
                        .map(|&(x, y)| (tx(x), tf(y)))
                        .collect();
                    if pts.len() == 1 {
                        ctx.draw(&Line::new(pts[0].0, pts[0].1, pts[0].0, pts[0].1, s.color));
                    }
                    for w in pts.windows(2) {
                        ctx.draw(&Line::new(w[0].0, w[0].1, w[1].0, w[1].1, s.color));
                    }
                    ctx.layer();
                }
            })
            .render(pa.rect, buf);
        // legend: top-right, one line per series
        let lines: Vec<TextLine> = self
            .series
            .iter()
            .map(|s| {
                let last = s
                    .points
                    .last()
                    .map(|p| format!(" {}", short(p.1)))
                    .unwrap_or_default();
                TextLine::styled(format!("━ {}{last}", s.label), Style::default().fg(s.color))
            })
            .collect();
        let w = lines.iter().map(|l| l.width()).max().unwrap_or(0) as u16;
        let max_rows = pa.rect.height.saturating_sub(1);
        if w + 2 <= pa.rect.width * 2 / 3 {
            for l in lines.iter().take(max_rows as usize) {
                super::fit::note(
                    &super::fit::line_text(l),
                    w as usize,
                    super::fit::Kind::Label,
                );
            }
            let x = pa.rect.x + pa.rect.width - w - 1;
            for (i, l) in lines.iter().take(max_rows as usize).enumerate() {
                let y = pa.rect.y + i as u16;
                for c in x..x + w {
                    buf[(c, y)].set_symbol(" ");
                }
                buf.set_line(x, y, l, w);
            }
        }
    }
}

fn short(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format_si(v)
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}
