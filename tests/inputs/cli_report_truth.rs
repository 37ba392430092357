//! What the report, the exports and `compare` say is true, through the binary, piped: nothing
//! read from a curve below the evidence rule (one line says what is missing, the JSON marks the
//! withheld fields), both S(B) series named apart in the exports, every compared number with its
//! interval and every run name in full, at most one headless line per finished trial, and a JSON
//! export given as a run log named as such.

use std::process::Command;

use crate::common::{only_log, root, run_ok as run, BIN};

/// `scaling-lab ARGS` that must fail: (exit code, stderr).
fn fails(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(code != 0 && code != 101, "{args:?}: exit {code}");
    (code, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A digits sweep of two search trials a batch size (no confirm stage) is below the evidence
/// rule: the report prints the per-B table and one line saying what is missing — no B_crit, no
/// regimes, no η exponent, no projection table — and its JSON names the withheld fields (and
/// validates against the schema).
#[test]
fn too_little_evidence_withholds_the_curve() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().display().to_string();
    let sweep = run(&[
        "sweep",
        "digits-mlp-sgd",
        "--batch-sizes",
        "8,32,128,512",
        "--trials",
        "2",
        "--confirm",
        "off",
        "--runs-dir",
        &runs,
    ]);
    let log = only_log(dir.path()).display().to_string();
    for text in [sweep, run(&["report", &log])] {
        let line = text
            .lines()
            .find(|l| l.starts_with("withheld (too little evidence)"))
            .unwrap_or_else(|| panic!("no withheld line:\n{text}"));
        assert!(
            line.contains("≥ 3 batch sizes from ≥ 3 finished trials each; this run has 0")
                && line.contains("fewer trials at B = 8: 2 trials, 32: 2, 128: 2, 512: 2"),
            "{line}"
        );
        for absent in [
            "B_crit =",
            "regimes (ordered",
            "best η ∝",
            "time-to-target vs devices",
            "ratio",
            "×ideal",
        ] {
            assert!(!text.contains(absent), "{absent:?} printed:\n{text}");
        }
        assert!(
            text.contains("time-to-target projection: withheld"),
            "{text}"
        );
    }
    let json: serde_json::Value = serde_json::from_str(&run(&["report", &log, "--json"])).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/report-schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let e = &json["evidence"];
    assert_eq!(e["min_batch_sizes"], 3);
    assert_eq!(e["min_trials"], 3);
    let withheld: Vec<&str> = e["withheld"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(
        withheld,
        [
            "fit",
            "regimes",
            "lr_exponent",
            "projections",
            "perfect_anchor"
        ]
    );
    for field in withheld {
        let f = &json[field];
        assert!(
            f.is_null() || f.as_array().is_some_and(|a| a.is_empty()),
            "{field}: {f}"
        );
    }
}

/// The points CSV and the JSON export name both series apart: `steps` is S(B) as the fit and the
/// chart read it (the confirmed seed median once the confirm stage ran), the best trial
/// `best_trial_steps` beside it; the export's `readout` says which.
#[test]
fn exports_name_both_series() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().display().to_string();
    run(&[
        "sweep",
        "digits-mlp-sgd",
        "--batch-sizes",
        "16,64,256",
        "--trials",
        "4",
        "--confirm",
        "1x4",
        "--runs-dir",
        &runs,
    ]);
    let log = only_log(dir.path()).display().to_string();
    let csv = dir.path().join("points.csv");
    let json = dir.path().join("export.json");
    run(&[
        "export",
        &log,
        "--csv",
        &csv.display().to_string(),
        "--json",
        &json.display().to_string(),
    ]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|c| *c == name).unwrap();
    let export: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let readout = export["analysis"]["readout"].as_str().unwrap().to_string();
    let rows = export["analysis"]["per_batch"].as_array().unwrap();
    for (line, p) in lines.zip(rows) {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f[col("readout")], readout);
        let (steps, best, confirmed) = (
            f[col("steps")],
            f[col("best_trial_steps")],
            f[col("confirmed_steps")],
        );
        // `steps` is the readout's series, in the CSV and in the JSON
        let want = if readout == "confirmed" {
            confirmed
        } else {
            best
        };
        assert_eq!(steps, want, "{line}");
        assert_eq!(
            p["steps"]
                .as_u64()
                .map(|s| s.to_string())
                .unwrap_or_default(),
            steps
        );
        assert_eq!(
            p["best_trial_steps"]
                .as_u64()
                .map(|s| s.to_string())
                .unwrap_or_default(),
            best
        );
        assert_eq!(
            p["confirmed"]["steps"]
                .as_u64()
                .map(|s| s.to_string())
                .unwrap_or_default(),
            confirmed
        );
    }
    assert_eq!(readout, "confirmed", "the confirm stage finished: {export}");
}

/// `compare` shows S_min, B_crit and S(B) with their 95 % intervals (as `report` does) and every
/// run name in full, piped; `--json` carries the same intervals.
#[test]
fn compare_carries_the_intervals_and_whole_names() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a-run-log-with-a-name-much-longer-than-any-column-would-hold";
    let mut logs = Vec::new();
    for (i, f) in ["nqm-sgd.jsonl", "nqm-momentum.jsonl"].iter().enumerate() {
        let p = dir.path().join(format!("{long}-{i}.jsonl"));
        std::fs::copy(root().join("tests/fixtures/valid").join(f), &p).unwrap();
        logs.push(p.display().to_string());
    }
    let text = run(&["compare", &logs[0], &logs[1]]);
    for i in 0..2 {
        assert!(
            text.contains(&format!("#{} {long}-{i}.jsonl (", i + 1)),
            "{text}"
        );
    }
    // each run's fit as `report` prints it: "B_crit = 59.6 (… B_crit 5.45–2.56e5)"
    for log in &logs {
        let report = run(&["report", log]);
        let fit = report.lines().find(|l| l.starts_with("fit S")).unwrap();
        let b_crit = fit
            .split("B_crit = ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        let ci = fit
            .split("B_crit ")
            .nth(2)
            .unwrap()
            .split(')')
            .next()
            .unwrap();
        let cell = format!("{b_crit} [{ci}]");
        assert!(text.contains(&cell), "{cell:?} not in\n{text}");
    }
    // S(B) at B = 1 with its interval, as the report's table has it
    let report = run(&["report", &logs[0]]);
    let row: Vec<&str> = report
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(
        text.contains(&format!("{} {}", row[1], row[2])),
        "{row:?}\n{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&run(&["compare", &logs[0], &logs[1], "--json"])).unwrap();
    let r = &json["runs"][0];
    assert_eq!(r["label"], format!("{long}-0.jsonl"));
    assert_eq!(r["fit"]["b_crit_ci"].as_array().unwrap().len(), 2);
    assert!(r["per_batch"][0]["steps_ci"].is_array(), "{r}");
    assert_eq!(r["evidence"]["withheld"].as_array().unwrap().len(), 0);
}

/// A headless sweep without a terminal prints at most one line per finished trial; trials
/// stopped early get no line each but one summary with their count per B.
#[test]
fn headless_lines_are_one_per_trial_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().display().to_string();
    let out = run(&[
        "sweep",
        "digits-mlp-sgd",
        "--batch-sizes",
        "8,64",
        "--trials",
        "12",
        "--confirm",
        "off",
        "--runs-dir",
        &runs,
    ]);
    let progress = out.split("\nsweep digits-mlp-sgd (").next().unwrap();
    let trial_lines = progress.lines().filter(|l| l.starts_with('[')).count();
    assert!(
        !progress.contains("stopped early at step"),
        "an early stop has a line of its own:\n{progress}"
    );
    let summary = progress
        .lines()
        .find(|l| l.contains("stopped early at their B's best step count"))
        .unwrap_or_else(|| panic!("no early-stop summary:\n{progress}"));
    let early: usize = summary.split_whitespace().next().unwrap().parse().unwrap();
    assert!(
        early > 0 && summary.contains("B=8: ") && summary.contains("B=64: "),
        "{summary}"
    );
    assert_eq!(trial_lines + early, 24, "{progress}");
    // nothing else per trial: the plan, the trial lines, the summary (and the estimate's lines)
    assert!(progress.lines().count() <= trial_lines + 5, "{progress}");
}

/// The lab's own JSON export (and a `report --json`) given where a run log belongs: one located
/// line that says what the file is and which log to give instead.
#[test]
fn a_json_export_is_not_a_run_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = root().join("tests/fixtures/valid/nqm-sgd.jsonl");
    let export = dir.path().join("a.json");
    run(&[
        "export",
        &log.display().to_string(),
        "--json",
        &export.display().to_string(),
    ]);
    let (_, err) = fails(&["report", &export.display().to_string()]);
    assert!(
        err.contains("a.json: a JSON export (`scaling-lab export --json`), not a run log")
            && err.contains("nqm-sgd.jsonl")
            && !err.contains("EOF"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let report = dir.path().join("r.json");
    std::fs::write(
        &report,
        run(&["report", &log.display().to_string(), "--json"]),
    )
    .unwrap();
    for cmd in ["report", "export"] {
        let mut args = vec![cmd, report.to_str().unwrap()];
        if cmd == "export" {
            args.extend(["--csv", "/dev/null"]);
        }
        let (_, err) = fails(&args);
        assert!(
            err.contains("r.json: a report (`scaling-lab report --json`), not a run log"),
            "{err}"
        );
    }
}
