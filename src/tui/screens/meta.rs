//! The metaparameter picture (Shallue et al. 2018, Fig. 8): for each batch size, every trial at
//! its learning rate η (x, log) and 1−γ (y, log) for momentum/Nesterov, 1−β1 for Adam, or its
//! steps-to-target for SGD (η alone). Reached trials are coloured by their steps relative to the
//! best at that B (green fastest → red slowest), ★ marks the best, × diverged, · not reached.
//! All panels share the axes, so the feasible region can be seen shrinking as B grows.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use ratatui::Frame;

use super::panel;
use crate::core::record::TrialRecord;
use crate::core::trial::Outcome;
use crate::tui::app::{App, LiveState};
use crate::tui::theme::Theme;
use crate::tui::widgets::log_axis::{format_pow2, format_si, log10_bounds, log10_ticks};
use crate::tui::widgets::{draw_axes, fit};
use crate::workload::spec::OptimizerKind;

/// Smallest panel (cells) of one batch size.
const CELL_W: u16 = 34;
const CELL_H: u16 = 11;

/// What the y axis shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaY {
    /// 1−γ (momentum, Nesterov) or 1−β1 (Adam), log.
    OneMinus(&'static str),
    /// Steps to target (SGD, or a search that does not vary the momentum), log.
    Steps,
}

/// One trial as a point of the picture.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetaPoint {
    /// log10 η.
    pub x: f64,
    /// log10 of the y quantity (None: drawn on the top edge — not reached / diverged with `Steps`).
    pub y: Option<f64>,
    pub kind: PointKind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PointKind {
    Best,
    /// Reached, with steps / best steps at this B (≥ 1).
    Reached(f64),
    Diverged,
    NotReached,
}

/// The y quantity for an optimizer, given the trials (a momentum that never varies is not an axis).
pub fn meta_y(opt: OptimizerKind, trials: &[TrialRecord]) -> MetaY {
    let label = match opt {
        OptimizerKind::Momentum | OptimizerKind::Nesterov => "1−γ",
        OptimizerKind::Adam => "1−β1",
        OptimizerKind::Sgd => return MetaY::Steps,
    };
    let mut ms = trials.iter().map(|t| t.spec.metaparams.momentum);
    let first = ms.next();
    let varies = first.is_some_and(|f| ms.any(|m| (m - f).abs() > 1e-12));
    if varies {
        MetaY::OneMinus(label)
    } else {
        MetaY::Steps
    }
}

/// The points of one batch size.
pub fn meta_points(trials: &[TrialRecord], batch: usize, y: MetaY) -> Vec<MetaPoint> {
    let at: Vec<&TrialRecord> = trials
        .iter()
        .filter(|t| t.spec.batch_size == batch)
        .collect();
    let best = at
        .iter()
        .filter_map(|t| t.outcome.outcome.steps_to_target().map(|s| (s, t.trial_id)))
        .min();
    let mut out = Vec::new();
    for t in at {
        let lr = t.spec.metaparams.learning_rate;
        if !(lr.is_finite() && lr > 0.0) {
            continue;
        }
        let kind = match t.outcome.outcome {
            Outcome::Reached { step } => match best {
                Some((_, id)) if id == t.trial_id => PointKind::Best,
                Some((bs, _)) => PointKind::Reached(step as f64 / bs.max(1) as f64),
                None => PointKind::Reached(1.0),
            },
            Outcome::Diverged { .. } => PointKind::Diverged,
            Outcome::NotReached { .. } => PointKind::NotReached,
            Outcome::Cancelled { .. } | Outcome::Oom { .. } => continue,
        };
        let yv = match y {
            MetaY::OneMinus(_) => {
                let m = 1.0 - t.spec.metaparams.momentum;
                (m > 0.0).then(|| m.log10())
            }
            MetaY::Steps => t
                .outcome
                .outcome
                .steps_to_target()
                .filter(|s| *s > 0)
                .map(|s| (s as f64).log10()),
        };
        out.push(MetaPoint {
            x: lr.log10(),
            y: yv,
            kind,
        });
    }
    // best last, so it is drawn on top
    out.sort_by_key(|p| match p.kind {
        PointKind::NotReached => 0,
        PointKind::Diverged => 1,
        PointKind::Reached(_) => 2,
        PointKind::Best => 3,
    });
    out
}

/// Glyph and style of a point. Without colour the glyphs alone tell the classes apart.
pub fn point_style(k: PointKind, th: &Theme) -> (&'static str, Style) {
    let c = |c: Color| Style::default().fg(th.color(c));
    match k {
        PointKind::Best => ("★", c(Color::Green).add_modifier(Modifier::BOLD)),
        PointKind::Reached(r) if r <= 1.25 => ("●", c(Color::Green)),
        PointKind::Reached(r) if r <= 2.0 => ("●", c(Color::Yellow)),
        PointKind::Reached(_) => (if th.color { "●" } else { "○" }, c(Color::Red)),
        PointKind::Diverged => ("×", c(Color::Red)),
        PointKind::NotReached => ("·", th.dim()),
    }
}

/// "0.5", "0.02", "1e-4", "10", "1K".
fn short_value(v: f64) -> String {
    if v >= 1.0 {
        format_si(v)
    } else if v >= 1e-3 {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let e = v.log10().floor();
        let m = (v / 10f64.powf(e)).round();
        format!("{m}e{e}")
    }
}

/// Ticks of a log10 range at 1×10^k, plus 2× and 5× when it spans under two decades.
fn decade_ticks(b: [f64; 2]) -> Vec<(f64, String)> {
    let mults: &[f64] = if b[1] - b[0] <= 2.0 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut out = Vec::new();
    let mut d = b[0].floor();
    while d <= b[1] + 1e-9 {
        for &m in mults {
            let p = d + m.log10();
            if p >= b[0] - 1e-9 && p <= b[1] + 1e-9 {
                out.push((p, short_value(m * 10f64.powf(d))));
            }
        }
        d += 1.0;
    }
    out
}

fn pad_bounds(lo: f64, hi: f64) -> [f64; 2] {
    if !(lo.is_finite() && hi.is_finite()) {
        return [-3.0, 0.0];
    }
    let span = (hi - lo).max(0.2);
    [lo - span * 0.08, hi + span * 0.08]
}

/// One batch size's panel.
struct MetaPanel<'a> {
    title: String,
    points: &'a [MetaPoint],
    xb: [f64; 2],
    yb: [f64; 2],
    y: MetaY,
    selected: bool,
    theme: Theme,
}

impl Widget for MetaPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let th = self.theme;
        let block = panel(&self.title, self.selected, &th);
        let inner = block.inner(area);
        block.render(area, buf);
        let xt = decade_ticks(self.xb);
        let yt = match self.y {
            MetaY::OneMinus(_) => decade_ticks(self.yb),
            MetaY::Steps => log10_ticks(self.yb),
        };
        let Some(pa) = draw_axes(buf, inner, self.xb, self.yb, &xt, &yt, th.dim()) else {
            return;
        };
        if self.points.is_empty() {
            crate::tui::widgets::centered_note(buf, pa.rect, "no finished trial", th.dim());
            return;
        }
        for p in self.points {
            let (glyph, style) = point_style(p.kind, &th);
            let cell = match p.y {
                Some(y) => pa.cell(p.x, y.clamp(self.yb[0], self.yb[1])),
                // no y value (Steps axis, not reached / diverged): on the top edge
                None => pa.cell(p.x, self.yb[1]),
            };
            if let Some((c, r)) = cell {
                buf.set_string(c, r, glyph, style);
            }
        }
    }
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = app.theme;
    let Some(l) = app.live() else {
        let text = fit::wrap(
            "No sweep yet: launch one (1) or open a run (3), then press m in Live.",
            area.width as usize,
        );
        fit::paragraph(frame, area, text.into_iter().map(Line::raw).collect());
        return;
    };
    let [grid, legend] = ratatui::layout::Layout::vertical([
        ratatui::layout::Constraint::Min(0),
        ratatui::layout::Constraint::Length(1),
    ])
    .areas(area);
    draw_grid(frame.buffer_mut(), grid, l, app.meta_batch, &th);
    fit::paragraph(frame, legend, vec![legend_line(l, &th)]);
}

fn legend_line(l: &LiveState, th: &Theme) -> Line<'static> {
    let opt = l.workload().map(|w| w.optimizer);
    let y = opt.map(|o| meta_y(o, &l.finished)).unwrap_or(MetaY::Steps);
    let yname = match y {
        MetaY::OneMinus(n) => n,
        MetaY::Steps => "steps",
    };
    let mut spans = vec![Span::styled(format!(" η × {yname}, log · "), th.dim())];
    for (k, text) in [
        (PointKind::Best, "best "),
        (PointKind::Reached(1.0), "≤1.25× "),
        (PointKind::Reached(1.5), "≤2× "),
        (PointKind::Reached(3.0), ">2× steps "),
        (PointKind::Diverged, "diverged "),
        (PointKind::NotReached, "not reached"),
    ] {
        let (g, s) = point_style(k, th);
        spans.push(Span::styled(g, s));
        spans.push(Span::styled(text, th.dim()));
    }
    Line::from(spans)
}

/// Draws the panels of every batch size that fits, keeping the selected one in view.
pub fn draw_grid(buf: &mut Buffer, area: Rect, l: &LiveState, selected: usize, th: &Theme) {
    let mut bs = l.plan.batch_sizes.clone();
    bs.sort_unstable();
    bs.dedup();
    if bs.is_empty() || area.width < 20 || area.height < 6 {
        return;
    }
    let opt = l
        .workload()
        .map(|w| w.optimizer)
        .unwrap_or(OptimizerKind::Sgd);
    let y = meta_y(opt, &l.finished);
    let all: Vec<Vec<MetaPoint>> = bs.iter().map(|b| meta_points(&l.finished, *b, y)).collect();
    // shared axes over every trial of the sweep
    let xs = all.iter().flatten().map(|p| p.x);
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let xb = pad_bounds(x0, x1);
    let yb = match y {
        MetaY::OneMinus(_) => {
            let ys = all.iter().flatten().filter_map(|p| p.y);
            let (y0, y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
            pad_bounds(y0, y1)
        }
        MetaY::Steps => {
            let ys: Vec<f64> = all.iter().flatten().filter_map(|p| p.y).collect();
            if ys.is_empty() {
                [1.0, 3.0]
            } else {
                let lo = ys.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = ys.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                // room on top for the unreached / diverged row
                let b = log10_bounds(10f64.powf(lo), 10f64.powf(hi) * 1.5);
                [b[0], b[1]]
            }
        }
    };
    let cols = (area.width / CELL_W).max(1);
    let rows = (area.height / CELL_H).max(1);
    let cap = usize::from(cols * rows);
    let sel = selected.min(bs.len() - 1);
    let first = if bs.len() <= cap {
        0
    } else {
        (sel + 1).saturating_sub(cap)
    };
    let shown = (bs.len() - first).min(cap);
    let used_cols = (shown as u16).min(cols);
    let used_rows = (shown as u16).div_ceil(used_cols);
    let cw = area.width / used_cols;
    let ch = area.height / used_rows;
    for k in 0..shown {
        let i = first + k;
        let (c, r) = ((k as u16) % used_cols, (k as u16) / used_cols);
        let rect = Rect {
            x: area.x + c * cw,
            y: area.y + r * ch,
            width: cw,
            height: ch,
        };
        let pts = &all[i];
        let reached = pts
            .iter()
            .filter(|p| matches!(p.kind, PointKind::Best | PointKind::Reached(_)))
            .count();
        // the current data's best steps (as the points), before the analysis lands
        let best = l
            .chart()
            .per_batch
            .iter()
            .find(|p| p.batch_size == bs[i])
            .and_then(|p| p.steps)
            .map(|s| format!(" · best {}", format_si(s as f64)))
            .unwrap_or_default();
        let title = format!(
            "B={} · {reached}/{} reached{best}",
            format_pow2(bs[i] as u64),
            pts.len()
        );
        MetaPanel {
            title,
            points: pts,
            xb,
            yb,
            y,
            selected: i == sel,
            theme: *th,
        }
        .render(rect, buf);
    }
}
