//! The calibration's rules where the truth is known: the noisy quadratic model, whose steps to any
//! target at any (B, η) are exact (`nqm::exact_steps_to_target`).

use super::*;
use crate::core::calibrate::workload_for;
use crate::core::calibrate::{Calibrated, Facts};
use crate::core::record::TrialRecord;
use crate::core::runner::TrialRunner;
use crate::core::trial::{CancelToken, DeviceSpec, TrialSpec};
use crate::nqm::{exact_steps_to_target, NqmRunner};
use crate::workload::spec::{Calibrate, OptimizerKind, Precision, Preset, Workload};

const DIM: usize = 1000;

pub(crate) fn nqm_inputs(opt: OptimizerKind) -> Inputs {
    let mut preset = Preset {
        name: "nqm-calibrated".into(),
        description: String::new(),
        workload: Workload::nqm(DIM, opt, 1.0),
        search: Default::default(),
        sweep: Default::default(),
        calibrate: None,
    };
    let all = Calibrate {
        target: true,
        search: true,
        batch_sizes: true,
        budget: true,
        eval: true,
        defaults: true,
        size: true,
    };
    preset.calibrate = Some(all);
    Inputs {
        preset,
        calibrate: all,
        batch_sizes: Vec::new(),
        trials_per_batch: crate::workload::spec::CALIBRATED_TRIALS_PER_BATCH,
        facts: Facts {
            allowed: (0..=20).map(|k| 1usize << k).collect(),
            low_limit: "B = 1".into(),
            high_limit: "the largest batch size tried (2^20)".into(),
            n_train: None,
            train_flops: None,
        },
        seed: 3,
        devices: DeviceSpec::Cpu { workers: 1 },
        precision: Precision::Fp32,
        concurrency: 1,
    }
}

/// Runs the rounds to the end with the NQM runner (every pilot alone: a reach is the same
/// whether a group cut it or not), on a machine that trains a million examples a second.
pub(crate) fn drive(inp: &Inputs) -> (Calibrated, Vec<TrialRecord>) {
    drive_at(inp, 1e-6)
}

/// [`drive`] on a machine of `s_per_example` seconds per example, in every pilot's record (the
/// NQM's own wall time says nothing about a real workload's).
pub(crate) fn drive_at(inp: &Inputs, s_per_example: f64) -> (Calibrated, Vec<TrialRecord>) {
    let runner = NqmRunner::new();
    let mut recs: Vec<TrialRecord> = Vec::new();
    for _ in 0..100 {
        match next(inp, &recs) {
            Next::Run(specs) => {
                for s in specs {
                    if recs.iter().any(|r| r.trial_id == s.trial_id) {
                        continue;
                    }
                    let mut r = run(&runner, inp, s);
                    r.outcome.wall_s =
                        r.outcome.steps as f64 * r.spec.batch_size as f64 * s_per_example;
                    recs.push(r);
                }
            }
            Next::Done(c) => return (*c, recs),
            Next::Failed(m) => panic!("calibration failed: {m}"),
        }
    }
    panic!("more than 100 rounds");
}

fn run(runner: &NqmRunner, inp: &Inputs, s: TrialSpec) -> TrialRecord {
    let w = workload_for(&inp.preset.workload, s.calibrate.as_ref().unwrap());
    let out = runner
        .run(&w, &s, &mut |_| {}, &CancelToken::new())
        .unwrap();
    TrialRecord::new(s, out)
}

/// The true S(B) at `target`: the best constant learning rate on a fine grid.
fn true_steps(opt: OptimizerKind, b: usize, target: f64) -> Option<u64> {
    let lrs = geometric(1e-4, 2.5, 120);
    lrs.iter()
        .filter_map(|&lr| exact_steps_to_target(DIM, 0.5, opt, 0.9, b, lr, target, 2_000_000))
        .min()
}

#[test]
fn on_the_noisy_quadratic_model_the_batch_range_brackets_both_bends() {
    let inp = nqm_inputs(OptimizerKind::Sgd);
    let (c, recs) = drive(&inp);
    let g = c.preset.workload.target.value;
    // the true curve at the chosen target, and its bends (S_min(1 + B_crit/B) fitted to it)
    let pts: Vec<(f64, f64)> = (0..=16)
        .map(|k| 1usize << k)
        .filter_map(|b| true_steps(OptimizerKind::Sgd, b, g).map(|s| (b as f64, s as f64)))
        .collect();
    let fit = crate::analysis::fit::fit_scaling(&pts).unwrap();
    let (b1, b2) = (fit.b_crit / 3.0, 3.0 * fit.b_crit);
    let (lo, hi) = (
        c.batch_sizes[0] as f64,
        *c.batch_sizes.last().unwrap() as f64,
    );
    eprintln!(
        "target {g}: true B_crit {:.1} (bends {b1:.1}, {b2:.1}); range {lo}–{hi}; {} pilots in \
         {} trials; ends {:?} / {:?}",
        fit.b_crit,
        c.pilots.len(),
        recs.len(),
        c.low,
        c.high
    );
    for p in &c.pilots {
        eprintln!(
            "  round {} B {} steps {:?} best lr {:?} (budget {})",
            p.round, p.batch_size, p.steps, p.best_lr, p.budget
        );
    }
    assert!(
        lo <= b1 && hi >= b2,
        "[{lo}, {hi}] does not bracket [{b1}, {b2}]"
    );
    assert!(
        c.low.observed() && c.high.observed(),
        "{:?} {:?}",
        c.low,
        c.high
    );
    // every B's range holds the true best learning rate there
    for &b in &c.batch_sizes {
        let [l, h] = c.preset.search.lr_range_at(b);
        let best = geometric(1e-4, 2.5, 120)
            .into_iter()
            .filter_map(|lr| {
                exact_steps_to_target(DIM, 0.5, OptimizerKind::Sgd, 0.9, b, lr, g, 2_000_000)
                    .map(|s| (s, lr))
            })
            .min_by_key(|x| x.0)
            .unwrap()
            .1;
        assert!(
            best >= l && best <= h,
            "B {b}: best η {best:.3e} outside [{l:.3e}, {h:.3e}]"
        );
    }
    // the same inputs give the same study
    assert_eq!(drive(&inp).0, c);
}

/// The study's size on machines of different speeds: the full plan where it fits the budget,
/// smaller plans (fewer confirm seeds, then the ends thinned, then fewer trials) as the machine
/// slows, each the largest that fits; the ends and every B within 4× of the pilots' B_crit kept.
#[test]
fn the_study_is_sized_to_the_budget_from_the_pilots_speed() {
    use super::size::{Cost, PLANS, WALL_BUDGET_S};
    let inp = nqm_inputs(OptimizerKind::Sgd);
    let (fast, _) = drive(&inp);
    let z = fast.sizing.clone().expect("a sized study");
    assert_eq!((z.trials_per_batch, z.confirm, z.dense), (8, [3, 5], None));
    assert!(!z.over && z.predicted_s <= WALL_BUDGET_S - z.calibration_s);
    let mut seen = Vec::new();
    for s_per_example in (0..=12).map(|k| 1e-5 * 10f64.powf(k as f64 / 6.0)) {
        let (c, recs) = drive_at(&inp, s_per_example);
        let z = c.sizing.clone().unwrap();
        let plan = PLANS
            .iter()
            .position(|p| p.trials_per_batch == z.trials_per_batch && p.confirm == z.confirm)
            .expect("one of the plans");
        // the chosen plan is what the study runs
        assert_eq!(c.trials_per_batch, z.trials_per_batch);
        assert_eq!(c.preset.sweep.trials_per_batch, z.trials_per_batch);
        let cp = c.preset.sweep.confirm.unwrap();
        assert_eq!([cp.configs, cp.seeds], z.confirm);
        // it fits, and the plan before it did not (unless it is the smallest, said `over`)
        let left = WALL_BUDGET_S - z.calibration_s;
        assert_eq!(z.over, z.predicted_s > left, "{z:?}");
        if plan > 0 {
            assert!(z.full_s > left, "{z:?}");
        }
        // the prediction is the pilots' seconds per step times the plan's steps
        let refs: Vec<&TrialRecord> = recs.iter().collect();
        let cost = Cost::of(&refs, inp.concurrency);
        assert!((cost.calibration_s - z.calibration_s).abs() < 1e-9 * z.calibration_s.max(1.0));
        // thinned ends keep each end's pair and the batch sizes around B_crit
        if let Some([a, b]) = z.dense {
            let n = fast.batch_sizes.len();
            for x in [0, 1, n - 2, n - 1].map(|i| fast.batch_sizes[i]) {
                assert!(c.batch_sizes.contains(&x), "end B {x} dropped");
            }
            let bc = super::fitted_b_crit(&c.pilots).unwrap();
            for &x in &fast.batch_sizes {
                let near = x as f64 >= bc / 4.0 && x as f64 <= bc * 4.0;
                assert_eq!(near, x >= a && x <= b, "B {x}, dense {a}–{b}, B_crit {bc}");
                if near {
                    assert!(c.batch_sizes.contains(&x), "B {x} dropped near B_crit {bc}");
                }
            }
            assert!(c.batch_sizes.len() < fast.batch_sizes.len());
        } else {
            assert_eq!(c.batch_sizes, fast.batch_sizes);
        }
        // the same records give the same study
        assert_eq!(drive_at(&inp, s_per_example).0, c);
        seen.push(plan);
    }
    // slower machines never get a larger plan, and the range of speeds reaches the smallest
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&(PLANS.len() - 1)), "{seen:?}");
    assert!(
        seen.iter().any(|&p| p > 0 && p < PLANS.len() - 1),
        "{seen:?}"
    );
}

#[test]
fn tied_rates_read_as_the_middle_one_nearer_the_grid_centre() {
    // two tie at an end and its neighbour: the neighbour, so the grid does not move
    assert_eq!(middle_tied(&[0, 1], 4), 1);
    assert_eq!(middle_tied(&[2, 3], 4), 2);
    // one alone, or an odd count: the (middle) one itself
    assert_eq!(middle_tied(&[0], 4), 0);
    assert_eq!(middle_tied(&[3], 4), 3);
    assert_eq!(middle_tied(&[0, 1, 2], 4), 1);
    // two middle ones as near the centre: the lower
    assert_eq!(middle_tied(&[1, 2], 4), 1);
    assert_eq!(middle_tied(&[0, 1, 2, 3], 4), 1);
    // an 8-rate scan: 5 and 6 tie, 5 is nearer the centre 3.5
    assert_eq!(middle_tied(&[5, 6], 8), 5);
}
