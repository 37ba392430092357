//! Fused trial groups are exact: a trial trained in a group reproduces the same trial trained
//! alone (same seed, same metaparameters) — the training loss of every one of its first 50 steps
//! within 1e-5 relative, and the same outcome and steps — for every registered model family (its
//! smallest spec: a family added to `model::FAMILIES` is tested here as it is) and every optimizer
//! (SGD, momentum, Nesterov, Adam), in fp32 and fp16, with one member diverging inside the group,
//! and on two data-parallel workers. Real trainings on the bundled data.

use crate::common;

use scaling_lab::core::events::TrialEvent;
use scaling_lab::core::runner::{Group, GroupCut, TrialRunner};
use scaling_lab::core::trial::{CancelToken, DeviceSpec, Outcome, TrialOutcome, TrialSpec};
use scaling_lab::data::spec::Augment;
use scaling_lab::train::{BurnRunner, TrainOptions};
use scaling_lab::workload::presets::find_preset;
use scaling_lab::workload::spec::*;

fn options() -> TrainOptions {
    TrainOptions {
        step_event_interval: std::time::Duration::ZERO,
        // the default cadence follows the measured cost: fixed here so both runs sample alike
        noise_every: Some(4),
        ..Default::default()
    }
}

/// A preset's workload cut to `steps` steps with an evaluation every 10.
fn workload(preset: &str, steps: u64) -> Workload {
    let mut w = find_preset(preset).unwrap().1.workload;
    w.step_budget = steps;
    w.max_examples = None;
    w.eval_every = 10;
    w.eval_growth = 0.0;
    w
}

/// K trials of `w` at `b` with their own seeds and learning rates (η × `lr_scale[i]`).
fn specs(
    w: &Workload,
    b: usize,
    lr_scale: &[f64],
    precision: Precision,
    workers: usize,
) -> Vec<TrialSpec> {
    lr_scale
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let mut mp = w.defaults.clone();
            mp.learning_rate *= s;
            if w.optimizer.uses_momentum() {
                mp.momentum = (mp.momentum - 0.05 * i as f64).clamp(0.0, 0.99);
            }
            TrialSpec {
                trial_id: 10 + i as u64,
                seed: 100 + 7 * i as u64,
                devices: DeviceSpec::Cpu { workers },
                precision,
                ..TrialSpec::cpu(b, mp)
            }
        })
        .collect()
}

/// Trains `specs` as one group: each member's outcome and per-step training losses.
fn group(w: &Workload, specs: &[TrialSpec], lockstep: bool) -> Vec<(TrialOutcome, Vec<f64>)> {
    let cut = if lockstep {
        GroupCut::FirstReach
    } else {
        GroupCut::None
    };
    group_cut(w, specs, cut)
}

fn group_cut(w: &Workload, specs: &[TrialSpec], cut: GroupCut) -> Vec<(TrialOutcome, Vec<f64>)> {
    let runner = BurnRunner::new(options());
    let cancels = vec![CancelToken::new(); specs.len()];
    let mut losses = vec![Vec::new(); specs.len()];
    let mut outs: Vec<Option<TrialOutcome>> = vec![None; specs.len()];
    runner.run_group(
        w,
        &Group {
            specs,
            cancels: &cancels,
            cut,
        },
        &mut |i, e| {
            if let TrialEvent::Step(st) = e {
                losses[i].push(st.loss);
            }
        },
        &mut |i, r| outs[i] = Some(r.expect("the member trains")),
    );
    outs.into_iter()
        .zip(losses)
        .map(|(o, l)| (o.expect("every member reported"), l))
        .collect()
}

fn alone(w: &Workload, spec: &TrialSpec) -> (TrialOutcome, Vec<f64>) {
    common::train(w, spec, options())
}

/// Member by member: the same per-step losses (1e-5 relative over the first 50 steps), the same
/// outcome, steps and evaluations.
fn assert_members_equal_solo(what: &str, w: &Workload, specs: &[TrialSpec]) {
    let g = group(w, specs, false);
    for (i, spec) in specs.iter().enumerate() {
        let (so, sl) = alone(w, spec);
        let (go, gl) = &g[i];
        assert_eq!(
            go.outcome, so.outcome,
            "{what} member {i}: outcome in the group vs alone"
        );
        assert_eq!(go.steps, so.steps, "{what} member {i}: steps");
        assert_eq!(gl.len(), sl.len(), "{what} member {i}: step events");
        for (s, (a, b)) in gl.iter().zip(&sl).take(50).enumerate() {
            let rel = (a - b).abs() / b.abs().max(1e-12);
            assert!(
                rel <= 1e-5 || (a.is_nan() && b.is_nan()),
                "{what} member {i} step {s}: loss {a} in the group vs {b} alone"
            );
        }
        assert_eq!(
            go.evals.len(),
            so.evals.len(),
            "{what} member {i}: evaluations"
        );
        for (e, f) in go.evals.iter().zip(&so.evals) {
            assert_eq!(e.step, f.step);
            assert!(
                (e.metric - f.metric).abs() <= 1e-4 * f.metric.abs().max(1.0),
                "{what} member {i}: metric at {} {} vs {}",
                e.step,
                e.metric,
                f.metric
            );
        }
        assert_eq!(
            go.group.as_ref().map(|g| g.trials.clone()),
            Some(specs.iter().map(|s| s.trial_id).collect::<Vec<_>>()),
            "{what}: the record names the group"
        );
        assert_eq!(so.group, None);
    }
}

#[test]
fn every_optimizer_on_the_mlp_trains_as_it_would_alone() {
    for preset in [
        "digits-mlp-sgd",
        "digits-mlp-momentum",
        "digits-mlp-nesterov",
        "digits-mlp-adam",
    ] {
        let w = workload(preset, 60);
        let s = specs(&w, 32, &[1.0, 0.5, 2.0], Precision::Fp32, 1);
        assert_members_equal_solo(preset, &w, &s);
    }
}

#[test]
fn augmented_images_train_in_a_group_as_they_would_alone() {
    // Random crops and flips drawn from each trial's seed and step: a member's batches are its
    // solo run's, and they are not the unaugmented batches.
    let mut w = workload("digits-mlp-momentum", 40);
    w.dataset.as_mut().unwrap().augment = Some(Augment {
        crop: 2,
        flip: true,
    });
    let s = specs(&w, 32, &[1.0, 0.5, 2.0], Precision::Fp32, 1);
    assert_members_equal_solo("augmented digits", &w, &s);
    let plain = workload("digits-mlp-momentum", 40);
    let (a, _) = alone(&w, &s[0]);
    let (p, _) = alone(&plain, &s[0]);
    assert_ne!(a.evals, p.evals, "augmentation changes the batches");
}

/// Every registered family with a network (`model::FAMILIES`), at its smallest size on bundled
/// data of its kind (`common::family_workload`): three members with their own seeds and learning
/// rates on one worker, and two on two data-parallel workers (each normalising its own shard,
/// where the family has batch normalisation: every member's normalisation statistics, running
/// averages and the evaluations that read them are its own).
#[test]
fn every_family_trains_in_a_group_as_it_would_alone() {
    let families = scaling_lab::model::FAMILIES.iter();
    for family in families.filter(|f| f.input != scaling_lab::model::Input::None) {
        let w = common::family_workload(family);
        let s = specs(&w, 8, &[1.0, 0.5, 2.0], Precision::Fp32, 1);
        assert_members_equal_solo(family.kind, &w, &s);
        let s = specs(&w, 8, &[1.0, 0.5], Precision::Fp32, 2);
        assert_members_equal_solo(&format!("{} on two workers", family.kind), &w, &s);
    }
}

#[test]
fn fp16_members_scale_and_skip_as_they_would_alone() {
    let w = workload("digits-mlp-momentum", 60);
    let s = specs(&w, 32, &[1.0, 0.5], Precision::Fp16, 1);
    assert_members_equal_solo("fp16", &w, &s);
}

#[test]
fn a_group_on_two_workers_trains_as_its_members_would_alone_on_two() {
    let w = workload("digits-mlp-momentum", 40);
    let s = specs(&w, 32, &[1.0, 0.5], Precision::Fp32, 2);
    let g = group(&w, &s, false);
    for (i, spec) in s.iter().enumerate() {
        let (so, sl) = alone(&w, spec);
        assert_eq!(g[i].0.outcome, so.outcome, "member {i}");
        for (a, b) in g[i].1.iter().zip(&sl) {
            assert!((a - b).abs() <= 1e-5 * b.abs(), "member {i}: {a} vs {b}");
        }
        assert!(g[i].0.throughput.exchanged_bytes_per_step > 0);
    }
}

/// A member that diverges stops at its step with its reason, exactly as alone; the others go on
/// untouched (their losses equal their solo runs) and the diverged one costs nothing after.
#[test]
fn one_diverging_member_never_touches_the_others() {
    let w = workload("digits-mlp-sgd", 60);
    let s = specs(&w, 32, &[1.0, 5000.0, 0.5], Precision::Fp32, 1);
    let (blown, _) = alone(&w, &s[1]);
    assert!(
        matches!(blown.outcome, Outcome::Diverged { .. }),
        "the test needs a diverging learning rate: {:?}",
        blown.outcome
    );
    assert_members_equal_solo("diverging member", &w, &s);
    let g = group(&w, &s, false);
    assert_eq!(g[1].0.reason, blown.reason);
    assert!(
        g[1].0.steps < g[0].0.steps,
        "the diverged member stopped early"
    );
}

/// With the lockstep cut (a sweep's search trials) every member stops at the first member's
/// reach, recorded as cut early; the reaching member's outcome is its solo one.
#[test]
fn a_lockstep_group_stops_every_member_at_the_first_reach() {
    let mut w = workload("digits-mlp-momentum", 400);
    w.target.value = 0.1;
    let s = specs(&w, 64, &[1.0, 0.05, 0.3], Precision::Fp32, 1);
    let solo: Vec<TrialOutcome> = s.iter().map(|t| alone(&w, t).0).collect();
    let first = solo
        .iter()
        .filter_map(|o| o.outcome.steps_to_target())
        .min()
        .expect("a member reaches the target alone");
    let g = group(&w, &s, true);
    for (i, (o, _)) in g.iter().enumerate() {
        match solo[i].outcome.steps_to_target() {
            Some(step) if step == first => assert_eq!(o.outcome, solo[i].outcome, "member {i}"),
            _ => assert_eq!(
                o.outcome,
                Outcome::NotReached {
                    budget: first,
                    early_stopped: true
                },
                "member {i} is cut at the first reach ({first})"
            ),
        }
    }
}

/// With a quorum cut (a confirm block) the members of a cohort stop once `need` of them
/// reached, at that evaluation, recorded as cut early; the members that reached by then (ties
/// included), and every member outside a cohort, end as they would alone.
#[test]
fn a_quorum_group_cuts_a_cohort_at_its_quorum_reach() {
    let mut w = workload("digits-mlp-momentum", 400);
    w.target.value = 0.1;
    let s = specs(&w, 64, &[1.0, 0.05, 0.3, 0.6, 0.8], Precision::Fp32, 1);
    let solo: Vec<TrialOutcome> = s.iter().map(|t| alone(&w, t).0).collect();
    // members 0..4 are one cohort that needs 2 reaches; member 4 is in none
    let mut reach: Vec<u64> = solo[..4]
        .iter()
        .filter_map(|o| o.outcome.steps_to_target())
        .collect();
    reach.sort_unstable();
    assert!(
        reach.len() >= 3,
        "three members of the cohort reach alone: {reach:?}"
    );
    let c = reach[1];
    let cut = GroupCut::Quorum {
        cohort: vec![Some(0), Some(0), Some(0), Some(0), None],
        need: vec![2],
    };
    let g = group_cut(&w, &s, cut);
    let mut cut_members = 0;
    for (i, (o, _)) in g.iter().enumerate() {
        let own = solo[i].outcome.steps_to_target();
        if i == 4
            || own.is_some_and(|st| st <= c)
            || !matches!(solo[i].outcome, Outcome::Reached { .. }) && solo[i].steps <= c
        {
            assert_eq!(o.outcome, solo[i].outcome, "member {i} ends as alone");
        } else {
            cut_members += 1;
            assert_eq!(
                o.outcome,
                Outcome::NotReached {
                    budget: c,
                    early_stopped: true
                },
                "member {i} is cut at the cohort's 2nd reach ({c})"
            );
        }
    }
    assert!(cut_members >= 1, "a member was cut: {reach:?}");
}
