//! The `sweep`/`train` entry points of the cluster features (the CLI calls these).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use super::multinode::{ensure_orchestrator, ClusterSpec, Liveness};
use super::sweepdir::{self, ClusterInfo};
use super::{slurm, NodeArgs, Shard, SlurmArgs};
use crate::core::TrialRunner;
use crate::sweep::scheduler::{make_header, start_sweep_with, SweepControl};
use crate::sweep::SweepConfig;
use crate::train::{runner_for, TrainOptions};

/// This process's part in a multi-node trial: the orchestrator (rank 0) and the liveness links.
pub struct NodeSession {
    pub spec: ClusterSpec,
    liveness: Liveness,
}

impl NodeSession {
    /// The normal end (tell the other nodes this one is not dying).
    pub fn goodbye(&self) {
        self.liveness.goodbye();
    }
}

/// Resolves `--nodes/--node-rank/--coordinator` (or srun's environment) and, with more than one
/// node, starts the orchestrator (rank 0) and the liveness links. `None` for one node.
pub fn node_session(args: &NodeArgs) -> anyhow::Result<Option<NodeSession>> {
    let Some(spec) = args.spec()? else {
        return Ok(None);
    };
    ensure_orchestrator(&spec)?;
    let liveness = Liveness::start(&spec)?;
    Ok(Some(NodeSession { spec, liveness }))
}

/// Does this `sweep` invocation belong to the cluster code (then call `sweep_hook`)?
pub fn wants_sweep(slurm: &SlurmArgs, nodes: &NodeArgs, resume: Option<&Path>) -> bool {
    slurm.slurm
        || slurm.shard.is_some()
        || resume.is_some_and(|p| p.is_dir())
        || nodes.nodes.is_some_and(|n| n > 1)
        || matches!(nodes.spec(), Ok(Some(_)))
}

/// `sweep` with cluster flags:
/// * `--slurm [--array N | --nodes N]`: a new sweep directory, its sbatch script, submitted
///   (`--dry-run`: printed only); `--wait`: progress until the job ends, then the merged report.
/// * `--resume DIR` (a sweep directory): re-submits only the array tasks with unfinished trials.
/// * `--resume DIR --shard I/N`: what an array task runs (its own `shard-I.jsonl`).
/// * `--nodes N …` without `--slurm`: this process is one node of a multi-node sweep.
///
/// `cfg` is the configuration from the preset and flags (or from `resume`'s header).
pub fn sweep_hook(
    slurm: &SlurmArgs,
    nodes: &NodeArgs,
    cfg: Option<SweepConfig>,
    resume: Option<&Path>,
    runs_dir: &Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let dir = resume.filter(|p| p.is_dir());
    if let Some(shard) = slurm.shard {
        let dir =
            dir.context("--shard I/N runs a share of a sweep directory: give --resume DIR")?;
        return run_here(
            sweepdir::config_of(dir)?,
            Some(dir),
            Some(shard),
            nodes,
            json,
        );
    }
    if let Some(dir) = dir {
        return resubmit(dir, slurm, nodes, json);
    }
    let cfg = cfg.context("give a preset (e.g. digits-mlp-sgd) or --resume DIR")?;
    if slurm.slurm {
        return submit_new(cfg, slurm, nodes, runs_dir, json);
    }
    let log = resume.map(Path::to_path_buf);
    run_here_log(cfg, log, nodes, json)
}

fn node_count(nodes: &NodeArgs) -> usize {
    nodes.nodes.unwrap_or(1).max(1)
}

fn submit_new(
    cfg: SweepConfig,
    slurm: &SlurmArgs,
    nodes: &NodeArgs,
    runs_dir: &Path,
    json: bool,
) -> anyhow::Result<ExitCode> {
    cfg.validate()?;
    let n_nodes = node_count(nodes);
    let array = slurm.array.unwrap_or(1);
    anyhow::ensure!(array >= 1, "--array must be at least 1");
    check_global_split(&cfg, n_nodes)?;
    let planned = cfg.batch_sizes.len() * cfg.trials_per_batch;
    anyhow::ensure!(
        array <= planned,
        "--array {array} is more tasks than the {planned} trials of the plan"
    );
    let runner = runner_for(&cfg.preset.workload, &TrainOptions::default())?;
    let header = make_header(&cfg, &runner.backend());
    let info = ClusterInfo {
        array,
        nodes: n_nodes,
        jobs: vec![],
    };
    let indices: Vec<usize> = (0..array).collect();
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let job_name = format!("sl-{}", cfg.preset.name);
    let cpus = cfg.devices.replicas();
    if slurm.dry_run {
        let would = runs_dir.join(
            crate::runlog::writer::log_file_name(&cfg.preset.name, chrono::Local::now())
                .trim_end_matches(".jsonl"),
        );
        let would = absolute(&would);
        print!(
            "{}",
            slurm::sbatch_script(&would, &info, &indices, slurm, &exe, &job_name, cpus)
        );
        return Ok(ExitCode::SUCCESS);
    }
    let dir = absolute(&sweepdir::create_sweep_dir(runs_dir, &header)?);
    submit_and_maybe_wait(&dir, info, &indices, slurm, &exe, &job_name, cpus, json)
}

fn resubmit(
    dir: &Path,
    slurm: &SlurmArgs,
    nodes: &NodeArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let dir = absolute(dir);
    let mut info = sweepdir::read_cluster_info(&dir)?;
    if let Some(n) = nodes.nodes {
        info.nodes = n.max(1);
    }
    let missing = sweepdir::missing_trials(&dir)?;
    let mut indices: Vec<usize> = missing
        .iter()
        .map(|&id| (id % info.array as u64) as usize)
        .collect();
    indices.sort_unstable();
    indices.dedup();
    let cfg = sweepdir::config_of(&dir)?;
    if indices.is_empty() {
        eprintln!(
            "{}: every planned trial is already logged; nothing to submit",
            dir.display()
        );
        return finish_report(&dir, json);
    }
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let job_name = format!("sl-{}", cfg.preset.name);
    if slurm.dry_run {
        print!(
            "{}",
            slurm::sbatch_script(
                &dir,
                &info,
                &indices,
                slurm,
                &exe,
                &job_name,
                cfg.devices.replicas()
            )
        );
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "{} trials unfinished: re-submitting array task(s) {}",
        missing.len(),
        slurm::array_spec(&indices)
    );
    let cpus = cfg.devices.replicas();
    submit_and_maybe_wait(&dir, info, &indices, slurm, &exe, &job_name, cpus, json)
}

#[allow(clippy::too_many_arguments)]
fn submit_and_maybe_wait(
    dir: &Path,
    mut info: ClusterInfo,
    indices: &[usize],
    slurm: &SlurmArgs,
    exe: &Path,
    job_name: &str,
    cpus: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let script = slurm::sbatch_script(dir, &info, indices, slurm, exe, job_name, cpus);
    let script_path = dir.join(sweepdir::SCRIPT_FILE);
    sweepdir::write_atomic(&script_path, &script)?;
    sweepdir::write_cluster_info(dir, &info)?;
    let job = slurm::submit(&script_path)?;
    info.jobs.push(job.clone());
    sweepdir::write_cluster_info(dir, &info)?;
    eprintln!(
        "submitted Slurm job {job}: array task(s) {} of {} → {}",
        slurm::array_spec(indices),
        info.array,
        dir.display()
    );
    if !slurm.wait {
        eprintln!(
            "progress: scaling-lab report {}   (or --open it in the TUI)",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let planned = sweepdir::read_header(dir)
        .map(|h| h.batch_sizes.len() * h.trials_per_batch)
        .unwrap_or(0);
    let mut last = String::new();
    slurm::wait_job(&job, |q| {
        let done = sweepdir::read_sweep_dir(dir)
            .map(|l| l.trials.len())
            .unwrap_or(0);
        let line = format!(
            "[job {job}] {done}/{planned} trials saved · {} task(s) running · {} pending",
            q.running, q.pending
        );
        if line != last {
            eprintln!("{line}");
            last = line;
        }
    })?;
    finish_report(dir, json)
}

/// The merged report of a sweep directory; exit 1 (with the resume command) when trials are missing.
fn finish_report(dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let log = sweepdir::read_sweep_dir(dir)?;
    for w in &log.warnings {
        eprintln!("warning: {w}");
    }
    let planned = log.planned_trials();
    let complete = log.trials.len() >= planned;
    if json {
        let v = serde_json::json!({
            "log": dir,
            "cancelled": false,
            "complete": complete,
            "trials_done": log.trials.len(),
            "trials_planned": planned,
            "wall_s": log.summary.as_ref().map(|s| s.wall_s),
            "analysis": log.analysis(),
            "projections": crate::report::projections_for_log(&log, 1024),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", crate::report::render_log_report(&log, 1024));
    }
    if !complete {
        eprintln!(
            "{} of {planned} trials are logged (a task failed or was pre-empted? see {}/slurm-*.out)\n\
             resume with: scaling-lab sweep --resume {} --slurm --wait",
            log.trials.len(),
            dir.display(),
            dir.display()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// B must split into N×G shards.
fn check_global_split(cfg: &SweepConfig, nodes: usize) -> anyhow::Result<()> {
    let r = nodes * cfg.devices.replicas();
    if let Some(&b) = cfg.batch_sizes.iter().find(|&&b| b % r != 0) {
        anyhow::bail!(
            "batch size {b} does not split into {r} equal shards ({nodes} node(s) × {} worker(s))",
            cfg.devices.replicas()
        );
    }
    Ok(())
}

/// A shard (array task) of a sweep directory, run in this process (one node, or every node of a
/// multi-node task: rank 0 logs, the others log to a scratch file that is removed).
fn run_here(
    cfg: SweepConfig,
    dir: Option<&Path>,
    shard: Option<Shard>,
    nodes: &NodeArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let session = node_session(nodes)?;
    let rank0 = session.as_ref().is_none_or(|s| s.spec.node_rank == 0);
    let dir = dir.context("no sweep directory")?;
    let shard = shard.unwrap_or(Shard { index: 0, count: 1 });
    let (log, scratch) = if rank0 {
        (sweepdir::shard_log(dir, shard)?, None)
    } else {
        let s = scratch_dir(session.as_ref())?;
        let p = s.join(sweepdir::shard_file_name(shard.index));
        let h = sweepdir::read_header(dir)?;
        drop(crate::runlog::writer::RunLogWriter::create_at(&p, &h)?);
        (p, Some(s))
    };
    let r = run_sweep(cfg, Some(log), Some(shard), session.as_ref(), json, rank0);
    if let Some(s) = &session {
        s.goodbye();
    }
    if let Some(s) = scratch {
        let _ = std::fs::remove_dir_all(s);
    }
    r
}

/// One node of a multi-node sweep started by hand (`--nodes N --node-rank R --coordinator H:P`):
/// rank 0 writes the run log in the runs directory; the others write to a scratch directory.
fn run_here_log(
    mut cfg: SweepConfig,
    resume: Option<PathBuf>,
    nodes: &NodeArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let session = node_session(nodes)?;
    let rank0 = session.as_ref().is_none_or(|s| s.spec.node_rank == 0);
    let mut scratch = None;
    if !rank0 {
        anyhow::ensure!(
            resume.is_none(),
            "--resume LOG: give it to rank 0 only (the other ranks keep no log)"
        );
        let s = scratch_dir(session.as_ref())?;
        cfg.runs_dir = s.clone();
        scratch = Some(s);
    }
    let r = run_sweep(cfg, resume, None, session.as_ref(), json, rank0);
    if let Some(s) = &session {
        s.goodbye();
    }
    if let Some(s) = scratch {
        let _ = std::fs::remove_dir_all(s);
    }
    r
}

fn scratch_dir(session: Option<&NodeSession>) -> anyhow::Result<PathBuf> {
    let rank = session.map_or(0, |s| s.spec.node_rank);
    let p = std::env::temp_dir().join(format!(
        "scaling-lab-rank{rank}-{}-{}",
        std::process::id(),
        chrono::Local::now().format("%H%M%S%f")
    ));
    std::fs::create_dir_all(&p).with_context(|| format!("cannot create {}", p.display()))?;
    Ok(p)
}

fn run_sweep(
    mut cfg: SweepConfig,
    resume: Option<PathBuf>,
    shard: Option<Shard>,
    session: Option<&NodeSession>,
    json: bool,
    rank0: bool,
) -> anyhow::Result<ExitCode> {
    let spec = session.map(|s| s.spec.clone());
    if let Some(s) = &spec {
        check_global_split(&cfg, s.nodes)?;
        // every node must run the same trial at the same time
        cfg.concurrency = 1;
    }
    let options = TrainOptions {
        cluster: spec.clone(),
        ..Default::default()
    };
    let runner: Arc<dyn TrialRunner> = runner_for(&cfg.preset.workload, &options)?;
    let control = SweepControl::new();
    if let Some(sh) = shard {
        let planned = (cfg.batch_sizes.len() * cfg.trials_per_batch) as u64;
        control.leave_to_others((0..planned).filter(|&id| !sh.owns(id)));
    }
    {
        let c = control.clone();
        let _ = ctrlc::set_handler(move || c.cancel());
    }
    let devices = match &spec {
        Some(s) => format!("{} × {} nodes", cfg.devices.label(), s.nodes),
        None => cfg.devices.label(),
    };
    let info = crate::report::ReportInfo {
        preset: cfg.preset.name.clone(),
        optimizer: cfg.preset.workload.optimizer.name().into(),
        devices,
        trials_done: 0,
        trials_planned: cfg.batch_sizes.len() * cfg.trials_per_batch,
        wall_s: None,
        log_path: None,
        cancelled: false,
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(4096);
    let handle = start_sweep_with(cfg, runner, tx, resume, control)?;
    let log_path = handle.log_path().to_path_buf();
    {
        let mut sink: Box<dyn Write> = if json || !rank0 {
            Box::new(std::io::sink())
        } else {
            Box::new(std::io::stdout())
        };
        crate::sweep::headless::run_headless(rx, &mut sink, info);
    }
    let result = handle.join()?;
    if json && rank0 {
        let log = crate::runlog::reader::read_run_log(&log_path).ok();
        let v = serde_json::json!({
            "log": log_path,
            "shard": shard.map(|s| s.to_string()),
            "nodes": spec.as_ref().map_or(1, |s| s.nodes),
            "cancelled": result.cancelled,
            "trials_done": result.trials_done,
            "trials_run": result.trials_run,
            "trial_errors": result.trial_errors,
            "wall_s": result.wall_s,
            "analysis": result.analysis,
            "projections": log
                .as_ref()
                .and_then(|l| crate::report::projections_for_log(l, 1024)),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    }
    if result.cancelled {
        return Ok(ExitCode::from(130));
    }
    if result.trial_errors > 0 {
        eprintln!(
            "{} trial(s) failed (see the messages above); they are not logged and resume re-runs them",
            result.trial_errors
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
