//! The optimizer update held against Burn's optimizers and against a member alone.

use super::*;
use burn::backend::Autodiff;
use burn::optim::{AdamConfig, Optimizer};

type Ad = Autodiff<Flex>;

fn t<IB: Backend>(v: &[f32]) -> Tensor<IB, 1> {
    Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), &Default::default())
}
fn vals<IB: Backend>(t: Tensor<IB, 1>) -> Vec<f32> {
    t.into_data().to_vec::<f32>().unwrap()
}

fn run(
    kind: OptimizerKind,
    hyper: &[Hyper],
    w0: &[f32],
    grads: &[Vec<f32>],
    plans: &[Vec<MemberStep>],
    fused: bool,
) -> (Vec<f32>, Option<Vec<f32>>) {
    let mut p = Parts::<Flex> {
        w: t(w0),
        g: t(&grads[0]),
        first: None,
        second: None,
    };
    let mut steps = vec![0u32; hyper.len()];
    for (g, plan) in grads.iter().zip(plans) {
        p.g = t(g);
        let m = Members {
            kind,
            hyper,
            steps: &steps,
            plan,
        };
        let parts = Parts {
            w: p.w,
            g: p.g,
            first: p.first,
            second: p.second,
        };
        p = if fused {
            fused_flex(parts, &m).ok().expect("f32 contiguous")
        } else {
            update_ops(parts, &m)
        };
        for (n, s) in steps.iter_mut().zip(plan) {
            if s.apply {
                *n += 1;
            }
        }
    }
    (vals(p.w), p.first.map(vals))
}

fn hyper(momentum: f64) -> Hyper {
    Hyper {
        momentum,
        beta1: momentum as f32,
        beta2: 0.99,
        epsilon: 1e-7,
    }
}

/// The one-pass CPU update and the tensor-op update agree bitwise for every optimizer, with
/// members that differ in every hyperparameter and one member skipping a step.
#[test]
fn the_fused_and_the_tensor_op_updates_agree_per_member() {
    let len = 257;
    let k = 3;
    let w0: Vec<f32> = (0..k * len)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
        .collect();
    let grads: Vec<Vec<f32>> = (0..4)
        .map(|s| {
            (0..k * len)
                .map(|i| ((i * 13 + s * 7) % 97) as f32 / 31.0 - 1.5)
                .collect()
        })
        .collect();
    let hs = [hyper(0.9), hyper(0.5), hyper(0.99)];
    let plan = |s: usize| -> Vec<MemberStep> {
        (0..k)
            .map(|i| MemberStep {
                lr: 0.05 + 0.01 * (s + i) as f64,
                factor: 1.0 / (1.0 + i as f64),
                apply: !(s == 1 && i == 2 || s == 0 && i == 1),
            })
            .collect()
    };
    let plans: Vec<Vec<MemberStep>> = (0..4).map(plan).collect();
    for kind in [
        OptimizerKind::Sgd,
        OptimizerKind::Momentum,
        OptimizerKind::Nesterov,
        OptimizerKind::Adam,
    ] {
        let a = run(kind, &hs, &w0, &grads, &plans, true);
        let b = run(kind, &hs, &w0, &grads, &plans, false);
        for (x, y) in a.0.iter().zip(&b.0) {
            assert!(
                (x - y).abs() <= 1e-6 * (1.0 + y.abs()),
                "{kind:?}: {x} vs {y}"
            );
        }
        assert_ne!(a.0, w0, "{kind:?}: nothing moved");
        // member 1 skipped step 0 and member 2 step 1; a member that never applies keeps w
        let stuck = vec![
            MemberStep {
                lr: 0.1,
                factor: 1.0,
                apply: false
            };
            k
        ];
        let c = run(kind, &hs, &w0, &grads[..1], &[stuck], true);
        assert_eq!(c.0, w0, "{kind:?}: a skipped step moved the weights");
    }
}

/// A member of a group updates exactly as the same trial alone (bitwise, every optimizer,
/// including a skipped step in the group).
#[test]
fn a_member_updates_as_it_would_alone() {
    let len = 64;
    let k = 3;
    let w0: Vec<f32> = (0..k * len).map(|i| (i as f32 * 0.37).sin()).collect();
    let grads: Vec<Vec<f32>> = (0..5)
        .map(|s| {
            (0..k * len)
                .map(|i| ((i + s * 11) as f32 * 0.11).cos())
                .collect()
        })
        .collect();
    let hs = [hyper(0.9), hyper(0.7), hyper(0.95)];
    let plans: Vec<Vec<MemberStep>> = (0..5)
        .map(|s| {
            (0..k)
                .map(|i| MemberStep {
                    lr: 0.01 * (1 + i) as f64,
                    factor: 0.5,
                    apply: !(s == 2 && i == 0),
                })
                .collect()
        })
        .collect();
    for kind in [
        OptimizerKind::Momentum,
        OptimizerKind::Nesterov,
        OptimizerKind::Adam,
        OptimizerKind::Sgd,
    ] {
        let (group, _) = run(kind, &hs, &w0, &grads, &plans, true);
        for i in 0..k {
            let r = i * len..(i + 1) * len;
            let solo_grads: Vec<Vec<f32>> = grads.iter().map(|g| g[r.clone()].to_vec()).collect();
            let solo_plans: Vec<Vec<MemberStep>> = plans.iter().map(|p| vec![p[i]]).collect();
            let (solo, _) = run(
                kind,
                &hs[i..i + 1],
                &w0[r.clone()],
                &solo_grads,
                &solo_plans,
                true,
            );
            assert_eq!(&group[r], &solo[..], "{kind:?} member {i}");
        }
    }
}

/// Our Adam is Burn's `Adam` (whose update rule the engine tests hold against PyTorch's):
/// same weights over steps, bitwise on the CPU.
#[test]
fn our_adam_is_burns_adam() {
    use burn::module::Module;
    #[derive(Module, Debug)]
    struct W<B: Backend> {
        w: Param<Tensor<B, 1>>,
    }
    let dev = Default::default();
    let w0: Vec<f32> = (0..50).map(|i| (i as f32 * 0.3).sin()).collect();
    let mk = || W::<Ad> {
        w: Param::from_tensor(t::<Ad>(&w0)),
    };
    let (b1, b2, eps, lr) = (0.85f32, 0.995f32, 1e-8f32, 0.003);
    let config = AdamConfig::new()
        .with_beta_1(b1)
        .with_beta_2(b2)
        .with_epsilon(eps);
    let mut burn_opt = config.init::<Ad, W<Ad>>();
    let mut ours = Opt::<Ad>::new(
        OptimizerKind::Adam,
        &Metaparams {
            learning_rate: lr,
            momentum: b1 as f64,
            beta2: b2 as f64,
            epsilon: eps as f64,
            schedule: Default::default(),
        },
    );
    let (mut a, mut b) = (mk(), mk());
    for s in 0..6 {
        let x: Vec<f32> = (0..50).map(|i| ((i + s * 3) as f32 * 0.7).cos()).collect();
        let loss = |m: &W<Ad>| {
            (m.w.val() * Tensor::<Ad, 1>::from_data(TensorData::new(x.clone(), [50]), &dev))
                .powi_scalar(2)
                .sum()
        };
        let ga = GradientsParams::from_grads(loss(&a).backward(), &a);
        a = burn_opt.step(lr, a, ga);
        let gb = GradientsParams::from_grads(loss(&b).backward(), &b);
        b = ours.step(lr, b, gb);
        assert_eq!(vals(a.w.val().inner()), vals(b.w.val().inner()), "step {s}");
    }
}

/// Batch normalisation's running statistics are state, not parameters: they get no gradient, so
/// the one-replica exchange and its clipping norm, the noise scale's norm and the optimizer's
/// update (momentum, Adam) leave them bit for bit while the weights move; `Net::with_stats` is
/// what moves them, to the values the training forward computed.
#[test]
fn running_statistics_are_untouched_by_every_gradient_path() {
    use crate::model::{Batch, Ctx, InputShape, Net};
    use burn::module::{Module, ModuleVisitor};
    use burn::tensor::Int;
    use std::collections::HashSet;

    /// (id, values) of each running statistic.
    type Stats = Vec<(ParamId, Vec<f32>)>;
    /// The running statistics (the state the network declares untrained), and the values of
    /// every trained parameter.
    fn split(net: &Net<Ad>) -> (Stats, Vec<Vec<f32>>) {
        struct V(HashSet<ParamId>, Stats, Vec<Vec<f32>>);
        impl ModuleVisitor<Ad> for V {
            fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<Ad, D>>) {
                let v = p.val().inner().into_data().to_vec::<f32>().unwrap();
                if self.0.contains(&p.id) {
                    self.1.push((p.id, v));
                } else {
                    self.2.push(v);
                }
            }
        }
        let untrained = net.network().untrained().into_iter().collect();
        let mut v = V(untrained, Vec::new(), Vec::new());
        net.visit(&mut v);
        (v.1, v.2)
    }

    let dev = Default::default();
    // the ResNet's smallest spec: ResNet-8 of width 3, ghost batches of 2
    let (spec, _) = crate::model::resnet::FAMILY.tiny();
    let shape = InputShape::images(1, 6, 6, 3);
    let k = 2;
    let n = 4;
    let x: Vec<f32> = (0..k * n * 36)
        .map(|i| ((i * 29 % 53) as f32 / 26.0) - 1.0)
        .collect();
    let y: Vec<i64> = (0..k * n).map(|i| (i % 3) as i64).collect();
    let batch = Batch::Images {
        x: Tensor::from_data(TensorData::new(x, [k * n, 1, 6, 6]), &dev),
        y: Tensor::<Ad, 1, Int>::from_data(TensorData::new(y, [k * n]), &dev),
    };
    for kind in [OptimizerKind::Momentum, OptimizerKind::Adam] {
        let net = Net::<Ad>::init_group(&spec, shape, &[5, 6], &dev).unwrap();
        let (stats_before, weights_before) = split(&net);
        assert_eq!(stats_before.len(), 14);
        let (loss, stats) = net.loss_and_stats(&batch, &Ctx::fp32());
        let g = GradientsParams::from_grads(loss.sum().backward(), &net);
        for (id, _) in &stats_before {
            assert!(
                g.get::<Flex, 2>(*id).is_none(),
                "{kind:?}: a running statistic's gradient"
            );
        }
        let r = super::super::exchange::Reduced::single(&net, g, k);
        let sq: Vec<f32> = r.global_sq.clone().into_data().to_vec().unwrap();
        assert!(sq.iter().all(|v| v.is_finite() && *v > 0.0));
        let g = r.into_grads(&net);
        let noise_sq = super::super::grads::sq_norm(&net, &g, k);
        assert_eq!(noise_sq.into_data().to_vec::<f32>().unwrap(), sq);
        let mp = Metaparams::new(0.1, 0.9);
        let mut opt = Opt::<Ad>::group(kind, &[mp.clone(), mp]);
        let plan = [MemberStep::plain(0.1); 2];
        let stepped = opt.step_members(net, g, &plan);
        let (stats_after, weights_after) = split(&stepped);
        assert_eq!(
            stats_after, stats_before,
            "{kind:?}: the update moved a running statistic"
        );
        assert!(
            weights_after != weights_before,
            "{kind:?}: the weights moved"
        );
        let want: Vec<Vec<f32>> = stats
            .iter()
            .map(|(_, t)| t.clone().inner().into_data().to_vec::<f32>().unwrap())
            .collect();
        let (moved, _) = split(&stepped.with_stats(stats, &[true, true]));
        let moved: Vec<Vec<f32>> = moved.into_iter().map(|(_, v)| v).collect();
        assert_eq!(
            moved, want,
            "{kind:?}: with_stats puts in the forward's values"
        );
    }
}
