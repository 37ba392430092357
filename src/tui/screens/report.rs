//! The report screen (`r` on Live): the whole report of the run Live shows — exactly the text
//! `scaling-lab report` prints (`Report::text` of the Live state's cached report): the per-B table
//! with intervals and search-edge marks, the regimes, every note, the fit, the noise scale and the
//! projection. It scrolls (↑↓ PgUp PgDn Home End, ←→ sideways: the table is wider than 80 columns).

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::panel;
use crate::tui::app::App;
use crate::tui::widgets::fit;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    let Some(l) = app.live() else {
        fit::paragraph(frame, area, vec![Line::raw("No run to report yet.")]);
        return;
    };
    // rendered once when the report landed (`LiveState::rendered`), never per frame
    let lines: Vec<Line> = l.rendered.text.lines().map(Line::raw).collect();
    let visible = area.height.saturating_sub(2) as usize;
    let max_scroll = lines.len().saturating_sub(visible);
    let (y, x) = app.report_scroll;
    let scroll = (y as usize).min(max_scroll);
    let name = if l.updating() && !l.finished.is_empty() {
        format!("{} · updating", l.run_name())
    } else {
        l.run_name()
    };
    // rows wider than the panel scroll sideways (the title says so); nothing wraps, so the
    // tables stay tables
    let inner = panel("", true, th).inner(area);
    fit::note("", usize::MAX, fit::Kind::Scrolling(inner));
    let widest = lines.iter().map(|l| l.width()).max().unwrap_or(0);
    let sideways = if widest > inner.width as usize {
        if x > 0 {
            " · ←→ sideways"
        } else {
            " · → more to the right"
        }
    } else {
        ""
    };
    let title = if max_scroll == 0 {
        format!("Report · {name}{sideways}")
    } else if scroll < max_scroll {
        format!(
            "Report · {name} · {}/{} · ↓ PgDn for more{sideways}",
            scroll + visible,
            lines.len()
        )
    } else {
        format!("Report · {name} · end · ↑ PgUp{sideways}")
    };
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((scroll as u16, x))
            .block(panel(&title, true, th)),
        area,
    );
}
