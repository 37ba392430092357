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

/// Consumes events until `Done` (or the channel closes) and sends progress to `sink`; returns
/// whether the sweep said it was done.
pub fn run_headless(rx: Receiver<SweepEvent>, sink: &mut dyn HeadlessSink) -> bool {
    let (mut planned, mut done) = (0usize, 0usize);
    // the trials placed so far (the plan's at the start, then any placed beyond it): the count
    // the progress shows grows with them, so a confirm trial is never "37 of 36"
    let (mut base, mut queued) = (0usize, std::collections::HashSet::new());
    let mut batch_of: HashMap<u64, usize> = HashMap::new();
    let mut outcome_of: HashMap<u64, String> = HashMap::new();
    // each stage against its own plan, as the sweep counts them (absent: the plain count)
    let mut counts: Option<StageCounts> = None;
    for ev in rx.iter() {
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
                let msg = format!(
                    "sweep {}: {} batch sizes × {} trials = {} ({} already done), {}{}",
                    p.preset,
                    p.batch_sizes.len(),
                    p.trials_per_batch,
                    p.total_trials,
                    p.already_done,
                    p.devices,
                    p.run_log
                        .as_ref()
                        .map(|l| format!(", log {l}"))
                        .unwrap_or_default()
                );
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
                    outcome_of.insert(trial_id, outcome_text(&outcome.outcome));
                    sink.trial_ended(trial_id);
                }
            },
            SweepEvent::Saved { trial_id } => {
                done += 1;
                sink.saved();
                let what = outcome_of
                    .remove(&trial_id)
                    .unwrap_or_else(|| "recorded".into());
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
                sink.line(&format!("[{at}] trial {trial_id} (B={b}): {what}"));
            }
            SweepEvent::BestSoFar {
                batch_size,
                steps,
                trial_id,
            } => {
                sink.best(&format!("best at B={batch_size}: {steps} steps"));
                sink.line(&format!(
                    "  best so far at B={batch_size}: {steps} steps (trial {trial_id})"
                ));
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
                sink.finish();
                return true;
            }
        }
    }
    false
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
