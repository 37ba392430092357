//! The data-parallel trial loop.
//!
//! A coordinator thread owns the data order, the LR schedule, the loss scaler, the noise-scale
//! estimator and the steps-to-target bookkeeping. G worker threads each own a replica (initialised
//! once, then cloned/forked so every replica has the same weights and parameter ids) and an optimizer.
//! Per step every worker computes forward/backward on its shard, the gradients are all-reduced with
//! burn-collective (Mean; bucketed, see `exchange`), and every worker applies the identical update,
//! so replicas stay identical. What is measured and when the trial stops is the `TrialMeter`'s.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use burn::collective::{finish_collective, reset_collective, PeerId, ReduceOperation};
use burn::module::{AutodiffModule, Module};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::dtype::compute_dtype;
use super::exchange::{self, Reduced};
use super::grads;
use super::meter::{MeterOptions, StepSample, TrialMeter};
use super::noise::NoiseScaleEstimator;
use super::optim::Opt;
use super::scaler::{LossScaler, ScaleDecision, ScalerConfig};
use crate::core::panic_message;
use crate::core::{CancelToken, TrialEvent, TrialOutcome, TrialSpec};
use crate::data::{self, Dataset, ImageBatcher, TextBatcher};
use crate::model::{Batch, Ctx, EvalSums, InputShape, Net};
use crate::workload::spec::{Metric, Precision, Workload};

/// Options that are not part of a trial's identity.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Estimate the gradient noise scale every step.
    pub noise_scale: bool,
    /// Override of the fp16 loss scaler (default: 2^16, ×0.5, ×2 after 2000). Only fp16 scales
    /// the loss: fp32 and bf16 keep scale 1 (and skip non-finite steps) whatever is given here.
    pub scaler: Option<ScalerConfig>,
    /// Minimum interval between Step events.
    pub step_event_interval: Duration,
    /// Examples per evaluation forward pass.
    pub eval_batch: usize,
    /// Gradient bytes per all-reduce call (bucketed exchange); 0 = one call per parameter tensor.
    pub bucket_bytes: usize,
    /// A trial whose loss scaler skips this many steps in a row is stopped as diverged.
    pub max_consecutive_skips: u64,
    /// This process is one node of a multi-node trial (src/cluster): the global batch is split
    /// over every node's replicas and the all-reduce spans the nodes. `None`: one process.
    pub cluster: Option<super::multinode::ClusterSpec>,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            noise_scale: true,
            scaler: None,
            step_event_interval: Duration::from_millis(100),
            eval_batch: 1000,
            bucket_bytes: exchange::default_bucket_bytes(),
            max_consecutive_skips: 50,
            cluster: None,
        }
    }
}

/// Only one multi-replica trial at a time may use the process-wide collective server.
pub(crate) static COLLECTIVE: Mutex<()> = Mutex::new(());

/// Host-side shard of a batch.
#[derive(Clone)]
enum HostBatch {
    Images(Vec<usize>),
    Text(Vec<i64>, Vec<i64>),
}

enum Cmd {
    Step {
        shard: HostBatch,
        lr: f64,
        loss_scale: f64,
        clip: Option<f64>,
        /// One worker: split into two micro-batches for the noise scale.
        micro: bool,
    },
    Eval,
    Stop,
}

struct Report {
    loss: f64,
    /// |g_shard|² (unscaled by the caller) — or mean of the two micro-batches with one worker;
    /// NaN when the noise scale is off.
    local_sq: f64,
    /// |mean g|² after the all-reduce (scaled).
    global_sq: f64,
    compute_s: f64,
    exchange_s: f64,
}

enum Reply {
    Step(Report),
    Eval(EvalSums),
    Failed(String),
}

struct Worker<B: AutodiffBackend> {
    rank: usize,
    /// Replicas of the trial over all nodes (nodes × local workers).
    world: usize,
    cluster: Option<super::multinode::ClusterSpec>,
    device: Device<B>,
    /// The replica (None only inside `step`, while the optimizer owns it: a clone kept here
    /// would share every weight buffer and force the in-place update to copy them).
    model: Option<Net<B>>,
    opt: Opt<Net<B>, B>,
    ctx: Ctx,
    data: Arc<Dataset>,
    eval_batch: usize,
    bucket_bytes: usize,
    /// Measure |g_shard|² for the noise scale.
    noise: bool,
}

impl<B: AutodiffBackend> Worker<B> {
    fn net(&self) -> &Net<B> {
        self.model.as_ref().expect("the replica")
    }

    fn batch(&self, shard: &HostBatch) -> Batch<B> {
        match (shard, &*self.data) {
            (HostBatch::Images(idx), Dataset::Images(d)) => {
                let (x, y) = data::gather(d, idx);
                images::<B>(x, y, d, &self.device)
            }
            (HostBatch::Text(x, y), Dataset::Text(d)) => {
                let n = x.len() / d.seq_len;
                Batch::Text {
                    x: Tensor::from_data(TensorData::new(x.clone(), [n, d.seq_len]), &self.device),
                    y: Tensor::from_data(TensorData::new(y.clone(), [n, d.seq_len]), &self.device),
                }
            }
            _ => unreachable!("host batch kind follows the dataset"),
        }
    }

    fn backward(&self, batch: &Batch<B>, loss_scale: f64) -> (f64, GradientsParams) {
        let loss = self.net().loss(batch, &self.ctx);
        let loss_val: f64 = loss.clone().into_scalar().elem_f64();
        let scaled = if loss_scale != 1.0 {
            loss.mul_scalar(loss_scale)
        } else {
            loss
        };
        let g = scaled.backward();
        (loss_val, GradientsParams::from_grads(g, self.net()))
    }

    fn step(
        &mut self,
        shard: HostBatch,
        lr: f64,
        loss_scale: f64,
        clip: Option<f64>,
        micro: bool,
    ) -> anyhow::Result<Report> {
        let t0 = Instant::now();
        let batch = self.batch(&shard);
        let (loss, g, micro_sq) = if micro && batch.len() >= 2 {
            let (a, b) = split_half(&batch);
            let (la, mut ga) = self.backward(&a, loss_scale);
            let (lb, gb) = self.backward(&b, loss_scale);
            let sa = grads::sq_norm(self.net(), &ga);
            let sb = grads::sq_norm(self.net(), &gb);
            grads::mean_into(self.net(), &mut ga, &gb);
            ((la + lb) / 2.0, ga, Some((sa + sb) / 2.0))
        } else {
            let (l, g) = self.backward(&batch, loss_scale);
            (l, g, None)
        };
        let compute_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let reduced = if self.world > 1 {
            exchange::all_reduce_mean(
                self.net(),
                g,
                self.rank,
                // Across processes ParamIds differ: the bucketed path flattens in the model's
                // own (structural) order, so it is the one a multi-node trial uses.
                if self.cluster.is_some() && self.bucket_bytes == 0 {
                    exchange::DEFAULT_BUCKET_BYTES
                } else {
                    self.bucket_bytes
                },
                self.noise && micro_sq.is_none(),
            )?
        } else {
            Reduced::single(self.net(), g)
        };
        let exchange_s = if self.world > 1 {
            t1.elapsed().as_secs_f64()
        } else {
            0.0
        };
        let local_sq = micro_sq.unwrap_or(reduced.local_sq);
        // Across nodes every node needs the global mean loss and local |g|², so that divergence
        // and noise-scale decisions agree on every node.
        let (loss, local_sq) = if self.cluster.is_some() {
            self.mean_over_nodes(loss, local_sq)?
        } else {
            (loss, local_sq)
        };
        let exchange_s = if self.cluster.is_some() {
            t1.elapsed().as_secs_f64()
        } else {
            exchange_s
        };
        let global_sq = reduced.global_sq;
        // Every replica sees bit-identical reduced gradients, so every replica makes the same
        // skip/apply decision as the coordinator's scaler.
        if global_sq.is_finite() {
            let unscaled_norm = global_sq.sqrt() / loss_scale;
            let clip_factor = match clip {
                Some(c) if unscaled_norm > c => c / unscaled_norm,
                _ => 1.0,
            };
            let g = reduced.into_grads(self.net(), clip_factor / loss_scale);
            let model = self.model.take().expect("the replica");
            self.model = Some(self.opt.step(lr, model, g));
        }
        Ok(Report {
            loss,
            local_sq,
            global_sq,
            compute_s,
            exchange_s,
        })
    }

    /// The mean of (loss, local |g|²) over every replica of every node.
    fn mean_over_nodes(&self, loss: f64, local_sq: f64) -> anyhow::Result<(f64, f64)> {
        let t = Tensor::<B::InnerBackend, 1>::from_data(
            TensorData::new(vec![loss as f32, local_sq as f32], [2]),
            &self.device,
        );
        let r = burn::collective::all_reduce::<B::InnerBackend>(
            PeerId::from(self.rank),
            t.into_primitive().tensor(),
            ReduceOperation::Mean,
        )
        .map_err(|e| anyhow!("loss all-reduce failed on worker {}: {e:?}", self.rank))?;
        let v: Vec<f32> =
            Tensor::<B::InnerBackend, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(r))
                .into_data()
                .to_vec()
                .map_err(|e| anyhow!("loss all-reduce: {e:?}"))?;
        Ok((v[0] as f64, v[1] as f64))
    }

    fn eval(&self) -> EvalSums {
        let model = self.net().valid();
        let mut sums = EvalSums::default();
        let dev = &self.device;
        match &*self.data {
            Dataset::Images(d) => {
                for (x, y) in d.val_batches(self.eval_batch) {
                    let n = y.len();
                    let xb = Tensor::<B::InnerBackend, 4>::from_data(
                        TensorData::new(x, [n, d.channels, d.height, d.width]),
                        dev,
                    );
                    let yb =
                        Tensor::<B::InnerBackend, 1, Int>::from_data(TensorData::new(y, [n]), dev);
                    add(
                        &mut sums,
                        model.eval_sums(&Batch::Images { x: xb, y: yb }, &self.ctx),
                    );
                }
            }
            Dataset::Text(d) => {
                let per = (self.eval_batch / d.seq_len).max(1);
                for (x, y) in d.val_batches(per) {
                    let n = x.len() / d.seq_len;
                    let xb = Tensor::<B::InnerBackend, 2, Int>::from_data(
                        TensorData::new(x, [n, d.seq_len]),
                        dev,
                    );
                    let yb = Tensor::<B::InnerBackend, 2, Int>::from_data(
                        TensorData::new(y, [n, d.seq_len]),
                        dev,
                    );
                    add(
                        &mut sums,
                        model.eval_sums(&Batch::Text { x: xb, y: yb }, &self.ctx),
                    );
                }
            }
        }
        sums
    }
}

fn add(a: &mut EvalSums, b: EvalSums) {
    a.nll += b.nll;
    a.errors += b.errors;
    a.count += b.count;
}

trait ElemF64 {
    fn elem_f64(self) -> f64;
}
impl<E: burn::tensor::ElementConversion> ElemF64 for E {
    fn elem_f64(self) -> f64 {
        self.elem::<f64>()
    }
}

fn images<B: AutodiffBackend>(
    x: Vec<f32>,
    y: Vec<i64>,
    d: &data::ImageData,
    dev: &Device<B>,
) -> Batch<B> {
    let n = y.len();
    Batch::Images {
        x: Tensor::from_data(TensorData::new(x, [n, d.channels, d.height, d.width]), dev),
        y: Tensor::from_data(TensorData::new(y, [n]), dev),
    }
}

fn split_half<B: AutodiffBackend>(b: &Batch<B>) -> (Batch<B>, Batch<B>) {
    let n = b.len();
    let h = n / 2;
    (b.narrow(0, h), b.narrow(h, n - h))
}

fn worker_loop<B: AutodiffBackend>(
    mut w: Worker<B>,
    rx: Receiver<Cmd>,
    tx: Sender<(usize, Reply)>,
) {
    if w.world > 1 {
        if let Err(e) = exchange::join_collective::<B::InnerBackend>(
            w.rank,
            w.world,
            w.cluster.as_ref(),
            &w.device,
        ) {
            let _ = tx.send((w.rank, Reply::Failed(e)));
            return;
        }
    }
    while let Ok(cmd) = rx.recv() {
        let reply = match cmd {
            Cmd::Step {
                shard,
                lr,
                loss_scale,
                clip,
                micro,
            } => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                w.step(shard, lr, loss_scale, clip, micro)
            })) {
                Ok(Ok(r)) => Reply::Step(r),
                Ok(Err(e)) => Reply::Failed(format!("{e:#}")),
                Err(p) => Reply::Failed(panic_message(&p)),
            },
            Cmd::Eval => {
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.eval())) {
                    Ok(s) => Reply::Eval(s),
                    Err(p) => Reply::Failed(panic_message(&p)),
                }
            }
            Cmd::Stop => break,
        };
        let failed = matches!(reply, Reply::Failed(_));
        if tx.send((w.rank, reply)).is_err() || failed {
            break;
        }
    }
    if w.world > 1 {
        let _ = finish_collective::<B::InnerBackend>(PeerId::from(w.rank));
    }
}

/// Runs `f` inside a rayon pool of `threads` threads (`None`, or a pool that cannot be built:
/// on this thread, with the global pool).
fn in_pool<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> R {
    match threads.and_then(|n| rayon::ThreadPoolBuilder::new().num_threads(n).build().ok()) {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Input shape of a dataset for model construction.
pub fn input_shape(data: &Dataset) -> InputShape {
    match data {
        Dataset::Images(d) => InputShape::images(d.channels, d.height, d.width, d.classes),
        Dataset::Text(d) => InputShape {
            channels: 0,
            height: 0,
            width: 0,
            classes: d.vocab,
            vocab: d.vocab,
            seq_len: d.seq_len,
        },
    }
}

/// Runs one trial data-parallel on `devices` (one replica per entry; entries may repeat, e.g. CPU
/// workers on the one CPU device). Emits events; never prints.
pub fn run_trial<B: AutodiffBackend>(
    devices: Vec<Device<B>>,
    workload: &Workload,
    spec: &TrialSpec,
    dataset: Arc<Dataset>,
    opts: &TrainOptions,
    emit: &mut dyn FnMut(TrialEvent),
    cancel: &CancelToken,
) -> anyhow::Result<TrialOutcome> {
    let world = devices.len();
    anyhow::ensure!(world >= 1, "no device to train on");
    let scaler_cfg = scaler_config(spec.precision, opts.scaler.as_ref())?;
    // Over N nodes the global batch is split into N×G shards; this node takes its G.
    let nodes = opts.cluster.as_ref().map_or(1, |c| c.nodes);
    let shards = match &opts.cluster {
        Some(c) => c.local_shards(spec.batch_size, world)?,
        None => data::shard_ranges(spec.batch_size, world).map_err(|e| anyhow!("{e}"))?,
    };
    let ctx = Ctx {
        dtype: compute_dtype(spec.precision),
    };
    let model: Net<B> = Net::init(
        &workload.model,
        input_shape(&dataset),
        spec.seed,
        &devices[0],
    )
    .context("building the model")?;
    let params = model.num_params() as u64;

    let _guard = if world * nodes > 1 {
        let g = COLLECTIVE.lock().unwrap_or_else(|e| e.into_inner());
        reset_collective::<B::InnerBackend>();
        Some(g)
    } else {
        None
    };

    // A thread budget from the scheduler (several trials at once): each replica computes in its
    // own rayon pool, the budget split over the replicas.
    let pool_threads = crate::core::thread_budget().map(|n| (n / world).max(1));
    let (reply_tx, reply_rx) = channel::<(usize, Reply)>();
    let mut cmd_txs = Vec::with_capacity(world);
    let mut handles = Vec::with_capacity(world);
    for (rank, dev) in devices.iter().enumerate() {
        let replica = if rank == 0 {
            model.clone()
        } else {
            model.clone().fork(dev)
        };
        let w = Worker {
            rank,
            world: world * nodes,
            cluster: opts.cluster.clone(),
            device: dev.clone(),
            model: Some(replica),
            opt: Opt::new(workload.optimizer, &spec.metaparams),
            ctx,
            data: dataset.clone(),
            eval_batch: opts.eval_batch,
            bucket_bytes: opts.bucket_bytes,
            noise: opts.noise_scale,
        };
        let (ctx_tx, ctx_rx) = channel::<Cmd>();
        cmd_txs.push(ctx_tx);
        let rtx = reply_tx.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("trial{}-worker{rank}", spec.trial_id))
                .spawn(move || in_pool(pool_threads, move || worker_loop(w, ctx_rx, rtx)))
                .context("spawning a worker thread")?,
        );
    }
    drop(reply_tx);
    drop(model);

    let meter = TrialMeter::new(
        workload,
        spec,
        MeterOptions {
            step_event_interval: opts.step_event_interval,
            max_consecutive_skips: opts.max_consecutive_skips,
            params,
            exchanged_bytes_per_step: if world * nodes > 1 { params * 4 } else { 0 },
            nodes: nodes as u64,
            loopback: opts.cluster.as_ref().is_some_and(|c| c.is_loopback()),
            initial_loss_scale: scaler_cfg.init_scale,
        },
    );
    let workers = Workers {
        cmd: &cmd_txs,
        replies: &reply_rx,
    };
    let trial = Trial {
        workload,
        spec,
        dataset: &dataset,
        shards: &shards,
        noise_scale: opts.noise_scale,
        nodes,
    };
    let result = coordinate(
        &trial,
        LossScaler::new(scaler_cfg),
        meter,
        &workers,
        emit,
        cancel,
    );
    // A multi-node trial that failed here fails on every node: the group is lost (which also
    // aborts every collective call a worker may still wait in) before the workers are joined.
    let result = match (result, &opts.cluster) {
        (Err(e), Some(c)) => Err(super::multinode::trial_failed(c.node_rank, e)),
        (r, _) => r,
    };
    for tx in &cmd_txs {
        let _ = tx.send(Cmd::Stop);
    }
    drop(cmd_txs);
    for h in handles {
        let _ = h.join();
    }
    result
}

/// The loss scaler of a trial: fp16 scales (the default or a validated override); fp32 and bf16
/// keep scale 1 and only skip non-finite steps.
pub fn scaler_config(
    precision: Precision,
    over: Option<&ScalerConfig>,
) -> anyhow::Result<ScalerConfig> {
    Ok(match (precision, over) {
        (Precision::Fp16, Some(c)) => {
            c.validate()?;
            c.clone()
        }
        (Precision::Fp16, None) => ScalerConfig::fp16(),
        _ => ScalerConfig::bf16(),
    })
}

/// The coordinator's handles on its worker threads.
struct Workers<'a> {
    cmd: &'a [Sender<Cmd>],
    replies: &'a Receiver<(usize, Reply)>,
}

impl Workers<'_> {
    fn world(&self) -> usize {
        self.cmd.len()
    }

    /// Sends one step's shards and folds the replies: mean loss, mean |g_shard|², |mean g|²,
    /// the slowest replica's compute and the exchange as the *last-arriving* replica saw it (the
    /// shortest exchange time: the others' include waiting for the slowest one's compute, which
    /// is load imbalance, not exchange).
    fn step(
        &self,
        shards: Vec<HostBatch>,
        lr: f64,
        loss_scale: f64,
        clip: Option<f64>,
        micro: bool,
    ) -> anyhow::Result<Report> {
        let world = self.world();
        for (tx, shard) in self.cmd.iter().zip(shards) {
            tx.send(Cmd::Step {
                shard,
                lr,
                loss_scale,
                clip,
                micro,
            })
            .map_err(|_| anyhow!("a worker stopped unexpectedly"))?;
        }
        let mut sum = Report {
            loss: 0.0,
            local_sq: 0.0,
            global_sq: f64::NAN,
            compute_s: 0.0,
            exchange_s: f64::INFINITY,
        };
        for _ in 0..world {
            let (rank, r) = self
                .replies
                .recv()
                .map_err(|_| anyhow!("a worker stopped unexpectedly"))?;
            match r {
                Reply::Step(r) => {
                    sum.loss += r.loss / world as f64;
                    sum.local_sq += r.local_sq / world as f64;
                    if rank == 0 {
                        sum.global_sq = r.global_sq;
                    }
                    sum.compute_s = sum.compute_s.max(r.compute_s);
                    sum.exchange_s = sum.exchange_s.min(r.exchange_s);
                }
                Reply::Failed(m) => anyhow::bail!("worker {rank} failed: {m}"),
                Reply::Eval(_) => unreachable!("no evaluation was asked for"),
            }
        }
        Ok(sum)
    }

    /// Evaluates worker 0's replica on the validation set.
    fn eval(&self) -> anyhow::Result<EvalSums> {
        self.cmd[0]
            .send(Cmd::Eval)
            .map_err(|_| anyhow!("worker 0 stopped unexpectedly"))?;
        loop {
            match self
                .replies
                .recv()
                .map_err(|_| anyhow!("worker 0 stopped unexpectedly"))?
            {
                (_, Reply::Eval(s)) => return Ok(s),
                (r, Reply::Failed(m)) => {
                    anyhow::bail!("worker {r} failed during evaluation: {m}")
                }
                _ => {}
            }
        }
    }
}

/// Draws the global batch of the next step and splits it into the replicas' shards.
struct Sampler<'a> {
    dataset: &'a Dataset,
    images: Option<ImageBatcher>,
    text: Option<TextBatcher>,
    shards: &'a [std::ops::Range<usize>],
}

impl<'a> Sampler<'a> {
    fn new(dataset: &'a Dataset, shards: &'a [std::ops::Range<usize>], seed: u64) -> Self {
        Sampler {
            dataset,
            images: match dataset {
                Dataset::Images(d) => Some(ImageBatcher::new(d.n_train(), seed)),
                _ => None,
            },
            text: match dataset {
                Dataset::Text(d) => Some(TextBatcher::new(d.seq_len, seed)),
                _ => None,
            },
            shards,
        }
    }

    fn next(&mut self, b: usize) -> Vec<HostBatch> {
        if let Some(bt) = self.images.as_mut() {
            let idx = bt.next_batch(b);
            return self
                .shards
                .iter()
                .map(|r| HostBatch::Images(idx[r.clone()].to_vec()))
                .collect();
        }
        let d = self.dataset.as_text().expect("text dataset");
        let (x, y) = self.text.as_mut().expect("text batcher").next_batch(d, b);
        let l = d.seq_len;
        self.shards
            .iter()
            .map(|r| {
                HostBatch::Text(
                    x[r.start * l..r.end * l].to_vec(),
                    y[r.start * l..r.end * l].to_vec(),
                )
            })
            .collect()
    }
}

/// The validation metric of a workload from summed evaluation statistics.
fn metric_of(workload: &Workload, s: &EvalSums) -> f64 {
    let bits = workload.target.metric == Metric::ValBpc || workload.model.is_language_model();
    if bits {
        s.nll / s.count.max(1.0) / std::f64::consts::LN_2
    } else {
        s.errors / s.count.max(1.0)
    }
}

/// What a trial trains on.
struct Trial<'a> {
    workload: &'a Workload,
    spec: &'a TrialSpec,
    dataset: &'a Dataset,
    /// The replicas' rows of a global batch.
    shards: &'a [std::ops::Range<usize>],
    noise_scale: bool,
    /// Processes (nodes) the trial spans; `world` replicas per node.
    nodes: usize,
}

/// The trial loop: data order, LR schedule, loss scaler and noise scale here; budget, cadence,
/// divergence, target, events and the outcome in the meter.
fn coordinate(
    trial: &Trial<'_>,
    mut scaler: LossScaler,
    mut meter: TrialMeter<'_>,
    workers: &Workers<'_>,
    emit: &mut dyn FnMut(TrialEvent),
    cancel: &CancelToken,
) -> anyhow::Result<TrialOutcome> {
    let Trial {
        workload,
        spec,
        dataset,
        shards,
        noise_scale,
        nodes,
    } = *trial;
    let world = workers.world() * nodes;
    let b = spec.batch_size;
    let mp = &spec.metaparams;
    let mut noise = NoiseScaleEstimator::new(0.95);
    let micro = noise_scale && world == 1 && b >= 2;
    let b_small = if world > 1 {
        (b / world) as f64
    } else {
        (b / 2) as f64
    };
    let mut sampler = Sampler::new(dataset, shards, spec.seed);

    meter.start(emit);
    let outcome = loop {
        if let Some(o) = meter.should_stop(cancel) {
            break o;
        }
        let t_step = Instant::now();
        let lr = mp.schedule.lr_at(mp.learning_rate, meter.applied());
        let loss_scale = scaler.scale();
        let stepped = workers.step(sampler.next(b), lr, loss_scale, workload.grad_clip, micro);
        // out of device memory at this B: an outcome, not an error (the sweep goes on)
        let r = match super::oom::or_oom(stepped, b, meter.applied())? {
            Ok(r) => r,
            Err(oom) => break oom,
        };
        let step_s = t_step.elapsed().as_secs_f64();
        let applied = scaler.update(r.global_sq.is_finite()) == ScaleDecision::Apply;
        let sample = StepSample {
            applied: applied as u64,
            attempted: 1,
            loss: r.loss,
            lr,
            loss_scale: scaler.scale(),
            consecutive_skips: scaler.consecutive_skips(),
            step_s,
            compute_s: r.compute_s,
            exchange_s: r.exchange_s,
        };
        if let Some(o) = meter.record(sample) {
            break o;
        }
        if applied && noise_scale && (world > 1 || micro) {
            let s2 = loss_scale * loss_scale;
            noise.update(b_small, r.local_sq / s2, b as f64, r.global_sq / s2);
            meter.set_noise(noise.b_simple());
        }
        if meter.progress(emit) {
            let sums = match super::oom::or_oom(workers.eval(), b, meter.applied())? {
                Ok(s) => s,
                Err(oom) => break oom,
            };
            let metric = metric_of(workload, &sums);
            if let Some(o) = meter.eval(metric, emit) {
                break o;
            }
        }
    };
    Ok(meter.finish(outcome, emit))
}
