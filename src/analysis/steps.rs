//! A trial's steps to reach a target: the one function over its evaluation curve. The analysis
//! reads every trial's steps-to-target through [`steps_to_target`]; a reading at another target
//! (issue 22) replaces it with [`first_meeting`] over the same curve.

use crate::core::record::TrialRecord;
use crate::core::trial::EvalPoint;
use crate::workload::spec::Target;

/// The first evaluation step at which the metric meets `target` (`metric <= value`; a NaN or
/// infinite metric never does), if any.
pub fn first_meeting(evals: &[EvalPoint], target: &Target) -> Option<u64> {
    evals
        .iter()
        .find(|e| e.metric.is_finite() && e.metric <= target.value)
        .map(|e| e.step)
}

/// A trial's steps to reach its sweep's own target: its recorded outcome (the trainer stops at the
/// first evaluation that meets it; the run-log reader warns when the stored outcome and the curve
/// disagree). None when it did not reach the target (diverged, not reached, cancelled, oom).
pub fn steps_to_target(t: &TrialRecord) -> Option<u64> {
    t.outcome.outcome.steps_to_target()
}
