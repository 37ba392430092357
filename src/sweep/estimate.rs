//! The one wall-time estimate of a sweep: what `sweep --dry-run` prints, what the warnings
//! before a sweep ([`long_sweep_warning`], [`gpu_scale_warning`]) are decided on, Setup's `e` and
//! its shown estimate, and Live's ETA.
//!
//! **What runs** (`work::Work`): every stage the plan runs — the calibration stage's pilots
//! while it runs (its reference scan exactly: its trials and budget at B_ref; the rounds its
//! rules may still place at most; the study they choose is known once they did), the search,
//! the confirm stage's first blocks, its `--until` / `confirm_until` rounds up to the trial
//! budget, `--until` search trials, `--widen` groups and `--repeats` — as the jobs the scheduler
//! starts (fused groups of the resolved size, confirm blocks whole), each trial to its full step
//! budget with its evaluations, less what is logged or running.
//!
//! **What it costs** (`cost::CostModel`): slot-seconds from the layout calibration — a step at B
//! takes t(B)·c/speedup(c) with c trials at once, a fused group of m trials m·t/gain(m), an
//! evaluation the validation set at half a training step per example, plus the per-trial
//! overhead the calibration measured.
//!
//! **The bound** ("at most"): the side-by-side jobs (search, first confirm blocks, running
//! trials) by Graham's list-scheduling bound, W/c + (1 − 1/c)·L (W their slot-seconds, L the
//! longest chain of jobs that wait for each other: a batch size's search trials under early
//! stopping, then its confirm blocks); the jobs placed in waves (a wave starts when nothing runs: `--until` rounds,
//! repeats, `--widen`) one after another; the calibration's rounds one after another, each by
//! list scheduling. Under the model no plan takes longer: [`Estimate::at_most_s`] holds for every
//! way the trials can end (every trial to its budget is the slowest), as the unit tests check.
//!
//! **The expectation** (a range, never one number): only from measured trials — this sweep's
//! finished trials (the live ETA: measured seconds per trial at each B and stage replace the
//! model as they come) or earlier complete runs of the same study (`--dry-run`, Setup). How far
//! a trial gets before the target or early stopping ends it is what the sweep measures, so the
//! model alone gives only the bound.

mod cost;
mod work;

use std::collections::BTreeMap;

pub use cost::{CostModel, Measured, Sample};
pub use work::{Job, StageTrials, Work};

use super::layout::{self, Calibration, Layout};
use super::SweepConfig;
use crate::core::record::TrialRecord;
use crate::core::runner::TrialRunner;
use crate::core::trial::TrialSpec;

/// The expectation's range around what the measured trials give: ×0.8 … ×1.25 (measured on
/// the bundled presets: docs/estimates.md).
pub const EXPECTED_LOW: f64 = 0.8;
pub const EXPECTED_HIGH: f64 = 1.25;

/// A CPU sweep says so before it starts (GPU-scale presets say more: [`gpu_scale_warning`])
/// when one of its trials may take this long (its first results wait that long)…
pub const LONG_TRIAL_S: f64 = 600.0;
/// … or the whole sweep is expected to take this long (at most this long where no earlier run
/// says what to expect).
pub const LONG_SWEEP_S: f64 = 3600.0;

/// A sweep's wall time still to come: its bound, and a range where measured trials say what to
/// expect.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Trials still to run per stage (sure and at most), the calibration's pilots apart.
    pub trials: Vec<StageTrials>,
    /// The calibration stage while it runs: its pilots and their bound.
    pub pilots: Option<PilotEstimate>,
    /// The study after the calibration is known (false while the calibration chooses it).
    pub study_known: bool,
    /// Seconds at most, every stage counted (None while the study is not known).
    pub at_most_s: Option<f64>,
    /// Seconds at most of what the plan is sure to run (the optional `--until` rounds and
    /// `--widen` groups left out): what the warning weighs where nothing measured gives an
    /// expectation.
    pub sure_at_most_s: Option<f64>,
    /// Expected seconds, low and high (None: nothing measured to expect from).
    pub expected_s: Option<(f64, f64)>,
    /// What the expectation is from ("12 finished trials", "2 earlier runs").
    pub basis: String,
    /// Trials or fused groups at once.
    pub concurrency: usize,
    /// Trials of a batch size per fused group at most.
    pub fuse: usize,
    /// The longest single job at its full budget: how long a first result may wait.
    pub longest_trial_s: f64,
}

/// The calibration stage's part of an [`Estimate`].
#[derive(Clone, Debug, PartialEq)]
pub struct PilotEstimate {
    /// The reference scan while it is to run: trials, steps each, B_ref, seconds.
    pub scan: Option<(usize, u64, usize, f64)>,
    /// Pilot trials the current round still runs, and at most in all.
    pub now: usize,
    pub most: usize,
    /// Seconds of the current round at most, and of every round still to come at most.
    pub round_s: f64,
    pub at_most_s: f64,
    /// The run's wall-time budget the calibration sizes the study to (None: not sized).
    pub sized_s: Option<f64>,
}

/// Seconds a job still holds its slot at its full budget.
fn bound_s(model: &CostModel, work: &Work, j: &Job) -> f64 {
    let s = match j.batch_size {
        Some(b) => model.group_s(b, j.members, j.steps, j.evals),
        // any B: the costliest, with the least gain a group may have
        None => work
            .budgets
            .iter()
            .map(|&(b, steps, evals)| model.group_s(b, 1, steps, evals) / model.least_gain())
            .fold(0.0, f64::max),
    };
    (s - j.ran_s).max(0.0)
}

/// Graham's bound on list scheduling `jobs` (costs `cost`) on `slots`: W/slots + (1 − 1/slots)·L,
/// W their total and L the longest chain (a chain's serial jobs one after another, then its
/// longest other job). While a slot idles every job that may start runs, so the idle time is
/// covered by one chain.
fn list_bound(jobs: &[Job], cost: &dyn Fn(&Job) -> f64, slots: usize) -> f64 {
    let mut chains: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    let mut total = 0.0;
    for j in jobs {
        let c = cost(j);
        total += c;
        let e = chains.entry(j.chain).or_default();
        if j.serial {
            e.0 += c;
        } else {
            e.1 = e.1.max(c);
        }
    }
    let longest = chains.values().map(|(s, m)| s + m).fold(0.0, f64::max);
    let m = slots.max(1) as f64;
    total / m + (1.0 - 1.0 / m) * longest
}

impl Estimate {
    /// The estimate of `work` under `model`, its expectation from `measured` (empty: none).
    pub fn of(work: &Work, model: &CostModel, measured: &Measured) -> Estimate {
        let slots = model.slots.max(1);
        let cost = |j: &Job| bound_s(model, work, j);
        let pilots = work.pilots.as_ref().map(|p| {
            let rounds: Vec<f64> = p
                .rounds
                .iter()
                .map(|r| list_bound(r, &cost, slots))
                .collect();
            PilotEstimate {
                scan: p.scan.map(|(n, steps, b)| (n, steps, b, rounds[0])),
                now: p.now,
                most: p.most,
                round_s: rounds[0],
                at_most_s: rounds.iter().sum(),
                sized_s: p.sized_s,
            }
        });
        let side = list_bound(&work.side, &cost, slots);
        let waved: f64 = work.waved.iter().map(cost).sum();
        let longest_trial_s = work
            .side
            .iter()
            .chain(&work.waved)
            .chain(work.pilots.iter().flat_map(|p| p.rounds.iter().flatten()))
            .map(cost)
            .fold(0.0, f64::max);
        let at_most_s = work.study_known.then_some(side + waved);
        let sure: Vec<Job> = work.side.iter().filter(|j| !j.optional).copied().collect();
        let sure_waved: f64 = work.waved.iter().filter(|j| !j.optional).map(cost).sum();
        let sure_at_most_s = work
            .study_known
            .then(|| list_bound(&sure, &cost, slots) + sure_waved);
        let raw = at_most_s.and_then(|_| expectation(work, model, measured));
        let expected_s = raw
            .zip(at_most_s)
            .map(|((lo, hi), most)| (lo.min(most), hi.min(most)));
        let mut basis = measured.basis.clone();
        if let Some(((lo, _), most)) = raw.zip(at_most_s).filter(|((lo, _), most)| lo > most) {
            // measured trials slower than the model: the machine is busier than when its
            // calibration was measured, and the bound does not hold
            basis.push_str(&format!(
                "; they ran slower than the layout calibration says ({} at least against the bound's {}): \
                 the machine is busier than when it was measured (delete \
                 <runs-dir>/layout-calibration.json to measure it again)",
                human_s(lo),
                human_s(most)
            ));
        }
        Estimate {
            trials: work.trials.clone(),
            pilots,
            study_known: work.study_known,
            at_most_s,
            sure_at_most_s,
            expected_s,
            basis,
            concurrency: slots,
            fuse: model.fuse,
            longest_trial_s,
        }
    }

    /// The expectation from earlier complete runs of the same study (their wall times): their
    /// range, widened by ×0.8 … ×1.25, within the bound.
    pub fn with_earlier(mut self, walls: &[f64]) -> Estimate {
        let walls: Vec<f64> = walls
            .iter()
            .copied()
            .filter(|w| w.is_finite() && *w > 0.0)
            .collect();
        if walls.is_empty() || !self.study_known {
            return self;
        }
        let lo = walls.iter().copied().fold(f64::INFINITY, f64::min) * EXPECTED_LOW;
        let hi = walls.iter().copied().fold(0.0, f64::max) * EXPECTED_HIGH;
        let most = self.at_most_s.unwrap_or(f64::INFINITY);
        self.expected_s = Some((lo.min(most), hi.min(most)));
        self.basis = format!(
            "{} earlier run{}",
            walls.len(),
            if walls.len() == 1 { "" } else { "s" }
        );
        self
    }

    /// Trials still to run at most (pilots included).
    pub fn most_trials(&self) -> usize {
        self.trials.iter().map(|t| t.most).sum::<usize>()
            + self.pilots.as_ref().map_or(0, |p| p.most)
    }

    /// "search 36, confirm 90 (+ up to 240 more)".
    pub fn trials_text(&self) -> String {
        let mut parts: Vec<String> = self
            .trials
            .iter()
            .filter(|t| t.most > 0)
            .map(|t| {
                if t.most > t.sure {
                    format!(
                        "{} {} (+ up to {} more)",
                        t.stage.name(),
                        t.sure,
                        t.most - t.sure
                    )
                } else {
                    format!("{} {}", t.stage.name(), t.sure)
                }
            })
            .collect();
        if parts.is_empty() {
            parts.push("nothing left".into());
        }
        parts.join(", ")
    }

    /// "2 at once, fused groups of up to 6".
    fn layout_text(&self) -> String {
        let fused = if self.fuse > 1 {
            format!(", fused groups of up to {}", self.fuse)
        } else {
            String::new()
        };
        format!("{} at once{fused}", self.concurrency)
    }

    /// "expected 1 min 40 s – 2 min 30 s (from 2 earlier runs)", "expected ≈ 42 s (…)" where
    /// both ends round alike.
    pub fn expected_text(&self) -> Option<String> {
        self.expected_s.map(|(lo, hi)| {
            let range = if human_s(lo) == human_s(hi) {
                format!("≈ {}", human_s(hi))
            } else {
                format!("{} – {}", human_s(lo), human_s(hi))
            };
            format!("expected {range} (from {})", self.basis)
        })
    }

    /// The calibration stage in words: "calibration stage first: reference scan 8 trials ×
    /// 203 steps at B = 64 (at most 4 s), the rounds after it at most 3 min 10 s; the study:
    /// known once the calibration chose it".
    pub fn pilots_text(&self) -> Option<String> {
        let p = self.pilots.as_ref()?;
        let now = match p.scan {
            Some((n, steps, b, s)) => format!(
                "reference scan {n} trials × {steps} steps at B = {b} (at most {})",
                human_s(s)
            ),
            None => format!(
                "its current round {} pilot trial{} (at most {})",
                p.now,
                if p.now == 1 { "" } else { "s" },
                human_s(p.round_s)
            ),
        };
        let study = match p.sized_s {
            Some(s) => format!(
                "the study: chosen from the pilots and sized to a {} run from their speed \
                 (docs/calibration.md)",
                human_s(s)
            ),
            None => "the study: known once the calibration chose it".into(),
        };
        Some(format!(
            "calibration stage first: {now}, then the batch ladder (at most {} more pilot \
             trials, each stopping at the target within 1.5× the steps the pilot before it \
             predicts); {study}",
            p.most.saturating_sub(p.now)
        ))
    }

    /// One line: "at most 9 min 12 s (126 trials: search 36, confirm 90; 2 at once, fused groups
    /// of up to 6); expected 1 min 40 s – 2 min 30 s (from 2 earlier runs)".
    pub fn line(&self) -> String {
        if let Some(p) = self.pilots_text() {
            return p;
        }
        let Some(most) = self.at_most_s else {
            return "not known: the calibration stage did not choose a study".into();
        };
        let n = self.most_trials();
        let mut s = format!(
            "at most {} ({n} trial{}: {}; {}; every trial to its full budget)",
            human_s(most),
            if n == 1 { "" } else { "s" },
            self.trials_text(),
            self.layout_text()
        );
        match self.expected_text() {
            Some(e) => s.push_str(&format!("; {e}")),
            None => s.push_str(
                "; expected: known once trials finish (they stop at the target or early, so \
                 most take far less)",
            ),
        }
        s
    }

    /// One trial or the whole sweep may take long ([`LONG_TRIAL_S`], [`LONG_SWEEP_S`]): the
    /// expected time's high end where measured trials give one, else the bound of what the
    /// plan is sure to run (the `--until` rounds it may add are not weighed: a sweep whose
    /// rounds could run for hours but stops in seconds is not called long).
    pub fn is_long(&self) -> bool {
        // a calibration that sizes the study aims the whole run at its budget (the pilots'
        // bounds — every pilot to its greatest budget — say nothing of what they run: each
        // stops at the target)
        if let Some(budget) = self.pilots.as_ref().and_then(|p| p.sized_s) {
            return budget >= LONG_SWEEP_S;
        }
        let whole = match (self.expected_s, self.sure_at_most_s) {
            (Some((_, hi)), _) => hi,
            (None, Some(most)) => most,
            (None, None) => self.pilots.as_ref().map_or(0.0, |p| p.at_most_s),
        };
        self.longest_trial_s >= LONG_TRIAL_S || whole >= LONG_SWEEP_S
    }

    /// The live ETA in words: "1m 40s–2m 30s" (expected), "≤ 9m 12s" (the bound only),
    /// "calibrating" while the calibration chooses the study.
    pub fn eta_text(&self) -> String {
        match (self.expected_s, self.at_most_s, &self.pilots) {
            (Some((lo, hi)), _, _) => {
                if short_s(lo) == short_s(hi) {
                    format!("≈ {}", short_s(hi))
                } else {
                    format!("{}–{}", short_s(lo), short_s(hi))
                }
            }
            (None, Some(most), _) => format!("≤ {}", short_s(most)),
            (None, None, Some(p)) => format!("calibrating, round ≤ {}", short_s(p.round_s)),
            _ => "–".into(),
        }
    }
}

/// The expected range of `work` from `measured` (None: a job nothing measured says anything
/// about, or nothing measured).
fn expectation(work: &Work, model: &CostModel, measured: &Measured) -> Option<(f64, f64)> {
    if measured.is_empty() {
        return None;
    }
    let full = |b: usize| {
        work.budgets
            .iter()
            .find(|p| p.0 == b)
            .map_or(0.0, |&(b, steps, evals)| model.group_s(b, 1, steps, evals))
    };
    let per = |j: &Job| -> Option<f64> {
        let one = match j.batch_size {
            Some(b) => measured.per_trial(b, j.stage, &full)?,
            None => work
                .budgets
                .iter()
                .filter_map(|&(b, _, _)| measured.per_trial(b, j.stage, &full))
                .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))?,
        };
        Some((one * j.members as f64 - j.ran_s).max(0.0))
    };
    let (mut sure, mut all, mut tail) = (0.0, 0.0, 0.0f64);
    for j in work.side.iter().chain(&work.waved) {
        let e = match per(j) {
            Some(e) => e,
            // an optional job nothing says anything about: not expected
            None if j.optional => continue,
            None => return None,
        };
        if !j.optional {
            sure += e;
        }
        all += e;
        tail = tail.max(e);
    }
    let slots = model.slots.max(1) as f64;
    Some((
        EXPECTED_LOW * sure / slots,
        EXPECTED_HIGH * all / slots + tail,
    ))
}

/// "4 min 10 s", "42 s", "2 h 1 min".
pub fn human_s(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// "4m 10s", "42s", "27m" (from 10 min on, whole minutes), "2h 1m" (the live panel's width).
pub fn short_s(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=599 => format!("{}m {}s", s / 60, s % 60),
        600..=3599 => format!("{}m", s / 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

/// The cost model of `cfg` from its workload's calibration `cal`: the layout it runs with (the
/// calibration's concurrency when the preset leaves it out), its fused groups (the
/// configuration's, or the calibration's choice when automatic).
pub fn model_for(cfg: &SweepConfig, cal: &Calibration) -> CostModel {
    let slots = if cfg.preset.sweep.auto_concurrency && layout::calibrated(cfg) {
        cal.concurrency
    } else {
        cfg.concurrency
    };
    let threads =
        layout::threads_per_trial(&cfg.devices, slots, layout::cores()).unwrap_or(layout::cores());
    let fuse = match cfg.fuse.members() {
        Some(k) => k,
        None => layout::cached_fuse(cfg, cal, threads),
    };
    CostModel::of_calibration(
        cal,
        slots,
        threads,
        fuse,
        cal.n_val,
        crate::train::TrainOptions::default().eval_batch,
    )
}

/// The calibration stage's inputs of `cfg` while it has one to run (its facts measured now:
/// the dataset is loaded, cached).
pub fn calibrating(cfg: &SweepConfig) -> Option<crate::analysis::calibrate::Inputs> {
    if !cfg.preset.calibrate.is_some_and(|c| c.any()) {
        return None;
    }
    let mut h = super::scheduler::make_header(cfg, "");
    h.calibration =
        super::calibrate::facts(&cfg.preset.workload, cfg.trial_devices().replicas()).ok();
    crate::analysis::calibrate::inputs_of_header(&h)
}

/// The estimate of `cfg` before it runs, from its workload's calibration `cal`, after the
/// trials `done` (a resumed log's; empty for a new sweep): its expectation from those trials
/// where there are some, else from the earlier complete runs' wall times `earlier`.
pub fn before_run(
    cfg: &SweepConfig,
    cal: &Calibration,
    earlier: &[f64],
    done: &[TrialRecord],
) -> Estimate {
    let model = model_for(cfg, cal);
    let inputs = calibrating(cfg);
    let work = Work::of(cfg, model.fuse, inputs.as_ref(), done, &[]);
    if done.is_empty() {
        Estimate::of(&work, &model, &Measured::default()).with_earlier(earlier)
    } else {
        Estimate::of(&work, &model, &Measured::of(done, &cfg.preset.workload))
    }
}

/// What is left of a sweep of `cfg` after `done` with `running` (trial, seconds it ran):
/// `model` where a calibration is at hand (else one from the finished trials), the
/// expectation from the finished trials of this session (`session`).
pub fn remaining(
    cfg: &SweepConfig,
    model: Option<&CostModel>,
    calibrating: Option<&crate::analysis::calibrate::Inputs>,
    done: &[TrialRecord],
    session: &[TrialRecord],
    running: &[(TrialSpec, f64)],
) -> Option<Estimate> {
    let measured = Measured::of(session, &cfg.preset.workload);
    let fuse = cfg.fuse.members().unwrap_or(1);
    let own;
    let model = match model {
        Some(m) => m,
        None => {
            own = CostModel::of_measured(&measured, cfg.concurrency, fuse)?;
            &own
        }
    };
    let work = Work::of(cfg, model.fuse, calibrating, done, running);
    Some(Estimate::of(&work, model, &measured))
}

/// For `sweep --dry-run`: the layout the scheduler would choose and the sweep's estimate
/// (`fuse`: the fused group size it resolved; `done`: a resumed log's trials, not counted
/// again), with the expectation of earlier complete runs of the same study in the runs
/// directory (of `done` when resuming). May calibrate (a few seconds, once per workload; then
/// cached). A CPU sweep only: None for NQM and GPU sweeps (no calibration exists for them).
pub fn sweep_estimate(
    cfg: &SweepConfig,
    runner: &dyn TrialRunner,
    fuse: Option<usize>,
    done: &[TrialRecord],
) -> anyhow::Result<(Layout, Option<Estimate>)> {
    let layout = layout::resolve(cfg, runner)?;
    if !cfg.devices.is_cpu() || cfg.preset.workload.closed_form() {
        return Ok((layout, None));
    }
    let (cal, _) = layout::calibration(cfg, runner)?;
    let mut cfg = cfg.clone();
    cfg.concurrency = layout.concurrency;
    cfg.preset.sweep.auto_concurrency = false;
    if let Some(k) = fuse {
        cfg.fuse = crate::workload::spec::Fuse::of_members(k);
    }
    let earlier = earlier_walls(&cfg);
    Ok((layout, Some(before_run(&cfg, &cal, &earlier, done))))
}

/// The estimate of `cfg` from already-read calibrations (`layout::read_cache`) and the earlier
/// runs' wall times `earlier`: no IO, no measurement (Setup). None without a calibration of its
/// workload on this machine, and for NQM and GPU sweeps.
pub fn estimate_from(
    cfg: &SweepConfig,
    cals: &BTreeMap<String, Calibration>,
    earlier: &[f64],
) -> Option<Estimate> {
    if !cfg.devices.is_cpu() || cfg.preset.workload.closed_form() {
        return None;
    }
    let key = layout::calibration_key(&cfg.preset.workload, cfg.precision, layout::cores());
    let cal = cals.get(&key)?;
    Some(before_run(cfg, cal, earlier, &[]))
}

/// The wall times of the earlier complete runs of `cfg`'s study in its runs directory: the
/// same preset, batch sizes, trials, stages and devices.
pub fn earlier_walls(cfg: &SweepConfig) -> Vec<f64> {
    let Ok(dir) = std::fs::read_dir(&cfg.runs_dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let Ok(log) = crate::runlog::read_run_log(&p) else {
            continue;
        };
        let h = &log.header;
        let same = h.preset.name == cfg.preset.name
            && h.preset.workload == cfg.preset.workload
            && h.preset.sweep.confirm == cfg.preset.sweep.confirm
            && h.batch_sizes == cfg.batch_sizes
            && h.trials_per_batch == cfg.trials_per_batch
            && h.devices == cfg.devices
            && h.adaptive == cfg.adaptive()
            && h.calibration.is_none();
        if let Some(s) = log.summary.as_ref().filter(|s| same && s.complete) {
            out.push(s.wall_s);
        }
    }
    out
}

/// The warning for a CPU sweep that may take long ([`Estimate::is_long`]); None for shorter
/// sweeps, GPU-scale presets (they have their own warning) and other devices.
pub fn long_sweep_warning(cfg: &SweepConfig, est: &Estimate) -> Option<String> {
    if cfg.preset.sweep.gpu_scale || !cfg.devices.is_cpu() || !est.is_long() {
        return None;
    }
    Some(format!(
        "this sweep may take long: {}; one trial alone up to {} (`--dry-run` shows the plan; \
         fewer --trials or --batch-sizes, or a smaller step_budget or model, shorten it; ctrl-c \
         stops it keeping every finished trial)",
        est.line(),
        human_s(est.longest_trial_s)
    ))
}

/// The warning for a GPU-scale preset (`[sweep] gpu_scale`) swept on the CPU, with its
/// estimate when one is known; None for other presets and for GPU sweeps.
pub fn gpu_scale_warning(cfg: &SweepConfig, est: Option<&Estimate>) -> Option<String> {
    if !cfg.preset.sweep.gpu_scale || !cfg.devices.is_cpu() {
        return None;
    }
    let time = match est {
        Some(e) => format!("estimated {}", e.line()),
        None => format!(
            "no estimate yet (`scaling-lab sweep {} --dry-run` calibrates it, once)",
            cfg.preset.name
        ),
    };
    Some(format!(
        "{} is a GPU-scale preset running on the CPU: {time}; build with --features cuda and pass --devices cuda:0 to run it at its scale",
        cfg.preset.name
    ))
}

#[cfg(test)]
mod tests;
