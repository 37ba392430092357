//! `train --batch-schedule`: the schedule's checks (one usage error naming the flag, exit 2), η
//! per stage, and with `--from LOG` the proof beside the log's best fixed batch size.

use std::io::Write;
use std::process::ExitCode;

use scaling_lab::core::schedule::{BatchSchedule, BatchStage};
use scaling_lab::core::trial::{CancelToken, DeviceSpec, Outcome, TrialSpec};
use scaling_lab::report::schedule::{self as sched, Comparison, Planned, Side, SideRun};
use scaling_lab::report::targets::fmt_target;
use scaling_lab::report::Run;
use scaling_lab::runlog::{read_run_log, RunLog};
use scaling_lab::sweep::overrides::{check_batch_size, check_shards, check_target};
use scaling_lab::train::TrainOptions;
use scaling_lab::workload::spec::{LrRule, Preset, Workload};

use super::args::{ScheduleArg, TrainArgs};
use super::{outln, usage, CmdResult};

/// A checked schedule, and the log it was read from (`--from`).
pub struct Plan {
    pub planned: Planned,
    pub log: Option<RunLog>,
}

fn flag(msg: impl std::fmt::Display) -> anyhow::Error {
    usage(format!("--batch-schedule: {msg}"))
}

/// Checks `arg` against the workload (after the CLI's overrides) and the replicas, and sets η per
/// stage: the LR rule (`--lr-rule`, else the preset's `search.lr_rule` from `search.base_batch`),
/// or the log's best η with `--from`.
pub fn plan(
    a: &TrainArgs,
    arg: &ScheduleArg,
    preset: &Preset,
    w: &mut Workload,
    devices: &DeviceSpec,
    n_train: Option<usize>,
) -> anyhow::Result<Plan> {
    if w.dataset.is_none() {
        return Err(flag(
            "only for a trained workload (the NQM has no batches to grow)",
        ));
    }
    if w.target.metric.maximised() {
        return Err(flag(format!(
            "its stage thresholds are values of a minimised metric; {} is maximised",
            w.target.metric.name()
        )));
    }
    if a.from.is_some() && (a.lr.is_some() || a.lr_rule.is_some()) {
        return Err(usage(
            "--lr/--lr-rule: not with --from (η per stage comes from the log)",
        ));
    }
    let log = match &a.from {
        Some(p) => {
            let log = read_run_log(p).map_err(|e| usage(format!("--from: {e}")))?;
            let lw = &log.header.preset.workload;
            sched::check_same_workload(lw, &log.header.preset.name, w)
                .map_err(|e| usage(format!("--from: {} {e}", p.display())))?;
            if a.target.is_none() && w.target.value < lw.target.value {
                // No --target: the log's goal (the strictest target it measured).
                w.target.value = lw.target.value;
            }
            if w.target.value < lw.target.value {
                return Err(usage(format!(
                    "--from: the target {} is stricter than the log's goal {}: the log's best η and fixed B there are not measured",
                    fmt_target(w.target.value),
                    fmt_target(lw.target.value)
                )));
            }
            Some(log)
        }
        None => None,
    };
    let fits = |b: usize| {
        check_batch_size("batch_schedule", b, n_train).is_none()
            && check_shards("batch_schedule", &[b], devices).is_none()
    };
    let w = &*w;
    let planned = match (arg, &log) {
        (ScheduleArg::Auto, None) => {
            return Err(flag(
                "auto needs --from LOG (a sweep's log to read B_crit(target) from)",
            ))
        }
        (ScheduleArg::Auto, Some(log)) => sched::auto(&Run::of_log(log), &fits).map_err(flag)?,
        (ScheduleArg::Explicit(pairs), log) => {
            check_pairs(pairs, w, devices, n_train)?;
            match log {
                Some(log) => sched::from_log(&Run::of_log(log), pairs, w.target.value)
                    .map_err(|e| usage(format!("--from: {e}")))?,
                None => by_rule(a, preset, w, pairs),
            }
        }
    };
    let mut planned = planned;
    planned.notes.insert(
        0,
        format!(
            "to {} <= {} (the target)",
            w.target.metric.name(),
            fmt_target(w.target.value)
        ),
    );
    Ok(Plan { planned, log })
}

/// One usage error per bad stage: a threshold out of the metric's range or not looser than the
/// target, a B the replicas do not divide or above the training set.
fn check_pairs(
    pairs: &[(usize, Option<f64>)],
    w: &Workload,
    devices: &DeviceSpec,
    n_train: Option<usize>,
) -> anyhow::Result<()> {
    for (b, t) in pairs {
        if let Some(p) = check_batch_size("batch_schedule", *b, n_train)
            .or_else(|| check_shards("batch_schedule", &[*b], devices))
        {
            return Err(flag(p.message));
        }
        let Some(t) = *t else { continue };
        if let Some(p) = check_target(w.target.metric, t) {
            return Err(flag(format!("threshold {}", p.message)));
        }
        if t <= w.target.value {
            return Err(flag(format!(
                "threshold {t} is not looser than the target {}: the trial stops at the target before it would switch",
                w.target.value
            )));
        }
    }
    Ok(())
}

/// η per stage by the LR rule, from the (possibly overridden) default η at the base batch.
fn by_rule(
    a: &TrainArgs,
    preset: &Preset,
    w: &Workload,
    pairs: &[(usize, Option<f64>)],
) -> Planned {
    let rule: LrRule = a.lr_rule.map(Into::into).unwrap_or(preset.search.lr_rule);
    let base = a.base_batch.unwrap_or(preset.search.base_batch);
    let lr0 = w.defaults.learning_rate;
    let stages: Vec<BatchStage> = pairs
        .iter()
        .map(|&(b, from)| BatchStage {
            batch_size: b,
            learning_rate: rule.scale(lr0, b, base),
            from,
        })
        .collect();
    let which = if a.lr_rule.is_some() {
        "--lr-rule"
    } else {
        "the preset's search.lr_rule"
    };
    let rule_name = format!("{rule:?}").to_lowercase();
    let mut notes = vec![format!(
        "η per stage: {which} ({rule_name}) from η = {lr0} at B = {base}"
    )];
    for (i, s) in stages.iter().enumerate() {
        notes.push(format!(
            "stage {}: B = {}, η = {:.4}",
            i + 1,
            s.batch_size,
            s.learning_rate
        ));
    }
    Planned {
        schedule: BatchSchedule { stages },
        momentum: None,
        notes,
        warning: None,
    }
}

/// Prints the plan's warning and notes on stderr (the outcome stays alone on stdout).
pub fn announce(p: &Planned) {
    let mut err = std::io::stderr();
    if let Some(w) = &p.warning {
        let _ = writeln!(err, "warning: {w}");
    }
    let _ = writeln!(err, "batch schedule {}", p.schedule.spec_text());
    for n in &p.notes {
        let _ = writeln!(err, "  {n}");
    }
}

/// `--from`: the schedule and the log's best fixed-B trial, `--repeats` seeds each (interleaved,
/// so a change of the machine's load falls on both), then the comparison.
pub fn compare(
    a: &TrainArgs,
    plan: &Plan,
    preset: &str,
    w: &Workload,
    spec: &TrialSpec,
    options: &TrainOptions,
    cancel: &CancelToken,
) -> CmdResult {
    let log = plan.log.as_ref().expect("compare runs with --from");
    let run = Run::of_log(log);
    let target = w.target.value;
    let (best, logged) = sched::best_fixed(&run, target).ok_or_else(|| {
        usage(format!(
            "--from: no trial of the log reached {}",
            fmt_target(target)
        ))
    })?;
    let fixed_spec = TrialSpec {
        batch_size: best.spec.batch_size,
        metaparams: best.spec.metaparams.clone(),
        ..spec.clone()
    };
    if let Some(p) = check_shards("batch_size", &[fixed_spec.batch_size], &spec.devices) {
        return Err(usage(format!(
            "--from: the log's best fixed B: {}",
            p.message
        )));
    }
    let sched_runner = scaling_lab::sweep::runner_for(w, options)?;
    let fixed_opts = TrainOptions {
        batch_schedule: None,
        ..options.clone()
    };
    let fixed_runner = scaling_lab::sweep::runner_for(w, &fixed_opts)?;
    let n = a.repeats.unwrap_or(3) as u64;
    let seed0 = a.seed.unwrap_or(0);
    let (mut s_runs, mut f_runs) = (Vec::new(), Vec::new());
    for i in 0..n {
        let seed = seed0 + i;
        for (runner, sp, runs, what) in [
            (&sched_runner, spec, &mut s_runs, "schedule"),
            (&fixed_runner, &fixed_spec, &mut f_runs, "fixed"),
        ] {
            let sp = TrialSpec { seed, ..sp.clone() };
            let out = runner.run(w, &sp, &mut |_| {}, cancel)?;
            if matches!(out.outcome, Outcome::Cancelled { .. }) || super::interrupted() {
                return Ok(ExitCode::from(130));
            }
            let r = SideRun::of(seed, sp.batch_size, &out);
            eprintln!(
                "{what} seed {seed}: {} in {:.1} s",
                r.steps
                    .map_or_else(|| r.outcome.clone(), |s| format!("{s} steps")),
                r.wall_s
            );
            runs.push(r);
        }
    }
    let p = &plan.planned;
    let scheduled = Side::new(format!("schedule {}", p.schedule.spec_text()), s_runs);
    let fixed = Side::new(format!("fixed B = {}", fixed_spec.batch_size), f_runs);
    let c = Comparison {
        preset: preset.to_string(),
        metric: w.target.metric.name().to_string(),
        target,
        schedule: p.schedule.clone(),
        momentum: p.momentum,
        rules: sched::rules(),
        notes: p.notes.clone(),
        warning: p.warning.clone(),
        fixed_trial: best.trial_id,
        fixed_batch_size: fixed_spec.batch_size,
        fixed_lr: fixed_spec.metaparams.learning_rate,
        fixed_momentum: w
            .optimizer
            .uses_momentum()
            .then_some(best.spec.metaparams.momentum),
        fixed_logged_steps: logged,
        loses: sched::losses(&scheduled, &fixed),
        scheduled,
        fixed,
    };
    if a.json {
        outln(&serde_json::to_string(&c.to_json())?);
    } else {
        outln(c.text().trim_end());
    }
    Ok(ExitCode::SUCCESS)
}
