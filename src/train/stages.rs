//! A batch-size schedule as the trainer runs it.

use crate::core::schedule::{BatchSchedule, StageRun};

/// The stages of a batch-size schedule as the trial runs them (none without a schedule).
///
/// At a switch only the batch size and the learning rate change: the replicas, their optimizer
/// state (momentum buffers, Adam moments), the loss scaler and the data order carry over. The
/// noise-scale estimator keeps running too: its EMAs of |G|² and tr(Σ) are per-example
/// quantities independent of B (each step's unbiased estimates use that step's B and B/G), so
/// B_simple goes on as one estimate across the switch; the EMA's memory (decay 0.95, ~20 steps)
/// mixes steps from both sides of the switch for a few steps.
pub(super) struct Stages<'a> {
    schedule: Option<&'a BatchSchedule>,
    current: usize,
    lr: f64,
    runs: Vec<StageRun>,
}

impl<'a> Stages<'a> {
    pub(super) fn new(schedule: Option<&'a BatchSchedule>, lr: f64) -> Self {
        let runs = schedule
            .and_then(|s| s.stages.first())
            .map(|st| StageRun {
                batch_size: st.batch_size,
                learning_rate: st.learning_rate,
                from: None,
                start_step: 0,
                start_metric: None,
                steps: 0,
            })
            .into_iter()
            .collect();
        let lr = schedule
            .and_then(|s| s.stages.first())
            .map_or(lr, |s| s.learning_rate);
        Stages {
            schedule,
            current: 0,
            lr,
            runs,
        }
    }

    pub(super) fn learning_rate(&self) -> f64 {
        self.lr
    }

    /// Whether a schedule is running (its stage sets the learning rate).
    pub(super) fn active(&self) -> bool {
        self.schedule.is_some()
    }

    /// After an evaluation at `step` with `metric`: the new batch size if the schedule switches.
    pub(super) fn after_eval(&mut self, step: u64, metric: f64) -> Option<usize> {
        let s = self.schedule?;
        let k = s.stage_after(self.current, metric);
        if k == self.current {
            return None;
        }
        self.current = k;
        let st = &s.stages[k];
        self.lr = st.learning_rate;
        self.runs.push(StageRun {
            batch_size: st.batch_size,
            learning_rate: st.learning_rate,
            from: st.from,
            start_step: step,
            start_metric: Some(metric),
            steps: 0,
        });
        Some(st.batch_size)
    }

    /// The stages that ran, with their step counts, for a trial that applied `steps` steps.
    pub(super) fn finish(&self, steps: u64) -> Vec<StageRun> {
        let mut runs = self.runs.clone();
        let starts: Vec<u64> = runs.iter().map(|r| r.start_step).collect();
        for (i, r) in runs.iter_mut().enumerate() {
            let end = starts.get(i + 1).copied().unwrap_or(steps);
            r.steps = end.saturating_sub(r.start_step);
        }
        runs
    }
}
