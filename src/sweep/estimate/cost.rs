//! What a trial costs on this machine under the sweep's layout ([`CostModel`]), and what
//! finished trials measured ([`Measured`]).
//!
//! Costs are **slot-seconds**: a slot is one of the `concurrency` trials (or fused groups) that
//! run at once, each on its own threads; a sweep's wall time is its jobs' slot-seconds spread
//! over the slots (`super::Estimate`).

use std::collections::BTreeMap;

use crate::core::record::TrialRecord;
use crate::core::stages::Stage;
use crate::sweep::layout::{line_at, Calibration};
use crate::workload::spec::Workload;

/// An evaluation's cost per validation example, in training steps' cost per example: a forward
/// pass is about a third of a training step; the rest is the metric and assembling the
/// evaluation's batches, so half is counted.
pub const EVAL_SHARE: f64 = 0.5;

/// Per-trial overhead (building the model, the first step's allocations, writing the record)
/// counted where the calibration did not measure it (caches written before it did).
pub const MIN_TRIAL_OVERHEAD_S: f64 = 0.02;

/// Seconds of a sweep's steps and evaluations under its layout.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// (B, slot-seconds of one step of one trial at B while every slot is busy): the line
    /// through them is t(B) (`layout::line_at`).
    pub step: Vec<(usize, f64)>,
    /// Slot-seconds of one evaluation (the whole validation set) of one trial.
    pub eval_s: f64,
    /// Fused groups: (members, total throughput over one trial's), measured at one B.
    pub gains: Vec<(usize, f64)>,
    /// Slot-seconds every trial costs besides its steps and evaluations.
    pub overhead_s: f64,
    /// Trials (or fused groups) at once.
    pub slots: usize,
    /// The most trials of a batch size in one fused group (1: every trial alone).
    pub fuse: usize,
}

impl CostModel {
    /// The model of a layout calibration for `slots` trials or groups at once on `threads`
    /// threads each, fused groups of at most `fuse`, and `n_val` validation examples
    /// evaluated `eval_batch` at a time.
    pub fn of_calibration(
        cal: &Calibration,
        slots: usize,
        threads: usize,
        fuse: usize,
        n_val: usize,
        eval_batch: usize,
    ) -> Self {
        let slots = slots.max(1);
        // c trials at once each run at speedup(c)/c of one trial alone on every thread
        let slowdown = slots as f64 / cal.speedup(slots);
        let step: Vec<(usize, f64)> = cal
            .one_trial
            .iter()
            .map(|&(b, s)| (b, s * slowdown))
            .collect();
        let eb = eval_batch.min(n_val).max(1);
        let eval_s = n_val as f64 * cal.step_s(eb) / eb as f64 * EVAL_SHARE * slowdown;
        let solo = cal
            .fused
            .iter()
            .find(|p| p.members == 1 && p.threads == threads)
            .map(|p| p.examples_per_s)
            .filter(|s| *s > 0.0);
        let gains = match solo {
            Some(solo) => {
                let mut g: Vec<(usize, f64)> = cal
                    .fused
                    .iter()
                    .filter(|p| p.threads == threads)
                    .map(|p| (p.members, p.examples_per_s / solo))
                    .collect();
                g.sort_by_key(|p| p.0);
                g
            }
            None => Vec::new(),
        };
        CostModel {
            step,
            eval_s,
            gains,
            overhead_s: cal.trial_overhead_s.max(MIN_TRIAL_OVERHEAD_S) * slowdown,
            slots,
            fuse: fuse.max(1),
        }
    }

    /// A model from finished trials alone (where no calibration is at hand: a view of a sweep
    /// run elsewhere): at each B the slot-seconds per step its trials measured, evaluations and
    /// overheads included in them.
    pub fn of_measured(m: &Measured, slots: usize, fuse: usize) -> Option<Self> {
        let mut per: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for s in &m.samples {
            if s.steps > 0 {
                per.entry(s.batch_size)
                    .or_default()
                    .push(s.slot_s / s.steps as f64);
            }
        }
        let step: Vec<(usize, f64)> = per
            .into_iter()
            .map(|(b, v)| (b, v.iter().sum::<f64>() / v.len() as f64))
            .collect();
        (!step.is_empty()).then_some(CostModel {
            step,
            eval_s: 0.0,
            // (a fused trial's share of its group is what it measured)
            gains: Vec::new(),
            overhead_s: 0.0,
            slots: slots.max(1),
            fuse: fuse.max(1),
        })
    }

    /// Slot-seconds of one step of one trial at `b`.
    pub fn step_s(&self, b: usize) -> f64 {
        line_at(&self.step, b)
    }

    /// The total throughput of a fused group of `members` over one trial alone (1 for one
    /// member; between measured sizes linear, beyond them the nearest).
    pub fn gain(&self, members: usize) -> f64 {
        if members <= 1 || self.gains.is_empty() {
            return 1.0;
        }
        let g = &self.gains;
        if members <= g[0].0 {
            return g[0].1;
        }
        for w in g.windows(2) {
            let ((m0, g0), (m1, g1)) = (w[0], w[1]);
            if members <= m1 {
                let t = (members - m0) as f64 / (m1 - m0).max(1) as f64;
                return g0 + t * (g1 - g0);
            }
        }
        g[g.len() - 1].1
    }

    /// The smallest gain of any group of at most `fuse` members (1 at most): what a group of
    /// unknown size is bounded with.
    pub fn least_gain(&self) -> f64 {
        (1..=self.fuse).map(|m| self.gain(m)).fold(1.0, f64::min)
    }

    /// Slot-seconds of a group of `members` trials at `b`, each running `steps` steps with
    /// `evals` evaluations.
    pub fn group_s(&self, b: usize, members: usize, steps: u64, evals: u64) -> f64 {
        let m = members.max(1) as f64;
        m * steps as f64 * self.step_s(b) / self.gain(members)
            + m * evals as f64 * self.eval_s
            + self.overhead_s
    }
}

/// What one finished trial measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub batch_size: usize,
    pub stage: Stage,
    /// Its share of a slot: its wall time, or its fused group's over the group's members.
    pub slot_s: f64,
    /// Steps it ran (skipped ones included).
    pub steps: u64,
    /// Its full step budget.
    pub budget: u64,
}

/// Finished trials' measured costs: what the expectation is made of.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    pub samples: Vec<Sample>,
    /// Where they come from, in words ("12 finished trials", "2 earlier runs").
    pub basis: String,
}

impl Measured {
    /// The samples of `records`, trials of the workload `w` (a pilot's budget is its mark's).
    pub fn of(records: &[TrialRecord], w: &Workload) -> Self {
        // a fused group holds its slot until its last member ends
        let mut group_s: BTreeMap<u64, f64> = BTreeMap::new();
        for r in records {
            if let Some(g) = &r.outcome.group {
                let first = g.trials.first().copied().unwrap_or(r.trial_id);
                let e = group_s.entry(first).or_default();
                *e = e.max(r.outcome.wall_s);
            }
        }
        let samples = records
            .iter()
            .filter(|r| r.outcome.wall_s.is_finite() && r.outcome.wall_s > 0.0)
            .map(|r| {
                let slot_s = match &r.outcome.group {
                    Some(g) if g.trials.len() > 1 => {
                        let first = g.trials.first().copied().unwrap_or(r.trial_id);
                        group_s.get(&first).copied().unwrap_or(r.outcome.wall_s)
                            / g.trials.len() as f64
                    }
                    _ => r.outcome.wall_s,
                };
                let budget = match r.spec.calibrate {
                    Some(m) => m.budget,
                    None => w.budget_for(r.spec.batch_size),
                };
                Sample {
                    batch_size: r.spec.batch_size,
                    stage: Stage::of(r.trial_id),
                    slot_s,
                    steps: r.outcome.steps + r.outcome.skipped_steps,
                    budget: budget.max(1),
                }
            })
            .collect();
        Measured {
            samples,
            basis: format!(
                "{} finished trial{}",
                records.len(),
                if records.len() == 1 { "" } else { "s" }
            ),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    fn at(&self, b: usize, stage: Stage) -> impl Iterator<Item = &Sample> {
        self.samples
            .iter()
            .filter(move |s| s.batch_size == b && s.stage == stage)
    }

    /// Expected slot-seconds of one trial of `stage` at `b` whose full budget costs `full_s`
    /// (`full(b')`: the same at another batch size, under the model): the mean its stage
    /// measured at `b`; else the mean share of the full cost its stage measured elsewhere; a
    /// confirm trial or repeat without one runs like the longest search trial at its B (the
    /// first one, uncut, ran to its reach) or, without one, the longest search trials' share
    /// elsewhere. None where nothing was measured to expect from.
    pub fn per_trial(&self, b: usize, stage: Stage, full: &dyn Fn(usize) -> f64) -> Option<f64> {
        let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        if let Some(m) = mean(self.at(b, stage).map(|s| s.slot_s).collect()) {
            return Some(m);
        }
        let share = |stage: Stage| {
            mean(
                self.samples
                    .iter()
                    .filter(|s| s.stage == stage)
                    .filter_map(|s| {
                        let f = full(s.batch_size);
                        (f > 0.0).then(|| s.slot_s / f)
                    })
                    .collect(),
            )
        };
        if let Some(f) = share(stage) {
            return Some(f * full(b));
        }
        if matches!(stage, Stage::Confirm | Stage::Repeats) {
            let longest = self
                .at(b, Stage::Search)
                .map(|s| s.slot_s)
                .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
            if longest.is_some() {
                return longest;
            }
            // the longest search trial's share at each B, averaged
            let mut by_b: BTreeMap<usize, f64> = BTreeMap::new();
            for s in self.samples.iter().filter(|s| s.stage == Stage::Search) {
                let f = full(s.batch_size);
                if f > 0.0 {
                    let e = by_b.entry(s.batch_size).or_default();
                    *e = e.max(s.slot_s / f);
                }
            }
            return mean(by_b.into_values().collect()).map(|f| f * full(b));
        }
        None
    }
}
