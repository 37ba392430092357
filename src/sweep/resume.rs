//! Resuming a sweep: the log must have been written by this plan (same seed, batch sizes, devices,
//! preset), and every logged trial must be the trial the re-derived plan puts at its id (the
//! run-log validator's check, `core::plan::plan_difference`: readers warn, resume refuses).

use std::path::Path;

use super::SweepConfig;
use crate::core::record::{Header, TrialRecord};
use crate::core::trial::TrialSpec;
use crate::runlog::reader::read_run_log;
use crate::runlog::writer::RunLogWriter;

/// Opens the log at `path` to append to it, after checking it against `cfg`: the log's header
/// must be `cfg`'s, and the run-log validator (the one every reader uses) must find every logged
/// trial to be the trial the header's plan derives — where readers warn, resume refuses. A
/// confirm trial must, besides, re-run the configuration of its rank among the search
/// trials at its B, ranked over this log's and `peers`' records (the records other processes
/// logged into the same sweep: a Slurm array task's; a confirm trial's configuration may be
/// another task's search trial).
/// A run log opened to be resumed.
pub(super) struct Resumed {
    pub writer: RunLogWriter,
    pub records: Vec<TrialRecord>,
    /// The header the sweep continues under (a calibrated study's, once its line is logged).
    pub header: Header,
    /// The header as written (the given study, for a calibration stage's rounds).
    pub given: Header,
}

pub(super) fn open_resumed(
    cfg: &SweepConfig,
    path: &Path,
    peers: Vec<TrialRecord>,
) -> anyhow::Result<Resumed> {
    let log = read_run_log(path)?;
    check_compatible(cfg, &log.header, path)?;
    if let Some(m) = &log.off_plan {
        anyhow::bail!("{m}");
    }
    if let Some(m) = crate::runlog::validate::data_files_problem(&log.header) {
        anyhow::bail!("{}:1: {m}", path.display());
    }
    let mine: std::collections::HashSet<u64> = log.trials.iter().map(|t| t.trial_id).collect();
    let mut context = log.trials.clone();
    context.extend(peers.into_iter().filter(|t| !mine.contains(&t.trial_id)));
    for t in log.trials.iter().filter(|t| t.spec.confirm.is_some()) {
        anyhow::ensure!(
            confirm_as_ranked(&log.header, &context, &t.spec),
            "{}: confirm trial {} does not re-run the configuration of its rank among the search \
             trials at its batch size (or re-runs it differently): the log was not written by \
             this plan",
            path.display(),
            t.trial_id
        );
    }
    let writer = RunLogWriter::open_append(path, log.valid_len)?;
    let given = log.given_header().clone();
    Ok(Resumed {
        writer,
        records: log.trials,
        header: log.header,
        given,
    })
}

/// Whether confirm trial `spec` re-runs the configuration of its id's rank among the search
/// trials at its B in `logged` (the confirm stage's placement rule) as the header's plan derives.
fn confirm_as_ranked(h: &Header, logged: &[TrialRecord], spec: &TrialSpec) -> bool {
    let (Some(mark), Some(c)) = (
        spec.confirm,
        crate::core::confirm::ConfirmId::decode(spec.trial_id),
    ) else {
        return false;
    };
    let Some(&b) = h.batch_sizes.get(c.batch_index) else {
        return false;
    };
    let top = crate::analysis::confirm::top_configs(logged, b, c.rank as usize + 1);
    match top.get(c.rank as usize) {
        Some(base) if base.trial_id == mark.of => {
            crate::core::plan::plan_difference(h, spec, Some(&base.spec)).is_none()
        }
        _ => false,
    }
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
