//! Runs: the saved run logs, their status and headline numbers; open, resume, mark for compare.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{ellipsize, panel};
use crate::tui::app::{format_duration, App, RunEntry, RunStatus};
use crate::tui::widgets::log_axis::{format_pow2, format_si};

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
    let [list, detail] = Layout::vertical([Constraint::Min(0), Constraint::Length(5)]).areas(area);
    let title = format!("Runs in {}", app.runs_dir.display());
    let block = panel(&title, true, th);
    let inner = block.inner(list);
    frame.render_widget(block, list);
    let wide = inner.width >= 110;
    // The Slurm job column appears when a sweep directory is listed.
    let jobs = r.entries.iter().any(|e| e.job.is_some());
    let mut lines: Vec<Line> = Vec::new();
    let cols = Columns {
        wide,
        jobs,
        preset_w: if wide { 26 } else { 18 },
    };
    lines.push(Line::styled(
        ellipsize(&cols.head(), inner.width as usize),
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
        lines.push(cols.row(app, i, e));
    }
    frame.render_widget(Paragraph::new(lines), inner);

    let block = panel("Selected", false, th);
    let inner = block.inner(detail);
    frame.render_widget(block, detail);
    frame.render_widget(
        Paragraph::new(detail_lines(app, inner.width as usize)),
        inner,
    );
}

/// The list's columns: wide (optimizer, precision, devices, S_min), the Slurm job column, the
/// preset column's width.
struct Columns {
    wide: bool,
    jobs: bool,
    preset_w: usize,
}

impl Columns {
    /// The header line.
    fn head(&self) -> String {
        let (wide, jobs, preset_w) = (self.wide, self.jobs, self.preset_w);
        if wide {
            format!(
                "  {:<16} {:<pw$} {:<9} {:<5} {:<6} {:<11}{} {:>9} {:>9} {:>8} {:>7} {:>7}",
                "started",
                "preset",
                "optimizer",
                "prec",
                "devs",
                "status",
                if jobs {
                    format!(" {:<9}", "job")
                } else {
                    String::new()
                },
                "trials",
                "B",
                "took",
                "S_min",
                "B_crit",
                pw = preset_w
            )
        } else if jobs {
            format!(
                "  {:<11} {:<pw$} {:<11} {:<9} {:>7} {:>9} {:>6} {:>6}",
                "started",
                "preset",
                "status",
                "job",
                "trials",
                "B",
                "took",
                "B_crit",
                pw = preset_w
            )
        } else {
            format!(
                "  {:<11} {:<pw$} {:<11} {:>7} {:>9} {:>6} {:>6}",
                "started",
                "preset",
                "status",
                "trials",
                "B",
                "took",
                "B_crit",
                pw = preset_w
            )
        }
    }

    /// The row of entry `i`.
    fn row(&self, app: &App, i: usize, e: &RunEntry) -> Line<'static> {
        let (th, r) = (&app.theme, &app.runs);
        let (wide, jobs, preset_w) = (self.wide, self.jobs, self.preset_w);
        let mark = if r.marked.contains(&e.path) {
            "✓ "
        } else {
            "  "
        };
        let full = e.started.get(..16).unwrap_or(&e.started).replace('T', " ");
        let started = if wide {
            full
        } else {
            full.get(5..).unwrap_or(&full).to_string()
        };
        let s_min = e.s_min.map(format_si).unwrap_or_else(|| "–".into());
        let b_crit = e.b_crit.map(format_si).unwrap_or_else(|| "–".into());
        let took = e
            .duration_s
            .map(format_duration)
            .unwrap_or_else(|| "–".into());
        let status_style = match e.status {
            RunStatus::Complete => th.good(),
            RunStatus::Interrupted => th.warn(),
            RunStatus::Running => th.accent(),
            RunStatus::Unreadable => th.error(),
        };
        let trials = format!("{}/{}", e.done, e.planned);
        let preset = ellipsize(&e.preset, preset_w);
        let sw = if wide { 16 } else { 11 };
        let mut spans = vec![
            Span::styled(mark, th.key()),
            Span::raw(format!("{started:<sw$} {preset:<preset_w$} ")),
        ];
        if wide {
            spans.push(Span::raw(format!(
                "{:<9} {:<5} {:<6} ",
                e.optimizer,
                e.precision,
                workers_short(&e.devices)
            )));
        }
        spans.push(Span::styled(
            format!("{:<11}", e.status.label()),
            status_style,
        ));
        if jobs {
            let job = e.job.as_deref().unwrap_or("");
            let style = match job {
                "failed" => th.error(),
                "running" | "pending" => th.accent(),
                _ => th.text(),
            };
            spans.push(Span::styled(format!(" {job:<9}"), style));
        }
        let b = b_range_text(e);
        if wide {
            spans.push(Span::raw(format!(
                " {trials:>9} {b:>9} {took:>8} {s_min:>7} {b_crit:>7}"
            )));
        } else {
            spans.push(Span::raw(format!(
                " {trials:>7} {b:>9} {took:>6} {b_crit:>6}"
            )));
        }
        let mut l = Line::from(spans);
        if i == r.selected {
            l = l.style(th.selected());
        }
        l
    }
}

/// The selected run: name, settings, what Enter/r/c do with it (or why it cannot be read).
fn detail_lines(app: &App, w: usize) -> Vec<Line<'static>> {
    let (th, r) = (&app.theme, &app.runs);
    let mut d: Vec<Line> = Vec::new();
    if let Some(e) = r.entries.get(r.selected) {
        d.push(Line::from(vec![Span::styled(
            ellipsize(&e.name, w),
            th.title(),
        )]));
        if e.error.is_none() {
            d.push(Line::styled(
                ellipsize(
                    &format!(
                        "{} · {} · {} · B {} · {} trials · took {}",
                        e.optimizer,
                        e.precision,
                        e.devices,
                        b_range_text(e),
                        e.done,
                        e.duration_s
                            .map(format_duration)
                            .unwrap_or_else(|| "–".into())
                    ),
                    w,
                ),
                th.text(),
            ));
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
        d.push(Line::styled(ellipsize(&hint, w), style));
    }
    d
}
