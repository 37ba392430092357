//! Runs: the saved run logs, their status and headline numbers; open, resume, mark for compare.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::{panel, with_ci};
use crate::tui::app::{format_duration, App, RunEntry, RunStatus};
use crate::tui::widgets::columns::{self, Column};
use crate::tui::widgets::fit;
use crate::tui::widgets::log_axis::format_pow2;

/// "8–1K" (or "–").
pub fn b_range_text(e: &RunEntry) -> String {
    match e.b_range {
        Some((lo, hi)) if lo == hi => format_pow2(lo as u64),
        Some((lo, hi)) => format!("{}–{}", format_pow2(lo as u64), format_pow2(hi as u64)),
        None => "–".into(),
    }
}

/// "cpu × 2 workers" → "2w"; "cuda:0,1" → "2 GPU".
fn workers_short(devices: &str) -> String {
    if let Some(rest) = devices.strip_prefix("cpu × ") {
        let n: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        return format!("{n}w");
    }
    if let Some(rest) = devices.strip_prefix("cuda:") {
        return format!("{} GPU", rest.split(',').count());
    }
    devices.to_string()
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    let r = &app.runs;
    // the selected run in full: everything a column left out, the fit with its intervals
    let detail_w = area.width.saturating_sub(2) as usize;
    let details = detail_lines(app, detail_w);
    let detail_h = (details.len() as u16 + 2).clamp(5, (area.height / 2).max(5));
    let [list, detail] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(detail_h)]).areas(area);
    let title = format!("Runs in {}", app.runs_dir.display());
    let block = panel(&title, true, th);
    let inner = block.inner(list);
    frame.render_widget(block, list);
    let rows = (inner.height as usize).saturating_sub(1);
    let first = r.selected.saturating_sub(rows.saturating_sub(1));
    let shown: Vec<(usize, &RunEntry)> = r
        .entries
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .collect();
    let table = columns::lay_out(
        list_columns(app, &shown, inner.width >= 110),
        inner.width as usize,
        th.dim(),
    );
    let mut lines: Vec<Line> = vec![table.head];
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
    for ((i, _), row) in shown.iter().zip(table.rows) {
        lines.push(if *i == r.selected {
            row.style(th.selected())
        } else {
            row
        });
    }
    fit::paragraph(frame, inner, lines);

    let block = panel("Selected", false, th);
    let inner = block.inner(detail);
    frame.render_widget(block, detail);
    fit::paragraph(frame, inner, details);
}

/// The list's columns, each with its cells for the `shown` entries. Where the panel is too narrow
/// the devices, precision and optimizer go first, then how long it took and its batch sizes, then
/// S_min (the selected run's details below show them all); B_crit with its interval always shows.
fn list_columns(app: &App, shown: &[(usize, &RunEntry)], long_dates: bool) -> Vec<Column> {
    let (th, r) = (&app.theme, &app.runs);
    let jobs = r.entries.iter().any(|e| e.job.is_some());
    let mut mark = Column::new("", false, 0);
    let mut started = Column::new("started", false, 0);
    let mut preset = Column::name("preset", 8, 24);
    let mut optimizer = Column::new("optimizer", false, 7);
    let mut prec = Column::new("prec", false, 8);
    let mut devs = Column::new("devs", false, 9);
    let mut status = Column::new("status", false, 0);
    let mut job = Column::new("job", false, 3);
    let mut trials = Column::new("trials", true, 0);
    let mut b = Column::new("B", true, 5);
    let mut took = Column::new("took", true, 6);
    let mut s_min = Column::new("S_min [95%]", true, 4);
    let mut b_crit = Column::new("B_crit [95%]", true, 0);
    let plain = th.text();
    for (_, e) in shown {
        mark.push(
            if r.marked.contains(&e.path) {
                "✓"
            } else {
                " "
            },
            th.key(),
        );
        let full = e.started.get(..16).unwrap_or(&e.started).replace('T', " ");
        let date = if long_dates {
            full
        } else {
            full.get(5..).unwrap_or(&full).to_string()
        };
        started.push(date, plain);
        preset.push(e.preset.clone(), plain);
        optimizer.push(e.optimizer.clone(), plain);
        prec.push(e.precision.clone(), plain);
        devs.push(workers_short(&e.devices), plain);
        let status_style = match e.status {
            RunStatus::Complete => th.good(),
            RunStatus::Interrupted => th.warn(),
            RunStatus::Running => th.accent(),
            RunStatus::Unreadable => th.error(),
        };
        status.push(e.status.label(), status_style);
        let j = e.job.clone().unwrap_or_default();
        let job_style = match j.as_str() {
            "failed" => th.error(),
            "running" | "pending" => th.accent(),
            _ => plain,
        };
        job.push(j, job_style);
        trials.push(format!("{}/{}", e.done, e.planned), plain);
        b.push(b_range_text(e), plain);
        took.push(
            e.duration_s
                .map(format_duration)
                .unwrap_or_else(|| "–".into()),
            plain,
        );
        s_min.push(
            e.s_min
                .map(|v| with_ci(v, e.s_min_ci))
                .unwrap_or_else(|| "–".into()),
            plain,
        );
        b_crit.push(
            e.b_crit
                .map(|v| with_ci(v, e.b_crit_ci))
                .unwrap_or_else(|| "–".into()),
            plain,
        );
    }
    let mut cols = vec![mark, started, preset, optimizer, prec, devs, status];
    if jobs {
        cols.push(job);
    }
    cols.extend([trials, b, took, s_min, b_crit]);
    cols
}

/// The selected run: name, settings, what Enter/r/c do with it (or why it cannot be read).
fn detail_lines(app: &App, w: usize) -> Vec<Line<'static>> {
    let (th, r) = (&app.theme, &app.runs);
    let mut d: Vec<Line> = Vec::new();
    if let Some(e) = r.entries.get(r.selected) {
        d.push(Line::from(vec![Span::styled(
            fit::name(&e.name, w),
            th.title(),
        )]));
        if e.error.is_none() {
            let mut text = format!(
                "{} · {} · {} · B {} · {} trials · took {}",
                e.optimizer,
                e.precision,
                e.devices,
                b_range_text(e),
                e.done,
                e.duration_s
                    .map(format_duration)
                    .unwrap_or_else(|| "–".into())
            );
            // the fit as the report gives it: each number with its 95 % interval
            match (e.s_min, e.b_crit) {
                (Some(s), Some(b)) => text.push_str(&format!(
                    " · fit S_min {} · B_crit {}",
                    with_ci(s, e.s_min_ci),
                    with_ci(b, e.b_crit_ci)
                )),
                _ => text.push_str(" · no fit (needs 3 batch sizes that reached)"),
            }
            d.extend(fit::wrap_line(Line::styled(text, th.text()), w, 2));
        }
        let running_here = app
            .sweep
            .as_ref()
            .and_then(|s| s.plan.run_log.as_deref())
            .is_some_and(|p| std::path::Path::new(p) == e.path);
        let hint = match (&e.error, e.status) {
            (Some(err), _) => err.clone(),
            _ if running_here => "the sweep running here: Enter shows it live (p/c/C work)".into(),
            _ if e.is_sweep_dir() => format!(
                "Slurm sweep directory (shards merged), job {}: Enter follows it live; resume: scaling-lab sweep --resume {} --slurm",
                e.job.as_deref().unwrap_or("—"),
                e.path.display()
            ),
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
        d.extend(fit::wrap_line(Line::styled(hint, style), w, 2));
    }
    d
}
