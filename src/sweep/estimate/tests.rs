//! Tests of `estimate`: every stage counted, the cost model's arithmetic, the bound against
//! every schedule the model allows, the expectation from measured trials, the calibration
//! stage.

use std::path::PathBuf;

use super::*;
use crate::analysis::tests::rec;
use crate::core::confirm::{ConfirmId, ConfirmMark};
use crate::core::stages::Stage;
use crate::core::trial::{DeviceSpec, GroupRun, Outcome};
use crate::sweep::layout::{calibration_key, cores, FusedPoint};
use crate::workload::spec::{ConfirmPlan, Fuse};

fn cal(points: Vec<(usize, f64)>, one: f64, many: f64) -> Calibration {
    Calibration {
        key: "k".into(),
        cores: 2,
        one_trial: points,
        batch: 128,
        one_trial_examples_per_s: one,
        many_trials_examples_per_s: many,
        concurrency: 2,
        measured: String::new(),
        n_val: 0,
        fused: Vec::new(),
        trial_overhead_s: 0.0,
    }
}

/// digits-mlp-sgd as a configuration: 10 B × 24 trials, confirm 1×10, `confirm_until` 0.15.
fn digits() -> SweepConfig {
    let (_, preset) = crate::workload::presets::find_preset("digits-mlp-sgd").unwrap();
    SweepConfig::from_preset(preset, None, PathBuf::from("runs"))
}

fn trials(w: &Work, stage: Stage) -> (usize, usize) {
    w.trials
        .iter()
        .find(|t| t.stage == stage)
        .map_or((0, 0), |t| (t.sure, t.most))
}

/// A model where a step at B costs B ms on one slot, evaluations and overheads nothing.
fn ms_per_example(slots: usize, fuse: usize) -> CostModel {
    CostModel {
        step: vec![(1, 1e-3), (1000, 1.0)],
        eval_s: 0.0,
        gains: Vec::new(),
        overhead_s: 0.0,
        slots,
        fuse,
    }
}

#[test]
fn every_stage_is_counted() {
    let mut cfg = digits();
    cfg.batch_sizes = vec![8, 64];
    cfg.trials_per_batch = 6;
    cfg.preset.sweep.confirm = Some(ConfirmPlan {
        configs: 3,
        seeds: 5,
    });
    cfg.until = None;
    cfg.repeats = 1;
    let w = Work::of(&cfg, 1, None, &[], &[]);
    assert_eq!(trials(&w, Stage::Search), (12, 12));
    assert_eq!(
        trials(&w, Stage::Confirm),
        (30, 30),
        "3 configs × 5 seeds × 2 B"
    );
    assert_eq!(w.most_trials(), 42);
    // a confirm stage that asks for more configurations than the search ran: as many as ran
    cfg.trials_per_batch = 2;
    let w = Work::of(&cfg, 1, None, &[], &[]);
    assert_eq!(trials(&w, Stage::Confirm), (20, 20));
    // `confirm_until`: up to the trial budget (4 × the plan by default, search and confirm
    // trials together); repeats R − 1 per B; --widen two groups per move and B
    cfg.trials_per_batch = 6;
    cfg.until = Some(0.15);
    cfg.repeats = 3;
    cfg.widen = 1;
    let w = Work::of(&cfg, 1, None, &[], &[]);
    assert_eq!(trials(&w, Stage::Confirm), (30, 48 - 12));
    assert_eq!(trials(&w, Stage::Repeats), (4, 4));
    assert_eq!(trials(&w, Stage::Search), (12, 12 + 2 * 2 * 4));
    // without a confirm stage `--until` adds search trials
    cfg.preset.sweep.confirm = None;
    cfg.repeats = 1;
    cfg.widen = 0;
    let w = Work::of(&cfg, 1, None, &[], &[]);
    assert_eq!(trials(&w, Stage::Search), (12, 48));
    assert_eq!(trials(&w, Stage::Confirm), (0, 0));
    // the bundled digits preset: 240 search trials, 100 confirm trials, up to 960 in all
    let w = Work::of(&digits(), 8, None, &[], &[]);
    assert_eq!(trials(&w, Stage::Search), (240, 240));
    assert_eq!(trials(&w, Stage::Confirm), (100, 960 - 240));
}

#[test]
fn what_is_done_or_running_is_not_counted_again() {
    let mut cfg = digits();
    cfg.batch_sizes = vec![8, 64];
    cfg.trials_per_batch = 3;
    cfg.until = None;
    cfg.preset.sweep.confirm = Some(ConfirmPlan {
        configs: 1,
        seeds: 2,
    });
    let reached = |id: u64, b: usize| rec(id, b, 0.1, Outcome::Reached { step: 10 }, None);
    let mut confirm = reached(ConfirmId::id(0, 0, 0).unwrap(), 8);
    confirm.spec.confirm = Some(ConfirmMark {
        of: 0,
        rank: 0,
        seed: 0,
    });
    let done = vec![reached(0, 8), reached(1, 64), reached(2, 8), confirm];
    let running = vec![(reached(4, 64).spec, 3.0)];
    let w = Work::of(&cfg, 1, None, &done, &running);
    // search: 6 planned, 3 logged, 1 running (a job of its own, 3 s into its budget)
    assert_eq!(trials(&w, Stage::Search), (2, 2));
    assert_eq!(trials(&w, Stage::Confirm), (3, 3));
    let run = w.side.iter().find(|j| j.ran_s > 0.0).unwrap();
    assert_eq!((run.batch_size, run.ran_s), (Some(64), 3.0));
    let m = ms_per_example(1, 1);
    let all = Estimate::of(&Work::of(&cfg, 1, None, &[], &[]), &m, &Measured::default());
    let left = Estimate::of(&w, &m, &Measured::default());
    assert!(left.at_most_s.unwrap() < all.at_most_s.unwrap());
}

#[test]
fn the_cost_model_counts_layout_fusion_evaluations_and_overhead() {
    // t(B) = 1 ms + 10 µs·B on all threads; 2 at once measured 1.5× one trial's throughput
    let mut c = cal(vec![(16, 0.00116), (1024, 0.01124)], 1000.0, 1500.0);
    c.n_val = 1000;
    c.trial_overhead_s = 0.1;
    c.fused = vec![
        FusedPoint {
            members: 1,
            threads: 1,
            examples_per_s: 100.0,
        },
        FusedPoint {
            members: 4,
            threads: 1,
            examples_per_s: 200.0,
        },
    ];
    let m = CostModel::of_calibration(&c, 2, 1, 4, 1000, 1000);
    // one step at B = 256 on a slot while both run: t(256)·2/1.5
    let t = (0.001 + 0.00001 * 256.0) * 2.0 / 1.5;
    assert!((m.step_s(256) - t).abs() < 1e-12);
    // an evaluation: 1000 examples at half a step per example at B = 1000
    let e = (0.001 + 0.00001 * 1000.0) / 1000.0 * 0.5 * 1000.0 * 2.0 / 1.5;
    assert!((m.eval_s - e).abs() < 1e-12);
    // fused gains: measured, linear between, 1 alone
    assert_eq!(m.gain(1), 1.0);
    assert!((m.gain(4) - 2.0).abs() < 1e-12);
    assert!((m.gain(2) - (1.0 + 1.0 / 3.0)).abs() < 1e-12);
    assert_eq!(m.least_gain(), 1.0);
    // a group of 4 at B = 256, 100 steps and 3 evaluations each
    let g = 4.0 * 100.0 * t / 2.0 + 4.0 * 3.0 * e + 0.1 * 2.0 / 1.5;
    assert!((m.group_s(256, 4, 100, 3) - g).abs() < 1e-9);
    // evaluations on the cadence and at the end of the budget
    let mut w = digits().preset.workload;
    w.eval_every = 10;
    w.eval_growth = 0.0;
    assert_eq!(work::evals_within(&w, 100), 11);
}

/// List scheduling of the side-by-side jobs, waves one after another: whatever share of its
/// budget each job runs (trials stop at the target or early), in whatever order the slots take
/// them, no schedule the model allows ends after the bound.
#[test]
fn the_bound_holds_for_every_schedule_the_model_allows() {
    let mut cfg = digits();
    cfg.batch_sizes = vec![4, 32, 256];
    cfg.trials_per_batch = 7;
    cfg.repeats = 2;
    cfg.until = Some(0.1);
    cfg.max_trials = Some(40);
    for (slots, fuse) in [(1, 1), (2, 1), (2, 3), (3, 8)] {
        let m = ms_per_example(slots, fuse);
        let w = Work::of(&cfg, fuse, None, &[], &[]);
        let e = Estimate::of(&w, &m, &Measured::default());
        let bound = e.at_most_s.unwrap();
        let full = |j: &Job| -> f64 {
            let b = j.batch_size.unwrap_or(256);
            m.group_s(b, j.members, j.steps, j.evals)
        };
        let mut rng = 12345u64;
        let mut next = || {
            rng = crate::core::splitmix64(rng);
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        for draw in 0..200 {
            // each job runs a random share of its budget (the first draw: all of it)
            let mut share = |j: &Job| full(j) * if draw == 0 { 1.0 } else { next() };
            let side: Vec<(Job, f64)> = w.side.iter().map(|j| (*j, share(j))).collect();
            let mut waved: Vec<(Job, f64)> = w.waved.iter().map(|j| (*j, share(j))).collect();
            let mut t = simulate(&side, slots, &mut next);
            // a wave when nothing runs: a random number of the waved jobs, side by side
            while !waved.is_empty() {
                let k = 1 + (next() * waved.len() as f64) as usize;
                let wave: Vec<(Job, f64)> = waved.drain(..k.min(waved.len())).collect();
                t += simulate(&wave, slots, &mut next);
            }
            assert!(
                t <= bound + 1e-9,
                "{slots} slots, fuse {fuse}: {t} > {bound}"
            );
        }
        // and it is no looser than every job to its budget one after another
        let serial: f64 = w.side.iter().chain(&w.waved).map(full).sum();
        assert!(bound <= serial + 1e-9, "{bound} > {serial}");
    }
}

/// A greedy list schedule of `jobs` (job, duration) on `slots`: a chain's serial jobs one after
/// another in order, its other jobs after them; the next job a free slot takes is a random one
/// of those ready. Returns the makespan.
fn simulate(jobs: &[(Job, f64)], slots: usize, next: &mut dyn FnMut() -> f64) -> f64 {
    let mut left: Vec<(Job, f64)> = jobs.to_vec();
    let mut running: Vec<(f64, Job)> = Vec::new(); // (end, job)
    let mut now = 0.0f64;
    let mut serial_left: BTreeMap<u64, usize> = BTreeMap::new();
    for (j, _) in jobs {
        if j.serial {
            *serial_left.entry(j.chain).or_default() += 1;
        }
    }
    while !left.is_empty() || !running.is_empty() {
        loop {
            if running.len() >= slots {
                break;
            }
            let busy = |c: u64| running.iter().any(|(_, r)| r.chain == c && r.serial);
            let ready: Vec<usize> = left
                .iter()
                .enumerate()
                .filter(|(_, (j, _))| {
                    if j.serial {
                        !busy(j.chain)
                    } else {
                        serial_left.get(&j.chain).copied().unwrap_or(0) == 0
                    }
                })
                .map(|(i, _)| i)
                .collect();
            if ready.is_empty() {
                break;
            }
            let i = ready[((next() * ready.len() as f64) as usize).min(ready.len() - 1)];
            let (j, d) = left.remove(i);
            running.push((now + d, j));
        }
        // the next job to end
        let (k, _) = running
            .iter()
            .enumerate()
            .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
            .expect("a job runs");
        let (end, j) = running.remove(k);
        now = end;
        if j.serial {
            *serial_left.get_mut(&j.chain).unwrap() -= 1;
        }
    }
    now
}

#[test]
fn the_expectation_comes_from_measured_trials_only() {
    let mut cfg = digits();
    cfg.batch_sizes = vec![16, 64];
    cfg.trials_per_batch = 4;
    cfg.until = None;
    cfg.preset.sweep.confirm = Some(ConfirmPlan {
        configs: 1,
        seeds: 2,
    });
    let m = ms_per_example(1, 1);
    let w = Work::of(&cfg, 1, None, &[], &[]);
    let e = Estimate::of(&w, &m, &Measured::default());
    assert_eq!(e.expected_s, None, "the model alone gives only the bound");
    assert!(
        e.line().contains("expected: known once trials finish"),
        "{}",
        e.line()
    );
    // search trials measured at both B (1 s each at 16, 2 s at 64); the confirm trials run as
    // long as the longest search trial at their B
    let timed = |id: u64, b: usize, wall: f64| {
        let mut r = rec(id, b, 0.1, Outcome::Reached { step: 10 }, None);
        r.outcome.wall_s = wall;
        r.outcome.steps = 10;
        r
    };
    let recs = vec![
        timed(100, 16, 1.0),
        timed(101, 64, 2.0),
        timed(102, 16, 3.0),
    ];
    let measured = Measured::of(&recs, &cfg.preset.workload);
    let e = Estimate::of(&w, &m, &measured);
    // search: 4 × 2 s at 16, 4 × 2 s at 64; confirm: 2 × 3 s at 16, 2 × 2 s at 64
    let sum = 8.0 + 8.0 + 6.0 + 4.0;
    let (lo, hi) = e.expected_s.unwrap();
    assert!((lo - EXPECTED_LOW * sum).abs() < 1e-9, "{lo}");
    assert!((hi - (EXPECTED_HIGH * sum + 3.0)).abs() < 1e-9, "{hi}");
    assert!(hi <= e.at_most_s.unwrap());
    assert_eq!(e.basis, "3 finished trials");
    // trials that ran slower than the model allows (a busier machine than the calibration's):
    // the estimate says so instead of a range that contradicts the bound
    let slow = vec![timed(100, 16, 1e4), timed(101, 64, 1e4)];
    let e = Estimate::of(&w, &m, &Measured::of(&slow, &cfg.preset.workload));
    let most = e.at_most_s.unwrap();
    assert_eq!(e.expected_s, Some((most, most)));
    let text = e.expected_text().unwrap();
    assert!(
        text.starts_with("expected ≈ ") && text.contains("ran slower than the layout calibration"),
        "{text}"
    );
    // a fused group's trials share its slot: 4 trials of a group that took 8 s cost 2 s each
    let mut g: Vec<TrialRecord> = (0..4).map(|i| timed(200 + i, 16, 8.0)).collect();
    for r in &mut g {
        r.outcome.group = Some(GroupRun {
            trials: (200..204).collect(),
        });
    }
    let ms = Measured::of(&g, &cfg.preset.workload);
    assert!(ms.samples.iter().all(|s| (s.slot_s - 2.0).abs() < 1e-12));
    // earlier complete runs of the same study: their range, widened
    let e = Estimate::of(&w, &m, &Measured::default()).with_earlier(&[10.0, 12.0]);
    assert_eq!(e.expected_s, Some((8.0, 15.0)));
    assert_eq!(e.basis, "2 earlier runs");
}

/// A cached calibration and one measured now give the same estimate: it is a pure function of
/// the calibration (the warning of a slow workload no longer depends on whether the runs
/// directory had one), with its evaluations counted either way.
#[test]
fn cached_and_fresh_calibrations_agree_and_count_evaluations() {
    let mut cfg = digits();
    cfg.batch_sizes = vec![8];
    cfg.trials_per_batch = 1;
    cfg.until = None;
    cfg.concurrency = 1;
    cfg.preset.sweep.confirm = None;
    cfg.fuse = Fuse::Off;
    cfg.preset.workload.eval_every = 100;
    cfg.preset.workload.eval_growth = 0.0;
    // a 1,000-layer MLP: 0.5 s a step
    let mut c = cal(vec![(8, 0.5)], 16.0, 16.0);
    c.key = calibration_key(&cfg.preset.workload, cfg.precision, cores());
    let mut cals = BTreeMap::new();
    cals.insert(c.key.clone(), c.clone());
    let fresh = before_run(&cfg, &c, &[], &[]);
    assert_eq!(estimate_from(&cfg, &cals, &[]), Some(fresh.clone()));
    let steps = fresh.at_most_s.unwrap();
    assert!(fresh.is_long(), "3000 steps × 0.5 s: {steps}");
    let w = long_sweep_warning(&cfg, &fresh).unwrap();
    assert!(
        w.contains("at most 25 min") && w.contains("one trial alone up to 25 min"),
        "{w}"
    );
    // evaluations: 1000 validation examples, 31 evaluations, at half a step per example
    let mut with_val = c.clone();
    with_val.n_val = 1000;
    let e = before_run(&cfg, &with_val, &[], &[]);
    let evals = 31.0 * 1000.0 * (0.5 / 8.0) * 0.5;
    let d = e.at_most_s.unwrap() - steps;
    assert!((d - evals).abs() < 1e-6 * evals, "{d} vs {evals}");
    // a GPU-scale preset: its own warning, with the estimate
    cfg.preset.sweep.gpu_scale = true;
    assert_eq!(long_sweep_warning(&cfg, &fresh), None);
    let g = gpu_scale_warning(&cfg, Some(&fresh)).unwrap();
    assert!(
        g.contains("GPU-scale") && g.contains("estimated at most"),
        "{g}"
    );
    assert!(gpu_scale_warning(&cfg, None).unwrap().contains("--dry-run"));
    cfg.devices = DeviceSpec::Cuda { devices: vec![0] };
    assert_eq!(gpu_scale_warning(&cfg, None), None);
    assert!(estimate_from(&cfg, &cals, &[]).is_none());
}

/// A study whose calibration stage chooses its batch sizes and budget: the reference scan is
/// known exactly, the rounds after it are bounded, the study is known once they chose it; and
/// the bound of the rounds holds for a calibration that runs to its end (the NQM, whose steps
/// are exact).
#[test]
fn the_calibration_stage_is_counted_and_its_rounds_bounded() {
    let inp =
        crate::analysis::calibrate::tests::nqm_inputs(crate::workload::spec::OptimizerKind::Sgd);
    let mut cfg = digits();
    cfg.preset = inp.preset.clone();
    cfg.batch_sizes = Vec::new();
    cfg.trials_per_batch = inp.trials_per_batch;
    let m = ms_per_example(2, 4);
    let w = Work::of(&cfg, 4, Some(&inp), &[], &[]);
    assert!(!w.study_known);
    let p = w.pilots.as_ref().unwrap();
    let (n, steps, b) = p.scan.unwrap();
    assert_eq!(
        (n, steps, b),
        (
            crate::analysis::calibrate::REF_GRID,
            crate::analysis::calibrate::REF_STEPS_CLOSED_FORM,
            crate::analysis::calibrate::REF_BATCH
        )
    );
    let e = Estimate::of(&w, &m, &Measured::default());
    assert_eq!(e.at_most_s, None);
    let text = e.line();
    assert!(
        text.contains("reference scan 8 trials × 2000 steps at B = 64")
            && text.contains("sized to a 14 min 0 s run from their speed"),
        "{text}"
    );
    // sized to a 14 min run: not called long, whatever the pilots' worst-case bounds say
    assert!(!e.is_long());
    // a study that gives its size is not sized: its study is known once chosen
    let mut given = inp.clone();
    given.calibrate.size = false;
    let w2 = Work::of(&cfg, 4, Some(&given), &[], &[]);
    let text = Estimate::of(&w2, &m, &Measured::default()).line();
    assert!(
        text.contains("known once the calibration chose it"),
        "{text}"
    );
    // the calibration run to its end: every pilot it ran, at its budget, within the bound
    let (calibrated, recs) = crate::analysis::calibrate::tests::drive(&inp);
    let ran: f64 = recs
        .iter()
        .map(|r| {
            let mark = r.spec.calibrate.unwrap();
            m.group_s(r.spec.batch_size, 1, mark.budget, 0)
        })
        .sum();
    let bound = e.pilots.as_ref().unwrap().at_most_s;
    assert!(ran / 2.0 <= bound, "{ran} s over 2 slots > {bound}");
    assert!(
        recs.len() <= e.most_trials(),
        "{} > {}",
        recs.len(),
        e.most_trials()
    );
    // once chosen: the calibrated study's stages
    let w = Work::of(&cfg, 4, Some(&inp), &recs, &[]);
    assert!(w.study_known && w.pilots.is_none());
    assert_eq!(w.batch_sizes, calibrated.batch_sizes);
    assert_eq!(
        trials(&w, Stage::Search).0,
        calibrated.batch_sizes.len() * calibrated.trials_per_batch
    );
}

#[test]
fn times_in_words() {
    assert_eq!(human_s(42.4), "42 s");
    assert_eq!(human_s(250.0), "4 min 10 s");
    assert_eq!(human_s(7260.0), "2 h 1 min");
    assert_eq!(short_s(250.0), "4m 10s");
    let e = Estimate {
        trials: Vec::new(),
        pilots: None,
        study_known: true,
        at_most_s: Some(600.0),
        sure_at_most_s: Some(600.0),
        expected_s: Some((100.0, 150.0)),
        basis: "3 finished trials".into(),
        concurrency: 2,
        fuse: 1,
        longest_trial_s: 10.0,
    };
    assert_eq!(e.eta_text(), "1m 40s–2m 30s");
    let bound_only = Estimate {
        expected_s: None,
        ..e
    };
    assert_eq!(bound_only.eta_text(), "≤ 10m");
    assert_eq!(short_s(1641.0), "27m");
}

/// The warning weighs what is expected where measured trials say, else the bound of what the
/// plan is sure to run: `--until` rounds that may add hours do not make a sweep "long" by
/// themselves; one trial of 10 minutes does.
#[test]
fn a_sweep_is_long_by_its_expectation_or_its_sure_work() {
    let mut cfg = digits();
    cfg.batch_sizes = vec![8, 64];
    cfg.trials_per_batch = 3;
    cfg.preset.sweep.confirm = None;
    cfg.until = Some(0.15);
    let m = ms_per_example(1, 1);
    let e = Estimate::of(&Work::of(&cfg, 1, None, &[], &[]), &m, &Measured::default());
    let (sure, most) = (e.sure_at_most_s.unwrap(), e.at_most_s.unwrap());
    assert!(
        sure < most,
        "the --until rounds are in the bound only: {sure} vs {most}"
    );
    cfg.until = None;
    let e = Estimate::of(&Work::of(&cfg, 1, None, &[], &[]), &m, &Measured::default());
    assert_eq!(e.sure_at_most_s, e.at_most_s);
    let base = Estimate {
        trials: Vec::new(),
        pilots: None,
        study_known: true,
        at_most_s: Some(5.0 * 3600.0),
        sure_at_most_s: Some(1800.0),
        expected_s: None,
        basis: String::new(),
        concurrency: 2,
        fuse: 1,
        longest_trial_s: 60.0,
    };
    assert!(!base.is_long(), "5 h only if every --until round runs");
    let sure_long = Estimate {
        sure_at_most_s: Some(2.0 * 3600.0),
        ..base.clone()
    };
    assert!(sure_long.is_long());
    let expected_short = Estimate {
        expected_s: Some((100.0, 200.0)),
        ..sure_long.clone()
    };
    assert!(
        !expected_short.is_long(),
        "measured trials say 200 s at most"
    );
    let one_long_trial = Estimate {
        longest_trial_s: LONG_TRIAL_S,
        ..base
    };
    assert!(one_long_trial.is_long());
}
