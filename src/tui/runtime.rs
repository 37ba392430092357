//! The UI task: one `tokio::select!` loop over terminal input (crossterm `EventStream`), engine
//! events (the scheduler's std channel, bridged by a forwarding thread), a 1 Hz tick (clock, run-log
//! tail) and a frame deadline that exists only while the state is dirty (≤ 15 fps). Training runs
//! on the scheduler's own threads; file reads run on the blocking pool; this loop only folds
//! messages and draws. The runtime never writes UI state: every IO result (a sweep started or
//! failed to, a log read, lines appended) becomes a `Msg` that `update` applies.

use crate::report::{Report, ReportOptions};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::Context;
use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use ratatui::backend::Backend;
use ratatui::Terminal;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::app::{update, App, Command, Msg};
use super::keymap::map_key;
use super::loader;
use crate::core::events::{SweepEvent, TrialEvent};
use crate::core::record::LogLine;
use crate::core::RunnerFactory;
use crate::runlog::{read_run_log, RunLogTail};
use crate::sweep::{start_sweep, SweepConfig, SweepControl, SweepHandle};

/// How often the bridge forwards coalesced progress events.
pub const COALESCE: Duration = Duration::from_millis(66);

/// Coalesces a trial's high-rate progress events (Step, Eval, NoiseScale: a closed-form runner
/// can emit thousands per second) to the latest of each kind per trial, so the UI folds at most
/// a few batches per frame. Every other event (Started, Finished, Saved, Done, …) is passed on in
/// order, after flushing what was pending, so a trial's last progress precedes its outcome.
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
    /// Adds an event; returns the events to forward now (empty while only progress arrives).
    pub fn push(&mut self, ev: SweepEvent) -> Vec<SweepEvent> {
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
                Vec::new()
            }
            None => {
                let mut out = std::mem::take(&mut self.pending);
                out.push(ev);
                out
            }
        }
    }
    /// The pending progress events (called every `COALESCE`).
    pub fn flush(&mut self) -> Vec<SweepEvent> {
        std::mem::take(&mut self.pending)
    }
}

/// Forwards the scheduler's events (std channel) into the UI's tokio channel, coalesced.
fn bridge(srx: std::sync::mpsc::Receiver<SweepEvent>, tx: UnboundedSender<Msg>) {
    let mut c = Coalescer::default();
    let mut last = Instant::now();
    loop {
        let out = match srx.recv_timeout(COALESCE) {
            Ok(ev) => {
                let mut out = c.push(ev);
                if last.elapsed() >= COALESCE {
                    out.extend(c.flush());
                }
                out
            }
            Err(RecvTimeoutError::Timeout) => c.flush(),
            Err(RecvTimeoutError::Disconnected) => {
                let out = c.flush();
                if !out.is_empty() {
                    let _ = tx.send(Msg::SweepBatch(out));
                }
                let _ = tx.send(Msg::SweepEnded {
                    error: None,
                    report: None,
                });
                return;
            }
        };
        if !out.is_empty() {
            last = Instant::now();
            if tx.send(Msg::SweepBatch(out)).is_err() {
                return;
            }
        }
    }
}

/// Minimum time between two frames (15 fps).
pub const FRAME: Duration = Duration::from_millis(1000 / 15);
/// Clock tick: ETA refresh and run-log tail polling.
pub const TICK: Duration = Duration::from_secs(1);
/// Engine messages folded per wake-up before the loop yields to input and drawing.
const DRAIN: usize = 4096;

/// What the runtime holds besides UI state: the sweep's handle and the log being followed.
pub struct Executor {
    pub factory: RunnerFactory,
    pub tx: UnboundedSender<Msg>,
    pub runs_dir: PathBuf,
    pub sweep: Option<(SweepHandle, SweepControl)>,
    pub tail: Option<RunLogTail>,
    /// A sweep directory being followed (all its shards, merged).
    pub dir_tail: Option<loader::DirTail>,
}

impl Executor {
    pub fn new(factory: RunnerFactory, tx: UnboundedSender<Msg>, runs_dir: PathBuf) -> Self {
        Executor {
            factory,
            tx,
            runs_dir,
            sweep: None,
            tail: None,
            dir_tail: None,
        }
    }

    fn active_log(&self) -> Option<PathBuf> {
        self.sweep.as_ref().map(|(h, _)| h.log_path().to_path_buf())
    }

    fn send(&self, m: Msg) {
        let _ = self.tx.send(m);
    }

    /// Starts (or resumes) a sweep on the scheduler's threads and bridges its events.
    fn start(&mut self, cfg: SweepConfig, resume: Option<PathBuf>) -> anyhow::Result<PathBuf> {
        anyhow::ensure!(self.sweep.is_none(), "a sweep is already running");
        let runner = (self.factory)(&cfg.preset.workload)
            .with_context(|| format!("cannot build a trainer for preset {}", cfg.preset.name))?;
        let (stx, srx) = sync_channel(1024);
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
                let log = match read_run_log(&path) {
                    Ok(l) => l,
                    Err(e) => {
                        self.send(Msg::LaunchFailed(format!(
                            "{:#}",
                            anyhow::Error::from(e).context("the sweep did not resume")
                        )));
                        return Ok(());
                    }
                };
                let cfg = SweepConfig::from_header(&log.header, self.runs_dir.clone());
                // the logged trials go on the chart before the sweep's own events
                self.send(Msg::Resuming(Box::new(log)));
                match self.start(cfg, Some(path)) {
                    Ok(p) => self.send(Msg::SweepStarted { run_log: Some(p) }),
                    Err(e) => self.send(Msg::LaunchFailed(format!(
                        "{:#}",
                        e.context("the sweep did not resume")
                    ))),
                }
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
            Command::OpenLog(path) if path.is_dir() => {
                // A Slurm sweep directory: every shard, merged, followed while its job runs.
                let log = crate::cluster::open_log_or_dir(&path)?;
                let entry = loader::dir_entry(&log, loader::dir_job_state(&log));
                let tailing = entry.status == super::app::RunStatus::Running;
                self.tail = None;
                self.dir_tail = tailing.then(|| loader::DirTail::new(&log));
                self.send(Msg::LogOpened {
                    log: Box::new(log),
                    tailing,
                });
            }
            Command::OpenLog(path) => {
                let log = read_run_log(&path)?;
                let active = self.active_log();
                if active.as_deref() == Some(path.as_path()) {
                    // the sweep's own log: `update` shows the live sweep; nothing to follow
                    self.send(Msg::LogOpened {
                        log: Box::new(log),
                        tailing: false,
                    });
                    return Ok(());
                }
                let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
                let status = loader::run_status(&log, active.as_deref(), modified);
                let tailing = status == super::app::RunStatus::Running;
                self.dir_tail = None;
                self.tail = tailing.then(|| RunLogTail::after(&log));
                self.send(Msg::LogOpened {
                    log: Box::new(log),
                    tailing,
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
            Command::Quit => {}
        }
        Ok(())
    }

    /// Polls the followed log (or sweep directory); stops following once its summary arrived.
    fn poll_tail(&mut self) {
        if let Some(t) = self.dir_tail.as_mut() {
            match t.poll() {
                Ok(lines) if !lines.is_empty() => {
                    if lines.iter().any(|l| matches!(l, LogLine::Summary(_))) {
                        self.dir_tail = None;
                    }
                    self.send(Msg::LogLines(lines));
                }
                Ok(_) => {}
                Err(e) => {
                    self.send(Msg::Error(format!("{e:#}")));
                    self.dir_tail = None;
                }
            }
        }
        let Some(t) = self.tail.as_mut() else { return };
        let polled = t.poll();
        if let Some(w) = t.take_warnings().first() {
            self.send(Msg::Error(format!("warning: {w}")));
        }
        match polled {
            Ok(lines) if !lines.is_empty() => {
                if lines.iter().any(|l| matches!(l, LogLine::Summary(_))) {
                    self.tail = None;
                }
                self.send(Msg::LogLines(lines));
            }
            Ok(_) => {}
            Err(e) => {
                self.send(Msg::Error(e.to_string()));
                self.tail = None;
            }
        }
    }

    /// After the bridge reports the end: join the coordinator (it has finished): the sweep's
    /// report (`report::of_sweep`, the way every sweep ends) or its error.
    fn reap(&mut self) -> (Option<Box<Report>>, Option<String>) {
        let Some((h, _)) = self.sweep.take() else {
            return (None, None);
        };
        match h.join() {
            Ok(r) => (
                Some(Box::new(crate::report::of_sweep(
                    &r,
                    &ReportOptions::default(),
                ))),
                None,
            ),
            Err(e) => (None, Some(format!("sweep stopped with an error: {e:#}"))),
        }
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
    }
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
    if let Ok(sz) = terminal.size() {
        update(app, Msg::Resize(sz.width, sz.height));
    }
    loop {
        if app.quit {
            break;
        }
        // Draw when dirty, at most every FRAME.
        let deadline = if app.dirty {
            Some(last_draw.map(|t| t + FRAME).unwrap_or_else(Instant::now))
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
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending::<()>().await,
                }
            } => {
                terminal.draw(|f| super::screens::draw(f, app)).map_err(|e| anyhow::anyhow!("{e}"))?;
                app.dirty = false;
                last_draw = Some(Instant::now());
                None
            }
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
            m = rx.recv() => m,
            _ = tick.tick() => {
                exec.poll_tail();
                Some(Msg::Tick(t0.elapsed().as_secs_f64()))
            }
            _ = term_sig => Some(Msg::Terminate),
        };
        if let Some(m) = msg {
            handle(app, exec, m);
            // fold whatever else is queued before drawing again
            for _ in 0..DRAIN {
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
    // the coordinator's result is IO too: it travels in the message
    let m = match m {
        Msg::SweepEnded { error, report } => {
            let (joined, failed) = exec.reap();
            Msg::SweepEnded {
                error: error.or(failed),
                report: report.or(joined),
            }
        }
        m => m,
    };
    let cmds = update(app, m);
    exec.execute(cmds);
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
        let out = c.push(SweepEvent::Saved { trial_id: 1 });
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], step(1, 999));
        assert_eq!(out[1], step(2, 999));
        assert_eq!(out[2], SweepEvent::Saved { trial_id: 1 });
        assert!(c.flush().is_empty());
        c.push(step(3, 5));
        assert_eq!(c.flush(), vec![step(3, 5)]);
    }
}
