//! Views: each screen renders `&App` into a frame; nothing here mutates state.

pub mod compare;
pub mod help;
pub mod live;
pub mod meta;
pub mod report;
pub mod report_panel;
pub mod runs;
pub mod setup;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::app::{App, Confirm, Screen};
use super::theme::Theme;
use super::widgets::fit;

/// Below this the UI shows a message instead of the screens.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

/// Draws the whole UI.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(frame, area, &app.theme);
        return;
    }
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    header(frame, head, app);
    match app.screen {
        Screen::Setup => setup::draw(frame, body, app),
        Screen::Live => live::draw(frame, body, app),
        Screen::Runs => runs::draw(frame, body, app),
        Screen::Compare => compare::draw(frame, body, app),
        Screen::Help => help::draw(frame, body, app),
        Screen::Meta => meta::draw(frame, body, app),
        Screen::Report => report::draw(frame, body, app),
    }
    footer(frame, foot, app);
    if let Some(c) = app.confirm {
        confirm_dialog(frame, body, app, c);
    }
}

fn too_small(frame: &mut Frame, area: Rect, th: &Theme) {
    let text = vec![
        Line::styled("terminal too small", th.warn()),
        Line::from(format!(
            "{}×{} — need {MIN_WIDTH}×{MIN_HEIGHT}",
            area.width, area.height
        )),
        Line::from("enlarge it, or q to quit"),
    ];
    frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
}

fn header(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    let mut right = String::new();
    // The sweep run here stays visible (and one key away) whatever Live or the other screens show.
    if let Some(l) = &app.sweep {
        if app.sweep_active && !l.done {
            let away = !(matches!(app.screen, Screen::Live | Screen::Meta | Screen::Report)
                && app.viewing_sweep());
            right = format!(
                "{} {} {}/{}{} ",
                if l.paused { "⏸" } else { "●" },
                l.plan.preset,
                l.done_count(),
                l.planned_count(),
                if away && app.screen != Screen::Setup {
                    " (s)"
                } else {
                    ""
                }
            );
        }
    }
    // Narrow terminals: a compact tab bar, so the sweep indicator always fits.
    let compact = (area.width as usize) < 58 + right.chars().count();
    let mut spans = vec![
        Span::styled(
            if compact {
                " scaling-lab"
            } else {
                " scaling-lab "
            },
            th.title(),
        ),
        Span::styled("│", th.dim()),
    ];
    for (i, s) in [Screen::Setup, Screen::Live, Screen::Runs, Screen::Compare]
        .iter()
        .enumerate()
    {
        let label = if compact {
            format!("{}{} ", i + 1, s.title())
        } else {
            format!(" {} {} ", i + 1, s.title())
        };
        let style = if app.screen == *s {
            th.selected().patch(th.title())
        } else {
            th.dim()
        };
        spans.push(Span::styled(label, style));
    }
    if !compact {
        spans.push(Span::styled("│ ? help", th.dim()));
    }
    // Live names the run it shows (the log's name, not a truncated path)
    if matches!(app.screen, Screen::Live | Screen::Meta | Screen::Report) {
        if let Some(l) = app.live() {
            let used: usize = spans.iter().map(|s| s.width()).sum();
            let room = (area.width as usize).saturating_sub(used + right.chars().count() + 3);
            if room >= 8 {
                let tag = if l.read_only() { "log " } else { "" };
                spans.push(Span::styled(
                    format!(" {}", fit::name(&format!("{tag}{}", l.run_name()), room)),
                    th.accent(),
                ));
            }
        }
    }
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let fits = used + right.chars().count() <= area.width as usize;
    let pad = (area.width as usize).saturating_sub(used + right.chars().count());
    if fits && !right.is_empty() {
        spans.push(Span::raw(" ".repeat(pad)));
        spans.push(Span::styled(right, th.good()));
    }
    let line = Line::from(spans);
    fit::note_line(&line, area.width);
    frame.render_widget(line, area);
}

fn footer(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    if let Some(f) = &app.flash {
        // one row: a message longer than the terminal ends at a word, with " …"
        let f = fit::preview(f, (area.width as usize).saturating_sub(1));
        let line = Line::styled(format!(" {f}"), th.warn());
        fit::note_line(&line, area.width);
        frame.render_widget(line, area);
        return;
    }
    let keys = crate::tui::keymap::footer_keys(app, area.width as usize);
    let mut spans = vec![Span::raw(" ")];
    for (k, d) in keys {
        spans.push(Span::styled(k, th.key()));
        spans.push(Span::styled(format!(" {d}  "), th.dim()));
    }
    let line = Line::from(spans);
    fit::note_line(&line, area.width);
    frame.render_widget(line, area);
}

fn confirm_dialog(frame: &mut Frame, body: Rect, app: &App, c: Confirm) {
    let th = &app.theme;
    let name = app
        .sweep
        .as_ref()
        .map(|l| l.run_name())
        .unwrap_or_else(|| "the run log".into());
    let (title, text, yes): (&str, Vec<String>, &str) = match c {
        Confirm::Quit => (
            " Quit while the sweep runs? ",
            vec![
                "Quitting stops the sweep. Finished trials are".into(),
                format!("already saved in the run log {name},"),
                "and the sweep can be resumed later (Runs → r).".into(),
            ],
            " stop and quit  ",
        ),
        Confirm::CancelSweep => (
            " Cancel the sweep? ",
            vec![
                "Running trials stop (they run again on resume).".into(),
                format!("Finished trials stay in the run log {name};"),
                "the sweep can be resumed later (Runs → r).".into(),
            ],
            " cancel the sweep  ",
        ),
    };
    let w = 60.min(body.width);
    let inner_w = w.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = Vec::new();
    for t in &text {
        for chunk in fit::wrap(t, inner_w) {
            lines.push(Line::from(chunk));
        }
    }
    lines.push(Line::from(""));
    // The keys are the dialog's last line and its bottom border: never cut off.
    let keys = Line::from(vec![
        Span::styled("y", th.key()),
        Span::raw(yes),
        Span::styled("n", th.key()),
        Span::raw(" / "),
        Span::styled("Esc", th.key()),
        Span::raw(" keep running"),
    ]);
    lines.push(keys);
    let h = (lines.len() as u16 + 2).min(body.height);
    let area = Rect {
        x: body.x + (body.width - w) / 2,
        y: body.y + (body.height - h) / 2,
        width: w,
        height: h,
    };
    frame.render_widget(Clear, area);
    for l in &lines {
        fit::note_line(l, area.width.saturating_sub(2));
    }
    fit::note(title.trim(), usize::MAX, fit::Kind::Title);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, th.warn()))
        .title_bottom(Line::from(vec![
            Span::styled(" y", th.key()),
            Span::raw(" yes · "),
            Span::styled("n", th.key()),
            Span::raw(" no "),
        ]))
        .border_style(th.warn());
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// A bordered panel with a title; highlighted when focused.
pub fn panel<'a>(title: &'a str, focused: bool, th: &Theme) -> Block<'a> {
    fit::note(title, usize::MAX, fit::Kind::Title);
    Block::default()
        .borders(Borders::ALL)
        .border_style(th.border(focused))
        .title(Span::styled(format!(" {title} "), th.title()))
}

/// A value with its 95 % interval, numbers as the report writes them (`report::num`):
/// "66.0 [58.8–74.3]", or the value alone without an interval.
pub fn with_ci(v: f64, ci: Option<[f64; 2]>) -> String {
    use crate::report::num;
    match ci {
        Some([lo, hi]) => format!("{} [{}–{}]", num(v), num(lo), num(hi)),
        None => num(v),
    }
}

/// A "label  value" line with the label dimmed.
pub fn kv(label: &str, value: String, th: &Theme, vstyle: Style) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{label} "), th.dim()),
        Span::styled(value, vstyle),
    ])
}
