//! S(B; T) at any target T at or looser than a sweep's goal, read from the trials'
//! evaluation curves, is exact.
//!
//! * A randomised proof of the argument in `analysis::steps`: trials cut by early stopping (at
//!   the best steps-to-goal so far) or by reaching the goal, given *any* continuation — the most
//!   favourable one included — never change S(B; T) at a looser T.
//! * Real logs: NQM ladder sweeps (early-stopped, diverged, resumed trials) and a digits sweep,
//!   against a brute-force recomputation from the logs' own curves, and against a sweep whose
//!   trials all ran their full budget.
//! * The fixture logs (a trained digits sweep, an imported batch_science study).

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use scaling_lab::analysis::ladder::{geometric_ladder, ladder_of};
use scaling_lab::analysis::{analyze, observe, Observation, Observed, Reading};
use scaling_lab::core::analysis::Study;
use scaling_lab::core::record::TrialRecord;
use scaling_lab::core::trial::{EvalPoint, Outcome, TrialOutcome, TrialSpec};
use scaling_lab::nqm::NqmRunner;
use scaling_lab::runlog::{read_run_log, RunLog};
use scaling_lab::sweep::SweepConfig;
use scaling_lab::workload::spec::*;

/// S(B; T) by brute force from the curves: per B, over the search trials (last record per id,
/// not cancelled), the earliest evaluation whose metric is finite and ≤ T.
fn brute_force(trials: &[TrialRecord], t: f64) -> BTreeMap<usize, Option<u64>> {
    let mut last: BTreeMap<u64, &TrialRecord> = BTreeMap::new();
    for r in trials {
        last.insert(r.trial_id, r);
    }
    let mut out: BTreeMap<usize, Option<u64>> = BTreeMap::new();
    for r in last.values() {
        if !r.spec.is_search() {
            continue; // repeats and confirm trials are not in the best of K
        }
        let e = out.entry(r.spec.batch_size).or_insert(None);
        if matches!(r.outcome.outcome, Outcome::Cancelled { .. }) {
            continue;
        }
        let first = r
            .outcome
            .evals
            .iter()
            .find(|p| p.metric.is_finite() && p.metric <= t)
            .map(|p| p.step);
        if let Some(s) = first {
            *e = Some(e.map_or(s, |x: u64| x.min(s)));
        }
    }
    out
}

/// The confirmed S(B; T) by brute force from the confirm trials' curves: per B and
/// configuration the median over its seeds of the first evaluation meeting T (a seed that never
/// met it counting as slowest; an even count's median the geometric mean of the middle two,
/// none when half did not meet it), the lowest of the configurations' medians, rounded.
fn brute_confirmed(trials: &[TrialRecord], t: f64) -> BTreeMap<usize, Option<u64>> {
    let mut last: BTreeMap<u64, &TrialRecord> = BTreeMap::new();
    for r in trials {
        last.insert(r.trial_id, r);
    }
    let mut seeds: BTreeMap<(usize, u64), Vec<Option<u64>>> = BTreeMap::new();
    for r in last.values() {
        let Some(m) = r.spec.confirm else { continue };
        if matches!(r.outcome.outcome, Outcome::Cancelled { .. }) {
            continue;
        }
        let first = r
            .outcome
            .evals
            .iter()
            .find(|p| p.metric.is_finite() && p.metric <= t)
            .map(|p| p.step);
        seeds
            .entry((r.spec.batch_size, m.of))
            .or_default()
            .push(first);
    }
    let mut out: BTreeMap<usize, Option<u64>> = BTreeMap::new();
    for ((b, _), mut v) in seeds {
        v.sort_by_key(|s| s.unwrap_or(u64::MAX));
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2].map(|x| x as f64)
        } else {
            match (v[n / 2 - 1], v[n / 2]) {
                (Some(a), Some(b)) => Some(((a as f64).ln() * 0.5 + (b as f64).ln() * 0.5).exp()),
                _ => None,
            }
        };
        let e = out.entry(b).or_insert(None);
        if let Some(m) = median {
            let m = m.round() as u64;
            *e = Some(e.map_or(m, |x| x.min(m)));
        }
    }
    out
}

/// The analysis's confirmed S(B) at `t`, where the sweep confirmed.
fn analysed_confirmed(
    study: &Study,
    trials: &[TrialRecord],
    t: f64,
) -> BTreeMap<usize, Option<u64>> {
    analyze(&study.at(t), trials)
        .per_batch
        .iter()
        .filter_map(|p| Some((p.batch_size, p.confirmed.as_ref()?.steps)))
        .collect()
}

/// The analysis's S(B) at `t` (panics where it says "not measured").
fn analysed(study: &Study, trials: &[TrialRecord], t: f64) -> BTreeMap<usize, Option<u64>> {
    let a = analyze(&study.at(t), trials);
    a.per_batch
        .iter()
        .map(|p| {
            assert!(
                !p.not_measured,
                "B = {} not measured at {t} (goal {})",
                p.batch_size, study.goal.value
            );
            (p.batch_size, p.steps)
        })
        .collect()
}

/// Every rung at or looser than the goal of `log` equals the brute force of its curves; a few
/// rungs between the ladder's too. Returns how many (B, T) cells had a result.
fn check_log(log: &RunLog, extra: &[f64]) -> usize {
    let study = Study::of_preset(&log.header.preset);
    let goal = study.goal.value;
    let mut rungs = ladder_of(&log.header.preset.workload);
    rungs.extend(geometric_ladder(goal, &log.trials));
    rungs.extend(extra.iter().map(|x| goal * x));
    let mut cells = 0;
    for t in rungs {
        assert!(t >= goal);
        let a = analysed(&study, &log.trials, t);
        let b = brute_force(&log.trials, t);
        assert_eq!(a, b, "{}: S(B) at {t}", log.path.display());
        cells += a.values().filter(|s| s.is_some()).count();
        let c = analysed_confirmed(&study, &log.trials, t);
        let d = brute_confirmed(&log.trials, t);
        assert_eq!(c, d, "{}: confirmed S(B) at {t}", log.path.display());
    }
    cells
}

/// A tiny deterministic generator for the randomised test.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn record(id: u64, b: usize, evals: Vec<EvalPoint>, outcome: Outcome, steps: u64) -> TrialRecord {
    let spec = TrialSpec {
        trial_id: id,
        ..TrialSpec::cpu(b, Metaparams::new(0.1, 0.9))
    };
    TrialRecord::new(
        spec,
        TrialOutcome {
            evals,
            ..TrialOutcome::bare(outcome, steps)
        },
    )
}

/// The scheduler's rules on random full-length curves: trials in plan order, each stopping at
/// the first evaluation meeting the goal, at its budget, where it diverges, or at the early-
/// stopping cap (its B's best steps-to-goal so far; the meter evaluates at the cap). Compared at
/// every looser target with the full-length curves, where every cut trial is given the most
/// favourable continuation (it meets everything right after it stopped).
#[test]
fn no_continuation_of_a_cut_trial_changes_a_looser_reading() {
    let every = 10u64;
    let budget = 400u64;
    let mut rng = Lcg(7);
    let mut cells = 0;
    let mut met_then_diverged = 0;
    for case in 0..300 {
        let goal = 0.05 + 0.1 * rng.next();
        let sizes = [8usize, 16, 32, 64];
        let k = 2 + (case % 7);
        let mut full: Vec<(u64, usize, Vec<EvalPoint>)> = Vec::new();
        let mut id = 0;
        for _ in 0..k {
            for &b in &sizes {
                let tau = 20.0 + 300.0 * rng.next() * (64.0 / b as f64).sqrt();
                let floor = 0.3 * rng.next() * goal * 2.0;
                let diverge_at =
                    (rng.next() < 0.2).then(|| every * (1 + (rng.next() * 40.0) as u64));
                let evals: Vec<EvalPoint> = (1..=budget / every)
                    .map(|i| {
                        let step = i * every;
                        let noise = 1.0 + 0.15 * (rng.next() - 0.5);
                        let mut m = (floor + (1.0 - floor) * (-(step as f64) / tau).exp()) * noise;
                        if diverge_at.is_some_and(|d| step >= d) {
                            m = f64::NAN;
                        }
                        EvalPoint {
                            step,
                            metric: m,
                            train_loss: 0.0,
                        }
                    })
                    .collect();
                full.push((id, b, evals));
                id += 1;
            }
        }
        // Run them as the scheduler does (one at a time, plan order).
        let mut best: BTreeMap<usize, u64> = BTreeMap::new();
        let mut cut = Vec::new();
        let mut favourable = Vec::new();
        for (id, b, evals) in &full {
            let cap = best.get(b).copied().filter(|&c| c < budget);
            let stop_budget = cap.unwrap_or(budget);
            let mut seen = Vec::new();
            let mut outcome = Outcome::NotReached {
                budget: stop_budget,
                early_stopped: cap.is_some(),
            };
            for e in evals.iter().filter(|e| e.step <= stop_budget) {
                seen.push(*e);
                if !e.metric.is_finite() {
                    outcome = Outcome::Diverged { step: e.step };
                    break;
                }
                if e.metric <= goal {
                    outcome = Outcome::Reached { step: e.step };
                    break;
                }
            }
            if let Outcome::Reached { step } = outcome {
                if best.get(b).is_none_or(|&s| step < s) {
                    best.insert(*b, step);
                }
            }
            let stopped = seen.last().map(|e| e.step).unwrap_or(0);
            // the most favourable continuation of a trial cut short: it meets every target at
            // the next step
            let mut fav = seen.clone();
            if !matches!(outcome, Outcome::Diverged { .. }) && stopped < budget {
                fav.push(EvalPoint {
                    step: stopped + 1,
                    metric: 0.0,
                    train_loss: 0.0,
                });
            }
            favourable.push(record(
                *id,
                *b,
                fav,
                Outcome::NotReached {
                    budget,
                    early_stopped: false,
                },
                budget,
            ));
            cut.push(record(*id, *b, seen, outcome, stopped));
        }
        let study = Study::bare(
            Target {
                metric: Metric::ValError,
                value: goal,
            },
            OptimizerKind::Sgd,
        );
        for f in [1.0, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0] {
            let t = goal * f;
            let a = analysed(&study, &cut, t);
            assert_eq!(a, brute_force(&favourable, t), "case {case}, target {t}");
            // and every early-stopped trial stands where the argument says: met the target in
            // what it ran, or censored at or after S(B; T)
            let observed = Observed::of(&cut, &Reading::At(study.at(t).target));
            for (b, obs) in &observed.search {
                for (_, o) in obs {
                    if let Observation::Censored { at, .. } = o {
                        assert!(
                            a[b].is_some_and(|s| *at >= s),
                            "case {case}: {o:?} at B = {b}"
                        );
                    }
                }
            }
            // a trial that met T and diverged later did meet it
            for r in &cut {
                if let (Outcome::Diverged { .. }, Some(first)) = (
                    &r.outcome.outcome,
                    r.outcome.evals.iter().find(|e| e.metric <= t),
                ) {
                    let target = study.at(t).target;
                    assert_eq!(
                        observe(r, &Reading::At(target)),
                        Observation::Reached { step: first.step }
                    );
                    met_then_diverged += 1;
                }
            }
            cells += a.values().filter(|s| s.is_some()).count();
        }
    }
    assert!(cells > 3000, "{cells}");
    assert!(met_then_diverged > 50, "{met_then_diverged}");
}

/// An NQM ladder sweep into a fresh directory.
fn nqm_ladder(
    early_stopping: bool,
    goal: f64,
    targets: Vec<f64>,
) -> (tempfile::TempDir, SweepConfig) {
    let dir = tempfile::tempdir().unwrap();
    let mut preset = common::nqm_preset(OptimizerKind::Momentum);
    preset.workload.target.value = goal;
    preset.workload.targets = targets;
    preset.sweep.early_stopping = early_stopping;
    // η up to 16: a share of the trials diverge (η·h_max beyond the stable range)
    preset.search.learning_rate = [1e-3, 16.0];
    let cfg = SweepConfig {
        batch_sizes: vec![1, 4, 16, 64, 256],
        trials_per_batch: 8,
        concurrency: 3,
        seed: 5,
        ..common::sweep_config(preset, dir.path())
    };
    (dir, cfg)
}

#[test]
fn nqm_ladder_sweep_every_rung_is_exact_and_equals_full_length_trials() {
    let (_d, cfg) = nqm_ladder(true, 0.05, vec![0.4, 0.2, 0.1]);
    let (res, _) = common::run_sweep(cfg, Arc::new(NqmRunner), None);
    let log = read_run_log(&res.log_path).unwrap();
    // a ladder without a calibration stage: the schema that has the ladder
    assert_eq!(
        log.header.schema,
        scaling_lab::core::record::SCHEMA_WITHOUT_CALIBRATION
    );
    assert_eq!(
        ladder_of(&log.header.preset.workload),
        vec![0.4, 0.2, 0.1, 0.05]
    );
    let count =
        |f: fn(&Outcome) -> bool| log.trials.iter().filter(|t| f(&t.outcome.outcome)).count();
    assert!(
        count(|o| matches!(
            o,
            Outcome::NotReached {
                early_stopped: true,
                ..
            }
        )) > 0
    );
    assert!(count(|o| matches!(o, Outcome::Diverged { .. })) > 0);
    assert!(check_log(&log, &[1.3, 2.5, 7.0]) > 20);
    // The same trials run to their full budget (no early stopping, a goal nothing meets).
    let (_d2, cfg2) = nqm_ladder(false, 1e-12, vec![]);
    let (full, _) = common::run_sweep(cfg2, Arc::new(NqmRunner), None);
    let full = read_run_log(&full.log_path).unwrap();
    let study = Study::of_preset(&log.header.preset);
    for t in [0.4, 0.2, 0.1, 0.05, 0.07, 0.3] {
        assert_eq!(
            analysed(&study, &log.trials, t),
            brute_force(&full.trials, t),
            "ladder sweep vs full-length trials at {t}"
        );
    }
    // A stricter target than the goal is not measured where the goal's stops hide trials.
    let strict = analyze(&study.at(0.02), &log.trials);
    assert!(strict.per_batch.iter().any(|p| p.not_measured));
    assert!(strict.fit.is_none());
}

#[test]
fn resumed_nqm_ladder_sweep_is_exact() {
    let (dir, mut cfg) = nqm_ladder(true, 0.05, vec![0.3, 0.1]);
    cfg.concurrency = 1;
    let (res, _) = common::run_sweep(cfg.clone(), Arc::new(NqmRunner), None);
    // Keep the header and the first 13 trials, then resume: the rest run with caps from those.
    let text = std::fs::read_to_string(&res.log_path).unwrap();
    let cut: Vec<&str> = text.lines().take(14).collect();
    let path = dir.path().join("cut.jsonl");
    std::fs::write(&path, cut.join("\n") + "\n").unwrap();
    let (resumed, _) = common::run_sweep(cfg, Arc::new(NqmRunner), Some(path.clone()));
    assert_eq!(resumed.trials_run, 40 - 13);
    let log = read_run_log(&path).unwrap();
    assert_eq!(log.trials.len(), 40);
    // the resumed trials were capped by the best steps-to-goal of those before the cut
    assert!(log.trials[13..].iter().any(|t| matches!(
        t.outcome.outcome,
        Outcome::NotReached {
            early_stopped: true,
            ..
        }
    )));
    assert!(check_log(&log, &[1.5, 4.0]) > 10);
}

#[test]
fn trained_digits_ladder_sweep_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let mut preset = scaling_lab::workload::load::load_preset(
        &common::root().join("presets/digits-mlp-momentum.toml"),
    )
    .unwrap();
    preset.workload.target.value = 0.06;
    preset.workload.targets = vec![0.3, 0.15, 0.1];
    let cfg = SweepConfig {
        batch_sizes: vec![16, 64, 256],
        trials_per_batch: 3,
        concurrency: 1,
        seed: 1,
        ..common::sweep_config(preset, dir.path())
    };
    let runner = scaling_lab::sweep::runner_for(&cfg.preset.workload, &Default::default()).unwrap();
    let (res, _) = common::run_sweep(cfg, runner, None);
    let log = read_run_log(&res.log_path).unwrap();
    assert!(check_log(&log, &[1.2, 2.0]) > 6);
}

#[test]
fn fixture_logs_are_exact_at_looser_targets() {
    for f in [
        "digits-momentum-2workers.jsonl",
        "batch-science-momentum.jsonl",
        "nqm-narrow-widen.jsonl",
        "nqm-narrow-edges.jsonl",
    ] {
        let log = read_run_log(&common::root().join("tests/fixtures/golden").join(f)).unwrap();
        // schema 1 logs still read (no ladder: a single target)
        assert_eq!(log.header.schema, 1, "{f}");
        check_log(&log, &[1.1, 1.7, 3.0]);
    }
}
