//! Resuming a sweep: the log must have been written by this plan (same seed, batch sizes, devices,
//! preset), and every logged trial must be the trial the re-derived plan puts at its id (the
//! run-log validator's check, `core::plan::plan_difference`: readers warn, resume refuses).

use std::path::Path;

use super::SweepConfig;
use crate::core::record::{Header, TrialRecord};
use crate::runlog::reader::read_run_log;
use crate::runlog::writer::RunLogWriter;

/// Opens the log at `path` to append to it, after checking it against `cfg`: the log's header
/// must be `cfg`'s, and the run-log validator (the one every reader uses) must find every logged
/// trial to be the trial the header's plan derives — where readers warn, resume refuses.
pub(super) fn open_resumed(
    cfg: &SweepConfig,
    path: &Path,
) -> anyhow::Result<(RunLogWriter, Vec<TrialRecord>, Header)> {
    let log = read_run_log(path)?;
    check_compatible(cfg, &log.header, path)?;
    if let Some(m) = &log.off_plan {
        anyhow::bail!("{m}");
    }
    let writer = RunLogWriter::open_append(path, log.valid_len)?;
    Ok((writer, log.trials, log.header))
}

fn approx_json_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    crate::core::plan::approx_json_eq(a, b)
}

fn to_json<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
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
