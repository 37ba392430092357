//! Censoring of confirm seeds at their block's quorum (`core::confirm::BLOCK_QUORUM`):
//! which seeds of the records count as "≥ c" (`config_seeds`, the same rule the trainer's
//! `GroupCut::Quorum` applies as it runs), and the seed spread σ with them (`seed_sd`: the
//! maximum-likelihood σ of a Normal model of ln steps with right-censoring).

use std::collections::BTreeMap;

use super::{pooled_sd, ConfigSeeds};
use crate::analysis::steps::Observation;
use crate::core::record::TrialRecord;

/// The within-configuration standard deviation of ln steps and its degrees of freedom: the pooled
/// sample value of the reached seeds; where seeds were censored at their block's quorum, the
/// maximum-likelihood value of a Normal model with right-censoring (EM; a mean per
/// configuration, one σ), scaled by N/(N − k) as the pooled value is, with ν = reached − k.
pub fn seed_sd(configs: &[ConfigSeeds]) -> Option<(f64, usize)> {
    let (sd, nu) = pooled_sd(configs)?;
    let used: Vec<&ConfigSeeds> = configs.iter().filter(|c| c.steps.len() >= 2).collect();
    if used.iter().all(|c| c.censored.is_empty()) || sd <= 0.0 {
        return Some((sd, nu));
    }
    let ln = |v: &[f64]| -> Vec<f64> { v.iter().map(|s| s.max(1.0).ln()).collect() };
    let data: Vec<(Vec<f64>, Vec<f64>)> = used
        .iter()
        .map(|c| (ln(&c.steps), ln(&c.censored)))
        .collect();
    let n: usize = data.iter().map(|(y, a)| y.len() + a.len()).sum();
    let k = data.len();
    let mut mu: Vec<f64> = data
        .iter()
        .map(|(y, _)| y.iter().sum::<f64>() / y.len() as f64)
        .collect();
    let mut var = sd * sd;
    for _ in 0..200 {
        let s = var.sqrt();
        let mut ss = 0.0;
        let mut moved = 0.0f64;
        for ((y, a), m) in data.iter().zip(mu.iter_mut()) {
            // E[y | y > a] and E[y² | y > a] under N(m, s²)
            let moments: Vec<(f64, f64)> = a
                .iter()
                .map(|&a| {
                    let z = (a - *m) / s;
                    let lambda = std_normal_pdf(z) / upper_tail(z).max(1e-300);
                    let e1 = *m + s * lambda;
                    let e2 = *m * *m + var + s * (a + *m) * lambda;
                    (e1, e2)
                })
                .collect();
            let total = y.iter().sum::<f64>() + moments.iter().map(|x| x.0).sum::<f64>();
            let new_m = total / (y.len() + a.len()) as f64;
            moved = moved.max((new_m - *m).abs());
            *m = new_m;
            ss += y.iter().map(|v| (v - new_m).powi(2)).sum::<f64>();
            ss += moments
                .iter()
                .map(|&(e1, e2)| e2 - 2.0 * new_m * e1 + new_m * new_m)
                .sum::<f64>();
        }
        let new_var = (ss / n as f64).max(1e-12);
        moved = moved.max((new_var - var).abs());
        var = new_var;
        if moved < 1e-10 {
            break;
        }
    }
    let scale = n as f64 / (n - k).max(1) as f64;
    Some(((var * scale).sqrt(), nu))
}

fn std_normal_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// P(Z > z) for a standard normal Z (erfc by its Chebyshev fit, relative error < 1.2e-7).
fn upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let y = t
        * (-x * x - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    let erfc = if x >= 0.0 { y } else { 2.0 - y };
    0.5 * erfc
}

/// The step at which a confirm trial's run ended at the goal: its reach, divergence, out of
/// memory, or the end of its budget (None: cancelled).
fn goal_end(o: &crate::core::trial::Outcome) -> Option<u64> {
    use crate::core::trial::Outcome;
    match *o {
        Outcome::Reached { step } | Outcome::Diverged { step } | Outcome::Oom { step, .. } => {
            Some(step)
        }
        Outcome::NotReached { budget, .. } => Some(budget),
        Outcome::Cancelled { .. } => None,
    }
}

/// One configuration's seeds at a reading (`runs`: its confirm trials with their observation),
/// censored in blocks of `r` (`core::confirm::block_need`): in a block whose quorum reached the
/// goal — a complete block (r seeds, none cancelled), or one the trainer cut — at step c, a seed
/// whose run went past c (or was cut there) is "≥ c" unless it met this reading's target by c.
/// Applied to the records, the rule gives the same seeds whether the trainer cut the block or
/// every seed ran to its end.
pub(super) fn config_seeds(runs: &[(&TrialRecord, Observation)], r: Option<usize>) -> ConfigSeeds {
    use crate::core::trial::Outcome;
    let mut cs = ConfigSeeds::default();
    let cut_by_trainer = |t: &TrialRecord| {
        matches!(
            t.outcome.outcome,
            Outcome::NotReached {
                early_stopped: true,
                ..
            }
        )
    };
    let mut cut_at: BTreeMap<u32, u64> = BTreeMap::new();
    let r = r.filter(|&r| crate::core::confirm::block_need(r) < r);
    if let Some(r) = r {
        let need = crate::core::confirm::block_need(r);
        cs.block = r;
        let mut blocks: BTreeMap<u32, Vec<&TrialRecord>> = BTreeMap::new();
        for (t, o) in runs {
            if let (Some(m), false) = (t.spec.confirm, matches!(o, Observation::Cancelled)) {
                blocks.entry(m.block(r)).or_default().push(t);
            }
        }
        for (j, ts) in blocks {
            let complete = ts.len() == r;
            cs.blocks += usize::from(complete);
            let mut reach: Vec<u64> = ts
                .iter()
                .filter_map(|t| t.outcome.outcome.steps_to_target())
                .collect();
            reach.sort_unstable();
            let trainer_cut = ts
                .iter()
                .find(|t| cut_by_trainer(t))
                .and_then(|t| goal_end(&t.outcome.outcome));
            let at = match (complete, trainer_cut) {
                (true, _) if reach.len() >= need => Some(reach[need - 1]),
                (_, Some(c)) => Some(c),
                _ => None,
            };
            if let Some(c) = at {
                cut_at.insert(j, c);
            }
        }
    }
    for (t, o) in runs {
        let c = match (t.spec.confirm, r) {
            (Some(m), Some(r)) => cut_at.get(&m.block(r)).copied(),
            _ => None,
        };
        if let (Some(c), false) = (c, matches!(o, Observation::Cancelled)) {
            let past = cut_by_trainer(t) || goal_end(&t.outcome.outcome).is_some_and(|e| e > c);
            if past {
                match *o {
                    Observation::Reached { step } if step <= c => cs.steps.push(step as f64),
                    _ => cs.censored.push(c as f64),
                }
                continue;
            }
        }
        match o {
            Observation::Reached { step } => cs.steps.push(*step as f64),
            Observation::Cancelled | Observation::Censored { .. } => {}
            _ => cs.failed += 1,
        }
    }
    cs
}
