//! The TUI does what its flags say, in a real pseudo-terminal: an unknown `--preset`
//! is one error naming it and listing the presets (as `sweep`'s), before the terminal is taken;
//! `--preset` with `--open` does both — the log opens in Live and Setup has the preset selected.
//!
//! Needs the release build: `cargo test --release --test tui flags`.

#![cfg(unix)]

use std::time::Duration;

use crate::pty::Pty;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/valid/nqm-sgd.jsonl"
);

#[test]
fn an_unknown_preset_is_an_error_naming_it_not_setup_on_another() {
    let runs = tempfile::tempdir().unwrap();
    let dir = runs.path().to_str().unwrap();
    let mut p = Pty::spawn(&["--runs-dir", dir, "--preset", "no-such-preset"], 100, 30);
    let st = p.wait_exit(Duration::from_secs(60));
    assert!(
        matches!(st, expectrl::WaitStatus::Exited(_, 2)),
        "exit status {st:?}; screen:\n{}",
        p.screen.text()
    );
    let raw = String::from_utf8_lossy(&p.raw).to_string();
    assert!(
        !raw.contains("\x1b[?1049h"),
        "entered the alternate screen:\n{raw}"
    );
    let line = raw.trim();
    assert!(
        line.starts_with("error: --preset: no-such-preset: no such preset (known presets: ")
            && line.contains("digits-mlp-sgd")
            && line.lines().count() == 1,
        "{raw}"
    );
    // the same words as `sweep`'s
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scaling-lab"))
        .args(["sweep", "no-such-preset", "--runs-dir", dir])
        .output()
        .unwrap();
    let sweep = String::from_utf8_lossy(&out.stderr);
    let known = |s: &str| s[s.find("(known presets: ").unwrap()..].trim().to_string();
    assert_eq!(known(line), known(&sweep), "{sweep}");
}

#[test]
fn preset_and_open_together_open_the_log_and_select_the_preset() {
    let runs = tempfile::tempdir().unwrap();
    let dir = runs.path().to_str().unwrap();
    let log = runs.path().join("fixture.jsonl");
    std::fs::copy(FIXTURE, &log).unwrap();
    let log = log.to_str().unwrap();
    let mut p = Pty::spawn(
        &[
            "--runs-dir",
            dir,
            "--preset",
            "digits-mlp-sgd",
            "--open",
            log,
        ],
        120,
        36,
    );
    // Live shows the opened log (its preset, nqm-sgd, and its finished trials)
    let t = p.wait_for(
        "the opened log in Live",
        |t| {
            t.lines().next().is_some_and(|h| h.contains("log fixture"))
                && t.contains("trials finished: 20/20")
        },
        Duration::from_secs(60),
    );
    assert!(!t.contains("Study"), "Setup instead of Live:\n{t}");
    // Setup has the preset --preset named selected (the study panel shows its values)
    p.send("1");
    let t = p.wait_for(
        "Setup",
        |t| t.contains("Study") && t.contains("launch"),
        Duration::from_secs(30),
    );
    let selected = t
        .lines()
        .find(|l| l.contains("│▸ "))
        .unwrap_or_default()
        .to_string();
    assert!(
        selected.contains("▸ digits-mlp-sgd ") && t.contains("││digits-mlp-sgd "),
        "selected: {selected:?}\n{t}"
    );
    p.send("q");
    let st = p.wait_exit(Duration::from_secs(30));
    assert!(matches!(st, expectrl::WaitStatus::Exited(_, 0)), "{st:?}");
}

#[test]
fn a_preset_given_by_path_is_selected_in_setup() {
    let runs = tempfile::tempdir().unwrap();
    let dir = runs.path().to_str().unwrap();
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/nqm-sgd.toml"))
            .unwrap()
            .replacen("name = \"nqm-sgd\"", "name = \"my-own-nqm\"", 1);
    assert!(text.contains("my-own-nqm"));
    let file = runs.path().join("mine.toml");
    std::fs::write(&file, text).unwrap();
    let mut p = Pty::spawn(
        &["--runs-dir", dir, "--preset", file.to_str().unwrap()],
        120,
        36,
    );
    let t = p.wait_for(
        "Setup on the file's preset",
        |t| t.contains("▸ my-own-nqm "),
        Duration::from_secs(60),
    );
    assert!(t.contains("││my-own-nqm "), "{t}");
    p.send("q");
    let st = p.wait_exit(Duration::from_secs(30));
    assert!(matches!(st, expectrl::WaitStatus::Exited(_, 0)), "{st:?}");
    // a file that does not load: its located error, before the terminal is taken
    let bad = runs.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\n[workload\n").unwrap();
    let mut p = Pty::spawn(
        &["--runs-dir", dir, "--preset", bad.to_str().unwrap()],
        100,
        30,
    );
    let st = p.wait_exit(Duration::from_secs(60));
    let raw = String::from_utf8_lossy(&p.raw).to_string();
    assert!(
        matches!(st, expectrl::WaitStatus::Exited(_, 2)),
        "{st:?} {raw}"
    );
    assert!(
        raw.trim()
            .starts_with(&format!("error: --preset: {}:2:", bad.display())),
        "{raw}"
    );
}
