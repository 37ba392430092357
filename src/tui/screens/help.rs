//! Help: every key (from the one key table), the three regimes, and how steps-to-target is
//! measured. One scrolling page (↑↓ PgUp PgDn Home End), so it reads at 80×24 too.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::panel;
use crate::core::analysis::Regime;
use crate::tui::app::App;
use crate::tui::keymap::KEYS;
use crate::tui::theme::Theme;
use crate::tui::widgets::fit::{self, wrap};

const MEASURED: &str = "Every trial evaluates the validation metric on a schedule (eval_every, growing \
geometrically when eval_growth is set). Its steps-to-target is the first evaluation step at which the \
metric met the target. At each batch size B the sweep tries several quasi-random learning rates (and \
momenta); the best trial is the one with the fewest steps over those trials (Shallue et al. 2018). \
With a confirm stage the best configurations at each B re-run with fresh seeds (never used to choose \
them): the confirmed S(B) is the seed median of the best of them, with an interval that accounts for \
that choice. S(B) is the confirmed S(B) once the confirm stage has finished at every B, the best \
trial's steps until then and without one; the status panel and the report say which. Diverged (×) \
and out-of-budget (↑) trials are counted but never give a result; cancelled trials are ignored.";

const CHARTS: &str = "Points are S(B); with the confirmed readout the best trial is drawn beside \
each as ○. The blue curve is the fit S = S_min·(1 + B_crit/B) to S(B); B_crit is where the steps are \
twice the minimum. A dashed fit is uncertain (poor r² or wide intervals). Vertical whiskers are the \
95 % interval of S(B) at a batch size. B_simple, the gradient noise scale measured during training, \
predicts B_crit (McCandlish et al. 2018); a finished sweep shows its median over the best trials. \
The grey line is perfect scaling from the smallest B that reached. Without colour (NO_COLOR) the fit \
is dashed, the perfect line dotted and the measured curve solid.";

const META: &str = "m in Live shows every trial of a batch size: η (x, log) against 1−γ \
(momentum, Nesterov), β1 (Adam) or steps (SGD). ★ best, ● reached (colour: steps, green fastest), \
× diverged, · not reached. The feasible region shrinks as B grows (Shallue et al. Fig. 8).";

/// Every line of the help at `width` columns (keys first, then the reading notes).
pub fn help_lines(width: usize, th: &Theme) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = vec![Line::styled("Keys", th.title())];
    let kw = 13;
    let pw = 11;
    let what_w = width.saturating_sub(kw + pw).max(16);
    for b in KEYS {
        for (i, chunk) in wrap(b.what, what_w).into_iter().enumerate() {
            if i == 0 {
                out.push(Line::from(vec![
                    Span::styled(format!("{:<kw$}", b.keys), th.key()),
                    Span::styled(format!("{:<pw$}", b.place), th.dim()),
                    Span::raw(chunk),
                ]));
            } else {
                out.push(Line::raw(format!("{:w$}{chunk}", "", w = kw + pw)));
            }
        }
    }
    let para = |out: &mut Vec<Line<'static>>, title: &str, text: &str| {
        out.push(Line::raw(""));
        out.push(Line::styled(title.to_string(), th.title()));
        for chunk in wrap(text, width) {
            out.push(Line::raw(chunk));
        }
    };
    para(&mut out, "How steps-to-target is measured", MEASURED);
    out.push(Line::raw(""));
    out.push(Line::styled(
        "The three regimes (slope of log S vs log B)",
        th.title(),
    ));
    for (r, text) in [
        (Regime::Perfect, "slope ≈ −1: doubling B halves the steps."),
        (
            Regime::Diminishing,
            "in between: more B still helps, by less each time.",
        ),
        (Regime::Maximal, "slope ≈ 0: more B, no fewer steps."),
    ] {
        let head = format!("{} ", r.label());
        let rest = width.saturating_sub(head.chars().count()).max(16);
        for (i, chunk) in wrap(text, rest).into_iter().enumerate() {
            if i == 0 {
                out.push(Line::from(vec![
                    Span::styled(head.clone(), th.regime(r)),
                    Span::raw(chunk),
                ]));
            } else {
                out.push(Line::raw(format!("{:w$}{chunk}", "", w = head.len())));
            }
        }
    }
    para(&mut out, "Reading the charts", CHARTS);
    para(&mut out, "The metaparameter picture", META);
    out
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let th = &app.theme;
    let inner_w = area.width.saturating_sub(2) as usize;
    let lines = help_lines(inner_w, th);
    let visible = area.height.saturating_sub(2) as usize;
    let max_scroll = lines.len().saturating_sub(visible);
    let scroll = (app.help_scroll as usize).min(max_scroll);
    let more = if max_scroll == 0 {
        String::new()
    } else if scroll < max_scroll {
        format!(
            "Help · {}/{} · ↓ PgDn for more",
            scroll + visible,
            lines.len()
        )
    } else {
        "Help · end · ↑ PgUp".to_string()
    };
    let title = if more.is_empty() {
        "Help"
    } else {
        more.as_str()
    };
    let block = panel(title, true, th);
    for l in &lines {
        fit::note_line(l, inner_w as u16);
    }
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((scroll as u16, 0))
            .block(block),
        area,
    );
}
