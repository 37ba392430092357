//! The `sweep`/`train` entry points of the cluster features (the CLI calls these). Nothing here
//! prints: every line goes through the caller's [`ClusterOutput`] (the CLI renders it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use super::sweepdir::{self, ClusterInfo};
use super::{slurm, NodeArgs, Shard, SlurmArgs};
use crate::cluster::multinode::{ensure_orchestrator, Liveness};
use crate::core::runner::TrialRunner;
use crate::report::headless::HeadlessSink;
use crate::report::{ClusterRun, Report, ReportOptions};
use crate::sweep::runner_for;
use crate::sweep::scheduler::{make_header, start_sweep_with, PeerRecords, SweepControl};
use crate::sweep::SweepConfig;
use crate::train::multinode::ClusterSpec;
use crate::train::TrainOptions;

/// Largest device count of the projection in a cluster sweep's report.
const MAX_DEVICES: usize = 1024;

/// Where the cluster front end's output goes (the CLI implements it; the engine never prints).
pub trait ClusterOutput {
    /// Report text or JSON, for stdout (`text` carries its own newlines).
    fn out(&mut self, text: &str);
    /// One status, progress or error line, for stderr.
    fn note(&mut self, line: &str);
    /// The progress view of a sweep that runs in this process (rank 0, not `--json`).
    fn progress(&mut self) -> &mut dyn HeadlessSink;
}

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
    out: &mut dyn ClusterOutput,
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
            out,
        );
    }
    if let Some(dir) = dir {
        return resubmit(dir, slurm, nodes, json, out);
    }
    let cfg = cfg.context("give a preset (e.g. digits-mlp-sgd) or --resume DIR")?;
    if slurm.slurm {
        return submit_new(cfg, slurm, nodes, runs_dir, json, out);
    }
    let log = resume.map(Path::to_path_buf);
    run_here_log(cfg, log, nodes, json, out)
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
    out: &mut dyn ClusterOutput,
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
        out.out(&slurm::sbatch_script(
            &would, &info, &indices, slurm, &exe, &job_name, cpus,
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let dir = absolute(&sweepdir::create_sweep_dir(runs_dir, &header)?);
    let job = Job {
        indices: &indices,
        search_done: false,
        slurm,
        exe: &exe,
        job_name: &job_name,
        cpus,
    };
    submit_and_maybe_wait(&dir, info, &job, json, out)
}

fn resubmit(
    dir: &Path,
    slurm: &SlurmArgs,
    nodes: &NodeArgs,
    json: bool,
    out: &mut dyn ClusterOutput,
) -> anyhow::Result<ExitCode> {
    let dir = absolute(dir);
    let mut info = sweepdir::read_cluster_info(&dir)?;
    if let Some(n) = nodes.nodes {
        info.nodes = n.max(1);
    }
    let missing = sweepdir::missing_trials(&dir)?;
    // only confirm trials missing: the confirm phase alone, for the tasks they belong to
    let search_done = !missing.is_empty()
        && missing
            .iter()
            .all(|&id| id >= crate::core::confirm::CONFIRM_ID_BASE);
    let mut indices: Vec<usize> = missing
        .iter()
        .map(|&id| (id % info.array as u64) as usize)
        .collect();
    indices.sort_unstable();
    indices.dedup();
    let cfg = sweepdir::config_of(&dir)?;
    if indices.is_empty() {
        out.note(&format!(
            "{}: every planned trial is already logged; nothing to submit",
            dir.display()
        ));
        return finish_report(&dir, json, out);
    }
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let job_name = format!("sl-{}", cfg.preset.name);
    let job = Job {
        indices: &indices,
        search_done,
        slurm,
        exe: &exe,
        job_name: &job_name,
        cpus: cfg.devices.replicas(),
    };
    if slurm.dry_run {
        out.out(&job.script(&dir, &info));
        return Ok(ExitCode::SUCCESS);
    }
    out.note(&format!(
        "{} trials unfinished: re-submitting array task(s) {}",
        missing.len(),
        slurm::array_spec(&indices)
    ));
    submit_and_maybe_wait(&dir, info, &job, json, out)
}

/// What one submission runs: the array tasks, the Slurm flags, this program, the job's name
/// and the CPUs per task.
struct Job<'a> {
    indices: &'a [usize],
    /// Every search trial is logged: only confirm trials are missing (the confirm phase alone).
    search_done: bool,
    slurm: &'a SlurmArgs,
    exe: &'a Path,
    job_name: &'a str,
    cpus: usize,
}

impl Job<'_> {
    fn script(&self, dir: &Path, info: &ClusterInfo) -> String {
        slurm::sbatch_script(
            dir,
            info,
            self.indices,
            self.slurm,
            self.exe,
            self.job_name,
            self.cpus,
        )
    }
}

fn submit_and_maybe_wait(
    dir: &Path,
    mut info: ClusterInfo,
    job: &Job,
    json: bool,
    out: &mut dyn ClusterOutput,
) -> anyhow::Result<ExitCode> {
    let (indices, slurm) = (job.indices, job.slurm);
    let script = job.script(dir, &info);
    let script_path = dir.join(sweepdir::SCRIPT_FILE);
    sweepdir::write_atomic(&script_path, &script)?;
    sweepdir::write_cluster_info(dir, &info)?;
    let mut jobs = Vec::new();
    if !job.search_done {
        let id = slurm::submit(&script_path)?;
        info.jobs.push(id.clone());
        sweepdir::write_cluster_info(dir, &info)?;
        out.note(&format!(
            "submitted Slurm job {id}: array task(s) {} of {} → {}",
            slurm::array_spec(indices),
            info.array,
            dir.display()
        ));
        jobs.push(id);
    }
    // the confirm stage: every task's share once every search trial is logged
    let confirm = sweepdir::read_header(dir).is_ok_and(|h| h.preset.sweep.confirm.is_some());
    if confirm && (info.array > 1 || job.search_done) {
        let all: Vec<usize> = if job.search_done {
            indices.to_vec()
        } else {
            (0..info.array).collect()
        };
        let id = match jobs.last() {
            Some(after) => slurm::submit_after(&script_path, after, &all)?,
            None => slurm::submit(&script_path)?,
        };
        info.jobs.push(id.clone());
        sweepdir::write_cluster_info(dir, &info)?;
        out.note(&format!(
            "submitted Slurm job {id}{}: the confirm stage, array task(s) {}",
            jobs.last()
                .map(|a| format!(" (after job {a})"))
                .unwrap_or_default(),
            slurm::array_spec(&all)
        ));
        jobs.push(id);
    }
    if !slurm.wait {
        out.note(&format!(
            "progress: scaling-lab report {}   (or --open it in the TUI)",
            dir.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let planned = sweepdir::read_header(dir)
        .map(|h| h.batch_sizes.len() * h.trials_per_batch)
        .unwrap_or(0);
    let mut last = String::new();
    for job in &jobs {
        slurm::wait_job(job, |q| {
            let done = sweepdir::read_sweep_dir(dir)
                .map(|l| l.trials.len())
                .unwrap_or(0);
            let line = format!(
                "[job {job}] {done}/{planned} trials saved · {} task(s) running · {} pending",
                q.running, q.pending
            );
            if line != last {
                out.note(&line);
                last = line;
            }
        })?;
    }
    finish_report(dir, json, out)
}

/// The merged report of a sweep directory; exit 1 (with the resume command) when trials are missing.
fn finish_report(dir: &Path, json: bool, out: &mut dyn ClusterOutput) -> anyhow::Result<ExitCode> {
    let log = sweepdir::read_sweep_dir(dir)?;
    for w in &log.warnings {
        out.note(&format!("warning: {w}"));
    }
    let planned = log.planned_trials();
    let complete = log.trials.len() >= planned;
    let table = crate::runlog::link_table::find_link_table(dir).0;
    let mut report = Report::from_log_with(&log, MAX_DEVICES, table.as_ref());
    report.cluster = Some(ClusterRun {
        nodes: sweepdir::read_cluster_info(dir).map_or(1, |i| i.nodes),
        complete: Some(complete),
        ..ClusterRun::default()
    });
    if json {
        out.out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report.to_json())?
        ));
    } else {
        out.out(&report.text());
    }
    if !complete {
        out.note(&format!(
            "{} of {planned} trials are logged (a task failed or was pre-empted? see {}/slurm-*.out)",
            log.trials.len(),
            dir.display(),
        ));
        out.note(&format!(
            "resume with: scaling-lab sweep --resume {} --slurm --wait",
            dir.display()
        ));
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

/// This node's session of a multi-node sweep (None: a single-node run) and whether it is rank 0
/// (the one that writes the run log).
fn this_node(nodes: &NodeArgs) -> anyhow::Result<(Option<NodeSession>, bool)> {
    let session = node_session(nodes)?;
    let rank0 = session.as_ref().is_none_or(|s| s.spec.node_rank == 0);
    Ok((session, rank0))
}

/// A shard (array task) of a sweep directory, run in this process (one node, or every node of a
/// multi-node task: rank 0 logs, the others log to a scratch copy that is removed).
fn run_here(
    cfg: SweepConfig,
    dir: Option<&Path>,
    shard: Option<Shard>,
    nodes: &NodeArgs,
    json: bool,
    out: &mut dyn ClusterOutput,
) -> anyhow::Result<ExitCode> {
    let (session, rank0) = this_node(nodes)?;
    let dir = dir.context("no sweep directory")?;
    let shard = shard.unwrap_or(Shard { index: 0, count: 1 });
    let own = sweepdir::shard_log(dir, shard)?;
    let (log, scratch) = if rank0 {
        (own, None)
    } else {
        // The other ranks run the same trials as rank 0: the ones its shard log lacks.
        let s = scratch_dir(session.as_ref())?;
        let p = s.join(sweepdir::shard_file_name(shard.index));
        copy_log(&own, &p)?;
        (p, Some(s))
    };
    let hint = ResumeHint::Dir(dir.to_path_buf());
    let run = Run {
        log: Some(log),
        shard: Some(shard),
        dir: Some(dir.to_path_buf()),
        session: session.as_ref(),
        json,
        hint: &hint,
    };
    finish_node(run_sweep(cfg, &run, out), session.as_ref(), scratch)
}

/// One node of a multi-node sweep started by hand (`--nodes N --node-rank R --coordinator H:P`):
/// rank 0 writes the run log in the runs directory; the others write to a scratch directory (on
/// `--resume LOG`, starting from a copy of rank 0's log, so that they skip the same trials).
fn run_here_log(
    mut cfg: SweepConfig,
    resume: Option<PathBuf>,
    nodes: &NodeArgs,
    json: bool,
    out: &mut dyn ClusterOutput,
) -> anyhow::Result<ExitCode> {
    let (session, rank0) = this_node(nodes)?;
    let mut scratch = None;
    let mut log = resume.clone();
    if !rank0 {
        let s = scratch_dir(session.as_ref())?;
        if let Some(r) = &resume {
            let p = s.join(r.file_name().context("--resume LOG: not a file name")?);
            copy_log(r, &p)?;
            log = Some(p);
        }
        cfg.runs_dir = s.clone();
        scratch = Some(s);
    }
    let hint = ResumeHint::Log(resume);
    let run = Run {
        log,
        shard: None,
        dir: None,
        session: session.as_ref(),
        json,
        hint: &hint,
    };
    finish_node(run_sweep(cfg, &run, out), session.as_ref(), scratch)
}

/// The end of one node's sweep: goodbye (or the group lost for the others), scratch removed.
fn finish_node(
    r: anyhow::Result<ExitCode>,
    session: Option<&NodeSession>,
    scratch: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    end_session(session, &r);
    if let Some(s) = scratch {
        let _ = std::fs::remove_dir_all(s);
    }
    r
}

/// A copy of run log `from` at `to` for a rank that only reads it (its lock stays with rank 0).
fn copy_log(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::copy(from, to)
        .with_context(|| format!("cannot read rank 0's run log {}", from.display()))?;
    Ok(())
}

/// The normal end tells the other nodes goodbye; a failed end leaves the group lost for them.
fn end_session(session: Option<&NodeSession>, r: &anyhow::Result<ExitCode>) {
    let Some(s) = session else { return };
    match r {
        Ok(c) if *c == ExitCode::SUCCESS => s.goodbye(),
        Ok(_) | Err(_) => {
            if crate::train::multinode::lost().is_none() {
                crate::train::multinode::lose(format!("node {} stopped", s.spec.node_rank));
            }
        }
    }
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

/// How a multi-node sweep that lost its group is resumed.
enum ResumeHint {
    /// A sweep directory: re-submit it.
    Dir(PathBuf),
    /// A sweep started by hand: `--resume LOG` on every node (`None`: rank 0's new log).
    Log(Option<PathBuf>),
}

impl ResumeHint {
    /// `log`: this process's log (rank 0's; a scratch copy on the others).
    fn command(&self, log: &Path, spec: &ClusterSpec) -> String {
        match self {
            ResumeHint::Dir(d) => {
                format!("scaling-lab sweep --resume {} --slurm --wait", d.display())
            }
            ResumeHint::Log(None) if spec.node_rank != 0 => {
                "the command rank 0 prints, on every node (--resume with rank 0's log)".into()
            }
            ResumeHint::Log(given) => {
                let log = given.as_deref().unwrap_or(log);
                format!(
                    "{} --nodes {} --node-rank R --coordinator {}:{} on every node R (the other \
                     ranks read the log too)",
                    crate::report::headless::resume_command(log),
                    spec.nodes,
                    spec.coordinator_host,
                    spec.port
                )
            }
        }
    }
}

/// One sweep run in this process: the log it resumes (or `None`: a new one), its shard, this
/// node's part in a multi-node group, `--json`, and how to resume it.
struct Run<'a> {
    log: Option<PathBuf>,
    shard: Option<Shard>,
    /// The sweep directory an array task's peers log into (their records place the confirm stage).
    dir: Option<PathBuf>,
    session: Option<&'a NodeSession>,
    json: bool,
    hint: &'a ResumeHint,
}

fn run_sweep(
    mut cfg: SweepConfig,
    run: &Run,
    out: &mut dyn ClusterOutput,
) -> anyhow::Result<ExitCode> {
    let (shard, json, hint) = (run.shard, run.json, run.hint);
    let rank0 = run.session.is_none_or(|s| s.spec.node_rank == 0);
    let spec = run.session.map(|s| s.spec.clone());
    if let Some(s) = &spec {
        check_global_split(&cfg, s.nodes)?;
        // every node must run the same trial at the same time
        cfg.concurrency = 1;
    }
    let options = TrainOptions {
        cluster: spec.clone(),
        // several trials per process: probe GPU trials' memory in a child (train::fit_probe)
        fit_probe: true,
        ..Default::default()
    };
    let runner: Arc<dyn TrialRunner> = runner_for(&cfg.preset.workload, &options)?;
    let control = SweepControl::new();
    if let Some(sh) = shard {
        let planned = (cfg.batch_sizes.len() * cfg.trials_per_batch) as u64;
        control.leave_to_others((0..planned).filter(|&id| !sh.owns(id)));
        // the confirm stage: this task runs its share, placed from every task's records
        control.set_share(sh.index, sh.count);
        if let Some(dir) = run.dir.clone() {
            control.set_peers(PeerRecords(Arc::new(move || {
                sweepdir::read_sweep_dir(&dir)
                    .map(|l| l.trials)
                    .unwrap_or_default()
            })));
        }
    }
    {
        let c = control.clone();
        let _ = ctrlc::set_handler(move || c.cancel());
    }
    if spec.is_some() {
        // A lost group starts no more trials. The running one fails on every node (its
        // collective calls are aborted): it is not cancelled, so that it is reported as failed
        // with the reason; the sweep is cancelled once it has ended (or after 10 s at most).
        let c = control.clone();
        crate::train::multinode::on_loss(move || {
            c.pause();
            let c = c.clone();
            let _ = std::thread::Builder::new()
                .name("group-lost".into())
                .spawn(move || {
                    let t0 = std::time::Instant::now();
                    while !c.running_trials().is_empty()
                        && t0.elapsed() < std::time::Duration::from_secs(10)
                    {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                    c.cancel();
                });
        });
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(4096);
    let handle = start_sweep_with(cfg, runner, tx, run.log.clone(), control)?;
    let log_path = handle.log_path().to_path_buf();
    {
        let mut quiet = std::io::sink();
        let sink: &mut dyn HeadlessSink = if json || !rank0 {
            &mut quiet
        } else {
            out.progress()
        };
        crate::report::headless::run_headless(rx, sink);
    }
    let result = handle.join()?;
    let lost = spec.as_ref().and(crate::train::multinode::lost());
    if rank0 {
        // the sweep's own records: the log is not read back
        let mut report = crate::report::of_sweep(
            &result,
            &ReportOptions {
                max_devices: MAX_DEVICES,
                link_table: None,
                ..Default::default()
            },
        );
        report.cancelled = result.cancelled && lost.is_none();
        report.cluster = Some(ClusterRun {
            shard: shard.map(|s| s.to_string()),
            nodes: spec.as_ref().map_or(1, |s| s.nodes),
            group_lost: lost.clone(),
            trials_run: result.trials_run,
            complete: shard
                .is_none()
                .then_some(!result.cancelled && result.trials_done >= result.trials_planned),
        });
        if json {
            out.out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&report.to_json())?
            ));
        } else {
            out.out(&format!("\n{}", report.text()));
        }
    }
    if let (Some(reason), Some(s)) = (&lost, &spec) {
        out.note(&format!("error: multi-node sweep stopped: {reason}"));
        if rank0 {
            let c = &result.counts;
            out.note(&format!(
                "{} of {} trials are saved{} in {}",
                c.done(),
                c.planned(),
                if c.staged() {
                    format!(" ({})", c.text())
                } else {
                    String::new()
                },
                log_path.display()
            ));
        }
        out.note(&format!("resume with: {}", hint.command(&log_path, s)));
        return Ok(ExitCode::from(1));
    }
    if result.cancelled {
        return Ok(ExitCode::from(130));
    }
    if result.trial_errors > 0 {
        out.note(&format!(
            "{} trial(s) failed (see the messages above); they are not logged and resume re-runs them",
            result.trial_errors
        ));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
