//! Help: every key, the three regimes, and how steps-to-target is measured.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::panel;
use crate::core::analysis::Regime;
use crate::tui::app::App;
use crate::tui::keymap::KEYS;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    let wide = area.width >= 120;
    let (keys_area, text_area) = if wide {
        let [a, b] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
            .areas(area);
        (a, b)
    } else {
        let [a, b] = Layout::vertical([
            Constraint::Length(KEYS.len() as u16 + 2),
            Constraint::Min(0),
        ])
        .areas(area);
        (a, b)
    };
    let mut keys: Vec<Line> = Vec::new();
    for (k, where_, what) in KEYS {
        keys.push(Line::from(vec![
            Span::styled(format!("{k:<12}"), th.key()),
            Span::styled(format!("{where_:<11}"), th.dim()),
            Span::raw(*what),
        ]));
    }
    let b = panel("Keys", false, th);
    frame.render_widget(Paragraph::new(keys).block(b), keys_area);

    let mut t: Vec<Line> = vec![
        Line::styled("How steps-to-target is measured", th.title()),
        Line::raw(
            "Every trial evaluates the validation metric every eval_every steps. Its steps-to-target is \
             the first evaluation step at which the metric met the target. At each batch size B the \
             sweep tries several quasi-random learning rates (and momenta); S(B) is the fewest steps over \
             those trials (Shallue et al. 2018). Diverged (×) and out-of-budget (↑) trials are counted \
             but never give a result; cancelled trials are ignored.",
        ),
        Line::raw(""),
        Line::styled("The three regimes (slope of log S vs log B)", th.title()),
    ];
    for (r, text) in [
        (Regime::Perfect, "slope ≈ −1: doubling B halves the steps."),
        (
            Regime::Diminishing,
            "in between: more B still helps, by less each time.",
        ),
        (Regime::Maximal, "slope ≈ 0: more B, no fewer steps."),
    ] {
        t.push(Line::from(vec![
            Span::styled(format!("{} ", r.label()), th.regime(r)),
            Span::raw(text),
        ]));
    }
    t.push(Line::raw(
        "The blue curve is the fit S = S_min·(1 + B_crit/B); B_crit is where the steps are twice the \
         minimum. B_simple, the gradient noise scale measured during training, predicts B_crit \
         (McCandlish et al. 2018). The grey line is perfect scaling from the smallest B that reached.",
    ));
    let b = panel("Reading the charts", false, th);
    frame.render_widget(
        Paragraph::new(t).wrap(Wrap { trim: true }).block(b),
        text_area,
    );
}
