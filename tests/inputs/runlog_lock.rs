//! One writer per log, with real processes: a `sweep --resume` started while another process
//! writes the log is refused with one stderr line naming the holder's PID, and the log stays
//! valid with no duplicated trial.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use scaling_lab::runlog::reader::read_run_log;
use scaling_lab::runlog::writer::lock_sidecar;

use crate::common::find_log;

fn spawn(args: &[&str]) -> Child {
    common::spawn(args, Stdio::piped())
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_output(child: Child) -> Output {
    child.wait_with_output().expect("wait")
}

fn assert_valid_without_duplicates(path: &Path) -> usize {
    let log = read_run_log(path).expect("the log stays valid");
    let ids: HashSet<u64> = log.trials.iter().map(|t| t.trial_id).collect();
    assert_eq!(ids.len(), log.trials.len(), "no duplicated trial");
    log.trials.len()
}

/// Runs `second` while `first` holds the log; `second` must refuse with `first`'s PID (when
/// `first` was still running after `second` ended, i.e. the lock was certainly held).
fn second_is_refused(first: &mut Child, second_args: &[&str]) {
    let second = spawn(second_args);
    let out = wait_output(second);
    let first_alive = first.try_wait().unwrap().is_none();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if first_alive {
        assert_eq!(out.status.code(), Some(1), "refused: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "one line: {stderr}");
        assert!(
            lines[0].contains(&format!("PID {}", first.id())),
            "names the holder: {stderr}"
        );
    } else {
        eprintln!("note: the first process ended before the second could be refused");
    }
}

#[test]
fn resume_while_writing_and_two_concurrent_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let runs_s = runs.display().to_string();
    let sweep = [
        "sweep",
        "digits-mlp-sgd",
        "--batch-sizes",
        "8,16",
        "--trials",
        "4",
        "--seed",
        "5",
        // a target no trial reaches and one trial at a time: every trial runs its whole 3,000-step
        // budget (~0.35 s), so the sweep (~3 s) is still running when it is killed; at the
        // preset's target two trials at once finished all six in ~0.2 s, before the kill
        "--target",
        "0.001",
        "--concurrency",
        "1",
        "--runs-dir",
        runs_s.as_str(),
    ];
    // 1. A resume started while the sweep itself runs is refused.
    let mut a = spawn(&sweep);
    wait_until("the sweep's log and lock", || {
        find_log(&runs).is_some_and(|l| lock_sidecar(&l).exists())
    });
    let log = find_log(&runs).unwrap();
    let log_s = log.display().to_string();
    let resume = [
        "sweep",
        "--resume",
        log_s.as_str(),
        "--runs-dir",
        runs_s.as_str(),
    ];
    second_is_refused(&mut a, &resume);
    // Kill the sweep after its first trial: the log is resumable.
    wait_until("a first trial", || {
        read_run_log(&log).is_ok_and(|l| !l.trials.is_empty())
    });
    a.kill().unwrap();
    let _ = a.wait();
    let after_kill = assert_valid_without_duplicates(&log);
    assert!(after_kill < 8, "killed before the end");

    // 2. Two resumes at once: the second is refused while the first runs.
    let mut c = spawn(&resume);
    wait_until("the first resume's lock", || {
        std::fs::read_to_string(lock_sidecar(&log)).is_ok_and(|t| t.trim() == c.id().to_string())
            || c.try_wait().unwrap().is_some()
    });
    second_is_refused(&mut c, &resume);
    let out = wait_output(c);
    assert!(
        out.status.success(),
        "the first resume finishes: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        assert_valid_without_duplicates(&log),
        8,
        "every trial, once"
    );
    assert!(
        !lock_sidecar(&log).exists(),
        "the sidecar is removed at the end"
    );
}
