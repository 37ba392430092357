//! The data-parallel trial loop.
//!
//! A coordinator thread owns the data order, the LR schedule, the loss scaler, the noise-scale
//! estimator and the steps-to-target bookkeeping. G worker threads each own a replica (initialised
//! once, then cloned/forked so every replica has the same weights and parameter ids) and an optimizer.
//! Per step every worker computes forward/backward on its shard, the gradients are all-reduced with
//! burn-collective (Mean), and every worker applies the identical update, so replicas stay identical.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use burn::collective::{finish_collective, register, reset_collective, PeerId, ReduceOperation};
use burn::module::{AutodiffModule, Module};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Device, FloatDType, Int, Tensor, TensorData};

use super::grads;
use super::noise::NoiseScaleEstimator;
use super::optim::Opt;
use super::scaler::{LossScaler, ScalerConfig};
use crate::core::{
    CancelToken, EvalPoint, NoiseSummary, Outcome, StepStats, Throughput, TrialEvent, TrialOutcome,
    TrialSpec,
};
use crate::data::{self, Dataset, ImageBatcher, TextBatcher};
use crate::model::{Batch, Ctx, EvalSums, InputShape, Net};
use crate::workload::spec::{Metric, Precision, Workload};

/// Options that are not part of a trial's identity.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Estimate the gradient noise scale every step.
    pub noise_scale: bool,
    /// Override of the loss scaler (fp16 default: 2^16, ×0.5, ×2 after 2000).
    pub scaler: Option<ScalerConfig>,
    /// Minimum interval between Step events.
    pub step_event_interval: Duration,
    /// Examples per evaluation forward pass.
    pub eval_batch: usize,
    /// H6 cluster: this process is one node of a multi-node trial (src/cluster): the global batch
    /// is split over every node's replicas and the all-reduce spans the nodes. `None`: one process.
    pub cluster: Option<crate::cluster::ClusterSpec>,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            noise_scale: true,
            scaler: None,
            step_event_interval: Duration::from_millis(100),
            eval_batch: 1000,
            cluster: None,
        }
    }
}

/// Only one multi-replica trial at a time may use the process-wide collective server.
static COLLECTIVE: Mutex<()> = Mutex::new(());

fn compute_dtype(p: Precision) -> Option<FloatDType> {
    match p {
        Precision::Fp32 => None,
        Precision::Bf16 => Some(FloatDType::BF16),
        Precision::Fp16 => Some(FloatDType::F16),
    }
}

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
    /// |g_shard|² (unscaled by the caller) — or mean of the two micro-batches with one worker.
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
    /// Replicas of the trial over all nodes (H6 cluster: nodes × local workers).
    world: usize,
    cluster: Option<crate::cluster::ClusterSpec>,
    device: Device<B>,
    model: Net<B>,
    opt: Opt<Net<B>, B>,
    ctx: Ctx,
    data: Arc<Dataset>,
    eval_batch: usize,
}

impl<B: AutodiffBackend> Worker<B> {
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
        let loss = self.model.loss(batch, &self.ctx);
        let loss_val: f64 = loss.clone().into_scalar().elem_f64();
        let scaled = if loss_scale != 1.0 {
            loss.mul_scalar(loss_scale)
        } else {
            loss
        };
        let g = scaled.backward();
        (loss_val, GradientsParams::from_grads(g, &self.model))
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
        let (loss, mut g, local_sq) = if micro && batch.len() >= 2 {
            let (a, b) = split_half(&batch);
            let (la, mut ga) = self.backward(&a, loss_scale);
            let (lb, gb) = self.backward(&b, loss_scale);
            let sa = grads::sq_norm(&self.model, &ga);
            let sb = grads::sq_norm(&self.model, &gb);
            grads::mean_into(&self.model, &mut ga, &gb);
            ((la + lb) / 2.0, ga, (sa + sb) / 2.0)
        } else {
            let (l, g) = self.backward(&batch, loss_scale);
            let s = if self.world > 1 {
                grads::sq_norm(&self.model, &g)
            } else {
                f64::NAN
            };
            (l, g, s)
        };
        let compute_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        if self.cluster.is_some() {
            // H6 cluster: across processes ParamIds differ, so reduce in the model's own order.
            g = crate::cluster::multinode::all_reduce_in_model_order(&self.model, g, self.rank)?;
        } else if self.world > 1 {
            g = g
                .all_reduce::<B::InnerBackend>(PeerId::from(self.rank), ReduceOperation::Mean)
                .map_err(|e| anyhow!("all-reduce failed on worker {}: {e:?}", self.rank))?;
        }
        // H6 cluster: across nodes every node needs the global mean loss and local |g|², so that
        // divergence and noise-scale decisions agree on every node.
        let (loss, local_sq) = if self.cluster.is_some() {
            self.mean_over_nodes(loss, local_sq)?
        } else {
            (loss, local_sq)
        };
        let exchange_s = t1.elapsed().as_secs_f64();
        let global_sq = grads::sq_norm(&self.model, &g);
        // Every replica sees bit-identical reduced gradients, so every replica makes the same
        // skip/apply decision as the coordinator's scaler.
        if global_sq.is_finite() {
            let unscaled_norm = global_sq.sqrt() / loss_scale;
            let clip_factor = match clip {
                Some(c) if unscaled_norm > c => c / unscaled_norm,
                _ => 1.0,
            };
            grads::scale(&self.model, &mut g, clip_factor / loss_scale);
            let model = self.model.clone();
            self.model = self.opt.step(lr, model, g);
        }
        Ok(Report {
            loss,
            local_sq,
            global_sq,
            compute_s,
            exchange_s,
        })
    }

    /// H6 cluster: the mean of (loss, local |g|²) over every replica of every node.
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
        let model = self.model.valid();
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
    match b {
        Batch::Images { x, y } => (
            Batch::Images {
                x: x.clone().narrow(0, 0, h),
                y: y.clone().narrow(0, 0, h),
            },
            Batch::Images {
                x: x.clone().narrow(0, h, n - h),
                y: y.clone().narrow(0, h, n - h),
            },
        ),
        Batch::Text { x, y } => (
            Batch::Text {
                x: x.clone().narrow(0, 0, h),
                y: y.clone().narrow(0, 0, h),
            },
            Batch::Text {
                x: x.clone().narrow(0, h, n - h),
                y: y.clone().narrow(0, h, n - h),
            },
        ),
    }
}

fn worker_loop<B: AutodiffBackend>(
    mut w: Worker<B>,
    rx: Receiver<Cmd>,
    tx: Sender<(usize, Reply)>,
) {
    if w.world > 1 {
        // H6 cluster: global (multi-node) mode when the trial spans nodes.
        let local = w.world / w.cluster.as_ref().map_or(1, |c| c.nodes);
        let cfg = crate::cluster::multinode::collective_config(w.cluster.as_ref(), local);
        if let Err(e) = register::<B::InnerBackend>(PeerId::from(w.rank), w.device.clone(), cfg) {
            let _ = tx.send((
                w.rank,
                Reply::Failed(format!("collective register failed: {e:?}")),
            ));
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

pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

/// Input shape of a dataset for model construction.
pub fn input_shape(data: &Dataset) -> InputShape {
    match data {
        Dataset::Images(d) => InputShape {
            channels: d.channels,
            height: d.height,
            width: d.width,
            classes: d.classes,
            vocab: 0,
            seq_len: 0,
        },
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

/// Bounded (step, value) history: halves its resolution when full.
pub fn push_bounded(v: &mut Vec<(u64, f64)>, item: (u64, f64), cap: usize) {
    v.push(item);
    if v.len() > cap {
        let kept: Vec<_> = v.iter().copied().step_by(2).collect();
        *v = kept;
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
    // H6 cluster: over N nodes the global batch is split into N×G shards; this node takes G.
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
            model: replica,
            opt: Opt::new(workload.optimizer, &spec.metaparams),
            ctx,
            data: dataset.clone(),
            eval_batch: opts.eval_batch,
        };
        let (ctx_tx, ctx_rx) = channel::<Cmd>();
        cmd_txs.push(ctx_tx);
        let rtx = reply_tx.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("trial{}-worker{rank}", spec.trial_id))
                .spawn(move || worker_loop(w, ctx_rx, rtx))
                .context("spawning a worker thread")?,
        );
    }
    drop(reply_tx);
    drop(model);

    let result = coordinate(
        workload, spec, &dataset, opts, emit, cancel, &cmd_txs, &reply_rx, &shards, params,
    );
    for tx in &cmd_txs {
        let _ = tx.send(Cmd::Stop);
    }
    drop(cmd_txs);
    for h in handles {
        let _ = h.join();
    }
    result
}

#[allow(clippy::too_many_arguments)]
fn coordinate(
    workload: &Workload,
    spec: &TrialSpec,
    dataset: &Arc<Dataset>,
    opts: &TrainOptions,
    emit: &mut dyn FnMut(TrialEvent),
    cancel: &CancelToken,
    cmd_txs: &[Sender<Cmd>],
    replies: &Receiver<(usize, Reply)>,
    shards: &[std::ops::Range<usize>],
    params: u64,
) -> anyhow::Result<TrialOutcome> {
    let world = cmd_txs.len();
    let nodes = opts.cluster.as_ref().map_or(1, |c| c.nodes); // H6 cluster
    let b = spec.batch_size;
    let mp = &spec.metaparams;
    let scaler_cfg = opts.scaler.clone().unwrap_or(match spec.precision {
        Precision::Fp16 => ScalerConfig::fp16(),
        _ => ScalerConfig::bf16(), // fp32 and bf16: scale 1, skip non-finite steps
    });
    let mut scaler = LossScaler::new(scaler_cfg);
    let mut noise = NoiseScaleEstimator::new(0.95);
    let micro = opts.noise_scale && world * nodes == 1 && b >= 2;
    let b_small = if world * nodes > 1 {
        (b / (world * nodes)) as f64
    } else {
        (b / 2) as f64
    };

    let seed = spec.seed;
    let mut img_batcher = match &**dataset {
        Dataset::Images(d) => Some(ImageBatcher::new(d.n_train(), seed)),
        _ => None,
    };
    let mut txt_batcher = match &**dataset {
        Dataset::Text(d) => Some(TextBatcher::new(d.seq_len, seed)),
        _ => None,
    };
    let is_lm = workload.model.is_language_model();
    let metric_of = |s: &EvalSums| -> f64 {
        match workload.target.metric {
            Metric::ValBpc => s.nll / s.count.max(1.0) / std::f64::consts::LN_2,
            _ if is_lm => s.nll / s.count.max(1.0) / std::f64::consts::LN_2,
            _ => s.errors / s.count.max(1.0),
        }
    };

    emit(TrialEvent::Started { spec: spec.clone() });
    let started = Instant::now();
    let mut train_time = 0.0f64;
    let (mut sum_compute, mut sum_exchange, mut timed_steps) = (0.0, 0.0, 0u64);
    let mut applied: u64 = 0;
    let mut attempts: u64 = 0;
    let mut evals: Vec<EvalPoint> = Vec::new();
    let mut trajectory: Vec<(u64, f64)> = Vec::new();
    let mut loss_acc = (0.0f64, 0u64);
    let mut first_loss: Option<f64> = None;
    let mut last_emit = Instant::now() - opts.step_event_interval;
    let mut last_loss = f64::NAN;
    let mut b_at_target = None;

    let finish = |outcome: Outcome,
                  applied: u64,
                  evals: Vec<EvalPoint>,
                  trajectory: Vec<(u64, f64)>,
                  scaler: &LossScaler,
                  noise_val: Option<f64>,
                  train_time: f64,
                  sc: f64,
                  se: f64,
                  n: u64| {
        let n = n.max(1) as f64;
        TrialOutcome {
            outcome,
            steps: applied,
            skipped_steps: scaler.skipped(),
            final_loss_scale: scaler.scale(),
            wall_s: started.elapsed().as_secs_f64(),
            evals,
            noise: NoiseSummary {
                b_simple: noise_val,
                trajectory,
            },
            throughput: Throughput {
                examples_per_s: if train_time > 0.0 {
                    (applied + scaler.skipped()) as f64 * b as f64 / train_time
                } else {
                    0.0
                },
                step_s: train_time / n,
                compute_s: sc / n,
                exchange_s: se / n,
                params,
                exchanged_bytes_per_step: if world * nodes > 1 { params * 4 } else { 0 },
            },
        }
    };

    let budget = workload.budget_for(b);
    let mut next_eval = workload.next_eval(0);
    let outcome = loop {
        if cancel.is_cancelled() {
            break Outcome::Cancelled { step: applied };
        }
        if applied >= budget {
            break Outcome::NotReached {
                budget,
                early_stopped: false,
            };
        }
        let t_step = Instant::now();
        let lr = mp.schedule.lr_at(mp.learning_rate, applied);
        // the global batch, split into G equal shards
        let host: Vec<HostBatch> = if let Some(bt) = img_batcher.as_mut() {
            let idx = bt.next_batch(b);
            shards
                .iter()
                .map(|r| HostBatch::Images(idx[r.clone()].to_vec()))
                .collect()
        } else {
            let d = dataset.as_text().expect("text dataset");
            let (x, y) = txt_batcher.as_mut().unwrap().next_batch(d, b);
            let l = d.seq_len;
            shards
                .iter()
                .map(|r| {
                    HostBatch::Text(
                        x[r.start * l..r.end * l].to_vec(),
                        y[r.start * l..r.end * l].to_vec(),
                    )
                })
                .collect()
        };
        let loss_scale = scaler.scale();
        for (tx, shard) in cmd_txs.iter().zip(host) {
            tx.send(Cmd::Step {
                shard,
                lr,
                loss_scale,
                clip: workload.grad_clip,
                micro,
            })
            .map_err(|_| anyhow!("a worker stopped unexpectedly"))?;
        }
        let mut loss = 0.0;
        let mut local = 0.0;
        let mut global = f64::NAN;
        let (mut comp, mut exch) = (0.0f64, 0.0f64);
        for _ in 0..world {
            let (rank, r) = replies
                .recv()
                .map_err(|_| anyhow!("a worker stopped unexpectedly"))?;
            match r {
                Reply::Step(r) => {
                    loss += r.loss / world as f64;
                    local += r.local_sq / world as f64;
                    if rank == 0 {
                        global = r.global_sq;
                    }
                    comp = comp.max(r.compute_s);
                    exch = exch.max(r.exchange_s);
                }
                Reply::Failed(m) => anyhow::bail!("worker {rank} failed: {m}"),
                Reply::Eval(_) => unreachable!(),
            }
        }
        attempts += 1;
        let dt = t_step.elapsed().as_secs_f64();
        train_time += dt;
        sum_compute += comp;
        sum_exchange += exch;
        timed_steps += 1;
        last_loss = loss;

        if !loss.is_finite() {
            break Outcome::Diverged { step: applied };
        }
        let f = *first_loss.get_or_insert(loss);
        if loss > workload.divergence_factor * f.max(1e-6) && applied > 0 {
            break Outcome::Diverged { step: applied };
        }
        let decision = scaler.update(global.is_finite());
        if decision == super::scaler::ScaleDecision::Skip {
            let hopeless = scaler.consecutive_skips() >= 20 && (scaler.scale() <= 1.0);
            if hopeless {
                break Outcome::Diverged { step: applied };
            }
            continue;
        }
        applied += 1;
        loss_acc.0 += loss;
        loss_acc.1 += 1;
        if opts.noise_scale && (world * nodes > 1 || micro) {
            let s2 = loss_scale * loss_scale;
            noise.update(b_small, local / s2, b as f64, global / s2);
        }

        let eval_now = applied >= next_eval;
        if eval_now {
            next_eval = workload.next_eval(applied);
        }
        if last_emit.elapsed() >= opts.step_event_interval || eval_now {
            last_emit = Instant::now();
            emit(TrialEvent::Step(StepStats {
                step: applied,
                loss,
                lr,
                loss_scale: scaler.scale(),
                skipped_steps: scaler.skipped(),
                examples_per_s: attempts as f64 * b as f64 / train_time.max(1e-9),
                compute_s: sum_compute / timed_steps as f64,
                exchange_s: sum_exchange / timed_steps as f64,
            }));
            if let Some(v) = noise.b_simple() {
                emit(TrialEvent::NoiseScale {
                    step: applied,
                    b_simple: v,
                });
            }
        }
        if eval_now {
            cmd_txs[0]
                .send(Cmd::Eval)
                .map_err(|_| anyhow!("worker 0 stopped unexpectedly"))?;
            let sums = loop {
                match replies
                    .recv()
                    .map_err(|_| anyhow!("worker 0 stopped unexpectedly"))?
                {
                    (_, Reply::Eval(s)) => break s,
                    (r, Reply::Failed(m)) => {
                        anyhow::bail!("worker {r} failed during evaluation: {m}")
                    }
                    _ => {}
                }
            };
            let metric = metric_of(&sums);
            let p = EvalPoint {
                step: applied,
                metric,
                train_loss: loss_acc.0 / loss_acc.1.max(1) as f64,
            };
            loss_acc = (0.0, 0);
            evals.push(p);
            if let Some(v) = noise.b_simple() {
                push_bounded(&mut trajectory, (applied, v), 256);
            }
            emit(TrialEvent::Eval(p));
            if !metric.is_finite() {
                break Outcome::Diverged { step: applied };
            }
            if workload.target.is_met(metric) {
                b_at_target = noise.b_simple();
                break Outcome::Reached { step: applied };
            }
        }
    };
    let _ = last_loss;
    let noise_val = b_at_target.or_else(|| noise.b_simple());
    let out = finish(
        outcome,
        applied,
        evals,
        trajectory,
        &scaler,
        noise_val,
        train_time,
        sum_compute,
        sum_exchange,
        timed_steps,
    );
    emit(TrialEvent::Finished {
        outcome: Box::new(out.clone()),
    });
    Ok(out)
}
