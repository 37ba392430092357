//! The data-parallel trial loop, for a **group** of trials trained as one program.
//!
//! A group is K trials of one workload at one batch size (HFTA, Wang et al. MLSys 2021; `vmap` over
//! trials in JAX): the model holds every member's weights along a leading member axis
//! (`model::layers`), each step runs one forward/backward over all members' batches and one
//! optimizer update with per-member metaparameters (`optim`). A lone trial is a group of one.
//!
//! A coordinator (this thread) owns, per member, the data order, the LR schedule, the loss scaler,
//! the noise-scale estimator and the measurement (`TrialMeter`); G worker threads each own a
//! replica of the group's model (initialised once, then cloned/forked so every replica has the same
//! weights and parameter ids) and its optimizer. Per step every worker computes forward/backward on
//! its shard of every member's batch, the gradients are all-reduced with burn-collective (Mean;
//! bucketed, see `exchange`: one exchange carries every member), and every worker applies the
//! identical update, so replicas stay identical. Everything the coordinator needs comes back in one
//! device read per step.
//!
//! Members are independent: member k's loss, gradients, clipping, loss scale, skipped steps,
//! divergence, evaluations and outcome are its own, exactly as if it ran alone (tests hold a member
//! against its solo run). A member that finishes (target reached, diverged, out of budget,
//! cancelled) is reported at once and compacted out of the model: it costs nothing after. With
//! `GroupCut::FirstReach` (a sweep's search trials) the group stops every member at the first
//! member's reach: past that step none of them can set the batch size's steps-to-target. With
//! `GroupCut::Quorum` (a confirm block) the members of a cohort stop once enough of them reached.

use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Context};
use burn::collective::reset_collective;
use burn::module::{AutodiffModule, Module};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Device;

use super::dtype::compute_dtype;
use super::noise::{Cadence, NoiseScaleEstimator};
use super::optim::Opt;
pub use super::options::{default_noise_every, TrainOptions};
use super::sampler::Sampler;
use super::scaler::{LossScaler, ScaleDecision, ScalerConfig};
use super::stages::Stages;
use super::worker::{in_pool, worker_loop, Cmd, HostBatch, Plan, Reply, Worker, Workers};
use crate::core::events::TrialEvent;
use crate::core::meter::{MeterOptions, StepSample, TrialMeter};
use crate::core::trial::{CancelToken, GroupRun, Outcome, TrialOutcome, TrialSpec};
use crate::data::{self, Dataset};
use crate::model::{Ctx, EvalSums, InputShape, Net};
use crate::workload::spec::{Metric, Precision, Workload};

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
/// workers on the one CPU device). Emits events; never prints. (A group of one.)
pub fn run_trial<B: AutodiffBackend>(
    devices: Vec<Device<B>>,
    workload: &Workload,
    spec: &TrialSpec,
    dataset: Arc<Dataset>,
    opts: &TrainOptions,
    emit: &mut dyn FnMut(TrialEvent),
    cancel: &CancelToken,
) -> anyhow::Result<TrialOutcome> {
    let mut out = None;
    run_group::<B>(
        devices,
        workload,
        std::slice::from_ref(spec),
        dataset,
        opts,
        crate::core::runner::GroupCut::None,
        &mut |_, e| emit(e),
        std::slice::from_ref(cancel),
        &mut |_, o| out = Some(o),
    )?;
    out.context("the trial ended without an outcome")
}

/// Runs a group of trials of one workload at one batch size as one program, data-parallel on
/// `devices`. `emit(i, event)` and `done(i, outcome)` name the member by its index in `specs`;
/// `done` is called for each member as it finishes (so a sweep can save it at once). An error
/// is a failure of the whole group: the members not yet done did not finish. `cut`: how members
/// are stopped before their own end (see the module's doc).
#[allow(clippy::too_many_arguments)]
pub fn run_group<B: AutodiffBackend>(
    devices: Vec<Device<B>>,
    workload: &Workload,
    specs: &[TrialSpec],
    dataset: Arc<Dataset>,
    opts: &TrainOptions,
    cut: crate::core::runner::GroupCut,
    emit: &mut dyn FnMut(usize, TrialEvent),
    cancels: &[CancelToken],
    done: &mut dyn FnMut(usize, TrialOutcome),
) -> anyhow::Result<()> {
    // this thread computes (the inline replica): in the binary's float mode whoever called
    crate::core::float_mode::ensure_process();
    let world = devices.len();
    check_group(specs, cancels, opts, world)?;
    let spec0 = &specs[0];
    let group = specs.len();
    let scaler_cfg = scaler_config(spec0.precision, opts.scaler.as_ref())?;
    // Over N nodes the global batch is split into N×G shards; this node takes its G.
    let nodes = opts.cluster.as_ref().map_or(1, |c| c.nodes);
    let shards = shards_of(opts.cluster.as_ref(), spec0.batch_size, world)?;
    let seeds: Vec<u64> = specs.iter().map(|s| s.seed).collect();
    let model: Net<B> =
        Net::init_group(&workload.model, input_shape(&dataset), &seeds, &devices[0])
            .context("building the model")?;
    let params = model.num_params() as u64 / group as u64;
    let transfer =
        super::transfer::TransferRun::start(workload, &dataset, &model.valid(), &devices[0])
            .context("encoding the transfer probe's sentences at step 0")?;

    let _guard = if world * nodes > 1 {
        let g = super::exchange::collective_lock();
        reset_collective::<B::InnerBackend>();
        Some(g)
    } else {
        None
    };
    let crew = Crew::start(&devices, model, workload, specs, &dataset, opts, nodes)?;
    let meter_opts = MeterOptions {
        step_event_interval: opts.step_event_interval,
        max_consecutive_skips: opts.max_consecutive_skips,
        params,
        exchanged_bytes_per_step: if world * nodes > 1 { params * 4 } else { 0 },
        nodes: nodes as u64,
        loopback: opts.cluster.as_ref().is_some_and(|c| c.is_loopback()),
        initial_loss_scale: scaler_cfg.init_scale,
    };
    let mut members = members_of(
        workload,
        specs,
        cancels,
        &dataset,
        &shards,
        &meter_opts,
        &scaler_cfg,
    );
    if let Some(t) = &transfer {
        for m in members.iter_mut() {
            m.meter.transfer().cost_s += t.start_s;
        }
    }
    let trial = Trial {
        workload,
        cluster: opts.cluster.as_ref(),
        schedule: opts.batch_schedule.as_ref(),
        noise_scale: opts.noise_scale,
        noise_every: opts.noise_every,
        nodes,
        cut,
        transfer: transfer.as_ref(),
    };
    let result = coordinate(&trial, members, &crew.workers(), emit, done);
    // A multi-node trial that failed here fails on every node: the group is lost (which also
    // aborts every collective call a worker may still wait in) before the workers are joined.
    let result = match (result, &opts.cluster) {
        (Err(e), Some(c)) => Err(super::multinode::trial_failed(c.node_rank, e)),
        (r, _) => r,
    };
    crew.stop();
    result
}

/// What a group must be: trials of one batch size and precision, a cancel token each, a schedule
/// or several nodes only for a lone trial (and a schedule whose stages shard).
fn check_group(
    specs: &[TrialSpec],
    cancels: &[CancelToken],
    opts: &TrainOptions,
    world: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(world >= 1, "no device to train on");
    anyhow::ensure!(!specs.is_empty(), "a group needs at least one trial");
    anyhow::ensure!(cancels.len() == specs.len(), "one cancel token per trial");
    let spec0 = &specs[0];
    for s in specs {
        anyhow::ensure!(
            s.batch_size == spec0.batch_size && s.precision == spec0.precision,
            "the trials of a group share their batch size and precision"
        );
    }
    let schedule = opts.batch_schedule.as_ref();
    anyhow::ensure!(
        specs.len() == 1 || (schedule.is_none() && opts.cluster.is_none()),
        "a batch-size schedule or a multi-node trial trains alone, not in a fused group"
    );
    if let Some(s) = schedule {
        anyhow::ensure!(
            s.first_batch() == spec0.batch_size,
            "the batch-size schedule starts at {} but the trial's batch size is {}",
            s.first_batch(),
            spec0.batch_size
        );
        // Every stage's shards are checked before the first step.
        for st in &s.stages {
            shards_of(opts.cluster.as_ref(), st.batch_size, world)?;
        }
    }
    Ok(())
}

/// The group's replicas: worker threads (or the one replica on this thread) and their channels.
struct Crew<B: AutodiffBackend> {
    cmd: Vec<std::sync::mpsc::Sender<Cmd>>,
    replies: std::sync::mpsc::Receiver<(usize, Reply)>,
    inline: Option<std::cell::RefCell<Worker<B>>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl<B: AutodiffBackend> Crew<B> {
    /// One replica of `model` per device (forked after the first, so every replica has the same
    /// weights and parameter ids), each with the group's optimizer.
    fn start(
        devices: &[Device<B>],
        model: Net<B>,
        workload: &Workload,
        specs: &[TrialSpec],
        dataset: &Arc<Dataset>,
        opts: &TrainOptions,
        nodes: usize,
    ) -> anyhow::Result<Self> {
        let world = devices.len();
        let group = specs.len();
        // A thread budget from the scheduler (several trials at once): each replica computes in
        // its own rayon pool, the budget split over the replicas.
        let budget = crate::core::runner::thread_budget();
        let pool_threads = budget.map(|n| (n / world).max(1));
        let (reply_tx, replies) = channel::<(usize, Reply)>();
        let mut crew = Crew {
            cmd: Vec::with_capacity(world),
            replies,
            inline: None,
            handles: Vec::with_capacity(world),
        };
        // One replica in one process, with no thread budget or already in its budget's pool: it
        // runs on this thread (no hand-over to a worker and back twice a step); else a thread per
        // replica.
        let inline = world * nodes == 1 && budget.is_none_or(crate::core::runner::in_budget_pool);
        let metaparams: Vec<_> = specs.iter().map(|s| s.metaparams.clone()).collect();
        let ctx = Ctx {
            dtype: compute_dtype(specs[0].precision),
        };
        for (rank, dev) in devices.iter().enumerate() {
            let replica = if rank == 0 {
                model.clone()
            } else if devices[..rank].contains(dev) {
                // a device that holds a replica already (wgpu:0,0): a copy of its own, never
                // tensors shared between two streams of one device (burn-fusion 0.21 loses a
                // shared tensor's handle when the other stream updates it in place: "Should
                // have handle for tensor")
                super::exchange::deep_copy(model.clone(), dev)
            } else {
                model.clone().fork(dev)
            };
            let w = Worker {
                rank,
                world: world * nodes,
                cluster: opts.cluster.clone(),
                device: dev.clone(),
                model: Some(replica),
                opt: Opt::group(workload.optimizer, &metaparams),
                members: group,
                ctx,
                data: dataset.clone(),
                eval_batch: opts.eval_batch,
                bucket_bytes: opts.bucket_bytes,
                noise: opts.noise_scale,
                nll: metric_in_bits(workload),
                reads: 0,
                val: None,
                val_members: group,
                val_one: None,
            };
            if inline {
                crew.inline = Some(std::cell::RefCell::new(w));
                continue;
            }
            let (cmd_tx, cmd_rx) = channel::<Cmd>();
            crew.cmd.push(cmd_tx);
            let rtx = reply_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("trial{}-worker{rank}", specs[0].trial_id))
                .spawn(move || {
                    crate::core::float_mode::set_here();
                    in_pool(pool_threads, move || worker_loop(w, cmd_rx, rtx))
                });
            match spawned {
                Ok(h) => crew.handles.push(h),
                Err(e) => {
                    crew.stop();
                    return Err(anyhow!("spawning a worker thread: {e}"));
                }
            }
        }
        Ok(crew)
    }

    fn workers(&self) -> Workers<'_, B> {
        Workers {
            cmd: &self.cmd,
            replies: &self.replies,
            inline: self.inline.as_ref(),
        }
    }

    /// Stops and joins the worker threads.
    fn stop(self) {
        for tx in &self.cmd {
            let _ = tx.send(Cmd::Stop);
        }
        drop(self.cmd);
        for h in self.handles {
            let _ = h.join();
        }
    }
}

/// Each trial's measurement state: its meter (with the group it trains in), loss scaler, noise
/// estimator and data order.
fn members_of<'a>(
    workload: &'a Workload,
    specs: &'a [TrialSpec],
    cancels: &'a [CancelToken],
    dataset: &'a Dataset,
    shards: &[std::ops::Range<usize>],
    meter_opts: &MeterOptions,
    scaler_cfg: &ScalerConfig,
) -> Vec<Member<'a>> {
    let group_run = (specs.len() > 1).then(|| GroupRun {
        trials: specs.iter().map(|s| s.trial_id).collect(),
    });
    specs
        .iter()
        .zip(cancels)
        .enumerate()
        .map(|(slot, (spec, cancel))| {
            let mut meter = TrialMeter::new(workload, spec, meter_opts.clone());
            if let Some(g) = &group_run {
                meter.set_group(g.clone());
            }
            Member {
                slot,
                spec,
                cancel,
                meter,
                scaler: LossScaler::new(scaler_cfg.clone()),
                noise: NoiseScaleEstimator::new(0.95),
                sampler: Sampler::new(dataset, shards.to_vec(), spec.seed),
                bits: None,
            }
        })
        .collect()
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

/// What a group trains on, besides its members.
struct Trial<'a> {
    workload: &'a Workload,
    cluster: Option<&'a super::multinode::ClusterSpec>,
    schedule: Option<&'a crate::core::schedule::BatchSchedule>,
    noise_scale: bool,
    noise_every: Option<u64>,
    /// Processes (nodes) the trial spans; `world` replicas per node.
    nodes: usize,
    cut: crate::core::runner::GroupCut,
    /// The transfer probe (`[workload.transfer]`).
    transfer: Option<&'a super::transfer::TransferRun>,
}

/// One trial of a group, as the coordinator follows it.
struct Member<'a> {
    /// Index in the group's `specs`.
    slot: usize,
    spec: &'a TrialSpec,
    cancel: &'a CancelToken,
    meter: TrialMeter<'a>,
    scaler: LossScaler,
    noise: NoiseScaleEstimator,
    sampler: Sampler<'a>,
    /// A language model's validation bits per byte at its last evaluation (step, bits).
    bits: Option<(u64, f64)>,
}

/// The group loop: per member data order, LR schedule, loss scaler and noise scale here; budget,
/// cadence, divergence, target, events and the outcome in its meter.
fn coordinate<B: AutodiffBackend>(
    trial: &Trial<'_>,
    active: Vec<Member<'_>>,
    workers: &Workers<'_, B>,
    emit: &mut dyn FnMut(usize, TrialEvent),
    done: &mut dyn FnMut(usize, TrialOutcome),
) -> anyhow::Result<()> {
    let local = workers.world();
    let b = active[0].spec.batch_size;
    let mut g = GroupLoop {
        trial,
        // G ≥ 2: every step, from the exchange's buffers. G = 1: a half-batch gradient on the
        // steps the cadence picks (from the measured cost, or every `noise_every` steps), the same
        // steps for every member.
        cadence: (trial.noise_scale && local * trial.nodes == 1 && b >= 2)
            .then(|| Cadence::new(trial.noise_every)),
        stages: Stages::new(trial.schedule, active[0].spec.metaparams.learning_rate),
        b,
        local,
        started: Instant::now(),
        emit,
        done,
        reached_in: match &trial.cut {
            crate::core::runner::GroupCut::Quorum { need, .. } => vec![0; need.len()],
            _ => Vec::new(),
        },
    };
    let mut active = active;
    for m in active.iter_mut() {
        let slot = m.slot;
        m.meter.start(&mut |e| (g.emit)(slot, e));
    }
    loop {
        // members whose budget is spent or who were cancelled leave first
        let stops: Vec<Option<Outcome>> = active
            .iter_mut()
            .map(|m| m.meter.should_stop(m.cancel))
            .collect();
        active = g.retire(active, stops, workers)?;
        if active.is_empty() {
            return Ok(());
        }
        let t_step = Instant::now();
        let before: Vec<u64> = active.iter().map(|m| m.meter.applied()).collect();
        let plans = g.plans(&active, &before);
        let sampled = g.cadence.as_ref().is_some_and(|c| c.due(before[0]));
        let shards = replica_shards(&mut active, g.b, local);
        let stepped = workers.step(shards, &plans, trial.workload.grad_clip, sampled);
        // out of device memory at this B: an outcome, not an error (the sweep goes on)
        let r = match super::oom::or_oom(stepped, g.b, before[0])? {
            Ok(r) => r,
            Err(oom) => return g.all_out_of_memory(active, oom),
        };
        let step_s = t_step.elapsed().as_secs_f64();
        let (mut ended, eval_due) = g.record(&mut active, &r, &plans, &before, sampled, step_s);
        if let Some(c) = g.cadence.as_mut() {
            c.record(
                before[0],
                sampled,
                step_s,
                g.started.elapsed().as_secs_f64(),
            );
        }
        if eval_due.iter().any(|d| *d) {
            match g.evaluate(&mut active, &eval_due, &mut ended, workers)? {
                Ok(()) => {}
                Err(oom) => return g.all_out_of_memory(active, oom),
            }
        }
        active = g.retire(active, ended, workers)?;
    }
}

/// The group loop's state besides its members.
struct GroupLoop<'a, 'e> {
    trial: &'a Trial<'a>,
    cadence: Option<Cadence>,
    /// A lone trial's batch-size schedule (none in a group).
    stages: Stages<'a>,
    /// The batch size now (a schedule changes it).
    b: usize,
    /// Replicas in this process.
    local: usize,
    started: Instant,
    emit: &'e mut dyn FnMut(usize, TrialEvent),
    done: &'e mut dyn FnMut(usize, TrialOutcome),
    /// `GroupCut::Quorum`: members of each cohort that reached so far.
    reached_in: Vec<usize>,
}

impl GroupLoop<'_, '_> {
    /// Each member's learning rate (its schedule at its applied steps) and loss scale.
    fn plans(&self, active: &[Member<'_>], before: &[u64]) -> Vec<Plan> {
        active
            .iter()
            .zip(before)
            .map(|(m, &applied)| Plan {
                lr: m
                    .spec
                    .metaparams
                    .schedule
                    .lr_at(stage_lr(&self.stages, m.spec), applied),
                loss_scale: m.scaler.scale(),
            })
            .collect()
    }

    /// Books a step for every member: loss scaler, reads, noise cost and estimate, the meter's
    /// divergence checks. Returns the members that ended (by position) and whose evaluation is due.
    fn record(
        &mut self,
        active: &mut [Member<'_>],
        r: &super::worker::Report,
        plans: &[Plan],
        before: &[u64],
        sampled: bool,
        step_s: f64,
    ) -> (Vec<Option<Outcome>>, Vec<bool>) {
        let world = self.local * self.trial.nodes;
        let b = self.b;
        let mut ended = vec![None; active.len()];
        let mut due = vec![false; active.len()];
        for (i, m) in active.iter_mut().enumerate() {
            let slot = m.slot;
            let applied = m.scaler.update(r.global_sq[i].is_finite()) == ScaleDecision::Apply;
            m.meter.add_reads(r.reads, self.local as u64, false);
            // the first step is cold (buffers allocated; on a GPU its kernels compiled and
            // autotuned: 138 s of a 184 s first CUDA trial): its sample is not the estimate's
            // running cost
            if before[i] > 0 {
                m.meter.add_noise_cost(r.noise_s);
            }
            let sample = StepSample {
                applied: applied as u64,
                attempted: 1,
                loss: r.loss[i],
                lr: plans[i].lr,
                loss_scale: m.scaler.scale(),
                consecutive_skips: m.scaler.consecutive_skips(),
                step_s,
                compute_s: r.compute_s,
                exchange_s: r.exchange_s,
            };
            if let Some(o) = m.meter.record(sample) {
                ended[i] = Some(o);
                continue;
            }
            if applied && self.trial.noise_scale {
                let s2 = plans[i].loss_scale * plans[i].loss_scale;
                if world > 1 {
                    let b_small = (b / world) as f64;
                    m.noise
                        .update(b_small, r.local_sq[i] / s2, b as f64, r.global_sq[i] / s2);
                } else if b >= 2 {
                    m.noise.observe_step(b as f64, r.global_sq[i] / s2);
                    if sampled {
                        m.noise.observe_trace(r.trace[i] / s2);
                    }
                }
                m.meter.set_noise(m.noise.b_simple());
                let every = self.cadence.as_ref().map_or(1, |c| c.every());
                m.meter.set_noise_sampling(m.noise.samples, every);
            }
            due[i] = m.meter.progress(&mut |e| (self.emit)(slot, e));
        }
        (ended, due)
    }

    /// Evaluates every member (one forward of the group) and books it for those due; a reach
    /// ends its member and, with `GroupCut::FirstReach`, caps every other member's budget at its
    /// step; with `GroupCut::Quorum` it does so for the rest of a cohort once its quorum reached.
    fn evaluate<B: AutodiffBackend>(
        &mut self,
        active: &mut [Member<'_>],
        due: &[bool],
        ended: &mut [Option<Outcome>],
        workers: &Workers<'_, B>,
    ) -> anyhow::Result<Result<(), Outcome>> {
        let at = active
            .iter()
            .zip(due)
            .find(|(_, d)| **d)
            .map_or(0, |(m, _)| m.meter.applied());
        let (sums, reads) = match super::oom::or_oom(workers.eval(), self.b, at)? {
            Ok(s) => s,
            Err(oom) => return Ok(Err(oom)),
        };
        let probes = self.probe(active, due, ended, &sums, workers)?;
        let mut reached_at: Option<u64> = None;
        let mut quorum_at: Vec<(usize, u64)> = Vec::new();
        for (i, m) in active.iter_mut().enumerate() {
            if !due[i] || ended[i].is_some() {
                continue;
            }
            let slot = m.slot;
            m.meter.add_reads(reads, 1, true);
            m.bits = Some((m.meter.applied(), metric_of(self.trial.workload, &sums[i])));
            let metric = match probes[i] {
                Some(acc) if self.trial.transfer.is_some_and(|t| t.target) => acc,
                _ => metric_of(self.trial.workload, &sums[i]),
            };
            // the interval is read where it is recorded (an evaluation, the end), not every step
            m.meter.set_noise_interval(m.noise.interval());
            if let Some(o) = m.meter.eval(metric, &mut |e| (self.emit)(slot, e)) {
                if let Outcome::Reached { step } = o {
                    reached_at = Some(reached_at.map_or(step, |s: u64| s.min(step)));
                    if let crate::core::runner::GroupCut::Quorum { cohort, need } = &self.trial.cut
                    {
                        if let Some(c) = cohort.get(slot).copied().flatten() {
                            self.reached_in[c] += 1;
                            if self.reached_in[c] == need[c] {
                                quorum_at.push((c, step));
                            }
                        }
                    }
                }
                ended[i] = Some(o);
                continue;
            }
            if let Some(nb) = self.stages.after_eval(m.meter.applied(), metric) {
                self.b = nb;
                m.sampler
                    .set_shards(shards_of(self.trial.cluster, nb, self.local)?);
                m.meter.set_batch_size(nb);
            }
        }
        match (&self.trial.cut, reached_at) {
            (crate::core::runner::GroupCut::FirstReach, Some(step)) => {
                for m in active.iter_mut() {
                    m.meter.cap_budget(step);
                }
            }
            (crate::core::runner::GroupCut::Quorum { cohort, .. }, _) => {
                // ties at the quorum's evaluation reached with it (they are ended already)
                for (c, step) in quorum_at {
                    for (i, m) in active.iter_mut().enumerate() {
                        if ended[i].is_none() && cohort.get(m.slot).copied().flatten() == Some(c) {
                            m.meter.cap_budget(step);
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(Ok(()))
    }

    /// The transfer probe of the members whose evaluation is due and probes (None elsewhere):
    /// each one's test accuracy, also booked on its transfer curve.
    fn probe<B: AutodiffBackend>(
        &mut self,
        active: &mut [Member<'_>],
        due: &[bool],
        ended: &[Option<Outcome>],
        sums: &[EvalSums],
        workers: &Workers<'_, B>,
    ) -> anyhow::Result<Vec<Option<f64>>> {
        let mut out = vec![None; active.len()];
        let Some(tr) = self.trial.transfer else {
            return Ok(out);
        };
        let pos: Vec<usize> = (0..active.len())
            .filter(|&i| due[i] && ended[i].is_none())
            .filter(|&i| tr.due(active[i].meter.evaluations() + 1))
            .collect();
        if pos.is_empty() {
            return Ok(out);
        }
        let t0 = Instant::now();
        let accs = tr.accuracies(&workers.encode(&pos, tr.spec.feature)?);
        let each = super::transfer::since(t0) / pos.len() as f64;
        for (&i, acc) in pos.iter().zip(accs) {
            let m = &mut active[i];
            let step = m.meter.applied();
            let bits = metric_of(self.trial.workload, &sums[i]);
            let t = m.meter.transfer();
            t.curve.push(super::transfer::point(step, acc, Some(bits)));
            t.cost_s += each;
            out[i] = Some(acc);
        }
        Ok(out)
    }

    /// The end-of-trial transfer readout of the members that end with an outcome that can be
    /// their batch size's best (booked in their meters).
    fn read_out<B: AutodiffBackend>(
        &mut self,
        active: &mut [Member<'_>],
        outcomes: &[Option<Outcome>],
        workers: &Workers<'_, B>,
    ) -> anyhow::Result<()> {
        let Some(tr) = self.trial.transfer else {
            return Ok(());
        };
        let pos: Vec<usize> = (0..active.len())
            .filter(|&i| outcomes[i].as_ref().is_some_and(super::transfer::reads_out))
            .collect();
        if pos.is_empty() {
            return Ok(());
        }
        let t0 = Instant::now();
        let f = workers.encode(&pos, tr.spec.feature)?;
        let slots: Vec<usize> = pos.iter().map(|&i| active[i].slot).collect();
        let steps: Vec<u64> = pos.iter().map(|&i| active[i].meter.applied()).collect();
        let readouts = tr.readouts(&f, &slots, &steps);
        let each = super::transfer::since(t0) / pos.len() as f64;
        for ((&i, mut r), step) in pos.iter().zip(readouts).zip(steps) {
            // the bits per byte of the evaluation at the readout's step (every end evaluates)
            r.val_bpc = active[i].bits.filter(|b| b.0 == step).map(|b| b.1);
            let t = active[i].meter.transfer();
            t.readout = Some(r);
            t.cost_s += each;
        }
        Ok(())
    }

    /// Finishes the members with an outcome (each reported at once) and compacts the workers to
    /// the others; returns the others.
    fn retire<'m, B: AutodiffBackend>(
        &mut self,
        mut active: Vec<Member<'m>>,
        outcomes: Vec<Option<Outcome>>,
        workers: &Workers<'_, B>,
    ) -> anyhow::Result<Vec<Member<'m>>> {
        if outcomes.iter().all(|o| o.is_none()) {
            return Ok(active);
        }
        self.read_out(&mut active, &outcomes, workers)?;
        let lone = active.len() == 1;
        let mut rest = Vec::with_capacity(active.len());
        let mut keep = Vec::with_capacity(active.len());
        for (pos, (m, o)) in active.into_iter().zip(outcomes).enumerate() {
            match o {
                Some(o) => self.finish(m, o, lone),
                None => {
                    keep.push(pos);
                    rest.push(m);
                }
            }
        }
        if !rest.is_empty() {
            workers.compact(&keep)?;
        }
        Ok(rest)
    }

    /// Every member ran out of device memory at this batch size (each at its own step).
    fn all_out_of_memory(&mut self, active: Vec<Member<'_>>, oom: Outcome) -> anyhow::Result<()> {
        let lone = active.len() == 1;
        for m in active {
            let o = match &oom {
                Outcome::Oom { batch_size, .. } => Outcome::Oom {
                    batch_size: *batch_size,
                    step: m.meter.applied(),
                },
                o => o.clone(),
            };
            self.finish(m, o, lone);
        }
        Ok(())
    }

    /// A member's outcome to `done` (the schedule's stages only for a lone trial).
    fn finish(&mut self, m: Member<'_>, outcome: Outcome, lone: bool) {
        let Member {
            slot,
            mut meter,
            noise,
            ..
        } = m;
        meter.set_noise_interval(noise.interval());
        let mut out = meter.finish(outcome, &mut |e| (self.emit)(slot, e));
        if lone {
            out.stages = self.stages.finish(out.steps);
        }
        (self.done)(slot, out);
    }
}

/// The learning rate before the member's schedule: the batch-size schedule's stage rate for a
/// lone trial with one, else the member's η.
fn stage_lr(stages: &Stages<'_>, spec: &TrialSpec) -> f64 {
    if stages.active() {
        stages.learning_rate()
    } else {
        spec.metaparams.learning_rate
    }
}

/// Each replica's shard of every active member's next batch (member-major rows).
fn replica_shards(active: &mut [Member<'_>], b: usize, replicas: usize) -> Vec<HostBatch> {
    let mut per_member: Vec<std::vec::IntoIter<HostBatch>> = active
        .iter_mut()
        .map(|m| m.sampler.next(b).into_iter())
        .collect();
    (0..replicas)
        .map(|_| {
            HostBatch::concat(
                per_member
                    .iter_mut()
                    .map(|p| p.next().expect("a shard per replica"))
                    .collect(),
            )
        })
        .collect()
}
