//! Throughput benchmarks, shared by `scaling-lab bench [--json]` and `cargo bench`.
//!
//! * the peer's MLP 784-256-10 step (SGD momentum 0.9, random data) at B = 32, 128, 1024 in examples/s;
//! * Shallue et al.'s paper-size MNIST CNN step (28×28, 5×5 convs 32/64, 2×2 max-pool, dense 1024) at B = 128;
//! * the mnist-cnn-sgd small CNN step (14×14, convs 8/16, dense 32, plain SGD) and the
//!   shakespeare-lstm-adam char-LSTM step (32/64, T = 32, Adam + global-norm clip 1.0) at B = 128;
//! * every data preset's model at B = 128 through the full trainer (1 worker), ms/step;
//! * optionally, per preset, one trial on all threads vs two trials on one thread each (sweep concurrency);
//! * optionally the JAX peers (`benches/peers/*.py`) in the same run, interleaved with ours, best of rounds.
//!
//! [`run_bench`] measures; `report::bench` renders the [`BenchReport`] (tables or JSON).

use std::time::Instant;

use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Device, Int, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::bench_fused::{fused_points, machine_sgemm_gflops, train_flops_per_example, GroupPoint};
use super::bench_peer::{peer_python, run_peer};
pub use super::bench_plan::BenchEvent;
use super::bench_plan::{Planned, Progress};
use super::optim::Opt;
use crate::model::ModelSpec;
use crate::model::{Batch, Ctx, InputShape, Net};
use crate::workload::spec::{Metaparams, OptimizerKind, Precision, Schedule};

/// `scaling-lab bench` flags (flatten into the CLI's `Bench` subcommand).
#[derive(clap::Args, Clone, Debug)]
pub struct BenchArgs {
    /// Timed steps per MLP measurement (the paper CNN a tenth, the small CNN a half, the
    /// char-LSTM an eighth; at least 5).
    #[arg(long, default_value_t = 200, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub steps: usize,
    /// Compute precision of the forward pass: fp32, bf16 or fp16.
    #[arg(long, default_value = "fp32", value_parser = ["fp32", "bf16", "fp16"])]
    pub precision: String,
    /// Print one JSON object (BenchReport) instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also run the JAX peers of every step (benches/peers/*_step.py; python from
    /// $SCALING_LAB_JAX_PYTHON, else a python3 on PATH that imports jax) and print ratios.
    #[arg(long)]
    pub peer: bool,
    /// Rounds per measurement (ours and the peer interleaved); the best round is reported.
    #[arg(long, default_value_t = 1, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100))]
    pub rounds: usize,
    /// Skip the per-preset trainer measurements.
    #[arg(long)]
    pub no_presets: bool,
    /// Measure one trial on all threads vs two trials on one thread each, per preset.
    #[arg(long)]
    pub concurrency: bool,
    /// Only the MLP step (and its peer): skips the CNNs, the char-LSTM and the presets (for
    /// profiling).
    #[arg(long)]
    pub mlp_only: bool,
}

impl Default for BenchArgs {
    fn default() -> Self {
        BenchArgs {
            steps: 200,
            precision: "fp32".into(),
            json: false,
            peer: false,
            rounds: 1,
            no_presets: false,
            concurrency: false,
            mlp_only: false,
        }
    }
}

impl BenchArgs {
    pub fn precision(&self) -> Precision {
        match self.precision.as_str() {
            "bf16" => Precision::Bf16,
            "fp16" => Precision::Fp16,
            _ => Precision::Fp32,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StepPoint {
    pub batch: usize,
    pub examples_per_s: f64,
    pub ms_per_step: f64,
}

/// A JAX peer's figure next to ours: ratio = ours / peer in examples/s (> 1: we are faster).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PeerPoint {
    pub model: String,
    pub batch: usize,
    pub ours_examples_per_s: f64,
    pub peer_examples_per_s: f64,
    pub ratio: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PresetPoint {
    pub preset: String,
    pub batch: usize,
    pub examples_per_s: f64,
    pub ms_per_step: f64,
    pub params: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One trial on all threads vs two concurrent trials on one thread each (total examples/s).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ConcurrencyPoint {
    pub preset: String,
    pub batch: usize,
    pub threads: usize,
    pub one_trial_examples_per_s: f64,
    pub two_trials_examples_per_s: f64,
    /// The faster choice for `[sweep] concurrency`: 1 or 2.
    pub recommended_concurrency: usize,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CpuFeatures {
    pub threads: usize,
    pub avx2: bool,
    pub fma: bool,
    pub avx512f: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct BenchReport {
    pub backend: String,
    pub precision: Precision,
    pub cpu: CpuFeatures,
    /// MLP 784-256-10, SGD momentum 0.9, per batch size.
    pub mlp: Vec<StepPoint>,
    /// Paper-size MNIST CNN at B = 128 (absent with `--mlp-only`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cnn_paper: Option<StepPoint>,
    /// The mnist-cnn-sgd preset's small CNN (14×14, [8, 16] + 32, plain SGD lr 0.2) at B = 128
    /// (absent with `--mlp-only`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_cnn: Option<StepPoint>,
    /// The shakespeare-lstm-adam preset's char-LSTM (32/64, T = 32, Adam + global-norm clip 1.0)
    /// at B = 128 sequences (absent with `--mlp-only`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub char_lstm: Option<StepPoint>,
    pub presets: Vec<PresetPoint>,
    pub concurrency: Vec<ConcurrencyPoint>,
    /// Fused trial groups at B = 128 (all threads; empty with `--mlp-only`): the small CNN with
    /// K = 1 and 8, the `mnist-resnet-momentum` ResNet with K = 1 and 4.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fused: Vec<GroupPoint>,
    /// This machine's sgemm rate (GFLOP/s, all threads), measured in the same run as `fused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_sgemm_gflops: Option<f64>,
    /// Empty unless the peers ran.
    pub peers: Vec<PeerPoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_note: Option<String>,
}

pub fn cpu_features() -> CpuFeatures {
    #[cfg(target_arch = "x86_64")]
    let (avx2, fma, avx512f) = (
        std::arch::is_x86_feature_detected!("avx2"),
        std::arch::is_x86_feature_detected!("fma"),
        std::arch::is_x86_feature_detected!("avx512f"),
    );
    #[cfg(not(target_arch = "x86_64"))]
    let (avx2, fma, avx512f) = (false, false, false);
    CpuFeatures {
        threads: rayon::current_num_threads(),
        avx2,
        fma,
        avx512f,
    }
}

fn ctx_for(precision: Precision) -> Ctx {
    Ctx {
        dtype: super::dtype::compute_dtype(precision),
    }
}

/// One benchmarked training step: the model, its input, the optimizer and the clipping.
#[derive(Clone, Debug)]
pub struct StepCase {
    pub spec: ModelSpec,
    /// Images: channels × height × width and classes; text: vocab and seq_len (random bytes).
    pub shape: InputShape,
    pub optimizer: OptimizerKind,
    pub metaparams: Metaparams,
    /// Global-norm gradient clipping (the trainer's: g × min(1, clip / |g|) over all parameters).
    pub clip: Option<f64>,
}

impl StepCase {
    /// `spec` on 28×28×1 images in 10 classes, SGD momentum 0.9 at lr 0.05 (the MLP and paper-CNN
    /// peers' step).
    pub fn momentum_28x28(spec: ModelSpec) -> Self {
        StepCase {
            spec,
            shape: InputShape::images(1, 28, 28, 10),
            optimizer: OptimizerKind::Momentum,
            metaparams: Metaparams {
                learning_rate: 0.05,
                momentum: 0.9,
                beta2: 0.999,
                epsilon: 1e-8,
                schedule: Schedule::default(),
            },
            clip: None,
        }
    }

    /// The `mnist-cnn-sgd` preset's model and optimizer (`benches/peers/jax_small_cnn_step.py`):
    /// 14×14×1 images (MNIST average-pooled 2×2), the small CNN [8, 16] + 32, plain SGD at the
    /// preset's lr 0.2 (tested against the preset file).
    pub fn small_cnn() -> Self {
        StepCase {
            spec: crate::model::cnn::small(),
            shape: InputShape::images(1, 14, 14, 10),
            optimizer: OptimizerKind::Sgd,
            metaparams: Metaparams {
                learning_rate: 0.2,
                ..Self::momentum_28x28(crate::model::mlp::hidden(vec![])).metaparams
            },
            clip: None,
        }
    }

    /// The `shakespeare-lstm-adam` preset's model and optimizer (`benches/peers/jax_char_lstm_step.py`):
    /// byte-level LSTM (embedding 32, hidden 64) on windows of T = 32 random bytes, Adam (β1 0.9,
    /// β2 0.999, ε 1e-8, lr 0.003) after global-norm clipping at 1.0 (tested against the preset file).
    pub fn char_lstm() -> Self {
        StepCase {
            spec: crate::model::char_lstm::small(),
            shape: InputShape {
                channels: 0,
                height: 0,
                width: 0,
                classes: 0,
                vocab: 256,
                seq_len: 32,
            },
            optimizer: OptimizerKind::Adam,
            metaparams: Metaparams {
                learning_rate: 0.003,
                momentum: 0.9,
                beta2: 0.999,
                epsilon: 1e-8,
                schedule: Schedule::default(),
            },
            clip: Some(1.0),
        }
    }

    /// 8 random batches of `batch` examples: images uniform in [−1, 1) with random labels, or
    /// windows of random bytes with their next-byte targets (y = x shifted by one).
    pub fn batches<B: burn::tensor::backend::Backend>(
        &self,
        batch: usize,
        device: &Device<B>,
    ) -> Vec<Batch<B>> {
        let mut rng = StdRng::seed_from_u64(1);
        let s = self.shape;
        (0..8)
            .map(|_| {
                if s.vocab > 0 {
                    let t = s.seq_len;
                    let seq: Vec<i64> = (0..batch * (t + 1))
                        .map(|_| rng.random_range(0..s.vocab as i64))
                        .collect();
                    let rows = |off: usize| -> Vec<i64> {
                        seq.chunks(t + 1)
                            .flat_map(|w| w[off..off + t].to_vec())
                            .collect()
                    };
                    Batch::Text {
                        x: Tensor::from_data(TensorData::new(rows(0), [batch, t]), device),
                        y: Tensor::from_data(TensorData::new(rows(1), [batch, t]), device),
                    }
                } else {
                    let len = s.channels * s.height * s.width;
                    let x: Vec<f32> = (0..batch * len)
                        .map(|_| rng.random_range(-1.0..1.0))
                        .collect();
                    let y: Vec<i64> = (0..batch)
                        .map(|_| rng.random_range(0..s.classes as i64))
                        .collect();
                    Batch::Images {
                        x: Tensor::from_data(
                            TensorData::new(x, [batch, s.channels, s.height, s.width]),
                            device,
                        ),
                        y: Tensor::<B, 1, Int>::from_data(TensorData::new(y, [batch]), device),
                    }
                }
            })
            .collect()
    }
}

/// Examples/s of a training step (forward, backward, the optimizer's update) of `spec` on random
/// 28×28 images with SGD momentum 0.9 (8 pre-made batches cycled, like the JAX peers), over
/// `steps` timed steps after `warmup`.
pub fn step_examples_per_s<B: AutodiffBackend>(
    spec: &ModelSpec,
    batch: usize,
    warmup: usize,
    steps: usize,
    precision: Precision,
    device: &Device<B>,
) -> f64 {
    case_examples_per_s::<B>(
        &StepCase::momentum_28x28(spec.clone()),
        batch,
        warmup,
        steps,
        precision,
        device,
    )
}

/// Examples/s (images, or sequences of `seq_len` bytes) of `case`'s training step: the model's
/// loss, backward, and — with `case.clip` — the trainer's global-norm clipping (|g|² on the device,
/// read once a step, the gradients scaled by min(1, clip / |g|)), then the optimizer's update;
/// over `steps` timed steps after `warmup`, 8 pre-made random batches cycled.
pub fn case_examples_per_s<B: AutodiffBackend>(
    case: &StepCase,
    batch: usize,
    warmup: usize,
    steps: usize,
    precision: Precision,
    device: &Device<B>,
) -> f64 {
    case_group_examples_per_s::<B>(case, 1, batch, warmup, steps, precision, device)
}

/// [`case_examples_per_s`] for a fused group of `members` trials (seeds 0..K, the trainer's model
/// with a member axis, each member's batch of `batch` examples): examples/s over all members.
pub fn case_group_examples_per_s<B: AutodiffBackend>(
    case: &StepCase,
    members: usize,
    batch: usize,
    warmup: usize,
    steps: usize,
    precision: Precision,
    device: &Device<B>,
) -> f64 {
    let k = members.max(1);
    let seeds: Vec<u64> = (0..k as u64).collect();
    let mut model: Net<B> =
        Net::init_group(&case.spec, case.shape, &seeds, device).expect("a model");
    let mut opt = Opt::<B>::group(case.optimizer, &vec![case.metaparams.clone(); k]);
    let lr = case.metaparams.learning_rate;
    let ctx = ctx_for(precision);
    // K·N rows, member-major (random data: every member's rows are its own)
    let batches = case.batches::<B>(k * batch, device);
    let mut run = |n: usize, model: Net<B>| -> Net<B> {
        let mut m = model;
        let mut last = None;
        for i in 0..n {
            let loss = m.loss(&batches[i % 8], &ctx);
            // members are independent: the sum's gradient is each member's own
            let g = GradientsParams::from_grads(loss.clone().sum().backward(), &m);
            // the trainer's step: |g|² per member read once, then each member's plan from it
            // (skipped if not finite, clipped with `case.clip`) applied by the optimizer
            let r = super::exchange::Reduced::single(&m, g, k);
            let sq: Vec<f64> = r.global_sq.clone().into_data().iter::<f64>().collect();
            let plan: Vec<_> = sq
                .iter()
                .map(|&q| super::optim::MemberStep::from_norm(lr, 1.0, q, case.clip))
                .collect();
            let g = r.into_grads(&m);
            last = Some(loss);
            m = opt.step_members(m, g, &plan);
        }
        // synchronise (asynchronous backends): read the last loss back
        if let Some(l) = last {
            let _ = l.sum().into_scalar();
        }
        m
    };
    model = run(warmup, model);
    let t = Instant::now();
    model = run(steps, model);
    let dt = t.elapsed().as_secs_f64();
    drop(model);
    (steps * k * batch) as f64 / dt
}

/// The peer's step: MLP 784-H-10. Returns examples/s over `steps` timed steps after 20 warm-up steps.
pub fn mlp_step_examples_per_s<B: AutodiffBackend>(
    batch: usize,
    hidden: usize,
    steps: usize,
    precision: Precision,
    device: &Device<B>,
) -> f64 {
    let spec = crate::model::mlp::hidden(vec![hidden]);
    step_examples_per_s::<B>(&spec, batch, 20, steps, precision, device)
}

/// The paper-size MNIST CNN (Shallue et al.): 5×5 convs with 32 and 64 channels, dense 1024.
pub fn cnn_paper_spec() -> ModelSpec {
    crate::model::cnn::paper()
}

/// Runs the benchmark. Ours and the peer alternate within each round; the best round of each is kept.
pub fn run_bench(args: &BenchArgs) -> BenchReport {
    run_bench_with(args, &mut |_| {})
}

/// The measurements `args` asks for, in the order [`run_bench_with`] runs them, with their
/// training FLOPs (the plan the progress predicts from).
fn plan(args: &BenchArgs, gflops: f64) -> Vec<Planned> {
    let rounds = args.rounds.max(1) as f64;
    let mut out = Vec::new();
    let mlp = 6.0 * (784.0 * 256.0 + 256.0 * 10.0);
    for b in [32usize, 128, 1024] {
        let n = mlp_steps(args, b) as f64;
        out.push(Planned {
            name: format!("MLP 784-256-10 step, B = {b}"),
            flops: Some(mlp * (b as f64) * n * rounds),
        });
    }
    if args.mlp_only {
        return out;
    }
    let case = |name: &str, c: &StepCase, warmup: usize, steps: usize| Planned {
        name: format!("{name} step, B = 128"),
        flops: train_flops_per_example(&c.spec, c.shape)
            .map(|f| f * 128.0 * (warmup + steps) as f64 * rounds),
    };
    out.push(case(
        "paper CNN",
        &StepCase::momentum_28x28(cnn_paper_spec()),
        3,
        (args.steps / 10).max(5),
    ));
    out.push(case(
        "small CNN",
        &StepCase::small_cnn(),
        10,
        (args.steps / 2).max(5),
    ));
    out.push(case(
        "char-LSTM",
        &StepCase::char_lstm(),
        5,
        (args.steps / 8).max(5),
    ));
    let f = |c: &StepCase| train_flops_per_example(&c.spec, c.shape).unwrap_or(0.0);
    out.push(Planned {
        name: "fused groups (small CNN ×1, ×8; ResNet-8 ×1, ×4), B = 128".into(),
        flops: Some(
            128.0
                * rounds
                * (f(&StepCase::small_cnn()) * 2.0 * (args.steps + 5) as f64
                    + f(&StepCase::resnet_mnist14()) * 2.0 * (args.steps / 4 + 5) as f64),
        ),
    });
    if !args.no_presets {
        for (name, p, _) in preset_models() {
            let fl = preset_train_flops(&p);
            let steps = super::bench_plan::preset_steps(fl, 128, gflops);
            out.push(Planned {
                name: format!("{name} through the trainer, B = 128, {steps} steps"),
                flops: fl.map(|f| f * 128.0 * steps as f64),
            });
        }
    }
    if args.concurrency {
        for (name, p, _) in preset_models() {
            out.push(Planned {
                name: format!("{name}: one trial vs two at once"),
                flops: preset_train_flops(&p).map(|f| f * 128.0 * 60.0),
            });
        }
    }
    out
}

/// Timed steps of the MLP measurement at `b`.
fn mlp_steps(args: &BenchArgs, b: usize) -> usize {
    if b >= 1024 {
        args.steps / 4
    } else {
        args.steps
    }
    .max(10)
}

/// [`run_bench`], saying what it will measure and about how long it takes before it starts,
/// then each measurement as it finishes (`progress`).
pub fn run_bench_with(args: &BenchArgs, progress: &mut dyn FnMut(BenchEvent)) -> BenchReport {
    use super::runner::CpuTrain;
    let dev = Default::default();
    let precision = args.precision();
    let rounds = args.rounds.max(1);
    let sgemm = (!args.mlp_only).then(machine_sgemm_gflops);
    let gflops = sgemm.unwrap_or(50.0);
    let mut clock = Progress::start(plan(args, gflops), sgemm, progress);
    let python = if args.peer { peer_python() } else { None };
    let peer_note = match (args.peer, &python) {
        (true, None) => Some(
            "no JAX python: set SCALING_LAB_JAX_PYTHON, or put a python3 with jax and optax on PATH"
                .to_string(),
        ),
        _ => None,
    };
    let mut peers = Vec::new();
    let peer_once = |script: &str, pargs: Vec<String>, best: &mut f64| {
        if let Some(py) = &python {
            if let Ok(v) = run_peer(py, script, &pargs) {
                *best = best.max(v);
            }
        }
    };

    let mut mlp = Vec::new();
    for b in [32usize, 128, 1024] {
        let n = mlp_steps(args, b);
        let (ours, peer) = clock.measure(|| {
            let (mut ours, mut peer) = (0.0f64, 0.0f64);
            for _ in 0..rounds {
                ours = ours.max(mlp_step_examples_per_s::<CpuTrain>(
                    b, 256, n, precision, &dev,
                ));
                peer_once(
                    "jax_mlp_step.py",
                    vec![b.to_string(), (n * 2).to_string(), "256".into()],
                    &mut peer,
                );
            }
            ((ours, peer), ex_per_s(ours))
        });
        mlp.push(StepPoint {
            batch: b,
            examples_per_s: ours,
            ms_per_step: 1e3 * b as f64 / ours,
        });
        if python.is_some() && peer > 0.0 {
            peers.push(PeerPoint {
                model: "mlp784-256-10".into(),
                batch: b,
                ours_examples_per_s: ours,
                peer_examples_per_s: peer,
                ratio: ours / peer,
            });
        }
    }

    let mut pair = |name: &str, case: &StepCase, warmup: usize, steps: usize, script: &str| {
        if args.mlp_only {
            return None;
        }
        let (point, peer) = clock.measure(|| {
            let r = paired_point(
                case, 128, warmup, steps, precision, rounds, script, &peer_once,
            );
            let words = ex_per_s(r.0.examples_per_s);
            (r, words)
        });
        if python.is_some() && peer > 0.0 {
            peers.push(PeerPoint {
                model: name.into(),
                batch: 128,
                ours_examples_per_s: point.examples_per_s,
                peer_examples_per_s: peer,
                ratio: point.examples_per_s / peer,
            });
        }
        Some(point)
    };
    let cnn_paper = pair(
        "cnn-paper",
        &StepCase::momentum_28x28(cnn_paper_spec()),
        3,
        (args.steps / 10).max(5),
        "jax_cnn_step.py",
    );
    let small_cnn = pair(
        "small-cnn",
        &StepCase::small_cnn(),
        10,
        (args.steps / 2).max(5),
        "jax_small_cnn_step.py",
    );
    let char_lstm = pair(
        "char-lstm",
        &StepCase::char_lstm(),
        5,
        (args.steps / 8).max(5),
        "jax_char_lstm_step.py",
    );

    let fused = if args.mlp_only {
        Vec::new()
    } else {
        clock.measure(|| {
            let v = fused_points(args.steps, precision, rounds);
            let words = v
                .iter()
                .map(|g| format!("{} ×{} {}", g.model, g.members, ex_per_s(g.examples_per_s)))
                .collect::<Vec<_>>()
                .join(", ");
            (v, words)
        })
    };
    let presets = if args.no_presets || args.mlp_only {
        Vec::new()
    } else {
        preset_points(precision, gflops, &mut clock)
    };
    let concurrency = if args.concurrency && !args.mlp_only {
        concurrency_points_with(precision, &mut clock)
    } else {
        Vec::new()
    };
    drop(clock);
    let machine_sgemm_gflops = sgemm;
    BenchReport {
        backend: "burn-flex (cpu)".into(),
        precision,
        cpu: cpu_features(),
        mlp,
        cnn_paper,
        small_cnn,
        char_lstm,
        presets,
        concurrency,
        fused,
        machine_sgemm_gflops,
        peers,
        peer_note,
    }
}

/// `case` at batch `batch`, ours and the peer script's (same batch and step count) interleaved
/// round by round: ours as a [`StepPoint`] and the peer's best round (0 without a peer).
#[allow(clippy::too_many_arguments)]
fn paired_point(
    case: &StepCase,
    batch: usize,
    warmup: usize,
    steps: usize,
    precision: Precision,
    rounds: usize,
    script: &str,
    peer_once: &dyn Fn(&str, Vec<String>, &mut f64),
) -> (StepPoint, f64) {
    let dev = Default::default();
    let (mut ours, mut peer) = (0.0f64, 0.0f64);
    for _ in 0..rounds {
        ours = ours.max(case_examples_per_s::<super::runner::CpuTrain>(
            case, batch, warmup, steps, precision, &dev,
        ));
        peer_once(
            script,
            vec![batch.to_string(), steps.to_string()],
            &mut peer,
        );
    }
    (
        StepPoint {
            batch,
            examples_per_s: ours,
            ms_per_step: 1e3 * batch as f64 / ours,
        },
        peer,
    )
}

/// The data presets (not NQM), loaded from the presets directory.
fn data_presets() -> Vec<crate::workload::spec::Preset> {
    let dir = crate::workload::presets::presets_dir();
    crate::workload::presets::list_presets(&dir)
        .into_iter()
        .filter_map(|(_, p)| p.ok())
        .filter(|p| p.workload.dataset.is_some())
        .collect()
}

/// One preset's model at batch `b` through the trainer for `steps` steps without evaluation.
fn trainer_point(
    p: &crate::workload::spec::Preset,
    b: usize,
    steps: u64,
    precision: Precision,
) -> anyhow::Result<crate::core::trial::Throughput> {
    use crate::core::runner::TrialRunner;
    let mut w = p.workload.clone();
    w.step_budget = steps;
    w.max_examples = None;
    w.eval_every = u64::MAX / 2;
    w.target.value = crate::workload::spec::Target::unreachable_value(w.target.metric);
    w.transfer = None;
    let spec = crate::core::trial::TrialSpec {
        trial_id: 0,
        batch_size: b,
        devices: crate::core::trial::DeviceSpec::Cpu { workers: 1 },
        precision,
        metaparams: w.defaults.clone(),
        seed: 0,
        repeat_of: None,
        confirm: None,
        calibrate: None,
    };
    let runner = super::BurnRunner::new(super::TrainOptions {
        noise_scale: false,
        ..Default::default()
    });
    let o = runner.run(
        &w,
        &spec,
        &mut |_| {},
        &crate::core::trial::CancelToken::new(),
    )?;
    Ok(o.throughput)
}

/// The data presets grouped by what a throughput measurement sees — the model and its input
/// shape (MNIST and Fashion-MNIST presets of one model train the same step): (the first
/// preset's name with the others', that preset, every preset's name).
fn preset_models() -> Vec<(String, crate::workload::spec::Preset, Vec<String>)> {
    let mut out: Vec<(String, crate::workload::spec::Preset, Vec<String>)> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for p in data_presets() {
        let shape = crate::workload::check::nominal_shape(&p.workload);
        let key = format!("{:?}|{:?}", p.workload.model, shape);
        match keys.iter().position(|k| *k == key) {
            Some(i) => out[i].2.push(p.name.clone()),
            None => {
                keys.push(key);
                out.push((p.name.clone(), p.clone(), vec![p.name.clone()]));
            }
        }
    }
    for (name, _, all) in out.iter_mut() {
        if all.len() > 1 {
            *name = format!("{name} (+{} of the same model)", all.len() - 1);
        }
    }
    out
}

/// Training FLOPs of one example of preset `p`'s model.
fn preset_train_flops(p: &crate::workload::spec::Preset) -> Option<f64> {
    let shape = crate::workload::check::nominal_shape(&p.workload);
    p.workload.model.train_flops(shape).ok().flatten()
}

/// "48,811 ex/s".
fn ex_per_s(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out} ex/s")
}

fn preset_points(precision: Precision, gflops: f64, clock: &mut Progress) -> Vec<PresetPoint> {
    let mut out = Vec::new();
    for (_, p, names) in preset_models() {
        let steps = super::bench_plan::preset_steps(preset_train_flops(&p), 128, gflops);
        let r = clock.measure(|| {
            let r = trainer_point(&p, 128, steps, precision);
            let words = match &r {
                Ok(t) => format!(
                    "{}, {:.1} ms a step",
                    ex_per_s(t.examples_per_s),
                    t.step_s * 1e3
                ),
                Err(e) => format!("failed: {e:#}"),
            };
            (r, words)
        });
        for name in names {
            out.push(match &r {
                Ok(t) => PresetPoint {
                    preset: name,
                    batch: 128,
                    examples_per_s: t.examples_per_s,
                    ms_per_step: t.step_s * 1e3,
                    params: t.params,
                    error: None,
                },
                Err(e) => PresetPoint {
                    preset: name,
                    batch: 128,
                    examples_per_s: 0.0,
                    ms_per_step: 0.0,
                    params: 0,
                    error: Some(format!("{e:#}")),
                },
            });
        }
    }
    out
}

/// Per preset (one per model): total examples/s of one trial on all threads vs two trials at once on
/// one thread each (each in its own 1-thread rayon pool), at B = 128.
pub fn concurrency_points(precision: Precision) -> Vec<ConcurrencyPoint> {
    let mut sink = |_| {};
    let mut clock = Progress::start(Vec::new(), None, &mut sink);
    concurrency_points_with(precision, &mut clock)
}

fn concurrency_points_with(precision: Precision, clock: &mut Progress) -> Vec<ConcurrencyPoint> {
    let mut out = Vec::new();
    for (_, p, _) in preset_models() {
        if let Some(point) = clock.measure(|| {
            let r = concurrency_point(&p, precision);
            let words = match &r {
                Some(c) => format!(
                    "one trial {}, two at once {}",
                    ex_per_s(c.one_trial_examples_per_s),
                    ex_per_s(c.two_trials_examples_per_s)
                ),
                None => "failed".into(),
            };
            (r, words)
        }) {
            out.push(point);
        }
    }
    out
}

/// One trial on all threads vs two at once on one thread each, for preset `p`'s model.
fn concurrency_point(
    p: &crate::workload::spec::Preset,
    precision: Precision,
) -> Option<ConcurrencyPoint> {
    let threads = rayon::current_num_threads();
    // a step as cheap as the digits MLP's (< 10⁵ FLOPs an example) 300 times, others 20
    let shape = crate::workload::check::nominal_shape(&p.workload);
    let flops = p.workload.model.forward_flops(shape).ok().flatten();
    let cheap = flops.is_some_and(|f| f < 1e5);
    let steps = if cheap { 300 } else { 20 };
    let b = 128;
    let one = match trainer_point(p, b, steps, precision) {
        Ok(t) => t.examples_per_s,
        Err(_) => return None,
    };
    let t0 = Instant::now();
    let results: Vec<anyhow::Result<()>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(move || {
                    // the scheduler's layout: each trial's replica in its own 1-thread pool
                    crate::core::runner::in_thread_budget(Some(1), || {
                        trainer_point(p, b, steps, precision).map(|_| ())
                    })
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("panic"))))
            .collect()
    });
    if results.iter().any(|r| r.is_err()) {
        return None;
    }
    // wall time of both trials (including model build and data load, like a sweep)
    let two = (2 * steps as usize * b) as f64 / t0.elapsed().as_secs_f64();
    Some(ConcurrencyPoint {
        preset: p.name.clone(),
        batch: b,
        threads,
        one_trial_examples_per_s: one,
        two_trials_examples_per_s: two,
        recommended_concurrency: if two > one * 1.05 { 2 } else { 1 },
    })
}

#[cfg(test)]
mod tests;
