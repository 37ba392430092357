//! Optimizer semantics against PyTorch's documented update rules, computed by hand here in f64
//! (not values recorded from PyTorch), and data-parallel gradient averaging against the full-batch
//! gradient.

use burn::backend::{Autodiff, Flex};
use burn::collective::{reset_collective, PeerId, ReduceOperation};
use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor, TensorData};
use scaling_lab::model::family::registration;
use scaling_lab::model::layers::{param, Ctx, Dense};
use scaling_lab::model::ModelSpec;
use scaling_lab::model::{Batch, Input, InputShape, Net};
use scaling_lab::train::exchange::join_collective;
use scaling_lab::train::optim::Opt;
use scaling_lab::workload::spec::{Metaparams, OptimizerKind};

type B = Autodiff<Flex>;

/// An MLP of `hidden` widths for images of `shape` (the family's default, its knob set).
fn mlp(shape: &InputShape, hidden: &str) -> ModelSpec {
    let mut spec = registration("mlp")
        .unwrap()
        .default_for(Input::Images, shape)
        .unwrap();
    spec.set_knob("hidden", hidden).unwrap();
    spec
}

/// Every parameter's id, in the module's order.
fn param_ids<M: Module<B>>(m: &M) -> Vec<ParamId> {
    struct Ids(Vec<ParamId>);
    impl ModuleVisitor<B> for Ids {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<B, D>>) {
            self.0.push(p.id);
        }
    }
    let mut v = Ids(Vec::new());
    m.visit(&mut v);
    v.0
}

/// Runs 4 optimizer steps on a single weight w with gradients g_t = x_t (loss = x_t·w + b).
fn run_steps(kind: OptimizerKind, mp: &Metaparams, xs: &[f32]) -> Vec<f64> {
    let dev = Default::default();
    let mut m: Dense<B> = Dense {
        w: param(vec![1.0], [1, 1, 1], &dev),
        b: param(vec![0.0], [1, 1], &dev),
    };
    let mut opt = Opt::<B>::new(kind, mp);
    let mut ws = vec![];
    for &x in xs {
        let xt = Tensor::<B, 3>::from_data(TensorData::new(vec![x], [1, 1, 1]), &dev);
        let loss = m.forward(xt, &Ctx::fp32()).sum();
        let g = GradientsParams::from_grads(loss.backward(), &m);
        m = opt.step(mp.learning_rate, m, g);
        ws.push(m.w.val().into_scalar() as f64);
    }
    ws
}

fn mp(lr: f64, momentum: f64) -> Metaparams {
    Metaparams::new(lr, momentum)
}

const XS: [f32; 4] = [0.5, -1.0, 2.0, 0.25];

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
    }
}

#[test]
fn sgd_momentum_nesterov_match_the_pytorch_update_rules_computed_by_hand() {
    let (lr, g) = (0.1, 0.9);
    let expected = |nesterov: bool, mom: f64| {
        let (mut p, mut v, mut out) = (1.0f64, 0.0f64, vec![]);
        for (t, &x) in XS.iter().enumerate() {
            let x = x as f64;
            v = if t == 0 { x } else { mom * v + x }; // dampening 0
            let d = if nesterov { x + mom * v } else { v };
            p -= lr * d;
            out.push(p);
        }
        out
    };
    close(
        &run_steps(OptimizerKind::Sgd, &mp(lr, g), &XS),
        &expected(false, 0.0),
    );
    close(
        &run_steps(OptimizerKind::Momentum, &mp(lr, g), &XS),
        &expected(false, g),
    );
    close(
        &run_steps(OptimizerKind::Nesterov, &mp(lr, g), &XS),
        &expected(true, g),
    );
}

#[test]
fn adam_matches_the_pytorch_update_rule_computed_by_hand() {
    let (lr, b1, b2, eps) = (0.01, 0.9, 0.999, 1e-8);
    let (mut p, mut m, mut v, mut out) = (1.0f64, 0.0f64, 0.0f64, vec![]);
    for (t, &x) in XS.iter().enumerate() {
        let x = x as f64;
        m = b1 * m + (1.0 - b1) * x;
        v = b2 * v + (1.0 - b2) * x * x;
        let mh = m / (1.0 - b1.powi(t as i32 + 1));
        let vh = v / (1.0 - b2.powi(t as i32 + 1));
        p -= lr * mh / (vh.sqrt() + eps);
        out.push(p);
    }
    close(&run_steps(OptimizerKind::Adam, &mp(lr, b1), &XS), &out);
}

#[test]
fn all_reduced_shard_gradients_equal_the_full_batch_gradient() {
    let dev = Default::default();
    let shape = InputShape::images(1, 8, 8, 10);
    let model: Net<B> = Net::init(&mlp(&shape, "32"), shape, 3, &dev).unwrap();
    let n = 64;
    let x: Vec<f32> = (0..n * 64).map(|i| ((i * 37 % 17) as f32) / 16.0).collect();
    let y: Vec<i64> = (0..n).map(|i| (i * 7 % 10) as i64).collect();
    let batch = |lo: usize, hi: usize| Batch::<B>::Images {
        x: Tensor::from_data(
            TensorData::new(x[lo * 64..hi * 64].to_vec(), [hi - lo, 1, 8, 8]),
            &dev,
        ),
        y: Tensor::<B, 1, Int>::from_data(TensorData::new(y[lo..hi].to_vec(), [hi - lo]), &dev),
    };
    let full =
        GradientsParams::from_grads(model.loss(&batch(0, n), &Ctx::fp32()).backward(), &model);
    let ids = param_ids(&model);

    let _guard = scaling_lab::train::exchange::collective_lock();
    reset_collective::<Flex>();
    let g = 4;
    let handles: Vec<_> = (0..g)
        .map(|rank| {
            let replica = model.clone();
            let b = batch(rank * n / g, (rank + 1) * n / g);
            std::thread::spawn(move || {
                join_collective::<Flex>(rank, g, None, &Default::default()).unwrap();
                let grads = GradientsParams::from_grads(
                    replica.loss(&b, &Ctx::fp32()).backward(),
                    &replica,
                );
                grads
                    .all_reduce::<Flex>(PeerId::from(rank), ReduceOperation::Mean)
                    .unwrap()
            })
        })
        .collect();
    let reduced: Vec<GradientsParams> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for r in &reduced {
        for id in &ids {
            let a: Vec<f32> = full
                .get::<Flex, 2>(*id)
                .unwrap()
                .into_data()
                .to_vec()
                .unwrap();
            let b: Vec<f32> = r.get::<Flex, 2>(*id).unwrap().into_data().to_vec().unwrap();
            let diff = a
                .iter()
                .zip(&b)
                .map(|(p, q)| (p - q).abs())
                .fold(0.0f32, f32::max);
            assert!(diff <= 1e-5, "max abs diff {diff}");
        }
    }
    assert!(model.num_params() > 0);
}
