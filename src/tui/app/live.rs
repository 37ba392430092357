//! The state of one sweep as Live shows it: run by this TUI (folded from engine events) or read
//! from a run log (folded from its lines). Both end in the same fields, so every view draws them
//! the same way. The numbers have one source: the cached `Report` (`report::build` over the run's
//! header and records, the same entry `scaling-lab report` uses). Folding never analyses: a
//! change of the data bumps `generation`, and the analysis runs off the UI task
//! (`super::analysis`: one request in flight, the latest data wins) and lands as a message; until
//! it lands the chart and the per-B table draw the raw per-B points of the current data
//! (`provisional`, cheap) with the last analysis's fit and regimes, marked "updating". When the
//! sweep run here ends, the report of the joined sweep (`report::of_sweep`) replaces it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use super::analysis::{AnalysisFor, AnalysisInputs, AnalysisRequest, Analyzed, Rendered};
use super::{History, LiveView, MAX_CURVES, RECENT_CURVES};
use crate::core::analysis::{Analysis, Regime};
use crate::core::events::{PlanInfo, StepStats, SweepEvent, TrialEvent};
use crate::core::record::{Header, LogLine, TrialRecord};
use crate::core::stages::{Stage, StageCounts};
use crate::core::trial::{Outcome, TrialOutcome, TrialSpec};
use crate::report::{Progress, Report};
use crate::runlog::RunLog;
use crate::sweep::SweepConfig;
use crate::workload::spec::{Target, Workload};

/// Weight of a new examples/s sample in the smoothed sweep throughput.
const EPS_SMOOTHING: f64 = 0.3;

#[derive(Clone, Debug, PartialEq)]
pub struct RunningTrial {
    pub spec: TrialSpec,
    pub started_at: f64,
    pub loss: History,
    pub metric: History,
    pub last: Option<StepStats>,
    pub b_simple: Option<f64>,
    /// Last measured (finite, positive) examples/s of this trial.
    pub examples_per_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub trial_id: u64,
    pub batch_size: usize,
    pub points: History,
    /// None while running; the outcome once finished.
    pub ended: Option<Outcome>,
}

/// The validation-metric curve of one batch size's best trial (what a finished sweep shows).
#[derive(Clone, Debug, PartialEq)]
pub struct BestCurve {
    pub batch_size: usize,
    pub trial_id: u64,
    /// (step, metric) at every evaluation.
    pub points: Vec<(f64, f64)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveSource {
    /// A sweep this TUI runs (controllable).
    Sweep,
    /// A run log opened read-only (followed while `tailing`).
    Log { path: PathBuf, tailing: bool },
}

#[derive(Clone, Debug, PartialEq)]
pub struct LiveState {
    pub source: LiveSource,
    pub plan: PlanInfo,
    /// The run log's header (from the sweep's `Planned` event, or the log): what the report is
    /// built against. None until the sweep started.
    pub header: Option<Header>,
    pub queued: BTreeMap<u64, usize>,
    pub running: BTreeMap<u64, RunningTrial>,
    /// Every finished trial known: for a log all of its trials; for a resumed sweep the logged
    /// ones (`prior` of them, first) and then this session's. Shared with an analysis in flight
    /// (copied on write only while one reads it).
    pub finished: Arc<Vec<TrialRecord>>,
    /// Of `finished`: records that were already in the log when this view started.
    pub prior: usize,
    pub recent: VecDeque<Curve>,
    /// The report of the finished trials as last analysed (cached; see the module documentation).
    pub report: Report,
    /// `report` rendered for the views (its text, the projection brief).
    pub rendered: Rendered,
    /// Version of the data the report is built from (header, finished trials, progress): bumped
    /// by every change.
    pub generation: u64,
    /// The generation `report` was built at (None: never analysed).
    pub shown: Option<u64>,
    /// The target `report` reads the trials at.
    pub shown_at: Option<Target>,
    /// The target moved along the ladder (`[` `]`); None: the goal.
    pub target: Option<f64>,
    /// The ladder the target moves along, loosest first (computed on the first move).
    pub ladder: Vec<f64>,
    /// Readings of the current data at each target already analysed (`super::target`).
    pub rungs: super::target::RungCache,
    /// The id of the analysis request this state waits for.
    pub in_flight: Option<u64>,
    /// While `report` is older than the data: the raw per-B points of the current data (best
    /// steps and counts, no intervals) over the last analysis's fit and regimes, and the
    /// generation they were taken at. None when the report is current.
    pub provisional: Option<(u64, Analysis)>,
    pub saved: usize,
    pub paused: bool,
    pub done: bool,
    pub cancelled: bool,
    pub errors: Vec<String>,
    pub started_at: f64,
    pub ended_at: Option<f64>,
    /// When the current pause began, and the seconds spent paused before it (ETA excludes them).
    pub paused_since: Option<f64>,
    pub paused_total: f64,
    /// Latest B_simple sample of a running trial (None when no trial runs).
    pub b_simple_live: Option<f64>,
    /// Smoothed examples/s of the sweep (kept between trials, so it does not drop to 0).
    pub examples_per_s_smooth: Option<f64>,
    /// Trials the user cancelled (`c`): recorded in the log as cancelled. Other cancelled trials
    /// (stopped by a sweep cancel) are not results and run again on resume.
    pub user_cancelled: BTreeSet<u64>,
    /// Trials saved without a `Finished` event (skipped while queued).
    pub saved_only: usize,
    /// Selected running trial (for `c`).
    pub selected: usize,
    /// The sweep's wall time, once it ended (the log's summary).
    pub wall_s: Option<f64>,
    /// Problems reading the log (torn last line, …).
    pub warnings: Vec<String>,
    /// The trials per stage, each against its own plan: the sweep's `Counts` (a view's copy
    /// between them), or counted from a log's records. None before the sweep counted.
    pub counts: Option<StageCounts>,
    /// The study the calibration stage chose, once it has (its report section).
    pub calibrated: Option<Arc<crate::core::calibrate::Calibrated>>,
}

impl LiveState {
    pub fn new(source: LiveSource, plan: PlanInfo, now: f64) -> Self {
        LiveState {
            source,
            header: plan.header.as_deref().cloned(),
            plan,
            queued: BTreeMap::new(),
            running: BTreeMap::new(),
            finished: Arc::new(Vec::new()),
            prior: 0,
            recent: VecDeque::new(),
            report: Report::default(),
            rendered: Rendered::default(),
            generation: 0,
            shown: None,
            shown_at: None,
            target: None,
            ladder: Vec::new(),
            rungs: Default::default(),
            in_flight: None,
            provisional: None,
            saved: 0,
            paused: false,
            done: false,
            cancelled: false,
            errors: Vec::new(),
            started_at: now,
            ended_at: None,
            paused_since: None,
            paused_total: 0.0,
            b_simple_live: None,
            examples_per_s_smooth: None,
            user_cancelled: BTreeSet::new(),
            saved_only: 0,
            selected: 0,
            wall_s: None,
            warnings: Vec::new(),
            calibrated: None,
            counts: None,
        }
    }

    /// A sweep about to start from `cfg` (its plan arrives with the `Planned` event).
    pub fn starting(cfg: &SweepConfig, now: f64) -> Self {
        let plan = PlanInfo {
            preset: cfg.preset.name.clone(),
            batch_sizes: cfg.batch_sizes.clone(),
            trials_per_batch: cfg.trials_per_batch,
            total_trials: cfg.batch_sizes.len() * cfg.trials_per_batch,
            already_done: 0,
            devices: cfg.devices.label(),
            run_log: None,
            header: None,
        };
        LiveState::new(LiveSource::Sweep, plan, now)
    }

    /// A run log shown read-only: the same state a live sweep would have after its trials. Not
    /// analysed yet: `update` asks for the analysis (see [`LiveState::from_log`]).
    pub fn opened(log: &RunLog, tailing: bool, now: f64) -> Self {
        let mut s = LiveState::resuming(log, now);
        s.source = LiveSource::Log {
            path: log.path.clone(),
            tailing,
        };
        if let Some(sum) = &log.summary {
            s.done = true;
            s.cancelled = !sum.complete;
            s.wall_s = Some(sum.wall_s);
        }
        s.touch();
        s
    }

    /// [`LiveState::opened`], analysed at once on this thread: for screenshots and tests (the UI
    /// never analyses on its task).
    pub fn from_log(log: &RunLog, tailing: bool, now: f64) -> Self {
        let mut s = LiveState::opened(log, tailing, now);
        s.analyze_now();
        s
    }

    /// The sweep this TUI resumes from `log`: its logged trials are on the chart from the start
    /// (analysed off the UI task, as every change).
    pub fn resuming(log: &RunLog, now: f64) -> Self {
        let h = &log.header;
        let plan = PlanInfo {
            preset: h.preset.name.clone(),
            batch_sizes: h.batch_sizes.clone(),
            trials_per_batch: h.trials_per_batch,
            total_trials: log.planned_trials(),
            already_done: log.trials.len(),
            devices: h.devices.label(),
            run_log: Some(log.path.display().to_string()),
            header: Some(Box::new(h.clone())),
        };
        let mut s = LiveState::new(LiveSource::Sweep, plan, now);
        s.finished = Arc::new(log.trials.clone());
        s.prior = s.finished.len();
        s.saved = s.finished.len();
        s.warnings = log.warnings.clone();
        s.calibrated = log.calibrated.clone().map(Arc::new);
        s.recount();
        s.touch();
        s
    }

    pub fn read_only(&self) -> bool {
        matches!(self.source, LiveSource::Log { .. })
    }

    /// The run's name: the log's file name without `.jsonl` (start time and preset), or the
    /// preset's name before the log exists.
    pub fn run_name(&self) -> String {
        self.plan
            .run_log
            .as_deref()
            .map(std::path::Path::new)
            .and_then(|p| p.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.plan.preset.clone())
    }

    /// The workload the sweep runs (from its header).
    pub fn workload(&self) -> Option<&Workload> {
        self.header.as_ref().map(|h| &h.preset.workload)
    }

    /// The analysis of the finished trials (the cached report's: the last one that landed).
    pub fn analysis(&self) -> &Analysis {
        &self.report.analysis
    }

    /// What the scaling chart and the per-B table draw: the provisional points of the current
    /// data while an analysis is pending, else the report's analysis.
    pub fn chart(&self) -> &Analysis {
        match &self.provisional {
            Some((_, a)) => a,
            None => &self.report.analysis,
        }
    }

    /// The data changed since the shown report was built, or the target moved (an analysis is
    /// pending).
    pub fn updating(&self) -> bool {
        self.header.is_some()
            && (self.shown != Some(self.generation) || self.shown_at != self.analysis_target())
    }

    /// The target the state shows its reading at: the header's, or the rung it was moved to
    /// (`[` `]`).
    pub fn analysis_target(&self) -> Option<Target> {
        let mut t = self.header.as_ref()?.preset.workload.target;
        if let Some(v) = self.target {
            t.value = v;
        }
        Some(t)
    }

    /// Marks the data changed: the report is now older than the data.
    pub(crate) fn touch(&mut self) {
        self.generation += 1;
    }

    fn progress(&self) -> Progress {
        Progress {
            trials_done: self.done_count(),
            trials_planned: self.plan.total_trials,
            stages: self.counts.unwrap_or_default(),
            wall_s: self.wall_s,
            cancelled: self.cancelled,
        }
    }

    /// The trials per stage counted from the records (a log read or followed: what it placed
    /// beyond them is not known here; `report` counts an unfinished round's seeds too).
    fn recount(&mut self) {
        if let Some(h) = &self.header {
            let none = std::collections::HashSet::new();
            self.counts = Some(crate::analysis::stages::stage_counts(
                h,
                &self.finished,
                &none,
            ));
        }
    }

    /// Trials planned in all, every stage's (the search's plan before the sweep counted).
    pub fn planned_count(&self) -> usize {
        self.counts
            .map_or(self.plan.total_trials, |c| c.planned())
            .max(self.done_count())
    }

    /// The request for an analysis of the current data, if one is due: the data are newer than
    /// the report and no request is in flight. Marks `id` as in flight.
    pub fn request(&mut self, id: u64, view: LiveView) -> Option<AnalysisRequest> {
        if !self.updating() || self.in_flight.is_some() {
            return None;
        }
        let target = self.analysis_target()?;
        let header = self.header.clone()?;
        self.in_flight = Some(id);
        Some(AnalysisRequest {
            // never analysed, or the user moved the target: at once
            urgent: self.shown.is_none() || self.shown_at != Some(target),
            for_: AnalysisFor {
                id,
                view,
                generation: self.generation,
                target,
            },
            inputs: AnalysisInputs {
                header,
                // a copy, once per request (at most one per analysis): shared with the worker,
                // every landed trial's push would copy all trials (`Arc::make_mut`) while the
                // request waits for its turn (measured: most of the UI thread's time on a
                // 2,200-trial sweep)
                trials: Arc::new(self.finished.as_ref().clone()),
                path: self.plan.run_log.as_deref().map(PathBuf::from),
                progress: self.progress(),
                warnings: self.warnings.clone(),
                calibrated: self.calibrated.clone(),
            },
        })
    }

    /// Folds an analysis result: adopted if this state waits for it, it is for the target shown
    /// and newer than the report (or the report is of another target); otherwise dropped
    /// (stale). A result of the current data is kept for its target either way (stepping back
    /// to it is instant). Whether it was adopted.
    pub fn adopt(&mut self, a: Analyzed) -> bool {
        if self.in_flight != Some(a.for_.id) {
            return false;
        }
        self.in_flight = None;
        self.keep_rung(&a);
        let newer = self.shown.is_none_or(|g| {
            a.for_.generation > g
                || (a.for_.generation == g && self.shown_at != Some(a.for_.target))
        });
        if !newer || self.analysis_target() != Some(a.for_.target) {
            return false;
        }
        self.report = a.report;
        self.rendered = a.rendered;
        self.shown = Some(a.for_.generation);
        self.shown_at = Some(a.for_.target);
        if !self.updating() {
            self.provisional = None;
        }
        true
    }

    /// The report of the finished sweep (`report::of_sweep` of the joined sweep): the final
    /// reading of the current data (an analysis still in flight is older and will be dropped).
    pub fn adopt_final(&mut self, report: Report) {
        let rendered = Rendered::of(&report);
        let goal = self.header.as_ref().map(|h| h.preset.workload.target);
        if let Some(g) = goal {
            self.rungs
                .keep(g.value, self.generation, &report, &rendered);
        }
        if self.target.is_some() {
            // the user reads another rung: the goal's final reading waits in the cache
            return;
        }
        self.rendered = rendered;
        self.report = report;
        self.shown = Some(self.generation);
        self.shown_at = goal;
        self.provisional = None;
    }

    /// Analyses the current data on this thread (screenshots, tests; never the UI task).
    pub fn analyze_now(&mut self) {
        let id = u64::MAX;
        let saved = self.in_flight.take();
        match self.request(id, LiveView::Sweep) {
            Some(r) => {
                self.adopt(r.run());
            }
            None => self.in_flight = saved,
        }
    }

    /// Refreshes the provisional chart points if the data moved past them (once per `update`).
    pub fn refresh_provisional(&mut self) {
        if !self.updating() {
            self.provisional = None;
            return;
        }
        if self
            .provisional
            .as_ref()
            .is_some_and(|(g, _)| *g == self.generation)
        {
            return;
        }
        let Some(h) = &self.header else { return };
        let target = self.analysis_target();
        let raw = match self.target {
            None => crate::analysis::per_batch(&self.finished, h.preset.workload.optimizer),
            Some(v) => {
                // the raw points at the moved target (the same reading the analysis makes)
                let study = crate::core::analysis::Study::of_preset(&h.preset).at(v);
                let reading = crate::analysis::Reading::of(&study);
                let observed = crate::analysis::Observed::of(&self.finished, &reading);
                crate::analysis::per_batch::per_batch_observed(&observed, study.optimizer, &reading)
            }
        };
        // the last analysis's fit and regimes are kept only when it read this target
        let empty = Analysis::default();
        let last = if self.shown_at == target {
            &self.report.analysis
        } else {
            &empty
        };
        // a B whose trials are those the last analysis saw keeps its interval and edge marks
        let per_batch: Vec<_> = raw
            .into_iter()
            .map(
                |p| match last.per_batch.iter().find(|q| q.batch_size == p.batch_size) {
                    Some(q)
                        if q.counts == p.counts
                            && q.best_trial == p.best_trial
                            && q.steps == p.steps =>
                    {
                        q.clone()
                    }
                    _ => p,
                },
            )
            .collect();
        let perfect_anchor = per_batch
            .iter()
            .find_map(|p| p.readout_steps(last.readout).map(|s| (p.batch_size, s)));
        let a = Analysis {
            target,
            per_batch,
            perfect_anchor,
            ..last.clone()
        };
        self.provisional = Some((self.generation, a));
    }

    /// Trials recorded in the run log (resumed ones included).
    pub fn done_count(&self) -> usize {
        self.finished.len() + self.saved_only
    }

    pub fn queued_count(&self) -> usize {
        self.planned_count()
            .saturating_sub(self.done_count() + self.running.len())
    }

    /// Seconds the sweep has been running (not paused) at `now`.
    pub fn active_s(&self, now: f64) -> f64 {
        let end = self.ended_at.or(self.paused_since).unwrap_or(now);
        (end - self.started_at - self.paused_total).max(0.0)
    }

    /// Seconds left, extrapolated from this session's finished trials over the time spent
    /// running (paused time excluded, so the ETA stands still while paused). None before the
    /// first finished trial.
    /// Each stage's trials left count at that stage's own pace (its trials' mean wall time over
    /// the sweep's mean, where this session finished some; a confirm trial is never cut, so it
    /// takes longer than a search trial), so the ETA covers the stage that runs and those after.
    pub fn eta(&self, now: f64) -> Option<f64> {
        let n = self.finished.len().saturating_sub(self.prior);
        if n == 0 || self.done || self.read_only() {
            return None;
        }
        let per = self.active_s(now) / n as f64;
        let Some(counts) = self.counts else {
            let left = self.plan.total_trials.saturating_sub(self.done_count());
            return Some(per * left as f64);
        };
        let session = &self.finished[self.prior.min(self.finished.len())..];
        let mean = |stage: Option<Stage>| {
            let w: Vec<f64> = session
                .iter()
                .filter(|t| stage.is_none_or(|s| Stage::of(t.trial_id) == s))
                .map(|t| t.outcome.wall_s)
                .filter(|w| w.is_finite() && *w > 0.0)
                .collect();
            (!w.is_empty()).then(|| w.iter().sum::<f64>() / w.len() as f64)
        };
        let all = mean(None);
        let left: f64 = counts
            .stages()
            .iter()
            .map(|(stage, c)| {
                let pace = match (mean(Some(*stage)), all) {
                    (Some(m), Some(a)) if a > 0.0 => m / a,
                    _ => 1.0,
                };
                c.left() as f64 * pace
            })
            .sum();
        Some(per * left)
    }

    /// Examples per second of the running trials (each at its last measured rate); between
    /// trials, and while a trial has not measured yet, the smoothed sweep rate.
    pub fn examples_per_s(&self) -> f64 {
        let now: f64 = self.running.values().filter_map(|r| r.examples_per_s).sum();
        if now > 0.0 {
            now
        } else {
            self.examples_per_s_smooth.unwrap_or(0.0)
        }
    }

    pub fn selected_trial(&self) -> Option<u64> {
        self.running
            .keys()
            .nth(self.selected.min(self.running.len().saturating_sub(1)))
            .copied()
    }

    /// Curves for the loss chart: running trials first, then the most recently finished.
    pub fn curves(&self) -> Vec<Curve> {
        let mut v: Vec<Curve> = self
            .running
            .iter()
            .map(|(id, r)| Curve {
                trial_id: *id,
                batch_size: r.spec.batch_size,
                points: r.loss.clone(),
                ended: None,
            })
            .take(MAX_CURVES)
            .collect();
        for c in self.recent.iter() {
            if v.len() >= MAX_CURVES {
                break;
            }
            v.push(c.clone());
        }
        v
    }

    /// Each batch size's best trial: its validation metric at every evaluation (ascending B).
    pub fn best_curves(&self) -> Vec<BestCurve> {
        let mut out = Vec::new();
        // the current data's best trials, at once (as the scaling chart's points)
        for p in &self.chart().per_batch {
            let Some(id) = p.best_trial else { continue };
            let Some(r) = self.finished.iter().find(|r| r.trial_id == id) else {
                continue;
            };
            let points: Vec<(f64, f64)> = r
                .outcome
                .evals
                .iter()
                .filter(|e| e.metric.is_finite())
                .map(|e| (e.step as f64, e.metric))
                .collect();
            if !points.is_empty() {
                out.push(BestCurve {
                    batch_size: p.batch_size,
                    trial_id: id,
                    points,
                });
            }
        }
        out
    }

    /// B_simple over the best trials: (median, min, max). This is what a finished sweep shows —
    /// never the last trial's value (which may have diverged).
    pub fn b_simple_spread(&self) -> Option<(f64, f64, f64)> {
        let mut v: Vec<f64> = self
            .report
            .analysis
            .per_batch
            .iter()
            .filter_map(|p| p.b_simple)
            .filter(|b| b.is_finite() && *b > 0.0)
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let med = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some((med, v[0], v[n - 1]))
    }

    /// Consecutive segments of equal regime merged: (b_lo, b_hi, regime).
    pub fn regime_spans(&self) -> Vec<(usize, usize, Regime)> {
        regime_spans(&self.report.analysis)
    }

    /// Folds one engine event (a sweep this TUI runs).
    pub(crate) fn fold(&mut self, ev: SweepEvent, now: f64) {
        match ev {
            SweepEvent::Planned(plan) => {
                if let Some(h) = &plan.header {
                    self.header = Some((**h).clone());
                }
                self.plan = plan;
                self.touch();
            }
            SweepEvent::Queued {
                trial_id,
                batch_size,
            } => {
                self.queued.insert(trial_id, batch_size);
            }
            SweepEvent::Trial { trial_id, event } => self.fold_trial(trial_id, event, now),
            SweepEvent::BestSoFar { .. } => {}
            // the calibrated study's header comes with the `Planned` that follows
            SweepEvent::Calibrated(c) => {
                self.calibrated = Some(Arc::new(*c));
                self.touch();
            }
            SweepEvent::Counts(c) => self.counts = Some(c),
            SweepEvent::Saved { trial_id } => {
                self.saved += 1;
                if let Some(c) = self.counts.as_mut() {
                    c.saved(Stage::of(trial_id));
                }
                let known = self.finished.iter().any(|r| r.trial_id == trial_id);
                if !known && !self.running.contains_key(&trial_id) {
                    // skipped while queued (user cancel): in the log, never a result
                    self.queued.remove(&trial_id);
                    self.saved_only += 1;
                }
            }
            SweepEvent::Paused { paused } => self.set_paused(paused, now),
            SweepEvent::TrialError { trial_id, message } => {
                self.queued.remove(&trial_id);
                self.running.remove(&trial_id);
                self.errors.push(format!("trial {trial_id}: {message}"));
                self.refresh_b_simple();
            }
            SweepEvent::Done { cancelled, .. } => {
                // The report stays the one built from the records (the entry `report` uses);
                // the joined sweep's (`Msg::SweepEnded`) replaces it.
                self.set_paused(false, now);
                self.done = true;
                self.cancelled = cancelled;
                self.running.clear();
                self.queued.clear();
                self.ended_at = Some(now);
                self.b_simple_live = None;
                self.touch();
            }
        }
    }

    fn set_paused(&mut self, paused: bool, now: f64) {
        match (paused, self.paused_since) {
            (true, None) => self.paused_since = Some(now),
            (false, Some(t)) => {
                self.paused_total += (now - t).max(0.0);
                self.paused_since = None;
            }
            _ => {}
        }
        self.paused = paused;
    }

    fn refresh_b_simple(&mut self) {
        self.b_simple_live = self
            .running
            .values()
            .rev()
            .find_map(|r| r.b_simple.filter(|b| b.is_finite()));
    }

    fn fold_trial(&mut self, id: u64, ev: TrialEvent, now: f64) {
        match ev {
            TrialEvent::Started { spec } => {
                self.queued.remove(&id);
                self.running.insert(
                    id,
                    RunningTrial {
                        spec,
                        started_at: now,
                        loss: History::default(),
                        metric: History::default(),
                        last: None,
                        b_simple: None,
                        examples_per_s: None,
                    },
                );
            }
            TrialEvent::Step(s) => {
                let eps = s.examples_per_s;
                if let Some(r) = self.running.get_mut(&id) {
                    // step samples and evaluations both add points, in step order
                    if r.loss.last().is_none_or(|&(x, _)| x < s.step as f64) {
                        r.loss.push((s.step as f64, s.loss));
                    }
                    if eps.is_finite() && eps > 0.0 {
                        r.examples_per_s = Some(eps);
                    }
                    r.last = Some(s);
                }
                if eps.is_finite() && eps > 0.0 {
                    let total: f64 = self.running.values().filter_map(|r| r.examples_per_s).sum();
                    self.examples_per_s_smooth = Some(match self.examples_per_s_smooth {
                        Some(old) => old + EPS_SMOOTHING * (total - old),
                        None => total,
                    });
                }
            }
            TrialEvent::Eval(p) => {
                if let Some(r) = self.running.get_mut(&id) {
                    r.metric.push((p.step as f64, p.metric));
                    let step = p.step as f64;
                    if p.train_loss.is_finite() && r.loss.last().is_none_or(|&(x, _)| x < step) {
                        r.loss.push((step, p.train_loss));
                    }
                }
            }
            TrialEvent::NoiseScale { b_simple, .. } => {
                if let Some(r) = self.running.get_mut(&id) {
                    r.b_simple = Some(b_simple);
                }
                if b_simple.is_finite() {
                    self.b_simple_live = Some(b_simple);
                }
            }
            TrialEvent::Finished { outcome } => {
                let r = self.running.remove(&id);
                self.queued.remove(&id);
                let interrupted = matches!(outcome.outcome, Outcome::Cancelled { .. })
                    && !self.user_cancelled.contains(&id);
                if let Some(r) = r {
                    if !interrupted {
                        self.push_finished(id, r.spec, *outcome, Some(r.loss));
                    }
                }
                if self.selected >= self.running.len() {
                    self.selected = self.running.len().saturating_sub(1);
                }
                self.refresh_b_simple();
            }
        }
    }

    fn push_finished(
        &mut self,
        id: u64,
        spec: TrialSpec,
        outcome: TrialOutcome,
        loss: Option<History>,
    ) {
        let ended = outcome.outcome.clone();
        let batch = spec.batch_size;
        // A short trial sends few step samples: its per-evaluation training loss draws a line.
        let mut curve = loss.unwrap_or_default();
        if curve.len() < outcome.evals.len() {
            let mut h = History::default();
            for e in &outcome.evals {
                if e.train_loss.is_finite() {
                    h.push((e.step as f64, e.train_loss));
                }
            }
            if !h.is_empty() {
                curve = h;
            }
        }
        if outcome.throughput.examples_per_s.is_finite()
            && outcome.throughput.examples_per_s > 0.0
            && self.examples_per_s_smooth.is_none()
        {
            self.examples_per_s_smooth = Some(outcome.throughput.examples_per_s);
        }
        Arc::make_mut(&mut self.finished).push(TrialRecord {
            trial_id: id,
            spec,
            outcome,
            finished: String::new(),
        });
        if !curve.is_empty() {
            self.recent.push_front(Curve {
                trial_id: id,
                batch_size: batch,
                points: curve,
                ended: Some(ended),
            });
            self.recent.truncate(RECENT_CURVES);
        }
        self.touch();
    }

    /// Folds one line appended to the followed run log.
    pub(crate) fn fold_log_line(&mut self, line: LogLine, now: f64) {
        match line {
            LogLine::Header(_) => {}
            LogLine::Calibrated(c) => self.calibrated = Some(Arc::new(*c)),
            LogLine::Trial(t) => {
                let t = *t;
                if !self.finished.iter().any(|f| f.trial_id == t.trial_id) {
                    Arc::make_mut(&mut self.finished).push(t);
                    self.saved = self.finished.len();
                    self.recount();
                    self.touch();
                }
            }
            LogLine::Summary(s) => {
                self.done = true;
                self.cancelled = !s.complete;
                self.ended_at = Some(now);
                self.wall_s = Some(s.wall_s);
                if let LiveSource::Log { tailing, .. } = &mut self.source {
                    *tailing = false;
                }
                self.touch();
            }
        }
    }

    /// Status text the end-to-end test waits for; stable on purpose.
    pub fn finished_text(&self) -> String {
        format!(
            "trials finished: {}/{}",
            self.done_count(),
            self.planned_count()
        )
    }

    /// Each stage against its own plan ("search 240/240 · confirm 90/190"), where the sweep has
    /// more stages than its search.
    pub fn stages_text(&self) -> Option<String> {
        self.counts.filter(|c| c.staged()).map(|c| c.text())
    }
}

/// The regimes as (b_lo, b_hi, regime), in order, each at most once: the same ranges the report
/// prints (`report::regime_ranges`).
pub fn regime_spans(a: &Analysis) -> Vec<(usize, usize, Regime)> {
    crate::report::regime_ranges(a)
}
