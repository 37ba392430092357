//! Runs: the saved run logs, their status and headline numbers; open, resume, mark for compare.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{ellipsize, panel};
use crate::tui::app::{App, RunStatus};
use crate::tui::widgets::log_axis::format_si;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    let r = &app.runs;
    let [list, detail] = Layout::vertical([Constraint::Min(0), Constraint::Length(4)]).areas(area);
    let title = format!("Runs in {}", app.runs_dir.display());
    let block = panel(&title, true, th);
    let inner = block.inner(list);
    frame.render_widget(block, list);
    let wide = inner.width >= 110;
    let mut lines: Vec<Line> = Vec::new();
    let preset_w = if wide { 30 } else { 20 };
    let head = if wide {
        format!(
            "  {:<16} {:<pw$} {:<9} {:<11} {:>9} {:>8} {:>8}",
            "started",
            "preset",
            "optimizer",
            "status",
            "trials",
            "S_min",
            "B_crit",
            pw = preset_w
        )
    } else {
        format!(
            "  {:<16} {:<pw$} {:<11} {:>7} {:>6} {:>6}",
            "started",
            "preset",
            "status",
            "trials",
            "S_min",
            "B_crit",
            pw = preset_w
        )
    };
    lines.push(Line::styled(
        ellipsize(&head, inner.width as usize),
        th.dim(),
    ));
    if r.entries.is_empty() {
        lines.push(Line::styled(
            if r.scanned {
                "no run logs yet: launch a sweep from Setup (1)"
            } else {
                "scanning…"
            },
            th.dim(),
        ));
    }
    let rows = (inner.height as usize).saturating_sub(1);
    let first = r.selected.saturating_sub(rows.saturating_sub(1));
    for (i, e) in r.entries.iter().enumerate().skip(first).take(rows) {
        let mark = if r.marked.contains(&e.path) {
            "✓ "
        } else {
            "  "
        };
        let started = e.started.get(..16).unwrap_or(&e.started).replace('T', " ");
        let s_min = e.s_min.map(format_si).unwrap_or_else(|| "–".into());
        let b_crit = e.b_crit.map(format_si).unwrap_or_else(|| "–".into());
        let status_style = match e.status {
            RunStatus::Complete => th.good(),
            RunStatus::Interrupted => th.warn(),
            RunStatus::Running => th.accent(),
            RunStatus::Unreadable => th.error(),
        };
        let trials = format!("{}/{}", e.done, e.planned);
        let preset = ellipsize(&e.preset, preset_w);
        let mut spans = vec![
            Span::styled(mark, th.key()),
            Span::raw(format!("{started:<16} {preset:<preset_w$} ")),
        ];
        if wide {
            spans.push(Span::raw(format!("{:<9} ", e.optimizer)));
        }
        spans.push(Span::styled(
            format!("{:<11}", e.status.label()),
            status_style,
        ));
        if wide {
            spans.push(Span::raw(format!(" {trials:>9} {s_min:>8} {b_crit:>8}")));
        } else {
            spans.push(Span::raw(format!(" {trials:>7} {s_min:>6} {b_crit:>6}")));
        }
        let mut l = Line::from(spans);
        if i == r.selected {
            l = l.style(th.selected());
        }
        lines.push(l);
    }
    frame.render_widget(Paragraph::new(lines), inner);

    let block = panel("Selected", false, th);
    let inner = block.inner(detail);
    frame.render_widget(block, detail);
    let mut d: Vec<Line> = Vec::new();
    if let Some(e) = r.entries.get(r.selected) {
        d.push(Line::styled(
            ellipsize(&e.path.display().to_string(), inner.width as usize),
            th.text(),
        ));
        let hint = match (&e.error, e.status) {
            (Some(err), _) => err.clone(),
            (_, RunStatus::Interrupted) => {
                "stopped before its plan finished: r resumes it (finished trials are kept)".into()
            }
            (_, RunStatus::Running) => "still growing: Enter follows it live (read-only)".into(),
            (_, RunStatus::Complete) => format!(
                "{} marked · space marks, c compares the marked runs (or this one)",
                r.marked.len()
            ),
            _ => String::new(),
        };
        let style = if e.error.is_some() {
            th.error()
        } else {
            th.dim()
        };
        d.push(Line::styled(ellipsize(&hint, inner.width as usize), style));
    }
    frame.render_widget(Paragraph::new(d), inner);
}
