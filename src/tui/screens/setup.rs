//! Setup: pick a preset, adjust the study, see what is wrong with it before launching.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::panel;
use crate::sweep::overrides::Problem;
use crate::tui::app::{App, Field, PromptFor, SetupFocus, TextInput, FIELDS};
use crate::tui::widgets::fit::{self, wrap};
use crate::tui::widgets::log_axis::format_pow2;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let left_w = if area.width >= 120 {
        area.width * 2 / 5
    } else {
        area.width * 9 / 20
    };
    let [left, right] =
        Layout::horizontal([Constraint::Length(left_w), Constraint::Min(0)]).areas(area);
    draw_presets(frame, left, app);
    draw_study(frame, right, app);
}

/// Preset list: name and a one-line description.
fn draw_presets(frame: &mut Frame, left: Rect, app: &App) {
    let th = &app.theme;
    let s = &app.setup;
    let block = panel("Presets", s.focus == SetupFocus::Presets, th);
    let inner = block.inner(left);
    frame.render_widget(block, left);
    let mut lines: Vec<Line> = Vec::new();
    let rows = inner.height as usize;
    let first = s.selected.saturating_sub(rows.saturating_sub(1));
    let w = inner.width as usize;
    if s.presets.is_empty() {
        lines.push(Line::styled("no presets found", th.error()));
    }
    for (i, p) in s.presets.iter().enumerate().skip(first).take(rows) {
        let name = &p.preset.name;
        let sel = i == s.selected;
        let marker = if sel { "▸ " } else { "  " };
        let name_w = name.chars().count() + 2;
        let yours = if p.user { " (yours)" } else { "" };
        // a preview ending at a word (the Study panel shows the whole description)
        let desc = fit::preview(
            &p.preset.description,
            w.saturating_sub(name_w + 1 + yours.len()),
        );
        let mut l = Line::from(vec![
            Span::styled(
                format!("{marker}{name}"),
                if sel { th.title() } else { th.text() },
            ),
            Span::styled(yours, th.accent()),
            Span::raw(" "),
            Span::styled(desc, th.dim()),
        ]);
        if sel {
            l = l.style(th.selected());
        }
        lines.push(l);
    }
    for e in &s.load_errors {
        lines.extend(fit::wrap_line(Line::styled(e.clone(), th.error()), w, 2));
    }
    fit::paragraph(frame, inner, lines);
}

/// Study parameters: name and estimated duration, description, the editable fields with their
/// problems, the batch sizes, what Enter launches.
fn draw_study(frame: &mut Frame, right: Rect, app: &App) {
    let th = &app.theme;
    let s = &app.setup;
    let block = panel("Study", s.focus == SetupFocus::Fields, th);
    let inner = block.inner(right);
    frame.render_widget(block, right);
    let mut lines: Vec<Line> = Vec::new();
    let Some(entry) = s.preset() else {
        let text = wrap(
            "Put preset TOML files in the presets directory.",
            inner.width as usize,
        );
        fit::paragraph(frame, inner, text.into_iter().map(Line::raw).collect());
        return;
    };
    // the study Setup edits: the preset's, or the one its model, dataset and optimizer make
    let p = s.base().unwrap_or(&entry.preset);
    let w = &p.workload;
    // the study's name follows the edits (optimizer), with the estimated wall time
    let est = estimate_text(app);
    let desc_w = inner.width as usize;
    // sentences wrap at their words
    lines.extend(fit::wrap_line(
        Line::from(vec![
            Span::styled(s.study_name(), th.accent()),
            Span::styled(est, th.dim()),
        ]),
        desc_w,
        2,
    ));
    let tall = inner.height >= 24;
    if tall {
        lines.extend(fit::wrap_line(
            Line::styled(p.description.clone(), th.text()),
            desc_w,
            0,
        ));
    } else {
        lines.push(Line::styled(
            fit::preview(&p.description, desc_w),
            th.text(),
        ));
    }
    // what the study's calibration will choose, or that the preset chose it
    match s.calibrates() {
        // (short: the fields say "auto (calibrated)")
        Some(c) if tall => lines.extend(fit::wrap_line(
            Line::styled(
                format!(
                    "calibrated: pilot trials choose {} before the search (docs/calibration.md)",
                    c.words()
                ),
                th.accent(),
            ),
            desc_w,
            2,
        )),
        Some(_) => {}
        None if tall => lines.extend(fit::wrap_line(
            Line::styled(
                format!(
                    "the preset's own target, ranges and batch sizes · eval every {}",
                    w.eval_every
                ),
                th.dim(),
            ),
            desc_w,
            2,
        )),
        None => {}
    }
    if tall {
        lines.push(Line::raw(""));
    }
    let problems = s.problems();
    field_lines(&mut lines, app, &problems, desc_w);
    if tall {
        lines.push(Line::raw(""));
    }
    let blocked = problems.iter().any(|p| p.blocking);
    let bs = s.batch_sizes();
    let grid = if s.auto(Field::BatchMax) && !tall {
        "chosen by the calibration".to_string()
    } else if s.auto(Field::BatchMax) {
        "chosen by the calibration (down to perfect scaling, up to maximal data parallelism)"
            .to_string()
    } else {
        bs.iter()
            .map(|b| format_pow2(*b as u64))
            .collect::<Vec<_>>()
            .join(" ")
    };
    lines.extend(fit::wrap_line(
        Line::styled(format!("B: {grid}"), th.dim()),
        desc_w,
        3,
    ));
    let launch = launch_line(s, th, blocked, tall);
    lines.extend(fit::wrap_line(launch, desc_w, 2));
    fit::paragraph(frame, inner, lines);
}

/// The launch hint: what Enter starts (the calibration first, for a calibrated study).
fn launch_line(
    s: &crate::tui::app::SetupState,
    th: &crate::tui::theme::Theme,
    blocked: bool,
    tall: bool,
) -> Line<'static> {
    if blocked {
        Line::styled("fix the ✗ above to launch", th.error())
    } else if s.auto(Field::BatchMax) && !tall {
        Line::from(vec![
            Span::styled("Enter", th.key()),
            Span::raw(" launch: calibrate, search → Live"),
        ])
    } else if s.auto(Field::BatchMax) && s.auto(Field::Trials) {
        Line::from(vec![
            Span::styled("Enter", th.key()),
            Span::raw(format!(
                " launch: the calibration, then the study it sizes to a {} run → Live",
                crate::sweep::estimate::human_s(crate::analysis::calibrate::size::WALL_BUDGET_S)
            )),
        ])
    } else if s.auto(Field::BatchMax) {
        Line::from(vec![
            Span::styled("Enter", th.key()),
            Span::raw(format!(
                " launch: the calibration, then {} trials per B{} → Live",
                s.trials,
                match s.confirm {
                    Some(c) => format!(" + confirm {}×{}", c.configs, c.seeds),
                    None => String::new(),
                }
            )),
        ])
    } else {
        Line::from(vec![
            Span::styled("Enter", th.key()),
            Span::raw(match s.confirm {
                // the confirm stage's trials at most (fewer where fewer configurations reached)
                // with confirm_until: more seeds where the interval is still wide ("…")
                Some(c) => format!(
                    " launch {}+{}{} trials → Live",
                    s.total_trials(),
                    c.trials() * s.batch_sizes().len(),
                    if s.confirm_until().is_some() {
                        "…"
                    } else {
                        ""
                    }
                ),
                None => format!(
                    " launch {} trial{} → Live",
                    s.total_trials(),
                    if s.total_trials() == 1 { "" } else { "s" }
                ),
            }),
        ])
    }
}

/// The estimated wall time: from earlier runs, else calibrated, else how to get one.
fn estimate_text(app: &App) -> String {
    let s = &app.setup;
    s.estimate_summary(&app.runs.entries)
        .map(|t| format!("  {t}"))
        .unwrap_or_else(|| {
            if s.auto(Field::BatchMax) || s.auto(Field::Budget) {
                "  duration: known once the calibration chose the batch sizes and budget".into()
            } else if s.calibrating {
                "  duration: calibrating…".into()
            } else {
                "  duration: press e to estimate (no earlier run or calibration)".into()
            }
        })
}

/// One line per field (its value, ◀ ▶ when selected), its problems under it, then the problems
/// of no field.
fn field_lines(lines: &mut Vec<Line>, app: &App, problems: &[Problem], desc_w: usize) {
    let th = &app.theme;
    let s = &app.setup;
    let fields_focus = s.focus == SetupFocus::Fields;
    for (i, f) in FIELDS.iter().enumerate() {
        let sel = fields_focus && i == s.field;
        let editing = app.prompt.as_ref().filter(|p| {
            matches!(
                (&p.for_, f),
                (PromptFor::Model, Field::Model) | (PromptFor::Dataset, Field::Dataset)
            )
        });
        if let Some(p) = editing {
            editor_lines(lines, app, f.label(), &p.input, p.error.as_deref(), desc_w);
            continue;
        }
        let auto_b = s.auto(Field::BatchMax);
        let extra = match f {
            Field::BatchMax if !auto_b => {
                let n = s.batch_sizes().len();
                format!("  {n} size{}", if n == 1 { "" } else { "s" })
            }
            Field::Trials if !auto_b => format!("  {} trials", s.total_trials()),
            _ => String::new(),
        };
        // a value as long as a model's knobs is a name shortened to its room
        let room = desc_w.saturating_sub(18 + 2 + extra.chars().count());
        let value = fit::name(&field_value(app, *f), room);
        let l = Line::from(vec![
            Span::styled(format!("{:<16}", f.label()), th.dim()),
            Span::styled(if sel { "◀ " } else { "  " }, th.key()),
            Span::styled(
                value,
                if sel {
                    th.selected().patch(th.title())
                } else {
                    th.title()
                },
            ),
            Span::styled(if sel { " ▶" } else { "  " }, th.key()),
            Span::styled(extra, th.dim()),
        ]);
        lines.extend(fit::wrap_line(l, desc_w, 18));
        for pr in problems.iter().filter(|p| Field::of(p) == Some(*f)) {
            let (tag, style) = if pr.blocking {
                ("✗ ", th.error())
            } else {
                ("ℹ ", th.warn())
            };
            for (j, chunk) in wrap(&pr.message, desc_w.saturating_sub(4))
                .into_iter()
                .enumerate()
            {
                let lead = if j == 0 { tag } else { "  " };
                lines.push(Line::styled(format!("  {lead}{chunk}"), style));
            }
        }
    }
    for pr in problems.iter().filter(|p| Field::of(p).is_none()) {
        for chunk in wrap(&format!("✗ {}", pr.message), desc_w) {
            lines.push(Line::styled(chunk, th.error()));
        }
    }
}

/// The inline text editor of a field: its label, the text with the cursor (the part around the
/// cursor where the text is longer than the room), what it takes and why the last Enter was
/// refused.
fn editor_lines(
    lines: &mut Vec<Line>,
    app: &App,
    label: &str,
    input: &TextInput,
    error: Option<&str>,
    desc_w: usize,
) {
    let th = &app.theme;
    let room = desc_w.saturating_sub(18 + 1);
    let mut spans = vec![
        Span::styled(format!("{label:<16}"), th.dim()),
        Span::styled("▸ ", th.key()),
    ];
    spans.extend(input_spans(input, room, th));
    lines.push(Line::from(spans));
    let hint = if label == "model" {
        "kind:key=value,… (its size knobs) · Enter accept · Esc cancel"
    } else {
        "NAME or PATH[:format=…,key=value,…] · Enter accept · Esc cancel"
    };
    lines.extend(fit::wrap_line(
        Line::styled(format!("  {hint}"), th.dim()),
        desc_w,
        4,
    ));
    if let Some(e) = error {
        for chunk in wrap(&format!("✗ {e}"), desc_w.saturating_sub(2)) {
            lines.push(Line::styled(format!("  {chunk}"), th.error()));
        }
    }
}

/// A text input in at most `room` columns: the cursor's character reversed, the text around it
/// (its start marked "…" where it scrolled out, its end shortened as a name).
pub fn input_spans(
    input: &TextInput,
    room: usize,
    th: &crate::tui::theme::Theme,
) -> Vec<Span<'static>> {
    let (before, under, after) = input.parts();
    let room = room.max(4);
    let n_before = before.chars().count();
    // the cursor stays in view: the start scrolls out first
    let keep = room.saturating_sub(2).min(n_before);
    let before = if keep < n_before {
        let tail: String = before.chars().skip(n_before - keep + 1).collect();
        format!("…{tail}")
    } else {
        before
    };
    let left = room.saturating_sub(before.chars().count() + 1);
    let after = if after.chars().count() > left {
        fit::name(&after, left)
    } else {
        after
    };
    vec![
        Span::styled(before, th.title()),
        Span::styled(under, th.selected().patch(th.title())),
        Span::styled(after, th.title()),
    ]
}

/// The settings a calibration chooses, in words ("the target, the η ranges and the batch sizes").
fn field_value(app: &App, f: Field) -> String {
    let s = &app.setup;
    let Some(p) = s.base() else {
        return match f {
            Field::Model => s.model.clone(),
            Field::Dataset => s.dataset_value(),
            Field::Optimizer => s.optimizer.name().to_string(),
            _ => "–".into(),
        };
    };
    if s.auto(f) {
        return "auto (calibrated)".into();
    }
    match f {
        Field::Model => s.model.clone(),
        Field::Dataset => s.dataset_value(),
        Field::Optimizer => s.optimizer.name().to_string(),
        Field::Precision => s.precision.name().to_string(),
        Field::Devices => {
            let d = s.device();
            match &d {
                crate::core::trial::DeviceSpec::Cuda { devices } => {
                    let names: Vec<&str> = devices
                        .iter()
                        .filter_map(|i| s.gpu_labels.get(*i).map(|x| x.as_str()))
                        .collect();
                    format!(
                        "{} GPU{} ({})",
                        devices.len(),
                        if devices.len() == 1 { "" } else { "s" },
                        names.join(", ")
                    )
                }
                crate::core::trial::DeviceSpec::Wgpu { adapters } => {
                    let name = |i: &usize| {
                        s.wgpu_labels
                            .get(*i)
                            .cloned()
                            .unwrap_or_else(|| format!("wgpu:{i}"))
                    };
                    match d.sharing() {
                        Some(how) => format!("{how} ({})", name(&adapters[0])),
                        None => {
                            let names: Vec<String> = adapters.iter().map(name).collect();
                            names.join(", ")
                        }
                    }
                }
                _ => d.label(),
            }
        }
        Field::BatchMin => s.b_min.to_string(),
        Field::BatchMax => s.b_max.to_string(),
        Field::Trials => s.trials.to_string(),
        Field::Concurrency if s.auto_layout() => match s.calibrated_estimate() {
            Some(e) => format!("auto ({} by calibration)", e.concurrency),
            None => "auto (calibrated at launch)".into(),
        },
        Field::Concurrency => s.effective_concurrency().to_string(),
        Field::Target => format!("{} ≤ {}", p.workload.target.metric.name(), s.target),
        Field::Budget => format!("{} steps", s.budget),
        Field::Fuse => match s.fuse {
            crate::workload::spec::Fuse::Auto => "auto (measured)".into(),
            crate::workload::spec::Fuse::Off => "off".into(),
            crate::workload::spec::Fuse::Members(k) => format!("≤ {k} per group"),
        },
        Field::Widen if s.widen == 0 => "off".into(),
        Field::Widen => format!(
            "{} move{} past an edge",
            s.widen,
            if s.widen == 1 { "" } else { "s" }
        ),
        Field::Confirm => match (s.confirm, s.confirm_until()) {
            (None, _) => "off (best trial only)".into(),
            (Some(c), None) => format!("best {} × {} seeds", c.configs, c.seeds),
            // the preset's confirm_until: more seeds where the interval is wider
            (Some(c), Some(rel)) => format!(
                "best {} × {}+ seeds ±{:.0} %",
                c.configs,
                c.seeds,
                rel * 100.0
            ),
        },
    }
}
