//! Every registered family (`model::FAMILIES`) held to what a sweep needs of it, at its smallest
//! size on bundled data of its kind (`common::family_workload`), through the runner a sweep takes
//! for it (the Burn trainer, or the closed-form noisy quadratic model):
//! * saved and resumed: a sweep cut after its first trial record (as a kill leaves it) resumes
//!   to the uninterrupted sweep's trials, bit for bit, its model reads back from the log's header
//!   as the one it was written with, and every line of both logs is valid against the documented
//!   schema (`docs/runlog-schema.json`);
//! * its 2-core default (what Setup and `--model` start from) is the model of a bundled preset
//!   of that family, on that preset's data.
//!
//! (Fused groups of every family: `group.rs`; every family's kernels against Burn's ops and its
//! knobs: `model::family::tests`; on wgpu: the gpu tier.) A family added to the registry is
//! tested here without a new test.

use crate::common;

use std::path::Path;

use scaling_lab::core::record::TrialRecord;
use scaling_lab::model::FAMILIES;
use scaling_lab::runlog::read_run_log;
use scaling_lab::sweep::SweepConfig;
use scaling_lab::train::TrainOptions;
use scaling_lab::workload::spec::*;

/// A sweep of `w`: batch sizes 8 and 16, two trials each, one at a time, each alone.
fn config(kind: &str, w: Workload, runs: &Path) -> SweepConfig {
    let preset = Preset {
        name: format!("family-{kind}"),
        description: format!("the {kind} family at its smallest size"),
        workload: w,
        search: SearchSpace {
            learning_rate: [1e-3, 0.1],
            ..SearchSpace::default()
        },
        sweep: SweepDefaults {
            batch_sizes: vec![8, 16],
            trials_per_batch: 2,
            early_stopping: false,
            fuse: Fuse::Off,
            ..SweepDefaults::default()
        },
        calibrate: None,
    };
    SweepConfig {
        seed: 5,
        ..common::sweep_config(preset, runs)
    }
}

/// Trial records by id: what a rerun must reproduce (the outcome, steps, evaluations, noise
/// scale and readouts; not the timings).
fn by_id(records: &[TrialRecord]) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = records
        .iter()
        .map(|r| {
            let o = &r.outcome;
            let key = serde_json::json!({
                "spec": r.spec,
                "outcome": o.outcome,
                "steps": o.steps,
                "skipped": o.skipped_steps,
                "evals": o.evals,
                "reason": o.reason,
            });
            (r.trial_id, key.to_string())
        })
        .collect();
    v.sort();
    v
}

/// Every line of the log at `path` against `docs/runlog-schema.json`.
fn assert_schema_valid(kind: &str, path: &Path) {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::root().join("docs/runlog-schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let text = std::fs::read_to_string(path).unwrap();
    for (i, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&v)
            .map(|e| format!("at {}: {}", e.instance_path, e))
            .collect();
        assert!(errors.is_empty(), "{kind}: line {}: {errors:?}", i + 1);
    }
}

#[test]
fn every_family_resumes_a_cut_sweep_to_the_uninterrupted_one() {
    for family in FAMILIES {
        let kind = family.kind;
        let w = common::family_workload(family);
        let runner = scaling_lab::sweep::runners::runner_for(&w, &TrainOptions::default()).unwrap();
        let full_dir = tempfile::tempdir().unwrap();
        let cfg = config(kind, w.clone(), full_dir.path());
        let (full, _) = common::run_sweep(cfg, runner.clone(), None);
        let full_log = read_run_log(&full.log_path).unwrap();
        assert_eq!(full_log.trials.len(), 4, "{kind}");
        assert_eq!(full_log.header.preset.workload.model, w.model, "{kind}");

        // the log as a kill right after its first trial record leaves it
        let text = std::fs::read_to_string(&full.log_path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let first = lines
            .iter()
            .position(|l| l.contains("\"type\":\"trial\""))
            .expect("a trial record");
        let cut_dir = tempfile::tempdir().unwrap();
        let cut = cut_dir.path().join(full.log_path.file_name().unwrap());
        std::fs::write(&cut, lines[..=first].join("\n") + "\n").unwrap();
        let cfg = config(kind, w.clone(), cut_dir.path());
        let (resumed, _) = common::run_sweep(cfg, runner, Some(cut.clone()));
        assert_eq!(
            resumed.trials_run, 3,
            "{kind}: the three trials after the cut"
        );
        let resumed_log = read_run_log(&cut).unwrap();
        assert_schema_valid(kind, &full.log_path);
        assert_schema_valid(kind, &cut);
        assert_eq!(
            by_id(&resumed_log.trials),
            by_id(&full_log.trials),
            "{kind}: the resumed sweep's trials are the uninterrupted one's"
        );
    }
}

#[test]
fn every_familys_default_is_a_bundled_presets_model() {
    let presets: Vec<Preset> = scaling_lab::workload::presets::embedded_presets()
        .into_iter()
        .map(|(path, p)| p.unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect();
    for family in FAMILIES {
        let matches: Vec<&str> = presets
            .iter()
            .filter(|p| p.workload.model.short_name() == family.kind)
            .filter(|p| {
                let shape = scaling_lab::workload::check::nominal_shape(&p.workload);
                family.default_for(family.input, &shape).as_ref() == Ok(&p.workload.model)
            })
            .map(|p| p.name.as_str())
            .collect();
        assert!(
            !matches.is_empty(),
            "{}: no bundled preset has the family's default model",
            family.kind
        );
    }
}
