//! A batch-size schedule from a sweep's log, and its proof beside the log's best fixed batch
//! size: the one owner of `train --batch-schedule … --from LOG`'s reading.
//!
//! Rules (printed with every result):
//! - η per stage from a log: the best trial's η at the *nearest measured* batch size (distance in
//!   log B; a tie takes the smaller B), at the target that ends the stage (the next threshold, the
//!   goal for the last stage). No interpolation: every η used was measured.
//! - γ: the last stage's best γ for every stage (the optimizer's momentum buffer carries over a
//!   switch; γ itself is not switched). Heavy-ball and Nesterov: every earlier stage's η is
//!   rescaled to keep its best trial's effective learning rate η/(1−γ).
//! - `auto`: the rungs of the log's ladder, loosest first; stage k runs at B_crit(T_k) rounded to
//!   the nearest measured B that the replicas divide, until the metric meets T_k, with the best η
//!   at that B to T_k (a stage kept over later rungs: to the last of them). Rungs whose
//!   B_crit is missing or uncertain are skipped; a rung whose B would not grow keeps the previous
//!   stage's B (a schedule only grows the batch).
//! - The best fixed-B trial at target T: the log's trial with the fewest steps to T (its first
//!   evaluation meeting T), ties to the fewer examples.

use serde::Serialize;

use super::targets::{self, fmt_target};
use super::{thousands, Run};
use crate::analysis::ladder::{BestAt, TrendVerdict};
use crate::core::analysis::Readout;
use crate::core::record::TrialRecord;
use crate::core::schedule::{examples_to, BatchSchedule, BatchStage, StageRun};
use crate::core::trial::TrialOutcome;
use crate::workload::spec::{OptimizerKind, Workload};

/// Refuses a log of another workload: dataset, model and optimizer must be the preset's.
pub fn check_same_workload(log: &Workload, log_name: &str, w: &Workload) -> Result<(), String> {
    let mut differ = Vec::new();
    if log.dataset != w.dataset {
        differ.push("dataset");
    }
    if log.model != w.model {
        differ.push("model");
    }
    if log.optimizer != w.optimizer {
        differ.push("optimizer");
    }
    if differ.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the log is a sweep of another workload ({log_name}): its {} differ from this preset's",
        differ.join(", ")
    ))
}

/// The best trial's η (and γ) at the measured batch size nearest `b` (in log B; ties: smaller).
pub fn nearest_best(best: &[BestAt], b: usize) -> Option<&BestAt> {
    let d = |x: &BestAt| ((x.batch_size as f64).ln() - (b as f64).ln()).abs();
    best.iter().min_by(|x, y| {
        let (dx, dy) = (d(x), d(y));
        // a tie in log B (up to rounding: ln 32 − ln 16 vs ln 64 − ln 32) takes the smaller B
        if (dx - dy).abs() < 1e-9 {
            x.batch_size.cmp(&y.batch_size)
        } else {
            dx.total_cmp(&dy)
        }
    })
}

/// A schedule planned from a log, with what was decided on the way.
#[derive(Clone, Debug)]
pub struct Planned {
    pub schedule: BatchSchedule,
    /// γ of every stage (the first stage's best), where the log has one.
    pub momentum: Option<f64>,
    /// How each η was chosen, skipped rungs, merged stages.
    pub notes: Vec<String>,
    /// The log gives no reason for a schedule (B_crit's trend does not grow).
    pub warning: Option<String>,
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// η per stage of an explicit schedule (`pairs` from `core::schedule::parse`) from the log's best
/// trials, `goal` ending the last stage.
pub fn from_log(run: &Run, pairs: &[(usize, Option<f64>)], goal: f64) -> Result<Planned, String> {
    let ends: Vec<f64> = pairs
        .iter()
        .skip(1)
        .map(|(_, t)| t.expect("every later stage has a threshold"))
        .chain([goal])
        .collect();
    let r = targets::build(run, &ends);
    let mut stages = Vec::new();
    let mut notes = Vec::new();
    let mut gammas = Vec::new();
    for (i, ((b, from), end)) in pairs.iter().zip(&ends).enumerate() {
        let point = r.curve.iter().find(|p| near(p.target, *end));
        let best = point
            .and_then(|p| nearest_best(&p.best, *b))
            .ok_or_else(|| {
                format!(
                    "the log measured no batch size reaching {} (stage {} ends there)",
                    fmt_target(*end),
                    i + 1
                )
            })?;
        gammas.push(best.best_momentum);
        notes.push(format!(
            "stage {}: B = {b}, η = {:.4} (best at B = {} to {})",
            i + 1,
            best.best_lr,
            best.batch_size,
            fmt_target(*end)
        ));
        stages.push(BatchStage {
            batch_size: *b,
            learning_rate: best.best_lr,
            from: *from,
        });
    }
    let momentum = one_momentum(run, &mut stages, &gammas, &mut notes);
    Ok(Planned {
        schedule: BatchSchedule { stages },
        momentum,
        notes,
        warning: None,
    })
}

/// `--batch-schedule auto`: the schedule the log's B_crit(target) proposes (see the module's
/// rules); `fits(b)`: the replicas divide b and the training set holds it.
pub fn auto(run: &Run, fits: &dyn Fn(usize) -> bool) -> Result<Planned, String> {
    let r = targets::build(run, &[]);
    let mut notes = Vec::new();
    let mut stages: Vec<BatchStage> = Vec::new();
    let mut gammas = Vec::new();
    let mut prev_target: Option<f64> = None;
    for p in &r.curve {
        let t = fmt_target(p.target);
        let b_crit = match (p.b_crit, p.uncertain) {
            (Some(b), false) => b,
            (Some(b), true) => {
                notes.push(format!("rung {t}: skipped, B_crit {b:.0} is uncertain"));
                continue;
            }
            (None, _) => {
                notes.push(format!(
                    "rung {t}: skipped, no B_crit (too few batch sizes measured)"
                ));
                continue;
            }
        };
        let candidates: Vec<BestAt> = p
            .best
            .iter()
            .filter(|x| fits(x.batch_size))
            .cloned()
            .collect();
        let Some(best) = nearest_best(&candidates, b_crit.round().max(1.0) as usize) else {
            notes.push(format!(
                "rung {t}: skipped, no measured B the replicas divide"
            ));
            continue;
        };
        let b = best.batch_size;
        let from = prev_target;
        prev_target = Some(p.target);
        match stages.last_mut() {
            Some(last) if b <= last.batch_size => {
                // The stage now ends at this rung: its η (γ) is the best at its B to here.
                let here = p.best.iter().find(|x| x.batch_size == last.batch_size);
                if let (Some(h), Some(g)) = (here, gammas.last_mut()) {
                    last.learning_rate = h.best_lr;
                    *g = h.best_momentum;
                }
                notes.push(format!(
                    "rung {t}: B_crit {b_crit:.0} → B = {b}, not above the previous stage's {}: kept at {} until {t}{}",
                    last.batch_size,
                    last.batch_size,
                    here.map(|h| format!(", η = {:.4} (best at B = {} to {t})", h.best_lr, h.batch_size))
                        .unwrap_or_default()
                ));
                continue;
            }
            _ => {}
        }
        gammas.push(best.best_momentum);
        notes.push(format!(
            "rung {t}: B_crit {b_crit:.0} → B = {b} (nearest measured), η = {:.4} (best at B = {b} to {t}){}",
            best.best_lr,
            from.map(|f| format!(", from the first evaluation meeting {}", fmt_target(f)))
                .unwrap_or_default()
        ));
        stages.push(BatchStage {
            batch_size: b,
            learning_rate: best.best_lr,
            from: if stages.is_empty() { None } else { from },
        });
    }
    if stages.is_empty() {
        return Err("no rung of the log has a certain B_crit: no schedule to run".into());
    }
    let momentum = one_momentum(run, &mut stages, &gammas, &mut notes);
    let warning = match &r.b_crit_trend {
        Some(tr) if tr.verdict == TrendVerdict::Grows => None,
        Some(tr) => Some(format!(
            "the log gives no reason for a schedule: B_crit does not measurably grow as the target tightens ({})",
            targets::trend_text("B_crit", tr)
        )),
        None => Some(
            "the log gives no reason for a schedule: too few rungs for a B_crit trend".to_string(),
        ),
    };
    Ok(Planned {
        schedule: BatchSchedule { stages },
        momentum,
        notes,
        warning,
    })
}

/// γ of every stage: the last stage's best (the optimizer's momentum is not switched mid-trial).
/// Heavy-ball and Nesterov: each earlier stage's η is rescaled to keep its best trial's
/// effective learning rate η/(1−γ) at that γ. Adam (γ = β1): η as measured. SGD: none.
fn one_momentum(
    run: &Run,
    stages: &mut [BatchStage],
    gammas: &[Option<f64>],
    notes: &mut Vec<String>,
) -> Option<f64> {
    let last = (*gammas.last()?)?;
    let heavy_ball = matches!(
        run.header.preset.workload.optimizer,
        OptimizerKind::Momentum | OptimizerKind::Nesterov
    );
    for (st, g) in stages.iter_mut().zip(gammas) {
        match g {
            Some(g) if heavy_ball && (g - last).abs() > 1e-12 && *g < 1.0 => {
                let lr = st.learning_rate * (1.0 - last) / (1.0 - g);
                notes.push(format!(
                    "B = {}: η {:.4} at its best γ {g:.4} → η {lr:.4} at γ {last:.4} (same η/(1−γ))",
                    st.batch_size, st.learning_rate
                ));
                st.learning_rate = lr;
            }
            _ => {}
        }
    }
    Some(last)
}

/// Steps and examples to `target` of a logged trial: its first evaluation meeting it.
fn to_target(o: &TrialOutcome, batch_size: usize, target: f64) -> Option<(u64, u64)> {
    let step = o
        .evals
        .iter()
        .find(|e| e.metric.is_finite() && e.metric <= target)?
        .step;
    Some((step, examples_to(&o.stages, batch_size, step)))
}

/// The log's best fixed-B configuration at `target` and its steps there: with a complete confirm
/// stage the chosen configuration at the B of the fewest confirmed steps (its seed
/// median; ties: the smaller B, fewer examples), else the search trial with the fewest steps
/// (ties: fewer examples). Confirm and repeat trials are never a "best trial" of their own.
pub fn best_fixed<'a>(run: &Run<'a>, target: f64) -> Option<(&'a TrialRecord, u64)> {
    let a = crate::analysis::analyze(&super::study_of(run, Some(target)), run.trials);
    if a.readout == Readout::Confirmed {
        return a
            .per_batch
            .iter()
            .filter_map(|p| {
                let c = p.confirmed.as_ref()?;
                Some((c.steps?, p.batch_size, c.chosen?))
            })
            .min_by_key(|&(s, b, _)| (s, s * b as u64))
            .and_then(|(s, _, id)| Some((run.trials.iter().find(|t| t.trial_id == id)?, s)));
    }
    run.trials
        .iter()
        .filter(|t| t.spec.is_search())
        .filter_map(|t| Some((t, to_target(&t.outcome, t.spec.batch_size, target)?)))
        .min_by_key(|(_, (s, e))| (*s, *e))
        .map(|(t, (s, _))| (t, s))
}

/// One run of one side of the comparison.
#[derive(Serialize, Clone, Debug)]
pub struct SideRun {
    pub seed: u64,
    /// None: the target was not reached (the outcome says how it ended).
    pub steps: Option<u64>,
    pub examples: Option<u64>,
    pub wall_s: f64,
    pub outcome: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageRun>,
}

impl SideRun {
    pub fn of(seed: u64, batch_size: usize, o: &TrialOutcome) -> SideRun {
        let steps = o.outcome.steps_to_target();
        SideRun {
            seed,
            steps,
            examples: steps.map(|s| examples_to(&o.stages, batch_size, s)),
            wall_s: o.wall_s,
            outcome: o.outcome.label().to_string(),
            stages: o.stages.clone(),
        }
    }
}

/// Median and range of one measure over the runs that reached the target.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

fn spread(v: impl Iterator<Item = f64>) -> Option<Spread> {
    let mut v: Vec<f64> = v.collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Spread {
        median,
        min: v[0],
        max: v[n - 1],
    })
}

/// One side: its runs and their spreads (steps and examples over the runs that reached; wall
/// time over all runs).
#[derive(Serialize, Clone, Debug)]
pub struct Side {
    pub label: String,
    pub reached: usize,
    pub runs: Vec<SideRun>,
    pub steps: Option<Spread>,
    pub examples: Option<Spread>,
    pub wall_s: Option<Spread>,
}

impl Side {
    pub fn new(label: String, runs: Vec<SideRun>) -> Side {
        let ok = || runs.iter().filter(|r| r.steps.is_some());
        Side {
            label,
            reached: ok().count(),
            steps: spread(ok().filter_map(|r| r.steps.map(|s| s as f64))),
            examples: spread(ok().filter_map(|r| r.examples.map(|s| s as f64))),
            wall_s: spread(runs.iter().map(|r| r.wall_s)),
            runs,
        }
    }
}

/// The schedule beside the log's best fixed batch size, both run here at the same seeds.
#[derive(Serialize, Clone, Debug)]
pub struct Comparison {
    pub preset: String,
    pub metric: String,
    pub target: f64,
    pub schedule: BatchSchedule,
    pub momentum: Option<f64>,
    pub rules: Vec<String>,
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The log's best fixed-B trial at the target: its id, B, η (γ) and steps in the log.
    pub fixed_trial: u64,
    pub fixed_batch_size: usize,
    pub fixed_lr: f64,
    pub fixed_momentum: Option<f64>,
    pub fixed_logged_steps: u64,
    pub scheduled: Side,
    pub fixed: Side,
    /// "the schedule loses on …" lines (empty: it loses on nothing measured).
    pub loses: Vec<String>,
}

/// The rules of the module, as printed.
pub fn rules() -> Vec<String> {
    vec![
        "η per stage: the log's best η at the nearest measured B (log distance), to the target ending the stage; no interpolation".into(),
        "γ: the last stage's best for every stage (the momentum buffer carries over a switch); heavy-ball/Nesterov: earlier stages' η rescaled to keep their best η/(1−γ)".into(),
        "best fixed B: the log's trial with the fewest steps to the target (ties: fewer examples) — with a confirm stage the chosen configuration at the B of the fewest confirmed steps (seed median) — re-run here with its η (γ) at the same seeds".into(),
    ]
}

/// Where the schedule loses: a side that reached fewer times, or a larger median.
pub fn losses(s: &Side, f: &Side) -> Vec<String> {
    let mut out = Vec::new();
    if s.reached < f.reached {
        out.push(format!(
            "the schedule loses on reliability: it reached the target in {}/{} seeds, the fixed B in {}/{}",
            s.reached,
            s.runs.len(),
            f.reached,
            f.runs.len()
        ));
    }
    for (what, a, b) in [
        ("steps-to-target", s.steps, f.steps),
        ("examples-to-target", s.examples, f.examples),
        ("wall time", s.wall_s, f.wall_s),
    ] {
        if let (Some(a), Some(b)) = (a, b) {
            if a.median > b.median {
                out.push(format!(
                    "the schedule loses on {what}: median {} vs {} ({:+.0} %)",
                    short(a.median),
                    short(b.median),
                    (a.median / b.median - 1.0) * 100.0
                ));
            }
        }
    }
    out
}

fn short(v: f64) -> String {
    if v.fract() == 0.0 {
        thousands(v)
    } else {
        format!("{v:.3}")
    }
}

fn cell(s: Option<Spread>, unit: &str) -> String {
    match s {
        Some(s) => format!(
            "{}{unit} [{}, {}]",
            short(s.median),
            short(s.min),
            short(s.max)
        ),
        None => "not reached".into(),
    }
}

impl Comparison {
    pub fn text(&self) -> String {
        let mut o = String::new();
        let line = |o: &mut String, s: String| {
            o.push_str(&s);
            o.push('\n');
        };
        line(
            &mut o,
            format!(
                "Batch-size schedule vs the best fixed B — {} to {} ≤ {}, {} seeds each (median [min, max] over the seeds that reached)",
                self.preset,
                self.metric,
                fmt_target(self.target),
                self.scheduled.runs.len()
            ),
        );
        if let Some(w) = &self.warning {
            line(&mut o, format!("warning: {w}"));
        }
        line(&mut o, format!("schedule: {}", self.schedule.spec_text()));
        for n in &self.notes {
            line(&mut o, format!("  {n}"));
        }
        line(
            &mut o,
            format!(
                "fixed: B = {}, η = {:.4}{} (log trial {}: {} steps there)",
                self.fixed_batch_size,
                self.fixed_lr,
                self.fixed_momentum
                    .map(|m| format!(", γ = {m:.4}"))
                    .unwrap_or_default(),
                self.fixed_trial,
                self.fixed_logged_steps
            ),
        );
        line(
            &mut o,
            format!(
                "{:<32} {:>8} {:>24} {:>30} {:>26}",
                "", "reached", "steps-to-target", "examples-to-target", "wall time"
            ),
        );
        for s in [&self.scheduled, &self.fixed] {
            line(
                &mut o,
                format!(
                    "{:<32} {:>8} {:>24} {:>30} {:>26}",
                    s.label,
                    format!("{}/{}", s.reached, s.runs.len()),
                    cell(s.steps, ""),
                    cell(s.examples, ""),
                    cell(s.wall_s, " s"),
                ),
            );
        }
        for r in &self.scheduled.runs {
            let sw: Vec<String> = r
                .stages
                .iter()
                .skip(1)
                .map(|st| format!("→{} at step {}", st.batch_size, st.start_step))
                .collect();
            line(
                &mut o,
                format!(
                    "  seed {}: {} {}",
                    r.seed,
                    r.steps
                        .map_or_else(|| r.outcome.clone(), |s| format!("{s} steps")),
                    if sw.is_empty() {
                        "(no switch)".into()
                    } else {
                        sw.join(", ")
                    }
                ),
            );
        }
        if self.loses.is_empty() {
            line(&mut o, "the schedule loses on nothing measured here".into());
        }
        for l in &self.loses {
            line(&mut o, l.clone());
        }
        for r in &self.rules {
            line(&mut o, format!("rule: {r}"));
        }
        o
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a comparison serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(b: usize, lr: f64) -> BestAt {
        BestAt {
            batch_size: b,
            steps: 10,
            best_lr: lr,
            best_momentum: None,
        }
    }

    #[test]
    fn nearest_in_log_b_ties_to_the_smaller() {
        let best = [at(16, 0.1), at(64, 0.2), at(256, 0.4)];
        assert_eq!(nearest_best(&best, 20).unwrap().batch_size, 16);
        assert_eq!(nearest_best(&best, 32).unwrap().batch_size, 16); // tie in log B
        assert_eq!(nearest_best(&best, 40).unwrap().batch_size, 64);
        assert_eq!(nearest_best(&best, 5000).unwrap().batch_size, 256);
        assert!(nearest_best(&[], 5).is_none());
    }

    fn run(steps: Option<u64>, wall: f64) -> SideRun {
        SideRun {
            seed: 0,
            steps,
            examples: steps.map(|s| s * 10),
            wall_s: wall,
            outcome: if steps.is_some() {
                "reached"
            } else {
                "not reached"
            }
            .into(),
            stages: vec![],
        }
    }

    #[test]
    fn says_where_the_schedule_loses() {
        let s = Side::new(
            "schedule".into(),
            vec![run(Some(30), 1.0), run(None, 3.0), run(Some(50), 2.0)],
        );
        let f = Side::new(
            "fixed".into(),
            vec![run(Some(40), 5.0), run(Some(40), 5.0), run(Some(40), 5.0)],
        );
        assert_eq!(
            s.steps,
            Some(Spread {
                median: 40.0,
                min: 30.0,
                max: 50.0
            })
        );
        let l = losses(&s, &f);
        assert!(
            l[0].contains("reliability: it reached the target in 2/3"),
            "{l:?}"
        );
        assert_eq!(l.len(), 1, "{l:?}"); // a median tie is no loss; wall time is faster
        let f2 = Side::new(
            "fixed".into(),
            vec![run(Some(20), 0.5), run(Some(20), 0.5), run(Some(20), 0.5)],
        );
        let l = losses(&s, &f2);
        assert!(
            l.iter()
                .any(|x| x.contains("loses on steps-to-target: median 40 vs 20")),
            "{l:?}"
        );
        assert!(l.iter().any(|x| x.contains("loses on wall time")), "{l:?}");
    }
}
