//! Coverage of the tail-model interval on trials whose distribution is known (lognormal, so the
//! Weibull model is not the true one), with and without early stopping, with and without trials
//! that never reach; and its narrowing as trials are added.

use super::*;
use crate::analysis::bootstrap::Rng;

fn unit(r: &mut Rng) -> f64 {
    ((r.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

fn normal(r: &mut Rng) -> f64 {
    let (u, v) = (unit(r), unit(r));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// One trial's steps: 1000·e^(0.5 z), or never (probability `never`).
fn trial(r: &mut Rng, never: f64) -> Option<f64> {
    let z = normal(r);
    (unit(r) >= never).then(|| 1000.0 * (0.5 * z).exp())
}

/// n trials as the scheduler would record them: with early stopping each is cut at the best of
/// the trials before it; without, each runs to its budget (20 000 steps).
fn sweep(r: &mut Rng, n: usize, never: f64, early_stop: bool) -> Vec<TailObs> {
    let budget = 20_000.0;
    let mut best = f64::INFINITY;
    (0..n)
        .map(|_| {
            let t = trial(r, never);
            let cap = if early_stop { best.min(budget) } else { budget };
            match t {
                Some(t) if t <= cap => {
                    best = best.min(t);
                    TailObs::Event(t)
                }
                Some(_) if cap < budget => TailObs::Cut(cap),
                Some(_) => TailObs::Censored(cap),
                None if cap < budget => TailObs::Cut(cap),
                None => TailObs::Never,
            }
        })
        .collect()
}

/// The true median of the best of n, by Monte Carlo.
fn true_best_median(n: usize, never: f64) -> f64 {
    let mut r = Rng::new(7);
    let mut v: Vec<f64> = (0..20_000)
        .map(|_| {
            (0..n)
                .filter_map(|_| trial(&mut r, never))
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// (coverage, median relative half-width) over `reps` sweeps.
fn coverage(n: usize, never: f64, early_stop: bool, reps: usize) -> (f64, f64) {
    let truth = true_best_median(n, never);
    let mut r = Rng::new(0xc0ffee ^ (n as u64) ^ ((early_stop as u64) << 20));
    let mut hit = 0;
    let mut widths = Vec::new();
    for rep in 0..reps {
        let obs = sweep(&mut r, n, never, early_stop);
        let Some([lo, hi]) = interval_best_median(&obs, 400, rep as u64) else {
            continue;
        };
        if lo <= truth && truth <= hi {
            hit += 1;
        }
        widths.push(rel_half_width(&obs, 400, rep as u64).unwrap());
    }
    (hit as f64 / reps as f64, median(widths).unwrap())
}

#[test]
fn coverage_table() {
    // printed with --nocapture: docs/intervals.md summarises it
    let mut rows = Vec::new();
    for &(n, never) in &[(8, 0.0), (12, 0.3), (24, 0.0), (48, 0.0)] {
        for es in [false, true] {
            let (c, w) = coverage(n, never, es, 200);
            println!("n={n:3} never={never:.1} early_stop={es:5}: coverage {c:.3}, median rel. half-width {w:.2}");
            rows.push((n, es, c, w));
        }
    }
    // measured: 0.885-0.98 everywhere but n < 24 with early stopping (0.82-0.835: only ~ln n
    // records reach, so σ is poorly known); asserted as measured, never loosened further
    for &(n, es, c, _) in &rows {
        let least = if es && n < 24 { 0.80 } else { 0.88 };
        assert!(
            (least..=0.995).contains(&c),
            "n={n} early_stop={es}: coverage {c} outside [{least}, 0.995]"
        );
    }
}

#[test]
fn narrows_as_trials_are_added() {
    for es in [false, true] {
        let (_, w24) = coverage(24, 0.0, es, 60);
        let (_, w96) = coverage(96, 0.0, es, 60);
        println!("early_stop={es}: half-width {w24:.3} at n=24, {w96:.3} at n=96");
        assert!(
            w96 < w24,
            "early_stop={es}: {w96} at n=96 is not below {w24} at n=24"
        );
    }
}

#[test]
fn a_cut_trial_is_censored_not_never() {
    // the same lucky trial with 23 others cut at its steps vs 23 that never reach: the cut ones say
    // "slower than 100", which bounds the spread; the interval must differ and contain 100-ish.
    let mut cut = vec![TailObs::Event(100.0)];
    cut.extend(std::iter::repeat_n(TailObs::Cut(100.0), 23));
    let [lo, hi] = interval_best_median(&cut, 400, 1).unwrap();
    assert!(lo.is_finite() && hi.is_finite() && lo < 100.0 * 1.5 && hi > 50.0);
    assert!(interval_best_median(&[TailObs::Never, TailObs::Censored(5.0)], 400, 1).is_none());
}

/// `plan` trials cut at the records (the plan's early stopping), then `extra` trials cut at
/// `kappa`× the best so far (the `--until` cap); returns the observations and the steps run.
fn sweep_until(r: &mut Rng, plan: usize, extra: usize, kappa: f64) -> (Vec<TailObs>, f64) {
    let budget = 20_000.0;
    let mut best = f64::INFINITY;
    let mut cost = 0.0;
    let obs = (0..plan + extra)
        .map(|i| {
            let t = trial(r, 0.0).unwrap();
            let k = if i < plan { 1.0 } else { kappa };
            let cap = (k * best).min(budget);
            if t <= cap {
                cost += t;
                best = best.min(t);
                TailObs::Event(t)
            } else {
                cost += cap;
                if cap < budget {
                    TailObs::Cut(cap)
                } else {
                    TailObs::Censored(cap)
                }
            }
        })
        .collect();
    (obs, cost)
}

/// `--until` trials cut at 2·S(B) (`until::UNTIL_CAP`) instead of S(B): the interval still covers
/// S*_n (measured: 0.905–0.975 at κ = 2, 0.90–0.955 at κ = 1; the plan alone at n = 8: 0.845).
#[test]
fn until_cap_keeps_coverage() {
    for &(plan, extra) in &[(8, 0), (8, 8), (8, 24), (24, 24)] {
        for kappa in [1.0, crate::analysis::until::UNTIL_CAP] {
            let n = plan + extra;
            let truth = true_best_median(n, 0.0);
            let mut r = Rng::new(99 ^ n as u64);
            let (mut hit, mut ws, mut cs) = (0, Vec::new(), Vec::new());
            for rep in 0..200 {
                let (obs, cost) = sweep_until(&mut r, plan, extra, kappa);
                let [lo, hi] = interval_best_median(&obs, 400, rep).unwrap();
                hit += (lo <= truth && truth <= hi) as usize;
                ws.push(rel_half_width(&obs, 400, rep).unwrap());
                cs.push(cost / n as f64 / 1000.0);
            }
            let c = hit as f64 / 200.0;
            println!(
                "plan {plan} extra {extra} kappa {kappa}: coverage {c:.3} half-width {:.3} cost/trial {:.2}",
                median(ws).unwrap(),
                median(cs).unwrap()
            );
            assert!(
                (0.83..=0.995).contains(&c),
                "plan {plan} extra {extra} kappa {kappa}: {c}"
            );
        }
    }
}
