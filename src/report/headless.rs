//! The headless view model: folds `SweepEvent`s into progress notifications for a [`HeadlessSink`]
//! until the sweep is done. It never prints and never touches a terminal: the CLI
//! (`src/cli/sweep.rs`) implements the sink with progress bars on stderr or plain lines on stdout,
//! and any `io::Write` (a `Vec<u8>` in tests) is a sink that collects plain lines. The report that
//! follows is the caller's: `report::of_sweep` of the joined sweep, rendered by `text`/`json`.
//! ctrl-c handling belongs to the caller (cancel the `SweepControl`); `resume_message` gives the
//! text to print afterwards.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::Receiver;

use crate::core::events::{SweepEvent, TrialEvent};
use crate::core::stages::{Stage, StageCounts};
use crate::core::trial::Outcome;
use crate::report::format::outcome_text;

/// Where the headless view sends its output. Only `line` is required: a plain-text sink writes
/// one line per finished trial and ignores the live hooks.
pub trait HeadlessSink {
    /// One line of progress (the plan, a saved trial, a best-so-far, an error).
    fn line(&mut self, text: &str);
    /// The sweep's size is known (`done` of `total` already in the log).
    fn planned(&mut self, _total: usize, _done: usize) {}
    /// Trials beyond the plan were placed (the confirm stage, `--until`, `--repeats`, `--widen`):
    /// the sweep now counts `total` trials.
    fn grown(&mut self, _total: usize) {}
    /// A trial started (`label`: "trial 3 B=64 η=1.2e-1").
    fn trial_started(&mut self, _trial_id: u64, _label: &str) {}
    /// Latest step/eval of a running trial.
    fn trial_progress(&mut self, _trial_id: u64, _msg: &str) {}
    /// A trial finished or failed.
    fn trial_ended(&mut self, _trial_id: u64) {}
    /// One more trial is durable in the log.
    fn saved(&mut self) {}
    /// A new best steps-to-target ("best at B=64: 120 steps").
    fn best(&mut self, _msg: &str) {}
    /// Progress is over (clear any bars); the report follows.
    fn finish(&mut self) {}
}

impl<W: Write + ?Sized> HeadlessSink for W {
    fn line(&mut self, text: &str) {
        let _ = writeln!(self, "{text}");
    }
}

/// The command that resumes a sweep logged at `log_path`.
pub fn resume_command(log_path: &Path) -> String {
    let p = log_path.display().to_string();
    let quoted = if p
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:".contains(c))
    {
        p
    } else {
        format!("'{}'", p.replace('\'', "'\\''"))
    };
    format!("scaling-lab sweep --resume {quoted}")
}

/// What to print after an interruption (ctrl-c): what is kept, of each stage's plan, and how to
/// continue ("interrupted: 330 of 520 trials are saved (search 240/240 · confirm 90/280) in …").
pub fn resume_message(log_path: &Path, counts: &StageCounts) -> String {
    let stages = if counts.staged() {
        format!(" ({})", counts.text())
    } else {
        String::new()
    };
    format!(
        "interrupted: {} of {} trials are saved{stages} in {}\nresume with: {}",
        counts.done(),
        counts.planned(),
        log_path.display(),
        resume_command(log_path)
    )
}

/// The progress lines of finished trials: at most one per trial, a new best folded into its
/// trial's line, and trials stopped early (they could no longer beat their B's best) counted
/// per B instead of a line each, in one summary line at the end.
#[derive(Default)]
struct TrialLines {
    /// The last saved trial's line, held until the next event says whether it set a new best.
    pending: Option<(u64, String)>,
    /// Trials stopped early per B.
    early: std::collections::BTreeMap<usize, usize>,
}

impl TrialLines {
    fn flush(&mut self, sink: &mut dyn HeadlessSink) {
        if let Some((_, line)) = self.pending.take() {
            sink.line(&line);
        }
    }

    /// A trial is saved: its line (held), or one more early stop at `b`.
    fn saved(&mut self, sink: &mut dyn HeadlessSink, id: u64, b: usize, line: Option<String>) {
        self.flush(sink);
        match line {
            Some(l) => self.pending = Some((id, l)),
            None => *self.early.entry(b).or_default() += 1,
        }
    }

    /// A new best set by trial `id`: on its line (the scheduler says so right after saving it;
    /// the progress bar's message shows it too).
    fn best(&mut self, sink: &mut dyn HeadlessSink, id: u64) {
        if let Some((p, line)) = &mut self.pending {
            if *p == id {
                line.push_str(" — best so far at this B");
            }
        }
        self.flush(sink);
    }

    /// The end: the held line and the early stops per B ("stopped early … B=2: 18 · B=4: 20").
    fn finish(&mut self, sink: &mut dyn HeadlessSink) {
        self.flush(sink);
        if self.early.is_empty() {
            return;
        }
        let total: usize = self.early.values().sum();
        let per_b: Vec<String> = self
            .early
            .iter()
            .map(|(b, n)| format!("B={b}: {n}"))
            .collect();
        sink.line(&format!(
            "{total} trials stopped early at their B's best step count (they could no longer \
             beat it; S(B) unchanged): {}",
            per_b.join(" · ")
        ));
        self.early.clear();
    }
}

/// Consumes events until `Done` (or the channel closes) and sends progress to `sink`; returns
/// whether the sweep said it was done. One line per finished trial at most (`TrialLines`).
pub fn run_headless(rx: Receiver<SweepEvent>, sink: &mut dyn HeadlessSink) -> bool {
    let (mut planned, mut done) = (0usize, 0usize);
    // the trials placed so far (the plan's at the start, then any placed beyond it): the count
    // the progress shows grows with them, so a confirm trial is never "37 of 36"
    let (mut base, mut queued) = (0usize, std::collections::HashSet::new());
    let mut batch_of: HashMap<u64, usize> = HashMap::new();
    // each finished trial's outcome in words (None: stopped early, summarised per B)
    let mut outcome_of: HashMap<u64, Option<String>> = HashMap::new();
    let mut lines = TrialLines::default();
    // each stage against its own plan, as the sweep counts them (absent: the plain count)
    let mut counts: Option<StageCounts> = None;
    loop {
        // a saved trial's line waits for the news that it set a new best (sent right after it),
        // a moment at most
        let ev = match rx.recv_timeout(std::time::Duration::from_millis(200)) {
            Ok(ev) => ev,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                lines.flush(sink);
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if !matches!(ev, SweepEvent::Trial { .. } | SweepEvent::BestSoFar { .. }) {
            lines.flush(sink);
        }
        match ev {
            SweepEvent::Counts(c) => {
                if c.planned() != planned {
                    planned = c.planned();
                    sink.grown(planned);
                }
                counts = Some(c);
            }
            SweepEvent::Calibrated(c) => {
                sink.line(&crate::report::calibration::summary_line(&c));
            }
            SweepEvent::Planned(p) => {
                planned = p.total_trials;
                done = p.already_done;
                base = p.already_done;
                let msg = planned_line(&p);
                sink.line(&msg);
                sink.planned(p.total_trials, p.already_done);
            }
            SweepEvent::Queued {
                trial_id,
                batch_size,
            } => {
                batch_of.insert(trial_id, batch_size);
                queued.insert(trial_id);
                if base + queued.len() > planned {
                    planned = base + queued.len();
                    sink.grown(planned);
                }
            }
            SweepEvent::Trial { trial_id, event } => match event {
                TrialEvent::Started { spec } => {
                    batch_of.insert(trial_id, spec.batch_size);
                    sink.trial_started(
                        trial_id,
                        &format!(
                            "trial {trial_id} B={} η={:.3e}",
                            spec.batch_size, spec.metaparams.learning_rate
                        ),
                    );
                }
                TrialEvent::Step(st) => {
                    sink.trial_progress(trial_id, &format!("step {} loss {:.4}", st.step, st.loss))
                }
                TrialEvent::Eval(e) => sink
                    .trial_progress(trial_id, &format!("step {} metric {:.4}", e.step, e.metric)),
                TrialEvent::NoiseScale { .. } => {}
                TrialEvent::Finished { outcome } => {
                    let o = &outcome.outcome;
                    let early = matches!(
                        o,
                        Outcome::NotReached {
                            early_stopped: true,
                            ..
                        }
                    );
                    outcome_of.insert(trial_id, (!early).then(|| outcome_text(o)));
                    sink.trial_ended(trial_id);
                }
            },
            SweepEvent::Saved { trial_id } => {
                done += 1;
                sink.saved();
                let what = outcome_of
                    .remove(&trial_id)
                    .unwrap_or_else(|| Some("recorded".into()));
                let b = batch_of.get(&trial_id).copied().unwrap_or(0);
                // "[search 12/24]", "[confirm 3/50]": the trial's stage against its own plan
                let stage = Stage::of(trial_id);
                if let Some(c) = counts.as_mut() {
                    c.saved(stage);
                }
                let at = match counts
                    .filter(StageCounts::staged)
                    .and_then(|c| c.get(stage))
                {
                    Some(c) => format!("{} {}/{}", stage.name(), c.done, c.planned),
                    None => format!("{done}/{planned}"),
                };
                let line = what.map(|w| format!("[{at}] trial {trial_id} (B={b}): {w}"));
                lines.saved(sink, trial_id, b, line);
            }
            SweepEvent::BestSoFar {
                batch_size,
                steps,
                trial_id,
            } => {
                sink.best(&format!("best at B={batch_size}: {steps} steps"));
                lines.best(sink, trial_id);
            }
            SweepEvent::Paused { paused } => sink.line(if paused {
                "paused: no new trials start"
            } else {
                "resumed"
            }),
            SweepEvent::TrialError { trial_id, message } => {
                sink.trial_ended(trial_id);
                sink.line(&format!("trial {trial_id} failed: {message}"));
            }
            SweepEvent::Done { .. } => {
                lines.finish(sink);
                sink.finish();
                return true;
            }
        }
    }
    lines.finish(sink);
    false
}

/// The sweep's first line: its plan, or for a calibrated study what comes first.
fn planned_line(p: &crate::core::events::PlanInfo) -> String {
    let log = p
        .run_log
        .as_ref()
        .map(|l| format!(", log {l}"))
        .unwrap_or_default();
    if p.batch_sizes.is_empty() {
        // a calibrated study: its batch sizes and trials come from the pilots
        format!(
            "sweep {}: the calibration stage chooses the study first (pilot trials; {} already \
             logged), {}{log}",
            p.preset, p.already_done, p.devices
        )
    } else {
        format!(
            "sweep {}: {} batch sizes × {} trials = {} ({} already done), {}{log}",
            p.preset,
            p.batch_sizes.len(),
            p.trials_per_batch,
            p.total_trials,
            p.already_done,
            p.devices
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::events::PlanInfo;

    /// Trials placed beyond the plan (the confirm stage) grow the count the progress lines show:
    /// "[3/4]", never "[3/2]".
    #[test]
    fn trials_beyond_the_plan_grow_the_count() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(SweepEvent::Planned(PlanInfo {
            preset: "p".into(),
            batch_sizes: vec![8],
            trials_per_batch: 2,
            total_trials: 2,
            already_done: 0,
            devices: "cpu".into(),
            run_log: None,
            header: None,
        }))
        .unwrap();
        let queue = |id| SweepEvent::Queued {
            trial_id: id,
            batch_size: 8,
        };
        for id in [0, 1] {
            tx.send(queue(id)).unwrap();
        }
        for id in [0, 1] {
            tx.send(SweepEvent::Saved { trial_id: id }).unwrap();
        }
        for id in [2_000_000_000, 2_000_000_001] {
            tx.send(queue(id)).unwrap();
        }
        for id in [2_000_000_000, 2_000_000_001] {
            tx.send(SweepEvent::Saved { trial_id: id }).unwrap();
        }
        drop(tx);
        let mut out = Vec::new();
        run_headless(rx, &mut out);
        let text = String::from_utf8(out).unwrap();
        let counts: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix('[')?.split(']').next())
            .collect();
        assert_eq!(counts, ["1/2", "2/2", "3/4", "4/4"], "{text}");
    }
}
