//! B_crit over training (docs/science.md §9): the analysis of one sweep at each rung of a
//! ladder of targets, B_crit(target) and S_min(target) with their bootstrap intervals, and the
//! fitted trend `B_crit ∝ target^k`.
//!
//! A rung is nothing but [`super::analyze`] of the same study at another target
//! ([`Study::at`]): the same pipeline, read from the trials' evaluation curves
//! (`super::steps`). Every rung at or looser than the sweep's goal is exact; a stricter one is
//! marked not measured where the goal's stops could hide a better trial.
//!
//! The ladder of a log is its preset's `targets` plus its goal ([`ladder_of`]); a single-target
//! log gets a geometric ladder above its goal ([`geometric_ladder`]). Rungs are ordered loosest
//! first — the order in which training meets them.
//!
//! **For a batch-size schedule**: [`bcrit_curve`] gives, per rung, the target,
//! B_crit with its 95 % interval, S_min, and the best η (and γ) at each measured B — what a
//! schedule "start at the loosest rung's B_crit, switch to the next rung's B_crit when the
//! validation metric meets that rung, η from the sweep's best η at that B" is built from.

use serde::Serialize;

use crate::core::analysis::{Analysis, Readout, Study};
use crate::core::record::TrialRecord;
use crate::workload::spec::Workload;

/// Rungs of a geometric ladder (the goal included).
pub const GEOMETRIC_RUNGS: usize = 8;
/// Ratio between neighbouring rungs of a geometric ladder.
pub const GEOMETRIC_RATIO: f64 = std::f64::consts::SQRT_2;

/// One rung: the whole analysis at one target.
#[derive(Clone, Debug, PartialEq)]
pub struct Rung {
    /// The target value (of the study's metric).
    pub target: f64,
    pub analysis: Analysis,
}

/// The analysis at each of `values` (any order in, loosest first out; duplicates dropped).
pub fn analyze_ladder(study: &Study, trials: &[TrialRecord], values: &[f64]) -> Vec<Rung> {
    order_loosest_first(values)
        .into_iter()
        .map(|v| Rung {
            target: v,
            analysis: super::analyze(&study.at(v), trials),
        })
        .collect()
}

/// Finite values, loosest (largest) first, without duplicates.
pub fn order_loosest_first(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| b.total_cmp(a));
    v.dedup();
    v
}

/// The ladder a sweep was run for: its preset's `targets` and its goal, loosest first (just the
/// goal for a single-target sweep).
pub fn ladder_of(w: &Workload) -> Vec<f64> {
    let mut v = w.targets.clone();
    v.push(w.target.value);
    order_loosest_first(&v)
}

/// A ladder for a single-target log: the goal and up to [`GEOMETRIC_RUNGS`] − 1 looser rungs,
/// each [`GEOMETRIC_RATIO`] × the previous (two significant digits), kept below half the median
/// metric of the trials' first evaluations (a target every trial meets at once says nothing).
pub fn geometric_ladder(goal: f64, trials: &[TrialRecord]) -> Vec<f64> {
    let firsts: Vec<f64> = trials
        .iter()
        .filter_map(|t| t.outcome.evals.first())
        .map(|e| e.metric)
        .filter(|m| m.is_finite())
        .collect();
    let ceiling = super::median(firsts).map(|m| m / 2.0).unwrap_or(goal);
    let mut v = vec![goal];
    let mut x = goal;
    for _ in 1..GEOMETRIC_RUNGS {
        x *= GEOMETRIC_RATIO;
        let r = round_sig(x, 2);
        if r >= ceiling || r <= goal {
            break;
        }
        v.push(r);
    }
    order_loosest_first(&v)
}

/// The ladder to move along for a log: its own ladder when it has one, else a geometric one.
pub fn default_ladder(w: &Workload, trials: &[TrialRecord]) -> Vec<f64> {
    if w.target.metric.maximised() {
        // a ladder is read for minimised metrics (looser = larger); a maximised one has its goal
        return vec![w.target.value];
    }
    if w.targets.is_empty() {
        geometric_ladder(w.target.value, trials)
    } else {
        ladder_of(w)
    }
}

/// `x` rounded to `digits` significant digits.
pub fn round_sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let p = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * p).round() / p
}

/// The best η (and γ) and steps at one measured batch size of a rung.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct BestAt {
    pub batch_size: usize,
    pub steps: u64,
    pub best_lr: f64,
    pub best_momentum: Option<f64>,
}

/// B_crit and S_min at one target, with their 95 % bootstrap intervals.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct BcritPoint {
    pub target: f64,
    /// None: fewer than 3 batch sizes measured at this target (or some not measured).
    pub b_crit: Option<f64>,
    pub b_crit_ci: Option<[f64; 2]>,
    pub s_min: Option<f64>,
    pub s_min_ci: Option<[f64; 2]>,
    pub r2: Option<f64>,
    /// The fit is uncertain (`Fit::uncertain`).
    pub uncertain: bool,
    /// Batch sizes with a measured S(B).
    pub measured: usize,
    /// Batch sizes where S(B) is not measured (a target stricter than the goal).
    pub not_measured: usize,
    /// Which S(B) the rung's fit read: the best trials, or the confirmed seed medians.
    pub readout: Readout,
    /// The curve's S(B) and η (and γ) at each measured B: the best trial's, or with the
    /// confirmed readout the chosen configuration's.
    pub best: Vec<BestAt>,
}

impl BcritPoint {
    /// The point of one rung.
    pub fn of(r: &Rung) -> BcritPoint {
        let a = &r.analysis;
        let f = a.fit.as_ref();
        BcritPoint {
            target: r.target,
            b_crit: f.map(|f| f.b_crit),
            b_crit_ci: f.and_then(|f| f.b_crit_ci),
            s_min: f.map(|f| f.s_min),
            s_min_ci: f.and_then(|f| f.s_min_ci),
            r2: f.map(|f| f.r2),
            uncertain: f.is_some_and(|f| f.uncertain),
            measured: a
                .per_batch
                .iter()
                .filter(|p| a.curve_steps(p).is_some())
                .count(),
            not_measured: a.per_batch.iter().filter(|p| p.not_measured).count(),
            readout: a.readout,
            // the curve's S(B) and its configuration (the chosen confirmed one, or the best trial)
            best: a
                .per_batch
                .iter()
                .filter_map(|p| {
                    let chosen = (a.readout == Readout::Confirmed)
                        .then(|| p.confirmed.as_ref().and_then(|c| c.chosen_config()))
                        .flatten();
                    Some(BestAt {
                        batch_size: p.batch_size,
                        steps: a.curve_steps(p)?,
                        best_lr: match chosen {
                            Some(c) => c.learning_rate,
                            None => p.best_lr?,
                        },
                        best_momentum: match chosen {
                            Some(c) => c.momentum,
                            None => p.best_momentum,
                        },
                    })
                })
                .collect(),
        }
    }
}

/// B_crit(target) of a ladder, loosest first: the input of the B_crit view, `--targets` and a
/// batch-size schedule.
pub fn bcrit_curve(rungs: &[Rung]) -> Vec<BcritPoint> {
    rungs.iter().map(BcritPoint::of).collect()
}

/// What the trend says about B_crit as the target tightens.
#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TrendVerdict {
    /// B_crit rises as the target tightens (the exponent's interval is below 0).
    Grows,
    /// B_crit falls as the target tightens (interval above 0).
    Shrinks,
    /// The interval contains 0: no trend resolved.
    Unresolved,
}

/// The fitted trend `y ∝ target^k` over the rungs with a fit.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Trend {
    /// The exponent k (log-log slope against the target: negative = grows as the target falls).
    pub exponent: f64,
    /// 95 % interval of k.
    pub exponent_ci: [f64; 2],
    /// y at target 1: y = prefactor · target^k.
    pub prefactor: f64,
    /// Rungs used.
    pub rungs: usize,
    pub verdict: TrendVerdict,
}

impl Trend {
    pub fn at(&self, target: f64) -> f64 {
        self.prefactor * target.powf(self.exponent)
    }
}

/// Weighted least squares of ln y on ln target, one point per rung with a value: the weight of a
/// rung is 1/σ² with σ its 95 % bootstrap interval's half-width in ln y / 1.96 (unweighted when a
/// rung has no interval). The exponent's standard error is the weighted one, scaled up by the
/// residual scatter when the points scatter more than their intervals say (reduced χ² > 1).
/// Rungs share trials, so their errors are correlated; the interval treats them as independent.
/// Needs ≥ 2 rungs (≥ 3 for an interval from the scatter).
pub fn trend(points: &[(f64, f64, Option<[f64; 2]>)]) -> Option<Trend> {
    let pts: Vec<(f64, f64, f64)> = points
        .iter()
        .filter(|(t, y, _)| *t > 0.0 && *y > 0.0 && t.is_finite() && y.is_finite())
        .map(|&(t, y, ci)| {
            let sigma = ci
                .filter(|[lo, hi]| *lo > 0.0 && hi > lo)
                .map(|[lo, hi]| ((hi.ln() - lo.ln()) / (2.0 * 1.96)).max(1e-3));
            (t.ln(), y.ln(), sigma.unwrap_or(f64::NAN))
        })
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let weighted = pts.iter().all(|p| p.2.is_finite());
    let w: Vec<f64> = pts
        .iter()
        .map(|p| if weighted { 1.0 / (p.2 * p.2) } else { 1.0 })
        .collect();
    let sw: f64 = w.iter().sum();
    let mx = pts.iter().zip(&w).map(|(p, w)| w * p.0).sum::<f64>() / sw;
    let my = pts.iter().zip(&w).map(|(p, w)| w * p.1).sum::<f64>() / sw;
    let sxx: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.0 - mx).powi(2))
        .sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.0 - mx) * (p.1 - my))
        .sum();
    let k = sxy / sxx;
    let a = my - k * mx;
    let n = pts.len();
    let chi2: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.1 - a - k * p.0).powi(2))
        .sum();
    let scale = if n > 2 {
        let red = chi2 / (n - 2) as f64;
        if weighted {
            red.max(1.0)
        } else {
            red
        }
    } else if weighted {
        1.0
    } else {
        f64::INFINITY
    };
    let se = (scale / sxx).sqrt();
    let ci = [k - 1.96 * se, k + 1.96 * se];
    let verdict = if ci[1] < 0.0 {
        TrendVerdict::Grows
    } else if ci[0] > 0.0 {
        TrendVerdict::Shrinks
    } else {
        TrendVerdict::Unresolved
    };
    Some(Trend {
        exponent: k,
        exponent_ci: ci,
        prefactor: a.exp(),
        rungs: n,
        verdict,
    })
}

/// The trend of B_crit over the rungs whose fit is not uncertain (all fitted rungs when fewer
/// than two are certain).
pub fn bcrit_trend(curve: &[BcritPoint]) -> Option<Trend> {
    let pick = |certain_only: bool| -> Vec<(f64, f64, Option<[f64; 2]>)> {
        curve
            .iter()
            .filter(|p| !certain_only || !p.uncertain)
            .filter_map(|p| Some((p.target, p.b_crit?, p.b_crit_ci)))
            .collect()
    };
    let certain = pick(true);
    trend(if certain.len() >= 2 {
        &certain
    } else {
        &[][..]
    })
    .or_else(|| trend(&pick(false)))
}

/// The trend of S_min over the fitted rungs.
pub fn s_min_trend(curve: &[BcritPoint]) -> Option<Trend> {
    let pts: Vec<(f64, f64, Option<[f64; 2]>)> = curve
        .iter()
        .filter_map(|p| Some((p.target, p.s_min?, p.s_min_ci)))
        .collect();
    trend(&pts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::steps::{censoring_hides_best, observe, Observation, Reading};
    use crate::core::trial::{EvalPoint, Outcome, TrialOutcome, TrialSpec};
    use crate::workload::spec::{Metaparams, Metric, Target};

    fn curve(id: u64, b: usize, pts: &[(u64, f64)], outcome: Outcome) -> TrialRecord {
        let spec = TrialSpec {
            trial_id: id,
            ..TrialSpec::cpu(b, Metaparams::new(0.1, 0.9))
        };
        let steps = pts.last().map(|p| p.0).unwrap_or(0);
        let mut o = TrialOutcome::bare(outcome, steps);
        o.evals = pts
            .iter()
            .map(|&(step, metric)| EvalPoint {
                step,
                metric,
                train_loss: 0.0,
            })
            .collect();
        TrialRecord::new(spec, o)
    }

    fn at(v: f64) -> Reading {
        Reading::At(Target {
            metric: Metric::ValError,
            value: v,
        })
    }

    #[test]
    fn observations_read_the_curve_and_why_it_ends() {
        let pts = [(10, 0.5), (20, 0.2), (30, 0.08)];
        // reached the goal 0.08 at 30: a looser 0.2 at 20; a stricter 0.05 censored at 30
        let t = curve(0, 8, &pts, Outcome::Reached { step: 30 });
        assert_eq!(
            observe(&t, &Reading::Goal),
            Observation::Reached { step: 30 }
        );
        assert_eq!(observe(&t, &at(0.2)), Observation::Reached { step: 20 });
        assert_eq!(observe(&t, &at(0.3)), Observation::Reached { step: 20 });
        assert_eq!(
            observe(&t, &at(0.05)),
            Observation::Censored {
                at: 30,
                early_stopped: false
            }
        );
        // met 0.2 and diverged later: it did meet it
        let d = curve(
            1,
            8,
            &[(10, 0.3), (20, 0.15), (30, f64::NAN)],
            Outcome::Diverged { step: 30 },
        );
        assert_eq!(observe(&d, &at(0.2)), Observation::Reached { step: 20 });
        assert_eq!(observe(&d, &at(0.1)), Observation::Diverged { step: 30 });
        // cut by early stopping at 20
        let e = curve(
            2,
            8,
            &[(10, 0.6), (20, 0.3)],
            Outcome::NotReached {
                budget: 20,
                early_stopped: true,
            },
        );
        assert_eq!(
            observe(&e, &at(0.2)),
            Observation::Censored {
                at: 20,
                early_stopped: true
            }
        );
        assert_eq!(observe(&e, &at(0.4)), Observation::Reached { step: 20 });
        // ran its budget: not reached, whatever the target
        let n = curve(
            3,
            8,
            &[(10, 0.6), (20, 0.5)],
            Outcome::NotReached {
                budget: 20,
                early_stopped: false,
            },
        );
        assert_eq!(
            observe(&n, &at(0.2)),
            Observation::NotReached { budget: 20 }
        );
        // an imported trial that went on past the goal: not censored at a stricter target
        let mut imp = curve(
            4,
            8,
            &[(10, 0.1), (20, 0.09), (30, 0.07)],
            Outcome::Reached { step: 10 },
        );
        imp.outcome.steps = 30;
        assert_eq!(observe(&imp, &at(0.08)), Observation::Reached { step: 30 });
        assert_eq!(
            observe(&imp, &at(0.05)),
            Observation::NotReached { budget: 30 }
        );
        let c = curve(5, 8, &[(10, 0.01)], Outcome::Cancelled { step: 10 });
        assert_eq!(observe(&c, &at(0.2)), Observation::Cancelled);
    }

    #[test]
    fn a_censored_trial_hides_the_best_only_below_it() {
        let r = |s| Observation::Reached { step: s };
        let c = |a| Observation::Censored {
            at: a,
            early_stopped: true,
        };
        assert!(!censoring_hides_best(&[r(30), c(30), c(40)]));
        assert!(censoring_hides_best(&[r(30), c(20)]));
        assert!(censoring_hides_best(&[
            c(20),
            Observation::NotReached { budget: 50 }
        ]));
        assert!(!censoring_hides_best(&[Observation::NotReached {
            budget: 50
        }]));
    }

    #[test]
    fn a_stricter_target_is_not_measured_and_not_fitted() {
        // goal 0.1: trial 0 stops at 20 (0.09), trial 1 at 30 (0.05: met 0.06 at 30, after 0 stopped)
        let trials: Vec<TrialRecord> = [8usize, 16, 32]
            .iter()
            .enumerate()
            .flat_map(|(i, &b)| {
                let k = i as u64 * 100;
                vec![
                    curve(
                        k,
                        b,
                        &[(10, 0.5), (20, 0.09)],
                        Outcome::Reached { step: 20 },
                    ),
                    curve(
                        k + 1,
                        b,
                        &[(10, 0.5), (20, 0.3), (30, 0.05)],
                        Outcome::Reached { step: 30 },
                    ),
                ]
            })
            .collect();
        let study = crate::core::analysis::Study::bare(
            Target {
                metric: Metric::ValError,
                value: 0.1,
            },
            crate::workload::spec::OptimizerKind::Sgd,
        );
        let goal = crate::analysis::analyze(&study, &trials);
        assert!(goal.per_batch.iter().all(|p| p.steps == Some(20)));
        let strict = crate::analysis::analyze(&study.at(0.06), &trials);
        assert!(strict
            .per_batch
            .iter()
            .all(|p| p.not_measured && p.steps.is_none()));
        assert!(strict.fit.is_none() && strict.regimes.is_empty());
        assert!(matches!(
            strict.notes.first(),
            Some(crate::core::analysis::Note::NotMeasured { goal, .. }) if *goal == 0.1
        ));
        assert_eq!(strict.goal, Some(study.goal));
        let loose = crate::analysis::analyze(&study.at(0.4), &trials);
        assert!(loose
            .per_batch
            .iter()
            .all(|p| !p.not_measured && p.steps == Some(20)));
        assert_eq!(loose.per_batch[0].counts.reached, 2);
    }

    #[test]
    fn trend_recovers_a_power_law_and_says_when_it_cannot() {
        // B_crit = 3 · T^-0.5 with ±10 % intervals
        let pts: Vec<(f64, f64, Option<[f64; 2]>)> = [0.4, 0.2, 0.1, 0.05, 0.025]
            .iter()
            .map(|&t: &f64| {
                let y = 3.0 * t.powf(-0.5);
                (t, y, Some([y / 1.1, y * 1.1]))
            })
            .collect();
        let tr = trend(&pts).unwrap();
        assert!((tr.exponent + 0.5).abs() < 1e-9, "{tr:?}");
        assert!((tr.prefactor - 3.0).abs() < 1e-6);
        assert_eq!(tr.verdict, TrendVerdict::Grows);
        assert!((tr.at(0.1) - 3.0 * 0.1f64.powf(-0.5)).abs() < 1e-6);
        // flat within wide intervals: unresolved
        let flat: Vec<(f64, f64, Option<[f64; 2]>)> = [(0.4, 10.0), (0.2, 12.0), (0.1, 9.0)]
            .iter()
            .map(|&(t, y)| (t, y, Some([y / 4.0, y * 4.0])))
            .collect();
        assert_eq!(trend(&flat).unwrap().verdict, TrendVerdict::Unresolved);
        assert!(trend(&pts[..1]).is_none());
    }

    #[test]
    fn ladders_are_loosest_first_and_geometric_above_a_single_goal() {
        assert_eq!(
            order_loosest_first(&[0.04, 0.2, 0.1, 0.2]),
            vec![0.2, 0.1, 0.04]
        );
        assert_eq!(round_sig(0.0565685, 2), 0.057);
        // first evaluations at 0.9: ceiling 0.45
        let t = curve(0, 8, &[(2, 0.9), (4, 0.03)], Outcome::Reached { step: 4 });
        let l = geometric_ladder(0.04, &[t.clone(), t]);
        assert_eq!(l, vec![0.32, 0.23, 0.16, 0.11, 0.08, 0.057, 0.04]);
        assert_eq!(geometric_ladder(0.04, &[]), vec![0.04]);
    }
}
