//! Reliability: SIGKILL a running sweep at several points, resume it, and check that no finished
//! trial is lost or run twice and that the final curve equals an uninterrupted run's.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scaling_lab::runlog::reader::read_run_log;

use crate::common::{find_log, BIN};

fn sweep_args(runs: &Path) -> Vec<String> {
    [
        "sweep",
        "digits-mlp-momentum",
        "--batch-sizes",
        "16,32,64,128",
        "--trials",
        "3",
        "--seed",
        "11",
        "--runs-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([runs.display().to_string()])
    .collect()
}

fn trial_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| {
            s.lines()
                .filter(|l| l.contains("\"type\":\"trial\""))
                .count()
        })
        .unwrap_or(0)
}

fn spawn(args: &[String]) -> Child {
    common::spawn(args, Stdio::null())
}

/// Waits until the log holds at least `n` trial records, then SIGKILLs the process.
fn kill_after(mut child: Child, dir: &Path, n: usize) -> bool {
    let start = Instant::now();
    loop {
        if let Some(log) = find_log(dir) {
            if trial_lines(&log) >= n {
                child.kill().unwrap(); // SIGKILL on Unix
                child.wait().unwrap();
                return true;
            }
        }
        if let Ok(Some(_)) = child.try_wait() {
            return false; // finished before we could kill it
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "sweep made no progress"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn sigkill_then_resume_loses_nothing_and_matches_an_uninterrupted_run() {
    let reference_dir = tempfile::tempdir().unwrap();
    let status = Command::new(BIN)
        .args(sweep_args(reference_dir.path()))
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let reference = read_run_log(&find_log(reference_dir.path()).unwrap()).unwrap();
    // 12 search trials, then the confirm stage (on by default: 3×5 per B, fewer where
    // fewer search trials reached)
    let search = reference
        .trials
        .iter()
        .filter(|t| t.spec.is_search())
        .count();
    let confirm = reference.trials.len() - search;
    assert_eq!(search, 12);
    assert!(confirm >= 4 * 5, "{confirm} confirm trials");
    assert!(reference
        .trials
        .iter()
        .all(|t| t.spec.is_search() || t.spec.confirm.is_some()));

    let dir = tempfile::tempdir().unwrap();
    // first run: killed after the first finished trial
    assert!(kill_after(spawn(&sweep_args(dir.path())), dir.path(), 1));
    let log = find_log(dir.path()).unwrap();
    // resumed more, killed at later points — twice in the search, twice in the confirm stage —
    // then resumed to the end
    for n in [4, 8, 12 + 3, 12 + confirm / 2] {
        let args: Vec<String> = vec![
            "sweep".into(),
            "--resume".into(),
            log.display().to_string(),
            "--runs-dir".into(),
            dir.path().display().to_string(),
        ];
        kill_after(spawn(&args), dir.path(), n);
    }
    let status = Command::new(BIN)
        .args(["sweep", "--resume"])
        .arg(&log)
        .arg("--runs-dir")
        .arg(dir.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());

    let resumed = read_run_log(&log).unwrap();
    let ids: Vec<u64> = resumed.trials.iter().map(|t| t.trial_id).collect();
    let unique: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "a trial was run twice: {ids:?}");
    assert_eq!(
        unique.len(),
        reference.trials.len(),
        "a trial was lost: {ids:?}"
    );
    assert!(resumed.summary.is_some());
    // the same trials (the confirm stage re-derived from the records), the same outcomes, the
    // same curve and the same confirmed S(B)
    for t in &resumed.trials {
        let r = reference
            .trials
            .iter()
            .find(|r| r.trial_id == t.trial_id)
            .unwrap();
        assert_eq!(t.spec, r.spec);
        assert!(
            t.outcome.outcome == r.outcome.outcome
                || (t.spec.confirm.is_some()
                    && common::same_or_quorum_cut(&t.outcome.outcome, &r.outcome.outcome)),
            "trial {}: {:?} vs {:?}",
            t.trial_id,
            t.outcome.outcome,
            r.outcome.outcome
        );
    }
    let (a, b) = (reference.analysis(), resumed.analysis());
    let curve = |a: &scaling_lab::core::analysis::Analysis| {
        a.per_batch
            .iter()
            .map(|p| (p.batch_size, p.steps, p.confirmed.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(curve(&a), curve(&b));
    assert_eq!(a.readout, scaling_lab::core::analysis::Readout::Confirmed);
    assert_eq!(a.fit, b.fit);
}
