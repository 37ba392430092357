//! A Live state's calibration stage (docs/calibration.md): while its pilot trials choose the
//! study there is nothing to chart yet; once the `Calibrated` event or the log's line arrives,
//! the state goes on under the calibrated study's header and says what was chosen
//! (`report::calibration`).

use super::LiveState;
use crate::core::calibrate::Calibrated;

impl LiveState {
    /// A followed log's calibrated-study line: the log goes on under the calibrated study's
    /// header (as its reader makes it), its plan the chosen batch sizes.
    pub(crate) fn fold_calibrated(&mut self, c: Calibrated) {
        if let Some(h) = &self.header {
            let h = crate::analysis::calibrate::calibrated_header(h, &c);
            self.plan.batch_sizes = h.batch_sizes.clone();
            self.plan.trials_per_batch = h.trials_per_batch;
            self.plan.header = Some(Box::new(h.clone()));
            self.header = Some(h);
        }
        self.calibrated = Some(std::sync::Arc::new(c));
        self.recount();
        self.touch();
    }

    /// The calibration stage is choosing the study: its pilots run (or wait), no search trial
    /// has a target to reach yet.
    pub fn calibrating(&self) -> bool {
        self.calibrated.is_none()
            && self
                .header
                .as_ref()
                .is_some_and(|h| h.preset.calibrate.is_some_and(|c| c.any()))
    }

    /// What the scaling chart says instead of points while the study is being chosen.
    pub fn calibrating_text(&self) -> &'static str {
        if self.done {
            "the calibration did not finish: no study was chosen yet (resume the sweep: Runs → r)"
        } else {
            "calibrating: choosing the target, ranges and batch sizes"
        }
    }

    /// One line of what the calibration chose (`report::calibration::summary_line`).
    pub fn calibration_summary(&self) -> Option<String> {
        self.calibrated
            .as_deref()
            .map(crate::report::calibration::summary_line)
    }
}
