//! sbatch scripts, submission and job state (squeue) for sweeps on Slurm.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::sweepdir::ClusterInfo;
use super::SlurmArgs;

/// Single-quotes a word for sh when it needs it.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:=,@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `0-3` for a contiguous run, else `1,3,7`.
pub fn array_spec(indices: &[usize]) -> String {
    let contiguous = indices.windows(2).all(|w| w[1] == w[0] + 1);
    match (indices.first(), indices.last()) {
        (Some(a), Some(b)) if contiguous && indices.len() > 1 => format!("{a}-{b}"),
        _ => indices
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The sbatch script of a sweep directory: a job array whose task i runs shard i of
/// `info.array` (with `info.nodes` > 1, each task is one multi-node job started with srun).
pub fn sbatch_script(
    dir: &Path,
    info: &ClusterInfo,
    indices: &[usize],
    slurm: &SlurmArgs,
    exe: &Path,
    job_name: &str,
    cpus_per_task: usize,
) -> String {
    let d = dir.display().to_string();
    let mut s = String::new();
    s.push_str("#!/bin/bash\n");
    s.push_str(&format!(
        "# scaling-lab sweep on Slurm: {} array task(s) over the plan in {d}\n",
        info.array
    ));
    s.push_str(&format!("#SBATCH --job-name={}\n", sh_quote(job_name)));
    s.push_str(&format!("#SBATCH --array={}\n", array_spec(indices)));
    if info.nodes > 1 {
        s.push_str(&format!("#SBATCH --nodes={}\n", info.nodes));
        s.push_str("#SBATCH --ntasks-per-node=1\n");
        s.push_str(&format!("#SBATCH --output={d}/slurm-%A_%a.out\n"));
    } else {
        s.push_str("#SBATCH --ntasks=1\n");
        s.push_str(&format!("#SBATCH --output={d}/slurm-%A_%a.out\n"));
    }
    if cpus_per_task > 1 {
        s.push_str(&format!("#SBATCH --cpus-per-task={cpus_per_task}\n"));
    }
    if let Some(p) = &slurm.partition {
        s.push_str(&format!("#SBATCH --partition={}\n", sh_quote(p)));
    }
    if let Some(g) = &slurm.gres {
        s.push_str(&format!("#SBATCH --gres={}\n", sh_quote(g)));
    }
    if let Some(t) = &slurm.time {
        s.push_str(&format!("#SBATCH --time={}\n", sh_quote(t)));
    }
    s.push_str("set -eu\n");
    let run = format!(
        "{} sweep --resume {} --shard \"$SLURM_ARRAY_TASK_ID/{}\"",
        sh_quote(&exe.display().to_string()),
        sh_quote(&d),
        info.array
    );
    if info.nodes > 1 {
        // one process per node; ranks, node count and rank 0's host come from SLURM_PROCID,
        // SLURM_NTASKS and SLURM_JOB_NODELIST; a rank that fails ends the step
        s.push_str(&format!("exec srun --kill-on-bad-exit=1 {run}\n"));
    } else {
        s.push_str(&format!("exec {run}\n"));
    }
    s
}

/// Submits a script with `sbatch --parsable`; returns the job id.
pub fn submit(script_path: &Path) -> anyhow::Result<String> {
    submit_with(script_path, &[])
}

/// The confirm phase of a sweep with a confirm stage: the same script for the array
/// tasks `indices`, started once job `after` has ended (`--dependency=afterany`), so that every
/// batch size's search is logged before a task places its share of the confirm trials.
pub fn submit_after(script_path: &Path, after: &str, indices: &[usize]) -> anyhow::Result<String> {
    submit_with(
        script_path,
        &[
            format!("--dependency=afterany:{after}"),
            format!("--array={}", array_spec(indices)),
        ],
    )
}

fn submit_with(script_path: &Path, extra: &[String]) -> anyhow::Result<String> {
    let out = Command::new("sbatch")
        .arg("--parsable")
        .args(extra)
        .arg(script_path)
        .output()
        .context("cannot run sbatch (is Slurm installed and SLURM_CONF set?)")?;
    if !out.status.success() {
        bail!(
            "sbatch failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text
        .trim()
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    anyhow::ensure!(
        !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()),
        "sbatch printed no job id: `{}`",
        text.trim()
    );
    Ok(id)
}

/// Array tasks still in the queue, by state (from squeue).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueState {
    pub pending: usize,
    pub running: usize,
    pub other: usize,
}

impl QueueState {
    pub fn is_empty(&self) -> bool {
        self.pending + self.running + self.other == 0
    }
}

/// How many array tasks one squeue id stands for: `12_3` → 1, `12_[4-7,9]` → 5.
fn tasks_in(id: &str) -> usize {
    match id.split_once("_[") {
        None => 1,
        Some((_, rest)) => rest
            .trim_end_matches(']')
            .split(',')
            .map(|r| {
                let r = r.split('%').next().unwrap_or(r);
                match r.split_once('-') {
                    Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                        (Ok(a), Ok(b)) if b >= a => b - a + 1,
                        _ => 1,
                    },
                    None => 1,
                }
            })
            .sum(),
    }
}

/// Parses `squeue -h -o "%i %T"` output.
pub fn parse_squeue(text: &str) -> QueueState {
    let mut q = QueueState::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(id), Some(state)) = (it.next(), it.next()) else {
            continue;
        };
        let n = tasks_in(id);
        match state {
            "PENDING" | "CONFIGURING" => q.pending += n,
            "RUNNING" | "COMPLETING" => q.running += n,
            _ => q.other += n,
        }
    }
    q
}

/// The queue state of a job (all its array tasks). A job Slurm no longer knows is empty.
pub fn queue_state(job: &str) -> anyhow::Result<QueueState> {
    let out = Command::new("squeue")
        .args(["-h", "-j", job, "-o", "%i %T"])
        .output()
        .context("cannot run squeue")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("Invalid job id") {
            return Ok(QueueState::default());
        }
        bail!("squeue failed: {}", err.trim());
    }
    Ok(parse_squeue(&String::from_utf8_lossy(&out.stdout)))
}

/// Where a sweep directory's Slurm job is, for the TUI's Runs screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    Completed,
    Failed,
}

impl JobState {
    pub fn label(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
        }
    }
}

/// The state of job `job` from `squeue` (still queued: pending or running) and, once it left the
/// queue, `sacct` (failed if any task failed, was cancelled, timed out or pre-empted; completed
/// if every task completed). Without accounting (`sacct` unavailable, as on the local test
/// cluster) a job that left the queue is completed when the sweep is (`complete`), else failed.
/// `None` when Slurm is not there (squeue missing or failing).
pub fn job_state(job: &str, complete: bool) -> Option<JobState> {
    let queue = queue_state(job).ok()?;
    let sacct = || {
        let out = Command::new("sacct")
            .args(["-n", "-X", "-P", "-j", job, "-o", "State"])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    Some(job_state_from(
        &queue,
        queue.is_empty().then(sacct).flatten().as_deref(),
        complete,
    ))
}

/// [`job_state`] from what squeue and sacct said.
pub fn job_state_from(queue: &QueueState, sacct: Option<&str>, complete: bool) -> JobState {
    if queue.running + queue.other > 0 {
        return JobState::Running;
    }
    if queue.pending > 0 {
        return JobState::Pending;
    }
    let states: Vec<&str> = sacct
        .unwrap_or("")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    const BAD: [&str; 8] = [
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
    ];
    if states.iter().any(|s| BAD.iter().any(|b| s.starts_with(b))) {
        JobState::Failed
    } else if complete || !states.is_empty() && states.iter().all(|s| s.starts_with("COMPLETED")) {
        JobState::Completed
    } else {
        JobState::Failed
    }
}

/// Polls until the job has left the queue, calling `progress` about once a second. squeue
/// failures are retried for 60 s (a restarting slurmctld), then reported.
pub fn wait_job(job: &str, mut progress: impl FnMut(&QueueState)) -> anyhow::Result<()> {
    let mut failing_since: Option<Instant> = None;
    loop {
        match queue_state(job) {
            Ok(q) => {
                failing_since = None;
                progress(&q);
                if q.is_empty() {
                    return Ok(());
                }
            }
            Err(e) => {
                let t = *failing_since.get_or_insert_with(Instant::now);
                if t.elapsed() > Duration::from_secs(60) {
                    return Err(e.context(format!("lost track of Slurm job {job}")));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_lines_count_array_tasks() {
        let q = parse_squeue("12_[2-3,7] PENDING\n12_0 RUNNING\n12_1 COMPLETING\n");
        assert_eq!(
            q,
            QueueState {
                pending: 3,
                running: 2,
                other: 0
            }
        );
        assert!(parse_squeue("").is_empty());
        assert_eq!(tasks_in("5_[0-9%2]"), 10);
    }

    #[test]
    fn job_states_from_squeue_and_sacct() {
        let q = |pending, running| QueueState {
            pending,
            running,
            other: 0,
        };
        assert_eq!(job_state_from(&q(3, 1), None, false), JobState::Running);
        assert_eq!(job_state_from(&q(2, 0), None, false), JobState::Pending);
        let gone = q(0, 0);
        let ok = "COMPLETED\nCOMPLETED\n";
        assert_eq!(job_state_from(&gone, Some(ok), false), JobState::Completed);
        let bad = "COMPLETED\nCANCELLED by 0\n";
        assert_eq!(job_state_from(&gone, Some(bad), true), JobState::Failed);
        // no accounting: the logs decide
        assert_eq!(job_state_from(&gone, None, true), JobState::Completed);
        assert_eq!(job_state_from(&gone, Some(""), false), JobState::Failed);
        assert_eq!(JobState::Pending.label(), "pending");
    }

    #[test]
    fn array_specs_and_quoting() {
        assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_spec(&[1, 3]), "1,3");
        assert_eq!(array_spec(&[2]), "2");
        assert_eq!(sh_quote("/a/b-c"), "/a/b-c");
        assert_eq!(sh_quote("a b'c"), "'a b'\\''c'");
    }

    #[test]
    fn script_runs_the_shard_of_each_task() {
        let info = ClusterInfo {
            array: 4,
            nodes: 1,
            jobs: vec![],
        };
        let args = SlurmArgs {
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            time: Some("01:00:00".into()),
            ..Default::default()
        };
        let s = sbatch_script(
            Path::new("/r/s"),
            &info,
            &[0, 1, 2, 3],
            &args,
            Path::new("/bin/scaling-lab"),
            "sl-x",
            1,
        );
        assert!(s.starts_with("#!/bin/bash\n"));
        for l in [
            "#SBATCH --array=0-3",
            "#SBATCH --partition=gpu",
            "#SBATCH --gres=gpu:1",
            "#SBATCH --time=01:00:00",
            "#SBATCH --output=/r/s/slurm-%A_%a.out",
            "exec /bin/scaling-lab sweep --resume /r/s --shard \"$SLURM_ARRAY_TASK_ID/4\"",
        ] {
            assert!(s.contains(l), "missing `{l}` in\n{s}");
        }
        let multi = ClusterInfo {
            array: 1,
            nodes: 2,
            jobs: vec![],
        };
        let s = sbatch_script(
            Path::new("/r/s"),
            &multi,
            &[0],
            &SlurmArgs::default(),
            Path::new("/bin/scaling-lab"),
            "sl-x",
            1,
        );
        assert!(s.contains("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"));
        assert!(s.contains("exec srun --kill-on-bad-exit=1 /bin/scaling-lab sweep --resume"));
    }
}
