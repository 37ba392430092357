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
use ratatui::Frame;

use super::{kv, panel};
use crate::report::{band, num};
use crate::tui::app::{format_duration, trial_label, App, LiveSource, LiveState};
use crate::tui::theme::Theme;
use crate::tui::widgets::fit;
use crate::tui::widgets::log_axis::format_si;
use crate::tui::widgets::progress::progress_line;

pub fn status_panel(frame: &mut Frame, area: Rect, app: &App, l: &LiveState, th: &Theme) {
    let block = panel("Status", app.panel == 2, th);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let w = inner.width as usize;
    let height = inner.height as usize;
    let mut lines: Vec<Line> = vec![state_line(app, l, th)];
    let mut more = Vec::new();
    progress_lines(&mut more, app, l, inner.width, th);
    number_lines(&mut more, l, th);
    // a sentence wider than the panel wraps at its words (continuation indented)
    lines.extend(fit::wrap_lines(more, w, 2));
    running_lines(&mut lines, l, w, height, th);
    per_batch_lines(&mut lines, l, w, height, th);
    footer_lines(&mut lines, l, w, height, th);
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|x| x.patch_style(Style::default()))
        .collect();
    fit::paragraph(frame, inner, lines);
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
        let eta = l
            .eta(app.now)
            .map(format_duration)
            .unwrap_or_else(|| "–".into());
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
fn number_lines(lines: &mut Vec<Line>, l: &LiveState, th: &Theme) {
    let report = &l.report;
    match report.fit_numbers() {
        Some((s_min, b_crit, r2)) => {
            lines.push(kv(
                "fit",
                format!("S_min {s_min} · B_crit {b_crit}"),
                th,
                th.fit(),
            ));
            // their 95 % intervals, as the report prints them
            let f = report.analysis.fit.as_ref();
            if let (Some([sl, sh]), Some([bl, bh])) =
                (f.and_then(|f| f.s_min_ci), f.and_then(|f| f.b_crit_ci))
            {
                lines.push(kv(
                    "   95 %",
                    format!(
                        "S_min {}–{} · B_crit {}–{}",
                        num(sl),
                        num(sh),
                        num(bl),
                        num(bh)
                    ),
                    th,
                    th.dim(),
                ));
            }
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
            format!("{live_b} now, the noise scale that predicts B_crit"),
            th,
            th.text(),
        ));
    }
    if let Some(n) = &report.noise {
        // the report's "median B_simple of the best trials", with their range
        let range = match l.b_simple_spread() {
            Some((_, lo, hi)) => format!(" of the best trials (range {}–{})", num(lo), num(hi)),
            None => " of the best trials".into(),
        };
        lines.push(kv(
            if l.done { "B_simple" } else { "  so far:" },
            format!("median {}{range}", num(n.median_b_simple)),
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
            lines.push(kv("projected", brief.clone(), th, th.text()));
        }
    }
}

/// The running trials (selectable).
fn running_lines(lines: &mut Vec<Line>, l: &LiveState, w: usize, height: usize, th: &Theme) {
    if l.running.is_empty() {
        return;
    }
    // as many as leave room for the per-B table and the footer; the selected one always shows
    let n = l.running.len();
    let table = l.chart().per_batch.len() + 1;
    let room = height.saturating_sub(lines.len() + 1 + table + 2).max(1);
    let cap = if n <= room {
        n
    } else {
        room.saturating_sub(1).max(1)
    };
    let sel = l.selected_trial();
    let at = l
        .running
        .keys()
        .position(|id| Some(*id) == sel)
        .unwrap_or(0);
    let first = (at + 1).saturating_sub(cap);
    lines.push(Line::styled("running", th.dim()));
    for (id, r) in l.running.iter().skip(first).take(cap) {
        let (step, loss) = r
            .last
            .as_ref()
            .map(|s| (s.step.to_string(), format!("{:.3}", s.loss)))
            .unwrap_or(("0".into(), "–".into()));
        // "B=512 confirm #2 seed 3", "#120 B=2": which trial, in words
        let text = fit::name(
            &format!("{} step {step} loss {loss}", trial_label(&r.spec)),
            w,
        );
        let mut line = Line::styled(text, th.text());
        if Some(*id) == sel && !l.read_only() {
            line = line.style(th.selected());
        }
        lines.push(line);
    }
    if cap < n {
        lines.push(Line::styled(
            format!("+ {} more running (↑↓ selects)", n - cap),
            th.dim(),
        ));
    }
}

/// The per-B table, as many rows as fit in `height`: the current data's steps and counts (at
/// once, before the analysis lands). Where the columns are wider than the panel the three counts
/// share one column ("ok/div/nr").
fn per_batch_lines(lines: &mut Vec<Line>, l: &LiveState, w: usize, height: usize, th: &Theme) {
    let per_batch = &l.chart().per_batch;
    let room = height.saturating_sub(lines.len() + 2);
    // the confirm stage: the confirmed S(B) beside the best trial, ± its interval
    let confirm = per_batch.iter().any(|p| p.confirmed.is_some());
    // a language model's transfer probe: the best trial's test accuracy and its gain over the
    // step-0 control (percentage points), beside S(B)
    let transfer = l.report.transfer.as_ref();
    if room < 2 || per_batch.is_empty() {
        return;
    }
    let steps_w = if confirm { 6 + 1 + 11 } else { 7 };
    let probe_w = if transfer.is_some() { 12 } else { 0 };
    let compact = 5 + 1 + steps_w + 15 + probe_w > w;
    let mut head = if confirm {
        format!("{:>5} {:>6} {:>11}", "B", "best", "confirmed")
    } else {
        format!("{:>5} {:>7}", "B", "steps")
    };
    head.push_str(&if compact {
        format!(" {:>9}", "ok/div/nr")
    } else {
        format!(" {:>4} {:>4} {:>4}", "ok", "div", "nr")
    });
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
            format!("{:>5} {best:>6} {conf:>11}", p.batch_size)
        } else {
            format!("{:>5} {best:>7}", p.batch_size)
        };
        let mut spans = vec![Span::raw(cells)];
        let div_style = if c.diverged > 0 { th.error() } else { th.dim() };
        let nr_style = if c.not_reached > 0 {
            th.warn()
        } else {
            th.dim()
        };
        if compact {
            let n = format!("{}/{}/{}", c.reached, c.diverged, c.not_reached);
            spans.push(Span::raw(
                " ".repeat(10usize.saturating_sub(n.chars().count())),
            ));
            spans.push(Span::styled(c.reached.to_string(), th.good()));
            spans.push(Span::styled("/", th.dim()));
            spans.push(Span::styled(c.diverged.to_string(), div_style));
            spans.push(Span::styled("/", th.dim()));
            spans.push(Span::styled(c.not_reached.to_string(), nr_style));
        } else {
            spans.push(Span::styled(format!(" {:>4}", c.reached), th.good()));
            spans.push(Span::styled(format!(" {:>4}", c.diverged), div_style));
            spans.push(Span::styled(format!(" {:>4}", c.not_reached), nr_style));
        }
        if let Some(t) = transfer {
            spans.push(transfer_cell(t, p.batch_size, th));
        }
        lines.push(Line::from(spans));
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
        lines.extend(fit::wrap_line(
            Line::styled(
                format!(
                    "{n} note{} · r: the full report",
                    if n == 1 { "" } else { "s" }
                ),
                th.dim(),
            ),
            w,
            2,
        ));
    }
    for e in l.errors.iter().rev().take(2) {
        lines.extend(fit::wrap_line(Line::styled(e.clone(), th.error()), w, 2));
    }
    if l.plan.run_log.is_some() {
        lines.push(Line::styled(
            format!("run {}", fit::name(&l.run_name(), w.saturating_sub(4))),
            th.dim(),
        ));
    }
}
