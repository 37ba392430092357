//! A stop that cannot come between steps. The first SIGTERM asks for a graceful stop (taken
//! between steps); when one long step holds it past the grace period, the process quits by
//! itself with exit 130 and one line. On a GPU, the first step compiles its kernels for minutes
//! (docs/gpu.md), and a single SIGTERM (`timeout`, a scheduler) must not wait on that.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::BIN;

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
