//! The headless view: folds `SweepEvent`s into progress output and ends with the shared report.
//! With a terminal: indicatif bars (overall + one per running trial). Otherwise: plain lines,
//! one per finished trial. ctrl-c handling belongs to the caller (cancel the `SweepControl`);
//! `resume_message` gives the text to print afterwards.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::core::analysis::Analysis;
use crate::core::events::{SweepEvent, TrialEvent};
use crate::core::trial::Outcome;
use crate::report::{render_report, ReportInfo};

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

/// What to print after an interruption (ctrl-c): what is kept and how to continue.
pub fn resume_message(log_path: &Path, trials_done: usize, trials_planned: usize) -> String {
    format!(
        "interrupted: {trials_done} of {trials_planned} trials are saved in {}\nresume with: {}",
        log_path.display(),
        resume_command(log_path)
    )
}

fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Reached { step } => format!("reached at step {step}"),
        Outcome::NotReached {
            budget,
            early_stopped: false,
        } => format!("did not reach within {budget} steps"),
        Outcome::NotReached { budget, .. } => {
            format!("stopped early at step {budget}: the best trial at this B reached by then")
        }
        Outcome::Diverged { step } => format!("diverged at step {step}"),
        Outcome::Cancelled { step } => format!("cancelled at step {step}"),
    }
}

/// Consumes events until `Done` (or the channel closes); writes progress and then the report to
/// `out`. `bars`: draw indicatif bars on stderr-free terminal stdout (pass
/// `std::io::stdout().is_terminal()`). Returns the final analysis.
pub fn run_headless(
    rx: Receiver<SweepEvent>,
    out: &mut dyn Write,
    bars: bool,
    mut info: ReportInfo,
) -> Option<Analysis> {
    let multi = if bars {
        Some(MultiProgress::with_draw_target(
            ProgressDrawTarget::stdout_with_hz(10),
        ))
    } else {
        None
    };
    let mut overall: Option<ProgressBar> = None;
    let mut trial_bars: HashMap<u64, ProgressBar> = HashMap::new();
    let mut batch_of: HashMap<u64, usize> = HashMap::new();
    let mut outcome_of: HashMap<u64, String> = HashMap::new();
    let line = |multi: &Option<MultiProgress>, out: &mut dyn Write, text: String| match multi {
        Some(m) => {
            let _ = m.println(text);
        }
        None => {
            let _ = writeln!(out, "{text}");
        }
    };
    let mut result = None;
    for ev in rx.iter() {
        match ev {
            SweepEvent::Planned(p) => {
                info.trials_planned = p.total_trials;
                info.trials_done = p.already_done;
                if info.preset.is_empty() {
                    info.preset = p.preset.clone();
                }
                if info.devices.is_empty() {
                    info.devices = p.devices.clone();
                }
                if info.log_path.is_none() {
                    info.log_path = p.run_log.clone();
                }
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
                line(&multi, out, msg);
                if let Some(m) = &multi {
                    let pb = m.add(ProgressBar::new(p.total_trials as u64));
                    pb.set_style(
                        ProgressStyle::with_template(
                            "{bar:30} {pos}/{len} trials  {elapsed_precise}  {msg}",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    pb.set_position(p.already_done as u64);
                    overall = Some(pb);
                }
            }
            SweepEvent::Queued {
                trial_id,
                batch_size,
            } => {
                batch_of.insert(trial_id, batch_size);
            }
            SweepEvent::Trial { trial_id, event } => match event {
                TrialEvent::Started { spec } => {
                    batch_of.insert(trial_id, spec.batch_size);
                    if let Some(m) = &multi {
                        let pb = m.add(ProgressBar::new_spinner());
                        pb.set_style(
                            ProgressStyle::with_template("  {spinner} {prefix} {msg}")
                                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                        );
                        pb.set_prefix(format!(
                            "trial {trial_id} B={} η={:.3e}",
                            spec.batch_size, spec.metaparams.learning_rate
                        ));
                        pb.enable_steady_tick(Duration::from_millis(200));
                        trial_bars.insert(trial_id, pb);
                    }
                }
                TrialEvent::Step(st) => {
                    if let Some(pb) = trial_bars.get(&trial_id) {
                        pb.set_message(format!("step {} loss {:.4}", st.step, st.loss));
                    }
                }
                TrialEvent::Eval(e) => {
                    if let Some(pb) = trial_bars.get(&trial_id) {
                        pb.set_message(format!("step {} metric {:.4}", e.step, e.metric));
                    }
                }
                TrialEvent::NoiseScale { .. } => {}
                TrialEvent::Finished { outcome } => {
                    outcome_of.insert(trial_id, outcome_text(&outcome.outcome));
                    if let Some(pb) = trial_bars.remove(&trial_id) {
                        pb.finish_and_clear();
                        if let Some(m) = &multi {
                            m.remove(&pb);
                        }
                    }
                }
            },
            SweepEvent::Saved { trial_id } => {
                info.trials_done += 1;
                if let Some(pb) = &overall {
                    pb.inc(1);
                }
                let what = outcome_of
                    .remove(&trial_id)
                    .unwrap_or_else(|| "recorded".into());
                let b = batch_of.get(&trial_id).copied().unwrap_or(0);
                line(
                    &multi,
                    out,
                    format!(
                        "[{}/{}] trial {trial_id} (B={b}): {what}",
                        info.trials_done, info.trials_planned
                    ),
                );
            }
            SweepEvent::BestSoFar {
                batch_size,
                steps,
                trial_id,
            } => {
                if let Some(pb) = &overall {
                    pb.set_message(format!("best at B={batch_size}: {steps} steps"));
                }
                line(
                    &multi,
                    out,
                    format!("  best so far at B={batch_size}: {steps} steps (trial {trial_id})"),
                );
            }
            SweepEvent::Paused { paused } => {
                line(
                    &multi,
                    out,
                    if paused {
                        "paused: no new trials start".into()
                    } else {
                        "resumed".into()
                    },
                );
            }
            SweepEvent::TrialError { trial_id, message } => {
                if let Some(pb) = trial_bars.remove(&trial_id) {
                    pb.finish_and_clear();
                }
                line(&multi, out, format!("trial {trial_id} failed: {message}"));
            }
            SweepEvent::Done {
                cancelled,
                analysis,
            } => {
                for (_, pb) in trial_bars.drain() {
                    pb.finish_and_clear();
                }
                if let Some(pb) = overall.take() {
                    pb.finish_and_clear();
                }
                if let Some(m) = &multi {
                    let _ = m.clear();
                }
                info.cancelled = cancelled;
                let _ = writeln!(out);
                let _ = write!(out, "{}", render_report(&analysis, &info));
                let _ = out.flush();
                result = Some(*analysis);
                break;
            }
        }
    }
    result
}
