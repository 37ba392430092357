//! The one measurement loop of every trial runner: what is measured and when a trial stops.
//!
//! A `TrialMeter` owns the step budget, the evaluation cadence (`eval_every`, `eval_growth`, and
//! always the last step of the budget), divergence, the skipped-step limit, the target check, event
//! throttling, the noise-scale trajectory, throughput sums and the assembly of the `TrialOutcome`.
//! The Burn trainer (`trainer::coordinate`) and the closed-form runner (`crate::nqm`) both drive
//! it, so both stop, evaluate and report by the same rules:
//!
//! ```text
//! meter.start(emit);
//! loop {
//!     if let Some(o) = meter.should_stop(cancel) { break o }
//!     … run k optimizer steps (Burn: 1; NQM: up to meter.next_eval_step()) …
//!     if let Some(o) = meter.record(sample) { break o }      // divergence, skipped-step limit
//!     meter.set_noise(b_simple);                              // optional
//!     if meter.progress(emit) {                               // throttled Step event; eval due?
//!         if let Some(o) = meter.eval(metric, emit) { break o }   // target, non-finite metric
//!     }
//! }
//! meter.finish(outcome, emit)
//! ```
//!
//! Divergence (one rule): the training loss is NaN/inf, or — once an update has been applied — it
//! exceeds `divergence_factor` × the initial loss (the exact initial loss where the runner knows
//! it, else the first training loss); an evaluation metric that is NaN/inf; or
//! `max_consecutive_skips` steps in a row skipped by the loss scaler. Each gives a reason in words.

use std::time::{Duration, Instant};

use crate::core::events::{BoundedHistory, StepStats, TrialEvent};
use crate::core::trial::{
    CancelToken, EvalPoint, GroupRun, NoiseInterval, NoiseSummary, Outcome, Throughput,
    TrialOutcome, TrialSpec,
};
use crate::workload::spec::Workload;

/// Samples kept in a trial's noise-scale trajectory (plus the latest one).
pub const TRAJECTORY_CAP: usize = 128;

/// Settings of the meter that are not part of the workload.
#[derive(Clone, Debug)]
pub struct MeterOptions {
    /// Minimum interval between Step events (zero: one per `record`).
    pub step_event_interval: Duration,
    /// A trial whose loss scaler skips this many steps in a row is stopped as diverged.
    pub max_consecutive_skips: u64,
    /// Trainable parameters and the bytes each replica exchanges per step (throughput record).
    pub params: u64,
    pub exchanged_bytes_per_step: u64,
    /// Processes of a multi-node trial (1 otherwise) and whether they talk over loopback.
    pub nodes: u64,
    pub loopback: bool,
    /// Loss scale before the first step (1 where no scaling is done).
    pub initial_loss_scale: f64,
}

impl Default for MeterOptions {
    fn default() -> Self {
        MeterOptions {
            step_event_interval: Duration::from_millis(100),
            max_consecutive_skips: 50,
            params: 0,
            exchanged_bytes_per_step: 0,
            nodes: 1,
            loopback: false,
            initial_loss_scale: 1.0,
        }
    }
}

/// What happened in one `record` call: `steps` optimizer steps (0 or 1 for the Burn trainer,
/// up to an evaluation interval for the NQM), ending with this training loss.
#[derive(Clone, Copy, Debug)]
pub struct StepSample {
    /// Applied optimizer steps (0 when the loss scaler skipped the step).
    pub applied: u64,
    /// Steps attempted (applied + skipped); timing and examples/s count these.
    pub attempted: u64,
    /// Training loss at the end of the sample (unscaled).
    pub loss: f64,
    /// Learning rate of the last step.
    pub lr: f64,
    /// Loss scale after the scaler's update.
    pub loss_scale: f64,
    /// Consecutive steps skipped by the scaler, this one included (0 if applied).
    pub consecutive_skips: u64,
    /// Wall seconds of the sample, of which forward/backward and gradient exchange.
    pub step_s: f64,
    pub compute_s: f64,
    pub exchange_s: f64,
}

/// The measurement state of one trial.
pub struct TrialMeter<'w> {
    workload: &'w Workload,
    spec: TrialSpec,
    opts: MeterOptions,
    budget: u64,
    next_eval: u64,
    started: Instant,
    last_emit: Option<Instant>,
    emitted_at: Option<u64>,
    /// When the last Eval event went out, and whether a later evaluation is not yet shown.
    last_eval_emit: Option<Instant>,
    eval_unsent: bool,
    applied: u64,
    attempts: u64,
    /// Examples of the attempted and of the applied steps (Σ steps × B: a batch-size schedule
    /// changes B mid-trial, see `set_batch_size`).
    examples: u64,
    applied_examples: u64,
    skipped: u64,
    loss_scale: f64,
    initial_loss: Option<f64>,
    last_loss: f64,
    last_lr: f64,
    loss_acc: (f64, u64),
    evals: Vec<EvalPoint>,
    noise: Option<f64>,
    noise_at_target: Option<f64>,
    noise_interval: Option<NoiseInterval>,
    interval_at_target: Option<NoiseInterval>,
    noise_samples: u64,
    noise_every: u64,
    noise_cost_s: f64,
    /// Blocking device reads of the training steps (all local replicas) and of the evaluations.
    step_reads: u64,
    replicas: u64,
    eval_reads: u64,
    trajectory: BoundedHistory<(u64, f64)>,
    train_time: f64,
    sum_compute: f64,
    sum_exchange: f64,
    reason: Option<String>,
    /// The fused group the trial trains in (None: alone).
    group: Option<GroupRun>,
    /// The budget was cut below the workload's by `cap_budget` (a fused group's early stop).
    capped: bool,
    /// What the trial measured of its transfer (a language model with a probe).
    transfer: Option<crate::core::transfer::TransferRecord>,
}

impl<'w> TrialMeter<'w> {
    pub fn new(workload: &'w Workload, spec: &TrialSpec, opts: MeterOptions) -> Self {
        let budget = workload.budget_for(spec.batch_size);
        TrialMeter {
            workload,
            spec: spec.clone(),
            budget,
            next_eval: workload.next_eval(0),
            started: Instant::now(),
            last_emit: None,
            emitted_at: None,
            last_eval_emit: None,
            eval_unsent: false,
            applied: 0,
            attempts: 0,
            examples: 0,
            applied_examples: 0,
            skipped: 0,
            loss_scale: opts.initial_loss_scale,
            initial_loss: None,
            last_loss: f64::NAN,
            last_lr: 0.0,
            loss_acc: (0.0, 0),
            evals: Vec::new(),
            noise: None,
            noise_at_target: None,
            noise_interval: None,
            interval_at_target: None,
            noise_samples: 0,
            noise_every: 0,
            noise_cost_s: 0.0,
            step_reads: 0,
            replicas: 1,
            eval_reads: 0,
            trajectory: BoundedHistory::new(TRAJECTORY_CAP),
            train_time: 0.0,
            sum_compute: 0.0,
            sum_exchange: 0.0,
            reason: None,
            group: None,
            capped: false,
            transfer: None,
            opts,
        }
    }

    /// Emits `Started` and starts the wall clock.
    pub fn start(&mut self, emit: &mut dyn FnMut(TrialEvent)) {
        self.started = Instant::now();
        emit(TrialEvent::Started {
            spec: self.spec.clone(),
        });
    }

    /// The exact loss before any step, where the runner knows it (else the first training loss
    /// is the reference of the divergence rule).
    pub fn set_initial_loss(&mut self, loss: f64) {
        self.initial_loss = Some(loss);
    }

    /// Evaluations booked so far.
    pub fn evaluations(&self) -> usize {
        self.evals.len()
    }

    /// Applied steps so far.
    pub fn applied(&self) -> u64 {
        self.applied
    }
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The applied-step count at which the next evaluation is due (never past the budget).
    pub fn next_eval_step(&self) -> u64 {
        self.next_eval.min(self.budget)
    }

    /// Cancelled, or the budget is spent (the token's cap, where the sweep set one, lowers the
    /// budget first: `cap_budget`).
    pub fn should_stop(&mut self, cancel: &CancelToken) -> Option<Outcome> {
        if cancel.is_cancelled() {
            return Some(Outcome::Cancelled { step: self.applied });
        }
        if let Some(step) = cancel.capped_at() {
            self.cap_budget(step);
        }
        (self.applied >= self.budget).then_some(Outcome::NotReached {
            budget: self.budget,
            early_stopped: self.capped,
        })
    }

    /// Early stopping inside a fused group (or a calibration pilot's wave, through the token):
    /// another trial reached the target at `step`, so this trial can no longer set its batch
    /// size's steps-to-target past it. The budget becomes
    /// `step` (or the steps already applied, if more): the trial stops there, evaluated at its last
    /// step like any budget, and its outcome says it was cut (`early_stopped`).
    pub fn cap_budget(&mut self, step: u64) {
        let cap = step.max(self.applied);
        if cap < self.budget {
            self.budget = cap;
            self.capped = true;
        }
    }

    /// The fused group the trial trains in (recorded in its outcome).
    pub fn set_group(&mut self, group: GroupRun) {
        self.group = Some(group);
    }

    /// Books a sample; returns the outcome if the trial must stop (diverged).
    pub fn record(&mut self, s: StepSample) -> Option<Outcome> {
        self.attempts += s.attempted;
        let b = self.spec.batch_size as u64;
        self.examples += s.attempted * b;
        self.applied_examples += s.applied.min(s.attempted) * b;
        self.skipped += s.attempted - s.applied.min(s.attempted);
        self.applied += s.applied;
        self.loss_scale = s.loss_scale;
        self.train_time += s.step_s;
        self.sum_compute += s.compute_s;
        self.sum_exchange += s.exchange_s;
        self.last_loss = s.loss;
        self.last_lr = s.lr;
        if !s.loss.is_finite() {
            return self.diverged(format!("training loss is {}", s.loss));
        }
        let initial = *self.initial_loss.get_or_insert(s.loss);
        let factor = self.workload.divergence_factor;
        if self.applied > 0 && s.loss > factor * initial.max(1e-6) {
            return self.diverged(format!(
                "training loss {:.4} exceeded {factor}× the initial loss {initial:.4}",
                s.loss
            ));
        }
        if s.applied == 0 && s.consecutive_skips >= self.opts.max_consecutive_skips {
            return self.diverged(format!(
                "{} consecutive steps skipped: the gradients are not finite even at loss scale {}",
                s.consecutive_skips, s.loss_scale
            ));
        }
        if s.applied > 0 {
            self.loss_acc.0 += s.loss * s.applied as f64;
            self.loss_acc.1 += s.applied;
        }
        None
    }

    /// A batch-size schedule switched to batch size `b` (at an evaluation): later steps count
    /// `b` examples each. With an example budget (`max_examples`) the step budget becomes what
    /// the examples left allow at `b` (never below the steps already applied).
    pub fn set_batch_size(&mut self, b: usize) {
        self.spec.batch_size = b;
        if let Some(e) = self.workload.max_examples {
            let left = e.saturating_sub(self.applied_examples);
            let more = left.div_ceil(b.max(1) as u64);
            self.budget = self.workload.step_budget.min(self.applied + more);
        }
    }

    /// Examples of the applied steps so far (Σ steps × B).
    pub fn applied_examples(&self) -> u64 {
        self.applied_examples
    }

    fn diverged(&mut self, reason: String) -> Option<Outcome> {
        self.reason = Some(reason);
        Some(Outcome::Diverged { step: self.applied })
    }

    /// The trial's transfer record, to add a probe's result to (created at the first call).
    pub fn transfer(&mut self) -> &mut crate::core::transfer::TransferRecord {
        self.transfer.get_or_insert_with(Default::default)
    }

    /// The current gradient-noise-scale estimate (None while there is none).
    pub fn set_noise(&mut self, b_simple: Option<f64>) {
        self.noise = b_simple.filter(|v| v.is_finite());
    }

    /// The estimate's 95 % interval now (None where the estimator gives none): set before an
    /// evaluation and before `finish`, where it is recorded.
    pub fn set_noise_interval(&mut self, interval: Option<NoiseInterval>) {
        self.noise_interval = interval;
    }

    /// How the noise scale was sampled so far: tr(Σ) samples and the steps between two.
    pub fn set_noise_sampling(&mut self, samples: u64, every: u64) {
        self.noise_samples = samples;
        self.noise_every = every;
    }

    /// Books seconds spent on the noise-scale estimate's own work (not on training).
    pub fn add_noise_cost(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            self.noise_cost_s += seconds;
        }
    }

    /// Books `reads` blocking device→host reads: of a training step over `replicas` replicas, or
    /// of an evaluation.
    pub fn add_reads(&mut self, reads: u64, replicas: u64, eval: bool) {
        if eval {
            self.eval_reads += reads;
        } else {
            self.step_reads += reads;
            self.replicas = replicas.max(1);
        }
    }

    /// Emits a Step (and NoiseScale) event when the throttle interval has passed; returns whether
    /// an evaluation is due now.
    pub fn progress(&mut self, emit: &mut dyn FnMut(TrialEvent)) -> bool {
        let due = self
            .last_emit
            .is_none_or(|t| t.elapsed() >= self.opts.step_event_interval);
        if due {
            self.emit_step(emit);
        }
        self.applied >= self.next_eval_step()
    }

    fn emit_step(&mut self, emit: &mut dyn FnMut(TrialEvent)) {
        self.last_emit = Some(Instant::now());
        self.emitted_at = Some(self.attempts);
        let n = self.attempts.max(1) as f64;
        emit(TrialEvent::Step(StepStats {
            step: self.applied,
            loss: self.last_loss,
            lr: self.last_lr,
            loss_scale: self.loss_scale,
            skipped_steps: self.skipped,
            examples_per_s: self.examples_per_s(),
            compute_s: self.sum_compute / n,
            exchange_s: self.sum_exchange / n,
        }));
        if let Some(v) = self.noise {
            emit(TrialEvent::NoiseScale {
                step: self.applied,
                b_simple: v,
            });
        }
    }

    fn examples_per_s(&self) -> f64 {
        if self.train_time > 0.0 {
            self.examples as f64 / self.train_time
        } else {
            0.0
        }
    }

    /// Books an evaluation at the current step; returns the outcome if the trial stops here
    /// (target met, or a non-finite metric).
    pub fn eval(&mut self, metric: f64, emit: &mut dyn FnMut(TrialEvent)) -> Option<Outcome> {
        let step = self.applied;
        self.next_eval = self.workload.next_eval(step);
        let p = EvalPoint {
            step,
            metric,
            train_loss: self.loss_acc.0 / self.loss_acc.1.max(1) as f64,
        };
        self.loss_acc = (0.0, 0);
        self.evals.push(p);
        if let Some(v) = self.noise {
            self.trajectory.push((step, v));
        }
        // Eval events are throttled like Step events (every evaluation is in the outcome): a
        // small model evaluates every few hundred µs, and an event per evaluation woke the
        // consumer's thread each time. The one that decides the trial always goes out.
        let decides = !metric.is_finite() || self.workload.target.is_met(metric);
        if decides
            || self
                .last_eval_emit
                .is_none_or(|t| t.elapsed() >= self.opts.step_event_interval)
        {
            self.last_eval_emit = Some(Instant::now());
            self.eval_unsent = false;
            emit(TrialEvent::Eval(p));
        } else {
            self.eval_unsent = true;
        }
        if !metric.is_finite() {
            return self.diverged(format!("validation metric is {metric}"));
        }
        if self.workload.target.is_met(metric) {
            self.noise_at_target = self.noise;
            self.interval_at_target = self.noise.and(self.noise_interval);
            return Some(Outcome::Reached { step });
        }
        None
    }

    /// Assembles the trial's outcome (emitting a last Step event if the final state was not
    /// shown yet, then `Finished`).
    pub fn finish(mut self, outcome: Outcome, emit: &mut dyn FnMut(TrialEvent)) -> TrialOutcome {
        if let (true, Some(p)) = (self.eval_unsent, self.evals.last()) {
            emit(TrialEvent::Eval(*p));
        }
        if self.attempts > 0 && self.emitted_at != Some(self.attempts) {
            self.emit_step(emit);
        }
        let n = self.attempts.max(1) as f64;
        let n_evals = self.evals.len().max(1) as f64;
        let out = TrialOutcome {
            outcome,
            steps: self.applied,
            skipped_steps: self.skipped,
            final_loss_scale: self.loss_scale,
            wall_s: self.started.elapsed().as_secs_f64(),
            noise: NoiseSummary {
                b_simple: self.noise_at_target.or(self.noise),
                interval: if self.noise_at_target.is_some() {
                    self.interval_at_target
                } else {
                    self.noise.and(self.noise_interval)
                },
                trajectory: self.trajectory.points(),
                samples: self.noise_samples,
                sample_every: self.noise_every,
                cost_s: self.noise_cost_s,
            },
            throughput: Throughput {
                examples_per_s: self.examples_per_s(),
                step_s: self.train_time / n,
                compute_s: self.sum_compute / n,
                exchange_s: self.sum_exchange / n,
                params: self.opts.params,
                exchanged_bytes_per_step: self.opts.exchanged_bytes_per_step,
                nodes: self.opts.nodes,
                loopback: self.opts.loopback,
                reads_per_step: self.step_reads as f64 / (n * self.replicas as f64),
                reads_per_eval: self.eval_reads as f64 / n_evals,
            },
            evals: std::mem::take(&mut self.evals),
            reason: self.reason.take(),
            stages: Vec::new(),
            group: self.group.take(),
            transfer: self.transfer.take().map(Box::new),
        };
        emit(TrialEvent::Finished {
            outcome: Box::new(out.clone()),
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trial::DeviceSpec;
    use crate::workload::spec::{OptimizerKind, Precision};

    fn spec(b: usize) -> TrialSpec {
        let w = Workload::nqm(4, OptimizerKind::Sgd, 0.1);
        TrialSpec {
            trial_id: 0,
            batch_size: b,
            devices: DeviceSpec::Cpu { workers: 1 },
            precision: Precision::Fp32,
            metaparams: w.defaults,
            seed: 0,
            repeat_of: None,
            confirm: None,
            calibrate: None,
        }
    }

    fn sample(loss: f64, applied: bool, skips: u64) -> StepSample {
        StepSample {
            applied: applied as u64,
            attempted: 1,
            loss,
            lr: 0.1,
            loss_scale: 1.0,
            consecutive_skips: skips,
            step_s: 1e-3,
            compute_s: 8e-4,
            exchange_s: 1e-4,
        }
    }

    /// Drives the meter like a runner does with a scripted loss sequence and metric function.
    fn drive_token(
        w: &Workload,
        losses: &[(f64, bool, u64)],
        metric: impl Fn(u64) -> f64,
        cancel: &CancelToken,
    ) -> (TrialOutcome, Vec<TrialEvent>) {
        let mut events = Vec::new();
        let mut emit = |e: TrialEvent| events.push(e);
        let s = spec(8);
        let mut m = TrialMeter::new(
            w,
            &s,
            MeterOptions {
                step_event_interval: Duration::from_secs(3600),
                max_consecutive_skips: 3,
                ..Default::default()
            },
        );
        m.start(&mut emit);
        let mut it = losses.iter();
        let outcome = loop {
            if let Some(o) = m.should_stop(cancel) {
                break o;
            }
            let Some(&(l, a, k)) = it.next() else {
                break Outcome::Cancelled { step: m.applied() };
            };
            if let Some(o) = m.record(sample(l, a, k)) {
                break o;
            }
            m.set_noise(Some(m.applied() as f64));
            if m.progress(&mut emit) {
                if let Some(o) = m.eval(metric(m.applied()), &mut emit) {
                    break o;
                }
            }
        };
        let out = m.finish(outcome, &mut emit);
        (out, events)
    }

    /// Drives the meter like a runner does with a scripted loss sequence and metric function.
    fn drive(
        w: &Workload,
        losses: &[(f64, bool, u64)],
        metric: impl Fn(u64) -> f64,
    ) -> (TrialOutcome, Vec<TrialEvent>) {
        drive_token(w, losses, metric, &CancelToken::new())
    }

    #[test]
    fn a_cap_on_the_token_stops_the_trial_there_as_an_early_stop() {
        let mut w = Workload::nqm(4, OptimizerKind::Sgd, 0.0);
        w.eval_every = 4;
        w.step_budget = 100;
        let losses = vec![(1.0, true, 0); 200];
        // another trial of its pilot reached at step 8: this one trains to 8, is evaluated
        // there (it could still tie), and stops, cut
        let token = CancelToken::new();
        token.cap_at(20);
        token.cap_at(8);
        token.cap_at(50); // never raised
        assert_eq!(token.capped_at(), Some(8));
        let (out, _) = drive_token(&w, &losses, |_| 0.5, &token);
        let steps: Vec<u64> = out.evals.iter().map(|e| e.step).collect();
        assert_eq!(steps, vec![4, 8]);
        assert_eq!(
            out.outcome,
            Outcome::NotReached {
                budget: 8,
                early_stopped: true
            }
        );
        // a tie at the cap's evaluation is a reach
        let (out, _) = drive_token(&w, &losses, |s| if s >= 8 { 0.0 } else { 0.5 }, &token);
        assert_eq!(out.outcome, Outcome::Reached { step: 8 });
        // no cap: the whole budget
        assert_eq!(CancelToken::new().capped_at(), None);
    }

    #[test]
    fn evaluates_on_the_cadence_and_at_the_end_of_the_budget_then_stops() {
        let mut w = Workload::nqm(4, OptimizerKind::Sgd, 0.0);
        w.eval_every = 4;
        w.step_budget = 10;
        let losses = vec![(1.0, true, 0); 20];
        let (out, events) = drive(&w, &losses, |_| 0.5);
        let steps: Vec<u64> = out.evals.iter().map(|e| e.step).collect();
        assert_eq!(steps, vec![4, 8, 10]);
        assert_eq!(
            out.outcome,
            Outcome::NotReached {
                budget: 10,
                early_stopped: false
            }
        );
        assert_eq!(out.steps, 10);
        assert!(matches!(events[0], TrialEvent::Started { .. }));
        assert!(matches!(events.last(), Some(TrialEvent::Finished { .. })));
        // throttled: the first Step event, then the final state once
        let n_steps = events
            .iter()
            .filter(|e| matches!(e, TrialEvent::Step(_)))
            .count();
        assert_eq!(n_steps, 2);
        assert_eq!(out.noise.trajectory, vec![(4, 4.0), (8, 8.0), (10, 10.0)]);
        assert!((out.throughput.step_s - 1e-3).abs() < 1e-12);
        assert!((out.throughput.examples_per_s - 8000.0).abs() < 1e-6);
    }

    #[test]
    fn eval_growth_spaces_evaluations_geometrically() {
        let mut w = Workload::nqm(4, OptimizerKind::Sgd, 0.0);
        w.eval_every = 10;
        w.eval_growth = 0.5;
        w.step_budget = 100;
        let (out, _) = drive(&w, &vec![(1.0, true, 0); 200], |_| 0.5);
        let steps: Vec<u64> = out.evals.iter().map(|e| e.step).collect();
        assert_eq!(steps, vec![10, 20, 30, 50, 80, 100]);
    }

    #[test]
    fn reaches_the_target_and_keeps_the_noise_value_there() {
        let mut w = Workload::nqm(4, OptimizerKind::Sgd, 0.1);
        w.eval_every = 2;
        let (out, _) = drive(&w, &vec![(1.0, true, 0); 50], |s| 1.0 / s as f64);
        assert_eq!(out.outcome, Outcome::Reached { step: 10 });
        assert_eq!(out.noise.b_simple, Some(10.0));
        // train_loss is the mean training loss since the previous evaluation
        assert!(out.evals.iter().all(|e| (e.train_loss - 1.0).abs() < 1e-12));
        assert_eq!(out.reason, None);
    }

    #[test]
    fn one_divergence_rule_with_reasons() {
        let w = Workload::nqm(4, OptimizerKind::Sgd, 0.0);
        // non-finite training loss
        let (out, _) = drive(&w, &[(1.0, true, 0), (f64::NAN, true, 0)], |_| 0.5);
        assert_eq!(out.outcome, Outcome::Diverged { step: 2 });
        assert!(out.reason.unwrap().contains("NaN"));
        // above divergence_factor × the first loss, once an update has been applied
        let (out, _) = drive(&w, &[(1.0, true, 0), (10.5, true, 0)], |_| 0.5);
        assert_eq!(out.outcome, Outcome::Diverged { step: 2 });
        assert!(out.reason.unwrap().contains("10× the initial loss"));
        // …but a skipped first step cannot diverge by the factor rule (nothing applied yet)
        let (out, _) = drive(&w, &[(1.0, false, 1), (10.5, false, 2)], |_| 0.5);
        assert!(matches!(out.outcome, Outcome::Cancelled { .. }));
        assert_eq!(out.skipped_steps, 2);
        // N consecutive skipped steps
        let skips = [
            (1.0, true, 0),
            (1.0, false, 1),
            (1.0, false, 2),
            (1.0, false, 3),
        ];
        let (out, _) = drive(&w, &skips, |_| 0.5);
        assert_eq!(out.outcome, Outcome::Diverged { step: 1 });
        assert_eq!(out.skipped_steps, 3);
        assert!(out.reason.unwrap().contains("3 consecutive steps skipped"));
        // non-finite metric
        let (out, _) = drive(&w, &[(1.0, true, 0)], |_| f64::NAN);
        assert_eq!(out.outcome, Outcome::Diverged { step: 1 });
        assert_eq!(out.evals.len(), 1);
        assert!(out.reason.unwrap().contains("validation metric"));
    }

    #[test]
    fn an_exact_initial_loss_is_the_divergence_reference() {
        let w = Workload::nqm(4, OptimizerKind::Sgd, 0.0);
        let s = spec(8);
        let mut m = TrialMeter::new(&w, &s, MeterOptions::default());
        m.set_initial_loss(0.1);
        assert!(m.record(sample(1.5, true, 0)).is_some());
    }
}
