//! Pure analysis of a sweep's trial records (science.md §1, §2).
//!
//! * **Steps-to-target per B** exactly as Shallue et al.: the earliest evaluation step, over all
//!   trials at that batch size, at which the validation metric met the target; that trial is the
//!   best trial. Diverged and not-reached trials are kept and counted; cancelled trials are counted
//!   separately and never contribute a result.
//! * **Perfect-scaling reference** `S(B0)·B0/B`, anchored at the smallest B that reached the target.
//! * **Regimes** per segment between consecutive measured batch sizes, by the local slope
//!   `d ln S / d ln B`: slope ≤ −0.75 → perfect scaling, slope ≥ −0.25 → maximal data parallelism,
//!   otherwise diminishing returns. Justification: under the model `S = S_min·(1 + B_crit/B)` the
//!   local slope is `−B_crit/(B + B_crit)`, so −0.75 is reached at B = B_crit/3 and −0.25 at
//!   B = 3·B_crit; "diminishing returns" is then the band [B_crit/3, 3·B_crit] around the critical
//!   batch size (slope −0.5 at B = B_crit), and the outer regimes are within 25 % of the ideal slopes
//!   −1 and 0 — loose enough to survive the quantisation of S to the evaluation grid.
//! * **Fit** of `S = S_min·(1 + B_crit/B)` by least squares on ln S (McCandlish et al.): for a fixed
//!   B_crit the optimal ln S_min is closed-form (the mean residual), so the fit is a 1-D search over
//!   ln B_crit (a dense grid, then golden-section refinement). Needs ≥ 3 measured points.
//! * **Noise prediction**: the median B_simple over the best trials (McCandlish et al.: B_crit ≈ B_simple).
//! * **LR rules**: the best η (and η/(1−γ)) per B against the linear and sqrt rules from the smallest B.

use std::collections::BTreeMap;

use crate::core::analysis::{Analysis, BatchPoint, Fit, LrRulePoint, Regime, Segment};
use crate::core::record::TrialRecord;
use crate::core::trial::Outcome;
use crate::workload::spec::{OptimizerKind, Target};

/// Slope at or below which a segment is "perfect scaling".
pub const PERFECT_SLOPE: f64 = -0.75;
/// Slope at or above which a segment is "maximal data parallelism".
pub const MAXIMAL_SLOPE: f64 = -0.25;

/// Analyses the finished trials of a sweep. Records with a repeated `trial_id` keep the last one.
pub fn analyze(target: &Target, trials: &[TrialRecord], optimizer: OptimizerKind) -> Analysis {
    let per_batch = per_batch(trials, optimizer);
    let measured: Vec<(usize, u64)> = per_batch
        .iter()
        .filter_map(|p| p.steps.map(|s| (p.batch_size, s)))
        .collect();
    let perfect_anchor = measured.first().copied();
    let segments = segments(&measured);
    let pts: Vec<(f64, f64)> = measured
        .iter()
        .map(|&(b, s)| (b as f64, s as f64))
        .collect();
    let fit = fit_scaling(&pts);
    let noise: Vec<f64> = per_batch
        .iter()
        .filter_map(|p| p.b_simple)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    Analysis {
        target: format!("{} <= {}", target.metric.name(), target.value),
        lr_rules: lr_rules(&per_batch),
        per_batch,
        perfect_anchor,
        segments,
        fit,
        noise_prediction: median(noise),
    }
}

/// Keeps the last record per trial_id (a resumed log could in principle repeat one).
pub fn dedup_trials(trials: &[TrialRecord]) -> Vec<&TrialRecord> {
    let mut by_id: BTreeMap<u64, &TrialRecord> = BTreeMap::new();
    for t in trials {
        by_id.insert(t.trial_id, t);
    }
    by_id.into_values().collect()
}

/// Steps-to-target and outcome counts per batch size, sorted by B.
pub fn per_batch(trials: &[TrialRecord], optimizer: OptimizerKind) -> Vec<BatchPoint> {
    let mut groups: BTreeMap<usize, Vec<&TrialRecord>> = BTreeMap::new();
    for t in dedup_trials(trials) {
        groups.entry(t.spec.batch_size).or_default().push(t);
    }
    groups
        .into_iter()
        .map(|(b, ts)| {
            let mut p = BatchPoint {
                batch_size: b,
                steps: None,
                best_trial: None,
                trials: ts.len(),
                reached: 0,
                diverged: 0,
                not_reached: 0,
                early_stopped: 0,
                cancelled: 0,
                best_lr: None,
                best_momentum: None,
                best_effective_lr: None,
                b_simple: None,
            };
            let mut best: Option<(u64, &TrialRecord)> = None;
            for t in &ts {
                match t.outcome.outcome {
                    Outcome::Reached { step } => {
                        p.reached += 1;
                        let better = match best {
                            None => true,
                            Some((s, bt)) => step < s || (step == s && t.trial_id < bt.trial_id),
                        };
                        if better {
                            best = Some((step, t));
                        }
                    }
                    Outcome::NotReached { early_stopped, .. } => {
                        p.not_reached += 1;
                        p.early_stopped += usize::from(early_stopped);
                    }
                    Outcome::Diverged { .. } => p.diverged += 1,
                    Outcome::Cancelled { .. } => p.cancelled += 1,
                }
            }
            if let Some((s, t)) = best {
                let m = &t.spec.metaparams;
                p.steps = Some(s);
                p.best_trial = Some(t.trial_id);
                p.best_lr = Some(m.learning_rate);
                p.best_momentum = optimizer_momentum(optimizer, m.momentum);
                p.best_effective_lr = Some(m.effective_lr(optimizer));
                p.b_simple = t.outcome.noise.b_simple.filter(|x| x.is_finite());
            }
            p
        })
        .collect()
}

fn optimizer_momentum(opt: OptimizerKind, m: f64) -> Option<f64> {
    matches!(
        opt,
        OptimizerKind::Momentum | OptimizerKind::Nesterov | OptimizerKind::Adam
    )
    .then_some(m)
}

/// Classifies a local log-log slope (see the module documentation for the thresholds).
pub fn classify(slope: f64) -> Regime {
    if slope <= PERFECT_SLOPE {
        Regime::Perfect
    } else if slope >= MAXIMAL_SLOPE {
        Regime::Maximal
    } else {
        Regime::Diminishing
    }
}

/// Segments between consecutive measured (B, S) points, sorted by B.
pub fn segments(measured: &[(usize, u64)]) -> Vec<Segment> {
    measured
        .windows(2)
        .map(|w| {
            let (b0, s0) = w[0];
            let (b1, s1) = w[1];
            let slope =
                ((s1 as f64).ln() - (s0 as f64).ln()) / ((b1 as f64).ln() - (b0 as f64).ln());
            Segment {
                b_lo: b0,
                b_hi: b1,
                slope,
                regime: classify(slope),
            }
        })
        .collect()
}

/// Steps on the perfect-scaling line through the anchor (B0, S0): S0·B0/B.
pub fn perfect_scaling_steps(anchor: (usize, u64), b: f64) -> f64 {
    anchor.1 as f64 * anchor.0 as f64 / b
}

fn log_sse(pts: &[(f64, f64)], ln_bc: f64) -> (f64, f64) {
    let bc = ln_bc.exp();
    let n = pts.len() as f64;
    let mean = pts
        .iter()
        .map(|&(b, s)| s.ln() - (1.0 + bc / b).ln())
        .sum::<f64>()
        / n;
    let sse = pts
        .iter()
        .map(|&(b, s)| {
            let r = s.ln() - mean - (1.0 + bc / b).ln();
            r * r
        })
        .sum();
    (sse, mean)
}

/// Least-squares fit in log space of S = S_min·(1 + B_crit/B) to (B, S) points.
/// B_crit is searched over [B_min/1000, B_max·1000]; a value near either end means the data show
/// no bend (pure perfect scaling or pure saturation) — see `Fit` users for how it is reported.
pub fn fit_scaling(pts: &[(f64, f64)]) -> Option<Fit> {
    let pts: Vec<(f64, f64)> = pts
        .iter()
        .copied()
        .filter(|&(b, s)| b > 0.0 && s > 0.0 && b.is_finite() && s.is_finite())
        .collect();
    if pts.len() < 3 {
        return None;
    }
    let bmin = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let bmax = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let (lo, hi) = ((bmin / 1000.0).ln(), (bmax * 1000.0).ln());
    const N: usize = 600;
    let xs: Vec<f64> = (0..=N)
        .map(|i| lo + (hi - lo) * i as f64 / N as f64)
        .collect();
    let (mut best_i, mut best) = (0, f64::INFINITY);
    for (i, &x) in xs.iter().enumerate() {
        let (e, _) = log_sse(&pts, x);
        if e < best {
            best = e;
            best_i = i;
        }
    }
    // Golden-section refinement on the bracketing grid cells.
    let (mut a, mut b) = (xs[best_i.saturating_sub(1)], xs[(best_i + 1).min(N)]);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    for _ in 0..80 {
        if log_sse(&pts, c).0 < log_sse(&pts, d).0 {
            b = d;
        } else {
            a = c;
        }
        c = b - g * (b - a);
        d = a + g * (b - a);
    }
    let x = (a + b) / 2.0;
    let (sse, ln_smin) = log_sse(&pts, x);
    let n = pts.len() as f64;
    let mean_ln = pts.iter().map(|p| p.1.ln()).sum::<f64>() / n;
    let sst: f64 = pts.iter().map(|p| (p.1.ln() - mean_ln).powi(2)).sum();
    let r2 = if sst > 1e-12 {
        1.0 - sse / sst
    } else if sse < 1e-12 {
        1.0
    } else {
        0.0
    };
    Some(Fit {
        s_min: ln_smin.exp(),
        b_crit: x.exp(),
        r2,
        rmse_log: (sse / n).sqrt(),
    })
}

/// Where the fitted B_crit lies relative to the measured batch sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FitRange {
    Within,
    /// B_crit far above the largest measured B: the curve never bends (all perfect scaling).
    AboveRange,
    /// B_crit far below the smallest measured B: already saturated everywhere.
    BelowRange,
}

/// B_crit more than 4× outside the measured range is an extrapolation, not a measurement.
pub fn fit_range(fit: &Fit, batch_sizes: &[usize]) -> FitRange {
    let lo = batch_sizes.iter().copied().min().unwrap_or(1) as f64;
    let hi = batch_sizes.iter().copied().max().unwrap_or(1) as f64;
    if fit.b_crit > 4.0 * hi {
        FitRange::AboveRange
    } else if fit.b_crit < lo / 4.0 {
        FitRange::BelowRange
    } else {
        FitRange::Within
    }
}

/// Best η per B against the linear and sqrt rules scaled from the smallest B with a best trial.
pub fn lr_rules(per_batch: &[BatchPoint]) -> Vec<LrRulePoint> {
    let with_best: Vec<&BatchPoint> = per_batch.iter().filter(|p| p.best_lr.is_some()).collect();
    let Some(base) = with_best.first() else {
        return Vec::new();
    };
    let (b0, lr0) = (base.batch_size as f64, base.best_lr.unwrap_or(0.0));
    with_best
        .iter()
        .map(|p| {
            let r = p.batch_size as f64 / b0;
            let lr = p.best_lr.unwrap_or(0.0);
            LrRulePoint {
                batch_size: p.batch_size,
                best_lr: lr,
                best_effective_lr: p.best_effective_lr.unwrap_or(lr),
                linear_rule: lr0 * r,
                sqrt_rule: lr0 * r.sqrt(),
            }
        })
        .collect()
}

/// Least-squares slope of ln(best η) against ln B: 1 = linear rule, 0.5 = sqrt rule.
pub fn lr_scaling_exponent(points: &[LrRulePoint]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.best_lr > 0.0)
        .map(|p| ((p.batch_size as f64).ln(), p.best_lr.ln()))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::trial::*;
    use crate::workload::spec::*;

    pub(crate) fn rec(
        id: u64,
        b: usize,
        lr: f64,
        outcome: Outcome,
        b_simple: Option<f64>,
    ) -> TrialRecord {
        TrialRecord {
            trial_id: id,
            spec: TrialSpec {
                trial_id: id,
                batch_size: b,
                devices: DeviceSpec::Cpu { workers: 1 },
                precision: Precision::Fp32,
                metaparams: Metaparams {
                    learning_rate: lr,
                    momentum: 0.9,
                    beta2: 0.999,
                    epsilon: 1e-8,
                    schedule: Schedule::default(),
                },
                seed: id,
            },
            outcome: TrialOutcome {
                outcome,
                steps: 0,
                skipped_steps: 0,
                final_loss_scale: 1.0,
                wall_s: 0.0,
                evals: vec![],
                noise: NoiseSummary {
                    b_simple,
                    trajectory: vec![],
                },
                throughput: Throughput::default(),
                reason: None,
            },
            finished: String::new(),
        }
    }

    fn target() -> Target {
        Target {
            metric: Metric::ValError,
            value: 0.1,
        }
    }

    #[test]
    fn recovers_known_curve() {
        let pts: Vec<(f64, f64)> = (0..12)
            .map(|i| {
                let b = 2f64.powi(i);
                (b, 100.0 * (1.0 + 256.0 / b))
            })
            .collect();
        let f = fit_scaling(&pts).unwrap();
        assert!((f.s_min - 100.0).abs() < 1e-3, "{f:?}");
        assert!((f.b_crit - 256.0).abs() < 1e-2, "{f:?}");
        assert!(f.r2 > 0.999999 && f.rmse_log < 1e-6);
        assert!((f.steps_at(256.0) - 200.0).abs() < 1e-2);
    }

    #[test]
    fn fit_with_noise_and_quantisation() {
        // S quantised up to an eval grid of 10 steps and ±5 % multiplicative noise.
        let noise = [1.03, 0.97, 1.05, 0.95, 1.0, 1.02, 0.98, 1.04];
        let pts: Vec<(f64, f64)> = (0..8)
            .map(|i| {
                let b = 2f64.powi(i + 4);
                let s = 500.0 * (1.0 + 1000.0 / b) * noise[i as usize];
                (b, (s / 10.0).ceil() * 10.0)
            })
            .collect();
        let f = fit_scaling(&pts).unwrap();
        assert!((f.b_crit / 1000.0 - 1.0).abs() < 0.25, "{f:?}");
        assert!((f.s_min / 500.0 - 1.0).abs() < 0.25, "{f:?}");
        assert!(f.r2 > 0.99);
        assert!(fit_scaling(&pts[..2]).is_none());
    }

    #[test]
    fn steps_to_target_is_earliest_eval_over_trials() {
        let t = vec![
            rec(0, 32, 0.1, Outcome::Reached { step: 300 }, Some(50.0)),
            rec(1, 32, 0.2, Outcome::Reached { step: 200 }, Some(70.0)),
            rec(2, 32, 5.0, Outcome::Diverged { step: 3 }, None),
            rec(
                3,
                32,
                1e-4,
                Outcome::NotReached {
                    budget: 1000,
                    early_stopped: false,
                },
                None,
            ),
            rec(4, 32, 0.3, Outcome::Cancelled { step: 10 }, None),
            // Cancelled at step 1 would have been "better": must not count.
            rec(5, 64, 0.4, Outcome::Cancelled { step: 1 }, None),
            rec(6, 64, 0.4, Outcome::Reached { step: 120 }, Some(90.0)),
            rec(7, 64, 0.8, Outcome::Reached { step: 120 }, None),
            rec(8, 128, 9.0, Outcome::Diverged { step: 1 }, None),
        ];
        let a = analyze(&target(), &t, OptimizerKind::Momentum);
        assert_eq!(a.per_batch.len(), 3);
        let p = &a.per_batch[0];
        assert_eq!((p.steps, p.best_trial), (Some(200), Some(1)));
        assert_eq!(
            (p.trials, p.reached, p.diverged, p.not_reached, p.cancelled),
            (5, 2, 1, 1, 1)
        );
        assert_eq!(p.best_lr, Some(0.2));
        assert!((p.best_effective_lr.unwrap() - 2.0).abs() < 1e-9);
        // Tie at 120 → lower trial id.
        assert_eq!(a.per_batch[1].best_trial, Some(6));
        let p = &a.per_batch[2];
        assert_eq!((p.steps, p.diverged, p.trials), (None, 1, 1));
        assert_eq!(a.perfect_anchor, Some((32, 200)));
        assert_eq!(a.segments.len(), 1);
        assert_eq!(a.noise_prediction, Some(80.0));
        assert_eq!(a.lr_rules.len(), 2);
        assert!((a.lr_rules[1].linear_rule - 0.4).abs() < 1e-12);
        assert!((a.lr_rules[1].sqrt_rule - 0.2 * 2f64.sqrt()).abs() < 1e-12);
        assert!(a.fit.is_none());
        assert_eq!(a.target, "val_error <= 0.1");
    }

    #[test]
    fn regimes_of_a_model_curve() {
        let measured: Vec<(usize, u64)> = (0..10)
            .map(|i| {
                let b = 1usize << (i + 2);
                (b, (100.0 * (1.0 + 256.0 / b as f64)).round() as u64)
            })
            .collect();
        let segs = segments(&measured);
        let regimes: Vec<Regime> = segs.iter().map(|s| s.regime).collect();
        // Slopes −B_crit/(B+B_crit) at the segment midpoints: perfect → diminishing → maximal.
        assert_eq!(regimes[0], Regime::Perfect);
        assert_eq!(*regimes.last().unwrap(), Regime::Maximal);
        assert!(regimes.contains(&Regime::Diminishing));
        let first_dim = regimes
            .iter()
            .position(|r| *r == Regime::Diminishing)
            .unwrap();
        let first_max = regimes.iter().position(|r| *r == Regime::Maximal).unwrap();
        assert!(first_dim < first_max);
        assert!(regimes[..first_dim].iter().all(|r| *r == Regime::Perfect));
        assert!(regimes[first_max..].iter().all(|r| *r == Regime::Maximal));
        assert_eq!(classify(-1.0), Regime::Perfect);
        assert_eq!(classify(-0.5), Regime::Diminishing);
        assert_eq!(classify(0.1), Regime::Maximal);
    }

    #[test]
    fn duplicate_ids_keep_the_last_record() {
        let t = vec![
            rec(0, 8, 0.1, Outcome::Reached { step: 10 }, None),
            rec(0, 8, 0.1, Outcome::Reached { step: 40 }, None),
        ];
        let a = analyze(&target(), &t, OptimizerKind::Sgd);
        assert_eq!(a.per_batch[0].trials, 1);
        assert_eq!(a.per_batch[0].steps, Some(40));
        assert_eq!(a.per_batch[0].best_momentum, None);
    }

    #[test]
    fn lr_exponent_and_median() {
        let pts: Vec<LrRulePoint> = [16usize, 64, 256]
            .iter()
            .map(|&b| LrRulePoint {
                batch_size: b,
                best_lr: 0.01 * (b as f64).sqrt(),
                best_effective_lr: 0.0,
                linear_rule: 0.0,
                sqrt_rule: 0.0,
            })
            .collect();
        assert!((lr_scaling_exponent(&pts).unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![]), None);
        let f = Fit {
            s_min: 1.0,
            b_crit: 1e6,
            r2: 1.0,
            rmse_log: 0.0,
        };
        assert_eq!(fit_range(&f, &[16, 1024]), FitRange::AboveRange);
    }
}
