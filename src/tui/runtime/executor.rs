//! The executor: runs the commands `update` returns (start, pause, cancel, read, follow, analyse)
//! and answers with messages; it holds what the runtime owns besides UI state.

use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::mpsc::UnboundedSender;

use super::analysis::AnalysisWorker;
use super::bridge::bridge;
use super::tail::{open_log, Follower, Tail};
use crate::core::runner::RunnerFactory;
use crate::report::ReportOptions;
use crate::runlog::read_run_log;
use crate::sweep::{start_sweep, SweepConfig, SweepControl, SweepHandle};
use crate::tui::app::{Command, Msg};
use crate::tui::loader;

/// What the runtime holds besides UI state: the sweep's handle, the analysis worker and the log
/// being followed.
pub struct Executor {
    pub factory: RunnerFactory,
    pub tx: UnboundedSender<Msg>,
    pub runs_dir: PathBuf,
    pub sweep: Option<(SweepHandle, SweepControl)>,
    analysis: Option<AnalysisWorker>,
    follower: Follower,
}

impl Executor {
    pub fn new(factory: RunnerFactory, tx: UnboundedSender<Msg>, runs_dir: PathBuf) -> Self {
        Executor {
            factory,
            tx,
            runs_dir,
            sweep: None,
            analysis: None,
            follower: Follower::default(),
        }
    }

    pub(super) fn active_log(&self) -> Option<PathBuf> {
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
                // read on the blocking pool; `update` asks for the sweep when `Resuming` arrives
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
                // read on the blocking pool; `update` asks to follow it when `LogOpened` arrives
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
            Command::StartResumed(log) => {
                let cfg = SweepConfig::from_header(&log.header, self.runs_dir.clone());
                match self.start(cfg, Some(log.path.clone())) {
                    Ok(p) => self.send(Msg::SweepStarted { run_log: Some(p) }),
                    Err(e) => self.send(Msg::LaunchFailed(format!(
                        "{:#}",
                        e.context("the sweep did not resume")
                    ))),
                }
            }
            Command::Follow(log) => {
                // the sweep's own log is not followed: the sweep's events show it
                let own = log
                    .as_ref()
                    .is_some_and(|l| self.active_log().as_deref() == Some(&l.path));
                if !own {
                    self.follower.follow(log.map(|l| Tail::of(&l)));
                }
            }
            Command::PollTail => self.follower.poll(&self.tx),
            Command::JoinSweep => self.reap(),
            Command::Quit => {}
        }
        Ok(())
    }

    /// After the bridge reports the end: join the coordinator (it has finished) on the blocking
    /// pool and build the sweep's report there (`report::of_sweep`, the way every sweep ends);
    /// it arrives as `Msg::SweepEnded` with the report (or the coordinator's error).
    fn reap(&mut self) {
        let Some((h, _)) = self.sweep.take() else {
            // no sweep of ours: the stream's end is the sweep's end
            self.send(Msg::SweepEnded {
                error: None,
                report: None,
            });
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
