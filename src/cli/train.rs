//! `train`: one trial at one batch size, with a live step line on stderr and the outcome on stdout.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use scaling_lab::cluster::NodeSession;
use scaling_lab::core::events::TrialEvent;
use scaling_lab::core::runner::TrialRunner;
use scaling_lab::core::schedule::examples_to;
use scaling_lab::core::trial::{CancelToken, DeviceSpec, Outcome, TrialOutcome, TrialSpec};
use scaling_lab::report::{band, outcome_text, thousands};
use scaling_lab::sweep::overrides::{
    check_batch_size, check_shards, training_set_size, SweepOverrides,
};
use scaling_lab::train::{self, TrainOptions};
use scaling_lab::workload::applied::Setting;
use scaling_lab::workload::presets::find_preset;
use scaling_lab::workload::spec::{LrRule, Preset, Workload};

use super::args::TrainArgs;
use super::train_schedule;
use super::{check_problems, on_interrupt, outln, usage, CmdResult};

pub fn cmd_train(a: TrainArgs) -> CmdResult {
    // how long a stop may wait on a step: checked before anything runs
    let grace = super::stop_grace()?;
    let (path, preset) = find_preset(&a.preset).map_err(|e| usage(format!("--preset: {e}")))?;
    let mut w = workload_with_flags(&a, &preset)?;
    let devices = a.devices.spec()?.unwrap_or(DeviceSpec::Cpu { workers: 1 });
    super::checks::preflight_data(&w, &path)?;
    let n_train = training_set_size(&w).map_err(|e| anyhow::anyhow!("{e}"))?;
    let plan = match &a.batch_schedule {
        Some(arg) => Some(train_schedule::plan(
            &a, arg, &preset, &mut w, &devices, n_train,
        )?),
        None => None,
    };
    let spec = trial_spec(&a, &preset, &w, plan.as_ref(), n_train, &devices)?;
    // One node of a multi-node trial (src/cluster).
    let node = scaling_lab::cluster::node_session(&a.nodes)?;
    let options = train_options(&a, plan.as_ref(), node.as_ref());
    let cancel = CancelToken::new();
    {
        let c = cancel.clone();
        on_interrupt(grace, move || c.cancel());
    }
    if let Some(p) = plan.as_ref().filter(|p| p.log.is_some()) {
        if node.is_some() {
            return Err(usage(
                "--from: the comparison runs on one node; drop --nodes",
            ));
        }
        return train_schedule::compare(&a, p, &preset.name, &w, &spec, &options, &cancel);
    }
    let runner = scaling_lab::sweep::runner_for(&w, &options)?;
    let tty = std::io::stderr().is_terminal();
    let out = run_with_step_line(runner.as_ref(), &w, &spec, &cancel, tty)?;
    if let Some(n) = &node {
        end_node(n, &out);
    }
    if tty {
        let _ = writeln!(std::io::stderr());
    }
    let backend = runner.backend_on(&spec.devices);
    print_outcome(a.json, &preset.name, &backend, &spec, &w, &out)?;
    Ok(match out.outcome {
        Outcome::Cancelled { .. } => ExitCode::from(130),
        _ if super::interrupted() => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    })
}

/// The preset's workload with the flags applied: a flag the workload does not use is an error,
/// never recorded as if it had run; the others are range-checked (`SweepOverrides`).
fn workload_with_flags(a: &TrainArgs, preset: &Preset) -> anyhow::Result<Workload> {
    let mut w = preset.workload.clone();
    let many = a.devices.workers.is_some_and(|n| n > 1)
        || a.devices.gpus.is_some_and(|n| n > 1)
        || a.devices.devices.as_ref().is_some_and(|d| d.contains(','));
    super::checks::refuse_unused_flags(
        &w,
        &[
            (a.seed.is_some(), "--seed", Setting::TrainSeed),
            (many, "--workers", Setting::Workers),
            (a.no_noise_scale, "--no-noise-scale", Setting::NoNoiseScale),
        ],
    )?;
    let scales = a.lr_rule.is_some_and(|r| LrRule::from(r) != LrRule::None);
    if a.base_batch.is_some() && !scales {
        return Err(usage(
            "--base-batch: only with --lr-rule linear or sqrt (it is the batch size the rule scales the learning rate from)",
        ));
    }
    let overrides = SweepOverrides {
        target: a.target,
        steps: a.steps,
        eval_every: a.eval_every,
        lr: a.lr,
        momentum: a.momentum,
        precision: a.precision.map(Into::into),
        loss_scale: a.loss_scale,
        ..Default::default()
    };
    check_problems(&overrides.apply_to_workload(&mut w))?;
    Ok(w)
}

/// The one trial `train` runs: its first batch size and η (`batch_and_lr`), the metaparameters
/// as the optimizer applies them (no γ for SGD, …: the record states only what ran), the seed.
fn trial_spec(
    a: &TrainArgs,
    preset: &Preset,
    w: &Workload,
    plan: Option<&train_schedule::Plan>,
    n_train: Option<usize>,
    devices: &DeviceSpec,
) -> anyhow::Result<TrialSpec> {
    let mut mp = w.defaults.clone();
    let batch_size = batch_and_lr(a, preset, plan, &mut mp, n_train, devices)?;
    let mp = scaling_lab::workload::applied::as_applied(w, &mp);
    Ok(TrialSpec {
        trial_id: 0,
        batch_size,
        devices: devices.clone(),
        precision: w.precision,
        metaparams: mp,
        seed: a.seed.unwrap_or(0),
        repeat_of: None,
        confirm: None,
        calibrate: None,
    })
}

/// The trainer's options from the flags: the noise scale, the fp16 loss scale, the batch-size
/// schedule and, on one node of a multi-node trial, the cluster.
fn train_options(
    a: &TrainArgs,
    plan: Option<&train_schedule::Plan>,
    node: Option<&NodeSession>,
) -> TrainOptions {
    let mut options = TrainOptions {
        noise_scale: !a.no_noise_scale,
        ..Default::default()
    };
    if a.noise_every.is_some() {
        options.noise_every = a.noise_every;
    }
    if let Some(s) = a.loss_scale {
        let mut c = train::scaler::ScalerConfig::fp16();
        c.init_scale = s;
        options.scaler = Some(c);
    }
    options.batch_schedule = plan.map(|p| p.planned.schedule.clone());
    options.cluster = node.map(|n| n.spec.clone());
    options
}

/// Runs the trial with a live step line on stderr: redrawn in place on a terminal, every tenth
/// evaluation interval's step when piped.
fn run_with_step_line(
    runner: &dyn TrialRunner,
    w: &Workload,
    spec: &TrialSpec,
    cancel: &CancelToken,
    tty: bool,
) -> anyhow::Result<TrialOutcome> {
    let metric = w.target.metric.name();
    let mut last_metric = f64::NAN;
    let mut noise = None;
    let mut emit = |e: TrialEvent| match e {
        TrialEvent::Eval(p) => last_metric = p.metric,
        TrialEvent::NoiseScale { b_simple, .. } => noise = Some(b_simple),
        TrialEvent::Step(s) => {
            let line = format!(
                "step {:>6}  loss {:.4}  {metric} {:.4}  lr {:.3e}  {:>9.0} ex/s  scale {}  skipped {}  B_simple {}",
                s.step,
                s.loss,
                last_metric,
                s.lr,
                s.examples_per_s,
                s.loss_scale,
                s.skipped_steps,
                noise.map(|v: f64| format!("{v:.0}")).unwrap_or_else(|| "-".into())
            );
            let mut err = std::io::stderr();
            if tty {
                let _ = write!(err, "\r\x1b[2K{line}");
            } else if s.step % (w.eval_every * 10).max(1) == 0 {
                let _ = writeln!(err, "{line}");
            }
        }
        _ => {}
    };
    runner.run(w, spec, &mut emit, cancel)
}

/// This node's part of a multi-node trial is over: a goodbye tells the other nodes it finished;
/// an interrupted node must not say it (they would go on waiting for its gradients): it loses the
/// group instead.
fn end_node(n: &NodeSession, out: &TrialOutcome) {
    if matches!(out.outcome, Outcome::Cancelled { .. }) {
        scaling_lab::train::multinode::lose(format!("node {} was interrupted", n.spec.node_rank));
    } else {
        n.goodbye();
    }
}

/// The trial's outcome on stdout: one JSON object, or the outcome line and the step's make-up.
fn print_outcome(
    json: bool,
    preset: &str,
    backend: &str,
    spec: &TrialSpec,
    w: &Workload,
    out: &TrialOutcome,
) -> anyhow::Result<()> {
    let metric = w.target.metric.name();
    if json {
        let mut v = serde_json::json!({
            "preset": preset,
            "backend": backend,
            "spec": spec,
            "target": w.target,
            "eval_every": w.eval_every,
            "outcome": out,
        });
        if !out.stages.is_empty() {
            // the stages as they ran are `outcome.stages`; examples Σ steps × B to the target
            let ex = out
                .outcome
                .steps_to_target()
                .map(|s| examples_to(&out.stages, 0, s));
            v["examples_to_target"] = serde_json::json!(ex);
        }
        outln(&serde_json::to_string(&v)?);
    } else {
        let t = &out.throughput;
        // the one outcome wording of every view, with the target it was measured against
        let what = format!(
            "{} (target {metric}{}{}, eval every {})",
            outcome_text(&out.outcome),
            w.target.metric.relation(),
            w.target.value,
            w.eval_every
        );
        outln(&format!(
            "{what}, {:.1} s, {} ex/s ({}, {}, {})",
            out.wall_s,
            thousands(t.examples_per_s),
            match spec.devices.sharing() {
                Some(s) => format!("{}: {s}", spec.devices.label()),
                None => spec.devices.label(),
            },
            spec.precision.name(),
            preset
        ));
        let cost = if out.noise.cost_s > 0.0 && out.wall_s > 0.0 {
            format!(
                ", {:.1} % of the trial's time",
                100.0 * out.noise.cost_s / out.wall_s
            )
        } else {
            String::new()
        };
        let sampled = match (out.noise.samples, out.noise.sample_every) {
            (0, _) => String::new(),
            (_, 1) => format!(" (tr Σ every step{cost})"),
            (n, k) => format!(" (tr Σ on {n} steps, every {k} at the end{cost})"),
        };
        outln(&format!(
            "  step {:.2} ms = compute {:.2} ms + exchange {:.2} ms; {} params, {} B exchanged/step; loss scale {}, {} skipped; B_simple {}{sampled}; device reads {:.2}/step, {:.2}/eval",
            t.step_s * 1e3,
            t.compute_s * 1e3,
            t.exchange_s * 1e3,
            t.params,
            t.exchanged_bytes_per_step,
            out.final_loss_scale,
            out.skipped_steps,
            match (out.noise.b_simple, &out.noise.interval) {
                (Some(v), Some(i)) => format!("{v:.1} (95 % {})", band(i)),
                (Some(v), None) => format!("{v:.1}"),
                (None, _) => "n/a".into(),
            },
            t.reads_per_step,
            t.reads_per_eval,
        ));
        if !out.stages.is_empty() {
            outln(&stages_text(out, metric));
        }
        if let Some(t) = &out.transfer {
            outln(&transfer_text(w, spec, out, t));
        }
    }
    Ok(())
}

/// A trial's transfer: its probe curve (thinned evaluations) and its end-of-trial readout beside
/// the controls.
fn transfer_text(
    w: &Workload,
    spec: &TrialSpec,
    out: &TrialOutcome,
    t: &scaling_lab::core::transfer::TransferRecord,
) -> String {
    let mut s = String::new();
    if !t.curve.is_empty() {
        let pts: Vec<String> = t
            .curve
            .iter()
            .map(|p| format!("{}: {:.1}%", p.step, 100.0 * p.acc))
            .collect();
        s.push_str(&format!("transfer probe by step: {}\n", pts.join(", ")));
    }
    match &t.readout {
        Some(r) => s.push_str(&scaling_lab::report::transfer::readout_text(
            w,
            spec.batch_size,
            out.outcome.steps_to_target(),
            spec.trial_id,
            r,
        )),
        None => {
            s.push_str("transfer: no end-of-trial readout (the trial diverged or was stopped)\n")
        }
    }
    s.push_str(&transfer_time_text(
        t.cost_s,
        out.wall_s,
        t.readout.is_some(),
    ));
    s
}

/// What transfer cost, in a true sentence: `cost_s` (`TransferRecord::cost_s`) adds the step-0
/// encoding of the probe's sentences, done before the trial's clock starts, to the probes and the
/// readout, which run inside the trial's `wall_s` — so it can exceed `wall_s`.
fn transfer_time_text(cost_s: f64, wall_s: f64, readout: bool) -> String {
    format!(
        "  transfer: {cost_s:.1} s in all — the step-0 encoding of the probe's sentences before \
         the trial's clock started, then the probes{} within the trial's {wall_s:.1} s",
        if readout { " and this readout" } else { "" }
    )
}

/// The stages a scheduled trial ran, with the step of each switch and the examples to the target.
fn stages_text(out: &TrialOutcome, metric: &str) -> String {
    let parts: Vec<String> = out
        .stages
        .iter()
        .map(|s| {
            let at = match (s.from, s.start_metric) {
                (Some(t), Some(m)) => {
                    format!(" from step {} ({metric} {m:.4} <= {t})", s.start_step)
                }
                _ => String::new(),
            };
            format!(
                "B {} η {:.4}{at}: {} steps",
                s.batch_size, s.learning_rate, s.steps
            )
        })
        .collect();
    let ex = match out.outcome.steps_to_target() {
        Some(s) => format!("; examples to target {}", examples_to(&out.stages, 0, s)),
        None => String::new(),
    };
    format!("  stages: {}{ex}", parts.join(", "))
}

/// The first batch size of the trial and its η (and γ): the schedule's first stage, or
/// `--batch-size` with `--lr-rule` applied (checked against the data and the replicas).
fn batch_and_lr(
    a: &TrainArgs,
    preset: &Preset,
    plan: Option<&train_schedule::Plan>,
    mp: &mut scaling_lab::workload::spec::Metaparams,
    n_train: Option<usize>,
    devices: &DeviceSpec,
) -> anyhow::Result<usize> {
    Ok(match plan {
        Some(p) => {
            // η of the first stage (the trainer switches it with B); γ from the log if read.
            let s = &p.planned.schedule.stages[0];
            mp.learning_rate = s.learning_rate;
            mp.momentum = p.planned.momentum.unwrap_or(mp.momentum);
            train_schedule::announce(&p.planned);
            s.batch_size
        }
        None => {
            if let Some(rule) = a.lr_rule {
                let r: LrRule = rule.into();
                let base = a.base_batch.unwrap_or(preset.search.base_batch);
                mp.learning_rate = r.scale(mp.learning_rate, a.batch_size, base);
            }
            if let Some(p) = check_batch_size("batch_size", a.batch_size, n_train)
                .or_else(|| check_shards("batch_size", &[a.batch_size], devices))
            {
                return Err(usage(p.to_string()));
            }
            a.batch_size
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_transfer_time_says_what_each_number_holds() {
        // transfer can take longer than the trial's clock: its step-0 encoding ran before it
        let t = super::transfer_time_text(4.4, 2.9, true);
        assert!(t.contains("4.4 s in all"), "{t}");
        assert!(t.contains("before the trial's clock started"), "{t}");
        assert!(t.contains("this readout within the trial's 2.9 s"), "{t}");
        assert!(!t.contains("of the trial's"), "{t}");
        let t = super::transfer_time_text(1.0, 2.0, false);
        assert!(t.contains("the probes within"), "{t}");
    }
}
