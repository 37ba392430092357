//! The engine → UI bridge: a thread that forwards the scheduler's events (a std channel) into the
//! UI's tokio channel, coalesced into at most one batch per `COALESCE`.

use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::core::events::{SweepEvent, TrialEvent};
use crate::tui::app::Msg;

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
pub(super) fn bridge(srx: std::sync::mpsc::Receiver<SweepEvent>, tx: UnboundedSender<Msg>) {
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
            let _ = tx.send(Msg::SweepStreamEnded);
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
            let _ = tx.send(Msg::SweepStreamEnded);
            return;
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
}
