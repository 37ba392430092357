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
use std::time::Instant;

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
use super::noise::{Cadence, NoiseScaleEstimator};
use super::optim::Opt;
pub use super::options::{default_noise_every, TrainOptions};
use super::sampler::Sampler;
use super::scaler::{LossScaler, ScaleDecision, ScalerConfig};
use super::stages::Stages;
use crate::core::panic_message;
use crate::core::{CancelToken, TrialEvent, TrialOutcome, TrialSpec};
use crate::data::{self, Dataset};
use crate::model::{Batch, Ctx, EvalSums, InputShape, Net};
use crate::workload::spec::{Metric, Precision, Workload};

/// A one-element tensor on the inner (non-autodiff) backend: a value the step reads back.
type InnerScalar<B> = Tensor<<B as AutodiffBackend>::InnerBackend, 1>;

/// Only one multi-replica trial at a time may use the process-wide collective server.
pub(crate) static COLLECTIVE: Mutex<()> = Mutex::new(());

/// Host-side shard of a batch.
#[derive(Clone)]
pub(super) enum HostBatch {
    Images(Vec<usize>),
    Text(Vec<i64>, Vec<i64>),
}

enum Cmd {
    Step {
        shard: HostBatch,
        lr: f64,
        loss_scale: f64,
        clip: Option<f64>,
        /// One worker: also the gradient of the first half of the batch, for a tr(Σ) sample.
        sample: bool,
    },
    Eval,
    Stop,
}

struct Report {
    loss: f64,
    /// |g_shard|² (scaled by the loss scale²); NaN when the noise scale is off or G = 1.
    local_sq: f64,
    /// |mean g|² after the all-reduce (scaled).
    global_sq: f64,
    /// One worker, sampled step: tr(Σ) from the half-batch gradient (scaled); NaN otherwise.
    trace: f64,
    /// Seconds the sampled step's extra half-batch backward and distance took (0 if none).
    noise_s: f64,
    compute_s: f64,
    exchange_s: f64,
    /// Blocking device→host reads this step took.
    reads: u64,
}

enum Reply {
    Step(Report),
    /// The sums and the blocking reads the evaluation took.
    Eval(EvalSums, u64),
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
    /// Evaluations sum the negative log-likelihood (the metric is in bits), not only the errors.
    nll: bool,
    /// Blocking device→host reads since the last reply.
    reads: u64,
    /// The validation batches on the device, after the first evaluation.
    val: Option<Vec<(Batch<B::InnerBackend>, usize)>>,
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

    /// The batch's mean loss (on the device, not read) and the gradients of loss × `loss_scale`.
    fn backward(
        &self,
        batch: &Batch<B>,
        loss_scale: f64,
    ) -> (Tensor<B::InnerBackend, 1>, GradientsParams) {
        let loss = self.net().loss(batch, &self.ctx);
        let value = loss.clone().inner();
        let scaled = if loss_scale != 1.0 {
            loss.mul_scalar(loss_scale)
        } else {
            loss
        };
        let g = scaled.backward();
        (value, GradientsParams::from_grads(g, self.net()))
    }

    /// One training step. Everything the coordinator needs (loss, norms, the finite check) comes
    /// back from the device in **one** read at the end of the step.
    fn step(
        &mut self,
        shard: HostBatch,
        lr: f64,
        loss_scale: f64,
        clip: Option<f64>,
        sample: bool,
    ) -> anyhow::Result<Report> {
        let t0 = Instant::now();
        let batch = self.batch(&shard);
        let (loss, g) = self.backward(&batch, loss_scale);
        // One worker, sampled step: the gradient of the first half of the batch beside the whole
        // one's, |g − g_half|² for tr(Σ). The update uses the whole batch's gradient either way,
        // so sampling never changes the trajectory.
        let (half, noise_s) = if sample && self.world == 1 && batch.len() >= 2 {
            let t_half = Instant::now();
            let (n, h) = (batch.len(), batch.len() / 2);
            let (_, gh) = self.backward(&batch.narrow(0, h), loss_scale);
            let d = grads::sq_dist(self.net(), &g, &gh);
            (Some((n, h, d)), t_half.elapsed().as_secs_f64())
        } else {
            (None, 0.0)
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
                self.noise,
            )?
        } else {
            Reduced::single(self.net(), g)
        };
        let dev = &self.device;
        let nan = || Tensor::<B::InnerBackend, 1>::from_data(TensorData::from([f32::NAN]), dev);
        let local = reduced.local_sq.clone().unwrap_or_else(nan);
        // Across nodes every node needs the global mean loss and local |g|², so that divergence
        // and noise-scale decisions agree on every node: all-reduced on the device, read below.
        let (loss, local) = if self.cluster.is_some() {
            self.mean_over_nodes(loss, local)?
        } else {
            (loss, local)
        };
        let mut parts = vec![loss, reduced.global_sq.clone(), local];
        if let Some((_, _, d)) = &half {
            parts.push(d.clone());
        }
        let v = self.read(Tensor::cat(parts, 0))?;
        let exchange_s = if self.world > 1 {
            t1.elapsed().as_secs_f64()
        } else {
            0.0
        };
        let (loss, global_sq, local_sq) = (v[0], v[1], v[2]);
        let trace = match half {
            Some((n, h, _)) => super::noise::trace_from_half(n, h, v[3]),
            None => f64::NAN,
        };
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
            trace,
            noise_s,
            compute_s,
            exchange_s,
            reads: std::mem::take(&mut self.reads),
        })
    }

    /// The validation set as device batches of at most `eval_batch` examples, with the number of
    /// predictions each scores; built once per trial (every evaluation reuses them).
    fn val_batches(&self) -> Vec<(Batch<B::InnerBackend>, usize)> {
        let dev = &self.device;
        match &*self.data {
            Dataset::Images(d) => d
                .val_batches(self.eval_batch)
                .map(|(x, y)| {
                    let n = y.len();
                    let xb = Tensor::<B::InnerBackend, 4>::from_data(
                        TensorData::new(x, [n, d.channels, d.height, d.width]),
                        dev,
                    );
                    let yb =
                        Tensor::<B::InnerBackend, 1, Int>::from_data(TensorData::new(y, [n]), dev);
                    (Batch::Images { x: xb, y: yb }, n)
                })
                .collect(),
            Dataset::Text(d) => {
                let per = (self.eval_batch / d.seq_len).max(1);
                d.val_batches(per)
                    .map(|(x, y)| {
                        let n = x.len() / d.seq_len;
                        let xb = Tensor::<B::InnerBackend, 2, Int>::from_data(
                            TensorData::new(x, [n, d.seq_len]),
                            dev,
                        );
                        let yb = Tensor::<B::InnerBackend, 2, Int>::from_data(
                            TensorData::new(y, [n, d.seq_len]),
                            dev,
                        );
                        (Batch::Text { x: xb, y: yb }, n * d.seq_len)
                    })
                    .collect()
            }
        }
    }

    /// A blocking read of a small tensor back to the host (counted).
    fn read(&mut self, t: Tensor<B::InnerBackend, 1>) -> anyhow::Result<Vec<f64>> {
        self.reads += 1;
        let d = t.into_data();
        Ok(d.iter::<f64>().collect())
    }

    /// The mean of (loss, local |g|²) over every replica of every node, on the device.
    fn mean_over_nodes(
        &self,
        loss: Tensor<B::InnerBackend, 1>,
        local_sq: Tensor<B::InnerBackend, 1>,
    ) -> anyhow::Result<(InnerScalar<B>, InnerScalar<B>)> {
        let t = Tensor::cat(vec![loss, local_sq], 0);
        let r = burn::collective::all_reduce::<B::InnerBackend>(
            PeerId::from(self.rank),
            t.into_primitive().tensor(),
            ReduceOperation::Mean,
        )
        .map_err(|e| anyhow!("loss all-reduce failed on worker {}: {e:?}", self.rank))?;
        let r =
            Tensor::<B::InnerBackend, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(r));
        Ok((r.clone().narrow(0, 0, 1), r.narrow(0, 1, 1)))
    }

    /// Evaluates the replica on the validation set: every batch's sums stay on the device until
    /// one read at the end (summed on the host in f64, in batch order, as before).
    fn eval(&mut self) -> anyhow::Result<EvalSums> {
        let model = self.net().valid();
        if self.val.is_none() {
            self.val = Some(self.val_batches());
        }
        let val = self.val.as_ref().expect("built above");
        let with_nll = self.nll;
        let stats: Vec<_> = val
            .iter()
            .map(|(batch, _)| model.eval_stats(batch, &self.ctx, with_nll))
            .collect();
        let sizes: Vec<usize> = val.iter().map(|(_, n)| *n).collect();
        let mut sums = EvalSums::default();
        if stats.is_empty() {
            return Ok(sums);
        }
        let v = self.read(Tensor::cat(stats, 0))?;
        for (i, n) in sizes.into_iter().enumerate() {
            let s = if with_nll {
                EvalSums::from_stats(n, v[2 * i], v[2 * i + 1])
            } else {
                EvalSums::from_stats(n, 0.0, v[i])
            };
            add(&mut sums, s);
        }
        Ok(sums)
    }
}

fn add(a: &mut EvalSums, b: EvalSums) {
    a.nll += b.nll;
    a.errors += b.errors;
    a.count += b.count;
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
            Cmd::Stop => break,
            cmd => handle(&mut w, cmd),
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

/// Runs a step or an evaluation on `w`: a panic or an error is a `Failed` reply.
fn handle<B: AutodiffBackend>(w: &mut Worker<B>, cmd: Cmd) -> Reply {
    match cmd {
        Cmd::Step {
            shard,
            lr,
            loss_scale,
            clip,
            sample,
        } => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            w.step(shard, lr, loss_scale, clip, sample)
        })) {
            Ok(Ok(r)) => Reply::Step(r),
            Ok(Err(e)) => Reply::Failed(format!("{e:#}")),
            Err(p) => Reply::Failed(panic_message(&p)),
        },
        Cmd::Eval => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.eval())) {
            Ok(Ok(s)) => Reply::Eval(s, std::mem::take(&mut w.reads)),
            Ok(Err(e)) => Reply::Failed(format!("{e:#}")),
            Err(p) => Reply::Failed(panic_message(&p)),
        },
        Cmd::Stop => Reply::Failed("stopped".into()),
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
    let schedule = opts.batch_schedule.as_ref();
    if let Some(s) = schedule {
        anyhow::ensure!(
            s.first_batch() == spec.batch_size,
            "the batch-size schedule starts at {} but the trial's batch size is {}",
            s.first_batch(),
            spec.batch_size
        );
        // Every stage's shards are checked before the first step.
        for st in &s.stages {
            shards_of(opts.cluster.as_ref(), st.batch_size, world)?;
        }
    }
    let shards = shards_of(opts.cluster.as_ref(), spec.batch_size, world)?;
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
    let budget = crate::core::thread_budget();
    let pool_threads = budget.map(|n| (n / world).max(1));
    let (reply_tx, reply_rx) = channel::<(usize, Reply)>();
    let mut cmd_txs = Vec::with_capacity(world);
    let mut handles = Vec::with_capacity(world);
    // One replica in one process, with no thread budget or already in its budget's pool: it runs
    // on this thread (no hand-over to a worker and back twice a step); else a thread per replica.
    let inline = world * nodes == 1 && budget.is_none_or(crate::core::in_budget_pool);
    let mut inline_worker = None;
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
            nll: metric_in_bits(workload),
            reads: 0,
            val: None,
        };
        if inline {
            inline_worker = Some(std::cell::RefCell::new(w));
            continue;
        }
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
        inline: inline_worker,
    };
    let trial = Trial {
        workload,
        spec,
        dataset: &dataset,
        shards,
        cluster: opts.cluster.as_ref(),
        schedule,
        noise_scale: opts.noise_scale,
        noise_every: opts.noise_every,
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

/// This process's replicas' rows of a global batch of `b` (over every node's replicas for a
/// multi-node trial).
fn shards_of(
    cluster: Option<&super::multinode::ClusterSpec>,
    b: usize,
    world: usize,
) -> anyhow::Result<Vec<std::ops::Range<usize>>> {
    match cluster {
        Some(c) => c.local_shards(b, world),
        None => data::shard_ranges(b, world).map_err(|e| anyhow!("{e}")),
    }
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
struct Workers<'a, B: AutodiffBackend> {
    cmd: &'a [Sender<Cmd>],
    replies: &'a Receiver<(usize, Reply)>,
    /// The one replica, on the coordinator's thread (then `cmd` is empty).
    inline: Option<std::cell::RefCell<Worker<B>>>,
}

impl<B: AutodiffBackend> Workers<'_, B> {
    fn world(&self) -> usize {
        if self.inline.is_some() {
            1
        } else {
            self.cmd.len()
        }
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
        sample: bool,
    ) -> anyhow::Result<Report> {
        let world = self.world();
        if let Some(w) = &self.inline {
            let shard = shards.into_iter().next().expect("one shard");
            let cmd = Cmd::Step {
                shard,
                lr,
                loss_scale,
                clip,
                sample,
            };
            return match handle(&mut w.borrow_mut(), cmd) {
                Reply::Step(r) => Ok(r),
                Reply::Failed(m) => anyhow::bail!("worker 0 failed: {m}"),
                Reply::Eval(..) => unreachable!("no evaluation was asked for"),
            };
        }
        for (tx, shard) in self.cmd.iter().zip(shards) {
            tx.send(Cmd::Step {
                shard,
                lr,
                loss_scale,
                clip,
                sample,
            })
            .map_err(|_| anyhow!("a worker stopped unexpectedly"))?;
        }
        let mut sum = Report {
            loss: 0.0,
            local_sq: 0.0,
            global_sq: f64::NAN,
            trace: f64::NAN,
            noise_s: 0.0,
            compute_s: 0.0,
            exchange_s: f64::INFINITY,
            reads: 0,
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
                        sum.trace = r.trace;
                    }
                    sum.reads += r.reads;
                    sum.compute_s = sum.compute_s.max(r.compute_s);
                    sum.exchange_s = sum.exchange_s.min(r.exchange_s);
                }
                Reply::Failed(m) => anyhow::bail!("worker {rank} failed: {m}"),
                Reply::Eval(..) => unreachable!("no evaluation was asked for"),
            }
        }
        Ok(sum)
    }

    /// Evaluates worker 0's replica on the validation set; with the reads it took.
    fn eval(&self) -> anyhow::Result<(EvalSums, u64)> {
        if let Some(w) = &self.inline {
            return match handle(&mut w.borrow_mut(), Cmd::Eval) {
                Reply::Eval(s, reads) => Ok((s, reads)),
                Reply::Failed(m) => anyhow::bail!("worker 0 failed during evaluation: {m}"),
                Reply::Step(_) => unreachable!("no step was asked for"),
            };
        }
        self.cmd[0]
            .send(Cmd::Eval)
            .map_err(|_| anyhow!("worker 0 stopped unexpectedly"))?;
        loop {
            match self
                .replies
                .recv()
                .map_err(|_| anyhow!("worker 0 stopped unexpectedly"))?
            {
                (_, Reply::Eval(s, reads)) => return Ok((s, reads)),
                (r, Reply::Failed(m)) => {
                    anyhow::bail!("worker {r} failed during evaluation: {m}")
                }
                _ => {}
            }
        }
    }
}

/// Whether the workload's validation metric is in bits (from the negative log-likelihood), not an
/// error rate.
fn metric_in_bits(workload: &Workload) -> bool {
    workload.target.metric == Metric::ValBpc || workload.model.is_language_model()
}

/// The validation metric of a workload from summed evaluation statistics.
fn metric_of(workload: &Workload, s: &EvalSums) -> f64 {
    if metric_in_bits(workload) {
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
    /// The replicas' rows of a global batch (at the first stage's B with a schedule).
    shards: Vec<std::ops::Range<usize>>,
    cluster: Option<&'a super::multinode::ClusterSpec>,
    schedule: Option<&'a crate::core::schedule::BatchSchedule>,
    noise_scale: bool,
    noise_every: Option<u64>,
    /// Processes (nodes) the trial spans; `world` replicas per node.
    nodes: usize,
}

/// The trial loop: data order, LR schedule, loss scaler and noise scale here; budget, cadence,
/// divergence, target, events and the outcome in the meter.
fn coordinate<B: AutodiffBackend>(
    trial: &Trial<'_>,
    mut scaler: LossScaler,
    mut meter: TrialMeter<'_>,
    workers: &Workers<'_, B>,
    emit: &mut dyn FnMut(TrialEvent),
    cancel: &CancelToken,
) -> anyhow::Result<TrialOutcome> {
    let Trial {
        workload,
        spec,
        dataset,
        noise_scale,
        noise_every,
        nodes,
        ..
    } = *trial;
    let local = workers.world();
    let world = local * nodes;
    let mut b = spec.batch_size;
    let mut stages = Stages::new(trial.schedule, spec.metaparams.learning_rate);
    let mut noise = NoiseScaleEstimator::new(0.95);
    // G ≥ 2: every step, from the exchange's buffers. G = 1: a half-batch gradient on the steps
    // the cadence picks (from the measured cost, or every `noise_every` steps).
    let mut cadence = (noise_scale && world == 1 && b >= 2).then(|| Cadence::new(noise_every));
    let mut sampler = Sampler::new(dataset, trial.shards.clone(), spec.seed);
    let started = Instant::now();

    meter.start(emit);
    let outcome = loop {
        if let Some(o) = meter.should_stop(cancel) {
            break o;
        }
        let t_step = Instant::now();
        let before = meter.applied();
        let lr = spec
            .metaparams
            .schedule
            .lr_at(stages.learning_rate(), before);
        let loss_scale = scaler.scale();
        let sampled = cadence.as_ref().is_some_and(|c| c.due(before));
        let stepped = workers.step(sampler.next(b), lr, loss_scale, workload.grad_clip, sampled);
        // out of device memory at this B: an outcome, not an error (the sweep goes on)
        let r = match super::oom::or_oom(stepped, b, before)? {
            Ok(r) => r,
            Err(oom) => break oom,
        };
        let step_s = t_step.elapsed().as_secs_f64();
        let applied = scaler.update(r.global_sq.is_finite()) == ScaleDecision::Apply;
        meter.add_reads(r.reads, local as u64, false);
        // the first step is cold (buffers allocated; on a GPU its kernels compiled and autotuned:
        // 138 s of a 184 s first CUDA trial): its sample is not the estimate's running cost
        if before > 0 {
            meter.add_noise_cost(r.noise_s);
        }
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
        if let Some(c) = cadence.as_mut() {
            c.record(before, sampled, step_s, started.elapsed().as_secs_f64());
        }
        if applied && noise_scale {
            let s2 = loss_scale * loss_scale;
            if world > 1 {
                let b_small = (b / world) as f64;
                noise.update(b_small, r.local_sq / s2, b as f64, r.global_sq / s2);
            } else if b >= 2 {
                noise.observe_step(b as f64, r.global_sq / s2);
                if sampled {
                    noise.observe_trace(r.trace / s2);
                }
            }
            meter.set_noise(noise.b_simple());
            meter.set_noise_sampling(noise.samples, cadence.as_ref().map_or(1, |c| c.every()));
        }
        if meter.progress(emit) {
            let (sums, reads) = match super::oom::or_oom(workers.eval(), b, meter.applied())? {
                Ok(s) => s,
                Err(oom) => break oom,
            };
            meter.add_reads(reads, 1, true);
            let metric = metric_of(workload, &sums);
            // the interval is read where it is recorded (an evaluation, the end), not every step
            meter.set_noise_interval(noise.interval());
            if let Some(o) = meter.eval(metric, emit) {
                break o;
            }
            if let Some(nb) = stages.after_eval(meter.applied(), metric) {
                b = nb;
                sampler.set_shards(shards_of(trial.cluster, b, local)?);
                meter.set_batch_size(b);
            }
        }
    };
    meter.set_noise_interval(noise.interval());
    let mut out = meter.finish(outcome, emit);
    out.stages = stages.finish(out.steps);
    Ok(out)
}
