//! The workers of a group's trial loop: one replica each of the group's model (every member's
//! weights along the member axis) and its optimizer, driven by commands from the coordinator
//! (`trainer`): a step over every member's shard (forward/backward, the bucketed all-reduce when
//! there are several replicas, the per-member clipping and update, and one read of everything the
//! coordinator needs), an evaluation of every member, a compaction to the members still training.

use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;

use anyhow::anyhow;
use burn::collective::{finish_collective, PeerId, ReduceOperation};
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::exchange::{self, Reduced};
use super::grads;
use super::optim::{MemberStep, Opt};
use crate::core::runner::panic_message;
use crate::data::{self, Dataset};
use crate::model::encoder::TransferFeature;
use crate::model::family::StatUpdate;
use crate::model::{Batch, Ctx, EvalSums, Net};
use crate::transfer::{self, encode::Features};

/// A one-element-per-member tensor on the inner (non-autodiff) backend: values the step reads back.
pub(super) type InnerTensor<B> = Tensor<<B as AutodiffBackend>::InnerBackend, 1>;

/// Host-side shard of a batch: a replica's rows of every member's batch, member-major.
#[derive(Clone)]
pub(super) enum HostBatch {
    /// Training rows and their augmentations (empty: none).
    Images(Vec<usize>, Vec<data::Aug>),
    Text(Vec<i64>, Vec<i64>),
}

impl HostBatch {
    /// The members' shards one after the other (member-major rows).
    pub(super) fn concat(parts: Vec<HostBatch>) -> HostBatch {
        let mut it = parts.into_iter();
        let first = it.next().expect("at least one member");
        it.fold(first, |acc, p| match (acc, p) {
            (HostBatch::Images(mut a, mut aa), HostBatch::Images(b, ba)) => {
                // members without augmentation have none; with it, every member has it
                a.extend(b);
                aa.extend(ba);
                HostBatch::Images(a, aa)
            }
            (HostBatch::Text(mut ax, mut ay), HostBatch::Text(bx, by)) => {
                ax.extend(bx);
                ay.extend(by);
                HostBatch::Text(ax, ay)
            }
            _ => unreachable!("one dataset, one kind of batch"),
        })
    }
}

/// A member's part of a step: its learning rate and loss scale.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) lr: f64,
    pub(super) loss_scale: f64,
}

pub(super) enum Cmd {
    Step {
        shard: HostBatch,
        plans: Vec<Plan>,
        clip: Option<f64>,
        /// One worker: also each member's gradient of the first half of its batch, for a tr(Σ)
        /// sample.
        sample: bool,
    },
    Eval,
    /// The transfer probe's sentence features under the members at these positions.
    Encode(Vec<usize>, TransferFeature),
    /// Keep these members (positions in the current order), drop the others.
    Compact(Vec<usize>),
    Stop,
}

/// One step, per member (in the group's current order).
pub(super) struct Report {
    pub(super) loss: Vec<f64>,
    /// |g_shard|² (scaled by the loss scale²); NaN when the noise scale is off or G = 1.
    pub(super) local_sq: Vec<f64>,
    /// |mean g|² after the all-reduce (scaled).
    pub(super) global_sq: Vec<f64>,
    /// One worker, sampled step: tr(Σ) from the half-batch gradient (scaled); NaN otherwise.
    pub(super) trace: Vec<f64>,
    /// Seconds the sampled step's extra half-batch backward and distance took (0 if none).
    pub(super) noise_s: f64,
    pub(super) compute_s: f64,
    pub(super) exchange_s: f64,
    /// Blocking device→host reads this step took.
    pub(super) reads: u64,
}

pub(super) enum Reply {
    Step(Report),
    /// Each member's sums and the blocking reads the evaluation took.
    Eval(Vec<EvalSums>, u64),
    Encoded(Features),
    Compacted,
    Failed(String),
}

pub(super) struct Worker<B: AutodiffBackend> {
    pub(super) rank: usize,
    /// Replicas of the trial over all nodes (nodes × local workers).
    pub(super) world: usize,
    pub(super) cluster: Option<super::multinode::ClusterSpec>,
    pub(super) device: Device<B>,
    /// The replica (None only inside `step`, while the optimizer owns it: a clone kept here
    /// would share every weight buffer and force the in-place update to copy them).
    pub(super) model: Option<Net<B>>,
    pub(super) opt: Opt<B>,
    /// Members now in the model.
    pub(super) members: usize,
    pub(super) ctx: Ctx,
    pub(super) data: Arc<Dataset>,
    pub(super) eval_batch: usize,
    pub(super) bucket_bytes: usize,
    /// Measure |g_shard|² for the noise scale.
    pub(super) noise: bool,
    /// Evaluations sum the negative log-likelihood (the metric is in bits), not only the errors.
    pub(super) nll: bool,
    /// Blocking device→host reads since the last reply.
    pub(super) reads: u64,
    /// The validation batches on the device, after the first evaluation, for the members the
    /// group started with (the same rows repeated per member); with the rows each member scores.
    pub(super) val: Option<Vec<(Batch<B::InnerBackend>, usize)>>,
    /// Members the validation batches were built for.
    pub(super) val_members: usize,
    /// One copy of the validation batches, for a model whose members score shared rows
    /// (`Net::shares_eval_rows`); built at its first evaluation.
    pub(super) val_one: Option<Vec<(Batch<B::InnerBackend>, usize)>>,
}

impl<B: AutodiffBackend> Worker<B> {
    fn net(&self) -> &Net<B> {
        self.model.as_ref().expect("the replica")
    }

    fn batch(&self, shard: &HostBatch) -> Batch<B> {
        match (shard, &*self.data) {
            (HostBatch::Images(idx, augs), Dataset::Images(d)) => {
                let (x, y) = data::gather_augmented(d, idx, augs);
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

    /// Each member's mean loss (on the device, not read), the gradients of Σ_k loss_k ×
    /// `scales[k]` (member k's gradients are its loss × its loss scale's) and the running
    /// statistics the forward moved (`Net::with_stats`; none for most families).
    fn backward(
        &self,
        batch: &Batch<B>,
        scales: &[f64],
    ) -> (InnerTensor<B>, GradientsParams, Vec<StatUpdate<B>>) {
        let (loss, stats) = self.net().loss_and_stats(batch, &self.ctx);
        let value = loss.clone().inner();
        let total = if scales.iter().all(|s| *s == 1.0) {
            loss.sum()
        } else if scales.len() == 1 {
            loss.mul_scalar(scales[0]).sum()
        } else {
            let s: Vec<f32> = scales.iter().map(|&s| s as f32).collect();
            let k = s.len();
            (loss * Tensor::<B, 1>::from_data(TensorData::new(s, [k]), &self.device)).sum()
        };
        let g = total.backward();
        (value, GradientsParams::from_grads(g, self.net()), stats)
    }

    /// One training step of every member. Everything the coordinator needs (losses, norms, the
    /// finite checks) comes back from the device in **one** read at the end of the step.
    fn step(
        &mut self,
        shard: HostBatch,
        plans: Vec<Plan>,
        clip: Option<f64>,
        sample: bool,
    ) -> anyhow::Result<Report> {
        let k = self.members;
        anyhow::ensure!(plans.len() == k, "one plan per member");
        let t0 = Instant::now();
        let batch = self.batch(&shard);
        let scales: Vec<f64> = plans.iter().map(|p| p.loss_scale).collect();
        let (loss, g, stats) = self.backward(&batch, &scales);
        // One worker, sampled step: each member's gradient of the first half of its batch beside
        // the whole one's, |g − g_half|² for tr(Σ). The update uses the whole batch's gradient
        // either way, so sampling never changes the trajectory.
        let n = batch.len() / k;
        let (half, noise_s) = if sample && self.world == 1 && n >= 2 {
            let t_half = Instant::now();
            let h = n / 2;
            // (its running statistics are dropped: sampling never changes the trajectory)
            let (_, gh, _) = self.backward(&batch.narrow_members(k, 0, h), &scales);
            let d = grads::sq_dist(self.net(), &g, &gh, k);
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
                k,
            )?
        } else {
            Reduced::single(self.net(), g, k)
        };
        let dev = &self.device;
        let nan = || {
            Tensor::<B::InnerBackend, 1>::from_data(TensorData::new(vec![f32::NAN; k], [k]), dev)
        };
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
        let col = |i: usize| v[i * k..(i + 1) * k].to_vec();
        let (loss, global_sq, local_sq) = (col(0), col(1), col(2));
        let trace = match half {
            Some((n, h, _)) => col(3)
                .into_iter()
                .map(|d| super::noise::trace_from_half(n, h, d))
                .collect(),
            None => vec![f64::NAN; k],
        };
        // Every replica sees bit-identical reduced gradients, so every replica makes the same
        // skip/apply decision per member as the coordinator's scalers.
        let steps: Vec<MemberStep> = plans
            .iter()
            .zip(&global_sq)
            .map(|(p, &gsq)| MemberStep::from_norm(p.lr, p.loss_scale, gsq, clip))
            .collect();
        if steps.iter().any(|s| s.apply) {
            let g = reduced.into_grads(self.net());
            let model = self.model.take().expect("the replica");
            let model = self.opt.step_members(model, g, &steps);
            // the running statistics (batch normalisation) move with the step: a member whose
            // step is skipped keeps its old ones, as it keeps its weights
            let applied: Vec<bool> = steps.iter().map(|s| s.apply).collect();
            self.model = Some(model.with_stats(stats, &applied));
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

    /// The probe's sentence features (`transfer::sentences` order) under the members at
    /// `members` (positions in the current order), in that order.
    fn encode(&mut self, members: &[usize], feature: TransferFeature) -> anyhow::Result<Features> {
        let set = match &*self.data {
            Dataset::Text(t) => t.probe.clone(),
            Dataset::Images(_) => None,
        }
        .ok_or_else(|| anyhow!("a transfer probe needs the dataset's probe sentences"))?;
        let model = self.net().valid();
        let model =
            if members.len() == self.members && members.iter().enumerate().all(|(i, &m)| i == m) {
                model
            } else {
                crate::model::select_members(model, members)
            };
        self.reads += 1;
        transfer::encode::encode(
            &model,
            &transfer::sentences(&set),
            feature,
            transfer::encode::DEFAULT_BATCH_ELEMENTS,
            &self.device,
        )
    }

    /// Keeps the members at `keep` (positions in the current order).
    fn compact(&mut self, keep: &[usize]) {
        let model = self.model.take().expect("the replica");
        self.model = Some(crate::model::select_members(model, keep));
        self.opt.select(keep);
        self.members = keep.len();
    }

    /// The validation set as device batches of at most `eval_batch` examples a member, each
    /// repeated for the `members` members (member-major rows), with the predictions each member
    /// scores in it; built once per trial (every evaluation reuses them).
    fn val_batches(&self, members: usize) -> Vec<(Batch<B::InnerBackend>, usize)> {
        let dev = &self.device;
        let rep = |v: Vec<f32>| -> Vec<f32> { v.repeat(members) };
        let rep_i = |v: Vec<i64>| -> Vec<i64> { v.repeat(members) };
        match &*self.data {
            Dataset::Images(d) => d
                .val_batches(self.eval_batch)
                .map(|(x, y)| {
                    let n = y.len();
                    let xb = Tensor::<B::InnerBackend, 4>::from_data(
                        TensorData::new(rep(x), [members * n, d.channels, d.height, d.width]),
                        dev,
                    );
                    let yb = Tensor::<B::InnerBackend, 1, Int>::from_data(
                        TensorData::new(rep_i(y), [members * n]),
                        dev,
                    );
                    (Batch::Images { x: xb, y: yb }, n)
                })
                .collect(),
            Dataset::Text(d) => {
                let per = (self.eval_batch / d.seq_len).max(1);
                d.val_batches(per)
                    .map(|(x, y)| {
                        let n = x.len() / d.seq_len;
                        let xb = Tensor::<B::InnerBackend, 2, Int>::from_data(
                            TensorData::new(rep_i(x), [members * n, d.seq_len]),
                            dev,
                        );
                        let yb = Tensor::<B::InnerBackend, 2, Int>::from_data(
                            TensorData::new(rep_i(y), [members * n, d.seq_len]),
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
        loss: InnerTensor<B>,
        local_sq: InnerTensor<B>,
    ) -> anyhow::Result<(InnerTensor<B>, InnerTensor<B>)> {
        let k = loss.dims()[0];
        let t = Tensor::cat(vec![loss, local_sq], 0);
        let r = burn::collective::all_reduce::<B::InnerBackend>(
            PeerId::from(self.rank),
            t.into_primitive().tensor(),
            ReduceOperation::Mean,
        )
        .map_err(|e| anyhow!("loss all-reduce failed on worker {}: {e:?}", self.rank))?;
        let r =
            Tensor::<B::InnerBackend, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(r));
        Ok((r.clone().narrow(0, 0, k), r.narrow(0, k, k)))
    }

    /// Evaluates every member on the validation set: every batch's sums stay on the device until
    /// one read at the end (summed on the host in f64, in batch order, per member).
    fn eval(&mut self) -> anyhow::Result<Vec<EvalSums>> {
        let k = self.members;
        let model = self.net().valid();
        if !self.nll && model.shares_eval_rows(&self.ctx) {
            if self.val_one.is_none() {
                self.val_one = Some(self.val_batches(1));
            }
            let val = self.val_one.as_ref().expect("built above");
            let stats: Option<Vec<_>> = val
                .iter()
                .map(|(b, _)| model.correct_shared(b, &self.ctx))
                .collect();
            if let Some(stats) = stats {
                let sizes: Vec<usize> = val.iter().map(|(_, n)| *n).collect();
                return self.sum_stats(stats, sizes, k, false);
            }
        }
        if self.val.is_none() {
            self.val_members = k;
            self.val = Some(self.val_batches(k));
        }
        let val = self.val.as_ref().expect("built above");
        let with_nll = self.nll;
        // every member's rows are the same: the first k members' rows serve after a compaction
        let rows_of = |b: &Batch<B::InnerBackend>| b.len() / self.val_members;
        let stats: Vec<_> = val
            .iter()
            .map(|(batch, _)| {
                let b = if k == self.val_members {
                    batch.clone()
                } else {
                    batch.narrow(0, k * rows_of(batch))
                };
                model.eval_stats(&b, &self.ctx, with_nll)
            })
            .collect();
        let sizes: Vec<usize> = val.iter().map(|(_, n)| *n).collect();
        self.sum_stats(stats, sizes, k, with_nll)
    }

    /// Each member's sums over the batches' statistics (`Net::eval_stats`' layout; batch `i`
    /// scored `sizes[i]` rows per member), read back in one read and summed in f64 in batch order.
    fn sum_stats(
        &mut self,
        stats: Vec<Tensor<B::InnerBackend, 1>>,
        sizes: Vec<usize>,
        k: usize,
        with_nll: bool,
    ) -> anyhow::Result<Vec<EvalSums>> {
        let mut sums = vec![EvalSums::default(); k];
        if stats.is_empty() {
            return Ok(sums);
        }
        let v = self.read(Tensor::cat(stats, 0))?;
        let per = if with_nll { 2 * k } else { k };
        for (i, n) in sizes.into_iter().enumerate() {
            let b = &v[i * per..(i + 1) * per];
            for (m, s) in sums.iter_mut().enumerate() {
                let e = if with_nll {
                    EvalSums::from_stats(n, b[2 * m], b[2 * m + 1])
                } else {
                    EvalSums::from_stats(n, 0.0, b[m])
                };
                add(s, e);
            }
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

pub(super) fn worker_loop<B: AutodiffBackend>(
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

/// Runs a command on `w`: a panic or an error is a `Failed` reply.
pub(super) fn handle<B: AutodiffBackend>(w: &mut Worker<B>, cmd: Cmd) -> Reply {
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match cmd {
        Cmd::Step {
            shard,
            plans,
            clip,
            sample,
        } => w.step(shard, plans, clip, sample).map(Reply::Step),
        Cmd::Eval => w
            .eval()
            .map(|s| Reply::Eval(s, std::mem::take(&mut w.reads))),
        Cmd::Encode(members, feature) => w.encode(&members, feature).map(Reply::Encoded),
        Cmd::Compact(keep) => {
            w.compact(&keep);
            Ok(Reply::Compacted)
        }
        Cmd::Stop => Ok(Reply::Failed("stopped".into())),
    }));
    match run {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Reply::Failed(format!("{e:#}")),
        Err(p) => Reply::Failed(panic_message(&p)),
    }
}

/// Runs `f` inside a rayon pool of `threads` threads (`None`, or a pool that cannot be built:
/// on this thread, with the global pool).
pub(super) fn in_pool<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> R {
    match threads.and_then(crate::core::float_mode::pool) {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// The coordinator's handles on its worker threads.
pub(super) struct Workers<'a, B: AutodiffBackend> {
    pub(super) cmd: &'a [Sender<Cmd>],
    pub(super) replies: &'a Receiver<(usize, Reply)>,
    /// The one replica, on the coordinator's thread (then `cmd` is empty).
    pub(super) inline: Option<&'a std::cell::RefCell<Worker<B>>>,
}

impl<B: AutodiffBackend> Workers<'_, B> {
    pub(super) fn world(&self) -> usize {
        if self.inline.is_some() {
            1
        } else {
            self.cmd.len()
        }
    }

    /// Sends a command built per replica and collects every replica's reply.
    fn all(&self, mut cmd: impl FnMut(usize) -> Cmd) -> anyhow::Result<Vec<(usize, Reply)>> {
        if let Some(w) = &self.inline {
            return Ok(vec![(0, handle(&mut w.borrow_mut(), cmd(0)))]);
        }
        for (rank, tx) in self.cmd.iter().enumerate() {
            tx.send(cmd(rank))
                .map_err(|_| anyhow!("a worker stopped unexpectedly"))?;
        }
        (0..self.world())
            .map(|_| {
                self.replies
                    .recv()
                    .map_err(|_| anyhow!("a worker stopped unexpectedly"))
            })
            .collect()
    }

    /// Sends one step's shards and folds the replies: per member the mean loss, mean |g_shard|²,
    /// |mean g|²; the slowest replica's compute and the exchange as the *last-arriving* replica
    /// saw it (the shortest exchange time: the others' include waiting for the slowest one's
    /// compute, which is load imbalance, not exchange).
    pub(super) fn step(
        &self,
        shards: Vec<HostBatch>,
        plans: &[Plan],
        clip: Option<f64>,
        sample: bool,
    ) -> anyhow::Result<Report> {
        let world = self.world();
        let k = plans.len();
        let mut shards = shards.into_iter().map(Some).collect::<Vec<_>>();
        let replies = self.all(|rank| Cmd::Step {
            shard: shards[rank].take().expect("one shard per replica"),
            plans: plans.to_vec(),
            clip,
            sample,
        })?;
        let mut sum = Report {
            loss: vec![0.0; k],
            local_sq: vec![0.0; k],
            global_sq: vec![f64::NAN; k],
            trace: vec![f64::NAN; k],
            noise_s: 0.0,
            compute_s: 0.0,
            exchange_s: f64::INFINITY,
            reads: 0,
        };
        for (rank, r) in replies {
            match r {
                Reply::Step(r) => {
                    for i in 0..k {
                        sum.loss[i] += r.loss[i] / world as f64;
                        sum.local_sq[i] += r.local_sq[i] / world as f64;
                    }
                    if rank == 0 {
                        sum.global_sq = r.global_sq;
                        sum.trace = r.trace;
                        sum.noise_s = r.noise_s;
                    }
                    sum.reads += r.reads;
                    sum.compute_s = sum.compute_s.max(r.compute_s);
                    sum.exchange_s = sum.exchange_s.min(r.exchange_s);
                }
                Reply::Failed(m) => anyhow::bail!("worker {rank} failed: {m}"),
                _ => unreachable!("a step was asked for"),
            }
        }
        if world == 1 {
            sum.exchange_s = 0.0;
        }
        Ok(sum)
    }

    /// Evaluates worker 0's replica (every member) on the validation set; with the reads it took.
    pub(super) fn eval(&self) -> anyhow::Result<(Vec<EvalSums>, u64)> {
        self.ask_first(Cmd::Eval, "during evaluation", |r| match r {
            Reply::Eval(s, reads) => Some((s, reads)),
            _ => None,
        })
    }

    /// Worker 0's replica's probe features under the members at `members`.
    pub(super) fn encode(
        &self,
        members: &[usize],
        feature: TransferFeature,
    ) -> anyhow::Result<Features> {
        let cmd = Cmd::Encode(members.to_vec(), feature);
        self.ask_first(cmd, "encoding the probe", |r| match r {
            Reply::Encoded(f) => Some(f),
            _ => None,
        })
    }

    /// Sends `cmd` to worker 0 alone and waits for its answer, which `take` picks out of the
    /// replies (others are stale and skipped); a failed worker is an error saying it failed `what`.
    fn ask_first<T>(
        &self,
        cmd: Cmd,
        what: &str,
        take: impl Fn(Reply) -> Option<T>,
    ) -> anyhow::Result<T> {
        if let Some(w) = &self.inline {
            return match handle(&mut w.borrow_mut(), cmd) {
                Reply::Failed(m) => anyhow::bail!("worker 0 failed {what}: {m}"),
                r => Ok(take(r).expect("worker 0 answers what it was asked")),
            };
        }
        self.cmd[0]
            .send(cmd)
            .map_err(|_| anyhow!("worker 0 stopped unexpectedly"))?;
        loop {
            let (r, reply) = self
                .replies
                .recv()
                .map_err(|_| anyhow!("worker 0 stopped unexpectedly"))?;
            if let Reply::Failed(m) = reply {
                anyhow::bail!("worker {r} failed {what}: {m}");
            }
            if let Some(t) = take(reply) {
                return Ok(t);
            }
        }
    }

    /// Every replica keeps the members at `keep`.
    pub(super) fn compact(&self, keep: &[usize]) -> anyhow::Result<()> {
        for (rank, r) in self.all(|_| Cmd::Compact(keep.to_vec()))? {
            match r {
                Reply::Compacted => {}
                Reply::Failed(m) => anyhow::bail!("worker {rank} failed: {m}"),
                _ => unreachable!("a compaction was asked for"),
            }
        }
        Ok(())
    }
}
