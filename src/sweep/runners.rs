//! The runner factory: a workload's `TrialRunner` — the closed-form runner (`nqm`) for a workload
//! computed in closed form (`Workload::closed_form`), the Burn trainer for every other. It knows
//! both, so it lives above `train` and `nqm` (neither imports the other).

use std::sync::Arc;

use crate::core::runner::TrialRunner;
use crate::train::{BurnRunner, TrainOptions};
use crate::workload::spec::Workload;

/// The runner for a workload: the closed-form runner or the Burn trainer.
pub fn runner_for(
    workload: &Workload,
    options: &TrainOptions,
) -> anyhow::Result<Arc<dyn TrialRunner>> {
    Ok(if workload.closed_form() {
        Arc::new(crate::nqm::NqmRunner::new())
    } else {
        Arc::new(BurnRunner::new(options.clone()))
    })
}
