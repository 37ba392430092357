//! Import of Google's released batch_science measurements (Shallue et al.; docs/science.md §7) into
//! our run-log model, so their curves can be analysed, compared and plotted with ours.
//!
//! Layout of one workload × optimizer directory:
//! `<dir>/<batch_size>/study.json`, `<dir>/<batch_size>/<trial>/metadata.json`,
//! `<dir>/<batch_size>/<trial>/measurements.csv`.
//!
//! Per trial: `INFEASIBLE` → Diverged (at its last step); `COMPLETE` → Reached at the first
//! measurement whose target column ≤ the target, else NotReached; `INCOMPLETE` → ignored (counted
//! in `ImportInfo`). Classification error stays as is (`val_error`); cross-entropy columns (nats)
//! are converted to bits (÷ ln 2) and stored under the `val_bpc` metric — the conversion is recorded
//! in the header. Maximised columns (average_precision) are rejected.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

use crate::core::record::{Header, ImportInfo, TrialRecord};
use crate::core::trial::{DeviceSpec, EvalPoint, Outcome, TrialOutcome, TrialSpec};
use crate::model::ModelSpec;
use crate::runlog::reader::RunLog;
use crate::workload::spec::*;

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}:{}: invalid JSON: {e}", path.display(), e.line()))
}

fn num_field(v: &Value, key: &str) -> Option<f64> {
    match v.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(|x| match x {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// (step, metric, train cross-entropy) rows of one measurements.csv.
fn read_measurements(path: &Path, column: &str) -> anyhow::Result<Vec<(u64, f64, Option<f64>)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, head) = lines
        .next()
        .ok_or_else(|| anyhow::anyhow!("{}:1: empty measurements file", path.display()))?;
    let cols: Vec<&str> = head.split(',').map(|c| c.trim()).collect();
    anyhow::ensure!(
        cols.first() == Some(&"step"),
        "{}:1: the first column must be `step` (found {:?})",
        path.display(),
        cols.first().unwrap_or(&"")
    );
    let ci = cols.iter().position(|c| *c == column).ok_or_else(|| {
        anyhow::anyhow!(
            "{}:1: no column `{column}` (columns: {})",
            path.display(),
            cols[1..].join(", ")
        )
    })?;
    let ti = cols.iter().position(|c| *c == "train/cross_entropy_error");
    let mut rows = Vec::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split(',').map(|c| c.trim()).collect();
        let bad = |what: &str| anyhow::anyhow!("{}:{}: {what}", path.display(), i + 1);
        anyhow::ensure!(
            f.len() == cols.len(),
            bad(&format!(
                "{} fields, the header has {}",
                f.len(),
                cols.len()
            ))
        );
        let step: f64 = f[0]
            .parse()
            .map_err(|_| bad(&format!("step {:?} is not a number", f[0])))?;
        anyhow::ensure!(step >= 0.0 && step.is_finite(), bad("negative step"));
        let metric: f64 = if f[ci].is_empty() {
            f64::NAN
        } else {
            f[ci]
                .parse()
                .map_err(|_| bad(&format!("{column} {:?} is not a number", f[ci])))?
        };
        let train = ti
            .and_then(|t| f[t].parse::<f64>().ok())
            .filter(|x| x.is_finite());
        rows.push((step as u64, metric, train));
    }
    rows.sort_by_key(|r| r.0);
    Ok(rows)
}

fn map_optimizer(name: &str) -> anyhow::Result<OptimizerKind> {
    Ok(match name {
        "sgd" => OptimizerKind::Sgd,
        "momentum" => OptimizerKind::Momentum,
        "nesterov_momentum" | "nesterov" => OptimizerKind::Nesterov,
        "adam" => OptimizerKind::Adam,
        other => anyhow::bail!("unknown optimizer {other:?} in study.json"),
    })
}

/// The metric a measurements.csv column becomes: (metric, scale to its units, how it is converted).
fn metric_of_column(column: &str) -> anyhow::Result<(Metric, f64, &'static str)> {
    anyhow::ensure!(
        !column.contains("average_precision"),
        "{column} is maximised; only minimised metrics (error, cross-entropy) are supported"
    );
    if column.ends_with("classification_error") {
        Ok((
            Metric::ValError,
            1.0,
            "none (classification error in [0, 1])",
        ))
    } else if column.ends_with("cross_entropy_error") || column.ends_with("cross_entropy") {
        Ok((
            Metric::ValBpc,
            1.0 / std::f64::consts::LN_2,
            "nats → bits (÷ ln 2)",
        ))
    } else {
        anyhow::bail!("unsupported metric column {column:?} (use a classification_error or cross_entropy_error column)")
    }
}

/// The `<batch_size>/study.json` folders of a directory, by batch size.
fn read_studies(dir: &Path) -> anyhow::Result<BTreeMap<usize, (PathBuf, Value)>> {
    let mut studies: BTreeMap<usize, (PathBuf, Value)> = BTreeMap::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read directory {}", dir.display()))?;
    for e in entries {
        let e = e?;
        let study = e.path().join("study.json");
        if e.path().is_dir() && study.is_file() {
            let v = read_json(&study)?;
            let b = num_field(&v, "batch_size")
                .or_else(|| e.file_name().to_string_lossy().parse().ok())
                .ok_or_else(|| anyhow::anyhow!("{}: no batch_size", study.display()))?
                as usize;
            anyhow::ensure!(b > 0, "{}: batch_size must be positive", study.display());
            studies.insert(b, (e.path(), v));
        }
    }
    anyhow::ensure!(
        !studies.is_empty(),
        "{}: no <batch_size>/study.json folders found (expected Google's batch_science layout)",
        dir.display()
    );
    Ok(studies)
}

/// The trial folders of a study (`<trial id>/metadata.json`), by id.
fn trial_dirs(sdir: &Path) -> anyhow::Result<Vec<(u64, PathBuf)>> {
    let mut tdirs: Vec<(u64, PathBuf)> = std::fs::read_dir(sdir)
        .with_context(|| format!("cannot read {}", sdir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("metadata.json").is_file())
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .parse::<u64>()
                .ok()
                .map(|id| (id, e.path()))
        })
        .collect();
    tdirs.sort();
    Ok(tdirs)
}

/// What is read of one study: the measurements column, the scale to the metric's units, the
/// target in the column's units, the study's `train_steps`.
struct Column<'a> {
    name: &'a str,
    scale: f64,
    target: f64,
    train_steps: u64,
}

/// The trials of all studies and what the header needs of them.
#[derive(Default)]
struct Imported {
    trials: Vec<TrialRecord>,
    /// INCOMPLETE trials (ignored, as in the paper).
    ignored: usize,
    max_trials: usize,
    max_steps: u64,
    /// Smallest and largest learning rate seen.
    lr_range: [f64; 2],
}

impl Imported {
    /// Reads the trial at `tdir` (the study's trial `tid` at batch size `b`); INCOMPLETE ones are
    /// counted, not kept. Returns whether it was kept.
    fn read_trial(
        &mut self,
        b: usize,
        tid: u64,
        tdir: &Path,
        col: &Column,
    ) -> anyhow::Result<bool> {
        let meta_path = tdir.join("metadata.json");
        let meta = read_json(&meta_path)?;
        let status = str_field(&meta, "status").unwrap_or_default();
        if status == "INCOMPLETE" {
            self.ignored += 1;
            return Ok(false);
        }
        let params = meta.get("parameters").cloned().unwrap_or(Value::Null);
        let lr = num_field(&params, "learning_rate").ok_or_else(|| {
            anyhow::anyhow!("{}: parameters.learning_rate missing", meta_path.display())
        })?;
        self.lr_range = [self.lr_range[0].min(lr), self.lr_range[1].max(lr)];
        let momentum = num_field(&params, "momentum")
            .or_else(|| num_field(&params, "one_minus_momentum").map(|x| 1.0 - x))
            .unwrap_or(0.0);
        let decay = match (
            num_field(&params, "end_learning_rate_factor"),
            num_field(&params, "learning_rate_decay_steps")
                .or_else(|| num_field(&params, "decay_steps")),
        ) {
            (Some(alpha), Some(steps)) => Decay::Linear {
                alpha,
                steps: steps as u64,
            },
            _ => Decay::Constant,
        };
        let rows = read_measurements(&tdir.join("measurements.csv"), col.name)?;
        let evals: Vec<EvalPoint> = rows
            .iter()
            .filter(|r| r.1.is_finite())
            .map(|&(step, m, train)| EvalPoint {
                step,
                metric: m * col.scale,
                train_loss: train.map(|t| t * col.scale).unwrap_or(0.0),
            })
            .collect();
        let steps = num_field(&meta, "steps")
            .map(|s| s as u64)
            .or_else(|| rows.last().map(|r| r.0))
            .unwrap_or(0);
        self.max_steps = self.max_steps.max(steps).max(col.train_steps);
        let outcome = match status.as_str() {
            "INFEASIBLE" => Outcome::Diverged { step: steps },
            "COMPLETE" => match rows.iter().find(|r| r.1.is_finite() && r.1 <= col.target) {
                Some(r) => Outcome::Reached { step: r.0 },
                None => Outcome::NotReached {
                    budget: steps,
                    early_stopped: false,
                },
            },
            other => anyhow::bail!(
                "{}: unknown status {other:?} (expected COMPLETE, INCOMPLETE or INFEASIBLE)",
                meta_path.display()
            ),
        };
        let id = self.trials.len() as u64;
        let metaparams = Metaparams {
            schedule: Schedule {
                warmup_steps: 0,
                decay,
            },
            ..Metaparams::new(lr, momentum)
        };
        self.trials.push(TrialRecord::new(
            TrialSpec {
                trial_id: id,
                // The study's own trial id.
                seed: tid,
                ..TrialSpec::cpu(b, metaparams)
            },
            TrialOutcome {
                evals,
                ..TrialOutcome::bare(outcome, steps)
            },
        ));
        Ok(true)
    }
}

/// The imported log's preset: a placeholder model (see `header.import`), the study's optimizer,
/// the target in the metric's units, the η range seen, the batch sizes and trials per B.
fn import_preset(
    name: &str,
    description: String,
    optimizer: OptimizerKind,
    target: Target,
    imp: &Imported,
    batch_sizes: Vec<usize>,
) -> Preset {
    let lr_range = imp.lr_range;
    Preset {
        name: name.into(),
        description,
        workload: Workload {
            dataset: None,
            model: ModelSpec::placeholder(),
            optimizer,
            target,
            targets: Vec::new(),
            eval_every: 1,
            eval_growth: 0.0,
            step_budget: imp.max_steps,
            max_examples: None,
            precision: Precision::Fp32,
            defaults: Metaparams::new(if lr_range[1] > 0.0 { lr_range[0] } else { 0.1 }, 0.9),
            grad_clip: None,
            divergence_factor: 10.0,
            transfer: None,
        },
        search: SearchSpace {
            learning_rate: if lr_range[1] > 0.0 {
                lr_range
            } else {
                [1e-3, 1.0]
            },
            ..SearchSpace::default()
        },
        sweep: SweepDefaults {
            batch_sizes,
            trials_per_batch: imp.max_trials,
            workers: 1,
            concurrency: 1,
            seed: 0,
            early_stopping: false,
            ..SweepDefaults::default()
        },
        calibrate: None,
    }
}

/// Imports one workload × optimizer directory; `column` e.g. "val/classification_error", `target`
/// in that column's units.
pub fn import_batch_science(dir: &Path, column: &str, target: f64) -> anyhow::Result<RunLog> {
    let (metric, scale, conversion) = metric_of_column(column)?;
    anyhow::ensure!(
        target.is_finite() && target > 0.0,
        "the target must be positive (got {target})"
    );
    let studies = read_studies(dir)?;
    let first = &studies
        .values()
        .next()
        .map(|s| s.1.clone())
        .unwrap_or(Value::Null);
    let dataset = str_field(first, "dataset").unwrap_or_else(|| "unknown".into());
    let model = str_field(first, "model").unwrap_or_else(|| "unknown".into());
    let opt_name = str_field(first, "optimizer").unwrap_or_else(|| "unknown".into());
    let optimizer = map_optimizer(&opt_name)?;
    let mut imp = Imported {
        lr_range: [f64::INFINITY, 0.0],
        ..Imported::default()
    };
    for (&b, (sdir, study)) in &studies {
        let col = Column {
            name: column,
            scale,
            target,
            train_steps: num_field(study, "train_steps").unwrap_or(0.0) as u64,
        };
        let mut n = 0;
        for (tid, tdir) in trial_dirs(sdir)? {
            n += usize::from(imp.read_trial(b, tid, &tdir, &col)?);
        }
        imp.max_trials = imp.max_trials.max(n);
    }
    let name = format!("batch-science-{dataset}-{model}-{opt_name}");
    let description = format!(
        "Imported from Google's batch_science data ({}): {dataset} / {model} / {opt_name}. \
         workload.model is a placeholder; see header.import.",
        dir.display()
    );
    let batch_sizes: Vec<usize> = studies.keys().copied().collect();
    let target_in_units = Target {
        metric,
        value: target * scale,
    };
    let preset = import_preset(
        &name,
        description,
        optimizer,
        target_in_units,
        &imp,
        batch_sizes.clone(),
    );
    let header = Header {
        schema: crate::core::record::SCHEMA_WITHOUT_CALIBRATION,
        preset,
        preset_path: None,
        seed: 0,
        batch_sizes,
        trials_per_batch: imp.max_trials,
        devices: DeviceSpec::Cpu { workers: 1 },
        concurrency: 1,
        revision: "unknown".into(),
        crate_version: env!("CARGO_PKG_VERSION").into(),
        backend: "batch-science-import".into(),
        started: chrono::Local::now().to_rfc3339(),
        source: "batch-science-import".into(),
        import: Some(ImportInfo {
            directory: dir.display().to_string(),
            dataset,
            model,
            optimizer: opt_name,
            metric_column: column.into(),
            conversion: conversion.into(),
            target_value: target,
            ignored_incomplete: imp.ignored,
        }),
        adaptive: None,
        fuse: 1,
        data_files: vec![],
        calibration: None,
    };
    let mut trials = imp.trials;
    // As the source's optimizer applied them (no β2/ε without Adam, …): what a reader sees.
    for t in &mut trials {
        t.spec.metaparams =
            crate::workload::applied::as_applied(&header.preset.workload, &t.spec.metaparams);
    }
    let mut warnings = Vec::new();
    if imp.ignored > 0 {
        warnings.push(format!(
            "ignored {} INCOMPLETE trials (as the paper does)",
            imp.ignored
        ));
    }
    let n_trials = trials.len();
    let summary = crate::core::record::Summary {
        finished: chrono::Local::now().to_rfc3339(),
        trials_done: n_trials,
        trials_planned: n_trials,
        complete: true,
        wall_s: 0.0,
        analysis: serde_json::to_value(crate::analysis::analyze_preset(&header.preset, &trials))
            .unwrap_or_default(),
    };
    Ok(RunLog {
        path: PathBuf::from(format!("{name}.jsonl")),
        header,
        trials,
        summary: Some(summary),
        warnings,
        off_plan: None,
        valid_len: 0,
        given: None,
        calibrated: None,
    })
}

/// Writes an imported log as a run-log file (header, trials, summary); returns its path.
pub fn save_import(log: &RunLog, path: &Path) -> anyhow::Result<PathBuf> {
    let mut w = crate::runlog::writer::RunLogWriter::create_at(path, &log.header)?;
    for t in &log.trials {
        w.write_trial(t)?;
    }
    if let Some(s) = &log.summary {
        w.write_summary(s)?;
    }
    Ok(path.to_path_buf())
}
