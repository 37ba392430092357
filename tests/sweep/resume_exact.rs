//! A resumed sweep is the uninterrupted one, at every kill point of the search and of the confirm
//! stage: `report --json` of the resumed log equals the uninterrupted run's (every number but
//! the timings and the noise scale, whose sampling cadence follows the measured time), and so
//! does the set of trials. The sweep is the one a stop was lost in (`digits-mlp-sgd`, 8 trials
//! at B = 16, 64, 256, one trial at a time, fused groups of 4): 24 search trials, the preset's
//! confirm stage (1x10) and its `confirm_until` (±15 %) rounds at B = 64 and 256 — 74 trials.
//!
//! Kills: SIGKILL once the log holds N trial records (read by tailing it), for N over both
//! stages; and, as exactly as a kill can land, the uninterrupted log cut after its N-th record
//! (what a SIGKILL right after that record leaves) — inside a confirm block (its quorum cut
//! re-derived from the seeds it logged) and inside a `--until` round.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{find_log, BIN};

fn sweep_args(runs: &Path) -> Vec<String> {
    let mut v: Vec<String> = [
        "sweep",
        "digits-mlp-sgd",
        "--trials",
        "8",
        "--batch-sizes",
        "16,64,256",
        "--concurrency",
        "1",
        "--fuse",
        "4",
        "--runs-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(runs.display().to_string());
    v
}

fn trial_ids(log: &Path) -> Vec<u64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "trial")
        .filter_map(|v| v["trial_id"].as_u64())
        .collect()
}

/// `report LOG --json`, without what a rerun measures anew.
fn report(log: &Path) -> serde_json::Value {
    common::report_without_measured(log, &[])
}

/// Resumes the sweep logged at `log` to its end.
fn resume(log: &Path, runs: &Path) {
    let out = Command::new(BIN)
        .args(["sweep", "--resume"])
        .arg(log)
        .arg("--runs-dir")
        .arg(runs)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "resume of {}: {}",
        log.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the sweep in `runs`, SIGKILLed once its log holds `n` trial records; the records it left
/// (None: it ended first).
fn killed_after(runs: &Path, n: usize) -> Option<(PathBuf, usize)> {
    let mut child = common::spawn(&sweep_args(runs), Stdio::null());
    let start = Instant::now();
    loop {
        if let Some(log) = find_log(runs) {
            if trial_ids(&log).len() >= n {
                child.kill().unwrap();
                child.wait().unwrap();
                let left = trial_ids(&log).len();
                return Some((log, left));
            }
        }
        if let Ok(Some(_)) = child.try_wait() {
            return None;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no progress");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs `jobs` on a few threads at once.
fn in_parallel<T: Send>(jobs: Vec<T>, work: impl Fn(T) + Sync) {
    let queue = Mutex::new(jobs);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let Some(job) = queue.lock().unwrap().pop() else {
                    return;
                };
                work(job);
            });
        }
    });
}

#[test]
fn a_sweep_killed_anywhere_resumes_to_the_uninterrupted_report() {
    let reference_dir = tempfile::tempdir().unwrap();
    let status = Command::new(BIN)
        .args(sweep_args(reference_dir.path()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let reference_log = find_log(reference_dir.path()).unwrap();
    let reference = report(&reference_log);
    let all = trial_ids(&reference_log);
    let want: BTreeSet<u64> = all.iter().copied().collect();
    let search = all.iter().filter(|&&id| id < 24).count();
    assert_eq!(search, 24);
    // the confirm stage (ids from 2·10⁹) and at least one --until round (seeds past 10)
    let confirm_seeds = |id: &u64| (id % 1000) as usize;
    assert!(all.len() > search + 3 * 10, "{} trials", all.len());
    assert!(all
        .iter()
        .any(|id| *id >= 2_000_000_000 && confirm_seeds(id) >= 10));
    let same = |log: &Path, at: String| {
        let ids = trial_ids(log);
        let got: BTreeSet<u64> = ids.iter().copied().collect();
        assert_eq!(ids.len(), got.len(), "{at}: a trial logged twice");
        assert_eq!(got, want, "{at}: not the uninterrupted run's trials");
        let r = report(log);
        assert!(
            r == reference,
            "{at}: report --json differs:\n{r:#}\nuninterrupted:\n{reference:#}"
        );
    };

    // SIGKILL at points over both stages (the log read while the sweep writes it)
    let landed = Mutex::new(Vec::new());
    let targets: Vec<usize> = vec![3, 8, 14, 20, 27, 33, 38, 44, 50, 55, 60, 65];
    in_parallel(targets, |n| {
        let dir = tempfile::tempdir().unwrap();
        let Some((log, left)) = killed_after(dir.path(), n) else {
            return;
        };
        resume(&log, dir.path());
        same(&log, format!("SIGKILL after {left} records (aimed at {n})"));
        landed.lock().unwrap().push(left);
    });
    let landed = landed.into_inner().unwrap();
    let killed: Vec<&usize> = landed.iter().filter(|&&n| n < all.len()).collect();
    assert!(
        killed.iter().filter(|&&&n| n < search).count() >= 3
            && killed.iter().filter(|&&&n| n >= search).count() >= 5
            && killed.len() >= 10,
        "kills landed after {landed:?} of {} records",
        all.len()
    );

    // exactly after record N: inside the search, inside confirm blocks (a block whose quorum the
    // logged seeds did or did not reach), inside the --until rounds
    let text = std::fs::read_to_string(&reference_log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cuts: Vec<usize> = vec![5, 24, 29, 36, 44, 52, 58, 62, 66, 68, 71, all.len() - 1];
    in_parallel(cuts, |n| {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("cut.jsonl");
        // the header and the first n trial lines
        std::fs::write(&log, lines[..=n].join("\n") + "\n").unwrap();
        assert_eq!(trial_ids(&log).len(), n);
        resume(&log, dir.path());
        same(&log, format!("killed right after record {n}"));
    });
}
