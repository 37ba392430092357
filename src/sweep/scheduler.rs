//! Runs a sweep plan through a `TrialRunner`.
//!
//! A coordinator thread owns the run-log writer and the queue; each trial runs on its own thread
//! (the runner may start more: data-parallel workers). At most `concurrency` trials run at once.
//! When a trial finishes, the coordinator writes its record (flush + fsync) and only then emits
//! `Saved` and starts the next trial in the freed slot. Divergence is an outcome, not an error; a
//! runner error or panic becomes `TrialError` and the sweep goes on.
//!
//! Cancellation: `SweepControl::cancel` stops the sweep — queued trials never start, running ones
//! get their cancel token set; their (cancelled) outcomes are NOT written, so `--resume` runs them
//! again. `cancel_trial(id)` skips one trial on the user's request; it is recorded as cancelled
//! (kept, shown, never counted as a result, not re-run on resume). Pause = start no new trials.

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::{plan, SweepConfig};
use crate::core::analysis::Analysis;
use crate::core::events::{PlanInfo, SweepEvent, TrialErrorNote, TrialEvent};
use crate::core::record::{Header, TrialRecord};
use crate::core::runner::TrialRunner;
use crate::core::trial::{CancelToken, Outcome, TrialOutcome, TrialSpec};
use crate::runlog::writer::RunLogWriter;
use cut::{whole_blocks, TrialKind};

mod control;
mod cut;
mod finish;
mod placement;

pub use control::{PeerRecords, SweepControl};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a finished (or stopped) sweep reports: everything `report::of_sweep` needs, so that
/// nothing reads the log back.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepResult {
    pub log_path: PathBuf,
    /// The run log's header.
    pub header: Header,
    /// Every trial in the log (those from before a resume first), as written.
    pub trials: Vec<TrialRecord>,
    pub analysis: Analysis,
    /// The study `analysis` is of (the sweep's preset): a report of the same study reuses it.
    pub study: crate::core::analysis::Study,
    pub cancelled: bool,
    /// Trials in the log (including those from before a resume).
    pub trials_done: usize,
    /// The search's plan (batch sizes × trials per batch size).
    pub trials_planned: usize,
    /// Each stage's trials against its own plan, the trials a resume still owes included.
    pub counts: crate::core::stages::StageCounts,
    /// The study the calibration stage chose (None: the sweep has none, or it did not finish).
    pub calibrated: Option<crate::core::calibrate::Calibrated>,
    /// Trials run by this invocation.
    pub trials_run: usize,
    pub trial_errors: usize,
    /// The trials that failed to run (not logged; resume runs them again).
    pub errors: Vec<TrialErrorNote>,
    pub wall_s: f64,
}

/// A running sweep.
pub struct SweepHandle {
    thread: JoinHandle<anyhow::Result<SweepResult>>,
    control: SweepControl,
    log_path: PathBuf,
}

impl SweepHandle {
    pub fn control(&self) -> SweepControl {
        self.control.clone()
    }
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
    /// Waits for the sweep to end.
    pub fn join(self) -> anyhow::Result<SweepResult> {
        match self.thread.join() {
            Ok(r) => r,
            Err(_) => anyhow::bail!("the sweep coordinator thread panicked"),
        }
    }
}

/// Starts a sweep (or resumes the one logged at `resume_from`) on its own threads.
/// Errors here are set-up errors (bad config, unreadable/incompatible log, unwritable runs dir).
pub fn start_sweep(
    cfg: SweepConfig,
    runner: Arc<dyn TrialRunner>,
    tx: SyncSender<SweepEvent>,
    resume_from: Option<PathBuf>,
) -> anyhow::Result<SweepHandle> {
    start_sweep_with(cfg, runner, tx, resume_from, SweepControl::new())
}

/// `start_sweep` with a control created by the caller (e.g. already wired to ctrl-c).
pub fn start_sweep_with(
    cfg: SweepConfig,
    runner: Arc<dyn TrialRunner>,
    tx: SyncSender<SweepEvent>,
    resume_from: Option<PathBuf>,
    control: SweepControl,
) -> anyhow::Result<SweepHandle> {
    cfg.validate()?;
    // A device that does not exist or cannot compute in the sweep's precision: one error now.
    runner.check_devices(&cfg.devices, cfg.precision)?;
    let mut cfg = cfg;
    // The thread layout: the user's, a rule, or the workload's calibration (`layout`). A resumed
    // sweep keeps the concurrency its header recorded.
    if resume_from.is_none() && cfg.preset.sweep.auto_concurrency {
        let l = super::layout::resolve(&cfg, runner.as_ref())?;
        cfg.concurrency = l.concurrency;
        cfg.preset.sweep.auto_concurrency = false;
    }
    // Fused groups: the calibration's choice when automatic (the header records it; a resumed
    // sweep keeps the header's).
    if resume_from.is_none() && cfg.fuse.is_auto() {
        cfg.fuse = super::layout::resolve_fuse(&cfg, runner.as_ref())?.0;
    }
    let plan = plan(&cfg);
    let (writer, previous, header, given) = match &resume_from {
        Some(path) => {
            let peers = lock(&control.peers)
                .clone()
                .map(|p| (p.0)())
                .unwrap_or_default();
            let r = super::resume::open_resumed(&cfg, path, peers)?;
            (r.writer, r.records, r.header, r.given)
        }
        None => {
            let mut header = make_header(&cfg, &runner.backend_on(&cfg.devices));
            if cfg.preset.calibrate.is_some_and(|c| c.any()) {
                // what the workload allows, recorded: every reader re-derives the rounds from it
                let workers = cfg.trial_devices().replicas();
                header.calibration = Some(super::calibrate::facts(&cfg.preset.workload, workers)?);
                header.schema = crate::core::record::schema_of(&header);
            }
            (
                RunLogWriter::create(&cfg.runs_dir, &header)?,
                Vec::new(),
                header.clone(),
                header,
            )
        }
    };
    // a calibration stage still to finish: its rounds' inputs (from the header as written)
    let calibration = crate::analysis::calibrate::inputs_of_header(&given);
    // (a resumed log whose header the calibrated line completed holds it already)
    let calibrated_logged = header != given;
    let log_path = writer.path().to_path_buf();
    let ctl = control.clone();
    crate::core::float_mode::ensure_process();
    let thread = std::thread::Builder::new()
        .name("sweep-coordinator".into())
        .spawn(move || {
            crate::core::float_mode::set_here();
            let mut coord = Coordinator::new(cfg, plan, runner, tx, ctl, writer, previous);
            coord.calibration = calibration;
            coord.calibrated_logged = calibrated_logged;
            coord.run(header)
        })
        .context("cannot start the sweep thread")?;
    Ok(SweepHandle {
        thread,
        control,
        log_path,
    })
}

/// The header of a new run log for this configuration.
pub fn make_header(cfg: &SweepConfig, backend: &str) -> Header {
    Header {
        schema: crate::core::record::SCHEMA_WITHOUT_CALIBRATION,
        preset: cfg.preset.clone(),
        preset_path: cfg.preset_path.as_ref().map(|p| p.display().to_string()),
        seed: cfg.seed,
        batch_sizes: cfg.batch_sizes.clone(),
        trials_per_batch: cfg.trials_per_batch,
        devices: cfg.devices.clone(),
        concurrency: cfg.concurrency,
        revision: git_revision(),
        crate_version: env!("CARGO_PKG_VERSION").to_string(),
        backend: backend.to_string(),
        started: chrono::Local::now().to_rfc3339(),
        source: "scaling-lab".into(),
        import: None,
        adaptive: cfg.adaptive(),
        fuse: cfg.fuse.members().unwrap_or(1),
        // (loaded and cached by the sweep's checks before any header is written)
        data_files: cfg
            .preset
            .workload
            .dataset
            .as_ref()
            .and_then(|d| crate::data::load_cached(d).ok())
            .map(|d| d.files().to_vec())
            .unwrap_or_default(),
        calibration: None,
    }
}

/// The build's git revision: `SCALING_LAB_GIT_REV` at compile time, else `git rev-parse` in the
/// source tree, else "unknown".
pub fn git_revision() -> String {
    if let Some(r) = option_env!("SCALING_LAB_GIT_REV") {
        return r.to_string();
    }
    std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

type TrialResult = std::thread::Result<anyhow::Result<TrialOutcome>>;

struct Coordinator {
    cfg: SweepConfig,
    plan: Vec<TrialSpec>,
    runner: Arc<dyn TrialRunner>,
    tx: SyncSender<SweepEvent>,
    control: SweepControl,
    writer: RunLogWriter,
    records: Vec<TrialRecord>,
    best: HashMap<usize, u64>,
    /// Trials that failed to run (each also sent as `TrialError`).
    errors: Vec<TrialErrorNote>,
    /// The devices of the running trials (`devices::SlotPool`).
    slots: super::devices::SlotPool,
    /// Trials a sweep-level stop interrupted (not logged: resume runs them).
    interrupted: HashSet<u64>,
    /// The calibration stage while it runs (`analysis::calibrate`): its rounds' inputs. None
    /// once the study is calibrated, and for a study without one.
    calibration: Option<crate::analysis::calibrate::Inputs>,
    /// The log already holds the calibrated study's line (a resumed sweep).
    calibrated_logged: bool,
    /// The study the calibration stage chose, once it did.
    calibrated: Option<crate::core::calibrate::Calibrated>,
}

impl Coordinator {
    fn new(
        cfg: SweepConfig,
        plan: Vec<TrialSpec>,
        runner: Arc<dyn TrialRunner>,
        tx: SyncSender<SweepEvent>,
        control: SweepControl,
        writer: RunLogWriter,
        previous: Vec<TrialRecord>,
    ) -> Self {
        let mut best: HashMap<usize, u64> = HashMap::new();
        for r in previous.iter().filter(|r| r.spec.is_search()) {
            if let Outcome::Reached { step } = r.outcome.outcome {
                let e = best.entry(r.spec.batch_size).or_insert(step);
                *e = (*e).min(step);
            }
        }
        let slots = super::devices::SlotPool::new(
            &cfg.devices,
            cfg.preset.sweep.trials_per_device,
            cfg.concurrency,
        );
        Coordinator {
            slots,
            interrupted: HashSet::new(),
            calibration: None,
            calibrated_logged: false,
            calibrated: None,
            errors: Vec::new(),
            cfg,
            plan,
            runner,
            tx,
            control,
            writer,
            records: previous,
            best,
        }
    }

    fn emit(&self, ev: SweepEvent) {
        // A consumer that went away must not stop the sweep.
        let _ = self.tx.send(ev);
    }

    /// A trial that failed to run: told to the views, kept for the result.
    fn trial_error(&mut self, trial_id: u64, message: String) {
        self.errors.push(TrialErrorNote {
            trial_id,
            message: message.clone(),
        });
        self.emit(SweepEvent::TrialError { trial_id, message });
    }

    fn run(mut self, mut header: Header) -> anyhow::Result<SweepResult> {
        let t0 = Instant::now();
        let done: HashSet<u64> = self.records.iter().map(|r| r.trial_id).collect();
        // (a study still calibrating queues its plan once the calibration chose it)
        let mut queue: VecDeque<TrialSpec> = self
            .plan
            .iter()
            .filter(|_| self.calibration.is_none())
            .filter(|t| !done.contains(&t.trial_id))
            .filter(|t| !lock(&self.control.others).contains(&t.trial_id))
            .cloned()
            .collect();
        self.announce(&header, &queue, done.len());
        let (res_tx, res_rx) = mpsc::channel::<(TrialSpec, TrialResult, f64)>();
        let mut run = Running::default();
        let mut counted = None;
        let mut paused_seen = false;
        let mut fatal: Option<anyhow::Error> = None;
        loop {
            let cancelled = self.control.is_cancelled() || fatal.is_some();
            if !cancelled {
                let paused = self.control.is_paused();
                if paused != paused_seen {
                    paused_seen = paused;
                    self.emit(SweepEvent::Paused { paused });
                }
                // a calibration round ends when nothing of it runs or waits: the next round,
                // or the calibrated study's plan
                if !paused
                    && self.calibration.is_some()
                    && run.groups.is_empty()
                    && queue.is_empty()
                {
                    if let Err(e) = self.advance_calibration(&mut queue, &mut header) {
                        fatal = Some(e);
                        continue;
                    }
                }
                if !paused {
                    if let Err(e) = self.start_groups(&mut queue, &mut run, &res_tx) {
                        fatal = Some(e);
                    }
                }
            }
            if !cancelled && run.groups.is_empty() && queue.is_empty() && self.control.is_paused() {
                // Paused at the end of the plan: keep the --until/--repeats trials for later.
                queue.extend(self.next_extra(&run.specs));
            }
            self.count(&queue, &run, &mut counted);
            // (a calibration with rounds to go waits out a pause)
            let calibrating = self.calibration.is_some() && !cancelled;
            if run.groups.is_empty() && (queue.is_empty() || cancelled) && !calibrating {
                break;
            }
            let msg = match res_rx.recv_timeout(Duration::from_millis(50)) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            self.trial_done(msg, &mut run, &mut fatal);
        }
        self.finish(header, t0, queue, fatal, run.trials_run, run.trial_errors)
    }

    /// Starts groups from the queue while slots are free. Trials beyond the plan (--until,
    /// --widen, --repeats) are placed from the finished ones: in waves that start when nothing
    /// runs, so what is placed does not depend on which trial finished first (one at a time: one
    /// trial a wave). A wave places what its free slots' groups hold. The confirm stage's first
    /// blocks are the exception: a pure function of their B's search records, they are placed as
    /// soon as that search settled (`place_confirm_early`). An error is fatal (a record that could
    /// not be written).
    fn start_groups(
        &mut self,
        queue: &mut VecDeque<TrialSpec>,
        run: &mut Running,
        res_tx: &mpsc::Sender<(TrialSpec, TrialResult, f64)>,
    ) -> anyhow::Result<()> {
        let fuse = self.fuse();
        let wave = run.groups.is_empty();
        if !wave && run.groups.len() < self.slots.capacity() {
            // a settled B's confirm stage, ahead of the queue (outside a wave: nothing else)
            self.place_confirm_early(queue, &run.specs);
        }
        while run.groups.len() < self.slots.capacity() {
            if queue.is_empty() {
                if !wave {
                    break;
                }
                let room = (self.slots.capacity() - run.groups.len()) * fuse;
                let mut placed = run.specs.clone();
                // (a confirm stage places all k×r trials of a B at once: one group's worth)
                while queue.len() < room {
                    let extra = self.next_extra(&placed);
                    if extra.is_empty() {
                        break;
                    }
                    for spec in extra {
                        placed.insert(spec.trial_id, spec.clone());
                        queue.push_back(spec);
                    }
                }
                if queue.is_empty() {
                    break;
                }
                self.longest_first(queue);
            }
            let Some(spec) = self.next_startable(queue, &run.specs) else {
                // every queued trial waits for a trial at its B (early stopping)
                break;
            };
            if self.control.is_user_cancelled(spec.trial_id) {
                // Skipped before it started: recorded as cancelled at step 0.
                self.save(spec, empty_outcome(Outcome::Cancelled { step: 0 }))?;
                continue;
            }
            // the queued trials that train with it: same B, same early-stopping cap
            let mut members = vec![spec];
            let cap = self.cap_of(&members[0]);
            let room = self.group_room(&members[0], fuse);
            while members.len() < room {
                let at = queue.iter().position(|t| {
                    t.batch_size == members[0].batch_size
                        && TrialKind::of(t) == TrialKind::of(&members[0])
                        && self.cap_of(t) == cap
                        && self.chunk_of(t, fuse) == self.chunk_of(&members[0], fuse)
                        && !self.control.is_user_cancelled(t.trial_id)
                });
                match at.and_then(|i| queue.remove(i)) {
                    Some(t) => members.push(t),
                    None => break,
                }
            }
            // a confirm group holds whole blocks where it can (only a whole block is cut at its
            // quorum); the seeds of a block it cannot hold go back to the queue, in order
            if let Some(r) = self.cfg.preset.sweep.confirm.map(|p| p.seeds) {
                if TrialKind::of(&members[0]) == TrialKind::Confirm {
                    let logged = |t: &TrialSpec| self.block_logged(t, r).seeds;
                    let (whole, rest) = whole_blocks(members, r, &logged);
                    members = whole;
                    for t in rest.into_iter().rev() {
                        queue.push_front(t);
                    }
                }
            }
            let ids: Vec<u64> = members.iter().map(|m| m.trial_id).collect();
            let kept = members.clone();
            match self.spawn_group(members, cap, res_tx.clone()) {
                Ok(h) => {
                    let gid = ids[0];
                    run.groups.insert(
                        gid,
                        RunningGroup {
                            handle: h,
                            left: ids.len(),
                        },
                    );
                    for s in kept {
                        run.group_of.insert(s.trial_id, gid);
                        run.specs.insert(s.trial_id, s);
                    }
                }
                Err(e) => {
                    for id in ids {
                        run.trial_errors += 1;
                        self.trial_error(id, format!("{e:#}"));
                    }
                }
            }
        }
        Ok(())
    }

    /// A trial's result came back: its group's bookkeeping, then the record (or the error).
    fn trial_done(
        &mut self,
        (spec, result, wall_s): (TrialSpec, TrialResult, f64),
        run: &mut Running,
        fatal: &mut Option<anyhow::Error>,
    ) {
        let id = spec.trial_id;
        run.specs.remove(&id);
        lock(&self.control.running).remove(&id);
        if let Some(gid) = run.group_of.remove(&id) {
            let last = run.groups.get_mut(&gid).is_some_and(|g| {
                g.left -= 1;
                g.left == 0
            });
            if last {
                if let Some(g) = run.groups.remove(&gid) {
                    let _ = g.handle.join();
                }
                self.slots.release(gid);
            }
        }
        run.trials_run += 1;
        match result {
            Ok(Ok(mut outcome)) => {
                if outcome.wall_s <= 0.0 {
                    outcome.wall_s = wall_s;
                }
                let interrupted = matches!(outcome.outcome, Outcome::Cancelled { .. })
                    && !self.control.is_user_cancelled(id);
                if interrupted {
                    // Stopped by a sweep-level cancel: not a result; resume runs it again.
                    run.trials_run -= 1;
                    self.interrupted.insert(id);
                    return;
                }
                let pilot_reach = spec
                    .calibrate
                    .filter(|m| m.target.is_some())
                    .zip(outcome.outcome.steps_to_target());
                if let Err(e) = self.save(spec, outcome) {
                    self.control.cancel();
                    *fatal = Some(e);
                } else if let Some((m, step)) = pilot_reach {
                    self.cap_pilot(run, &m, step);
                }
            }
            // A runner that reports a device out-of-memory as an error or a panic (model
            // build, a backend's own unwraps): recorded as the `oom` outcome at this B.
            Ok(Err(e)) if crate::train::oom::failed_out_of_memory(&format!("{e:#}")) => {
                self.save_oom(spec, wall_s, fatal);
            }
            Ok(Err(e)) => {
                run.trial_errors += 1;
                self.trial_error(id, format!("{e:#}"));
            }
            Err(panic) => {
                let what = crate::core::runner::panic_message(&panic);
                if crate::train::oom::failed_out_of_memory(&what) {
                    self.save_oom(spec, wall_s, fatal);
                    return;
                }
                run.trial_errors += 1;
                self.trial_error(id, format!("the trial panicked: {what}"));
            }
        }
    }

    /// The calibration's next round into the queue, or — once its rules have what they need —
    /// the calibrated study: its line in the run log (once), the configuration and plan it
    /// gives, the plan's trials queued and announced. A calibration that cannot go on is an
    /// error that ends the sweep (its pilots stay logged).
    fn advance_calibration(
        &mut self,
        queue: &mut VecDeque<TrialSpec>,
        header: &mut Header,
    ) -> anyhow::Result<()> {
        use crate::analysis::calibrate::Next;
        let Some(inp) = self.calibration.as_ref() else {
            return Ok(());
        };
        let done: HashSet<u64> = self.records.iter().map(|r| r.trial_id).collect();
        match crate::analysis::calibrate::next(inp, &self.records) {
            Next::Run(specs) => {
                for s in specs.into_iter().filter(|s| !done.contains(&s.trial_id)) {
                    self.emit(SweepEvent::Queued {
                        trial_id: s.trial_id,
                        batch_size: s.batch_size,
                    });
                    queue.push_back(s);
                }
                anyhow::ensure!(
                    !queue.is_empty(),
                    "the calibration placed a round it had logged already"
                );
            }
            Next::Done(c) => {
                if !self.calibrated_logged {
                    self.writer
                        .write_line(&crate::core::record::LogLine::Calibrated(c.clone()))?;
                    self.calibrated_logged = true;
                }
                *header = crate::analysis::calibrate::calibrated_header(header, &c);
                self.cfg.preset = c.preset.clone();
                self.cfg.batch_sizes = c.batch_sizes.clone();
                self.cfg.trials_per_batch = c.trials_per_batch;
                self.plan = plan(&self.cfg);
                self.calibration = None;
                self.calibrated = Some((*c).clone());
                if self.cfg.calibrate_only {
                    // the study is chosen: its trials are for `--resume`
                    self.emit(SweepEvent::Calibrated(c));
                    return Ok(());
                }
                let others = lock(&self.control.others).clone();
                queue.extend(
                    self.plan
                        .iter()
                        .filter(|t| !done.contains(&t.trial_id) && !others.contains(&t.trial_id))
                        .cloned(),
                );
                self.emit(SweepEvent::Calibrated(c));
                self.announce(header, queue, done.len());
            }
            Next::Failed(m) => anyhow::bail!("calibration: {m}"),
        }
        Ok(())
    }

    /// Tells the views the plan (with the log's header) and every queued trial.
    fn announce(&self, header: &Header, queue: &VecDeque<TrialSpec>, already_done: usize) {
        self.emit(SweepEvent::Planned(PlanInfo {
            preset: self.cfg.preset.name.clone(),
            batch_sizes: self.cfg.batch_sizes.clone(),
            trials_per_batch: self.cfg.trials_per_batch,
            total_trials: self.plan.len(),
            already_done,
            devices: self.cfg.devices.label(),
            run_log: Some(self.writer.path().display().to_string()),
            header: Some(Box::new(header.clone())),
        }));
        for t in queue {
            self.emit(SweepEvent::Queued {
                trial_id: t.trial_id,
                batch_size: t.batch_size,
            });
        }
    }

    /// Records a trial that ran out of device memory (at step 0: where it failed is unknown).
    fn save_oom(&mut self, spec: TrialSpec, wall_s: f64, fatal: &mut Option<anyhow::Error>) {
        let mut outcome = empty_outcome(Outcome::Oom {
            batch_size: spec.batch_size,
            step: 0,
        });
        outcome.wall_s = wall_s;
        self.emit(SweepEvent::Trial {
            trial_id: spec.trial_id,
            event: TrialEvent::Finished {
                outcome: Box::new(outcome.clone()),
            },
        });
        if let Err(e) = self.save(spec, outcome) {
            self.control.cancel();
            *fatal = Some(e);
        }
    }

    /// A calibration pilot's first reach ends the pilot (docs/calibration.md, *The rounds*): its
    /// trials still running — the rest of its wave, in other groups — stop at that step, as the
    /// members of one fused group would. The reading (the fastest reach and the trials tying
    /// with it) is the same whichever trial finished first.
    fn cap_pilot(&self, run: &Running, mark: &crate::core::calibrate::CalibrateMark, step: u64) {
        let running = lock(&self.control.running);
        for (id, spec) in &run.specs {
            if spec.calibrate.is_some_and(|o| o.same_pilot(mark)) {
                if let Some(token) = running.get(id) {
                    token.cap_at(step);
                }
            }
        }
    }

    /// Writes a finished trial durably, then tells the views.
    fn save(&mut self, spec: TrialSpec, outcome: TrialOutcome) -> anyhow::Result<()> {
        let rec = TrialRecord {
            trial_id: spec.trial_id,
            spec,
            outcome,
            finished: chrono::Local::now().to_rfc3339(),
        };
        self.writer.write_trial(&rec)?;
        let (id, b) = (rec.trial_id, rec.spec.batch_size);
        let reached = rec.outcome.outcome.steps_to_target();
        let is_search = rec.spec.is_search();
        self.records.push(rec);
        self.emit(SweepEvent::Saved { trial_id: id });
        if let (Some(step), true) = (reached, is_search) {
            let improved = self.best.get(&b).is_none_or(|&s| step < s);
            if improved {
                self.best.insert(b, step);
                self.emit(SweepEvent::BestSoFar {
                    batch_size: b,
                    steps: step,
                    trial_id: id,
                });
            }
        }
        Ok(())
    }

    /// Starts `specs` (one B, one cap) as one fused group on its own thread; each trial's result
    /// comes back on `res_tx` as soon as it finished.
    fn spawn_group(
        &mut self,
        mut specs: Vec<TrialSpec>,
        cap: Option<u64>,
        res_tx: mpsc::Sender<(TrialSpec, TrialResult, f64)>,
    ) -> anyhow::Result<JoinHandle<()>> {
        let gid = specs[0].trial_id;
        // Its devices: a free slot (one device each with `trials_per_device`, else as planned).
        let slot = self
            .slots
            .acquire(gid)
            .context("no free device slot (scheduler bug)")?;
        if self.cfg.preset.sweep.trials_per_device >= 1 {
            for s in &mut specs {
                s.devices = slot.clone();
            }
        }
        let tokens: Vec<CancelToken> = specs
            .iter()
            .map(|s| {
                let token = CancelToken::new();
                lock(&self.control.running).insert(s.trial_id, token.clone());
                if self.control.is_cancelled() || self.control.is_user_cancelled(s.trial_id) {
                    token.cancel();
                }
                token
            })
            .collect();
        let runner = self.runner.clone();
        let mut workload = match &specs[0].calibrate {
            // a pilot trial: its own budget, evaluation spacing and target
            Some(mark) => crate::core::calibrate::workload_for(&self.cfg.preset.workload, mark),
            None => self.cfg.preset.workload.clone(),
        };
        if let Some(best) = cap {
            workload.step_budget = best.max(1);
            workload.max_examples = None;
        }
        // search trials stop together at the first reach; a confirm block at its quorum
        // (`core::confirm::block_need`); repeats measure their own steps (a group holds one
        // kind: `TrialKind`)
        let cut = self.group_cut(&specs);
        let tx = self.tx.clone();
        // Several CPU groups at once: each computes in its own pool of cores/concurrency threads.
        let threads = super::layout::threads_per_trial(
            &self.cfg.devices,
            self.cfg.concurrency,
            super::layout::cores(),
        );
        let ids: Vec<u64> = specs.iter().map(|s| s.trial_id).collect();
        let body = move || {
            let t0 = Instant::now();
            let k = specs.len();
            let finished: Vec<AtomicBool> = (0..k).map(|_| AtomicBool::new(false)).collect();
            let reported: Vec<AtomicBool> = (0..k).map(|_| AtomicBool::new(false)).collect();
            let emit = |i: usize, mut event: TrialEvent| {
                let is_step = matches!(event, TrialEvent::Step(_));
                if let TrialEvent::Finished { outcome } = &mut event {
                    mark_early_stop(&mut outcome.outcome, cap);
                    finished[i].store(true, Ordering::Relaxed);
                }
                let ev = SweepEvent::Trial {
                    trial_id: specs[i].trial_id,
                    event,
                };
                if is_step {
                    // Progress samples are droppable: a slow view must never stall training.
                    let _ = tx.try_send(ev);
                } else {
                    let _ = tx.send(ev);
                }
            };
            let done = |i: usize, result: anyhow::Result<TrialOutcome>| {
                let mut result = result;
                if let Ok(o) = &mut result {
                    mark_early_stop(&mut o.outcome, cap);
                    if !finished[i].load(Ordering::Relaxed) {
                        emit(
                            i,
                            TrialEvent::Finished {
                                outcome: Box::new(o.clone()),
                            },
                        );
                    }
                }
                reported[i].store(true, Ordering::Relaxed);
                let _ = res_tx.send((specs[i].clone(), Ok(result), t0.elapsed().as_secs_f64()));
            };
            let ran = catch_unwind(AssertUnwindSafe(|| {
                let group = crate::core::runner::Group {
                    specs: &specs,
                    cancels: &tokens,
                    cut: cut.clone(),
                };
                let mut e = |i: usize, ev: TrialEvent| emit(i, ev);
                let mut d = |i: usize, r: anyhow::Result<TrialOutcome>| done(i, r);
                crate::core::runner::in_thread_budget(threads, || {
                    runner.run_group(&workload, &group, &mut e, &mut d)
                })
            }));
            if let Err(panic) = ran {
                // every trial not reported fails with the panic
                let what = crate::core::runner::panic_message(&panic);
                for (i, spec) in specs.iter().enumerate() {
                    if !reported[i].load(Ordering::Relaxed) {
                        let p: Box<dyn std::any::Any + Send> = Box::new(what.clone());
                        let _ = res_tx.send((spec.clone(), Err(p), t0.elapsed().as_secs_f64()));
                    }
                }
            }
        };
        std::thread::Builder::new()
            .name(format!("trial-{gid}"))
            .spawn(move || {
                crate::core::float_mode::set_here();
                body()
            })
            .map_err(|e| {
                self.slots.release(gid);
                for id in &ids {
                    lock(&self.control.running).remove(id);
                }
                anyhow::anyhow!("cannot start a thread for trial {gid}: {e}")
            })
    }
}

/// What runs now: groups (one thread each, by the id of their first trial) and their trials.
/// Which trials may share a fused group (with the same B and cap): search trials (cut together
/// at the first reach with early stopping), `--repeats` trials, and confirm trials:
/// the latter two never cut, each running to its own reach or budget.
#[derive(Default)]
struct Running {
    groups: HashMap<u64, RunningGroup>,
    group_of: HashMap<u64, u64>,
    /// Specs of the running trials (what `next_extra` must not duplicate).
    specs: HashMap<u64, TrialSpec>,
    trials_run: usize,
    trial_errors: usize,
}

/// A fused group running on its thread.
struct RunningGroup {
    handle: JoinHandle<()>,
    /// Its trials whose result has not come back.
    left: usize,
}

/// A trial that ran out of a budget cut by early stopping is recorded as such (the runner only
/// knows its budget, not why it was shorter).
fn mark_early_stop(outcome: &mut Outcome, cap: Option<u64>) {
    if let (Outcome::NotReached { early_stopped, .. }, Some(_)) = (outcome, cap) {
        *early_stopped = true;
    }
}

fn empty_outcome(outcome: Outcome) -> TrialOutcome {
    TrialOutcome::bare(outcome, 0)
}
