//! scaling-lab: the TUI (no arguments) and the headless CLI, two thin views over the same engine.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand, ValueEnum};

use scaling_lab::core::{CancelToken, DeviceSpec, Outcome, RunnerFactory, TrialEvent, TrialSpec};
use scaling_lab::runlog;
use scaling_lab::sweep::{self, SweepConfig};
use scaling_lab::train::{self, TrainOptions};
use scaling_lab::workload::load::{find_preset, list_presets, presets_dir};
use scaling_lab::workload::spec::{LrRule, Precision};

#[derive(Parser)]
#[command(
    name = "scaling-lab",
    version,
    about = "How batch size and data parallelism change steps-to-target. No command opens the TUI."
)]
struct Cli {
    /// Directory of run logs (default ./runs; env SCALING_LAB_RUNS_DIR).
    #[arg(long, global = true, value_name = "DIR")]
    runs_dir: Option<PathBuf>,
    /// Preset the TUI's setup screen selects first.
    #[arg(long)]
    preset: Option<String>,
    /// Open this run log in the TUI (read-only; tails it while it grows).
    #[arg(long, value_name = "LOG")]
    open: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Clone, Copy, ValueEnum)]
enum PrecisionArg {
    Fp32,
    Bf16,
    Fp16,
}

impl From<PrecisionArg> for Precision {
    fn from(p: PrecisionArg) -> Self {
        match p {
            PrecisionArg::Fp32 => Precision::Fp32,
            PrecisionArg::Bf16 => Precision::Bf16,
            PrecisionArg::Fp16 => Precision::Fp16,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum LrRuleArg {
    None,
    Linear,
    Sqrt,
}

#[derive(Args, Clone)]
struct DeviceArgs {
    /// Data-parallel CPU workers (threads), 1-8 typical.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// CUDA devices, e.g. cuda:0,1 (needs a build with --features cuda).
    #[arg(long, value_name = "LIST", conflicts_with = "workers")]
    devices: Option<String>,
    /// Use the first N CUDA GPUs.
    #[arg(long, value_name = "N", conflicts_with_all = ["workers", "devices"])]
    gpus: Option<usize>,
}

impl DeviceArgs {
    fn spec(&self) -> anyhow::Result<DeviceSpec> {
        if let Some(n) = self.gpus {
            let found = train::runner::cuda::probe().map_err(|e| anyhow::anyhow!(e))?;
            anyhow::ensure!(
                n >= 1 && n <= found,
                "--gpus {n}: {found} CUDA device(s) found"
            );
            return Ok(DeviceSpec::Cuda {
                devices: (0..n).collect(),
            });
        }
        if let Some(list) = &self.devices {
            let mut ids = vec![];
            for part in list.split(',') {
                let p = part.trim();
                let id = p.strip_prefix("cuda:").unwrap_or(p);
                ids.push(
                    id.parse::<usize>()
                        .with_context(|| format!("--devices: `{p}` is not cuda:N"))?,
                );
            }
            train::runner::cuda::probe().map_err(|e| anyhow::anyhow!(e))?;
            return Ok(DeviceSpec::Cuda { devices: ids });
        }
        anyhow::ensure!(self.workers >= 1, "--workers must be at least 1");
        Ok(DeviceSpec::Cpu {
            workers: self.workers,
        })
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Train one trial at one batch size and report steps-to-target.
    Train(TrainArgs),
    /// Run a batch-size sweep (or resume one) and print the report.
    Sweep(SweepArgs),
    /// Compare two or more run logs side by side.
    Compare {
        #[arg(required = true, num_args = 2..)]
        logs: Vec<PathBuf>,
    },
    /// Export a run log as CSV / JSON / SVG chart.
    Export {
        log: PathBuf,
        #[arg(long)]
        svg: Option<PathBuf>,
        #[arg(long)]
        csv: Option<PathBuf>,
        #[arg(long)]
        json: Option<PathBuf>,
        /// Per-trial CSV (metaparameters and outcomes).
        #[arg(long)]
        trials_csv: Option<PathBuf>,
    },
    /// Import Google's released batch_science measurements (<dir>/<batch_size>/<trial>/...).
    ImportBatchScience {
        dir: PathBuf,
        /// Measurement column that must reach the target.
        #[arg(long, default_value = "val/classification_error")]
        metric: String,
        /// Target value (the metric must be <= this).
        #[arg(long)]
        target: f64,
        /// Output run log (default: <runs-dir>/<name>.jsonl).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print a run log's report: steps-to-target per B, regimes, fit, noise scale, and the
    /// time-to-target projection over 1 … --max-devices devices.
    Report {
        log: PathBuf,
        /// Largest device count G in the projection (powers of two up to it).
        #[arg(long, default_value_t = 1024)]
        max_devices: usize,
        /// Print the analysis and projections as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the presets.
    Presets,
    /// Throughput benchmark: MLP 784-256-10 step and every preset model.
    Bench {
        /// Timed steps per measurement.
        #[arg(long, default_value_t = 200)]
        steps: usize,
        #[arg(long, value_enum, default_value = "fp32")]
        precision: PrecisionArg,
    },
    /// Render the TUI screens to SVG (from the run logs in --runs-dir).
    Screenshot {
        #[arg(long, default_value = "screenshots")]
        out: PathBuf,
    },
}

#[derive(Args)]
struct TrainArgs {
    /// Preset name (e.g. mnist-cnn-momentum) or path.
    #[arg(long, default_value = "digits-mlp-momentum")]
    preset: String,
    #[arg(long, default_value_t = 128)]
    batch_size: usize,
    #[command(flatten)]
    devices: DeviceArgs,
    /// Learning rate (default: the preset's).
    #[arg(long)]
    lr: Option<f64>,
    /// Momentum γ (or Adam β1).
    #[arg(long)]
    momentum: Option<f64>,
    /// Scale the learning rate from --base-batch to --batch-size.
    #[arg(long, value_enum)]
    lr_rule: Option<LrRuleArg>,
    #[arg(long, default_value_t = 128)]
    base_batch: usize,
    #[arg(long, value_enum)]
    precision: Option<PrecisionArg>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Step budget (default: the preset's).
    #[arg(long)]
    steps: Option<u64>,
    /// Target value of the preset's metric.
    #[arg(long)]
    target: Option<f64>,
    #[arg(long)]
    eval_every: Option<u64>,
    /// Initial dynamic loss scale for fp16 (default 65536).
    #[arg(long)]
    loss_scale: Option<f64>,
    /// Skip the gradient-noise-scale estimate.
    #[arg(long)]
    no_noise_scale: bool,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    json: bool,
    // --- scaling-lab cluster hook (H6; the lead ports it into src/cli) ---
    #[command(flatten)]
    nodes: scaling_lab::cluster::NodeArgs,
}

#[derive(Args)]
struct SweepArgs {
    /// Preset name or path (not needed with --resume).
    preset: Option<String>,
    /// Batch sizes, e.g. 16,32,64 (default: the preset's).
    #[arg(long, value_delimiter = ',')]
    batch_sizes: Option<Vec<usize>>,
    /// Trials per batch size.
    #[arg(long)]
    trials: Option<usize>,
    #[command(flatten)]
    devices: DeviceArgs,
    /// Trials run at once.
    #[arg(long)]
    concurrency: Option<usize>,
    #[arg(long, value_enum)]
    precision: Option<PrecisionArg>,
    #[arg(long)]
    seed: Option<u64>,
    /// Resume the sweep logged in this file (runs only the missing trials).
    #[arg(long, value_name = "LOG")]
    resume: Option<PathBuf>,
    /// Print the analysis as JSON at the end instead of the text report.
    #[arg(long)]
    json: bool,
    // --- scaling-lab cluster hook (H6; the lead ports it into src/cli) ---
    #[command(flatten)]
    slurm: scaling_lab::cluster::SlurmArgs,
    #[command(flatten)]
    nodes: scaling_lab::cluster::NodeArgs,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match real_main(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn factory() -> RunnerFactory {
    Arc::new(|w| train::runner_for(w, &TrainOptions::default()))
}

fn real_main(cli: Cli) -> anyhow::Result<ExitCode> {
    let runs_dir = runlog::writer::resolve_runs_dir(cli.runs_dir.clone());
    match cli.command {
        None => {
            let mut opts = scaling_lab::tui::TuiOptions::new(runs_dir, presets_dir());
            opts.initial_preset = cli.preset;
            opts.open_log = cli.open;
            if let Ok(n) = train::runner::cuda::probe() {
                opts.gpu_labels = (0..n).map(|i| format!("cuda:{i}")).collect();
            }
            scaling_lab::tui::run(opts, factory())?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Train(a)) => cmd_train(a),
        Some(Cmd::Sweep(a)) => cmd_sweep(a, runs_dir),
        Some(Cmd::Compare { logs }) => {
            let mut read = vec![];
            for l in &logs {
                let log = scaling_lab::cluster::open_log_or_dir(l)?; // H6 cluster hook
                for w in &log.warnings {
                    eprintln!("warning: {w}");
                }
                read.push(log);
            }
            let c = runlog::compare::compare(&read);
            print!("{}", scaling_lab::report::render_compare(&c));
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Export {
            log,
            svg,
            csv,
            json,
            trials_csv,
        }) => {
            let l = scaling_lab::cluster::open_log_or_dir(&log)?; // H6 cluster hook
            for w in &l.warnings {
                eprintln!("warning: {w}");
            }
            if svg.is_none() && csv.is_none() && json.is_none() && trials_csv.is_none() {
                bail!("nothing to export: give --svg, --csv, --json and/or --trials-csv");
            }
            let a = l.analysis();
            if let Some(p) = svg {
                runlog::export::write_file(&p, &runlog::export::svg_for_log(&l)?)?;
                println!("wrote {}", p.display());
            }
            if let Some(p) = csv {
                runlog::export::write_file(&p, &runlog::export::points_csv(&a))?;
                println!("wrote {}", p.display());
            }
            if let Some(p) = trials_csv {
                runlog::export::write_file(&p, &runlog::export::trials_csv(&l.trials))?;
                println!("wrote {}", p.display());
            }
            if let Some(p) = json {
                let v = runlog::export::export_json(&l);
                runlog::export::write_file(&p, &serde_json::to_string_pretty(&v)?)?;
                println!("wrote {}", p.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::ImportBatchScience {
            dir,
            metric,
            target,
            out,
        }) => {
            let log = runlog::batch_science::import_batch_science(&dir, &metric, target)?;
            let path = match out {
                Some(p) => p,
                None => {
                    let name = dir
                        .components()
                        .rev()
                        .take(4)
                        .map(|c| c.as_os_str().to_string_lossy().to_string())
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect::<Vec<_>>()
                        .join("-");
                    runs_dir.join(format!("batch-science-{name}.jsonl"))
                }
            };
            let p = runlog::batch_science::save_import(&log, &path)?;
            println!("imported {} trials into {}", log.trials.len(), p.display());
            print!(
                "{}",
                scaling_lab::report::render_report(
                    &log.analysis(),
                    &scaling_lab::report::ReportInfo::from_log(&log)
                )
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Report {
            log,
            max_devices,
            json,
        }) => {
            let l = scaling_lab::cluster::open_log_or_dir(&log)?; // H6 cluster hook
            for w in &l.warnings {
                eprintln!("warning: {w}");
            }
            if json {
                let a = l.analysis();
                let v = serde_json::json!({
                    "log": log,
                    "analysis": a,
                    "projections": scaling_lab::report::projections_for_log(&l, max_devices),
                });
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!(
                    "{}",
                    scaling_lab::report::render_log_report(&l, max_devices)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Presets) => {
            for (path, p) in list_presets(&presets_dir()) {
                match p {
                    Ok(p) => println!("{:<32} {}", p.name, p.description),
                    Err(e) => println!("{:<32} INVALID: {e}", path.display()),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Bench { steps, precision }) => {
            scaling_lab::train::bench::print_report(steps, precision.into());
            Ok(ExitCode::SUCCESS)
        }
        Some(Cmd::Screenshot { out }) => {
            let files = scaling_lab::tui::render_screenshots(&out, &runs_dir)?;
            for f in files {
                println!("wrote {}", f.display());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn cmd_train(a: TrainArgs) -> anyhow::Result<ExitCode> {
    let (_path, preset) = find_preset(&a.preset).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut w = preset.workload.clone();
    if let Some(s) = a.steps {
        // An explicit step budget replaces the preset's (including its example budget).
        w.step_budget = s;
        w.max_examples = None;
    }
    if let Some(t) = a.target {
        w.target.value = t;
    }
    if let Some(e) = a.eval_every {
        anyhow::ensure!(e > 0, "--eval-every must be positive");
        w.eval_every = e;
    }
    let mut mp = w.defaults.clone();
    if let Some(lr) = a.lr {
        anyhow::ensure!(lr > 0.0 && lr.is_finite(), "--lr must be positive");
        mp.learning_rate = lr;
    }
    if let Some(m) = a.momentum {
        anyhow::ensure!((0.0..1.0).contains(&m), "--momentum must be in [0, 1)");
        mp.momentum = m;
    }
    if let Some(rule) = a.lr_rule {
        let r = match rule {
            LrRuleArg::None => LrRule::None,
            LrRuleArg::Linear => LrRule::Linear,
            LrRuleArg::Sqrt => LrRule::Sqrt,
        };
        mp.learning_rate = r.scale(mp.learning_rate, a.batch_size, a.base_batch);
    }
    let devices = a.devices.spec()?;
    let g = devices.replicas();
    anyhow::ensure!(a.batch_size > 0, "--batch-size must be positive");
    anyhow::ensure!(
        a.batch_size.is_multiple_of(g),
        "batch size {} cannot be split into {g} equal shards: use a multiple of {g}",
        a.batch_size
    );
    let spec = TrialSpec {
        trial_id: 0,
        batch_size: a.batch_size,
        devices: devices.clone(),
        precision: a.precision.map(Into::into).unwrap_or(w.precision),
        metaparams: mp,
        seed: a.seed,
    };
    let mut options = TrainOptions {
        noise_scale: !a.no_noise_scale,
        ..Default::default()
    };
    if let Some(s) = a.loss_scale {
        let mut c = train::scaler::ScalerConfig::fp16();
        c.init_scale = s;
        options.scaler = Some(c);
    }
    // --- H6 cluster hook: one node of a multi-node trial ---
    let node = scaling_lab::cluster::node_session(&a.nodes)?;
    options.cluster = node.as_ref().map(|n| n.spec.clone());
    let runner = train::runner_for(&w, &options)?;
    let tty = std::io::stderr().is_terminal();
    let cancel = CancelToken::new();
    {
        let c = cancel.clone();
        let _ = ctrlc::set_handler(move || c.cancel());
    }
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
            if tty {
                eprint!("\r\x1b[2K{line}");
            } else if s.step % (w.eval_every * 10).max(1) == 0 {
                eprintln!("{line}");
            }
        }
        _ => {}
    };
    let out = runner.run(&w, &spec, &mut emit, &cancel)?;
    if let Some(n) = &node {
        n.goodbye(); // H6 cluster hook
    }
    if tty {
        eprintln!();
    }
    if a.json {
        let v = serde_json::json!({
            "preset": preset.name,
            "spec": spec,
            "target": w.target,
            "eval_every": w.eval_every,
            "outcome": out,
        });
        println!("{}", serde_json::to_string(&v)?);
    } else {
        let t = &out.throughput;
        let what = match out.outcome {
            Outcome::Reached { step } => format!(
                "reached {metric}<={} at step {step} (eval every {})",
                w.target.value, w.eval_every
            ),
            Outcome::NotReached { budget, .. } => format!(
                "did not reach {metric}<={} within {budget} steps",
                w.target.value
            ),
            Outcome::Diverged { step } => format!("diverged at step {step}"),
            Outcome::Cancelled { step } => format!("cancelled at step {step}"),
        };
        println!(
            "{what}, {:.1} s, {} ex/s ({}, {}, {})",
            out.wall_s,
            thousands(t.examples_per_s),
            devices.label(),
            spec.precision.name(),
            preset.name
        );
        println!(
            "  step {:.2} ms = compute {:.2} ms + exchange {:.2} ms; {} params, {} B exchanged/step; loss scale {}, {} skipped; B_simple {}",
            t.step_s * 1e3,
            t.compute_s * 1e3,
            t.exchange_s * 1e3,
            t.params,
            t.exchanged_bytes_per_step,
            out.final_loss_scale,
            out.skipped_steps,
            out.noise.b_simple.map(|v| format!("{v:.1}")).unwrap_or_else(|| "n/a".into())
        );
    }
    Ok(match out.outcome {
        Outcome::Cancelled { .. } => ExitCode::from(130),
        _ => ExitCode::SUCCESS,
    })
}

fn thousands(x: f64) -> String {
    let s = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn cmd_sweep(a: SweepArgs, runs_dir: PathBuf) -> anyhow::Result<ExitCode> {
    // --- H6 cluster hook: sweep directories, --slurm, --shard, --nodes ---
    let cluster = scaling_lab::cluster::wants_sweep(&a.slurm, &a.nodes, a.resume.as_deref());
    if cluster && a.resume.as_ref().is_some_and(|p| p.is_dir()) {
        return scaling_lab::cluster::sweep_hook(
            &a.slurm,
            &a.nodes,
            None,
            a.resume.as_deref(),
            &runs_dir,
            a.json,
        );
    }
    let (cfg, resume) = if let Some(log_path) = &a.resume {
        let log = runlog::reader::read_run_log(log_path)?;
        (
            SweepConfig::from_header(&log.header, runs_dir.clone()),
            Some(log_path.clone()),
        )
    } else {
        let name = a
            .preset
            .clone()
            .context("give a preset (e.g. digits-mlp-momentum) or --resume LOG")?;
        let (path, preset) = find_preset(&name).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut cfg = SweepConfig::from_preset(preset, Some(path), runs_dir.clone());
        if let Some(b) = &a.batch_sizes {
            cfg.batch_sizes = b.clone();
        }
        if let Some(t) = a.trials {
            cfg.trials_per_batch = t;
        }
        cfg.devices = a.devices.spec()?;
        if let Some(c) = a.concurrency {
            cfg.concurrency = c;
        }
        if let Some(p) = a.precision {
            cfg.precision = p.into();
        }
        if let Some(s) = a.seed {
            cfg.seed = s;
        }
        (cfg, None)
    };
    if cluster {
        // H6 cluster hook
        return scaling_lab::cluster::sweep_hook(
            &a.slurm,
            &a.nodes,
            Some(cfg),
            resume.as_deref(),
            &runs_dir,
            a.json,
        );
    }
    let runner = train::runner_for(&cfg.preset.workload, &TrainOptions::default())?;
    let (tx, rx) = std::sync::mpsc::sync_channel(4096);
    let control = sweep::scheduler::SweepControl::new();
    {
        let c = control.clone();
        let _ = ctrlc::set_handler(move || c.cancel());
    }
    let info = scaling_lab::report::ReportInfo {
        preset: cfg.preset.name.clone(),
        optimizer: cfg.preset.workload.optimizer.name().into(),
        devices: cfg.devices.label(),
        trials_done: 0,
        trials_planned: cfg.batch_sizes.len() * cfg.trials_per_batch,
        wall_s: None,
        log_path: None,
        cancelled: false,
    };
    let handle = sweep::scheduler::start_sweep_with(cfg, runner, tx, resume, control)?;
    let log_path = handle.log_path().to_path_buf();
    let stdout = std::io::stdout();
    let bars = stdout.is_terminal() && !a.json;
    let analysis = {
        let mut out = stdout.lock();
        let mut sink: Box<dyn Write> = if a.json {
            Box::new(std::io::sink())
        } else {
            Box::new(&mut out)
        };
        sweep::headless::run_headless(rx, &mut sink, bars, info)
    };
    let result = handle.join()?;
    // The projection needs the trials' measured times: read them back from the (fsynced) log.
    let log = runlog::reader::read_run_log(&log_path).ok();
    if !a.json {
        if let Some(l) = &log {
            println!();
            print!(
                "{}",
                scaling_lab::report::render_projection_section(l, 1024)
            );
        }
    }
    if a.json {
        let v = serde_json::json!({
            "log": log_path,
            "cancelled": result.cancelled,
            "trials_done": result.trials_done,
            "trials_planned": result.trials_planned,
            "wall_s": result.wall_s,
            "analysis": analysis.clone().unwrap_or(result.analysis.clone()),
            "projections": log
                .as_ref()
                .and_then(|l| scaling_lab::report::projections_for_log(l, 1024)),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    if result.cancelled {
        eprintln!(
            "{}",
            sweep::headless::resume_message(&log_path, result.trials_done, result.trials_planned)
        );
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
