//! The transfer probe in real short trainings (CPU, a small char-LSTM on the bundled reviews): a
//! trial's readout carries its controls on the same test sentences, its step-0 control is the
//! probe of the untrained network of its seed, a `transfer_acc` target stops a trial at the
//! probe's accuracy, and a member of a fused group reads out what it reads out alone.

use crate::common;

use scaling_lab::core::runner::{Group, GroupCut, TrialRunner};
use scaling_lab::core::transfer::{PairedCounts, ProbeScore};
use scaling_lab::core::trial::{CancelToken, DeviceSpec, Outcome, TrialOutcome, TrialSpec};
use scaling_lab::data::probe::ProbeSizes;
use scaling_lab::data::spec::DatasetSpec;
use scaling_lab::model::encoder::TransferFeature;
use scaling_lab::model::ModelSpec;
use scaling_lab::model::Net;
use scaling_lab::train::trainer::input_shape;
use scaling_lab::train::{BurnRunner, TrainOptions};
use scaling_lab::transfer;
use scaling_lab::workload::spec::*;

/// A char-LSTM of embedding 8 and hidden 16 (the family's default, its knobs set).
fn char_lstm() -> ModelSpec {
    let family = scaling_lab::model::family::registration("char-lstm").unwrap();
    let bytes = scaling_lab::model::InputShape {
        channels: 0,
        height: 0,
        width: 0,
        classes: 256,
        vocab: 256,
        seq_len: 32,
    };
    let mut spec = family
        .default_for(scaling_lab::model::Input::Text, &bytes)
        .unwrap();
    spec.set_knob("embed", "8").unwrap();
    spec.set_knob("hidden", "16").unwrap();
    spec
}

fn workload() -> Workload {
    Workload {
        dataset: Some(DatasetSpec {
            split_seed: 3,
            max_bytes: Some(60_000),
            seq_len: 32,
            max_val: Some(8),
            probe: Some(ProbeSizes {
                train: 80,
                val: 30,
                test: 60,
            }),
            ..DatasetSpec::named("reviews")
        }),
        model: char_lstm(),
        optimizer: OptimizerKind::Adam,
        target: Target {
            metric: Metric::ValBpc,
            value: 0.5,
        },
        targets: Vec::new(),
        eval_every: 5,
        eval_growth: 0.0,
        step_budget: 10,
        max_examples: None,
        precision: Precision::Fp32,
        defaults: Metaparams::new(0.01, 0.9),
        grad_clip: Some(1.0),
        divergence_factor: 10.0,
        transfer: Some(TransferSpec {
            feature: TransferFeature::Cell,
            every: 1,
            standardize: false,
        }),
    }
}

fn options() -> TrainOptions {
    TrainOptions {
        step_event_interval: std::time::Duration::ZERO,
        ..Default::default()
    }
}

fn spec(w: &Workload, seed: u64, lr_scale: f64) -> TrialSpec {
    let mut mp = w.defaults.clone();
    mp.learning_rate *= lr_scale;
    TrialSpec {
        trial_id: seed,
        seed,
        devices: DeviceSpec::Cpu { workers: 1 },
        ..TrialSpec::cpu(8, mp)
    }
}

fn alone(w: &Workload, s: &TrialSpec) -> TrialOutcome {
    common::train(w, s, options()).0
}

/// Both-right + only-one counts agree with each side's own correct count.
fn consistent(p: &PairedCounts, a: &ProbeScore, b: &ProbeScore) {
    assert_eq!(p.both + p.only_probe + p.only_other + p.neither, a.n);
    assert_eq!(p.both + p.only_probe, a.correct);
    assert_eq!(p.both + p.only_other, b.correct);
}

#[test]
fn a_trial_reads_out_its_probe_beside_its_controls() {
    let w = workload();
    let s = spec(&w, 7, 1.0);
    let out = alone(&w, &s);
    assert_eq!(
        out.outcome,
        Outcome::NotReached {
            budget: 10,
            early_stopped: false
        }
    );
    let t = out.transfer.as_ref().expect("a transfer record");
    // every evaluation probed (every = 1), with the LM's bits per byte beside
    let steps: Vec<u64> = t.curve.iter().map(|p| p.step).collect();
    assert_eq!(steps, vec![5, 10]);
    for (p, e) in t.curve.iter().zip(&out.evals) {
        assert!((0.0..=1.0).contains(&p.acc));
        assert_eq!(p.val_bpc, Some(e.metric), "the evaluation's bits per byte");
    }
    let r = t
        .readout
        .as_ref()
        .expect("a readout at the end of the budget");
    assert_eq!(r.step, 10);
    assert_eq!(r.val_bpc, Some(out.evals[1].metric));
    assert_eq!(r.feature, "cell");
    for x in [&r.probe, &r.control, &r.bytes] {
        assert_eq!(x.n, 60);
        assert!(x.correct <= 60 && x.nonzero <= x.features);
        assert!(transfer::logreg::c_grid().contains(&x.c));
    }
    assert_eq!(r.probe.features, 16);
    assert!(r.majority_correct <= 60);
    consistent(&r.vs_control, &r.probe, &r.control);
    consistent(&r.vs_bytes, &r.probe, &r.bytes);
    // the readout's probe is the last curve point's (the same weights, the same fit)
    assert_eq!(r.probe.acc(), t.curve[1].acc);
    assert!(t.cost_s > 0.0);

    // the step-0 control is the probe of the network the trial started from: its seed's
    // untrained network, rebuilt here
    let data = scaling_lab::data::load_cached(w.dataset.as_ref().unwrap()).unwrap();
    let set = data.as_text().unwrap().probe.clone().unwrap();
    let dev = Default::default();
    let net = Net::<burn::backend::Flex>::init(&w.model, input_shape(&data), s.seed, &dev).unwrap();
    let f = transfer::encode::encode(
        &net,
        &transfer::sentences(&set),
        TransferFeature::Cell,
        transfer::encode::DEFAULT_BATCH_ELEMENTS,
        &dev,
    )
    .unwrap();
    let rows = transfer::split_rows(&set, f.width, &f.per_member[0], false);
    assert_eq!(transfer::fit_probe(&rows, &set, true).score, r.control);
}

/// A `transfer_acc` target: the metric of every evaluation is the probe's accuracy (maximised),
/// and a trial stops at the first one that meets it.
#[test]
fn a_transfer_target_is_the_probes_accuracy() {
    let mut w = workload();
    w.target = Target {
        metric: Metric::TransferAcc,
        value: 0.999,
    };
    w.transfer = Some(TransferSpec {
        every: 0,
        ..w.transfer.unwrap()
    });
    let s = spec(&w, 7, 1.0);
    let out = alone(&w, &s);
    assert!(matches!(out.outcome, Outcome::NotReached { .. }));
    let t = out.transfer.as_ref().unwrap();
    let metrics: Vec<f64> = out.evals.iter().map(|e| e.metric).collect();
    let accs: Vec<f64> = t.curve.iter().map(|p| p.acc).collect();
    assert_eq!(metrics, accs, "every evaluation probes, whatever `every`");
    w.target.value = 0.01;
    let out = alone(&w, &s);
    assert_eq!(out.outcome, Outcome::Reached { step: 5 });
    let r = out
        .transfer
        .unwrap()
        .readout
        .expect("a reached trial reads out");
    assert_eq!(r.step, 5);
}

/// A member of a fused group probes and reads out exactly what it does alone (the encoder reads
/// its own weights out of the group's).
#[test]
fn a_fused_member_reads_out_what_it_reads_out_alone() {
    let w = workload();
    let specs = vec![spec(&w, 7, 1.0), spec(&w, 11, 0.5)];
    let runner = BurnRunner::new(options());
    let cancels = vec![CancelToken::new(); specs.len()];
    let mut outs: Vec<Option<TrialOutcome>> = vec![None; specs.len()];
    runner.run_group(
        &w,
        &Group {
            specs: &specs,
            cancels: &cancels,
            cut: GroupCut::None,
        },
        &mut |_, _| {},
        &mut |i, r| outs[i] = Some(r.expect("the member trains")),
    );
    for (i, s) in specs.iter().enumerate() {
        let g = outs[i].as_ref().unwrap().transfer.clone().unwrap();
        let a = alone(&w, s).transfer.unwrap();
        let (gr, ar) = (g.readout.unwrap(), a.readout.unwrap());
        assert_eq!(gr.control, ar.control, "member {i}: step-0 control");
        assert_eq!(gr.probe, ar.probe, "member {i}: probe");
        assert_eq!(gr.vs_control, ar.vs_control, "member {i}");
        let accs = |c: &[scaling_lab::core::transfer::TransferPoint]| {
            c.iter().map(|p| (p.step, p.acc)).collect::<Vec<_>>()
        };
        assert_eq!(accs(&g.curve), accs(&a.curve), "member {i}: curve");
    }
}
