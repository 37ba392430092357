//! Throughput benchmarks (examples/s), shared by `scaling-lab bench` and `cargo bench`.

use std::time::Instant;

use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::optim::Opt;
use crate::model::{Batch, Ctx, InputShape, Net};
use crate::workload::spec::{Metaparams, ModelSpec, OptimizerKind, Precision, Schedule};

/// The peer's step: MLP 784-H-10, ReLU, softmax cross-entropy, SGD momentum 0.9 on random data
/// (8 pre-made batches cycled, like `jax_mlp_step.py`). Returns examples/s over `steps` timed steps
/// after 20 warm-up steps.
pub fn mlp_step_examples_per_s<B: AutodiffBackend>(
    batch: usize,
    hidden: usize,
    steps: usize,
    precision: Precision,
    device: &Device<B>,
) -> f64 {
    let spec = ModelSpec::Mlp {
        hidden: vec![hidden],
    };
    let shape = InputShape {
        channels: 1,
        height: 28,
        width: 28,
        classes: 10,
        vocab: 0,
        seq_len: 0,
    };
    let mut model: Net<B> = Net::init(&spec, shape, 0, device).expect("mlp");
    let mp = Metaparams {
        learning_rate: 0.05,
        momentum: 0.9,
        beta2: 0.999,
        epsilon: 1e-8,
        schedule: Schedule::default(),
    };
    let mut opt = Opt::<Net<B>, B>::new(OptimizerKind::Momentum, &mp);
    let ctx = Ctx {
        dtype: match precision {
            Precision::Fp32 => None,
            Precision::Bf16 => Some(burn::tensor::FloatDType::BF16),
            Precision::Fp16 => Some(burn::tensor::FloatDType::F16),
        },
    };
    let mut rng = StdRng::seed_from_u64(1);
    let batches: Vec<Batch<B>> = (0..8)
        .map(|_| {
            let x: Vec<f32> = (0..batch * 784)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let y: Vec<i64> = (0..batch).map(|_| rng.random_range(0..10)).collect();
            Batch::Images {
                x: Tensor::from_data(TensorData::new(x, [batch, 1, 28, 28]), device),
                y: Tensor::<B, 1, Int>::from_data(TensorData::new(y, [batch]), device),
            }
        })
        .collect();
    let mut run = |n: usize, model: Net<B>| -> Net<B> {
        let mut m = model;
        let mut last = None;
        for i in 0..n {
            let loss = m.loss(&batches[i % 8], &ctx);
            let g = GradientsParams::from_grads(loss.backward(), &m);
            last = Some(loss);
            m = opt.step(0.05, m, g);
        }
        // synchronise (asynchronous backends): read the last loss back
        if let Some(l) = last {
            let _ = l.into_scalar();
        }
        m
    };
    model = run(20, model);
    let t = Instant::now();
    model = run(steps, model);
    let dt = t.elapsed().as_secs_f64();
    drop(model);
    (steps * batch) as f64 / dt
}

/// Prints the benchmark table: the peer's MLP step at B = 32, 128, 1024 and every preset model at
/// B = 128 through the full data-parallel trainer (1 worker).
pub fn print_report(steps: usize, precision: Precision) {
    use super::runner::CpuTrain;
    let dev = Default::default();
    println!(
        "MLP 784-256-10 train step (SGD momentum 0.9, {}), Flex CPU, 1 worker",
        precision.name()
    );
    println!("{:>8} {:>14} {:>12}", "batch", "examples/s", "ms/step");
    for b in [32usize, 128, 1024] {
        let n = if b >= 1024 { steps / 4 } else { steps }.max(10);
        let eps = mlp_step_examples_per_s::<CpuTrain>(b, 256, n, precision, &dev);
        println!("{b:>8} {eps:>14.0} {:>12.3}", 1e3 * b as f64 / eps);
    }
    println!();
    println!(
        "Preset models at B = 128 through the trainer (eval excluded), {}:",
        precision.name()
    );
    println!(
        "{:<32} {:>14} {:>12} {:>10}",
        "preset", "examples/s", "ms/step", "params"
    );
    let dir = crate::workload::load::presets_dir();
    for (_, p) in crate::workload::load::list_presets(&dir) {
        let Ok(p) = p else { continue };
        if p.workload.dataset.is_none() {
            continue;
        }
        let mut w = p.workload.clone();
        w.step_budget = 30;
        w.eval_every = u64::MAX / 2;
        let spec = crate::core::TrialSpec {
            trial_id: 0,
            batch_size: 128,
            devices: crate::core::DeviceSpec::Cpu { workers: 1 },
            precision,
            metaparams: w.defaults.clone(),
            seed: 0,
            repeat_of: None,
        };
        let runner = super::BurnRunner::new(super::TrainOptions {
            noise_scale: false,
            ..Default::default()
        });
        use crate::core::TrialRunner;
        match runner.run(&w, &spec, &mut |_| {}, &crate::core::CancelToken::new()) {
            Ok(o) => println!(
                "{:<32} {:>14.0} {:>12.2} {:>10}",
                p.name,
                o.throughput.examples_per_s,
                o.throughput.step_s * 1e3,
                o.throughput.params
            ),
            Err(e) => println!("{:<32} error: {e:#}", p.name),
        }
    }
}
