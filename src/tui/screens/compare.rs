//! Compare: several sweeps on one scaling chart (distinct colours and markers) and a table of
//! S_min, B_crit and regime boundaries side by side — "perfect ≤" and "maximal ≥" by the same
//! rule as the CLI's `compare` (`runlog::compare`), numbers formatted by `report::num`.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{ellipsize, panel};
use crate::report::num;
use crate::report::{maximal_from, perfect_scaling_extent};
use crate::tui::app::App;
use crate::tui::theme::MARKERS;
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
        frame.render_widget(Paragraph::new(msg).block(panel("Compare", true, &th)), area);
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
    // every run at one target (`[` `]`), or each at its own goal
    let chart_title = match c.target {
        Some(t) => format!(
            "{}{} · steps vs batch size — points: best trial; lines: fits",
            crate::tui::app::ladder_text(t, &c.ladder),
            if c.current() { "" } else { " · updating" }
        ),
        None => "steps to target vs batch size — points: best trial; lines: fits".to_string(),
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

    let block = panel("Side by side", false, &th);
    let inner = block.inner(table_area);
    frame.render_widget(block, table_area);
    let name_w = (inner.width as usize).saturating_sub(56).clamp(8, 40);
    let mut lines = vec![Line::styled(
        format!(
            "  {:<name_w$} {:<9} {:>6} {:>7} {:>7} {:>5} {:>9} {:>9}",
            "sweep", "optimizer", "trials", "S_min", "B_crit", "r²", "perfect≤", "maximal≥"
        ),
        th.dim(),
    )];
    for (i, r) in c.runs.iter().enumerate() {
        let a = &r.analysis;
        let perfect_to = perfect_scaling_extent(a)
            .map(|b| format_pow2(b as u64))
            .unwrap_or_else(|| "–".into());
        let maximal_from = maximal_from(a)
            .map(|b| format_pow2(b as u64))
            .unwrap_or_else(|| "–".into());
        let not_measured = a.per_batch.iter().any(|p| p.not_measured);
        let (s_min, b_crit, r2) = match &a.fit {
            Some(f) => (num(f.s_min), num(f.b_crit), format!("{:.3}", f.r2)),
            // stricter than this run's goal: never a number
            None if not_measured => ("not".into(), "measured".into(), "–".into()),
            None => ("–".into(), "–".into(), "–".into()),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{} ", MARKERS[i % MARKERS.len()]), th.series(i)),
            Span::styled(
                format!("{:<name_w$}", ellipsize(&r.label, name_w)),
                th.series(i),
            ),
            Span::raw(format!(
                " {:<9} {:>6} {:>7} {:>7} {:>5} {:>9} {:>9}",
                r.optimizer.name(),
                r.done,
                s_min,
                b_crit,
                r2,
                perfect_to,
                maximal_from
            )),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}
