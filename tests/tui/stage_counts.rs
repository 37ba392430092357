//! The TUI counts each stage against its own plan: the real binary in a pseudo-terminal runs a
//! digits sweep with a confirm stage and its `confirm_until` rounds (8 trials at B = 16, 64, 256:
//! 24 search trials, then 1x10 confirm seeds per B and the rounds), and at no point does the
//! header's sweep indicator or the status panel count more trials finished than planned (the
//! confirm trials were once counted against the search's plan: "trials finished: 430/240"
//! with a full bar while 190 confirm trials still ran). The status panel names the stages
//! ("search 24/24 · confirm m/M"), and when the sweep ends its counts are those of `report --json`
//! of the log.
//!
//! Needs the release build: `cargo test --release --test tui stage_counts`.

#![cfg(unix)]

use std::time::{Duration, Instant};

use crate::pty::{find_log, finished_trials, header_progress, Pty};

const NAME: &str = "stage-counts";

/// "search 24/24 · confirm 30/50" on the status panel: (search done, planned, confirm done,
/// planned).
fn stages(screen: &str) -> Option<(usize, usize, usize, usize)> {
    let pair = |w: &str| -> Option<(usize, usize)> {
        let (a, b) = w.split_once('/')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    };
    screen.match_indices("search ").find_map(|(i, _)| {
        let rest = &screen[i + "search ".len()..];
        let (s, rest) = rest.split_once(" · confirm ")?;
        let c = rest.split_whitespace().next()?;
        let (sd, sp) = pair(s)?;
        let (cd, cp) = pair(c)?;
        Some((sd, sp, cd, cp))
    })
}

#[test]
fn the_tui_counts_the_search_and_the_confirm_stage_against_their_own_plans() {
    let runs = tempfile::tempdir().unwrap();
    let preset = runs.path().join(format!("{NAME}.toml"));
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/digits-mlp-sgd.toml"),
    )
    .unwrap()
    .replace("name = \"digits-mlp-sgd\"", &format!("name = \"{NAME}\""))
    .replace(
        "batch_sizes = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]",
        "batch_sizes = [16, 64, 256]",
    )
    .replace("trials_per_batch = 24", "trials_per_batch = 8");
    assert!(text.contains("[16, 64, 256]") && text.contains("confirm = \"1x10\""));
    std::fs::write(&preset, text).unwrap();
    let dir = runs.path().join("runs");
    let mut p = Pty::spawn(
        &[
            "--runs-dir",
            dir.to_str().unwrap(),
            "--preset",
            preset.to_str().unwrap(),
        ],
        120,
        40,
    );
    p.wait_for(
        "the setup screen with the preset",
        |t| t.contains("Study") && t.contains(NAME),
        Duration::from_secs(60),
    );
    p.send("\r");
    // every screen until the sweep completes: never more finished than planned, anywhere
    let t0 = Instant::now();
    let mut seen = Vec::new();
    let mut confirm_seen = false;
    loop {
        if p.pump() {
            let t = p.screen.text();
            for (n, m) in [
                header_progress(&p.screen.header(), NAME),
                finished_trials(&t),
            ]
            .into_iter()
            .flatten()
            {
                assert!(n <= m, "{n}/{m} trials: more finished than planned:\n{t}");
                if seen.last() != Some(&(n, m)) {
                    seen.push((n, m));
                }
            }
            if let Some((sd, sp, cd, cp)) = stages(&t) {
                assert!(sd <= sp && cd <= cp, "stages: {sd}/{sp} · {cd}/{cp}:\n{t}");
                assert_eq!(sp, 24, "the search plans 3 B × 8 trials:\n{t}");
                // the confirm stage plans at least the first blocks (1x10 per B)
                assert!(cp >= 30, "confirm {cd}/{cp}:\n{t}");
                confirm_seen |= cd > 0 && cd < cp;
            }
            if t.contains("sweep complete") {
                break;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "the sweep did not complete; seen {seen:?}:\n{}",
            p.screen.text()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let log = find_log(&dir).expect("the sweep's run log");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scaling-lab"))
        .args(["report", log.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let count = |stage: &str, what: &str| json["stages"][stage][what].as_u64().unwrap() as usize;
    let (search, confirm) = (count("search", "done"), count("confirm", "done"));
    assert_eq!((search, count("search", "planned")), (24, 24));
    assert_eq!(confirm, count("confirm", "planned"));
    assert!(confirm >= 30, "{json}");
    let t = p.wait_for(
        "the final counts",
        |t| {
            finished_trials(t) == Some((search + confirm, search + confirm))
                && stages(t) == Some((24, 24, confirm, confirm))
        },
        Duration::from_secs(60),
    );
    assert!(
        confirm_seen,
        "the status panel never showed the confirm stage under way; seen {seen:?}:\n{t}"
    );
    p.send("q");
    let status = p.wait_exit(Duration::from_secs(60));
    assert!(
        matches!(status, expectrl::WaitStatus::Exited(_, 0)),
        "exit status {status:?}"
    );
}
