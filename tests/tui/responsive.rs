//! The TUI never freezes: the real binary in a pseudo-terminal launches `nqm-sgd` from
//! Setup — 288 closed-form trials landing every few milliseconds — and the screen keeps changing
//! while they land, and keys are answered mid-sweep: `?` opens help (and closes it), `r` opens the
//! report, while the sweep is still running. When it ends, the status panel shows the numbers of
//! `report --json` of its log (the analysis landed, and it is the same analysis).
//!
//! No timed assertion: what is asserted is the order of things (the screen showed the sweep's
//! middle; help opened before the sweep ended). The latencies seen are printed (`--nocapture`).
//!
//! Needs the release build: `cargo test --release --test tui responsive`.

#![cfg(unix)]

use std::time::{Duration, Instant};

use crate::pty::{find_log, finished_trials, header_progress, Pty};

const PRESET: &str = "nqm-sgd";

/// The sweep's progress as the screen shows it (the header's indicator, else the status panel).
fn progress(p: &Pty) -> Option<(usize, usize)> {
    header_progress(&p.screen.header(), PRESET).or_else(|| finished_trials(&p.screen.text()))
}

/// Pumps the pty until `pred` holds for the screen; records every progress value seen meanwhile.
/// Returns the seconds it took.
fn until(
    p: &mut Pty,
    seen: &mut Vec<(f64, usize)>,
    t0: Instant,
    what: &str,
    pred: impl Fn(&Pty) -> bool,
    timeout: Duration,
) -> f64 {
    let start = Instant::now();
    loop {
        if p.pump() {
            if let Some((n, _)) = progress(p) {
                if seen.last().is_none_or(|(_, m)| *m != n) {
                    seen.push((t0.elapsed().as_secs_f64(), n));
                }
            }
        }
        if pred(p) {
            return start.elapsed().as_secs_f64();
        }
        assert!(
            start.elapsed() < timeout,
            "timed out waiting for {what}; progress seen {seen:?}; screen:\n{}",
            p.screen.text()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn drive(w: u16, h: u16) {
    let runs = tempfile::tempdir().unwrap();
    let dir = runs.path().to_str().unwrap().to_string();
    let mut p = Pty::spawn(&["--runs-dir", &dir, "--preset", PRESET], w, h);
    p.wait_for(
        "the setup screen with nqm-sgd",
        |t| t.contains("Study") && t.contains(PRESET),
        Duration::from_secs(60),
    );
    p.send("\r");
    let t0 = Instant::now();
    let mut seen: Vec<(f64, usize)> = Vec::new();
    until(
        &mut p,
        &mut seen,
        t0,
        "the sweep to start",
        |p| progress(p).is_some_and(|(_, m)| m > 0),
        Duration::from_secs(60),
    );
    let total = progress(&p).unwrap().1;
    assert_eq!(total, 288, "nqm-sgd plans 12 B × 24 trials");

    // A third of the way in (today's freeze starts after ~30 trials): `?` opens help while the
    // sweep still runs; `?` again returns to Live.
    until(
        &mut p,
        &mut seen,
        t0,
        "a third of the trials",
        |p| progress(p).is_some_and(|(n, _)| n >= total / 3),
        Duration::from_secs(120),
    );
    let asked_at = progress(&p).unwrap().0;
    p.send("?");
    let help_s = until(
        &mut p,
        &mut seen,
        t0,
        "help",
        |p| p.screen.text().contains("Keys") && p.screen.text().contains("Help"),
        Duration::from_secs(120),
    );
    let at_help = header_progress(&p.screen.header(), PRESET);
    assert!(
        at_help.is_some_and(|(n, _)| n < total),
        "help opened only after the sweep ended (asked at {asked_at}/{total}, opened at \
         {at_help:?}): keys were not answered while trials landed; progress seen {seen:?}"
    );
    p.send("?");
    let back_s = until(
        &mut p,
        &mut seen,
        t0,
        "Live again",
        |p| p.screen.text().contains("steps to"),
        Duration::from_secs(120),
    );
    // `r` opens the report mid-sweep too; Esc returns
    let report_s = if progress(&p).is_some_and(|(n, _)| n < total) {
        p.send("r");
        let s = until(
            &mut p,
            &mut seen,
            t0,
            "the report screen",
            |p| p.screen.text().contains("Report ·"),
            Duration::from_secs(120),
        );
        p.send("\x1b");
        Some(s)
    } else {
        None
    };
    until(
        &mut p,
        &mut seen,
        t0,
        "the end of the sweep",
        |p| {
            let t = p.screen.text();
            t.contains("sweep complete") && finished_trials(&t) == Some((total, total))
        },
        Duration::from_secs(300),
    );
    println!(
        "{w}×{h}: help opened {:.0} ms after `?` (at {asked_at}/{total}), Live back after {:.0} ms, \
         report after {:?} ms; {} distinct progress values seen over {:.1} s",
        help_s * 1e3,
        back_s * 1e3,
        report_s.map(|s| (s * 1e3).round()),
        seen.len(),
        t0.elapsed().as_secs_f64()
    );

    // The screen changed while trials landed: it showed the sweep's middle, in many steps (a UI
    // busy analysing jumps from ~30 trials straight to the end).
    let mids: Vec<usize> = seen
        .iter()
        .map(|(_, n)| *n)
        .filter(|n| *n > total / 4 && *n < total * 3 / 4)
        .collect();
    assert!(
        mids.len() >= 3,
        "the screen did not follow the sweep through its middle: progress seen {seen:?}"
    );
    let biggest_jump = seen.windows(2).map(|w| w[1].1 - w[0].1).max().unwrap_or(0);
    assert!(
        biggest_jump <= total / 4,
        "the screen jumped by {biggest_jump} trials at once: progress seen {seen:?}"
    );

    // Once the sweep ended the analysis has landed: the status panel shows the fit of
    // `report --json` of the log.
    let log = find_log(runs.path()).expect("the sweep's run log");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scaling-lab"))
        .args(["report", log.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s_min = json["fit"]["s_min"].as_f64().expect("a fit");
    let b_crit = json["fit"]["b_crit"].as_f64().expect("a fit");
    let want = format!(
        "S_min {} · B_crit {}",
        scaling_lab::report::num(s_min),
        scaling_lab::report::num(b_crit)
    );
    let text = p.wait_for(
        "the final analysis on the status panel",
        |t| t.contains(&want),
        Duration::from_secs(60),
    );
    assert!(!text.contains("updating"), "{text}");

    p.send("q");
    let status = p.wait_exit(Duration::from_secs(60));
    assert!(
        matches!(status, expectrl::WaitStatus::Exited(_, 0)),
        "exit status {status:?}"
    );
}

#[test]
fn nqm_sweep_keeps_the_screen_moving_and_keys_answered_at_100x30() {
    drive(100, 30);
}

#[test]
fn nqm_sweep_keeps_the_screen_moving_and_keys_answered_at_80x24() {
    drive(80, 24);
}
