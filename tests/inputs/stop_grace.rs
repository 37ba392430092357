//! A stop that cannot come between steps. The first SIGTERM asks for a graceful stop (taken
//! between steps); when one long step holds it past the grace period, the process quits by
//! itself with exit 130 and one line. On a GPU, the first step compiles its kernels for minutes
//! (docs/gpu.md), and a single SIGTERM (`timeout`, a scheduler) must not wait on that.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, BIN};

#[test]
fn a_stop_held_by_a_long_step_quits_after_the_grace_period() {
    let runs = tempfile::tempdir().unwrap();
    // the paper-size CNN at B = 4096 on the CPU: one step takes seconds (~2.5 s on 2 cores)
    let mut child = Command::new(BIN)
        .args([
            "train",
            "--preset",
            "mnist-cnn-paper-momentum",
            "--batch-size",
            "4096",
            "--steps",
            "20",
            "--no-noise-scale",
            "--json",
            "--runs-dir",
        ])
        .arg(runs.path())
        // a grace far shorter than a step (~2.5 s): the signal then lands with more than the
        // grace left of the step in flight (but for ~1 % of landings, right at a step's end)
        .env("SCALING_LAB_STOP_GRACE_S", "0.03")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // well into the first steps (the data loads in well under a second)
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        child.try_wait().unwrap().is_none(),
        "ended before the signal"
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("still running 60 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let waited = t.elapsed();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(waited < Duration::from_secs(20), "{waited:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        lines.iter().any(|l| l.starts_with("interrupted: stopping")),
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("interrupted: still stopping after 0.03 s")),
        "{stderr}"
    );
}

/// A grace that is not a number of seconds in [0, a day] — past what a timer holds (1e308, 1e20,
/// 2⁶⁴), negative, NaN, infinite, text or empty — is one usage error naming the variable before
/// anything runs (no run log is created), never a panic in the signal handler's thread that would
/// leave every later ctrl-c unheard while the sweep runs on.
#[test]
fn an_out_of_range_grace_is_one_error_naming_the_variable_before_anything_runs() {
    for bad in [
        "1e308",
        "1e20",
        "18446744073709551616",
        "86400.5",
        "-1",
        "-0.5",
        "NaN",
        "inf",
        "-inf",
        "thirty",
        "",
    ] {
        for cmd in [
            &["sweep", "digits-mlp-sgd", "--trials", "2"][..],
            &["train", "--preset", "nqm-sgd", "--steps", "5"][..],
        ] {
            let runs = tempfile::tempdir().unwrap();
            let out = Command::new(BIN)
                .args(cmd)
                .arg("--runs-dir")
                .arg(runs.path())
                .env("SCALING_LAB_STOP_GRACE_S", bad)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            assert_eq!(out.status.code(), Some(2), "{bad:?} {cmd:?}: {stderr}");
            assert_eq!(lines.len(), 1, "{bad:?} {cmd:?}: {stderr}");
            assert!(
                lines[0].starts_with("error: SCALING_LAB_STOP_GRACE_S=")
                    && lines[0].contains("0 to 86400"),
                "{bad:?} {cmd:?}: {stderr}"
            );
            assert!(
                common::find_log(runs.path()).is_none(),
                "{bad:?}: a sweep ran"
            );
        }
    }
}

/// At the largest grace (a day) and at 0, a first SIGINT or SIGTERM still stops a running sweep
/// between steps: exit 130, the resume command printed, the finished trials kept.
#[test]
fn a_signal_stops_the_sweep_at_every_grace_in_range() {
    for (grace, signal) in [
        ("86400", libc::SIGINT),
        ("86400", libc::SIGTERM),
        ("1e4", libc::SIGTERM),
        ("0", libc::SIGINT),
    ] {
        let runs = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .args([
                "sweep",
                "digits-mlp-sgd",
                "--concurrency",
                "1",
                "--runs-dir",
            ])
            .arg(runs.path())
            .env("SCALING_LAB_STOP_GRACE_S", grace)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // signalled once the first trial is in the log (the sweep takes several seconds more)
        let t = Instant::now();
        loop {
            let saved = common::find_log(runs.path())
                .and_then(|l| std::fs::read_to_string(l).ok())
                .is_some_and(|s| s.contains("\"type\":\"trial\""));
            if saved {
                break;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "ended before the signal"
            );
            assert!(t.elapsed() < Duration::from_secs(60), "no trial in 60 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        unsafe { libc::kill(child.id() as i32, signal) };
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("grace {grace}: still running 60 s after signal {signal}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(status.code(), Some(130), "grace {grace}: {stderr}");
        // (a grace of 0 quits at once, before the sweep could say how to resume)
        assert!(
            grace == "0" || stderr.contains("resume with: scaling-lab sweep --resume"),
            "grace {grace}: {stderr}"
        );
    }
}
