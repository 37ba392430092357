//! How a sweep ends and what it tells the views of its progress: the trials per stage (each
//! against its own plan, `analysis::stages`) whenever they change, and after the last trial the
//! summary, `Done` and the `SweepResult`.

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use super::{empty_outcome, Coordinator, Running, SweepResult};
use crate::core::events::SweepEvent;
use crate::core::record::{Header, Summary};
use crate::core::trial::{Outcome, TrialSpec};

impl Coordinator {
    /// What the sweep's stages plan (`analysis::stages`).
    pub(super) fn stage_plan(&self) -> crate::analysis::stages::StagePlan {
        crate::analysis::stages::StagePlan {
            batch_sizes: self.cfg.batch_sizes.clone(),
            trials_per_batch: self.cfg.trials_per_batch,
            confirm: self.cfg.preset.sweep.confirm,
            repeats: self.cfg.repeats,
            calibrate: self.cfg.preset.calibrate.is_some_and(|c| c.any()),
        }
    }

    /// Tells the views the trials per stage when what they count from changed (`seen`: the
    /// records, queued and running trials last counted).
    pub(super) fn count(
        &self,
        queue: &VecDeque<TrialSpec>,
        run: &Running,
        seen: &mut Option<(usize, usize, usize)>,
    ) {
        let now = (self.records.len(), queue.len(), run.specs.len());
        if *seen == Some(now) {
            return;
        }
        *seen = Some(now);
        let placed: HashSet<u64> = queue
            .iter()
            .map(|t| t.trial_id)
            .chain(run.specs.keys().copied())
            .collect();
        let counts = crate::analysis::stages::counts_of(&self.stage_plan(), &self.records, &placed);
        self.emit(SweepEvent::Counts(counts));
    }

    /// After the last trial: records the trials skipped while queued, writes the summary, emits
    /// `Done` and returns the result (or the error that stopped the sweep).
    pub(super) fn finish(
        mut self,
        header: Header,
        t0: Instant,
        queue: VecDeque<TrialSpec>,
        mut fatal: Option<anyhow::Error>,
        trials_run: usize,
        trial_errors: usize,
    ) -> anyhow::Result<SweepResult> {
        let queued: Vec<u64> = queue.iter().map(|t| t.trial_id).collect();
        // Trials the user skipped while they were still queued are recorded too.
        if fatal.is_none() {
            for spec in queue {
                if self.control.is_user_cancelled(spec.trial_id) {
                    if let Err(e) = self.save(spec, empty_outcome(Outcome::Cancelled { step: 0 })) {
                        fatal = Some(e);
                        break;
                    }
                }
            }
        }
        let cancelled = self.control.is_cancelled() || fatal.is_some();
        let study = crate::core::analysis::Study::of_preset(&self.cfg.preset);
        let analysis = crate::analysis::analyze(&study, &self.records);
        let done: HashSet<u64> = self.records.iter().map(|r| r.trial_id).collect();
        // With --until/--repeats the sweep is complete only if they ran out too (not cancelled).
        let complete = self.plan.iter().all(|t| done.contains(&t.trial_id)) && !cancelled;
        let wall_s = t0.elapsed().as_secs_f64();
        // what this sweep placed and did not log (queued, interrupted, failed): a resume's
        let owed: HashSet<u64> = queued
            .into_iter()
            .chain(self.interrupted.iter().copied())
            .chain(self.errors.iter().map(|e| e.trial_id))
            .filter(|id| !done.contains(id))
            .collect();
        let counts = crate::analysis::stages::counts_of(&self.stage_plan(), &self.records, &owed);
        let summary = Summary {
            finished: chrono::Local::now().to_rfc3339(),
            trials_done: done.len(),
            trials_planned: self.plan.len(),
            complete,
            wall_s,
            analysis: serde_json::to_value(&analysis).unwrap_or_default(),
        };
        let summary_result = self.writer.write_summary(&summary);
        self.emit(SweepEvent::Done {
            cancelled,
            analysis: Box::new(analysis.clone()),
        });
        if let Some(e) = fatal {
            return Err(e);
        }
        summary_result?;
        Ok(SweepResult {
            log_path: self.writer.path().to_path_buf(),
            header,
            trials: self.records,
            analysis,
            study,
            cancelled,
            trials_done: done.len(),
            trials_planned: self.plan.len(),
            counts,
            calibrated: self.calibrated.take(),
            trials_run,
            trial_errors,
            errors: self.errors,
            wall_s,
        })
    }
}
