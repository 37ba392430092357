//! Following a run log or a sweep directory while it grows: the tail, polled on the blocking
//! pool one poll at a time, and reading a log to open it.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::UnboundedSender;

use crate::core::record::LogLine;
use crate::runlog::{read_run_log, RunLog, RunLogTail};
use crate::tui::app::Msg;
use crate::tui::loader;

/// A followed run log or sweep directory.
pub(super) enum Tail {
    File(Box<RunLogTail>),
    Dir(loader::DirTail),
}

impl Tail {
    /// The lines appended since the last poll, and the validator's warnings about them.
    pub(super) fn poll(&mut self) -> (anyhow::Result<Vec<LogLine>>, Vec<String>) {
        match self {
            Tail::File(t) => {
                let r = t.poll().map_err(|e| anyhow::anyhow!("{e}"));
                (r, t.take_warnings())
            }
            Tail::Dir(t) => (t.poll(), Vec::new()),
        }
    }
}

impl Tail {
    /// The tail of `log` from the end of what was read (a sweep directory: its trials so far).
    pub(super) fn of(log: &RunLog) -> Tail {
        if log.path.is_dir() {
            Tail::Dir(loader::DirTail::new(log))
        } else {
            Tail::File(Box::new(RunLogTail::after(log)))
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

/// The one log (or sweep directory) the UI follows, polled on the blocking pool.
#[derive(Default)]
pub(super) struct Follower {
    slot: Arc<Mutex<TailSlot>>,
}

impl Follower {
    /// Follows `t` from now on (None: nothing).
    pub(super) fn follow(&self, t: Option<Tail>) {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.tail = t;
        slot.epoch += 1;
    }

    /// Polls the followed log on the blocking pool (one poll at a time) and sends what it read
    /// as `Msg::LogLines`; stops following once its summary arrived or it failed.
    pub(super) fn poll(&self, tx: &UnboundedSender<Msg>) {
        {
            let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
            if slot.polling || slot.tail.is_none() {
                return;
            }
            slot.polling = true;
        }
        let shared = Arc::clone(&self.slot);
        let tx = tx.clone();
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
}

/// Reads a run log or a sweep directory; whether it is still growing (to be followed).
pub(super) fn open_log(
    path: &std::path::Path,
    active: Option<&std::path::Path>,
) -> anyhow::Result<(RunLog, bool)> {
    if path.is_dir() {
        // A Slurm sweep directory: every shard, merged, followed while its job runs.
        let log = crate::cluster::open_log_or_dir(path)?;
        let entry = loader::dir_entry(&log, loader::dir_job_state(&log));
        let tailing = entry.status == crate::tui::app::RunStatus::Running;
        return Ok((log, tailing));
    }
    let log = read_run_log(path)?;
    if active == Some(path) {
        // the sweep's own log: `update` shows the live sweep; nothing to follow
        return Ok((log, false));
    }
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let status = loader::run_status(&log, active, modified);
    Ok((log, status == crate::tui::app::RunStatus::Running))
}
