//! The Live screen's status panel: sweep state and progress, then the report's numbers — fit,
//! noise-scale prediction, projection brief, the per-B table (with the search-edge mark †; a
//! language model's transfer probe beside S(B)) and the notes — drawn from the Live state's
//! cached `report::Report`, the one `scaling-lab report` prints (same values, same number
//! formatting: `report::num`; `r` shows it whole). The per-B
//! table shows the current data's steps and counts at once (`LiveState::chart`); nothing here
//! analyses or renders a report (`LiveState::rendered` holds the projection brief).

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{ellipsize, kv, panel};
use crate::report::{band, num};
use crate::tui::app::{format_duration, App, LiveSource, LiveState};
use crate::tui::theme::Theme;
use crate::tui::widgets::log_axis::{format_pow2, format_si};
use crate::tui::widgets::progress::progress_line;

pub fn status_panel(frame: &mut Frame, area: Rect, app: &App, l: &LiveState, th: &Theme) {
    let block = panel("Status", app.panel == 2, th);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let w = inner.width as usize;
    let height = inner.height as usize;
    let mut lines: Vec<Line> = vec![state_line(app, l, th)];
    progress_lines(&mut lines, app, l, inner.width, th);
    number_lines(&mut lines, l, w, th);
    running_lines(&mut lines, l, w, th);
    per_batch_lines(&mut lines, l, height, th);
    footer_lines(&mut lines, l, w, height, th);
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|x| x.patch_style(Style::default()))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The sweep's state: running, paused, complete, stopped early, following a log.
fn state_line(app: &App, l: &LiveState, th: &Theme) -> Line<'static> {
    let (state, style) = if l.done {
        if l.cancelled {
            ("■ stopped early (resumable)", th.warn())
        } else {
            ("✓ sweep complete", th.good())
        }
    } else if l.paused {
        ("⏸ paused", th.warn())
    } else {
        match &l.source {
            LiveSource::Sweep if app.sweep_active => ("● running", th.good()),
            LiveSource::Sweep => ("○ starting…", th.dim()),
            LiveSource::Log { tailing: true, .. } => ("◉ following the run log", th.good()),
            LiveSource::Log { .. } => ("○ log (no summary yet)", th.dim()),
        }
    };
    Line::styled(state, style)
}

/// What finished, the progress bar, running/queued, elapsed and ETA, throughput and loss scale.
fn progress_lines(lines: &mut Vec<Line>, app: &App, l: &LiveState, width: u16, th: &Theme) {
    lines.push(Line::styled(l.finished_text(), th.title()));
    if let Some(stages) = l.stages_text() {
        // each stage against its own plan
        lines.push(Line::styled(stages, th.text()));
    }
    lines.push(progress_line(
        l.done_count(),
        l.running.len(),
        l.planned_count(),
        width,
        th,
    ));
    lines.push(Line::styled(
        format!("{} running · {} queued", l.running.len(), l.queued_count()),
        th.text(),
    ));
    if !l.read_only() && !l.done {
        let elapsed = l.ended_at.unwrap_or(app.now) - l.started_at;
        let eta = l.eta_text(app.now);
        lines.push(kv(
            "elapsed",
            format!("{} · ETA {eta}", format_duration(elapsed)),
            th,
            th.text(),
        ));
        let eps = l.examples_per_s();
        let (scale, skipped) = l
            .running
            .values()
            .filter_map(|r| r.last.as_ref())
            .fold((None, 0u64), |(s, k), st| {
                (Some(s.unwrap_or(st.loss_scale)), k + st.skipped_steps)
            });
        lines.push(kv("examples/s", format_si(eps), th, th.text()));
        lines.push(kv(
            "loss scale",
            format!(
                "{} · skipped {skipped}",
                scale.map(format_si).unwrap_or_else(|| "–".into())
            ),
            th,
            th.text(),
        ));
    }
    if l.done && !l.read_only() {
        let elapsed = l.ended_at.unwrap_or(app.now) - l.started_at;
        lines.push(kv("took", format_duration(elapsed), th, th.text()));
    }
    lines.push(kv("devices", l.plan.devices.clone(), th, th.text()));
}

/// The report's numbers: fit, B_simple (live and of the best trials), perfect scaling, projection.
fn number_lines(lines: &mut Vec<Line>, l: &LiveState, w: usize, th: &Theme) {
    let report = &l.report;
    match report.fit_numbers() {
        Some((s_min, b_crit, r2)) => {
            lines.push(kv(
                "fit",
                format!("S_min {s_min} · B_crit {b_crit}"),
                th,
                th.fit(),
            ));
            // which S(B) it read: the confirmed seed medians or the best trials
            let reads = match (report.readout, report.confirm.is_some()) {
                (crate::core::analysis::Readout::Confirmed, _) => " · confirmed",
                (_, true) => " · best trials",
                _ => "",
            };
            lines.push(kv("   ", format!("r² {r2}{reads}"), th, th.dim()));
        }
        None => lines.push(kv(
            "fit",
            "needs 3 batch sizes that reached".into(),
            th,
            th.dim(),
        )),
    }
    if !l.done {
        // The running trials' latest estimate; after the sweep only the best trials' median counts.
        let live_b = l.b_simple_live.map(num).unwrap_or_else(|| "–".into());
        lines.push(kv(
            "B_simple",
            format!("{live_b} (live) → predicts B_crit"),
            th,
            th.text(),
        ));
    }
    if let Some(n) = &report.noise {
        lines.push(kv(
            if l.done { "B_simple" } else { "  best trials" },
            match l.b_simple_spread() {
                Some((_, lo, hi)) => format!(
                    "median {} ({}–{} over best trials)",
                    num(n.median_b_simple),
                    num(lo),
                    num(hi)
                ),
                None => format!("median {} (best trials)", num(n.median_b_simple)),
            },
            th,
            th.text(),
        ));
        if let Some(i) = &n.interval {
            lines.push(kv("  95 % band", band(i), th, th.dim()));
        }
    }
    if let Some(p) = report.perfect_up_to {
        lines.push(kv("perfect ≤", p.to_string(), th, th.text()));
    }
    if l.done && !l.workload().is_some_and(|w| w.closed_form()) {
        if let Some(brief) = &l.rendered.projection_brief {
            let brief = ellipsize(brief, w.saturating_sub(10));
            lines.push(kv("projected", brief, th, th.text()));
        }
    }
}

/// The running trials (selectable).
fn running_lines(lines: &mut Vec<Line>, l: &LiveState, w: usize, th: &Theme) {
    if !l.running.is_empty() {
        lines.push(Line::styled("running", th.dim()));
        let sel = l.selected_trial();
        for (id, r) in &l.running {
            let (step, loss) = r
                .last
                .as_ref()
                .map(|s| (s.step.to_string(), format!("{:.3}", s.loss)))
                .unwrap_or(("0".into(), "–".into()));
            let text = ellipsize(
                &format!(
                    "#{id} B={} step {step} loss {loss}",
                    format_pow2(r.spec.batch_size as u64)
                ),
                w,
            );
            let mut line = Line::styled(text, th.text());
            if Some(*id) == sel && !l.read_only() {
                line = line.style(th.selected());
            }
            lines.push(line);
        }
    }
}

/// The per-B table, as many rows as fit in `height`: the current data's steps and counts (at
/// once, before the analysis lands).
fn per_batch_lines(lines: &mut Vec<Line>, l: &LiveState, height: usize, th: &Theme) {
    let per_batch = &l.chart().per_batch;
    let room = height.saturating_sub(lines.len() + 2);
    // the confirm stage: the confirmed S(B) beside the best trial, ± its interval
    let confirm = per_batch.iter().any(|p| p.confirmed.is_some());
    // a language model's transfer probe: the best trial's test accuracy and its gain over the
    // step-0 control (percentage points), beside S(B)
    let transfer = l.report.transfer.as_ref();
    if room >= 2 && !per_batch.is_empty() {
        let mut head = if confirm {
            format!(
                "{:>5} {:>6} {:>11} {:>4} {:>4} {:>4}",
                "B", "best", "confirmed", "ok", "div", "nr"
            )
        } else {
            format!(
                "{:>5} {:>7} {:>4} {:>4} {:>4}",
                "B", "steps", "ok", "div", "nr"
            )
        };
        if transfer.is_some() {
            head.push_str(&format!(" {:>11}", "probe% Δ0"));
        }
        lines.push(Line::styled(head, th.dim()));
        for p in per_batch.iter().take(room - 1) {
            // † as in the text report: the best trial sits at the edge of the search space
            let edge = p.at_search_edge;
            let c = &p.counts;
            let best = p
                .steps
                .map(|s| format!("{s}{}", if edge { "†" } else { "" }))
                .unwrap_or_else(|| "–".into());
            let cells = if confirm {
                let conf = match &p.confirmed {
                    Some(k) => match (k.steps, k.rel_half_width()) {
                        (Some(s), Some(w)) => format!("{s}±{:.0}%", w * 100.0),
                        (Some(s), None) => s.to_string(),
                        (None, _) if !k.complete => "…".into(),
                        (None, _) => "none".into(),
                    },
                    None => "–".into(),
                };
                format!("{:>5} {best:>6} {conf:>11} ", p.batch_size)
            } else {
                format!("{:>5} {best:>7} ", p.batch_size)
            };
            let mut spans = vec![
                Span::raw(cells),
                Span::styled(format!("{:>4}", c.reached), th.good()),
                Span::styled(
                    format!(" {:>4}", c.diverged),
                    if c.diverged > 0 { th.error() } else { th.dim() },
                ),
                Span::styled(
                    format!(" {:>4}", c.not_reached),
                    if c.not_reached > 0 {
                        th.warn()
                    } else {
                        th.dim()
                    },
                ),
            ];
            if let Some(t) = transfer {
                spans.push(transfer_cell(t, p.batch_size, th));
            }
            lines.push(Line::from(spans));
        }
    }
}

/// A batch size's transfer cell: "61.2 +8.1" (the probe's accuracy, its gain over the step-0
/// control in points), good where the gain's interval lies above 0; "–" without a readout.
fn transfer_cell(
    t: &crate::report::transfer::TransferReport,
    b: usize,
    th: &Theme,
) -> Span<'static> {
    match t.per_batch.iter().find(|r| r.batch_size == b) {
        Some(r) => Span::styled(
            format!(
                " {:>5.1} {:>+5.1}",
                100.0 * r.probe.acc,
                r.above_control.points
            ),
            if r.above_control.beats {
                th.good()
            } else {
                th.dim()
            },
        ),
        None => Span::styled(format!(" {:>11}", "–"), th.dim()),
    }
}

/// How many notes (r shows them), the latest errors, the run's name.
fn footer_lines(lines: &mut Vec<Line>, l: &LiveState, w: usize, height: usize, th: &Theme) {
    let report = &l.report;
    if !report.analysis.notes.is_empty() && lines.len() + 1 < height {
        let n = report.analysis.notes.len();
        lines.push(Line::styled(
            ellipsize(
                &format!(
                    "{n} note{} · r: the full report",
                    if n == 1 { "" } else { "s" }
                ),
                w,
            ),
            th.dim(),
        ));
    }
    for e in l.errors.iter().rev().take(2) {
        lines.push(Line::styled(ellipsize(e, w), th.error()));
    }
    if l.plan.run_log.is_some() {
        lines.push(Line::styled(
            ellipsize(&format!("run {}", l.run_name()), w),
            th.dim(),
        ));
    }
}
