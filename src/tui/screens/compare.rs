//! Compare: several sweeps on one scaling chart (distinct colours and markers) and a table of
//! S_min and B_crit with their 95 % intervals and the regime boundaries side by side — "perfect ≤"
//! and "maximal ≥" by the same rule as the CLI's `compare` (`runlog::compare`), numbers formatted
//! by `report::num`.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::Frame;

use super::{panel, with_ci};
use crate::report::{maximal_from, perfect_scaling_extent};
use crate::tui::app::App;
use crate::tui::theme::MARKERS;
use crate::tui::widgets::columns::{self, Column};
use crate::tui::widgets::fit;
use crate::tui::widgets::log_axis::format_pow2;
use crate::tui::widgets::scaling_chart::{ScalingChart, ScalingSeries};

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = app.theme;
    let c = &app.compare;
    if c.runs.is_empty() {
        let msg = if c.loading {
            "loading…"
        } else {
            "Nothing to compare: in Runs (3) mark sweeps with space, then press c."
        };
        let block = panel("Compare", true, &th);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let text = fit::wrap(msg, inner.width as usize);
        fit::paragraph(frame, inner, text.into_iter().map(Line::raw).collect());
        return;
    }
    let table_h = (c.runs.len() as u16 + 3).min(area.height / 2);
    let [chart_area, table_area] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(table_h)]).areas(area);
    let series: Vec<ScalingSeries> = c
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| ScalingSeries {
            name: r.label.clone(),
            analysis: &r.analysis,
            color: th.series_color(i),
            marker: MARKERS[i % MARKERS.len()],
        })
        .collect();
    let planned: Vec<usize> = c
        .runs
        .iter()
        .flat_map(|r| r.analysis.per_batch.iter().map(|p| p.batch_size))
        .collect();
    // every run at one target (`[` `]`), or each at its own goal; the points are each run's S(B)
    // as its report reads it (the confirmed seed medians, or the best trials), the legend says which
    let place = match c.target {
        Some(t) => format!(
            "{}{} · ",
            crate::tui::app::ladder_text(t, &c.ladder),
            if c.current() { "" } else { " · updating" }
        ),
        None => "steps to each run's target vs batch size · ".to_string(),
    };
    let long = format!("{place}points: each run's S(B), lines: its fit");
    let chart_title = if long.chars().count() + 4 <= chart_area.width as usize {
        long
    } else {
        format!("{place}S(B) and fits")
    };
    let chart = ScalingChart {
        series,
        planned,
        regimes: false,
        block: Some(panel(&chart_title, false, &th)),
        theme: th,
        marker: Marker::Braille,
    };
    frame.render_widget(chart, chart_area);

    let block = panel("Side by side (95 % intervals)", false, &th);
    let inner = block.inner(table_area);
    frame.render_widget(block, table_area);
    let table = columns::lay_out(table_columns(app), inner.width as usize, th.dim());
    let mut lines = vec![table.head];
    lines.extend(table.rows);
    fit::paragraph(frame, inner, lines);
}

/// The table's columns: the run, its optimizer and trials, the fit with its intervals (as
/// `report` prints them), r², where perfect scaling ends and maximal data parallelism starts.
/// Where the panel is narrow r² and the optimizer go first.
fn table_columns(app: &App) -> Vec<Column> {
    let th = app.theme;
    let c = &app.compare;
    let mut marker = Column::new("", false, 0);
    let mut name = Column::name("sweep", 8, 40);
    let mut optimizer = Column::new("optimizer", false, 2);
    let mut trials = Column::new("trials", true, 0);
    let mut s_min = Column::new("S_min", true, 0);
    let mut b_crit = Column::new("B_crit", true, 0);
    let mut r2 = Column::new("r²", true, 3);
    let mut perfect = Column::new("perfect≤", true, 1);
    let mut maximal = Column::new("maximal≥", true, 1);
    let plain = th.text();
    for (i, r) in c.runs.iter().enumerate() {
        let a = &r.analysis;
        marker.push(MARKERS[i % MARKERS.len()], th.series(i));
        name.push(r.label.clone(), th.series(i));
        optimizer.push(r.optimizer.name(), plain);
        trials.push(r.done.to_string(), plain);
        let pow2 = |b: Option<usize>| {
            b.map(|b| format_pow2(b as u64))
                .unwrap_or_else(|| "–".into())
        };
        perfect.push(pow2(perfect_scaling_extent(a)), plain);
        maximal.push(pow2(maximal_from(a)), plain);
        let not_measured = a.per_batch.iter().any(|p| p.not_measured);
        let (s, b, q) = match &a.fit {
            Some(f) => (
                with_ci(f.s_min, f.s_min_ci),
                with_ci(f.b_crit, f.b_crit_ci),
                format!("{:.3}", f.r2),
            ),
            // stricter than this run's goal: never a number
            None if not_measured => ("–".into(), "not measured".into(), "–".into()),
            None => ("–".into(), "–".into(), "–".into()),
        };
        s_min.push(s, plain);
        b_crit.push(b, plain);
        r2.push(q, plain);
    }
    vec![
        marker, name, optimizer, trials, s_min, b_crit, r2, perfect, maximal,
    ]
}
