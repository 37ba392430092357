//! The key table (`keymap::KEYS`, what help and the footer show) and the key handling of
//! `update` agree: every entry of the table does something in a state where it applies (changes
//! the app or asks the runtime for something), every entry is covered here, and keys the table
//! does not name do nothing on any screen.

use std::path::PathBuf;

use scaling_lab::runlog::reader::read_run_log;
use scaling_lab::tui::app::{update, App, Command, Confirm, Msg, Screen};
use scaling_lab::tui::key::Key;
use scaling_lab::tui::keymap::{When, KEYS};
use scaling_lab::tui::loader;

use crate::support::{app, live_app};

/// Presses `k`: whether the app changed (apart from the redraw flag) and the commands.
fn press(a: &App, k: Key) -> (bool, Vec<Command>) {
    let mut after = a.clone();
    let cmds = update(&mut after, Msg::Key(k));
    let mut before = a.clone();
    before.dirty = after.dirty;
    (after != before, cmds)
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/valid")
        .join(name)
}

/// A sweep running here, mid-way, two trials running (one selected), Live showing it (folded
/// once: every case starts from a clone).
fn running() -> App {
    static RUNNING: std::sync::OnceLock<App> = std::sync::OnceLock::new();
    RUNNING.get_or_init(running_once).clone()
}

fn running_once() -> App {
    let mut a = live_app(|a| {
        a.live()
            .is_some_and(|l| l.done_count() >= 30 && !l.running.is_empty())
    });
    let l = a.sweep.as_mut().unwrap();
    let (id, r) = l
        .running
        .iter()
        .next()
        .map(|(i, r)| (*i, r.clone()))
        .unwrap();
    l.running.insert(id + 100_000, r);
    a
}

/// The sweep run here, finished, Live showing it (its target moves).
fn finished() -> App {
    static FINISHED: std::sync::OnceLock<App> = std::sync::OnceLock::new();
    FINISHED
        .get_or_init(|| {
            let a = live_app(|_| false);
            assert!(a.live_finished());
            a
        })
        .clone()
}

/// Compare showing the two fixture logs.
fn compare() -> App {
    let mut a = app();
    let (runs, _) =
        loader::load_compare(&[fixture("nqm-sgd.jsonl"), fixture("nqm-momentum.jsonl")]);
    update(&mut a, Msg::Key(Key::Char('4')));
    update(&mut a, Msg::CompareLoaded(runs));
    a
}

/// Runs listing the fixture logs.
fn runs() -> App {
    let mut a = app();
    let entries = ["nqm-sgd.jsonl", "nqm-momentum.jsonl"]
        .iter()
        .map(|f| loader::run_entry(&read_run_log(&fixture(f)).unwrap(), None, None))
        .collect();
    update(&mut a, Msg::Runs(entries));
    update(&mut a, Msg::Key(Key::Char('3')));
    a
}

fn with(mut a: App, keys: &[Key]) -> App {
    for k in keys {
        update(&mut a, Msg::Key(*k));
    }
    a
}

/// Every entry of the table: (its keys, its place, a state where it applies, the key pressed).
fn cases() -> Vec<(&'static str, &'static str, App, Key)> {
    let dialog = |c: Confirm| {
        let mut a = running();
        a.confirm = Some(c);
        a
    };
    vec![
        (
            "y Y / Enter",
            "dialogs",
            dialog(Confirm::CancelSweep),
            Key::Char('y'),
        ),
        (
            "n N q / Esc",
            "dialogs",
            dialog(Confirm::Quit),
            Key::Char('n'),
        ),
        ("↑↓ / j k", "everywhere", app(), Key::Down),
        ("↑↓", "Setup", app(), Key::Down),
        ("← → / h l", "Setup", app(), Key::Right),
        ("Tab / S-Tab", "everywhere", app(), Key::Tab),
        ("Enter", "Setup", app(), Key::Enter),
        (
            "r",
            "Setup",
            with(app(), &[Key::Tab, Key::Right]),
            Key::Char('r'),
        ),
        ("e", "Setup", app(), Key::Char('e')),
        ("Enter", "Runs", runs(), Key::Enter),
        ("space", "Runs", runs(), Key::Space),
        ("c", "Runs", runs(), Key::Char('c')),
        ("r", "Runs", runs(), Key::Char('r')),
        ("R / F5", "Runs", runs(), Key::Char('R')),
        ("p", "Live", running(), Key::Char('p')),
        ("↑↓", "Live", running(), Key::Down),
        ("c", "Live", running(), Key::Char('c')),
        ("C / x", "Live", running(), Key::Char('C')),
        ("t", "Live", running(), Key::Char('t')),
        ("[ ]", "Live", finished(), Key::Char('[')),
        ("[ ]", "Compare", compare(), Key::Char('[')),
        ("m", "Live", running(), Key::Char('m')),
        (
            "← →",
            "Metaparams",
            with(running(), &[Key::Char('m')]),
            Key::Right,
        ),
        ("r", "Live", running(), Key::Char('r')),
        (
            "↑↓ PgDn ←→",
            "Report",
            with(running(), &[Key::Char('r')]),
            Key::Right,
        ),
        (
            "s",
            "not Setup",
            with(running(), &[Key::Char('3')]),
            Key::Char('s'),
        ),
        (
            "PgUp / PgDn",
            "Help",
            with(app(), &[Key::Char('?')]),
            Key::PageDown,
        ),
        ("Esc", "everywhere", runs(), Key::Esc),
        ("1 2 3 4", "everywhere", app(), Key::Char('3')),
        ("?", "everywhere", app(), Key::Char('?')),
        ("q / ctrl-c", "everywhere", app(), Key::Char('q')),
    ]
}

#[test]
fn every_entry_of_the_key_table_is_handled_where_it_applies() {
    let cases = cases();
    // the cases cover the table exactly
    let mut table: Vec<(&str, &str)> = KEYS.iter().map(|b| (b.keys, b.place)).collect();
    let mut covered: Vec<(&str, &str)> = cases.iter().map(|c| (c.0, c.1)).collect();
    table.sort();
    covered.sort();
    assert_eq!(
        table, covered,
        "a key table entry without a case (or a case without an entry)"
    );
    for (keys, place, a, k) in cases {
        let b = KEYS
            .iter()
            .find(|b| b.keys == keys && b.place == place)
            .unwrap();
        assert!(
            b.when.applies(&a),
            "{keys} ({place}): the test state is not one where {:?} applies",
            b.when
        );
        let (changed, cmds) = press(&a, k);
        assert!(
            changed || !cmds.is_empty(),
            "{keys} ({place}): {k:?} did nothing on {:?}",
            a.screen
        );
    }
}

#[test]
fn keys_the_table_does_not_name_do_nothing() {
    let states: Vec<(&str, App)> = vec![
        ("setup", app()),
        ("live", running()),
        ("runs", runs()),
        ("compare", with(app(), &[Key::Char('4')])),
        ("help", with(app(), &[Key::Char('?')])),
        ("meta", with(running(), &[Key::Char('m')])),
        ("report", with(running(), &[Key::Char('r')])),
        ("dialog", with(running(), &[Key::Char('q')])),
    ];
    let named: String = KEYS.iter().map(|b| b.keys).collect();
    let unnamed: Vec<Key> = "abdfiouvwzABDEFXYZ5689!/-+"
        .chars()
        .filter(|c| !named.contains(*c))
        .map(Key::Char)
        .collect();
    assert!(unnamed.len() > 15, "{unnamed:?}");
    for (name, a) in &states {
        if *name == "dialog" {
            assert_eq!(a.confirm, Some(Confirm::Quit));
        }
        if *name == "report" {
            assert_eq!(a.screen, Screen::Report);
        }
        for k in &unnamed {
            let (changed, cmds) = press(a, *k);
            assert!(
                !changed && cmds.is_empty(),
                "{name}: {k:?} is not in the key table but did something ({cmds:?})"
            );
        }
    }
}

/// `[` `]` act on a finished Live screen and on Compare only: nowhere else (a running sweep's
/// target does not move; Setup, Runs, the report, help and dialogs ignore them).
#[test]
fn the_target_keys_act_nowhere_else() {
    let states: Vec<(&str, App)> = vec![
        ("setup", app()),
        ("live running", running()),
        ("runs", runs()),
        ("compare empty", with(app(), &[Key::Char('4')])),
        ("help", with(finished(), &[Key::Char('?')])),
        ("meta", with(finished(), &[Key::Char('m')])),
        ("report", with(finished(), &[Key::Char('r')])),
        ("dialog", with(running(), &[Key::Char('q')])),
    ];
    for (name, a) in &states {
        let compare_with_runs = When::Compare.applies(a) && !a.compare.runs.is_empty();
        assert!(
            !When::LiveFinished.applies(a) && !compare_with_runs,
            "{name}"
        );
        for k in ['[', ']'] {
            let (changed, cmds) = press(a, Key::Char(k));
            assert!(
                !changed && cmds.is_empty(),
                "{name}: {k} did something ({cmds:?})"
            );
        }
    }
    // where they apply, both directions act (a flash at an end of the ladder is an answer too)
    for a in [finished(), compare()] {
        for k in ['[', ']'] {
            let (changed, cmds) = press(&a, Key::Char(k));
            assert!(changed || !cmds.is_empty(), "{k} on {:?}", a.screen);
        }
    }
}
