//! `sweep`: runs (or resumes) a sweep with progress on stderr (indicatif bars when stderr is a
//! terminal) or plain lines on stdout, then prints the report (text or `--json`). Nothing holds
//! the stdout lock across calls, so the bars' tick thread can never wait on the main thread.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use scaling_lab::report::headless::{self, HeadlessSink};
use scaling_lab::report::ReportOptions;
use scaling_lab::runlog::link_table::find_link_table;
use scaling_lab::sweep::overrides::{check_config, SweepOverrides};
use scaling_lab::sweep::{self, SweepConfig, SweepControl};
use scaling_lab::workload::applied::Setting;
use scaling_lab::workload::presets::find_preset;
use scaling_lab::workload::spec::Preset;

use super::args::SweepArgs;
use super::{
    on_interrupt, out, outln, print_log_warnings, read_log_quietly, stdout_closed, usage, CmdResult,
};

/// Largest device count of the projection printed after a sweep.
const SWEEP_MAX_DEVICES: usize = 1024;

/// Progress bars on stderr (overall + one spinner per running trial); lines go above the bars.
struct Bars {
    multi: MultiProgress,
    overall: Option<ProgressBar>,
    trials: HashMap<u64, ProgressBar>,
}

impl Bars {
    fn new() -> Self {
        Bars {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10)),
            overall: None,
            trials: HashMap::new(),
        }
    }
}

impl HeadlessSink for Bars {
    fn line(&mut self, text: &str) {
        let _ = self.multi.println(text);
    }
    fn planned(&mut self, total: usize, done: usize) {
        let pb = self.multi.add(ProgressBar::new(total as u64));
        pb.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} trials  {elapsed_precise}  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb.set_position(done as u64);
        self.overall = Some(pb);
    }
    fn grown(&mut self, total: usize) {
        if let Some(pb) = &self.overall {
            pb.set_length(total as u64);
        }
    }
    fn trial_started(&mut self, trial_id: u64, label: &str) {
        let pb = self.multi.add(ProgressBar::new_spinner());
        pb.set_style(
            ProgressStyle::with_template("  {spinner} {prefix} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        pb.set_prefix(label.to_string());
        pb.enable_steady_tick(Duration::from_millis(200));
        self.trials.insert(trial_id, pb);
    }
    fn trial_progress(&mut self, trial_id: u64, msg: &str) {
        if let Some(pb) = self.trials.get(&trial_id) {
            pb.set_message(msg.to_string());
        }
    }
    fn trial_ended(&mut self, trial_id: u64) {
        if let Some(pb) = self.trials.remove(&trial_id) {
            pb.finish_and_clear();
            self.multi.remove(&pb);
        }
    }
    fn saved(&mut self) {
        if let Some(pb) = &self.overall {
            pb.inc(1);
        }
    }
    fn best(&mut self, msg: &str) {
        if let Some(pb) = &self.overall {
            pb.set_message(msg.to_string());
        }
    }
    fn finish(&mut self) {
        for (_, pb) in self.trials.drain() {
            pb.finish_and_clear();
        }
        if let Some(pb) = self.overall.take() {
            pb.finish_and_clear();
        }
        let _ = self.multi.clear();
    }
}

/// Plain lines on stdout (no terminal on stderr). A closed stdout cancels the sweep.
struct Lines {
    control: SweepControl,
}

impl HeadlessSink for Lines {
    fn line(&mut self, text: &str) {
        if !outln(text) {
            self.control.cancel();
        }
    }
}

/// Nothing (`--json` without a terminal): the JSON is the only output.
struct Quiet;

impl HeadlessSink for Quiet {
    fn line(&mut self, _text: &str) {}
}

/// The cluster front end's output (src/cluster renders nothing itself): reports and progress on
/// stdout, status lines on stderr.
struct ClusterCli {
    progress: Stdout,
}

/// Progress lines and the report on stdout (the cluster sweeps' progress view).
struct Stdout;

impl HeadlessSink for Stdout {
    fn line(&mut self, text: &str) {
        outln(text);
    }
}

impl scaling_lab::cluster::ClusterOutput for ClusterCli {
    fn out(&mut self, text: &str) {
        out(text);
    }
    fn note(&mut self, line: &str) {
        eprintln!("{line}");
    }
    fn progress(&mut self) -> &mut dyn HeadlessSink {
        &mut self.progress
    }
}

/// Flags that a resumed sweep cannot change (its header fixes the plan).
fn resume_conflicts(a: &SweepArgs) -> Option<&'static str> {
    if a.preset.is_some() {
        return Some("a preset argument");
    }
    [
        (a.trials.is_some(), "--trials"),
        (a.batch_sizes.is_some(), "--batch-sizes"),
        (a.devices.workers.is_some(), "--workers"),
        (a.devices.devices.is_some(), "--devices"),
        (a.devices.gpus.is_some(), "--gpus"),
        (a.precision.is_some(), "--precision"),
        (a.seed.is_some(), "--seed"),
        (a.target.is_some(), "--target"),
        (a.targets.is_some(), "--targets"),
        (a.concurrency.is_some(), "--concurrency"),
        (a.trials_per_device.is_some(), "--trials-per-device"),
        (a.repeats.is_some(), "--repeats"),
        (a.max_trials.is_some(), "--max-trials"),
        (a.widen.is_some(), "--widen"),
        (a.fuse.is_some(), "--fuse"),
    ]
    .into_iter()
    .find(|(given, _)| *given)
    .map(|(_, flag)| flag)
}

/// The configuration a `sweep` command asks for (checked; nothing has run yet).
pub fn sweep_config(
    a: &SweepArgs,
    runs_dir: PathBuf,
) -> anyhow::Result<(SweepConfig, Option<PathBuf>)> {
    if let Some(log_path) = &a.resume {
        if let Some(flag) = resume_conflicts(a) {
            return Err(usage(format!(
                "--resume: {flag} cannot change a resumed sweep (its run log fixes the plan); drop it, or start a new sweep"
            )));
        }
        let log = read_log_quietly(log_path).context("--resume")?;
        // What readers warn about, resume refuses: appending would extend a log whose trials
        // its header's plan does not derive.
        if let Some(m) = &log.off_plan {
            anyhow::bail!("--resume: {m}");
        }
        print_log_warnings(&log);
        let cfg = SweepConfig::from_header(&log.header, runs_dir);
        // the stage's plan may be restated (the very plan the log holds), never changed
        if let Some(c) = a.confirm.filter(|c| c.0 != cfg.preset.sweep.confirm) {
            return Err(usage(format!(
                "--resume: --confirm {} cannot change a resumed sweep: its run log plans the \
                 confirm stage {} (drop the flag, or start a new sweep)",
                c.0.map_or("off".to_string(), |p| p.to_string()),
                cfg.preset
                    .sweep
                    .confirm
                    .map_or("off".to_string(), |p| p.to_string())
            )));
        }
        if let Some(u) = a.until.filter(|u| u.0 != cfg.until) {
            let show = |v: Option<f64>| v.map_or("off".to_string(), |v| v.to_string());
            return Err(usage(format!(
                "--resume: --until {} cannot change a resumed sweep: its run log's is {} (drop \
                 the flag, or start a new sweep)",
                show(u.0),
                show(cfg.until)
            )));
        }
        if let Some(p) = check_config(&cfg).iter().find(|p| p.blocking) {
            anyhow::bail!(
                "{}: the header's {} is invalid: {}",
                log_path.display(),
                p.field,
                p.message
            );
        }
        return Ok((cfg, Some(log_path.clone())));
    }
    let (path, preset) = study_of_args(a)?;
    let many = a.devices.workers.is_some_and(|n| n > 1);
    super::checks::refuse_unused_flags(&preset.workload, &[(many, "--workers", Setting::Workers)])?;
    super::checks::preflight_data(&preset.workload, &path)?;
    let mut cfg = SweepConfig::from_preset(preset, Some(path.clone()), runs_dir);
    let overrides = SweepOverrides {
        batch_sizes: a.batch_sizes.clone(),
        trials: a.trials,
        devices: a.devices.spec()?,
        concurrency: a.concurrency,
        precision: a.precision.map(Into::into),
        seed: a.seed,
        target: a.target,
        targets: a.targets.clone(),
        confirm: a.confirm.map(|c| c.0),
        ..Default::default()
    };
    // A problem with a setting no flag gave is the preset's (file:line:col), not a flag's.
    let given = |field: &str| match field {
        "batch_sizes" => a.batch_sizes.is_some(),
        "shards" => a.batch_sizes.is_some() || overrides.devices.is_some(),
        "trials" => a.trials.is_some(),
        "workers" => overrides.devices.is_some(),
        "concurrency" => a.concurrency.is_some(),
        "precision" => a.precision.is_some(),
        "target" => a.target.is_some(),
        "confirm" => a.confirm.is_some(),
        _ => true,
    };
    let problems = overrides.apply(&mut cfg);
    super::checks::check_blamed(&problems, &given, &path, &cfg.batch_sizes)?;
    if a.concurrency.is_some() {
        // an explicit --concurrency wins over the scheduler's choice
        cfg.preset.sweep.auto_concurrency = false;
    }
    if let Some(k) = a.trials_per_device {
        if k > 0 && cfg.devices.gpu_ids().is_none() {
            return Err(usage(
                "--trials-per-device: a GPU setting (with --devices cuda:…/wgpu:… or --gpus N)",
            ));
        }
        cfg.preset.sweep.trials_per_device = k as usize;
        cfg.validate()
            .map_err(|e| usage(format!("--trials-per-device: {e:#}")))?;
    }
    if let Some(r) = a.repeats {
        cfg.repeats = r;
    }
    match a.until.map(|u| u.0) {
        Some(Some(rel)) => {
            if !(rel.is_finite() && rel > 0.0 && rel < 1.0) {
                return Err(usage(format!(
                    "--until: {rel} is not a relative half-width in (0, 1), e.g. 0.1"
                )));
            }
            cfg.until = Some(rel);
        }
        // `--until off`: not even the preset's confirm_until
        Some(None) => {
            cfg.until = None;
            cfg.preset.sweep.confirm_until = None;
        }
        None => {}
    }
    if let Some(n) = a.widen {
        cfg.widen = n;
    }
    if let Some(f) = a.fuse {
        cfg.fuse = f;
    }
    if a.max_trials.is_some() {
        if cfg.until.is_none() {
            return Err(usage("--max-trials: only with --until REL"));
        }
        cfg.max_trials = a.max_trials;
    }
    Ok((cfg, None))
}

/// The study the arguments name: a preset, or a model and a dataset (and an optimizer) alone —
/// a minimal study the calibration stage completes (`workload::study`); with a preset, the
/// model, dataset or optimizer given replace its own, and the settings it tuned for them are
/// left to the calibration stage.
fn study_of_args(a: &SweepArgs) -> Result<(PathBuf, Preset), anyhow::Error> {
    use scaling_lab::model::family::registration;
    use scaling_lab::model::Input;
    use scaling_lab::workload::study::{self, Choice};
    let picked = a.model.is_some() || a.dataset.is_some() || a.optimizer.is_some();
    let Some(name) = a.preset.clone().or_else(|| (!picked).then(String::new)) else {
        // no preset: a model, a dataset and an optimizer
        let model = a
            .model
            .as_deref()
            .ok_or_else(|| usage("--model: give the model too (e.g. --model cnn), or a preset"))?;
        let opt = a.optimizer.ok_or_else(|| {
            usage(
                "--optimizer: give the optimizer too (sgd, momentum, nesterov, adam), or a preset",
            )
        })?;
        let model = Choice::parse(model).map_err(|m| usage(format!("--model: {m}")))?;
        let table = match a.dataset.as_deref() {
            Some(d) => {
                let choice = Choice::parse(d).map_err(|m| usage(format!("--dataset: {m}")))?;
                let (sources, _) = study::dataset_sources();
                study::dataset_table(&choice, a.format.as_deref(), &sources)
                    .map_err(|e| usage(e.to_string()))?
            }
            None if registration(&model.head).is_ok_and(|f| f.input == Input::None) => {
                String::new()
            }
            None => {
                return Err(usage(
                    "--dataset: give the dataset too (e.g. --dataset mnist), or a preset",
                ))
            }
        };
        let p = study::study(&model, &table, opt.into()).map_err(|e| usage(e.to_string()))?;
        return Ok((PathBuf::from(format!("{}.toml", p.name)), p));
    };
    if name.is_empty() {
        return Err(usage(
            "give a preset (e.g. digits-mlp-momentum), --model/--dataset/--optimizer, or --resume LOG",
        ));
    }
    let (path, preset) = find_preset(&name).map_err(|e| usage(format!("preset: {e}")))?;
    if !picked {
        return Ok((path, preset));
    }
    // the preset's workload with the parts given replaced: a new study to calibrate
    let w = &preset.workload;
    let model = match a.model.as_deref() {
        Some(m) => Choice::parse(m).map_err(|m| usage(format!("--model: {m}")))?,
        None => {
            let t = toml::to_string(&w.model).map_err(|e| anyhow::anyhow!("{e}"))?;
            let table: toml::Table = t.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
            Choice {
                head: table
                    .get("kind")
                    .and_then(|k| k.as_str())
                    .unwrap_or("")
                    .to_string(),
                settings: table
                    .iter()
                    .filter(|(k, _)| k.as_str() != "kind")
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect(),
            }
        }
    };
    let table = match a.dataset.as_deref() {
        Some(d) => {
            let choice = Choice::parse(d).map_err(|m| usage(format!("--dataset: {m}")))?;
            let (sources, _) = study::dataset_sources();
            study::dataset_table(&choice, a.format.as_deref(), &sources)
                .map_err(|e| usage(e.to_string()))?
        }
        None => match &w.dataset {
            Some(d) => toml::to_string(d).map_err(|e| anyhow::anyhow!("{e}"))?,
            None => String::new(),
        },
    };
    let opt = a.optimizer.map_or(w.optimizer, Into::into);
    let p = study::study(&model, &table, opt).map_err(|e| usage(e.to_string()))?;
    Ok((PathBuf::from(format!("{}.toml", p.name)), p))
}

pub fn cmd_sweep(a: SweepArgs, runs_dir: PathBuf) -> CmdResult {
    // how long a stop may wait on a step: checked before anything runs
    let grace = super::stop_grace()?;
    // Sweep directories, --slurm, --shard, --nodes: src/cluster.
    let cluster = scaling_lab::cluster::wants_sweep(&a.slurm, &a.nodes, a.resume.as_deref());
    if cluster && a.resume.as_ref().is_some_and(|p| p.is_dir()) {
        return scaling_lab::cluster::sweep_hook(
            &a.slurm,
            &a.nodes,
            None,
            a.resume.as_deref(),
            &runs_dir,
            a.json,
            &mut ClusterCli { progress: Stdout },
        );
    }
    let (cfg, resume) = sweep_config(&a, runs_dir.clone())?;
    if cluster && cfg.preset.calibrate.is_some() {
        // the shards of a cluster sweep are planned before anything runs: the batch sizes and
        // ranges a calibration would choose cannot be
        return Err(usage(format!(
            "{} leaves values for the lab to calibrate, and a cluster sweep is planned before \
             it runs: calibrate here first (`scaling-lab sweep … --calibrate-only \
             --save-preset NAME`), then run the saved preset with --slurm or --nodes",
            cfg.preset.name
        )));
    }
    if cluster {
        return scaling_lab::cluster::sweep_hook(
            &a.slurm,
            &a.nodes,
            Some(cfg),
            resume.as_deref(),
            &runs_dir,
            a.json,
            &mut ClusterCli { progress: Stdout },
        );
    }
    let runner = sweep::runner_for(&cfg.preset.workload, &super::misc::sweep_options())?;
    let mut cfg = cfg;
    if a.slurm.dry_run {
        return dry_run(&cfg, runner.as_ref(), resume.as_deref());
    }
    if resume.is_none() {
        announce_gpu_calibration(&cfg);
    }
    if resume.is_none() && cfg.preset.sweep.auto_concurrency {
        let l = sweep::layout::resolve(&cfg, runner.as_ref())?;
        eprintln!(
            "layout: {} trial(s) at once{} ({})",
            l.concurrency,
            l.threads_per_trial
                .map_or(String::new(), |t| format!(", {t} thread(s) each")),
            l.why
        );
        cfg.concurrency = l.concurrency;
        cfg.preset.sweep.auto_concurrency = false;
    }
    // said once the sweep has started (a sweep refused before its first trial says only why)
    let mut fuse_note = None;
    if resume.is_none() {
        let (fuse, why) = sweep::layout::resolve_fuse(&cfg, runner.as_ref())?;
        fuse_note = Some(format!("{} ({why})", fuse_line(fuse)));
        cfg.fuse = fuse;
        // how long it may take, before a sweep that long starts (`--dry-run`'s estimate)
        for w in super::checks::sweep_warnings(&cfg, runner.as_ref()) {
            eprintln!("warning: {w}");
        }
    }
    if a.calibrate_only {
        if !cfg.preset.calibrate.is_some_and(|c| c.any()) {
            return Err(usage(
                "--calibrate-only: this study sets everything a calibration would choose (leave \
                 the target, [search], batch_sizes or step_budget out of the preset)",
            ));
        }
        cfg.calibrate_only = true;
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(4096);
    let control = SweepControl::new();
    {
        let c = control.clone();
        on_interrupt(grace, move || c.cancel());
    }
    let handle = sweep::scheduler::start_sweep_with(cfg, runner, tx, resume, control.clone())?;
    if let Some(n) = fuse_note {
        eprintln!("{n}");
    }
    let log_path = handle.log_path().to_path_buf();
    let stderr_tty = std::io::stderr().is_terminal();
    let mut sink: Box<dyn HeadlessSink> = if stderr_tty {
        Box::new(Bars::new())
    } else if a.json {
        Box::new(Quiet)
    } else {
        Box::new(Lines {
            control: control.clone(),
        })
    };
    headless::run_headless(rx, sink.as_mut());
    drop(sink);
    let result = handle.join()?;
    if let Some(name) = &a.save_preset {
        save_preset(name, &result, &log_path);
    }
    // The way every sweep ends: the report of the sweep's own records (the log is not read back).
    let table = find_link_table(&log_path).0;
    let report = scaling_lab::report::of_sweep(
        &result,
        &ReportOptions {
            max_devices: SWEEP_MAX_DEVICES,
            link_table: table.as_ref(),
            ..Default::default()
        },
    );
    if a.json {
        outln(&serde_json::to_string_pretty(&report.to_json())?);
    } else {
        out(&format!("\n{}", report.text()));
    }
    if result.cancelled && !stdout_closed() {
        eprintln!("{}", headless::resume_message(&log_path, &result.counts));
        return Ok(ExitCode::from(130));
    }
    if stdout_closed() {
        // `sweep … | head`: the reader has what it wanted; the finished trials are in the log.
        return Ok(ExitCode::SUCCESS);
    }
    let failed = report.errors.len();
    let recorded = report.kept.trials;
    if failed > 0 && recorded == 0 {
        anyhow::bail!(
            "all {failed} trials failed to run; first: trial {}: {}",
            report.errors[0].trial_id,
            super::one_line(&report.errors[0].message)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--save-preset NAME`: the study as run (a calibrated study once its calibration stage chose
/// it) as the user's preset; a calibration that did not finish saves nothing and says so.
fn save_preset(name: &str, result: &sweep::SweepResult, log: &std::path::Path) {
    let p = &result.header.preset;
    if p.calibrate.is_some() && result.calibrated.is_none() {
        eprintln!(
            "--save-preset {name}: not saved: the calibration stage did not finish (resume the \
             sweep with --save-preset to save it)"
        );
        return;
    }
    let comment = format!(
        "{name}: {}\nsaved by scaling-lab from the run log {}{}\na sweep of this preset re-runs \
         the same study (`scaling-lab sweep {name}`)",
        p.description,
        log.display(),
        if result.calibrated.is_some() {
            " (its calibration stage chose the target, ranges, batch sizes and budget: docs/calibration.md)"
        } else {
            ""
        }
    );
    match scaling_lab::workload::presets::save_user_preset(name, p, &comment) {
        Ok(path) => eprintln!("saved the study as preset {name}: {}", path.display()),
        Err(m) => eprintln!("--save-preset {name}: not saved: {m}"),
    }
}

/// Says why a GPU-scale preset on the CPU pauses before it starts: its calibration (when none is
/// cached yet), 2 training steps at the smallest B, which can take a minute there.
fn announce_gpu_calibration(cfg: &SweepConfig) {
    if cfg.preset.sweep.gpu_scale
        && cfg.devices.is_cpu()
        && sweep::layout::cached_calibration(cfg).is_none()
    {
        eprintln!(
            "{} is a GPU-scale preset: estimating its CPU wall time (2 training steps at the smallest B, then cached)…",
            cfg.preset.name
        );
    }
}

/// "fused groups: up to 6 trials of a batch size as one program" / "fused groups: off".
fn fuse_line(f: scaling_lab::workload::spec::Fuse) -> String {
    match f.members() {
        Some(k) if k > 1 => {
            format!("fused groups: up to {k} trials of a batch size as one program")
        }
        _ => "fused groups: off (every trial alone)".into(),
    }
}

/// `sweep --dry-run` (without --slurm): the plan, the thread layout the scheduler would use and
/// its wall-time estimate (`sweep::estimate`); runs no trial of the sweep (the layout calibration may run, once per
/// workload, and is cached in the runs directory).
fn dry_run(
    cfg: &SweepConfig,
    runner: &dyn scaling_lab::core::runner::TrialRunner,
    resume: Option<&std::path::Path>,
) -> CmdResult {
    let trials = cfg.batch_sizes.len() * cfg.trials_per_batch;
    match cfg.preset.calibrate.filter(|c| c.any()) {
        Some(c) if cfg.batch_sizes.is_empty() => outln(&format!(
            "{}: a calibrated study on {}: the calibration stage chooses {} from pilot \
             trials first (docs/calibration.md)",
            cfg.preset.name,
            cfg.devices.label(),
            c.words()
        )),
        _ => outln(&format!(
            "{}: {} batch sizes {:?} × {} trials = {} trials on {}",
            cfg.preset.name,
            cfg.batch_sizes.len(),
            cfg.batch_sizes,
            cfg.trials_per_batch,
            trials,
            cfg.devices.label()
        )),
    };
    if resume.is_some() {
        outln("resume: the log's recorded concurrency is kept");
    }
    announce_gpu_calibration(cfg);
    let layout = sweep::layout::resolve(cfg, runner)?;
    outln(&format!(
        "layout: {} trial(s) at once{} ({})",
        layout.concurrency,
        layout
            .threads_per_trial
            .map_or(String::new(), |t| format!(", {t} thread(s) each")),
        layout.why
    ));
    let mut cfg = cfg.clone();
    cfg.concurrency = layout.concurrency;
    if resume.is_none() {
        let (fuse, why) = sweep::layout::resolve_fuse(&cfg, runner)?;
        outln(&format!("{} ({why})", fuse_line(fuse)));
        cfg.fuse = fuse;
    } else {
        outln(&format!("{} (the log's)", fuse_line(cfg.fuse)));
    }
    // a resumed sweep: what is left of it
    let done = match resume {
        Some(p) => scaling_lab::runlog::read_run_log(p)?.trials,
        None => Vec::new(),
    };
    let est = sweep::estimate::sweep_estimate(&cfg, runner, cfg.fuse.members(), &done)?.1;
    match &est {
        Some(e) => {
            for l in estimate_lines(e) {
                outln(&l);
            }
        }
        None => {
            outln("estimated wall time: not available for this device/workload");
        }
    }
    if let Some(w) = sweep::estimate::gpu_scale_warning(&cfg, est.as_ref()) {
        eprintln!("warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `--dry-run`'s estimate: the bound and the expectation, then the trials of each stage.
fn estimate_lines(e: &sweep::estimate::Estimate) -> Vec<String> {
    use sweep::estimate::human_s;
    if let Some(p) = e.pilots_text() {
        return vec![format!("estimated wall time: {p}")];
    }
    let Some(most) = e.at_most_s else {
        return vec![
            "estimated wall time: not known (the calibration stage did not choose a study)".into(),
        ];
    };
    let expected = e.expected_text().unwrap_or_else(|| {
        "expected: known once trials finish (they stop at the target or early, so most take far \
         less; the live ETA and later dry-runs use them)"
            .into()
    });
    vec![
        format!(
            "estimated wall time: at most {} (every trial to its full budget); {expected}",
            human_s(most)
        ),
        format!(
            "  trials: {} ({} in all at most), {} at once{}",
            e.trials_text(),
            e.most_trials(),
            e.concurrency,
            if e.fuse > 1 {
                format!(", fused groups of up to {}", e.fuse)
            } else {
                String::new()
            }
        ),
        format!(
            "  the longest single trial or group: at most {}",
            human_s(e.longest_trial_s)
        ),
    ]
}
