//! `cargo bench --bench retarget`: the time to re-derive a whole reading (per-B steps, the
//! bootstrap, the fit, the regimes) of a 2,000-trial log at another target — what the TUI must do
//! within one frame (≤ 50 ms) when the user moves the target along the ladder. The log is
//! synthetic (10 batch sizes × 200 trials, 40 evaluations each, some diverged, early stopping as the
//! scheduler applies it); each rung of its geometric ladder is analysed `ROUNDS` times and the
//! median and maximum per rung are printed. Env: SCALING_LAB_BENCH_ROUNDS (default 5).
use std::time::Instant;

use scaling_lab::analysis::analyze;
use scaling_lab::analysis::ladder::geometric_ladder;
use scaling_lab::core::analysis::Study;
use scaling_lab::core::record::TrialRecord;
use scaling_lab::core::trial::{EvalPoint, Outcome, TrialOutcome, TrialSpec};
use scaling_lab::workload::spec::{Metaparams, Metric, OptimizerKind, Target};

const SIZES: [usize; 10] = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
const PER_B: usize = 200;
const GOAL: f64 = 0.04;

fn log() -> Vec<TrialRecord> {
    let mut x = 42u64;
    let mut rnd = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut out = Vec::new();
    let mut id = 0u64;
    for &b in &SIZES {
        let mut best: Option<u64> = None;
        for _ in 0..PER_B {
            let lr = 10f64.powf(-2.0 + 2.0 * rnd());
            let tau = 30.0 + 3000.0 * (8.0 / b as f64).min(1.0) * (0.2 / lr).max(lr / 0.2) * rnd();
            let diverges = lr > 0.8 && rnd() < 0.5;
            let cap = best.unwrap_or(4000);
            let mut evals = Vec::new();
            let mut outcome = Outcome::NotReached {
                budget: cap,
                early_stopped: best.is_some(),
            };
            for i in 1..=40u64 {
                let step = i * 100;
                if step > cap {
                    break;
                }
                let metric = if diverges && i > 5 {
                    f64::NAN
                } else {
                    0.9 * (-(step as f64) / tau).exp() + 0.02 * rnd()
                };
                evals.push(EvalPoint {
                    step,
                    metric,
                    train_loss: 0.0,
                });
                if !metric.is_finite() {
                    outcome = Outcome::Diverged { step };
                    break;
                }
                if metric <= GOAL {
                    outcome = Outcome::Reached { step };
                    best = Some(best.map_or(step, |s: u64| s.min(step)));
                    break;
                }
            }
            let steps = evals.last().map_or(0, |e| e.step);
            let spec = TrialSpec {
                trial_id: id,
                ..TrialSpec::cpu(b, Metaparams::new(lr, 0.9))
            };
            out.push(TrialRecord::new(
                spec,
                TrialOutcome {
                    evals,
                    ..TrialOutcome::bare(outcome, steps)
                },
            ));
            id += 1;
        }
    }
    out
}

fn main() {
    let rounds: usize = std::env::var("SCALING_LAB_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let trials = log();
    let study = Study::bare(
        Target {
            metric: Metric::ValError,
            value: GOAL,
        },
        OptimizerKind::Momentum,
    );
    let ladder = geometric_ladder(GOAL, &trials);
    println!(
        "re-deriving a {}-trial log at each rung of its ladder ({} rungs), {rounds} rounds each",
        trials.len(),
        ladder.len()
    );
    let mut worst = 0.0f64;
    for &t in &ladder {
        let mut ms: Vec<f64> = (0..rounds)
            .map(|_| {
                let s = Instant::now();
                let a = analyze(&study.at(t), &trials);
                std::hint::black_box(&a);
                s.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        let max = ms[ms.len() - 1];
        worst = worst.max(max);
        println!(
            "  target {t:<6} median {:>7.2} ms  max {max:>7.2} ms",
            ms[ms.len() / 2]
        );
    }
    println!(
        "worst {worst:.2} ms: {} the 50 ms frame budget",
        if worst <= 50.0 { "within" } else { "OVER" }
    );
}
