//! Live: the scaling chart filling in as trials finish, loss curves of running trials (after the
//! sweep, and for an opened log: each batch size's best trial's validation metric), status.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::panel;
use crate::core::analysis::Analysis;
use crate::core::trial::Outcome;
use crate::tui::app::{App, Charts, LiveState};
use crate::tui::theme::Theme;
use crate::tui::widgets::fit;
use crate::tui::widgets::log_axis::format_pow2;
use crate::tui::widgets::loss_chart::{LossChart, LossSeries};
use crate::tui::widgets::scaling_chart::{ScalingChart, ScalingSeries, SeriesExtras};

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    let Some(l) = app.live() else {
        let text = fit::wrap(
            "No sweep yet: launch one from Setup (1) or open a saved run (3).",
            area.width as usize,
        );
        fit::paragraph(frame, area, text.into_iter().map(Line::raw).collect());
        return;
    };
    let status_w = if area.width >= 140 {
        52
    } else {
        (area.width * 2 / 5).max(30)
    };
    let [charts, status] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(status_w)]).areas(area);
    match app.charts {
        Charts::Both => {
            let loss_h = (charts.height * 2 / 5).max(7);
            let [top, bottom] =
                Layout::vertical([Constraint::Min(0), Constraint::Length(loss_h)]).areas(charts);
            scaling(frame, top, app, l);
            loss(frame, bottom, app, l);
        }
        Charts::Scaling => scaling(frame, charts, app, l),
        Charts::Loss => loss(frame, charts, app, l),
    }
    super::report_panel::status_panel(frame, status, app, l, th);
}

fn scaling(frame: &mut Frame, area: Rect, app: &App, l: &LiveState) {
    let th = app.theme;
    // the raw points of the current data at once; intervals, fit and regimes of the last analysis
    // until the next one lands (a quiet mark meanwhile)
    let a = l.chart();
    let (what, tail) = match &a.target {
        // moved along the ladder (`[` `]`): where on it
        Some(t) if !l.ladder.is_empty() => (
            crate::tui::app::ladder_text(t.value, &l.ladder),
            " · steps vs batch size (log-log)",
        ),
        Some(t) => (
            format!(
                "steps to {}",
                crate::core::analysis::target_text(t)
                    .replace("<=", "≤")
                    .replace(">=", "≥")
            ),
            " vs batch size (log-log)",
        ),
        None => ("steps to target".to_string(), " vs batch size (log-log)"),
    };
    let updating = if l.updating() && !l.finished.is_empty() {
        " · updating"
    } else {
        ""
    };
    // the whole title where it fits the panel, else without "vs batch size (log-log)"
    let room = (area.width as usize).saturating_sub(4);
    let mut title = format!("{what}{tail}{updating}");
    if title.chars().count() > room {
        title = format!("{what}{updating}");
    }
    let block = panel(&title, app.panel == 0, &th);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // one row under the chart names the regimes
    let [chart_area, regime_row] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(1)]).areas(inner);
    let chart = ScalingChart {
        series: vec![ScalingSeries {
            name: l.plan.preset.clone(),
            analysis: a,
            color: th.color(ratatui::style::Color::Reset),
            marker: "●",
        }],
        planned: l.plan.batch_sizes.clone(),
        regimes: true,
        block: None,
        theme: th,
        marker: Marker::Braille,
    }
    .with_extras(vec![SeriesExtras {
        // whiskers: the 95 % interval of each batch size's S(B) as the curve reads it (the
        // best-of-K tail model, or the confirmed seed median's)
        intervals: a
            .per_batch
            .iter()
            .map(|p| p.readout_ci(a.readout))
            .collect(),
        fit_uncertain: a.fit.as_ref().is_some_and(fit_uncertain),
    }]);
    frame.render_widget(chart, chart_area);
    fit::paragraph(
        frame,
        regime_row,
        vec![regime_line(a, &th, regime_row.width)],
    );
}

/// "perfect 16–64 · diminishing 64–512 · maximal 512–2K", each in its regime colour.
pub fn regime_line(a: &Analysis, th: &Theme, width: u16) -> Line<'static> {
    let spans = crate::tui::app::regime_spans(a);
    if spans.is_empty() {
        let n = a
            .per_batch
            .iter()
            .filter(|p| a.curve_steps(p).is_some())
            .count();
        return Line::styled(
            if n < 2 {
                fit::preview(
                    "regimes appear once two batch sizes reach the target",
                    width as usize,
                )
            } else {
                String::new()
            },
            th.dim(),
        );
    }
    // the report's labels where they fit, else the regimes' short names (same colours)
    let line = |short: u8, sep: &'static str| -> Line<'static> {
        let mut out = Vec::new();
        for (i, (lo, hi, r)) in spans.iter().enumerate() {
            if i > 0 {
                out.push(Span::styled(sep, th.dim()));
            }
            use crate::core::analysis::Regime;
            let name = match (short, r) {
                (0, _) => r.label(),
                (1, Regime::Perfect) => "perfect",
                (1, Regime::Diminishing) => "diminishing",
                (1, Regime::Maximal) => "maximal",
                (_, Regime::Perfect) => "perf.",
                (_, Regime::Diminishing) => "dimin.",
                (_, Regime::Maximal) => "max.",
            };
            out.push(Span::styled(
                format!(
                    "{name} {}–{}",
                    format_pow2(*lo as u64),
                    format_pow2(*hi as u64)
                ),
                th.regime(*r),
            ));
        }
        Line::from(out)
    };
    let mut fits = [line(0, " · "), line(1, " · "), line(1, ", ")]
        .into_iter()
        .find(|l| l.width() <= width as usize)
        .unwrap_or_else(|| line(2, ", "));
    // narrower still: the first regimes whole, never one cut
    while fits.width() > width as usize && fits.spans.len() > 2 {
        fits.spans.truncate(fits.spans.len() - 2);
    }
    if fits.width() > width as usize {
        fits.spans.clear();
    }
    fits
}

/// A fit too poor to draw as solid: the analysis's verdict (r² below 0.9, or a bootstrap
/// interval wider than its value).
pub fn fit_uncertain(f: &crate::core::analysis::Fit) -> bool {
    f.uncertain || !(f.r2.is_finite() && f.r2 >= 0.9)
}

fn loss(frame: &mut Frame, area: Rect, app: &App, l: &LiveState) {
    let th = app.theme;
    // After the sweep (and for an opened log with nothing running): each batch size's best trial,
    // validation metric against log steps — the finished sweep's story, not "no running trial".
    if l.running.is_empty() && (l.done || l.read_only()) {
        let best = l.best_curves();
        if !best.is_empty() {
            let metric = l
                .workload()
                .map(|w| w.target.metric.name().to_string())
                .unwrap_or_else(|| "metric".into());
            let series: Vec<LossSeries> = best
                .iter()
                .enumerate()
                .map(|(i, c)| LossSeries {
                    label: format!("B={}", format_pow2(c.batch_size as u64)),
                    points: &c.points,
                    color: th.series_color(i),
                })
                .collect();
            let title = format!("{metric} of each B's best trial vs step (log-log)");
            let chart = LossChart {
                series,
                block: Some(panel(&title, app.panel == 1, &th)),
                theme: th,
                marker: Marker::Braille,
                log_x: true,
            };
            frame.render_widget(chart, area);
            return;
        }
    }
    let curves = l.curves();
    let pts: Vec<Vec<(f64, f64)>> = curves.iter().map(|c| c.points.points()).collect();
    let series: Vec<LossSeries> = curves
        .iter()
        .zip(pts.iter())
        .enumerate()
        .map(|(i, (c, p))| LossSeries {
            label: match &c.ended {
                None => format!("B={}", format_pow2(c.batch_size as u64)),
                Some(e) => format!("B={} {}", format_pow2(c.batch_size as u64), ended_mark(e)),
            },
            points: p,
            color: th.series_color(i),
        })
        .collect();
    let title = if l.read_only() {
        "training loss"
    } else {
        "training loss of running trials"
    };
    let chart = LossChart {
        series,
        block: Some(panel(title, app.panel == 1, &th)),
        theme: th,
        marker: Marker::Braille,
        log_x: false,
    };
    frame.render_widget(chart, area);
}

/// Short mark of a finished trial's outcome in the loss legend.
fn ended_mark(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Reached { .. } => "✓",
        Outcome::Diverged { .. } => "×",
        Outcome::NotReached { .. } => "↑",
        Outcome::Cancelled { .. } | Outcome::Oom { .. } => "–",
    }
}
