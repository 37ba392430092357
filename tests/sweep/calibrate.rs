//! The calibration stage end to end (docs/calibration.md): a study from a model and a dataset
//! alone runs its pilot rounds, logs the calibrated study and runs it; a log cut anywhere in the
//! calibration (or right after its line) resumes to the uninterrupted run's trials and report;
//! an edited pilot or calibrated line is warned about by `report` and refused by `--resume`; and
//! `--save-preset` writes a preset whose sweep re-runs the same search trials.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{find_log, BIN};

/// The minimal study: the digits MLP with momentum, nothing else given; one trial at a time
/// in fused groups of 4 (what resume must reproduce exactly), the confirm stage off (the search
/// after the calibration is what is checked here).
fn study_args(runs: &Path) -> Vec<String> {
    let mut v: Vec<String> = [
        "sweep",
        "--model",
        "mlp:hidden=[64]",
        "--dataset",
        "digits",
        "--optimizer",
        "momentum",
        "--concurrency",
        "1",
        "--fuse",
        "4",
        "--confirm",
        "off",
        "--runs-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(runs.display().to_string());
    v
}

fn lines(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect()
}

fn trial_ids(log: &Path) -> Vec<u64> {
    lines(log)
        .iter()
        .filter(|v| v["type"] == "trial")
        .filter_map(|v| v["trial_id"].as_u64())
        .collect()
}

fn calibrated(log: &Path) -> Option<serde_json::Value> {
    lines(log).into_iter().find(|v| v["type"] == "calibrated")
}

/// `report LOG --json` without what a rerun measures anew (the pilots' trial time too).
fn report(log: &Path) -> serde_json::Value {
    common::report_without_measured(log, &["pilot_trial_s", "share"])
}

fn resume(log: &Path, runs: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(["sweep", "--resume"])
        .arg(log)
        .arg("--runs-dir")
        .arg(runs)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs a sweep with `args` (its runs directory among them) and returns the log it wrote there.
fn sweep_log(runs: &Path, args: &[String]) -> PathBuf {
    common::run_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    find_log(runs).unwrap()
}

fn reference() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = sweep_log(dir.path(), &study_args(dir.path()));
    (dir, log)
}

#[test]
fn a_calibrated_study_cut_anywhere_resumes_to_the_uninterrupted_run() {
    let (_dir, log) = reference();
    let all = trial_ids(&log);
    let pilots = all.iter().filter(|&&id| id >= 10u64.pow(16)).count();
    assert!(pilots >= 8 + 4 + 4, "{pilots} pilot trials");
    let c = calibrated(&log).expect("the calibrated study's line");
    let sizes: Vec<u64> = c["batch_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert!(sizes.len() >= 5, "{sizes:?}");
    assert_eq!(all.len(), pilots + sizes.len() * 8);
    let reference = report(&log);
    // the report prices the stage: its pilots and their share of the run's trial time
    assert_eq!(
        reference["calibration"]["pilot_trials"].as_u64(),
        Some(pilots as u64),
        "{}",
        reference["calibration"]
    );
    let out = Command::new(BIN).arg("report").arg(&log).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let price = format!("calibration: {pilots} pilot trials, ");
    assert!(text.contains(&price), "{text}");
    let share: f64 = text
        .split(&price)
        .nth(1)
        .and_then(|t| t.split('(').nth(1))
        .and_then(|t| t.split(" %").next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no share in {text}"));
    assert!((0.0..=100.0).contains(&share), "{share}");
    let want: BTreeSet<u64> = all.iter().copied().collect();
    // the file's lines: header, pilots, the calibrated line, the study
    let text = std::fs::read_to_string(&log).unwrap();
    let raw: Vec<&str> = text.lines().collect();
    let at_calibrated = raw
        .iter()
        .position(|l| l.contains("\"type\":\"calibrated\""))
        .unwrap();
    assert_eq!(at_calibrated, pilots + 1);
    // cut after: the first pilot, inside the scan, after the scan, inside a ladder round, the
    // last pilot (the calibrated line not yet written), the calibrated line, one search trial
    let cuts = [
        1,
        5,
        8,
        10,
        pilots - 1,
        pilots,
        at_calibrated,
        at_calibrated + 3,
    ];
    for n in cuts {
        let dir = tempfile::tempdir().unwrap();
        let cut = dir.path().join("cut.jsonl");
        std::fs::write(&cut, raw[..=n].join("\n") + "\n").unwrap();
        let out = resume(&cut, dir.path());
        assert!(
            out.status.success(),
            "cut after line {n}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ids = trial_ids(&cut);
        let got: BTreeSet<u64> = ids.iter().copied().collect();
        assert_eq!(
            ids.len(),
            got.len(),
            "cut after line {n}: a trial logged twice"
        );
        assert_eq!(
            got, want,
            "cut after line {n}: not the uninterrupted run's trials"
        );
        assert_eq!(calibrated(&cut), Some(c.clone()), "cut after line {n}");
        let lines_calibrated = lines(&cut)
            .iter()
            .filter(|v| v["type"] == "calibrated")
            .count();
        assert_eq!(lines_calibrated, 1, "cut after line {n}: calibrated lines");
        assert!(
            report(&cut) == reference,
            "cut after line {n}: report differs"
        );
    }
}

/// Two trials at once, each alone: a pilot's learning rates run in waves of two (each wave cut at
/// the first reach of the waves before it), and the reading is the one a pilot run as one group
/// gives — the same calibrated study as `reference`'s one-at-a-time fused groups of 4.
#[test]
fn a_pilot_runs_in_waves_side_by_side_and_reads_the_same_study() {
    let (_dir, log) = reference();
    let dir = tempfile::tempdir().unwrap();
    let mut args = study_args(dir.path());
    for (flag, value) in [("--concurrency", "2"), ("--fuse", "off")] {
        let at = args.iter().position(|a| a == flag).unwrap();
        args[at + 1] = value.into();
    }
    let waves = sweep_log(dir.path(), &args);
    let (a, b) = (calibrated(&log).unwrap(), calibrated(&waves).unwrap());
    assert_eq!(a["batch_sizes"], b["batch_sizes"]);
    for key in [
        "target",
        "step_budget",
        "max_examples",
        "eval_every",
        "defaults",
    ] {
        assert_eq!(
            a["preset"]["workload"][key], b["preset"]["workload"][key],
            "{key}"
        );
    }
    assert_eq!(a["preset"]["search"], b["preset"]["search"]);
    let ids = |l: &Path| trial_ids(l).into_iter().collect::<BTreeSet<u64>>();
    assert_eq!(ids(&log), ids(&waves));
    // a ladder pilot's second wave starts once its first wave finished: each trial of a pilot
    // with a target is cut at the first reach of the lower waves, never at its own wave's
    let pilots: Vec<serde_json::Value> = lines(&waves)
        .into_iter()
        .filter(|v| v["type"] == "trial" && v["spec"]["calibrate"]["target"].is_number())
        .collect();
    assert!(pilots.len() >= 8, "{} ladder pilot trials", pilots.len());
    // side by side: some two trials of one pilot's wave ran at the same time
    let span = |v: &serde_json::Value| {
        let end = chrono::DateTime::parse_from_rfc3339(v["finished"].as_str().unwrap())
            .unwrap()
            .timestamp_micros() as f64
            / 1e6;
        (end - v["outcome"]["wall_s"].as_f64().unwrap(), end)
    };
    let key = |v: &serde_json::Value| {
        let m = &v["spec"]["calibrate"];
        let point = m["point"].as_u64().unwrap();
        (m["round"].as_u64().unwrap(), point / 1000, point % 1000 / 2)
    };
    let overlapping = pilots.iter().enumerate().any(|(i, a)| {
        pilots[i + 1..].iter().any(|b| {
            let ((a0, a1), (b0, b1)) = (span(a), span(b));
            key(a) == key(b) && a0 < b1 && b0 < a1
        })
    });
    assert!(overlapping, "no two trials of a pilot's wave ran at once");
    for p in &pilots {
        let m = &p["spec"]["calibrate"];
        let (round, point) = (m["round"].as_u64().unwrap(), m["point"].as_u64().unwrap());
        let lower_reach = pilots
            .iter()
            .filter(|q| {
                let n = &q["spec"]["calibrate"];
                n["round"].as_u64() == Some(round)
                    && n["point"].as_u64().unwrap() / 1000 == point / 1000
                    && n["point"].as_u64().unwrap() % 1000 / 2 < point % 1000 / 2
            })
            .filter(|q| q["outcome"]["outcome"]["status"] == "reached")
            .filter_map(|q| q["outcome"]["outcome"]["step"].as_u64())
            .min();
        if let Some(cap) = lower_reach {
            let steps = p["outcome"]["steps"].as_u64().unwrap();
            assert!(
                steps <= cap,
                "pilot {point} of round {round}: {steps} steps past the cap {cap}"
            );
        }
    }
}

#[test]
fn an_edited_pilot_is_warned_about_and_refused_on_resume() {
    let (_dir, log) = reference();
    let text = std::fs::read_to_string(&log).unwrap();
    let mut raw: Vec<String> = text.lines().map(str::to_string).collect();
    // the scan's third pilot with another learning rate
    let mut v: serde_json::Value = serde_json::from_str(&raw[3]).unwrap();
    let lr = v["spec"]["metaparams"]["learning_rate"].as_f64().unwrap();
    v["spec"]["metaparams"]["learning_rate"] = serde_json::json!(lr * 1.5);
    raw[3] = v.to_string();
    let dir = tempfile::tempdir().unwrap();
    let edited = dir.path().join("edited.jsonl");
    std::fs::write(&edited, raw[..6].join("\n") + "\n").unwrap();
    let out = Command::new(BIN)
        .arg("report")
        .arg(&edited)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(":4:") && err.contains("pilot"),
        "report says: {err}"
    );
    let out = resume(&edited, dir.path());
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pilot"), "{err}");
}

#[test]
fn a_saved_calibrated_study_re_runs_the_same_search() {
    let presets = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let mut args = study_args(runs.path());
    args.extend(["--save-preset".into(), "my-digits".into()]);
    let out = Command::new(BIN)
        .args(&args)
        .env("SCALING_LAB_USER_PRESETS_DIR", presets.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("saved the study as preset my-digits"), "{err}");
    let saved = presets.path().join("my-digits.toml");
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("learning_rate_at"), "{text}");
    let log = find_log(runs.path()).unwrap();
    // the saved preset, swept: no calibration, the same search trials (id, spec, outcome)
    let again = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "sweep",
            "my-digits",
            "--concurrency",
            "1",
            "--fuse",
            "4",
            "--runs-dir",
        ])
        .arg(again.path())
        .env("SCALING_LAB_USER_PRESETS_DIR", presets.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let search = |log: &Path| -> Vec<(u64, serde_json::Value, serde_json::Value)> {
        let mut v: Vec<_> = lines(log)
            .into_iter()
            .filter(|v| v["type"] == "trial" && v["trial_id"].as_u64().unwrap() < 10u64.pow(16))
            .map(|v| {
                let mut o = v["outcome"].clone();
                for k in ["wall_s", "throughput", "noise"] {
                    o.as_object_mut().unwrap().remove(k);
                }
                (v["trial_id"].as_u64().unwrap(), v["spec"].clone(), o)
            })
            .collect();
        v.sort_by_key(|x| x.0);
        v
    };
    let (a, b) = (search(&log), search(&find_log(again.path()).unwrap()));
    assert!(!a.is_empty());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "trial {} differs", x.0);
    }
    // saving under an existing name is refused, the file untouched
    let out = Command::new(BIN)
        .args(&args)
        .env("SCALING_LAB_USER_PRESETS_DIR", presets.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exists already"), "{err}");
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), text);
}

#[test]
fn a_study_the_lab_calibrates_is_refused_on_a_cluster_with_what_to_do() {
    let runs = tempfile::tempdir().unwrap();
    let mut args = study_args(runs.path());
    args.extend(["--slurm".into(), "--dry-run".into()]);
    let out = Command::new(BIN)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--calibrate-only") && err.contains("--save-preset"),
        "{err}"
    );
    assert!(find_log(runs.path()).is_none(), "nothing ran");
}

/// A calibrated study's log — its pilots with their marks, the calibrated line with the study's
/// size — validates line by line against the documented run-log schema (docs/runlog-schema.json,
/// schema 3).
#[test]
fn a_calibrated_log_validates_against_the_run_log_schema() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().display().to_string();
    common::run_ok(&[
        "sweep",
        "--model",
        "mlp:hidden=[64]",
        "--dataset",
        "digits",
        "--optimizer",
        "momentum",
        "--runs-dir",
        &runs,
    ]);
    let log = find_log(dir.path()).unwrap();
    let c = calibrated(&log).expect("the calibrated study's line");
    assert!(c["sizing"]["trials_per_batch"].as_u64().is_some(), "{c}");
    let all = lines(&log);
    assert_eq!(all[0]["schema"], 3);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::root().join("docs/runlog-schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    for (i, line) in all.iter().enumerate() {
        let errors: Vec<String> = v
            .iter_errors(line)
            .map(|e| format!("at {}: {e}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "line {}: {}", i + 1, errors.join("\n"));
    }
}
