//! The calibrated study assembled from the pilots' readings (docs/calibration.md, "The study"):
//! every allowed batch size between the two ends, per-B learning-rate ranges around the pilots'
//! best (interpolated in log-log between pilots; of the effective rate for the momentum
//! optimizers), the step budget and example cap from the pilots' steps and examples, and the
//! evaluation spacing from the fastest B.

use super::{
    interp_loglog, Rounds, BUDGET_FACTOR, EVALS_BEFORE_TARGET, LR_HALF_SPAN, ONE_MINUS_MOMENTUM,
    PILOT_MOMENTUM,
};
use crate::core::calibrate::{Calibrated, End, PilotReading, TargetChoice};
use crate::workload::spec::{ConfirmPlan, LrRule, SearchSpace};

impl Rounds<'_> {
    pub(super) fn assemble(
        &self,
        target: f64,
        choice: Option<TargetChoice>,
        pilots: Vec<PilotReading>,
        low: End,
        high: End,
    ) -> Calibrated {
        let inp = self.inp;
        let (lo, hi) = (low.batch_size(), high.batch_size());
        let batch_sizes: Vec<usize> = if inp.calibrate.batch_sizes {
            inp.facts
                .allowed
                .iter()
                .copied()
                .filter(|&b| b >= lo && b <= hi)
                .collect()
        } else {
            inp.batch_sizes.clone()
        };
        // per-B readings: the faster of the pilots at the same B
        let mut at: Vec<&PilotReading> = Vec::new();
        for p in &pilots {
            match at.iter_mut().find(|q| q.batch_size == p.batch_size) {
                Some(q) => {
                    if p.steps.unwrap_or(u64::MAX) < q.steps.unwrap_or(u64::MAX) {
                        *q = p;
                    }
                }
                None => at.push(p),
            }
        }
        at.sort_by_key(|p| p.batch_size);
        let lr_pts: Vec<(f64, f64)> = at
            .iter()
            .filter_map(|p| p.best_lr.map(|l| (p.batch_size as f64, l)))
            .collect();
        let steps_pts: Vec<(f64, f64)> = at
            .iter()
            .map(|p| (p.batch_size as f64, p.steps_or_budget() as f64))
            .collect();
        let s_est = |b: usize| interp_loglog(&steps_pts, b as f64);
        // the study's size, fitted to the wall-time budget from the pilots' speed
        let (batch_sizes, sizing) = if inp.calibrate.size {
            let (bs, sizing) = self.size(&batch_sizes, &pilots, s_est);
            (bs, Some(sizing))
        } else {
            (batch_sizes, None)
        };
        let mut preset = inp.preset.clone();
        let mut trials_per_batch = inp.trials_per_batch;
        if let Some(z) = &sizing {
            trials_per_batch = z.trials_per_batch;
            preset.sweep.trials_per_batch = z.trials_per_batch;
            preset.sweep.confirm = Some(ConfirmPlan {
                configs: z.confirm[0],
                seeds: z.confirm[1],
            });
        }
        let w = &mut preset.workload;
        if inp.calibrate.target {
            w.target.value = target;
            w.targets = choice.as_ref().map(|c| c.rungs.clone()).unwrap_or_default();
        }
        if inp.calibrate.budget {
            let steps = batch_sizes.iter().map(|&b| s_est(b)).fold(0.0, f64::max);
            let examples = batch_sizes
                .iter()
                .map(|&b| s_est(b) * b as f64)
                .fold(0.0, f64::max);
            w.step_budget = (BUDGET_FACTOR * steps).ceil() as u64;
            w.max_examples = Some((BUDGET_FACTOR * examples).ceil() as u64);
        }
        if inp.calibrate.eval {
            let fastest = batch_sizes
                .iter()
                .map(|&b| s_est(b))
                .fold(f64::INFINITY, f64::min);
            w.eval_every = ((fastest / EVALS_BEFORE_TARGET as f64).floor() as u64).max(1);
            w.eval_growth = 0.05;
        }
        let momentum = w.optimizer.uses_momentum();
        let factor = if momentum { 1.0 - PILOT_MOMENTUM } else { 1.0 };
        if inp.calibrate.search {
            let ranges: Vec<[f64; 3]> = batch_sizes
                .iter()
                .map(|&b| {
                    // the pilots' best η, as an effective rate for the momentum optimizers
                    let c = interp_loglog(&lr_pts, b as f64) / factor;
                    [b as f64, c / LR_HALF_SPAN, c * LR_HALF_SPAN]
                })
                .collect();
            let base = batch_sizes.first().copied().unwrap_or(1);
            preset.search = SearchSpace {
                learning_rate: [ranges[0][1], ranges[0][2]],
                one_minus_momentum: momentum.then_some(ONE_MINUS_MOMENTUM),
                decay_alpha: None,
                decay_fraction: None,
                warmup_fraction: 0.0,
                lr_rule: LrRule::None,
                base_batch: base,
                learning_rate_at: ranges,
                effective_lr: momentum,
            };
        }
        if inp.calibrate.defaults {
            let reference = &pilots[0];
            preset.workload.defaults.learning_rate = reference
                .best_lr
                .unwrap_or(reference.lrs[reference.lrs.len() / 2]);
            preset.workload.defaults.momentum = PILOT_MOMENTUM;
        }
        preset.sweep.batch_sizes = batch_sizes.clone();
        Calibrated {
            preset,
            batch_sizes,
            trials_per_batch,
            target: choice,
            pilots,
            low,
            high,
            sizing,
        }
    }
}
