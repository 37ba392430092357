//! Every screen fits a 120×40 terminal: each state a user reaches (Setup on every preset, Live mid
//! sweep and finished, with a confirm stage running and done, its dialogs, charts, metaparameters
//! and report, Runs, Compare, Help at every scroll position) is rendered with `TestBackend` while
//! `tui::widgets::fit` records what the screens drew, and three things are checked:
//!
//! 1. every line drawn was at most as wide as its panel (nothing left for the edge to cut);
//! 2. a line ends in "…" only where a name (a run, a preset, a path) was shortened to its column —
//!    never a sentence;
//! 3. on the rendered screen, every word that touches a panel's right edge (or the terminal's) is
//!    the whole last word of a text the screens drew: a word the edge cut ("tria" of "trials",
//!    "paral" of "parallelism") is the end of no text. This holds whatever drew it, so text that
//!    bypasses the record is caught too (a panel title ratatui shortened, a chart label).
//!
//! Rows of the report screen, which scrolls sideways, are exempt from 3 (its title says so).

use std::collections::BTreeSet;
use std::path::PathBuf;

use ratatui::buffer::Buffer;
use scaling_lab::tui::app::{
    update, update_settled, App, CompareRun, LiveState, LiveView, Msg, Screen,
};
use scaling_lab::tui::key::Key;
use scaling_lab::tui::widgets::fit::{self, Kind, Noted};

use crate::support::*;

const W: u16 = 120;
const H: u16 = 40;

/// Box drawing, block elements and Braille: the lines of borders, bars and charts, not words.
fn is_drawing(c: char) -> bool {
    matches!(c as u32, 0x2500..=0x259F | 0x2800..=0x28FF)
}

/// The last word of `s`: its trailing run of characters that are neither spaces nor drawing.
fn last_word(s: &str) -> String {
    let rev: String = s
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| !c.is_whitespace() && !is_drawing(*c))
        .collect();
    rev.chars().rev().collect()
}

/// A panel's right edge (or a title's end on its top border).
fn is_edge(sym: &str) -> bool {
    matches!(sym, "│" | "┐" | "┘")
}

/// The word of `buf` ending at column `x` of row `y` (empty where that cell is blank or drawing).
fn word_ending_at(buf: &Buffer, x: u16, y: u16) -> String {
    let mut out = Vec::new();
    let mut c = x as i32;
    while c >= 0 {
        let s = buf[(c as u16, y)].symbol();
        let ch = s.chars().next().unwrap_or(' ');
        if s.is_empty() || ch.is_whitespace() || is_drawing(ch) {
            break;
        }
        out.push(s.to_string());
        c -= 1;
    }
    out.reverse();
    out.concat()
}

fn in_rect(r: ratatui::layout::Rect, x: u16, y: u16) -> bool {
    x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
}

/// What breaks 1–3 on a rendered screen, given what was drawn.
fn problems(buf: &Buffer, noted: &[Noted]) -> Vec<String> {
    let mut out = Vec::new();
    // 1. nothing wider than its room
    for n in noted.iter().filter(|n| n.kind == Kind::Line) {
        let w = unicode_width(&n.text);
        if w > n.room {
            out.push(format!("{:?} is {w} wide in a room of {}", n.text, n.room));
        }
    }
    // 2. "…" ends a name only
    let names: Vec<&Noted> = noted.iter().filter(|n| n.kind == Kind::Name).collect();
    for n in noted.iter().filter(|n| n.kind == Kind::Line) {
        let t = n.text.trim_end();
        if t.ends_with('…')
            && !names
                .iter()
                .any(|m| m.text.ends_with('…') && t.ends_with(&m.text))
        {
            out.push(format!("{t:?} was shortened but is no name"));
        }
    }
    // 3. every word at an edge is the whole last word of a drawn text
    let words: BTreeSet<String> = noted.iter().map(|n| last_word(&n.text)).collect();
    let scrolling: Vec<_> = noted
        .iter()
        .filter_map(|n| match n.kind {
            Kind::Scrolling(r) => Some(r),
            _ => None,
        })
        .collect();
    let (w, h) = (buf.area.width, buf.area.height);
    for y in 0..h {
        for x in 0..w {
            if !(x + 1 == w || is_edge(buf[(x + 1, y)].symbol())) {
                continue;
            }
            if scrolling.iter().any(|r| in_rect(*r, x, y)) {
                continue;
            }
            let word = word_ending_at(buf, x, y);
            if word.chars().any(char::is_alphanumeric) && !words.contains(&word) {
                out.push(format!(
                    "row {y}: {word:?} touches the edge at column {} and is the end of nothing \
                     drawn (a word cut by the edge)",
                    x + 1
                ));
            }
        }
    }
    out
}

/// Renders `app` at 120×40 and checks 1–3; returns the screen as text.
fn fits(app: &App, what: &str) -> String {
    let (buf, noted) = fit::recording(|| scaling_lab::tui::screenshot::render_app(app, W, H));
    let text = screen_text(&buf);
    let p = problems(&buf, &noted);
    assert!(p.is_empty(), "{what} at {W}×{H}:\n{}\n{text}", p.join("\n"));
    text
}

fn unicode_width(s: &str) -> usize {
    ratatui::text::Line::raw(s.to_string()).width()
}

fn screen_text(buf: &Buffer) -> String {
    let mut s = String::new();
    for y in 0..H {
        let mut line = String::new();
        for x in 0..W {
            line.push_str(buf[(x, y)].symbol());
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

fn key(a: &mut App, k: Key) {
    update(a, Msg::Key(k));
}

#[test]
fn the_checks_catch_a_cut_word_and_a_shortened_sentence() {
    let a = live_app(|a| a.live().is_some_and(|l| l.done_count() >= 20));
    let (buf, noted) = fit::recording(|| scaling_lab::tui::screenshot::render_app(&a, W, H));
    assert_eq!(problems(&buf, &noted), Vec::<String>::new());
    // 3: a status row whose end the panel's edge cut ("… over best tria│")
    let mut cut = buf.clone();
    let y = 5;
    let edge = (0..W).rev().find(|&x| cut[(x, y)].symbol() == "│").unwrap();
    for (i, ch) in "best tria".chars().enumerate() {
        cut[(edge - 9 + i as u16, y)].set_symbol(&ch.to_string());
    }
    let p = problems(&cut, &noted);
    assert!(p.iter().any(|m| m.contains("\"tria\"")), "{p:?}");
    // 1: a line wider than its room; 2: a sentence shortened with "…"
    let mut more = noted.clone();
    more.push(Noted {
        text: "B_simple 45.7 now, the noise scale that predicts B_crit".into(),
        room: 46,
        kind: Kind::Line,
    });
    more.push(Noted {
        text: "duration: press e to estimate (no earlier run or…".into(),
        room: 60,
        kind: Kind::Line,
    });
    let p = problems(&buf, &more);
    assert!(p.iter().any(|m| m.contains("in a room of 46")), "{p:?}");
    assert!(p.iter().any(|m| m.contains("is no name")), "{p:?}");
    assert_eq!(
        last_word("median 150 (24.8–66.8 over best trials)"),
        "trials)"
    );
    assert_eq!(last_word("[████] 240/240"), "240/240");
    assert!(is_edge("│") && !is_edge("┤"));
}

#[test]
fn setup_fits_for_every_preset() {
    let mut a = app();
    update(&mut a, Msg::Resize(W, H));
    let n = a.setup.presets.len();
    assert!(n >= 20, "{n} presets");
    for i in 0..n {
        let name = a.setup.preset().map(|p| p.preset.name.clone()).unwrap();
        let text = fits(&a, &format!("Setup on {name} ({i})"));
        assert!(text.contains("Study"), "{text}");
        key(&mut a, Key::Down);
    }
    // a field's problem wraps under it (3 workers do not divide the batch)
    let mut a = app();
    key(&mut a, Key::Tab);
    key(&mut a, Key::Down);
    key(&mut a, Key::Down);
    key(&mut a, Key::Right);
    key(&mut a, Key::Right);
    let text = fits(&a, "Setup with a problem");
    assert!(text.contains("divisible"), "{text}");
    // the estimate's sentence is whole (it wraps, never "…")
    assert!(!text.contains("or…"), "{text}");
}

#[test]
fn live_fits_through_a_scripted_sweep() {
    let mid = live_app(|a| {
        a.live()
            .is_some_and(|l| l.done_count() >= l.plan.total_trials / 2 && !l.running.is_empty())
    });
    let text = fits(&mid, "Live mid-sweep");
    // the status panel's sentences whole
    assert!(text.contains("B_simple"), "{text}");
    assert!(text.contains("the noise scale that predicts"), "{text}");
    for name in ["t", "t"] {
        let mut b = mid.clone();
        key(&mut b, Key::Char(name.chars().next().unwrap()));
        fits(&b, "Live, one chart");
    }
    for k in ['q', 'C'] {
        let mut b = mid.clone();
        key(&mut b, Key::Char(k));
        fits(&b, &format!("Live, dialog {k}"));
    }
    let done = live_app(|_| false);
    let text = fits(&done, "Live finished");
    assert!(
        text.contains("maximal data parallelism") || text.contains("maximal "),
        "{text}"
    );
    let mut m = done.clone();
    key(&mut m, Key::Char('m'));
    fits(&m, "metaparameters");
    let mut r = done.clone();
    key(&mut r, Key::Char('r'));
    for i in 0..12 {
        let text = fits(&r, &format!("report page {i}"));
        assert!(text.contains("Report ·"), "{text}");
        // its table is wider than 120 columns: the title says it scrolls sideways
        assert!(text.contains("→ more to the right"), "{text}");
        key(&mut r, Key::PageDown);
    }
    key(&mut r, Key::Right);
    let text = fits(&r, "report scrolled sideways");
    assert!(text.contains("←→ sideways"), "{text}");
    // a log opened over the running sweep
    let mut o = live_app(|a| a.live().is_some_and(|l| l.done_count() == 6));
    let log = log_with(&o, "runs/2025-12-24T09-00-00-digits-mlp-sgd.jsonl", 40);
    update_settled(
        &mut o,
        Msg::LogOpened {
            log: Box::new(log),
            tailing: false,
        },
    );
    fits(&o, "a log over the sweep");
}

/// A real digits sweep with a confirm stage (3 B × 6 search trials, then 1×8 fresh seeds per B),
/// folded into Live as the runtime would; (a state while confirm trials run, the finished app).
fn confirm_sweep(runs: &std::path::Path) -> (App, App, PathBuf) {
    let (_, preset) = scaling_lab::workload::presets::find_preset("digits-mlp-sgd").unwrap();
    let mut preset = preset;
    preset.sweep.batch_sizes = vec![16, 64, 256];
    preset.sweep.trials_per_batch = 6;
    preset.sweep.confirm = Some(
        scaling_lab::workload::spec::ConfirmPlan::parse("1x8")
            .unwrap()
            .unwrap(),
    );
    preset.sweep.confirm_until = None;
    let mut a = app();
    update(&mut a, Msg::Resize(W, H));
    let cfg =
        scaling_lab::sweep::SweepConfig::from_preset(preset.clone(), None, runs.to_path_buf());
    a.sweep = Some(LiveState::starting(&cfg, 0.0));
    a.view = LiveView::Sweep;
    a.screen = Screen::Live;
    update(&mut a, Msg::SweepStarted { run_log: None });
    let runner = scaling_lab::sweep::runner_for(&preset.workload, &Default::default()).unwrap();
    let mut mid: Option<App> = None;
    let mut t = 0.0;
    let (_, result) =
        scaling_lab::tui::screenshot::run_sweep_with(preset, None, runs, runner, |ev| {
            t += 0.05;
            update(&mut a, Msg::Tick(t));
            update_settled(&mut a, Msg::Sweep(ev));
            let confirming = a.live().is_some_and(|l| {
                l.running.values().any(|r| r.spec.confirm.is_some())
                    && l.finished.iter().any(|f| f.spec.confirm.is_some())
            });
            if mid.is_none() && confirming {
                mid = Some(a.clone());
            }
        })
        .unwrap();
    let report = scaling_lab::report::of_sweep(&result, &Default::default());
    update(
        &mut a,
        Msg::SweepEnded {
            error: None,
            report: Some(Box::new(report)),
        },
    );
    let log = find_log(runs).expect("the sweep's log");
    (mid.expect("a state with confirm trials running"), a, log)
}

fn find_log(dir: &std::path::Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
}

#[test]
fn a_confirm_stage_fits_and_its_trials_have_names() {
    let dir = tempfile::tempdir().unwrap();
    let (mid, done, log) = confirm_sweep(dir.path());
    let text = fits(&mid, "Live, confirm trials running");
    // "B=64 confirm #1 seed 3", never the id "#2001000002"
    assert!(text.contains(" confirm #1 seed "), "{text}");
    assert!(!text.contains("#200"), "{text}");
    // the running trials leave room for every row of the per-B table
    for p in &mid.live().unwrap().chart().per_batch {
        let row = format!("│{:>5} ", p.batch_size);
        assert!(text.contains(&row), "{row:?} missing:\n{text}");
    }
    let text = fits(&done, "Live, confirmed");
    assert!(text.contains("confirmed"), "{text}");
    let mut r = done.clone();
    key(&mut r, Key::Char('r'));
    fits(&r, "report of a confirmed sweep");

    // Runs lists it with its fit's intervals; Compare sets it beside a best-trial reading
    let mut a = done.clone();
    key(&mut a, Key::Char('3'));
    let read = scaling_lab::runlog::reader::read_run_log(&log).unwrap();
    let mut entries = vec![scaling_lab::tui::loader::run_entry(&read, None, None)];
    for f in ["nqm-sgd.jsonl", "nqm-momentum.jsonl", "torn-tail.jsonl"] {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/valid")
            .join(f);
        let l = scaling_lab::runlog::reader::read_run_log(&p).unwrap();
        entries.push(scaling_lab::tui::loader::run_entry(&l, None, None));
    }
    update(&mut a, Msg::Runs(entries.clone()));
    let text = fits(&a, "Runs of real logs");
    // B_crit with its interval, as `report` prints it
    let e = entries
        .iter()
        .find(|e| e.b_crit_ci.is_some())
        .expect("a fit with an interval");
    let want = format!(
        "{} [{}–{}]",
        scaling_lab::report::num(e.b_crit.unwrap()),
        scaling_lab::report::num(e.b_crit_ci.unwrap()[0]),
        scaling_lab::report::num(e.b_crit_ci.unwrap()[1])
    );
    assert!(text.contains(&want), "{want} missing:\n{text}");

    let nqm = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/nqm-sgd.jsonl");
    let nqm_log = scaling_lab::runlog::reader::read_run_log(&nqm).unwrap();
    let runs = vec![
        CompareRun::new(
            "digits-mlp-sgd".into(),
            log.clone(),
            &read.header.preset,
            read.trials.clone(),
        ),
        CompareRun::new(
            "nqm-sgd".into(),
            nqm.clone(),
            &nqm_log.header.preset,
            nqm_log.trials.clone(),
        ),
    ];
    key(&mut a, Key::Char('4'));
    update(&mut a, Msg::CompareLoaded(runs));
    let text = fits(&a, "Compare, confirmed beside best trial");
    assert!(text.contains("digits-mlp-sgd: confirmed"), "{text}");
    assert!(text.contains("nqm-sgd: best trial"), "{text}");
    assert!(!text.contains("points: best trial"), "{text}");
}

#[test]
fn runs_compare_and_help_fit() {
    let mut a = app();
    key(&mut a, Key::Char('3'));
    update(&mut a, Msg::Runs(crate::screens::runs_fixture()));
    key(&mut a, Key::Down);
    key(&mut a, Key::Space);
    let text = fits(&a, "Runs");
    // B_crit with its interval in the list at 120 columns
    assert!(text.contains("B_crit [95%]"), "{text}");
    assert!(text.contains("180 [108–342]"), "{text}");
    // a Slurm sweep directory adds the job column
    let mut entries = crate::screens::runs_fixture();
    entries[1].job = Some("completed".into());
    update(&mut a, Msg::Runs(entries));
    fits(&a, "Runs with a job column");

    let mut c = app();
    key(&mut c, Key::Char('4'));
    let runs = crate::screens::compare_runs(&c);
    update(&mut c, Msg::CompareLoaded(runs));
    let text = fits(&c, "Compare");
    assert!(text.contains("S_min") && text.contains("["), "{text}");

    let mut h = app();
    key(&mut h, Key::Char('?'));
    for i in 0..8 {
        fits(&h, &format!("help page {i}"));
        key(&mut h, Key::PageDown);
    }
}
