//! The UI task: one `tokio::select!` loop over terminal input (crossterm `EventStream`), engine
//! events (the scheduler's std channel, bridged by a forwarding thread in ≤ 15 batches a second),
//! a 1 Hz tick (clock, run-log tail) and a frame deadline that exists only while the state is
//! dirty (≤ 15 fps after a key or a resize, ≤ 7 fps when only engine progress changed it). Training
//! runs on the scheduler's own threads; the analysis on one worker thread (`AnalysisWorker`: the latest
//! request per Live state wins); file reads and joining a finished sweep on the blocking pool; this
//! loop only folds messages and draws. Nothing here polls: every thread blocks until it has work.
//! The runtime never writes UI state: every IO result (a sweep started or failed to, a log read,
//! lines appended, an analysis) becomes a `Msg` that `update` applies.

use crate::report::ReportOptions;
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use ratatui::backend::Backend;
use ratatui::Terminal;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::app::{update, AnalysisRequest, App, Command, CompareRequest, LiveView, Msg};
use super::key::map_key;
use super::loader;
use crate::core::events::{SweepEvent, TrialEvent};
use crate::core::record::LogLine;
use crate::core::RunnerFactory;
use crate::runlog::{read_run_log, RunLog, RunLogTail};
use crate::sweep::{start_sweep, SweepConfig, SweepControl, SweepHandle};

/// The bridge forwards the engine's events at most once per this interval (see `bridge`).
pub const COALESCE: Duration = Duration::from_millis(66);

/// Coalesces the scheduler's events into at most one batch per `COALESCE` (15 a second), so the
/// UI wakes a bounded number of times however fast trials finish (two trials at once on a small
/// model finish ~100 a second, each with four or five events). A trial's high-rate progress events
/// (Step, Eval, NoiseScale: a closed-form runner can emit thousands per second) are kept as the
/// latest of each kind per trial; every other event (Started, Finished, Saved, …) is kept, and the
/// batch keeps the order the events came in, so a trial's last progress precedes its outcome.
/// `Done` and `Paused` flush at once (the end of the sweep, the answer to a key).
#[derive(Default)]
pub struct Coalescer {
    pending: Vec<SweepEvent>,
}

fn progress_kind(ev: &SweepEvent) -> Option<(u64, u8)> {
    match ev {
        SweepEvent::Trial { trial_id, event } => match event {
            TrialEvent::Step(_) => Some((*trial_id, 0)),
            TrialEvent::Eval(_) => Some((*trial_id, 1)),
            TrialEvent::NoiseScale { .. } => Some((*trial_id, 2)),
            _ => None,
        },
        _ => None,
    }
}

impl Coalescer {
    /// Adds an event; returns the events to forward now (empty until `flush`, but for `Done` and
    /// `Paused`).
    pub fn push(&mut self, ev: SweepEvent) -> Vec<SweepEvent> {
        let urgent = matches!(ev, SweepEvent::Done { .. } | SweepEvent::Paused { .. });
        match progress_kind(&ev) {
            Some(k) => {
                if let Some(slot) = self
                    .pending
                    .iter_mut()
                    .find(|p| progress_kind(p) == Some(k))
                {
                    *slot = ev;
                } else {
                    self.pending.push(ev);
                }
            }
            None => self.pending.push(ev),
        }
        if urgent {
            self.flush()
        } else {
            Vec::new()
        }
    }
    /// The pending events, in order (called every `COALESCE`).
    pub fn flush(&mut self) -> Vec<SweepEvent> {
        std::mem::take(&mut self.pending)
    }
}

/// Forwards the scheduler's events (std channel) into the UI's tokio channel, coalesced: at most
/// one batch per `COALESCE`, the first event after a quiet spell at once. Blocks while nothing
/// comes (no wake-ups between trials).
fn bridge(srx: std::sync::mpsc::Receiver<SweepEvent>, tx: UnboundedSender<Msg>) {
    use std::sync::mpsc::TryRecvError;
    let mut c = Coalescer::default();
    // when the last batch went out (long ago: the first event goes out at once)
    let mut last = Instant::now() - COALESCE;
    loop {
        // Block for the next event; then, if a batch went out less than COALESCE ago, sleep out
        // the rest of that interval and take everything that arrived meanwhile in one drain: the
        // thread wakes at most ~15 times a second however fast the engine emits (it used to wake
        // once per event: 0.76 CPU-s of a 73 s, 6,000-trial sweep).
        let Ok(first) = srx.recv() else {
            let _ = tx.send(Msg::SweepEnded {
                error: None,
                report: None,
            });
            return;
        };
        let mut out = c.push(first);
        let since = last.elapsed();
        if out.is_empty() && since < COALESCE {
            std::thread::sleep(COALESCE - since);
        }
        let mut ended = false;
        loop {
            match srx.try_recv() {
                Ok(ev) => out.extend(c.push(ev)),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    ended = true;
                    break;
                }
            }
        }
        out.extend(c.flush());
        last = Instant::now();
        if !out.is_empty() && tx.send(Msg::SweepBatch(out)).is_err() {
            return;
        }
        if ended {
            let _ = tx.send(Msg::SweepEnded {
                error: None,
                report: None,
            });
            return;
        }
    }
}

/// Minimum time between two frames (15 fps) when a key or a resize changed the screen.
pub const FRAME: Duration = Duration::from_millis(1000 / 15);
/// Minimum time between two frames that only show engine progress (~7 fps): a running sweep
/// redraws this often, which is most of the TUI's own CPU time while a sweep runs (docs/tui.md:
/// the UI threads 1.7–1.8 % of a core on a sweep landing ~95 trials a second).
pub const PROGRESS_FRAME: Duration = Duration::from_millis(150);
/// Clock tick: ETA refresh and run-log tail polling.
pub const TICK: Duration = Duration::from_secs(1);
/// Longest the loop folds queued messages before it yields to input and drawing.
const DRAIN: Duration = Duration::from_millis(15);
/// Pacing of the analysis worker (see `AnalysisWorker`): after an analysis of a Live state that
/// took d, the next one of that state starts no sooner than `ANALYSIS_DUTY` × d later, and at
/// least `ANALYSIS_GAP` and at most `ANALYSIS_MAX_GAP` later.
const ANALYSIS_GAP: Duration = Duration::from_secs(3);
const ANALYSIS_MAX_GAP: Duration = Duration::from_secs(10);
const ANALYSIS_DUTY: u32 = 30;

/// The requests waiting for the analysis worker: the latest per Live state.
#[derive(Default)]
struct AnalysisQueue {
    pending: Vec<AnalysisRequest>,
    /// Compare's runs at one target (the latest; asked for by a key: never paced).
    compare: Option<CompareRequest>,
    closed: bool,
}

/// What the worker runs next.
enum Job {
    Live(Box<AnalysisRequest>),
    Compare(CompareRequest),
}

/// One thread that runs the analysis requests (`Command::Analyze`) and answers with
/// `Msg::Analyzed`. A request replaces a queued one for the same Live state (the latest data
/// wins). Paced per Live state: while trials keep landing, a state is re-analysed at most every
/// 3 s (and at most 1/30 of the time: 1.7 core-% for a 100 ms analysis) — the chart shows the new
/// trials' points at once, their intervals, fit and regimes when the analysis lands. An urgent
/// request (a state never analysed: a log just opened, a resumed sweep) is not paced.
pub struct AnalysisWorker {
    queue: Arc<(Mutex<AnalysisQueue>, Condvar)>,
}

impl AnalysisWorker {
    pub fn spawn(tx: UnboundedSender<Msg>) -> std::io::Result<Self> {
        let queue: Arc<(Mutex<AnalysisQueue>, Condvar)> = Arc::default();
        let q = Arc::clone(&queue);
        std::thread::Builder::new()
            .name("tui-analysis".into())
            .spawn(move || analysis_worker(&q, &tx))?;
        Ok(AnalysisWorker { queue })
    }

    /// Queues `r`, replacing a request for the same state that has not started.
    pub fn submit(&self, r: Box<AnalysisRequest>) {
        let (m, cv) = &*self.queue;
        let mut q = m.lock().unwrap_or_else(|e| e.into_inner());
        let view: LiveView = r.for_.view;
        q.pending.retain(|p| p.for_.view != view);
        q.pending.push(*r);
        cv.notify_one();
    }

    /// Queues Compare's reading at one target, replacing one that has not started.
    pub fn submit_compare(&self, r: CompareRequest) {
        let (m, cv) = &*self.queue;
        m.lock().unwrap_or_else(|e| e.into_inner()).compare = Some(r);
        cv.notify_one();
    }
}

impl Drop for AnalysisWorker {
    fn drop(&mut self) {
        let (m, cv) = &*self.queue;
        m.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        cv.notify_one();
    }
}

/// How long after an analysis that took `took` the next one of the same state may start.
fn analysis_gap(took: Duration) -> Duration {
    (took * ANALYSIS_DUTY).clamp(ANALYSIS_GAP, ANALYSIS_MAX_GAP)
}

/// Which of the pending requests (their state and urgency, in order) the worker may run now, or
/// how long to wait for one to become runnable (None: until one is submitted). `ready` says when
/// each state may be analysed again; an urgent request may run at once.
fn runnable(
    pending: &[(LiveView, bool)],
    ready: &[(LiveView, Instant)],
    now: Instant,
) -> Result<usize, Option<Duration>> {
    let ready_at = |&(view, urgent): &(LiveView, bool)| {
        ready
            .iter()
            .find(|(v, _)| *v == view && !urgent)
            .map_or(now, |(_, t)| *t)
    };
    if let Some(i) = pending.iter().position(|p| ready_at(p) <= now) {
        return Ok(i);
    }
    Err(pending.iter().map(|p| ready_at(p) - now).min())
}

fn analysis_worker(queue: &(Mutex<AnalysisQueue>, Condvar), tx: &UnboundedSender<Msg>) {
    let (m, cv) = queue;
    // when each Live state may be analysed again
    let mut ready: Vec<(LiveView, Instant)> = Vec::new();
    loop {
        // wait for a request that may run (blocking: no wake-ups while nothing is asked)
        let r = {
            let mut q = m.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if q.closed {
                    return;
                }
                if let Some(c) = q.compare.take() {
                    break Job::Compare(c);
                }
                let keys: Vec<_> = q.pending.iter().map(|r| (r.for_.view, r.urgent)).collect();
                match runnable(&keys, &ready, Instant::now()) {
                    Ok(i) => break Job::Live(Box::new(q.pending.remove(i))),
                    Err(None) => q = cv.wait(q).unwrap_or_else(|e| e.into_inner()),
                    Err(Some(d)) => {
                        q = cv.wait_timeout(q, d).unwrap_or_else(|e| e.into_inner()).0;
                    }
                }
            }
        };
        let r = match r {
            Job::Live(r) => *r,
            Job::Compare(c) => {
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.run()));
                let msg = match out {
                    Ok(a) => Msg::CompareAnalyzed(Box::new(a)),
                    Err(p) => Msg::Error(format!(
                        "the analysis failed: {}",
                        crate::core::panic_message(&p)
                    )),
                };
                if tx.send(msg).is_err() {
                    return;
                }
                continue;
            }
        };
        let t0 = Instant::now();
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.run()));
        let next = Instant::now() + analysis_gap(t0.elapsed());
        ready.retain(|(v, _)| *v != r.for_.view);
        ready.push((r.for_.view, next));
        let msg = match out {
            Ok(a) => Msg::Analyzed(Box::new(a)),
            Err(p) => Msg::Error(format!(
                "the analysis failed: {}",
                crate::core::panic_message(&p)
            )),
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

/// A followed run log or sweep directory.
enum Tail {
    File(Box<RunLogTail>),
    Dir(loader::DirTail),
}

impl Tail {
    /// The lines appended since the last poll, and the validator's warnings about them.
    fn poll(&mut self) -> (anyhow::Result<Vec<LogLine>>, Vec<String>) {
        match self {
            Tail::File(t) => {
                let r = t.poll().map_err(|e| anyhow::anyhow!("{e}"));
                (r, t.take_warnings())
            }
            Tail::Dir(t) => (t.poll(), Vec::new()),
        }
    }
}

/// The followed log, shared with the poll running on the blocking pool; `epoch` changes whenever
/// another log is followed, so lines of the old one are never folded into the new one.
#[derive(Default)]
struct TailSlot {
    tail: Option<Tail>,
    epoch: u64,
    polling: bool,
}

/// What the runtime holds besides UI state: the sweep's handle, the analysis worker and the log
/// being followed.
pub struct Executor {
    pub factory: RunnerFactory,
    pub tx: UnboundedSender<Msg>,
    pub runs_dir: PathBuf,
    pub sweep: Option<(SweepHandle, SweepControl)>,
    analysis: Option<AnalysisWorker>,
    tail: Arc<Mutex<TailSlot>>,
}

impl Executor {
    pub fn new(factory: RunnerFactory, tx: UnboundedSender<Msg>, runs_dir: PathBuf) -> Self {
        Executor {
            factory,
            tx,
            runs_dir,
            sweep: None,
            analysis: None,
            tail: Arc::default(),
        }
    }

    fn active_log(&self) -> Option<PathBuf> {
        self.sweep.as_ref().map(|(h, _)| h.log_path().to_path_buf())
    }

    fn send(&self, m: Msg) {
        let _ = self.tx.send(m);
    }

    /// Follows `t` from now on (None: nothing).
    fn follow(&self, t: Option<Tail>) {
        let mut slot = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        slot.tail = t;
        slot.epoch += 1;
    }

    /// Starts (or resumes) a sweep on the scheduler's threads and bridges its events.
    fn start(&mut self, cfg: SweepConfig, resume: Option<PathBuf>) -> anyhow::Result<PathBuf> {
        anyhow::ensure!(self.sweep.is_none(), "a sweep is already running");
        let runner = (self.factory)(&cfg.preset.workload)
            .with_context(|| format!("cannot build a trainer for preset {}", cfg.preset.name))?;
        // room for what the engine emits while the bridge sleeps out a COALESCE interval (its
        // outcome events block when the channel is full; step progress is dropped instead)
        let (stx, srx) = sync_channel(16_384);
        let handle = start_sweep(cfg, runner, stx, resume)?;
        let control = handle.control();
        let path = handle.log_path().to_path_buf();
        let tx = self.tx.clone();
        std::thread::Builder::new()
            .name("tui-event-bridge".into())
            .spawn(move || bridge(srx, tx))
            .context("cannot start the event bridge thread")?;
        self.sweep = Some((handle, control));
        Ok(path)
    }

    /// Executes the commands `update` returned; results come back as messages.
    pub fn execute(&mut self, cmds: Vec<Command>) {
        for c in cmds {
            if let Err(e) = self.execute_one(c) {
                self.send(Msg::Error(format!("{e:#}")));
            }
        }
    }

    fn execute_one(&mut self, c: Command) -> anyhow::Result<()> {
        match c {
            Command::Launch(cfg) => match self.start(*cfg, None) {
                Ok(path) => self.send(Msg::SweepStarted {
                    run_log: Some(path),
                }),
                Err(e) => self.send(Msg::LaunchFailed(format!(
                    "{:#}",
                    e.context("the sweep did not start")
                ))),
            },
            Command::Resume(path) => {
                // read on the blocking pool; `handle` starts the sweep when `Resuming` arrives
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(match read_run_log(&path) {
                        Ok(log) => Msg::Resuming(Box::new(log)),
                        Err(e) => Msg::LaunchFailed(format!(
                            "{:#}",
                            anyhow::Error::from(e).context("the sweep did not resume")
                        )),
                    });
                });
            }
            Command::Pause(p) => {
                if let Some((_, ctl)) = &self.sweep {
                    ctl.set_paused(p);
                }
            }
            Command::CancelTrial(id) => {
                if let Some((_, ctl)) = &self.sweep {
                    ctl.cancel_trial(id);
                }
            }
            Command::CancelSweep => {
                if let Some((_, ctl)) = &self.sweep {
                    ctl.cancel();
                }
            }
            Command::ScanRuns => {
                let tx = self.tx.clone();
                let dir = self.runs_dir.clone();
                let active = self.active_log();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(Msg::Runs(loader::scan_runs(&dir, active.as_deref())));
                });
            }
            Command::OpenLog(path) => {
                // read on the blocking pool; `handle` follows it when `LogOpened` arrives
                let tx = self.tx.clone();
                let active = self.active_log();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(match open_log(&path, active.as_deref()) {
                        Ok((log, tailing)) => Msg::LogOpened {
                            log: Box::new(log),
                            tailing,
                        },
                        Err(e) => Msg::Error(format!("{e:#}")),
                    });
                });
            }
            Command::LoadCompare(paths) => {
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || {
                    let (runs, errs) = loader::load_compare(&paths);
                    let _ = tx.send(Msg::CompareLoaded(runs));
                    if let Some(e) = errs.first() {
                        let _ = tx.send(Msg::Error(e.clone()));
                    }
                });
            }
            Command::Calibrate(cfg) => {
                let tx = self.tx.clone();
                let runner = (self.factory)(&cfg.preset.workload);
                tokio::task::spawn_blocking(move || {
                    let r = runner
                        .and_then(|r| crate::sweep::layout::calibration(&cfg, r.as_ref()))
                        .map(|(c, _)| Box::new(c))
                        .map_err(|e| format!("{e:#}"));
                    let _ = tx.send(Msg::Calibrated(r));
                });
            }
            Command::Analyze(r) => {
                if self.analysis.is_none() {
                    self.analysis = Some(
                        AnalysisWorker::spawn(self.tx.clone())
                            .context("cannot start the analysis thread")?,
                    );
                }
                if let Some(w) = &self.analysis {
                    w.submit(r);
                }
            }
            Command::AnalyzeCompare(r) => {
                if self.analysis.is_none() {
                    self.analysis = Some(
                        AnalysisWorker::spawn(self.tx.clone())
                            .context("cannot start the analysis thread")?,
                    );
                }
                if let Some(w) = &self.analysis {
                    w.submit_compare(*r);
                }
            }
            Command::Quit => {}
        }
        Ok(())
    }

    /// Polls the followed log (or sweep directory) on the blocking pool (one poll at a time);
    /// stops following once its summary arrived or it failed.
    fn poll_tail(&self) {
        {
            let mut slot = self.tail.lock().unwrap_or_else(|e| e.into_inner());
            if slot.polling || slot.tail.is_none() {
                return;
            }
            slot.polling = true;
        }
        let shared = Arc::clone(&self.tail);
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let (tail, epoch) = {
                let mut slot = shared.lock().unwrap_or_else(|e| e.into_inner());
                (slot.tail.take(), slot.epoch)
            };
            let polled = tail.map(|mut t| {
                let r = t.poll();
                (t, r)
            });
            let mut slot = shared.lock().unwrap_or_else(|e| e.into_inner());
            slot.polling = false;
            let Some((t, (r, warnings))) = polled else {
                return;
            };
            if slot.epoch != epoch {
                return; // another log is followed now
            }
            if let Some(w) = warnings.first() {
                let _ = tx.send(Msg::Error(format!("warning: {w}")));
            }
            match r {
                Ok(lines) if !lines.is_empty() => {
                    let ended = lines.iter().any(|l| matches!(l, LogLine::Summary(_)));
                    if !ended {
                        slot.tail = Some(t);
                    }
                    let _ = tx.send(Msg::LogLines(lines));
                }
                Ok(_) => slot.tail = Some(t),
                Err(e) => {
                    let _ = tx.send(Msg::Error(format!("{e:#}")));
                }
            }
        });
    }

    /// After the bridge reports the end: join the coordinator (it has finished) on the blocking
    /// pool and build the sweep's report there (`report::of_sweep`, the way every sweep ends);
    /// it arrives as `Msg::SweepEnded` with the report (or the coordinator's error).
    fn reap(&mut self) {
        let Some((h, _)) = self.sweep.take() else {
            return;
        };
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let (report, error) = match h.join() {
                Ok(r) => (
                    Some(Box::new(crate::report::of_sweep(
                        &r,
                        &ReportOptions::default(),
                    ))),
                    None,
                ),
                Err(e) => (None, Some(format!("sweep stopped with an error: {e:#}"))),
            };
            let _ = tx.send(Msg::SweepEnded { error, report });
        });
    }

    /// On quit: stop a running sweep and wait (bounded) for its coordinator to write the log.
    pub fn shutdown(&mut self, wait: Duration) {
        if let Some((h, ctl)) = self.sweep.take() {
            ctl.cancel();
            let t0 = Instant::now();
            while !h.is_finished() && t0.elapsed() < wait {
                std::thread::sleep(Duration::from_millis(20));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
        self.analysis = None;
    }
}

/// Reads a run log or a sweep directory; whether it is still growing (to be followed).
fn open_log(
    path: &std::path::Path,
    active: Option<&std::path::Path>,
) -> anyhow::Result<(RunLog, bool)> {
    if path.is_dir() {
        // A Slurm sweep directory: every shard, merged, followed while its job runs.
        let log = crate::cluster::open_log_or_dir(path)?;
        let entry = loader::dir_entry(&log, loader::dir_job_state(&log));
        let tailing = entry.status == super::app::RunStatus::Running;
        return Ok((log, tailing));
    }
    let log = read_run_log(path)?;
    if active == Some(path) {
        // the sweep's own log: `update` shows the live sweep; nothing to follow
        return Ok((log, false));
    }
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let status = loader::run_status(&log, active, modified);
    Ok((log, status == super::app::RunStatus::Running))
}

/// The UI loop. Returns when the user quits (or on SIGTERM/SIGHUP).
pub async fn run_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    exec: &mut Executor,
    rx: &mut UnboundedReceiver<Msg>,
) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let t0 = Instant::now();
    let mut input = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    #[cfg(unix)]
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    #[cfg(unix)]
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut last_draw: Option<Instant> = None;
    // a key or a resize changed the screen since the last frame: draw at FRAME, not PROGRESS_FRAME
    let mut urgent = false;
    if let Ok(sz) = terminal.size() {
        update(app, Msg::Resize(sz.width, sz.height));
    }
    loop {
        if app.quit {
            break;
        }
        // Draw when dirty, at most every FRAME (PROGRESS_FRAME for engine progress alone).
        let deadline = if app.dirty {
            let gap = if urgent { FRAME } else { PROGRESS_FRAME };
            Some(last_draw.map(|t| t + gap).unwrap_or_else(Instant::now))
        } else {
            None
        };
        #[cfg(unix)]
        let term_sig = async {
            tokio::select! {
                _ = sigterm.recv() => {},
                _ = sighup.recv() => {},
            }
        };
        #[cfg(not(unix))]
        let term_sig = std::future::pending::<()>();
        let msg: Option<Msg> = tokio::select! {
            // input first: a key is answered before queued engine messages
            biased;
            ev = input.next() => match ev {
                Some(Ok(Event::Key(k))) => map_key(&k).map(Msg::Key),
                Some(Ok(Event::Resize(w, h))) => {
                    // ratatui resizes its buffers on the next draw
                    Some(Msg::Resize(w, h))
                }
                Some(Ok(_)) => None,
                Some(Err(e)) => return Err(anyhow::anyhow!("terminal input failed: {e}")),
                None => Some(Msg::Terminate),
            },
            _ = term_sig => Some(Msg::Terminate),
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending::<()>().await,
                }
            } => {
                handle(app, exec, Msg::Frame);
                terminal.draw(|f| super::screens::draw(f, app)).map_err(|e| anyhow::anyhow!("{e}"))?;
                app.dirty = false;
                urgent = false;
                last_draw = Some(Instant::now());
                None
            }
            m = rx.recv() => m,
            _ = tick.tick() => {
                exec.poll_tail();
                Some(Msg::Tick(t0.elapsed().as_secs_f64()))
            }
        };
        if let Some(m) = msg {
            urgent |= matches!(m, Msg::Key(_) | Msg::Resize(..));
            handle(app, exec, m);
            // fold whatever else is queued (for a bounded time) before drawing again
            let t = Instant::now();
            while t.elapsed() < DRAIN {
                match rx.try_recv() {
                    Ok(m) => handle(app, exec, m),
                    Err(_) => break,
                }
            }
        }
    }
    Ok(())
}

fn handle(app: &mut App, exec: &mut Executor, m: Msg) {
    match &m {
        // The bridge's end (no report yet): join the sweep off the UI task; its report comes
        // back as another `SweepEnded` (then `exec.sweep` is None and it goes to `update`).
        Msg::SweepEnded {
            error: None,
            report: None,
        } if exec.sweep.is_some() => {
            exec.reap();
            return;
        }
        // A log read for viewing: follow it while it grows (the sweep's own log excepted).
        Msg::LogOpened { log, tailing } if exec.active_log().as_deref() != Some(&log.path) => {
            exec.follow(tailing.then(|| {
                if log.path.is_dir() {
                    Tail::Dir(loader::DirTail::new(log))
                } else {
                    Tail::File(Box::new(RunLogTail::after(log)))
                }
            }));
        }
        _ => {}
    }
    // A resumed log read: its trials go on the chart (`update`), then its sweep starts.
    let resume = match &m {
        Msg::Resuming(log) => Some((
            SweepConfig::from_header(&log.header, exec.runs_dir.clone()),
            log.path.clone(),
        )),
        _ => None,
    };
    let cmds = update(app, m);
    exec.execute(cmds);
    if let Some((cfg, path)) = resume {
        match exec.start(cfg, Some(path)) {
            Ok(p) => exec.send(Msg::SweepStarted { run_log: Some(p) }),
            Err(e) => exec.send(Msg::LaunchFailed(format!(
                "{:#}",
                e.context("the sweep did not resume")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::events::StepStats;

    fn step(id: u64, s: u64) -> SweepEvent {
        SweepEvent::Trial {
            trial_id: id,
            event: TrialEvent::Step(StepStats {
                step: s,
                loss: 1.0,
                lr: 0.1,
                loss_scale: 1.0,
                skipped_steps: 0,
                examples_per_s: 1.0,
                compute_s: 0.0,
                exchange_s: 0.0,
            }),
        }
    }

    #[test]
    fn coalescer_keeps_latest_progress_and_order() {
        let mut c = Coalescer::default();
        for s in 0..1000 {
            assert!(c.push(step(1, s)).is_empty());
            assert!(c.push(step(2, s)).is_empty());
        }
        // an outcome waits for the batch too, after the progress that came before it
        assert!(c.push(SweepEvent::Saved { trial_id: 1 }).is_empty());
        assert!(c.push(step(3, 5)).is_empty());
        let out = c.flush();
        assert_eq!(
            out,
            vec![
                step(1, 999),
                step(2, 999),
                SweepEvent::Saved { trial_id: 1 },
                step(3, 5)
            ]
        );
        assert!(c.flush().is_empty());
        // the end of the sweep and a pause go out at once, with what was pending before them
        c.push(step(4, 1));
        let paused = c.push(SweepEvent::Paused { paused: true });
        assert_eq!(
            paused,
            vec![step(4, 1), SweepEvent::Paused { paused: true }]
        );
        assert!(c.flush().is_empty());
    }

    #[test]
    fn analyses_of_a_state_are_paced_and_urgent_ones_are_not() {
        let now = Instant::now();
        let s = Duration::from_secs(1);
        // nothing pending: wait for a submission
        assert_eq!(runnable(&[], &[], now), Err(None));
        // a state never analysed runs at once
        assert_eq!(runnable(&[(LiveView::Sweep, false)], &[], now), Ok(0));
        // a state analysed recently waits until it is ready; another state does not
        let ready = [(LiveView::Sweep, now + s)];
        assert_eq!(
            runnable(&[(LiveView::Sweep, false)], &ready, now),
            Err(Some(s))
        );
        assert_eq!(
            runnable(
                &[(LiveView::Sweep, false), (LiveView::Log, false)],
                &ready,
                now
            ),
            Ok(1)
        );
        assert_eq!(
            runnable(&[(LiveView::Sweep, false)], &ready, now + s),
            Ok(0)
        );
        // urgent: at once
        assert_eq!(runnable(&[(LiveView::Sweep, true)], &ready, now), Ok(0));
        // the gap: 30 × the analysis' time, within [3 s, 10 s]
        assert_eq!(analysis_gap(Duration::from_millis(10)), ANALYSIS_GAP);
        assert_eq!(
            analysis_gap(Duration::from_millis(200)),
            Duration::from_secs(6)
        );
        assert_eq!(analysis_gap(Duration::from_secs(3)), ANALYSIS_MAX_GAP);
    }
}
