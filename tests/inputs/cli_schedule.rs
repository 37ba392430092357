//! A batch-size schedule through the binary: `train --batch-schedule` (a real digits training that
//! switches twice, on 2 workers; the switch steps are the first evaluations meeting each
//! threshold; examples Σ steps × B), every bad schedule one usage error naming the flag (exit 2),
//! `--from LOG` (η from the log, the comparison beside the log's best fixed B, text and JSON), and
//! `auto` on a ladder log swept in the test.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{only_log, run_ok as run, BIN};

fn fails(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Runs and returns (stdout, stderr), panicking unless it exits 0.
fn run2(args: &[&str]) -> (String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "{args:?}\n{o}\n{e}");
    (o, e)
}

/// Checks a scheduled trial's record against its own evaluations: stage k ≥ 1 starts at the
/// first evaluation after stage k−1 began whose metric meets its threshold; the stages' steps
/// add up; examples to the target are Σ steps × B. Returns the switch steps.
fn check_stages(out: &serde_json::Value, v: &serde_json::Value) -> Vec<u64> {
    let stages = out["stages"].as_array().expect("stages");
    let evals: Vec<(u64, f64)> = out["evals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["step"].as_u64().unwrap(), e["metric"].as_f64().unwrap()))
        .collect();
    let mut switches = Vec::new();
    let mut sum_steps = 0;
    let mut examples = 0;
    let reached = out["outcome"]["step"].as_u64().unwrap();
    for (k, s) in stages.iter().enumerate() {
        let start = s["start_step"].as_u64().unwrap();
        let b = s["batch_size"].as_u64().unwrap();
        let steps = s["steps"].as_u64().unwrap();
        sum_steps += steps;
        examples += steps * b;
        if k == 0 {
            assert_eq!(start, 0);
            continue;
        }
        let from = s["from"].as_f64().unwrap();
        let prev = stages[k - 1]["start_step"].as_u64().unwrap();
        let first = evals
            .iter()
            .find(|(st, m)| *st > prev && *m <= from)
            .expect("an evaluation met the threshold");
        assert_eq!(
            first.0, start,
            "stage {k} starts at the first evaluation meeting {from}"
        );
        assert_eq!(s["start_metric"].as_f64().unwrap(), first.1);
        switches.push(start);
    }
    assert_eq!(
        sum_steps, reached,
        "the stages' steps add up to the trial's"
    );
    assert_eq!(v["examples_to_target"].as_u64().unwrap(), examples);
    switches
}

#[test]
fn a_scheduled_digits_trial_switches_twice_on_two_workers() {
    let args = [
        "train",
        "--preset",
        "digits-mlp-sgd",
        "--batch-schedule",
        "16,0.2:64,0.08:256",
        "--workers",
        "2",
        "--seed",
        "3",
        "--json",
    ];
    let v: serde_json::Value = serde_json::from_str(&run(&args)).unwrap();
    let out = &v["outcome"];
    assert_eq!(out["outcome"]["status"], "reached", "{v}");
    assert_eq!(v["spec"]["devices"]["workers"], 2);
    assert_eq!(
        v["spec"]["batch_size"], 16,
        "the trial starts at the first stage"
    );
    let switches = check_stages(out, &v);
    assert_eq!(switches.len(), 2, "{v}");
    let bs: Vec<u64> = out["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["batch_size"].as_u64().unwrap())
        .collect();
    assert_eq!(bs, [16, 64, 256]);
    // η per stage: the preset's sqrt rule from 0.3 at B = 64
    let lrs: Vec<f64> = out["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["learning_rate"].as_f64().unwrap())
        .collect();
    for (lr, want) in lrs.iter().zip([0.15, 0.3, 0.6]) {
        assert!((lr - want).abs() < 1e-12, "{lrs:?}");
    }
    // the data order and the switches are deterministic in the seed
    let again: serde_json::Value = serde_json::from_str(&run(&args)).unwrap();
    assert_eq!(again["outcome"]["stages"], out["stages"]);
    assert_eq!(again["outcome"]["evals"], out["evals"]);
    // the text form says the stages and the examples
    let text = run(&args[..args.len() - 1]);
    assert!(text.contains("stages: B 16"), "{text}");
    assert!(text.contains("examples to target"), "{text}");
}

#[test]
fn every_bad_schedule_is_one_usage_error_naming_the_flag() {
    let base = ["train", "--preset", "digits-mlp-sgd", "--workers", "2"];
    for (extra, needle) in [
        (
            &["--batch-schedule", "64,0.2:32"][..],
            "batch sizes must increase",
        ),
        (
            &["--batch-schedule", "16,0.1:64,0.2:256"],
            "thresholds must decrease",
        ),
        (
            &["--batch-schedule", "16,0.2:63"],
            "not divisible by 2 workers",
        ),
        (
            &["--batch-schedule", "16,1.5:64"],
            "out of range for val_error",
        ),
        (
            &["--batch-schedule", "16,0.03:64"],
            "not looser than the target",
        ),
        (
            &["--batch-schedule", "16,0.2:4096"],
            "larger than the training set",
        ),
        (&["--batch-schedule", "auto"], "auto needs --from"),
        (
            &["--batch-schedule", "16,0.2:64", "--batch-size", "32"],
            "cannot be used with",
        ),
        (&["--batch-schedule", "16,x:64"], "not a number"),
        (
            &[
                "--batch-schedule",
                "16,0.2:64",
                "--from",
                "/nonexistent.jsonl",
            ],
            "--from",
        ),
    ] {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        let (code, err) = fails(&a);
        assert_eq!(code, 2, "{a:?}: {err}");
        assert!(err.contains(needle), "{a:?}: {err}");
        assert!(
            err.contains("--batch-schedule") || err.contains("--from"),
            "{a:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{a:?}: {err}");
    }
}

/// A ladder sweep of digits-mlp-sgd (10 B × 24 trials, the default plan, 4 rungs; ~6 s). With
/// the censoring-aware intervals, 10 trials per B leave every rung's B_crit uncertain,
/// and `auto` rightly refuses; the default plan gives certain B_crit at 0.12 and 0.08.
fn ladder_log(dir: &Path) -> PathBuf {
    run(&[
        "sweep",
        "digits-mlp-sgd",
        "--targets",
        "0.3,0.2,0.12,0.08",
        "--trials",
        "24",
        "--runs-dir",
        &dir.display().to_string(),
    ]);
    only_log(dir)
}

#[test]
fn from_a_log_the_schedule_is_compared_with_the_best_fixed_b_and_auto_reads_b_crit() {
    let dir = tempfile::tempdir().unwrap();
    let log = ladder_log(dir.path());
    let log = log.display().to_string();

    // explicit schedule, η from the log; the comparison in JSON
    let (o, e) = run2(&[
        "train",
        "--preset",
        "digits-mlp-sgd",
        "--batch-schedule",
        "16,0.2:64,0.12:256",
        "--from",
        &log,
        "--repeats",
        "2",
        "--json",
    ]);
    let c: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(c["target"], 0.08, "no --target: the log's goal");
    let s = &c["scheduled"];
    let f = &c["fixed"];
    assert_eq!(s["runs"].as_array().unwrap().len(), 2);
    assert_eq!(f["runs"].as_array().unwrap().len(), 2);
    for (i, side) in [s, f].iter().enumerate() {
        let seeds: Vec<u64> = side["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["seed"].as_u64().unwrap())
            .collect();
        assert_eq!(seeds, [0, 1], "side {i}: the same seeds");
    }
    // the fixed side re-runs the log's best trial at the target: fewest steps there
    let fixed_b = c["fixed_batch_size"].as_u64().unwrap();
    for r in f["runs"].as_array().unwrap() {
        if let Some(st) = r["steps"].as_u64() {
            assert_eq!(r["examples"].as_u64().unwrap(), st * fixed_b);
        }
    }
    // η of each stage is a measured best η of the log (stage 1 ends at 0.2, at B = 16)
    assert!(e.contains("stage 1: B = 16, η = "), "{e}");
    assert!(e.contains("(best at B = 16 to 0.2)"), "{e}");
    // "loses" lines follow the medians
    let med = |side: &serde_json::Value, k: &str| side[k]["median"].as_f64();
    let loses: Vec<String> = c["loses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    for (k, word) in [
        ("steps", "steps-to-target"),
        ("examples", "examples-to-target"),
    ] {
        if let (Some(a), Some(b)) = (med(s, k), med(f, k)) {
            assert_eq!(
                loses
                    .iter()
                    .any(|l| l.contains(&format!("loses on {word}"))),
                a > b,
                "{k}: {a} vs {b}: {loses:?}"
            );
        }
    }
    // the text form
    let text = run(&[
        "train",
        "--preset",
        "digits-mlp-sgd",
        "--batch-schedule",
        "16,0.2:64,0.12:256",
        "--from",
        &log,
        "--repeats",
        "1",
    ]);
    assert!(
        text.contains("Batch-size schedule vs the best fixed B"),
        "{text}"
    );
    assert!(
        text.contains("steps-to-target") && text.contains("examples-to-target"),
        "{text}"
    );
    assert!(text.contains("rule: η per stage"), "{text}");

    // auto: the rungs of the ladder; uncertain rungs skipped, said so; stages at measured B
    let (o, e) = run2(&[
        "train",
        "--preset",
        "digits-mlp-sgd",
        "--batch-schedule",
        "auto",
        "--from",
        &log,
        "--repeats",
        "1",
        "--json",
    ]);
    let c: serde_json::Value = serde_json::from_str(&o).unwrap();
    let measured = [2u64, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
    let stages = c["schedule"]["stages"].as_array().unwrap();
    assert!(!stages.is_empty());
    let mut last = 0;
    for st in stages {
        let b = st["batch_size"].as_u64().unwrap();
        assert!(measured.contains(&b) && b > last, "{stages:?}");
        last = b;
    }
    let notes: Vec<&str> = c["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        notes.iter().filter(|n| n.starts_with("rung ")).count(),
        4,
        "every rung is accounted for: {notes:?}"
    );
    // this log's B_crit does not grow (no trend): the warning, and the run goes on
    if c["warning"].is_string() {
        assert!(
            e.contains("warning: the log gives no reason for a schedule"),
            "{e}"
        );
    }

    // a log of another workload is refused
    let (code, err) = fails(&[
        "train",
        "--preset",
        "digits-mlp-momentum",
        "--batch-schedule",
        "auto",
        "--from",
        &log,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("another workload") && err.contains("optimizer"),
        "{err}"
    );
    // a target stricter than the log's goal is not measured there
    let (code, err) = fails(&[
        "train",
        "--preset",
        "digits-mlp-sgd",
        "--batch-schedule",
        "auto",
        "--from",
        &log,
        "--target",
        "0.04",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("stricter than the log's goal"), "{err}");
}
