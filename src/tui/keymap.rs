//! Keyboard map: arrows and vi keys, Tab between panels, Enter, Esc back, `q` quit.
//! `KEYS` is the single table the help screen prints, so help never disagrees with the code.

use super::app::{App, Screen};

/// When a binding applies (and is offered in the footer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Every screen.
    Always,
    Setup,
    /// Live, whatever it shows.
    Live,
    /// Live showing the sweep this TUI runs, while it runs (pause/cancel apply).
    LiveControl,
    /// Live showing a finished run (a finished sweep, a log): the target moves.
    LiveFinished,
    Runs,
    Compare,
    Help,
    Meta,
    /// The report screen.
    Report,
    /// Any screen but Setup while Live is not already showing the sweep run here.
    SweepElsewhere,
    /// Any screen but Setup (Esc goes back).
    NotSetup,
    /// A confirmation dialog is open.
    Dialog,
}

/// One key binding: what the help lists and, with `footer`, what the footer offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The keys as the help shows them.
    pub keys: &'static str,
    /// Where it works, in words.
    pub place: &'static str,
    pub what: &'static str,
    pub when: When,
    /// (key, short label) in the footer; None: help only.
    pub footer: Option<(&'static str, &'static str)>,
}

const fn b(
    keys: &'static str,
    place: &'static str,
    what: &'static str,
    when: When,
    footer: Option<(&'static str, &'static str)>,
) -> Binding {
    Binding {
        keys,
        place,
        what,
        when,
        footer,
    }
}

/// The single key table: the help screen prints all of it and the footer offers the entries that
/// apply, so the two cannot disagree. Footer order follows the table.
pub const KEYS: &[Binding] = &[
    b("y Y / Enter", "dialogs", "confirm", When::Dialog, Some(("y", "yes"))),
    b("n N q / Esc", "dialogs", "keep going (close the dialog)", When::Dialog, Some(("n", "no"))),
    b("↑↓ / j k", "everywhere", "move the selection / scroll", When::Always, None),
    b("↑↓", "Setup", "select a preset or a field", When::Setup, Some(("↑↓", "select"))),
    b("← → / h l", "Setup", "change the selected value", When::Setup, Some(("←→", "change"))),
    b("Tab / S-Tab", "everywhere", "next / previous panel", When::Setup, Some(("Tab", "panel"))),
    b("Enter", "Setup", "launch the sweep and go to Live", When::Setup, Some(("Enter", "launch"))),
    b("r", "Setup", "reset the values to the preset's", When::Setup, Some(("r", "reset"))),
    b("e", "Setup", "estimate the wall time (calibrate the workload, cached)", When::Setup, Some(("e", "estimate"))),
    b(
        "Enter",
        "Runs",
        "open the run log in Live (read-only; follows it while it grows; the sweep running here opens live)",
        When::Runs,
        Some(("Enter", "open")),
    ),
    b("space", "Runs", "mark / unmark a run for comparison", When::Runs, Some(("space", "mark"))),
    b("c", "Runs", "compare the marked runs (or the selected one)", When::Runs, Some(("c", "compare"))),
    b("r", "Runs", "resume the selected interrupted sweep", When::Runs, Some(("r", "resume"))),
    b("R / F5", "Runs", "rescan the runs directory", When::Runs, Some(("R", "rescan"))),
    b(
        "p",
        "Live",
        "pause / resume the sweep (running trials finish their step)",
        When::LiveControl,
        Some(("p", "pause")),
    ),
    b("↑↓", "Live", "select a running trial", When::LiveControl, Some(("↑↓", "trial"))),
    b(
        "c",
        "Live",
        "cancel the selected running trial (recorded as cancelled)",
        When::LiveControl,
        Some(("c", "cancel trial")),
    ),
    b("C / x", "Live", "cancel the whole sweep (asks first)", When::LiveControl, Some(("C", "cancel sweep"))),
    b("t", "Live", "charts: both · scaling only · loss only", When::Live, Some(("t", "charts"))),
    b(
        "m",
        "Live",
        "metaparameters: every trial per batch size (η × 1−γ, η × β1, or η)",
        When::Live,
        Some(("m", "metaparams")),
    ),
    b(
        "[ ]",
        "Live",
        "move the target along the log's ladder: [ looser, ] stricter, down to the goal (finished runs)",
        When::LiveFinished,
        Some(("[ ]", "target")),
    ),
    b(
        "[ ]",
        "Compare",
        "read every log at one target of the ladder: [ looser, ] stricter (not measured past a log's goal)",
        When::Compare,
        Some(("[ ]", "target")),
    ),
    b("← →", "Metaparams", "previous / next batch size", When::Meta, Some(("←→", "batch size"))),
    b(
        "r",
        "Live",
        "the whole report: what `scaling-lab report` prints for this run (r or Esc: back)",
        When::Live,
        Some(("r", "report")),
    ),
    b(
        "↑↓ PgDn ←→",
        "Report",
        "scroll the report (Home, End; ←→ sideways)",
        When::Report,
        Some(("↑↓ ←→", "scroll")),
    ),
    b(
        "s",
        "not Setup",
        "show the sweep running here (from an opened log, Runs, Compare)",
        When::SweepElsewhere,
        Some(("s", "sweep")),
    ),
    b("PgUp / PgDn", "Help", "scroll the help (also ↑↓, Home, End)", When::Help, Some(("↑↓ PgDn", "scroll"))),
    b("Esc", "everywhere", "back / close a dialog", When::NotSetup, Some(("Esc", "back"))),
    b("1 2 3 4", "everywhere", "Setup · Live · Runs · Compare", When::Always, None),
    b("?", "everywhere", "this help", When::Always, Some(("?", "help"))),
    b(
        "q / ctrl-c",
        "everywhere",
        "quit (asks first while a sweep runs; ctrl-c exits with status 130)",
        When::Always,
        Some(("q", "quit")),
    ),
];

impl When {
    /// Whether a binding with this condition applies to the app as it is now.
    pub fn applies(self, app: &App) -> bool {
        if app.confirm.is_some() {
            return self == When::Dialog;
        }
        let live = matches!(app.screen, Screen::Live);
        match self {
            When::Always => true,
            When::Dialog => false,
            When::Setup => app.screen == Screen::Setup,
            When::Live => live,
            When::LiveControl => live && app.viewing_sweep() && app.sweep_running(),
            When::LiveFinished => live && app.live_finished(),
            When::Runs => app.screen == Screen::Runs,
            When::Compare => app.screen == Screen::Compare,
            When::Help => app.screen == Screen::Help,
            When::Meta => app.screen == Screen::Meta,
            When::Report => app.screen == Screen::Report,
            When::SweepElsewhere => {
                app.sweep.is_some()
                    && app.screen != Screen::Setup
                    && !(matches!(app.screen, Screen::Live | Screen::Meta | Screen::Report)
                        && app.viewing_sweep())
            }
            When::NotSetup => app.screen != Screen::Setup,
        }
    }
}

/// The footer's (key, label) pairs for the app as it is, from `KEYS`, fitted into `width`
/// columns: the screen's own keys in table order, then help and quit (which always stay).
pub fn footer_keys(app: &App, width: usize) -> Vec<(&'static str, &'static str)> {
    let all: Vec<(&'static str, &'static str, When)> = KEYS
        .iter()
        .filter(|b| b.when.applies(app))
        .filter_map(|b| b.footer.map(|(k, d)| (k, d, b.when)))
        .collect();
    let (mut ctx, always): (Vec<_>, Vec<_>) = all.into_iter().partition(|e| e.2 != When::Always);
    let w = |v: &[(&str, &str, When)]| -> usize {
        v.iter()
            .map(|(k, d, _)| k.chars().count() + d.chars().count() + 3)
            .sum::<usize>()
            + 1
    };
    let reserve = w(&always);
    while !ctx.is_empty() && w(&ctx) + reserve > width {
        ctx.pop();
    }
    ctx.into_iter()
        .chain(always)
        .map(|(k, d, _)| (k, d))
        .collect()
}
