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

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    let Some(l) = app.live() else {
        frame.render_widget(Paragraph::new("No run to report yet."), area);
        return;
    };
    let text = l.report.text();
    let lines: Vec<Line> = text.lines().map(|s| Line::raw(s.to_string())).collect();
    let visible = area.height.saturating_sub(2) as usize;
    let max_scroll = lines.len().saturating_sub(visible);
    let (y, x) = app.report_scroll;
    let scroll = (y as usize).min(max_scroll);
    let title = if max_scroll == 0 {
        format!("Report · {}", l.run_name())
    } else if scroll < max_scroll {
        format!(
            "Report · {} · {}/{} · ↓ PgDn for more",
            l.run_name(),
            scroll + visible,
            lines.len()
        )
    } else {
        format!("Report · {} · end · ↑ PgUp", l.run_name())
    };
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((scroll as u16, x))
            .block(panel(&title, true, th)),
        area,
    );
}
