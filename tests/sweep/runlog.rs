//! Run logs: schema validation of real writer output, malformed-log fixtures, tailing, export,
//! compare, the report, and the batch_science import.

use crate::common;

use std::path::{Path, PathBuf};

use scaling_lab::core::record::LogLine;
use scaling_lab::report::compare::{compare, render_compare};
use scaling_lab::report::export::{
    export_json, metaparam_svg, points_csv, svg_for_log, trials_csv,
};
use scaling_lab::report::Report;
use scaling_lab::runlog::batch_science::{import_batch_science, save_import};
use scaling_lab::runlog::{read_run_log, RunLogError, RunLogTail};
use scaling_lab::workload::spec::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Runs the small NQM sweep the fixtures come from and returns its log path.
fn sweep(dir: &Path, opt: OptimizerKind) -> PathBuf {
    common::fixture_sweep(dir, opt)
}

#[test]
fn writer_output_validates_against_the_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/runlog-schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let dir = tempfile::tempdir().unwrap();
    let path = sweep(dir.path(), OptimizerKind::Momentum);
    let imported = import_batch_science(
        &fixtures().join("batch_science/mnist/simple_cnn_base/momentum"),
        "val/classification_error",
        0.01,
    )
    .unwrap();
    let imp_path = save_import(&imported, &dir.path().join("imported.jsonl")).unwrap();
    for p in [path, imp_path] {
        let text = std::fs::read_to_string(&p).unwrap();
        let mut kinds = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&v)
                .map(|e| {
                    format!(
                        "at {}: {}",
                        e.instance_path,
                        e.to_string()
                            .chars()
                            .rev()
                            .take(200)
                            .collect::<String>()
                            .chars()
                            .rev()
                            .collect::<String>()
                    )
                })
                .collect();
            assert!(errors.is_empty(), "{}:{}: {errors:?}", p.display(), i + 1);
            kinds.push(v["type"].as_str().unwrap().to_string());
        }
        assert_eq!(kinds.first().map(String::as_str), Some("header"));
        assert_eq!(kinds.last().map(String::as_str), Some("summary"));
        assert!(kinds.iter().any(|k| k == "trial"));
    }
    // The schema is not vacuous: a trial with an unknown outcome fails.
    let bad = serde_json::json!({"type": "trial", "trial_id": 0, "spec": {}, "outcome": {}, "finished": ""});
    assert!(!validator.is_valid(&bad));
    let bad_header = serde_json::json!({"type": "header", "schema": 2});
    assert!(!validator.is_valid(&bad_header));
}

#[test]
fn invalid_logs_give_one_clear_error_each() {
    let dir = fixtures().join("invalid");
    let cases = [
        (
            "unknown-schema.jsonl",
            1,
            "unknown run-log schema version 99",
        ),
        ("garbage-line.jsonl", 3, "not valid JSON"),
        ("torn-middle.jsonl", 2, "not valid JSON"),
        ("no-header.jsonl", 1, "must be the run-log header"),
        ("bad-trial.jsonl", 2, "trial line does not match schema"),
        ("second-header.jsonl", 3, "second header"),
        ("unknown-type.jsonl", 2, "unknown line type"),
    ];
    for (name, line, needle) in cases {
        let p = dir.join(name);
        let e = read_run_log(&p).expect_err(name);
        let msg = e.to_string();
        assert_eq!(e.line(), Some(line), "{name}: {msg}");
        assert!(msg.contains(needle), "{name}: {msg}");
        assert!(msg.contains(&format!("{name}:{line}:")), "{name}: {msg}");
    }
    let e = read_run_log(&dir.join("empty.jsonl")).unwrap_err();
    assert!(matches!(e, RunLogError::Empty { .. }), "{e}");
    let e = read_run_log(&dir.join("does-not-exist.jsonl")).unwrap_err();
    assert!(e.to_string().contains("does-not-exist.jsonl"), "{e}");
}

#[test]
fn torn_last_line_is_a_warning() {
    let log = read_run_log(&fixtures().join("valid/torn-tail.jsonl")).unwrap();
    assert_eq!(log.warnings.len(), 1);
    assert!(log.warnings[0].contains("torn"), "{:?}", log.warnings);
    assert_eq!(log.status(), scaling_lab::runlog::LogStatus::Unfinished);
    let full = read_run_log(&fixtures().join("valid/nqm-sgd.jsonl")).unwrap();
    assert_eq!(full.status(), scaling_lab::runlog::LogStatus::Complete);
    assert_eq!(log.trials.len() + 1, full.trials.len());
}

#[test]
fn tail_follows_a_growing_log() {
    let src = std::fs::read(fixtures().join("valid/nqm-sgd.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("grow.jsonl");
    let cut = src.iter().position(|&c| c == b'\n').unwrap() + 1;
    // Header plus half of the next line.
    std::fs::write(&p, &src[..cut + 30]).unwrap();
    let mut tail = RunLogTail::new(&p);
    let first = tail.poll().unwrap();
    assert_eq!(first.len(), 1);
    assert!(matches!(first[0], LogLine::Header(_)));
    assert_eq!(tail.offset(), cut as u64);
    std::fs::write(&p, &src).unwrap();
    let rest = tail.poll().unwrap();
    let n_lines = src.iter().filter(|&&c| c == b'\n').count();
    assert_eq!(rest.len(), n_lines - 1);
    assert!(matches!(rest.last(), Some(LogLine::Summary(_))));
    assert!(tail.poll().unwrap().is_empty());
}

#[test]
fn export_report_and_compare() {
    let sgd = read_run_log(&fixtures().join("valid/nqm-sgd.jsonl")).unwrap();
    let mom = read_run_log(&fixtures().join("valid/nqm-momentum.jsonl")).unwrap();
    let a = sgd.analysis();
    let csv = points_csv(&a);
    assert_eq!(csv.lines().count(), 1 + a.per_batch.len());
    assert!(csv.starts_with("batch_size,steps,"));
    let tcsv = trials_csv(&sgd.trials);
    assert_eq!(tcsv.lines().count(), 1 + sgd.trials.len());
    let svg = svg_for_log(&sgd, &a).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("perfect scaling") && svg.contains("B_crit"));
    let json = export_json(&sgd, &a);
    assert_eq!(json["trials"].as_array().unwrap().len(), sgd.trials.len());
    // The intervals travel in CSV, JSON and SVG.
    let header = csv.lines().next().unwrap();
    for col in [
        "steps_lo",
        "steps_hi",
        "best_trial_steps",
        "best_trial_lo",
        "best_trial_hi",
        "at_search_edge",
        "repeat_median",
        "regime",
    ] {
        assert!(header.split(',').any(|c| c == col), "{header}");
    }
    let pb = json["analysis"]["per_batch"].as_array().unwrap();
    for p in pb.iter().filter(|p| p["steps"].is_u64()) {
        let (s, ci) = (
            p["steps"].as_u64().unwrap(),
            p["steps_ci"].as_array().unwrap(),
        );
        assert!(
            ci[0].as_u64().unwrap() <= s && s <= ci[1].as_u64().unwrap(),
            "{p}"
        );
        assert!(p["at_search_edge"].is_boolean());
    }
    let regimes = json["analysis"]["regimes"].as_array().unwrap();
    let order: Vec<&str> = regimes
        .iter()
        .map(|r| r["regime"].as_str().unwrap())
        .collect();
    let rank = |r: &str| {
        ["perfect", "diminishing", "maximal"]
            .iter()
            .position(|x| *x == r)
    };
    assert!(
        order.windows(2).all(|w| rank(w[0]) < rank(w[1])),
        "{order:?}"
    );
    assert!(json["analysis"]["fit"]["b_crit_ci"].is_array());
    // The metaparameter picture: one panel per batch size, marks for best and diverged trials.
    for log in [&sgd, &mom] {
        let m = metaparam_svg(log, &log.analysis()).unwrap();
        assert!(m.starts_with("<svg") && m.contains("★"));
        for p in &log.analysis().per_batch {
            assert!(
                m.contains(&format!("B = {}:", p.batch_size)),
                "B = {}",
                p.batch_size
            );
        }
    }
    assert!(metaparam_svg(&mom, &mom.analysis())
        .unwrap()
        .contains("1 − γ"));

    let report = Report::from_log(&sgd, 1024).main_text();
    assert!(!report.contains('\u{1b}'), "no colour codes");
    for needle in [
        "sweep nqm-sgd",
        "B_crit",
        "regimes",
        "noise scale",
        "best η ∝ B^",
    ] {
        assert!(report.contains(needle), "missing {needle}:\n{report}");
    }
    for p in &a.per_batch {
        assert!(report
            .lines()
            .any(|l| l.trim_start().starts_with(&p.batch_size.to_string())));
    }

    let c = compare(&[sgd.clone(), mom]);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let text = render_compare(&c);
    assert!(text.contains("sgd") && text.contains("momentum"), "{text}");
    // A different target is flagged.
    let mut other = sgd.clone();
    other.header.preset.workload.target.value = 0.5;
    let c = compare(&[sgd, other]);
    assert!(
        c.warnings.iter().any(|w| w.contains("different targets")),
        "{:?}",
        c.warnings
    );
}

#[test]
fn batch_science_import() {
    let dir = fixtures().join("batch_science/mnist/simple_cnn_base/momentum");
    let log = import_batch_science(&dir, "val/classification_error", 0.01).unwrap();
    assert_eq!(log.header.source, "batch-science-import");
    assert_eq!(log.header.batch_sizes, vec![16, 64, 256]);
    assert_eq!(
        log.header.preset.workload.optimizer,
        OptimizerKind::Momentum
    );
    assert_eq!(log.header.import.as_ref().unwrap().ignored_incomplete, 1);
    assert_eq!(log.trials.len(), 8);
    let a = log.analysis();
    let p16 = &a.per_batch[0];
    assert_eq!(
        (
            p16.steps,
            p16.counts.reached,
            p16.counts.not_reached,
            p16.counts.diverged
        ),
        (Some(300), 1, 1, 1)
    );
    let p64 = &a.per_batch[1];
    assert_eq!(
        (p64.steps, p64.counts.reached, p64.counts.diverged),
        (Some(220), 2, 1)
    );
    assert_eq!(p64.best_lr, Some(0.2));
    let p256 = &a.per_batch[2];
    assert_eq!((p256.steps, p256.counts.not_reached), (None, 2));
    // The evaluation curve comes from the val column.
    assert_eq!(log.trials[0].outcome.evals.len(), 5);
    // Cross-entropy is converted from nats to bits.
    let ce = import_batch_science(&dir, "val/cross_entropy_error", 0.02).unwrap();
    assert_eq!(ce.header.preset.workload.target.metric, Metric::ValBpc);
    assert!((ce.header.preset.workload.target.value - 0.02 / std::f64::consts::LN_2).abs() < 1e-12);
    // Errors name the file.
    let e = import_batch_science(&dir, "val/average_precision", 0.5).unwrap_err();
    assert!(e.to_string().contains("maximised"));
    let e = import_batch_science(&dir, "val/nope_classification_error", 0.5).unwrap_err();
    assert!(
        e.to_string()
            .contains("measurements.csv:1: no column `val/nope_classification_error`"),
        "{e}"
    );
    let e = import_batch_science(&fixtures().join("invalid"), "val/classification_error", 0.1)
        .unwrap_err();
    assert!(e.to_string().contains("no <batch_size>/study.json"), "{e}");
    // Saved, it reads back as a complete log that cannot be resumed.
    let tmp = tempfile::tempdir().unwrap();
    let p = save_import(&log, &tmp.path().join("imp.jsonl")).unwrap();
    let back = read_run_log(&p).unwrap();
    assert_eq!(back.trials, log.trials);
    assert_eq!(back.status(), scaling_lab::runlog::LogStatus::Complete);
}
