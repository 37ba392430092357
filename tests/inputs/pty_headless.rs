//! The headless commands in a pseudo-terminal (progress bars drawn) and piped: they run to
//! completion (the old `stdout.lock()` + indicatif deadlock froze `sweep` in a terminal), ctrl-c
//! cancels with exit 130 and the resume line, a second ctrl-c ends the process at once, and a
//! closed pipe (`| head -2`) is a normal exit.

#![cfg(unix)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use expectrl::{Eof, Regex, Session, WaitStatus};

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");

fn pty(args: &[&str], runs: &Path) -> Session {
    let mut cmd = Command::new(BIN);
    cmd.args(args).arg("--runs-dir").arg(runs);
    cmd.env("TERM", "xterm-256color");
    let mut s = Session::spawn(cmd).expect("spawn in a pty");
    s.set_expect_timeout(Some(Duration::from_secs(120)));
    s
}

fn exit_code(s: &Session) -> i32 {
    let t0 = Instant::now();
    loop {
        match s.get_process().status() {
            Ok(WaitStatus::Exited(_, code)) => return code,
            Ok(WaitStatus::Signaled(_, sig, _)) => panic!("killed by {sig:?}"),
            other => {
                assert!(t0.elapsed() < Duration::from_secs(60), "no exit: {other:?}");
                std::thread::sleep(Duration::from_millis(50))
            }
        }
    }
}

/// Everything the session printed until it ended.
fn text_until_eof(s: &mut Session, what: &str) -> String {
    let out = s.expect(Eof).expect(what);
    String::from_utf8_lossy(out.as_bytes()).to_string()
}

/// Runs `scaling-lab ARGS` in a pty (runs in a fresh directory) to its end: what it printed and
/// its exit code.
fn run_in_pty(args: &[&str]) -> (String, i32) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = pty(args, dir.path());
    let text = text_until_eof(&mut s, "it ends (no hang)");
    let code = exit_code(&s);
    (text, code)
}

/// A digits sweep long enough (160 trials) to be interrupted.
const LONG_SWEEP: [&str; 6] = [
    "sweep",
    "digits-mlp-sgd",
    "--trials",
    "20",
    "--batch-sizes",
    "8,16,32,64,128,256,512,1024",
];

#[test]
fn sweep_runs_to_completion_in_a_terminal() {
    let (text, code) = run_in_pty(&[
        "sweep",
        "nqm-sgd",
        "--batch-sizes",
        "4,16,64,256",
        "--trials",
        "6",
    ]);
    assert!(text.contains("sweep nqm-sgd"), "{text}");
    assert!(text.contains("fit S = S_min"), "{text}");
    // one line per finished trial, early stops in one summary: 24 in all
    let lines = (1..=24)
        .filter(|i| text.contains(&format!("[{i}/24] trial")))
        .count();
    assert_eq!(lines + early_stops(&text), 24, "{text}");
    assert_eq!(code, 0, "{text}");
}

/// The count of the early-stop summary line ("12 trials stopped early at their B's best step
/// count …"), 0 without one.
fn early_stops(text: &str) -> usize {
    text.split("trials stopped early at their B's best step count")
        .next()
        .filter(|head| head.len() < text.len())
        .and_then(|head| head.split_whitespace().last())
        .and_then(|n| {
            // the count's digits, after any escape sequence the terminal view put before them
            let digits: String = n.chars().rev().take_while(char::is_ascii_digit).collect();
            digits.chars().rev().collect::<String>().parse().ok()
        })
        .unwrap_or(0)
}

#[test]
fn train_runs_to_completion_in_a_terminal() {
    let args: Vec<&str> = "train --preset digits-mlp-sgd --batch-size 64 --steps 300"
        .split(' ')
        .collect();
    let (text, code) = run_in_pty(&args);
    assert!(
        text.contains("reached at step") || text.contains("did not reach"),
        "{text}"
    );
    assert_eq!(code, 0, "{text}");
}

#[test]
fn sweep_piped_runs_to_completion() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "sweep",
            "nqm-sgd",
            "--batch-sizes",
            "4,16,64",
            "--trials",
            "4",
        ])
        .arg("--runs-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with('[')).count() + early_stops(&text),
        12,
        "{text}"
    );
    assert!(!text.contains("stopped early at step"), "{text}");
    assert!(text.contains("noise scale"), "{text}");
}

#[test]
fn ctrl_c_cancels_with_130_and_the_resume_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = pty(&LONG_SWEEP, dir.path());
    // trials stopped early have no line of their own: the first line of a finished trial
    s.expect(Regex(r"\[search \d+/160\] trial"))
        .expect("a trial finishes");
    s.send([3u8]).unwrap(); // ctrl-c
    let text = text_until_eof(&mut s, "the sweep stops");
    assert!(text.contains("scaling-lab sweep --resume"), "{text}");
    assert_eq!(exit_code(&s), 130, "{text}");
}

#[test]
fn second_ctrl_c_quits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // One long trial: the first ctrl-c asks it to stop at its next step; the second ends the
    // process without waiting.
    let mut s = pty(&LONG_SWEEP, dir.path());
    s.expect(Regex(r"\[search \d+/160\] trial"))
        .expect("a trial finishes");
    s.send([3u8]).unwrap();
    s.expect("interrupted").expect("first ctrl-c acknowledged");
    let _ = s.send([3u8]);
    let t0 = Instant::now();
    let code = exit_code(&s);
    assert!(code == 130, "exit {code}");
    assert!(t0.elapsed() < Duration::from_secs(30));
}

#[test]
fn closed_pipe_is_a_normal_exit() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "set -o pipefail; '{BIN}' sweep nqm-sgd --batch-sizes 4,16,64 --trials 4 --runs-dir '{}' | head -2",
        dir.path().display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {err}", out.status.code());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    assert!(!err.contains("panicked"), "{err}");
}

/// `sweep --dry-run` of a GPU-scale preset on the CPU, piped and in a pty: the plan, the layout
/// and the wall-time bound (after a short calibration, cached in the runs directory), the
/// warning with that bound, no trial run and no log written.
#[test]
fn dry_run_of_a_gpu_scale_preset_warns_with_its_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/digits-mlp-sgd.toml"),
    )
    .unwrap();
    let text = text
        .replacen("[sweep]\n", "[sweep]\ngpu_scale = true\n", 1)
        .replacen("name = \"digits-mlp-sgd\"", "name = \"digits-gpu-sgd\"", 1);
    let preset = dir.path().join("digits-gpu-sgd.toml");
    std::fs::write(&preset, text).unwrap();
    let runs = dir.path().join("runs");
    let out = Command::new(BIN)
        .args(["sweep", preset.to_str().unwrap(), "--dry-run", "--runs-dir"])
        .arg(&runs)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("estimated wall time: at most "), "{stdout}");
    assert!(
        stderr.contains(
            "warning: digits-gpu-sgd is a GPU-scale preset running on the CPU: estimated at most "
        ),
        "{stderr}"
    );
    assert!(
        runs.join("layout-calibration.json").is_file(),
        "calibration cached"
    );
    assert!(common_log_count(&runs) == 0, "a dry run writes no run log");
    // the same in a terminal, now from the cached calibration
    let mut s = pty(&["sweep", preset.to_str().unwrap(), "--dry-run"], &runs);
    let text = text_until_eof(&mut s, "the dry run ends");
    assert_eq!(exit_code(&s), 0, "{text}");
    assert!(
        text.contains("GPU-scale preset running on the CPU: estimated at most "),
        "{text}"
    );
}

fn common_log_count(runs: &Path) -> usize {
    std::fs::read_dir(runs)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .count()
        })
        .unwrap_or(0)
}

/// `devices` and `devices --check` in a terminal and piped, with no GPU visible (the Vulkan loader
/// pointed at no driver): the lines are the same both ways, the check says there is nothing to
/// check, exit 0. (The check on a real adapter: the wgpu tier's `devices --check` test.)
#[test]
fn devices_and_its_check_in_a_terminal_and_piped() {
    for args in [&["devices"][..], &["devices", "--check"]] {
        let no_gpu = [("VK_ICD_FILENAMES", "/nonexistent/icd.json")];
        let mut cmd = Command::new(BIN);
        cmd.args(args).envs(no_gpu).env("TERM", "xterm-256color");
        let mut s = Session::spawn(cmd).expect("spawn in a pty");
        s.set_expect_timeout(Some(Duration::from_secs(120)));
        let text = text_until_eof(&mut s, "devices ends").replace("\r\n", "\n");
        assert_eq!(exit_code(&s), 0, "{text}");
        let piped = Command::new(BIN).args(args).envs(no_gpu).output().unwrap();
        assert_eq!(piped.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&piped.stdout).trim(), text.trim());
        assert!(text.starts_with("cpu: "), "{text}");
        assert!(text.contains("wgpu: none"), "{text}");
        assert_eq!(
            text.contains("check: no GPU here to check against the CPU"),
            args.len() == 2,
            "{text}"
        );
    }
}

/// The typos and out-of-range values of `corpus_flags::HINTS` in a terminal: one line that says
/// what was meant ("did you mean digits-mlp-sgd?", clap's "a similar argument exists", "batch
/// sizes start at 1"), exit 2, no hang.
#[test]
fn typos_get_a_hint_in_a_terminal() {
    for (args, want) in crate::corpus_flags::HINTS {
        let (text, code) = run_in_pty(args);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {text}");
        assert!(
            lines[0].contains(want),
            "{args:?}: {want:?} missing: {text}"
        );
        assert!(!lines[0].contains("18446744073709551615"), "{text}");
        assert_eq!(code, 2, "{args:?}: {text}");
    }
}

/// `compare` in a terminal: every run name in full and every number with its interval, as piped
/// (nothing is cut to a column).
#[test]
fn compare_in_a_terminal_cuts_no_name() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a-run-log-with-a-name-much-longer-than-any-column-would-hold";
    let mut logs = Vec::new();
    for (i, f) in ["nqm-sgd.jsonl", "nqm-momentum.jsonl"].iter().enumerate() {
        let p = dir.path().join(format!("{long}-{i}.jsonl"));
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid");
        std::fs::copy(fixture.join(f), &p).unwrap();
        logs.push(p.display().to_string());
    }
    let (text, code) = run_in_pty(&["compare", &logs[0], &logs[1]]);
    assert_eq!(code, 0, "{text}");
    for i in 0..2 {
        assert!(
            text.contains(&format!("#{} {long}-{i}.jsonl (", i + 1)),
            "{text}"
        );
    }
    assert!(
        text.contains("B_crit [95%]") && text.contains("59.6 [5.45–2.56e5]"),
        "{text}"
    );
}

/// `bench` says what it will measure and about how long before it starts, then one line per
/// measurement with what is left — in a terminal and piped (the progress on stderr, the table
/// alone on stdout).
#[test]
fn bench_says_its_plan_then_each_measurement_in_a_terminal_and_piped() {
    let args = ["bench", "--mlp-only", "--steps", "20"];
    let check = |text: &str| {
        let at = |s: &str| {
            text.find(s)
                .unwrap_or_else(|| panic!("{s:?} missing: {text}"))
        };
        let plan = at("bench: 3 measurements, about ");
        let first = at("[bench 1/3] MLP 784-256-10 step, B = 32: ");
        let last = at("[bench 3/3] MLP 784-256-10 step, B = 1024: ");
        assert!(plan < first && first < last, "{text}");
        assert!(text.contains(" left)"), "{text}");
        assert!(text.contains(" ex/s ("), "{text}");
    };
    let (text, code) = run_in_pty(&args);
    assert_eq!(code, 0, "{text}");
    check(&text);
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(args)
        .arg("--runs-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    check(&String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("[bench"), "{stdout}");
}
