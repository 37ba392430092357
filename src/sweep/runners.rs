//! The runner factory: a workload's `TrialRunner` — the closed-form NQM or the Burn trainer. It
//! knows both, so it lives above `train` and `nqm` (neither imports the other).

use std::sync::Arc;

use crate::core::runner::TrialRunner;
use crate::model::ModelSpec;
use crate::train::{BurnRunner, TrainOptions};
use crate::workload::spec::Workload;

/// The runner for a workload: the closed-form NQM or the Burn trainer.
pub fn runner_for(
    workload: &Workload,
    options: &TrainOptions,
) -> anyhow::Result<Arc<dyn TrialRunner>> {
    match workload.model {
        ModelSpec::Nqm { .. } => Ok(Arc::new(crate::nqm::NqmRunner::new())),
        _ => Ok(Arc::new(BurnRunner::new(options.clone()))),
    }
}
