//! The one run-log validator. Every reader goes through it — `report`, `compare`,
//! `export`, the TUI (opening a log and following a growing one), sweep directories and
//! `sweep --resume` — so an impossible value is refused, and a contradiction warned about, the
//! same way everywhere, with the file and line.
//!
//! * Refused (`Err`, becomes `file:line: message`): a header whose numbers would size absurd
//!   allocations or whose preset would not load as a file; a trial that cannot belong to the
//!   header's plan (a duplicate or out-of-plan id, a foreign batch size); a trial whose values no
//!   run can produce (η ≤ 0 or not finite, γ/β2 outside [0, 1), more steps than the workload's
//!   budget allows, an outcome step past the trial's steps, a wall time below 0 or above 30 years,
//!   a metric outside its range).
//! * Read as the curve shows, and warned (`file:line: message`): a stored outcome that its own
//!   evaluation curve contradicts — every reader uses the curve's outcome, the warning
//!   names the trial and both readings.
//! * Warned by readers, refused by resume (`LogValidator::off_plan`): a trial that is not the
//!   trial its header's plan derives (`core::plan::plan_difference`: an edited header or line);
//!   over the whole log, a confirm trial its header's confirm stage does not place, or a seed cut
//!   at a quorum its block did not reach (`confirm_problem`: an edited `confirm.of`, a header
//!   whose `confirm` does not match its records).
//! * Warned by readers, refused by resume (`data_files_problem`): a data file recorded in the
//!   header (path, size, SHA-256) that changed since the log was written, or is gone.
//! * Normalised: the metaparameters are read as the optimizer applied them
//!   (`workload::applied::as_applied`; logs written before that rule recorded SGD's unused γ).

use std::collections::HashMap;

mod confirm;

pub use confirm::confirm_problem;

use crate::core::record::{Header, TrialRecord};
use crate::core::trial::{Outcome, TrialSpec};
use crate::workload::spec::{Decay, Metric};

/// Longest plausible trial: 30 years of wall time, in seconds.
pub const MAX_WALL_S: f64 = 1e9;
/// Largest plausible loss-like metric (bits per byte, the NQM's expected loss) or training loss.
pub const MAX_LOSS: f64 = 1e12;

/// A number as a message shows it: plain when moderate, else in scientific notation (never
/// 300 digits).
fn num(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-4..1e9).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Range checks on a header's numbers (they size allocations on resume and report): batch
/// sizes, trials per batch, workers, concurrency, and, for logs this tool wrote, the preset's
/// workload as a preset file is checked.
pub fn header_problem(h: &Header) -> Option<String> {
    use crate::workload::check as l;
    // replicas of one trial (one device each with `trials_per_device`)
    let workers = crate::core::devices::trial_devices(&h.devices, h.preset.sweep.trials_per_device)
        .replicas();
    // (a study whose calibration stage chooses them has none until its calibrated line)
    let calibrated_sizes =
        h.calibration.is_some() && h.preset.calibrate.is_some_and(|c| c.batch_sizes);
    if h.batch_sizes.is_empty() && !calibrated_sizes {
        return Some("header: batch_sizes is empty".into());
    }
    if h.batch_sizes.len() > l::MAX_BATCH_SIZES {
        return Some(format!(
            "header: {} batch sizes is absurd (at most {})",
            h.batch_sizes.len(),
            l::MAX_BATCH_SIZES
        ));
    }
    if h.trials_per_batch == 0 || h.trials_per_batch > l::MAX_TRIALS_PER_BATCH {
        return Some(format!(
            "header: trials_per_batch {} must be in 1..={}",
            h.trials_per_batch,
            l::MAX_TRIALS_PER_BATCH
        ));
    }
    if h.concurrency == 0 || h.concurrency > l::MAX_CONCURRENCY {
        return Some(format!(
            "header: concurrency {} must be in 1..={}",
            h.concurrency,
            l::MAX_CONCURRENCY
        ));
    }
    if workers == 0 || workers > l::MAX_WORKERS {
        return Some(format!(
            "header: {workers} workers/devices must be in 1..={}",
            l::MAX_WORKERS
        ));
    }
    let t = &h.preset.workload.target;
    if !t.value.is_finite() {
        return Some(format!("header: target value {} is not finite", t.value));
    }
    if h.import.is_some() {
        // Imported logs carry a placeholder model; their target is in the source's units.
        return None;
    }
    for &b in &h.batch_sizes {
        if let Some(m) = l::batch_size_problem(&h.preset.workload, b, workers) {
            return Some(format!("header: {m}"));
        }
    }
    if let Some(problem) = l::check(&h.preset).into_iter().next() {
        let key: Vec<String> = problem
            .key
            .iter()
            .map(|k| match k {
                l::KeySeg::Key(k) => k.to_string(),
                l::KeySeg::Index(i) => format!("[{i}]"),
            })
            .collect();
        return Some(format!(
            "header: preset {}: {}",
            key.join(".").replace(".[", "["),
            problem.message
        ));
    }
    None
}

/// The first data file recorded in the header that is not what is on disk now (changed, gone,
/// or — a bundled file — not this build's): the message names the file and what changed.
/// Readers warn (on the header's line); `sweep --resume` refuses the log.
pub fn data_files_problem(h: &Header) -> Option<String> {
    h.data_files.iter().find_map(|rec| {
        crate::data::digest::changed(rec).map(|m| {
            format!(
                "{m}: the log's trials were measured on the data as it was (`sweep --resume` \
                 refuses this log)"
            )
        })
    })
}

/// Checks the trial lines of one log against its header, in file order.
#[derive(Clone, Debug)]
pub struct LogValidator {
    header: Header,
    /// Trial id → the line it was first seen on.
    seen: HashMap<u64, usize>,
    /// Search trials seen (the trials a repeat may re-run), by id.
    search: HashMap<u64, TrialSpec>,
    /// The first trial line that is not the trial its header's plan derives (line, message),
    /// and how many such lines there were.
    off_plan: Option<(usize, String)>,
    off_plan_lines: usize,
    /// A study with a calibration stage: its rounds' inputs (from the header as written) and the
    /// pilot trials seen, from which each next pilot and the calibrated study are re-derived.
    calibration: Option<crate::analysis::calibrate::Inputs>,
    pilots: Vec<TrialRecord>,
}

impl LogValidator {
    pub fn new(header: &Header) -> Self {
        LogValidator {
            header: header.clone(),
            seen: HashMap::new(),
            search: HashMap::new(),
            off_plan: None,
            off_plan_lines: 0,
            calibration: crate::analysis::calibrate::inputs_of_header(header),
            pilots: Vec::new(),
        }
    }

    /// The header trials are checked against now (a calibrated study's, after its line).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The calibrated study's line: re-derived from the pilots seen (a warning where it is not
    /// what they give); the trials after it are checked against the calibrated header.
    pub fn calibrated(&mut self, c: &crate::core::calibrate::Calibrated) -> Option<String> {
        use crate::analysis::calibrate::{next, Next};
        let Some(inp) = &self.calibration else {
            return Some(
                "a calibrated-study line in a log whose header has no calibration stage: ignored"
                    .into(),
            );
        };
        let warning = match next(inp, &self.pilots) {
            Next::Done(d) if approx_json_eq(&to_json(&*d), &to_json(c)) => None,
            Next::Done(_) => Some(
                "the calibrated study is not the one its pilot trials give (the line or a pilot \
                 was edited; `sweep --resume` refuses this log): read as logged"
                    .to_string(),
            ),
            _ => Some(
                "a calibrated-study line before the calibration's rounds were all logged (the \
                 log was edited; `sweep --resume` refuses it): read as logged"
                    .to_string(),
            ),
        };
        if let Some(w) = &warning {
            self.off_plan_lines += 1;
            if self.off_plan.is_none() {
                self.off_plan = Some((0, w.clone()));
            }
        }
        self.header = crate::analysis::calibrate::calibrated_header(&self.header, c);
        warning
    }

    /// A pilot trial of the calibration stage: the round its predecessors call for must hold it
    /// as logged. `Err`: refused; `Ok`: warnings.
    fn pilot(&mut self, line_no: usize, t: &mut TrialRecord) -> Result<Vec<String>, String> {
        use crate::analysis::calibrate::{next, Next};
        if let Some(first) = self.seen.get(&t.trial_id) {
            return Err(format!(
                "trial {} appears twice (first on line {first}): two processes wrote this log or \
                 it was edited; keep one copy of the line",
                t.trial_id
            ));
        }
        let (Some(inp), Some(mark)) = (&self.calibration, t.spec.calibrate) else {
            return Err(format!(
                "trial {} is a calibration (pilot) trial, but the header has no calibration stage \
                 or the trial no pilot mark",
                t.trial_id
            ));
        };
        let mut h = self.header.clone();
        h.preset.workload = crate::core::calibrate::workload_for(&inp.preset.workload, &mark);
        if let Some(m) = value_problem(&h, t) {
            return Err(m);
        }
        let mut warnings: Vec<String> = outcome_from_curve(&h, t).into_iter().collect();
        let planned = match next(inp, &self.pilots) {
            Next::Run(specs) => specs.into_iter().find(|s| s.trial_id == t.trial_id),
            _ => None,
        };
        let problem = match planned {
            None => Some(format!(
                "pilot trial {} is not in the calibration round its log's earlier pilots call for",
                t.trial_id
            )),
            Some(p) if !approx_json_eq(&to_json(&p), &to_json(&t.spec)) => Some(format!(
                "pilot trial {} is not the pilot its calibration round derives (batch size {} \
                 here, {} in the round; learning rate {} here, {})",
                t.trial_id,
                t.spec.batch_size,
                p.batch_size,
                t.spec.metaparams.learning_rate,
                p.metaparams.learning_rate
            )),
            Some(_) => None,
        };
        if let Some(m) = problem {
            let m = format!(
                "{m}; the header or this line was edited (`sweep --resume` refuses this log)"
            );
            self.off_plan_lines += 1;
            if self.off_plan.is_none() {
                self.off_plan = Some((line_no, m.clone()));
                warnings.push(m);
            }
        }
        self.seen.insert(t.trial_id, line_no);
        self.pilots.push(t.clone());
        Ok(warnings)
    }

    /// A validator that has already seen `trials` (a log read up to here, then followed).
    pub fn after(header: &Header, trials: &[TrialRecord]) -> Self {
        let mut v = LogValidator::new(header);
        for (i, t) in trials.iter().enumerate() {
            v.seen.entry(t.trial_id).or_insert(i + 2);
            if t.spec.is_search() {
                v.search.insert(t.trial_id, t.spec.clone());
            }
        }
        v
    }

    /// Checks trial line `line_no`, normalises its metaparameters to what ran and its outcome to
    /// what its evaluation curve shows. `Err`: the line is refused (the message, without the
    /// location); `Ok`: its warnings.
    pub fn trial(&mut self, line_no: usize, t: &mut TrialRecord) -> Result<Vec<String>, String> {
        if t.trial_id >= crate::core::calibrate::CALIBRATE_ID_BASE || t.spec.calibrate.is_some() {
            return self.pilot(line_no, t);
        }
        let h = &self.header;
        if let Some(m) = plan_problem(h, t, &self.seen) {
            return Err(m);
        }
        if let Some(m) = value_problem(h, t) {
            return Err(m);
        }
        let mut warnings: Vec<String> = outcome_from_curve(h, t).into_iter().collect();
        t.spec.metaparams =
            crate::workload::applied::as_applied(&h.preset.workload, &t.spec.metaparams);
        if let Some(m) = self.off_plan_problem(t) {
            self.off_plan_lines += 1;
            if self.off_plan.is_none() {
                self.off_plan = Some((line_no, m.clone()));
                warnings.push(m);
            }
        }
        self.seen.insert(t.trial_id, line_no);
        if t.spec.is_search() {
            self.search.insert(t.trial_id, t.spec.clone());
        }
        Ok(warnings)
    }

    /// The first trial line that is not the trial the header's plan derives: (its line, the
    /// message, without the location). Readers warn about it; `sweep --resume` refuses the log.
    pub fn off_plan(&self) -> Option<&(usize, String)> {
        self.off_plan.as_ref()
    }

    /// How many trial lines so far are not the trials the header's plan derives.
    pub fn off_plan_lines(&self) -> usize {
        self.off_plan_lines
    }

    /// A trial (of a log this tool wrote) that is not the one its header's plan puts at its id —
    /// the header's seed, batch sizes or preset, or the line's seed or metaparameters, were
    /// edited: the same rule `sweep --resume` applies (`core::plan::plan_difference`).
    fn off_plan_problem(&self, t: &TrialRecord) -> Option<String> {
        let h = &self.header;
        if h.import.is_some() {
            return None;
        }
        let base = match (t.spec.repeat_of, t.spec.confirm) {
            (Some(b), _) => self.search.get(&b),
            (None, Some(m)) => match self.search.get(&m.of) {
                Some(b) => Some(b),
                // a Slurm array task's confirm trial may re-run a peer task's search trial, logged
                // in another file: `sweep --resume` checks it against its peers' records
                None => return None,
            },
            (None, None) => None,
        };
        let diff = crate::core::plan::plan_difference(h, &t.spec, base)?;
        Some(format!(
            "trial {} is not the trial its header's plan derives (seed {}, batch sizes {:?}, the \
             recorded preset): {diff}; the header or this line was edited (`sweep --resume` \
             refuses this log)",
            t.trial_id, h.seed, h.batch_sizes
        ))
    }
}

/// A trial line that cannot belong to this log: a duplicate id (two writers, or an edit), or
/// (for logs this tool wrote) an id or batch size outside the header's plan.
fn plan_problem(h: &Header, t: &TrialRecord, seen: &HashMap<u64, usize>) -> Option<String> {
    if let Some(first) = seen.get(&t.trial_id) {
        return Some(format!(
            "trial {} appears twice (first on line {first}): two processes wrote this log or it \
             was edited; keep one copy of the line",
            t.trial_id
        ));
    }
    if h.import.is_some() {
        return None;
    }
    let planned = (h.batch_sizes.len() as u64).saturating_mul(h.trials_per_batch as u64);
    // --until adds search trials past the plan (up to its budget, default 4× the plan);
    // --repeats logs re-runs of each B's best trial with ids from REPEAT_ID_BASE; --widen logs
    // re-centred search trials with ids from WIDEN_ID_BASE (crate::core::widen).
    let adaptive = h.adaptive.as_ref();
    // (--until numbers its k-th trial at batch index i as k·|B| + i: one B can take the whole
    // budget, so ids stay below |B| × budget.)
    let search_budget = match adaptive {
        Some(ad) if ad.until.is_some() => ad
            .max_trials
            .map(|m| m as u64)
            .unwrap_or(planned.saturating_mul(4))
            .max(planned)
            .saturating_mul(h.batch_sizes.len() as u64),
        _ => planned,
    };
    let base = crate::core::widen::REPEAT_ID_BASE;
    let confirm_base = crate::core::confirm::CONFIRM_ID_BASE;
    if t.trial_id >= confirm_base || t.spec.confirm.is_some() {
        // the confirm stage: its ids encode batch index, rank and seed
        let c = crate::core::confirm::ConfirmId::decode(t.trial_id);
        let ok = match (h.preset.sweep.confirm, c, t.spec.confirm) {
            (Some(_), Some(c), Some(m)) => {
                m.rank == c.rank
                    && m.seed == c.seed
                    && t.spec.repeat_of.is_none()
                    && h.batch_sizes.get(c.batch_index) == Some(&t.spec.batch_size)
            }
            _ => false,
        };
        if !ok {
            return Some(format!(
                "trial id {} is a confirm trial that the header's plan does not allow (confirm {}, \
                 batch sizes {:?})",
                t.trial_id,
                h.preset
                    .sweep
                    .confirm
                    .map_or("off".to_string(), |p| p.to_string()),
                h.batch_sizes
            ));
        }
    } else if (crate::core::widen::WIDEN_ID_BASE..base).contains(&t.trial_id) {
        let rounds = adaptive.and_then(|ad| ad.widen).unwrap_or(0) as i32;
        let w = crate::core::widen::WidenId::decode(t.trial_id);
        let ok = w.is_some_and(|w| {
            t.spec.is_search()
                && w.shift.rounds() <= rounds
                && h.batch_sizes.get(w.batch_index) == Some(&t.spec.batch_size)
        });
        if !ok {
            return Some(format!(
                "trial id {} is a re-centred (--widen) id that the header's plan does not allow \
                 (widen {rounds}, batch sizes {:?})",
                t.trial_id, h.batch_sizes
            ));
        }
    } else if t.trial_id >= base {
        let repeats = adaptive.map_or(1, |ad| ad.repeats) as u64;
        let allowed = (h.batch_sizes.len() as u64).saturating_mul(repeats.saturating_sub(1));
        if t.spec.repeat_of.is_none() || t.trial_id - base >= allowed {
            return Some(format!(
                "trial id {} is a repeat id, but the header plans {} repeat(s) per batch size",
                t.trial_id,
                repeats.saturating_sub(1)
            ));
        }
    } else if t.trial_id >= search_budget {
        return Some(format!(
            "trial id {} is outside the header's plan of {search_budget} trials",
            t.trial_id
        ));
    }
    if !h.batch_sizes.contains(&t.spec.batch_size) {
        return Some(format!(
            "trial {} has batch size {}, which is not among the header's batch sizes",
            t.trial_id, t.spec.batch_size
        ));
    }
    None
}

/// The most steps a trial of this workload can apply: its step budget, rounded up to the
/// evaluation it stops at (the NQM jumps from evaluation to evaluation).
pub fn max_trial_steps(h: &Header) -> u64 {
    let w = &h.preset.workload;
    w.next_eval(w.step_budget).max(w.step_budget)
}

/// A value no run can produce (an edited or corrupted line): the first one found.
fn value_problem(h: &Header, t: &TrialRecord) -> Option<String> {
    let id = t.trial_id;
    let m = &t.spec.metaparams;
    let unit = |v: f64| v.is_finite() && (0.0..1.0).contains(&v);
    let checks: [(bool, &str, f64, &str); 4] = [
        (
            m.learning_rate.is_finite() && m.learning_rate > 0.0,
            "learning rate",
            m.learning_rate,
            "finite and > 0",
        ),
        (unit(m.momentum), "momentum", m.momentum, "in [0, 1)"),
        (unit(m.beta2), "beta2", m.beta2, "in [0, 1)"),
        (
            m.epsilon.is_finite() && m.epsilon >= 0.0,
            "epsilon",
            m.epsilon,
            "finite and ≥ 0",
        ),
    ];
    if let Some((_, name, v, need)) = checks.iter().find(|c| !c.0) {
        return Some(format!(
            "trial {id}: {name} {} is impossible (a trial's {name} is {need})",
            num(*v)
        ));
    }
    if let Decay::Linear { alpha, .. } = m.schedule.decay {
        if !(alpha.is_finite() && (0.0..=1.0).contains(&alpha)) {
            return Some(format!(
                "trial {id}: decay alpha {} is impossible (it is in [0, 1])",
                num(alpha)
            ));
        }
    }
    steps_problem(h, t)
        .or_else(|| measurement_problem(h, t))
        .or_else(|| super::validate_transfer::transfer_problem(t))
}

/// Steps: the trial's, its outcome's and its evaluations' against the budget and each other.
fn steps_problem(h: &Header, t: &TrialRecord) -> Option<String> {
    let id = t.trial_id;
    let o = &t.outcome;
    let cap = max_trial_steps(h);
    let w = &h.preset.workload;
    if o.steps > cap {
        return Some(format!(
            "trial {id}: {} steps is more than any trial of this workload runs (step_budget {}, \
             so at most {cap})",
            o.steps, w.step_budget
        ));
    }
    let (what, step) = match o.outcome {
        Outcome::Reached { step } => ("reached the target", step),
        Outcome::Diverged { step } => ("diverged", step),
        Outcome::Cancelled { step } => ("was cancelled", step),
        Outcome::Oom { step, batch_size } => {
            if batch_size != t.spec.batch_size {
                return Some(format!(
                    "trial {id}: ran out of memory at batch size {batch_size}, but it ran at {}",
                    t.spec.batch_size
                ));
            }
            ("ran out of memory", step)
        }
        Outcome::NotReached { budget, .. } => ("had a budget of", budget),
    };
    // An import's outcome step is the source's measurement step; ours is the step count.
    let limit = if h.import.is_some() || matches!(o.outcome, Outcome::NotReached { .. }) {
        cap
    } else {
        o.steps
    };
    if step > limit {
        return Some(format!(
            "trial {id}: its outcome says it {what} step {step}, past the {limit} steps it ran"
        ));
    }
    let mut last = None;
    for e in &o.evals {
        if e.step > cap || last.is_some_and(|l| e.step <= l) {
            return Some(format!(
                "trial {id}: evaluation step {} is out of order or past the budget ({cap})",
                e.step
            ));
        }
        last = Some(e.step);
    }
    None
}

/// Times, rates and metrics: finite and in their ranges.
fn measurement_problem(h: &Header, t: &TrialRecord) -> Option<String> {
    let id = t.trial_id;
    let o = &t.outcome;
    let tp = &o.throughput;
    let seconds = [
        ("wall_s", o.wall_s),
        ("throughput.step_s", tp.step_s),
        ("throughput.compute_s", tp.compute_s),
        ("throughput.exchange_s", tp.exchange_s),
    ];
    for (name, v) in seconds {
        if !(v.is_finite() && (0.0..=MAX_WALL_S).contains(&v)) {
            return Some(format!(
                "trial {id}: {name} {} is impossible (seconds, in [0, {MAX_WALL_S:e}])",
                num(v)
            ));
        }
    }
    if !(tp.examples_per_s.is_finite() && tp.examples_per_s >= 0.0) {
        return Some(format!(
            "trial {id}: throughput.examples_per_s {} is impossible",
            num(tp.examples_per_s)
        ));
    }
    if !(o.final_loss_scale.is_finite() && o.final_loss_scale > 0.0) {
        return Some(format!(
            "trial {id}: final_loss_scale {} is impossible (finite and > 0)",
            num(o.final_loss_scale)
        ));
    }
    let metric = h.preset.workload.target.metric;
    let (hi, range) = match metric {
        Metric::ValError => (1.0, "an error rate, in [0, 1]".to_string()),
        Metric::TransferAcc => (1.0, "an accuracy, in [0, 1]".to_string()),
        _ => (MAX_LOSS, format!("in [0, {MAX_LOSS:e}]")),
    };
    for e in &o.evals {
        if !(e.metric.is_finite() && (0.0..=hi).contains(&e.metric)) {
            return Some(format!(
                "trial {id}: {} {} at step {} is impossible ({range})",
                metric.name(),
                num(e.metric),
                e.step
            ));
        }
        if !(e.train_loss.is_finite() && (0.0..=MAX_LOSS).contains(&e.train_loss)) {
            return Some(format!(
                "trial {id}: training loss {} at step {} is impossible (in [0, {MAX_LOSS:e}])",
                num(e.train_loss),
                e.step
            ));
        }
    }
    None
}

/// A stored outcome that its own evaluation curve contradicts (an edited log): the curve is the
/// evidence, so the trial is read as the curve shows it — reached at the first evaluation that
/// meets the target (the trainer stops there), or not reached within the steps it ran when no
/// evaluation meets it — and the warning names the trial and both readings. Every reader goes
/// through here, so report, compare, export, the TUI and resume all see the curve's outcome.
fn outcome_from_curve(h: &Header, t: &mut TrialRecord) -> Option<String> {
    if h.import.is_some() {
        return None;
    }
    let w = &h.preset.workload;
    let o = &t.outcome;
    let id = t.trial_id;
    let first = crate::analysis::steps::first_meeting(&o.evals, &w.target);
    let is_eval = |s: u64| o.evals.iter().any(|e| e.step == s);
    let (stored, read) = match (o.outcome.clone(), first) {
        (Outcome::Reached { step }, Some(f)) if step == f => return None,
        (Outcome::Reached { step }, Some(f)) => (
            format!(
                "the target was reached at step {step}{}, but its eval curve first meets it at \
                 step {f}",
                if is_eval(step) {
                    ""
                } else {
                    " (not one of its evaluation steps)"
                }
            ),
            Outcome::Reached { step: f },
        ),
        (Outcome::Reached { step }, None) => {
            // Ran `steps` without an evaluation meeting the target: not reached, cut before its
            // budget (early stopping) if it stopped short of it.
            let budget = w.budget_for(t.spec.batch_size);
            let read = Outcome::NotReached {
                budget: o.steps,
                early_stopped: o.steps < budget,
            };
            let why = if o.evals.is_empty() {
                "the trial has no evaluations to show it".to_string()
            } else {
                format!(
                    "no evaluation in its curve meets the target {}",
                    w.target.value
                )
            };
            (
                format!("the target was reached at step {step}, but {why}"),
                read,
            )
        }
        (stored @ (Outcome::NotReached { .. } | Outcome::Diverged { .. }), Some(f))
        | (stored @ Outcome::Cancelled { .. }, Some(f)) => {
            let said = match stored {
                Outcome::NotReached { .. } => "not reached".to_string(),
                Outcome::Diverged { step } => format!("diverged at step {step}"),
                Outcome::Cancelled { step } => format!("cancelled at step {step}"),
                _ => unreachable!("matched above"),
            };
            (
                format!(
                    "{said}, but its eval curve meets the target at step {f} (a trial stops there)"
                ),
                Outcome::Reached { step: f },
            )
        }
        _ => return None,
    };
    let read_as = match &read {
        Outcome::Reached { step } => format!("reached at step {step}"),
        Outcome::NotReached { budget, .. } => format!("not reached in its {budget} steps"),
        other => other.label().to_string(),
    };
    t.outcome.outcome = read;
    Some(format!(
        "trial {id}: stored outcome says {stored}: read as {read_as}, as the curve shows \
         (edited log?)"
    ))
}

fn approx_json_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    crate::core::plan::approx_json_eq(a, b)
}

fn to_json<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests;
