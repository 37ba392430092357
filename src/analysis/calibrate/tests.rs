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

fn nqm_inputs(opt: OptimizerKind) -> Inputs {
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
    }
}

/// Runs the rounds to the end with the NQM runner (every pilot alone: a reach is the same
/// whether a group cut it or not).
pub(crate) fn drive(inp: &Inputs) -> (Calibrated, Vec<TrialRecord>) {
    let runner = NqmRunner::new();
    let mut recs: Vec<TrialRecord> = Vec::new();
    for _ in 0..100 {
        match next(inp, &recs) {
            Next::Run(specs) => {
                for s in specs {
                    if recs.iter().any(|r| r.trial_id == s.trial_id) {
                        continue;
                    }
                    recs.push(run(&runner, inp, s));
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
