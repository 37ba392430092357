//! Resuming a sweep: the log must have been written by this plan (same seed, batch sizes, devices,
//! preset), and every logged trial must be the trial the re-derived plan puts at its id.

use std::path::Path;

use anyhow::Context;

use super::SweepConfig;
use crate::core::record::{Header, TrialRecord};
use crate::core::trial::TrialSpec;
use crate::core::widen::WIDEN_ID_BASE;
use crate::runlog::reader::read_run_log;
use crate::runlog::writer::RunLogWriter;

/// Opens the log at `path` to append to it, after checking it against `cfg` and `plan`: the
/// writer, the logged trials and the log's header.
/// `peers`: the records other processes logged into the same sweep (a Slurm array task's; a
/// confirm trial's configuration may be another task's search trial).
pub(super) fn open_resumed(
    cfg: &SweepConfig,
    plan: &[TrialSpec],
    path: &Path,
    peers: Vec<TrialRecord>,
) -> anyhow::Result<(RunLogWriter, Vec<TrialRecord>, Header)> {
    let log = read_run_log(path)?;
    check_compatible(cfg, &log.header, path)?;
    let mine: std::collections::HashSet<u64> = log.trials.iter().map(|t| t.trial_id).collect();
    let mut context = log.trials.clone();
    context.extend(peers.into_iter().filter(|t| !mine.contains(&t.trial_id)));
    for t in &log.trials {
        let planned = expected_spec(cfg, plan, &context, &t.spec).with_context(|| {
            format!(
                "{}: trial {} is not in the re-derived plan of {} trials (nor a \
                 --until/--repeats/--widen/confirm trial of it)",
                path.display(),
                t.trial_id,
                plan.len()
            )
        })?;
        anyhow::ensure!(
            same_trial(&planned, &assigned_as_planned(cfg, &planned, &t.spec)),
            "{}: trial {} in the log differs from the re-derived plan (batch size, seed or \
             metaparameters): the log was not written by this plan",
            path.display(),
            t.trial_id
        );
    }
    let writer = RunLogWriter::open_append(path, log.valid_len)?;
    Ok((writer, log.trials, log.header))
}

/// The spec a logged trial must have: its plan entry, the Halton continuation for `--until`
/// trials beyond the plan, the re-centred draw its id encodes (`--widen`), or its base trial's
/// metaparameters for a repeat.
fn expected_spec(
    cfg: &SweepConfig,
    plan: &[TrialSpec],
    logged: &[TrialRecord],
    spec: &TrialSpec,
) -> Option<TrialSpec> {
    if let Some(base_id) = spec.repeat_of {
        let base = logged
            .iter()
            .find(|r| r.trial_id == base_id && r.spec.is_search())?;
        return (spec.trial_id >= super::plan::REPEAT_ID_BASE)
            .then(|| super::plan::repeat_of(&base.spec, spec.trial_id, cfg.seed));
    }
    if let Some(mark) = spec.confirm {
        // a confirm trial (issue 42): the configuration of its rank among the logged search
        // trials at its B, with the fresh seed of its id
        cfg.preset.sweep.confirm?;
        let c = super::plan::ConfirmId::decode(spec.trial_id)?;
        let b = *cfg.batch_sizes.get(c.batch_index)?;
        let top = crate::analysis::confirm::top_configs(logged, b, c.rank as usize + 1);
        let base = top.get(c.rank as usize)?;
        if base.trial_id != mark.of {
            return None;
        }
        return super::plan::confirm_trial(&base.spec, spec.trial_id, cfg.seed);
    }
    if let Some(p) = plan.get(spec.trial_id as usize) {
        return Some(p.clone());
    }
    if (WIDEN_ID_BASE..super::plan::REPEAT_ID_BASE).contains(&spec.trial_id) {
        return (cfg.widen > 0)
            .then(|| {
                super::plan::widen_trial(
                    &cfg.preset,
                    &cfg.batch_sizes,
                    spec.trial_id,
                    &cfg.trial_devices(),
                    cfg.precision,
                    cfg.seed,
                )
            })
            .flatten();
    }
    let n = cfg.batch_sizes.len() as u64;
    (spec.trial_id < super::plan::REPEAT_ID_BASE && n > 0).then(|| {
        super::plan::trial_at(
            &cfg.preset,
            &cfg.batch_sizes,
            (spec.trial_id / n) as usize,
            (spec.trial_id % n) as usize,
            &cfg.trial_devices(),
            cfg.precision,
            cfg.seed,
        )
    })
}

fn approx_json_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    match (a, b) {
        (V::Number(x), V::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
            _ => x == y,
        },
        (V::Array(x), V::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| approx_json_eq(a, b))
        }
        (V::Object(x), V::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| approx_json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn to_json<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

/// Planned and logged trial are the same (floats compared to 1e-12: JSON round trips).
fn same_trial(a: &TrialSpec, b: &TrialSpec) -> bool {
    approx_json_eq(&to_json(a), &to_json(b))
}

/// A logged trial with the device it was assigned (one of the sweep's, `trials_per_device`)
/// replaced by the planned one: which device ran a trial is not part of its identity.
fn assigned_as_planned(cfg: &SweepConfig, planned: &TrialSpec, logged: &TrialSpec) -> TrialSpec {
    let mut t = logged.clone();
    if let (Some(all), Some(one), true) = (
        cfg.devices.gpu_ids(),
        logged.devices.gpu_ids(),
        cfg.preset.sweep.trials_per_device >= 1,
    ) {
        let same_kind = cfg.devices.with_gpu_ids(one.to_vec()) == logged.devices;
        if same_kind && one.len() == 1 && all.contains(&one[0]) {
            t.devices = planned.devices.clone();
        }
    }
    t
}

fn check_compatible(cfg: &SweepConfig, h: &Header, path: &Path) -> anyhow::Result<()> {
    let p = path.display();
    anyhow::ensure!(
        h.source == "scaling-lab",
        "{p}: this log was imported ({}) and cannot be resumed",
        h.source
    );
    anyhow::ensure!(
        h.seed == cfg.seed,
        "{p}: the log's seed is {}, not {}",
        h.seed,
        cfg.seed
    );
    anyhow::ensure!(
        h.batch_sizes == cfg.batch_sizes && h.trials_per_batch == cfg.trials_per_batch,
        "{p}: the log plans batch sizes {:?} × {} trials, not {:?} × {}",
        h.batch_sizes,
        h.trials_per_batch,
        cfg.batch_sizes,
        cfg.trials_per_batch
    );
    anyhow::ensure!(
        h.devices == cfg.devices,
        "{p}: the log's trials ran on {}, not {}",
        h.devices.label(),
        cfg.devices.label()
    );
    anyhow::ensure!(
        approx_json_eq(&to_json(&h.preset), &to_json(&cfg.preset)),
        "{p}: the preset differs from the one recorded in the log (resume with the log's own preset)"
    );
    Ok(())
}
