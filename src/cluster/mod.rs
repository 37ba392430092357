//! Beyond one machine: sweeps as Slurm job arrays, and one trial data-parallel across
//! nodes with burn-collective's global mode (vendored and patched, see vendor/README.md).
//!
//! Layering: imports everything below it (up to `report`: a cluster sweep ends with the same
//! `report::of_sweep` as any other); only `cli` and `tui` import it.
//!
//! * `sweepdir`: the sweep directory `runs/<sweep>/` (header.json, one `shard-<i>.jsonl` run log per
//!   array task) and the merged reading of it (`read_sweep_dir`, `open_log_or_dir`).
//! * `slurm`: the sbatch scripts, submission, `--wait` progress from `squeue` and the shard logs.
//! * `multinode`: `--nodes/--node-rank/--coordinator` (or SLURM_PROCID/NTASKS/JOB_NODELIST), the
//!   collective configuration of one node, the orchestrator on rank 0 and the liveness watchdog.
//!
//! Sharding is static: array task i of N runs the trials whose plan index is ≡ i (mod N). Every
//! task re-derives the same plan from the seed, so no task needs to talk to another or take a lock
//! on the shared filesystem (flock on NFS is unreliable, and a task that dies holding a claim would
//! need lease expiry); interleaving gives every task a mix of cheap and expensive batch sizes, and
//! resume re-submits exactly the tasks whose share is unfinished.

pub mod multinode;
pub mod run;
pub mod slurm;
pub mod sweepdir;

use std::str::FromStr;

use crate::train::multinode::ClusterSpec;
pub use run::{node_session, sweep_hook, wants_sweep, ClusterOutput, NodeSession};
pub use sweepdir::{is_sweep_dir, open_log_or_dir, read_sweep_dir};

/// A static share of a sweep plan: array task `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Does this shard run the trial with plan index `trial_id`?
    pub fn owns(&self, trial_id: u64) -> bool {
        (trial_id % self.count as u64) as usize == self.index
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: expected I/N, e.g. 0/4"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| format!("`{s}`: I is not a number"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| format!("`{s}`: N is not a number"))?;
        if count == 0 || index >= count {
            return Err(format!("`{s}`: need 0 <= I < N"));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Slurm flags of `sweep` (flatten into the sweep arguments).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SlurmArgs {
    /// Submit to Slurm: a job array (--array N) or one multi-node job (--nodes N) running the sweep.
    #[arg(long)]
    pub slurm: bool,
    /// Array tasks of a --slurm sweep: task i runs plan trials i, i+N, i+2N, …
    #[arg(long, value_name = "N", requires = "slurm")]
    pub array: Option<usize>,
    /// Slurm partition (sbatch --partition).
    #[arg(long, value_name = "P", requires = "slurm")]
    pub partition: Option<String>,
    /// Generic resources per task, e.g. gpu:1 (sbatch --gres).
    #[arg(long, value_name = "GRES", requires = "slurm")]
    pub gres: Option<String>,
    /// Time limit per task (sbatch --time), e.g. 01:00:00.
    #[arg(long, value_name = "T", requires = "slurm")]
    pub time: Option<String>,
    /// After submitting, show progress until the job ends, then print the merged report.
    #[arg(long)]
    pub wait: bool,
    /// Print the sbatch script instead of submitting it (creates nothing).
    #[arg(long)]
    pub dry_run: bool,
    /// Run only this static share of a sweep directory's plan (what each array task runs).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
}

/// Multi-node flags of `train` and `sweep` (flatten into both).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct NodeArgs {
    /// Nodes (processes) that train one trial together (default: SLURM_NTASKS under srun, else 1).
    #[arg(long, value_name = "N")]
    pub nodes: Option<usize>,
    /// This process's rank 0..N-1 (default: SLURM_PROCID). Rank 0 runs the orchestrator and
    /// writes the run log.
    #[arg(long, value_name = "R")]
    pub node_rank: Option<usize>,
    /// Rank 0's address, HOST:PORT (default: first host of SLURM_JOB_NODELIST, port from the job
    /// id). PORT is the orchestrator's; node r serves tensors on PORT+1+r, liveness on PORT+N+1.
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: Option<String>,
}

impl NodeArgs {
    /// The multi-node set-up these flags (and the Slurm environment) ask for; `None` for one node.
    pub fn spec(&self) -> anyhow::Result<Option<ClusterSpec>> {
        ClusterSpec::from_args_env(self, &|k| std::env::var(k).ok())
    }
}
