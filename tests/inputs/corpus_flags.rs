//! A generated corpus of bad flags and flag combinations through the real binary. Every case must
//! end within 20 s with an exit code that is neither 0 nor 101 (a panic), and print exactly one
//! non-empty line on stderr that names the offending flag (or file).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

struct Case {
    args: Vec<String>,
    /// A substring the error line must contain (the flag or file it is about).
    names: String,
    /// The README's rule: 2 for a usage error (a bad flag or combination), 1 for a runtime one
    /// (a file that is missing, unreadable or not a run log, an output that exists, a build
    /// without CUDA).
    code: i32,
}

fn case(args: &[&str], names: &str) -> Case {
    Case {
        args: args.iter().map(|s| s.to_string()).collect(),
        names: names.to_string(),
        code: 2,
    }
}

/// A runtime error's case (exit 1).
fn runtime(args: &[&str], names: &str) -> Case {
    Case {
        code: 1,
        ..case(args, names)
    }
}

/// Runtime errors among the generated flag cases: a CUDA device asked of this CPU build.
fn mark_runtime(v: &mut [Case]) {
    for c in v {
        let a = c.args.join(" ");
        let cuda = a.contains("--gpus 1") || a.ends_with("--devices cuda:0");
        if cuda && !a.contains("--workers") {
            c.code = 1;
        }
    }
}

/// Typos and out-of-range values whose one line must say what was meant (also run in a
/// pseudo-terminal: `tests/inputs/pty_headless.rs`).
pub const HINTS: &[(&[&str], &str)] = &[
    (
        &["sweep", "digits-mlp-sdg"],
        "digits-mlp-sdg: no such preset (did you mean digits-mlp-sgd? `scaling-lab presets` lists all",
    ),
    (
        &["train", "--preset", "mnist-cnn-momentun"],
        "did you mean mnist-cnn-momentum?",
    ),
    (
        &["--preset", "digits-mlp-sdg"],
        "--preset: digits-mlp-sdg: no such preset (did you mean digits-mlp-sgd?",
    ),
    (
        &["sweep", "nqm-sgd", "--trial", "4"],
        "unexpected argument '--trial' found; tip: a similar argument exists: '--trials'",
    ),
    (
        &["train", "--batch-sise", "4"],
        "tip: a similar argument exists: '--batch-size'",
    ),
    (&["swep", "nqm-sgd"], "tip: a similar subcommand exists: 'sweep'"),
    (
        &["sweep", "nqm-sgd", "--batch-sizes", "0"],
        "invalid value '0' for '--batch-sizes <BATCH_SIZES>': batch sizes start at 1",
    ),
    (
        &["sweep", "nqm-sgd", "--batch-sizes", "16,-4"],
        "'--batch-sizes <BATCH_SIZES>': batch sizes start at 1",
    ),
    (
        &["train", "--batch-size", "0"],
        "'--batch-size <BATCH_SIZE>': batch sizes start at 1",
    ),
    (
        &["train", "--base-batch", "0"],
        "'--base-batch <BASE_BATCH>': batch sizes start at 1",
    ),
];

fn corpus(tmp: &Path) -> Vec<Case> {
    let mut v = vec![];
    // train: every numeric flag out of range, unparsable, or in a bad combination.
    let train_bad: &[(&[&str], &str)] = &[
        (&["--batch-size", "0"], "--batch-size"),
        (&["--batch-size", "18446744073709551615"], "--batch-size"),
        (&["--batch-size", "-1"], "--batch-size"),
        (&["--batch-size", "abc"], "--batch-size"),
        (&["--batch-size", "3000"], "--batch-size"),
        (&["--batch-size", "63", "--workers", "2"], "--batch-size"),
        (&["--workers", "0"], "--workers"),
        (&["--workers", "100000"], "--workers"),
        (&["--steps", "0"], "--steps"),
        (&["--steps", "-5"], "--steps"),
        (&["--steps", "many"], "--steps"),
        (&["--eval-every", "0"], "--eval-every"),
        (&["--target", "2"], "--target"),
        (&["--target", "0"], "--target"),
        (&["--target", "1"], "--target"),
        (&["--target", "nan"], "--target"),
        (&["--target", "inf"], "--target"),
        (&["--target", "-0.5"], "--target"),
        (&["--lr", "0"], "--lr"),
        (&["--lr", "-1"], "--lr"),
        (&["--lr", "nan"], "--lr"),
        (&["--lr", "inf"], "--lr"),
        (&["--momentum", "1"], "--momentum"),
        (&["--momentum", "-0.5"], "--momentum"),
        (&["--momentum", "nan"], "--momentum"),
        (
            &["--precision", "fp16", "--loss-scale", "inf"],
            "--loss-scale",
        ),
        (
            &["--precision", "fp16", "--loss-scale", "0"],
            "--loss-scale",
        ),
        (
            &["--precision", "fp16", "--loss-scale", "nan"],
            "--loss-scale",
        ),
        (
            &["--precision", "fp16", "--loss-scale", "0.5"],
            "--loss-scale",
        ),
        (&["--loss-scale", "1024"], "--loss-scale"),
        (
            &["--precision", "bf16", "--loss-scale", "1024"],
            "--loss-scale",
        ),
        (&["--base-batch", "0"], "--base-batch"),
        (&["--precision", "fp8"], "--precision"),
        (&["--lr-rule", "cubic"], "--lr-rule"),
        (&["--preset", "no-such-preset"], "--preset"),
        (&["--preset", "/nonexistent/x.toml"], "--preset"),
        (&["--devices", "cuda:x"], "--devices"),
        (&["--gpus", "0"], "--gpus"),
        (&["--gpus", "1"], "--gpus"),
        (&["--workers", "2", "--devices", "cuda:0"], "--workers"),
        (&["--seed", "-1"], "--seed"),
        (&["--bogus"], "--bogus"),
        // a flag the workload does not use is an error, never recorded as if it ran
        (&["--momentum", "0.5"], "--momentum"),
        (&["--base-batch", "32"], "--base-batch"),
        (&["--lr-rule", "none", "--base-batch", "32"], "--base-batch"),
        (&["--preset", "nqm-sgd", "--seed", "3"], "--seed"),
        (
            &["--preset", "nqm-sgd", "--precision", "bf16"],
            "--precision",
        ),
        (&["--preset", "nqm-sgd", "--workers", "2"], "--workers"),
        (
            &["--preset", "nqm-adam", "--no-noise-scale"],
            "--no-noise-scale",
        ),
        (&["--preset", "nqm-sgd", "--momentum", "0.5"], "--momentum"),
        // a bad batch-size schedule
        (&["--batch-schedule", "64,0.2:32"], "--batch-schedule"),
        (
            &["--batch-schedule", "16,0.1:64,0.2:256"],
            "--batch-schedule",
        ),
        (
            &["--batch-schedule", "16,0.2:63", "--workers", "2"],
            "--batch-schedule",
        ),
        (&["--batch-schedule", "16,1.5:64"], "--batch-schedule"),
        (&["--batch-schedule", "16,0.2:4096"], "--batch-schedule"),
        (&["--batch-schedule", "auto"], "--batch-schedule"),
        (
            &["--batch-schedule", "16,0.2:64", "--batch-size", "32"],
            "--batch-schedule",
        ),
        (
            &["--preset", "nqm-sgd", "--batch-schedule", "4,0.5:16"],
            "--batch-schedule",
        ),
    ];
    for (args, names) in train_bad {
        let mut a = vec!["train", "--preset", "digits-mlp-sgd"];
        if args.contains(&"--preset") {
            a.truncate(1);
        }
        a.extend_from_slice(args);
        v.push(case(&a, names));
    }
    // sweep
    let sweep_bad: &[(&[&str], &str)] = &[
        (&[], "preset"),
        (&["no-such-preset"], "no-such-preset"),
        (&["digits-mlp-sgd", "--batch-sizes", "0"], "--batch-sizes"),
        (
            &["digits-mlp-sgd", "--batch-sizes", "16,0"],
            "--batch-sizes",
        ),
        (
            &["digits-mlp-sgd", "--batch-sizes", "16,16"],
            "--batch-sizes",
        ),
        (
            &["digits-mlp-sgd", "--batch-sizes", "1000000000"],
            "--batch-sizes",
        ),
        (
            &["digits-mlp-sgd", "--batch-sizes", "16,3000"],
            "--batch-sizes",
        ),
        (
            &["nqm-sgd", "--batch-sizes", "18446744073709551615"],
            "--batch-sizes",
        ),
        (&["nqm-sgd", "--batch-sizes", "abc"], "--batch-sizes"),
        (
            &["digits-mlp-sgd", "--batch-sizes", "3", "--workers", "2"],
            "--batch-sizes",
        ),
        // the preset's batch sizes do not split over the workers the flag asks for
        (&["digits-mlp-sgd", "--workers", "3"], "--workers"),
        (&["nqm-sgd", "--workers", "2"], "--workers"),
        (&["nqm-sgd", "--precision", "bf16"], "--precision"),
        (&["nqm-sgd", "--trials", "0"], "--trials"),
        (&["nqm-sgd", "--trials", "1000000000"], "--trials"),
        (&["nqm-sgd", "--workers", "0"], "--workers"),
        (&["nqm-sgd", "--workers", "5000"], "--workers"),
        (&["nqm-sgd", "--concurrency", "0"], "--concurrency"),
        (&["digits-mlp-sgd", "--target", "2"], "--target"),
        (&["nqm-sgd", "--target", "0"], "--target"),
        (&["nqm-sgd", "--target", "nan"], "--target"),
        (&["nqm-sgd", "--target", "inf"], "--target"),
        (&["nqm-sgd", "--target", "-1"], "--target"),
        (&["nqm-sgd", "--precision", "fp8"], "--precision"),
        (&["nqm-sgd", "--seed", "x"], "--seed"),
        (&["nqm-sgd", "--devices", "cuda:0"], "--devices"),
        (&["nqm-sgd", "--gpus", "1"], "--gpus"),
        // the confirm stage is K×R (configurations × fresh seeds) or off
        (&["nqm-sgd", "--confirm", "4"], "--confirm"),
        (&["nqm-sgd", "--confirm", "0x5"], "--confirm"),
        (&["nqm-sgd", "--confirm", "3x1"], "--confirm"),
        (&["nqm-sgd", "--confirm", "3x0"], "--confirm"),
        (&["nqm-sgd", "--confirm", "ax5"], "--confirm"),
        (&["nqm-sgd", "--confirm", "3x5x2"], "--confirm"),
        (&["nqm-sgd", "--confirm", "101x5"], "--confirm"),
        (&["nqm-sgd", "--confirm", "3×"], "--confirm"),
        (&["nqm-sgd", "--confirm=-3x5"], "--confirm"),
        (&["nqm-sgd", "--confirm", ""], "--confirm"),
        (&["nqm-sgd", "--confirm"], "--confirm"),
        // a value with a leading hyphen is the flag's (never "unexpected argument '-1'")
        (&["nqm-sgd", "--confirm", "-1x5"], "--confirm"),
        (&["nqm-sgd", "--confirm", "-3"], "--confirm"),
        (&["nqm-sgd", "--until", "-inf"], "--until"),
        (&["nqm-sgd", "--until", "-0.5"], "--until"),
        (&["nqm-sgd", "--until", "-x"], "--until"),
        (&["nqm-sgd", "--fuse", "-4"], "--fuse"),
        (&["nqm-sgd", "--target", "-inf"], "--target"),
        (
            &["nqm-sgd", "--trials-per-device", "-1"],
            "--trials-per-device",
        ),
        (&["nqm-sgd", "--max-trials", "-inf"], "--max-trials"),
    ];
    for (args, names) in sweep_bad {
        let mut a = vec!["sweep"];
        a.extend_from_slice(args);
        v.push(case(&a, names));
    }
    // the message names the right thing: the close preset, the flag clap suggests, where batch
    // sizes start
    for (args, names) in HINTS {
        v.push(case(args, names));
    }
    // sweep --resume: the log fixes the plan.
    let log = fixture("valid/nqm-sgd.jsonl");
    for (extra, names) in [
        (vec!["--trials", "3"], "--trials"),
        (vec!["--batch-sizes", "4"], "--batch-sizes"),
        (vec!["--workers", "2"], "--workers"),
        (vec!["--precision", "fp16"], "--precision"),
        (vec!["--seed", "7"], "--seed"),
        (vec!["--confirm", "3x5"], "--confirm"),
        // the log plans no confirm stage: restating that (`--confirm off`) is accepted
        (vec!["--confirm", "1x10"], "--confirm 1x10 cannot change"),
        (vec!["--until", "0.2"], "--until 0.2 cannot change"),
        (vec!["nqm-sgd"], "preset"),
    ] {
        let mut a = vec!["sweep", "--resume", &log];
        a.extend(extra);
        v.push(case(&a, names));
    }
    let missing = tmp.join("missing.jsonl").display().to_string();
    v.push(runtime(&["sweep", "--resume", &missing], "--resume"));
    let fifo = tmp.join("fifo.jsonl").display().to_string();
    v.push(runtime(&["sweep", "--resume", &fifo], "--resume"));
    for bad in ["invalid/garbage-line.jsonl", "invalid/no-header.jsonl"] {
        v.push(runtime(&["sweep", "--resume", &fixture(bad)], "--resume"));
    }
    // report / compare / export / import / bench
    for md in ["0", "18446744073709551616", "1048577", "abc", "-4"] {
        v.push(case(
            &["report", &log, "--max-devices", md],
            "--max-devices",
        ));
    }
    v.push(runtime(&["report", &missing], "missing.jsonl"));
    v.push(runtime(&["report", &fifo], "fifo.jsonl"));
    for bad in [
        "empty.jsonl",
        "garbage-line.jsonl",
        "no-header.jsonl",
        "unknown-schema.jsonl",
    ] {
        v.push(runtime(
            &["report", &fixture(&format!("invalid/{bad}"))],
            bad,
        ));
    }
    v.push(case(&["compare", &log], "LOGS"));
    // clap's "required arguments were not provided" names them
    v.push(case(&["report"], "<LOG>"));
    v.push(case(&["export"], "<LOG>"));
    v.push(case(&["compare"], "<LOGS>"));
    v.push(case(
        &["import-batch-science", &fixture("batch_science")],
        "--target",
    ));
    v.push(case(&["data", "install"], "<DIR>"));
    v.push(runtime(&["compare", &log, &missing], "missing.jsonl"));
    v.push(case(&["export", &log], "--svg"));
    v.push(runtime(&["export", &log, "--json", &log], "--json"));
    v.push(runtime(&["export", &log, "--csv", &log], "--csv"));
    v.push(runtime(
        &["import-batch-science", &missing, "--target", "0.01"],
        "missing.jsonl",
    ));
    v.push(case(
        &[
            "import-batch-science",
            &fixture("batch_science"),
            "--target",
            "nan",
        ],
        "--target",
    ));
    v.push(case(&["bench", "--steps", "0"], "--steps"));
    v.push(case(&["bench", "--precision", "fp64"], "--precision"));
    v.push(case(&["bench", "--vmap"], "--sweep-peer"));
    v.push(case(&["bench", "--vmap-only"], "--sweep-peer"));
    // a preset the JAX sweep peers cannot run (before any python is looked for)
    v.push(case(
        &[
            "bench",
            "--sweep-peer",
            "--sweep-preset",
            "shakespeare-lstm-adam",
        ],
        "--sweep-preset",
    ));
    // No terminal: the TUI cannot be drawn; one line instead.
    v.push(case(&["--open", &log], "--open"));
    v.push(case(&[], "terminal"));
    v.push(case(&["--preset", "nqm-sgd"], "terminal"));
    // an unknown preset is named (not Setup on another), terminal or not
    v.push(case(
        &["--preset", "no-such-preset"],
        "--preset: no-such-preset: no such preset (known presets: cifar10-resnet8-adam",
    ));
    v.push(case(&["no-such-command"], "no-such-command"));
    mark_runtime(&mut v);
    v
}

#[test]
fn every_bad_flag_is_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo: PathBuf = tmp.path().join("fifo.jsonl");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let runs = tmp.path().join("runs");
    let cases = corpus(tmp.path());
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let mut failures = vec![];
    for c in &cases {
        let t0 = Instant::now();
        let mut child = Command::new(BIN)
            .args(&c.args)
            .arg("--runs-dir")
            .arg(&runs)
            .env("TERM", "xterm-256color")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if t0.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        let problem = match status {
            None => Some("did not finish within 20 s".to_string()),
            Some(s) if s.code() == Some(0) => Some("exit 0".into()),
            Some(s) if s.code() == Some(101) => Some("panicked (101)".into()),
            Some(s) if s.code().is_none() => Some(format!("killed: {s:?}")),
            Some(_) if lines.len() != 1 => Some(format!("{} stderr lines", lines.len())),
            Some(_) if !lines[0].contains(&c.names) => Some(format!("does not name `{}`", c.names)),
            Some(s) if s.code() != Some(c.code) => Some(format!(
                "exit {:?}, the README's rule says {}",
                s.code(),
                c.code
            )),
            Some(_) if err.contains("panicked") => Some("panic text".into()),
            _ => None,
        };
        if let Some(p) = problem {
            failures.push(format!("{:?}: {p}\n    stderr: {err}", c.args));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // Nothing was started: no run log was created by a rejected command.
    let logs = std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    assert_eq!(logs, 0, "a rejected command left a run log");
}

/// A small digits preset whose sweep has a step budget of `budget`.
fn digits_preset(budget: u64) -> String {
    format!(
        "name = \"long\"\ndescription = \"d\"\n[workload]\noptimizer = \"sgd\"\neval_every = 5\n\
         step_budget = {budget}\n[workload.dataset]\nname = \"digits\"\nval_fraction = 0.2\n\
         [workload.model]\nkind = \"mlp\"\nhidden = [8]\n[workload.target]\nmetric = \"val_error\"\n\
         value = 0.01\n[workload.defaults]\nlearning_rate = 0.1\n[search]\nlearning_rate = [0.01, 1.0]\n\
         [sweep]\nbatch_sizes = [8]\ntrials_per_batch = 1\nconcurrency = 1\n"
    )
}

/// A sweep whose wall-time bound is hours says so before it starts (a billion steps of
/// a tiny MLP: ~ 10⁴ s), and a short one does not.
#[test]
fn a_long_sweep_says_its_bound_before_it_starts() {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let long = tmp.path().join("long.toml");
    std::fs::write(&long, digits_preset(1_000_000_000)).unwrap();
    let mut child = Command::new(BIN)
        .args(["sweep", &long.display().to_string(), "--runs-dir"])
        .arg(tmp.path().join("runs"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // (after the calibration's announcement)
    let warning = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(120)).ok())
        .find(|l| l.starts_with("warning: "))
        .unwrap_or_else(|| "no warning line".into());
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        warning.starts_with("warning: this sweep may take long: ≤ ") && warning.contains(" h "),
        "{warning}"
    );
    // A short sweep runs without it.
    let short = tmp.path().join("short.toml");
    std::fs::write(&short, digits_preset(20)).unwrap();
    let out = Command::new(BIN)
        .args(["sweep", &short.display().to_string(), "--runs-dir"])
        .arg(tmp.path().join("runs"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("may take long"), "{err}");
}

/// Any preset whose trial may run for 10 minutes or more says so before it starts,
/// from the same calibration GPU-scale presets use (`<runs-dir>/layout-calibration.json`), not
/// only sweeps of an hour. The calibration is measured once (`--dry-run`), then its step time
/// set to 0.5 s (a 1,000-layer MLP's on this machine): the bound is computed, not timed.
#[test]
fn a_sweep_whose_trial_takes_25_minutes_says_so_before_it_starts() {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let preset = tmp.path().join("slow.toml");
    std::fs::write(
        &preset,
        digits_preset(3000).replace("eval_every = 5", "eval_every = 1000"),
    )
    .unwrap();
    let runs = tmp.path().join("runs");
    let p = preset.display().to_string();
    let r = runs.display().to_string();
    let out = Command::new(BIN)
        .args(["sweep", &p, "--dry-run", "--runs-dir", &r])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let cache = runs.join("layout-calibration.json");
    let set_step_time = |s: f64| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
        let all = v.as_object_mut().unwrap();
        assert_eq!(all.len(), 1, "one workload calibrated: {all:?}");
        for c in all.values_mut() {
            c["one_trial"] = serde_json::json!([[8, s]]);
        }
        std::fs::write(&cache, v.to_string()).unwrap();
    };
    set_step_time(0.5);
    let mut child = Command::new(BIN)
        .args(["sweep", &p, "--runs-dir", &r])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let first = BufReader::new(stderr).lines().map_while(Result::ok).next();
    let _ = child.kill();
    let _ = child.wait();
    // 3000 steps × 0.5 s + 3 evaluations: 25 min 22 s, one trial, well under an hour
    let w = first.unwrap_or_default();
    assert!(
        w.starts_with("warning: this sweep may take long: ≤ 25 min ")
            && w.contains("(1 trial, 1 at once;")
            && w.contains("one trial alone up to 25 min "),
        "{w}"
    );
    // 0.1 s a step: a 5-minute trial starts without a word
    set_step_time(0.1);
    let out = Command::new(BIN)
        .args(["sweep", &p, "--runs-dir", &r])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("may take long"), "{err}");
}

/// A confirm plan that asks for more configurations than the search runs trials at a B says so
/// where the plan is set (the flag, or the preset's key, located), and runs; a default plan
/// nobody set says nothing.
#[test]
fn a_confirm_plan_larger_than_the_search_says_what_it_confirms() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .args(["--dry-run", "--runs-dir"])
            .arg(tmp.path().join("runs"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let stderr = run(&["sweep", "nqm-sgd", "--confirm", "10x2", "--trials", "4"]);
    assert!(
        stderr.contains(
            "warning: --confirm: 10x2 asks for the best 10 configurations per batch size, but \
             the search runs 4 trials at each: the stage confirms at most 4 (4x2 per batch size)"
        ),
        "{stderr}"
    );
    // the preset's own plan: located at its key
    let preset = tmp.path().join("ten.toml");
    let text = std::fs::read_to_string(common_root().join("presets/digits-mlp-sgd.toml"))
        .unwrap()
        .replace("confirm = \"1x10\"", "confirm = \"10x2\"")
        .replace("trials_per_batch = 24", "trials_per_batch = 4");
    std::fs::write(&preset, text).unwrap();
    let p = preset.display().to_string();
    let stderr = run(&["sweep", &p]);
    let line = stderr
        .lines()
        .find(|l| l.contains("asks for the best 10"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.starts_with(&format!("warning: {p}:")), "{line}");
    assert!(!line.contains("--confirm"), "{line}");
    // a plan within the search: nothing said
    assert!(!run(&["sweep", "nqm-sgd", "--confirm", "3x2", "--trials", "4"]).contains("asks for"));
    // the default plan where a preset runs fewer trials than it confirms: a default nobody chose
    let quiet = tmp.path().join("one.toml");
    std::fs::write(&quiet, digits_preset(100)).unwrap();
    assert!(!run(&["sweep", &quiet.display().to_string()]).contains("asks for"));
}

/// `sweep --resume LOG` restating the plan the log holds (`--confirm`, `--until`) is the same
/// sweep, not a change: accepted. (Another plan is refused: `every_bad_flag_is_one_clear_line`.)
#[test]
fn resume_accepts_the_confirm_plan_its_log_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let status = Command::new(BIN)
        .args(["sweep", "nqm-sgd", "--confirm", "1x4", "--until", "0.2"])
        .args(["--batch-sizes", "1024,4096", "--trials", "3", "--runs-dir"])
        .arg(&runs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let log = std::fs::read_dir(&runs)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    for extra in [
        &["--confirm", "1x4"][..],
        &["--until", "0.2"][..],
        &["--confirm", "1x4", "--until", "0.2"][..],
    ] {
        let out = Command::new(BIN)
            .args(["sweep", "--resume"])
            .arg(&log)
            .args(extra)
            .arg("--runs-dir")
            .arg(&runs)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for (extra, says, holds) in [
        (
            &["--confirm", "1x5"][..],
            "--confirm 1x5 cannot change",
            "1x4",
        ),
        (&["--until", "off"][..], "--until off cannot change", "0.2"),
    ] {
        let out = Command::new(BIN)
            .args(["sweep", "--resume"])
            .arg(&log)
            .args(extra)
            .arg("--runs-dir")
            .arg(&runs)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(says) && stderr.contains(holds), "{stderr}");
    }
}

fn common_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
