//! The subcommands' flags. Every number is range-checked by clap where the range is fixed
//! (≥ 1, ≤ a cap) and by `SweepOverrides` where it depends on the preset (target, batch size vs
//! the training set). Preset-backed settings are `Option`: a flag that is not given never
//! overrides the preset.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use scaling_lab::core::trial::DeviceSpec;
use scaling_lab::sweep::overrides::MAX_WORKERS;
use scaling_lab::train;
use scaling_lab::workload::spec::{Fuse, LrRule, OptimizerKind, Precision};

#[derive(Clone, Copy, ValueEnum)]
pub enum PrecisionArg {
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
pub enum OptimizerArg {
    Sgd,
    Momentum,
    Nesterov,
    Adam,
}

impl From<OptimizerArg> for OptimizerKind {
    fn from(o: OptimizerArg) -> Self {
        match o {
            OptimizerArg::Sgd => OptimizerKind::Sgd,
            OptimizerArg::Momentum => OptimizerKind::Momentum,
            OptimizerArg::Nesterov => OptimizerKind::Nesterov,
            OptimizerArg::Adam => OptimizerKind::Adam,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LrRuleArg {
    None,
    Linear,
    Sqrt,
}

impl From<LrRuleArg> for LrRule {
    fn from(r: LrRuleArg) -> Self {
        match r {
            LrRuleArg::None => LrRule::None,
            LrRuleArg::Linear => LrRule::Linear,
            LrRuleArg::Sqrt => LrRule::Sqrt,
        }
    }
}

fn positive(max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=max)
}

/// A batch size: a whole number from 1 ("0" says that batch sizes start at 1, not which range of
/// integers the parser takes).
fn batch_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    match t.parse::<u64>() {
        Ok(0) => Err("batch sizes start at 1".into()),
        Ok(b) => usize::try_from(b).map_err(|_| format!("{b} is too large for a batch size")),
        Err(_) if t.parse::<i64>().is_ok() => Err("batch sizes start at 1".into()),
        Err(_) if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() => {
            Err(format!("{t} is too large for a batch size"))
        }
        Err(_) => Err(format!("`{s}` is not a batch size (a whole number from 1)")),
    }
}

/// `--batch-schedule`: "auto", or the explicit form (checked by `core::schedule::parse`).
#[derive(Clone, Debug)]
pub enum ScheduleArg {
    Auto,
    Explicit(Vec<(usize, Option<f64>)>),
}

fn parse_schedule(s: &str) -> Result<ScheduleArg, String> {
    if s.trim() == "auto" {
        return Ok(ScheduleArg::Auto);
    }
    scaling_lab::core::schedule::parse(s).map(ScheduleArg::Explicit)
}

/// `--fuse`: a number of trials (≥ 1; 1 = off), "off" or "auto".
fn parse_fuse(s: &str) -> Result<Fuse, String> {
    let f = Fuse::parse(s)?;
    if let Some(k) = f.members() {
        if k > scaling_lab::train::runner::MAX_GROUP {
            return Err(format!(
                "{k} trials in one group: at most {}",
                scaling_lab::train::runner::MAX_GROUP
            ));
        }
    }
    Ok(f)
}

/// `--confirm`: "KxR" or "off" (`workload::spec::ConfirmPlan::parse`).
#[derive(Clone, Copy, Debug)]
pub struct ConfirmArg(pub Option<scaling_lab::workload::spec::ConfirmPlan>);

fn parse_confirm(s: &str) -> Result<ConfirmArg, String> {
    scaling_lab::workload::spec::ConfirmPlan::parse(s).map(ConfirmArg)
}

/// `--until`: a relative half-width, or "off" (Some(None): not even the preset's confirm_until).
#[derive(Clone, Copy, Debug)]
pub struct UntilArg(pub Option<f64>);

fn until_arg(s: &str) -> Result<UntilArg, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("off") {
        return Ok(UntilArg(None));
    }
    t.parse::<f64>()
        .map(|v| UntilArg(Some(v)))
        .map_err(|_| format!("`{s}` is not a relative half-width (e.g. 0.15 for ±15 %) or off"))
}

fn positive_u64() -> clap::builder::RangedU64ValueParser<u64> {
    clap::builder::RangedU64ValueParser::<u64>::new().range(1..)
}

#[derive(Args, Clone)]
pub struct DeviceArgs {
    /// Data-parallel CPU workers (threads), 1-8 typical (default: the preset's).
    #[arg(long, allow_negative_numbers = true, value_parser = positive(MAX_WORKERS as u64))]
    pub workers: Option<usize>,
    /// GPU devices: cuda:0,1 (--features cuda) or wgpu:0,1 (--features wgpu; wgpu:0,0 is two
    /// replicas sharing adapter 0).
    #[arg(long, value_name = "LIST", conflicts_with = "workers")]
    pub devices: Option<String>,
    /// Use the first N CUDA GPUs.
    #[arg(long, value_name = "N", conflicts_with_all = ["workers", "devices"], allow_negative_numbers = true, value_parser = positive(1024))]
    pub gpus: Option<usize>,
}

impl DeviceArgs {
    /// The devices the flags ask for (None: no flag, keep the preset's). CUDA flags probe the
    /// devices first.
    pub fn spec(&self) -> anyhow::Result<Option<DeviceSpec>> {
        if let Some(n) = self.gpus {
            let found = train::runner::cuda::probe().map_err(|e| anyhow::anyhow!("--gpus: {e}"))?;
            anyhow::ensure!(n <= found, "--gpus {n}: {found} CUDA device(s) found");
            return Ok(Some(DeviceSpec::Cuda {
                devices: (0..n).collect(),
            }));
        }
        if let Some(list) = &self.devices {
            let spec = parse_devices(list).map_err(super::usage)?;
            match &spec {
                DeviceSpec::Wgpu { .. } => {
                    train::wgpu::probe().map_err(|e| anyhow::anyhow!("--devices: {e}"))?;
                }
                _ => {
                    train::runner::cuda::probe().map_err(|e| anyhow::anyhow!("--devices: {e}"))?;
                }
            }
            return Ok(Some(spec));
        }
        Ok(self.workers.map(|workers| DeviceSpec::Cpu { workers }))
    }
}

/// Parses `--devices`: `cuda:0,1`, `0,1` (CUDA), `cuda:0,cuda:1`, `wgpu:0`, `wgpu:0,1`,
/// `wgpu:0,0` (two replicas sharing adapter 0). One kind per list; a CUDA device may not repeat.
pub fn parse_devices(list: &str) -> Result<DeviceSpec, String> {
    let mut kind: Option<&str> = None;
    let mut ids = vec![];
    for part in list.split(',') {
        let p = part.trim();
        let (k, id) = match p.split_once(':') {
            Some((k, id)) => (Some(k.trim()), id.trim()),
            None => (None, p),
        };
        if let Some(k) = k {
            if k != "cuda" && k != "wgpu" {
                return Err(format!("--devices: `{p}` is not cuda:N or wgpu:N"));
            }
            match kind {
                Some(prev) if prev != k => {
                    return Err(format!(
                        "--devices: `{list}` mixes {prev} and {k} devices (one kind per trial)"
                    ))
                }
                _ => kind = Some(k),
            }
        }
        match id.parse::<usize>() {
            Ok(i) if i < 1024 => ids.push(i),
            _ => {
                return Err(format!(
                    "--devices: `{p}` is not {}:N",
                    kind.unwrap_or("cuda")
                ))
            }
        }
    }
    if kind == Some("wgpu") {
        return Ok(DeviceSpec::Wgpu { adapters: ids });
    }
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != ids.len() {
        return Err(format!(
            "--devices: `{list}` lists a device twice (two replicas on one GPU: wgpu:0,0)"
        ));
    }
    Ok(DeviceSpec::Cuda { devices: ids })
}

#[derive(Args)]
pub struct TrainArgs {
    /// Preset name (e.g. mnist-cnn-momentum) or path.
    #[arg(long, default_value = "digits-mlp-momentum")]
    pub preset: String,
    #[arg(long, default_value_t = 128, allow_negative_numbers = true, value_parser = batch_size)]
    pub batch_size: usize,
    #[command(flatten)]
    pub devices: DeviceArgs,
    /// Learning rate (default: the preset's).
    #[arg(long, allow_negative_numbers = true)]
    pub lr: Option<f64>,
    /// Momentum γ (or Adam β1).
    #[arg(long, allow_negative_numbers = true)]
    pub momentum: Option<f64>,
    /// Scale the learning rate from --base-batch to --batch-size.
    #[arg(long, value_enum)]
    pub lr_rule: Option<LrRuleArg>,
    /// The batch size --lr-rule scales from (default: the preset's `search.base_batch`).
    #[arg(long, allow_negative_numbers = true, value_parser = batch_size)]
    pub base_batch: Option<usize>,
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// Seed of initialisation and data order (default 0).
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Step budget (default: the preset's).
    #[arg(long, allow_negative_numbers = true, value_parser = positive_u64())]
    pub steps: Option<u64>,
    /// Target value of the preset's metric.
    #[arg(long, allow_negative_numbers = true)]
    pub target: Option<f64>,
    #[arg(long, allow_negative_numbers = true, value_parser = positive_u64())]
    pub eval_every: Option<u64>,
    /// Initial dynamic loss scale for fp16 (default 65536; finite, ≥ 1; fp16 only).
    #[arg(long, allow_negative_numbers = true)]
    pub loss_scale: Option<f64>,
    /// Skip the gradient-noise-scale estimate.
    #[arg(long)]
    pub no_noise_scale: bool,
    /// One worker: measure tr(Σ) for the noise scale every K steps (1 = every step; default: the
    /// cadence follows the measured cost of a sample, ≤ 3% of the trial's time).
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = positive_u64(), conflicts_with = "no_noise_scale")]
    pub noise_every: Option<u64>,
    /// A batch-size schedule instead of --batch-size: "16,0.2:64,0.08:256" (B = 16, then 64 from
    /// the first evaluation meeting 0.2, then 256 from one meeting 0.08), or "auto" with --from
    /// LOG (B_crit of each rung of the log's ladder). η per stage: the preset's LR rule, or the
    /// log's best η with --from (docs/targets.md).
    #[arg(long, value_name = "SPEC", value_parser = parse_schedule, conflicts_with = "batch_size")]
    pub batch_schedule: Option<ScheduleArg>,
    /// With --batch-schedule: a sweep's run log of this workload. η per stage from its best
    /// trials; the schedule runs --repeats seeds beside the log's best fixed batch size (re-run
    /// here at the same seeds) and the comparison is printed.
    #[arg(long, value_name = "LOG", requires = "batch_schedule")]
    pub from: Option<std::path::PathBuf>,
    /// With --from: seeds per side of the comparison (default 3).
    #[arg(long, requires = "from", allow_negative_numbers = true, value_parser = positive(100))]
    pub repeats: Option<usize>,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// One node of a multi-node trial (--nodes/--node-rank/--coordinator, or srun's env).
    #[command(flatten)]
    pub nodes: scaling_lab::cluster::NodeArgs,
}

#[derive(Args)]
pub struct SweepArgs {
    /// Preset name or path (not with --resume).
    pub preset: Option<String>,
    /// The model: a family (mlp, cnn, resnet, char-lstm, mlstm, transformer, nqm) and its
    /// settings, e.g. `resnet:depth=8,width=4,batch_norm=ghost,ghost_batch=16`. With --dataset
    /// and --optimizer (no preset): a study the calibration stage completes (docs/calibration.md).
    #[arg(long, value_name = "KIND[:KEY=VALUE,…]", conflicts_with = "resume")]
    pub model: Option<String>,
    /// The dataset: a named one (digits, mnist, fashion, shakespeare, reviews, cifar10,
    /// cifar100), one of your datasets file or presets, or a file or folder (its format from
    /// its name or --format), with settings, e.g. `mnist:downsample=2`.
    #[arg(
        long,
        value_name = "NAME|PATH[:KEY=VALUE,…]",
        conflicts_with = "resume"
    )]
    pub dataset: Option<String>,
    /// The format of a --dataset path (idx, cifar10, cifar100, npy, npz, image-folder, bytes,
    /// tokens).
    #[arg(long, value_name = "FORMAT", requires = "dataset")]
    pub format: Option<String>,
    /// The optimizer of a --model/--dataset study (or replacing the preset's).
    #[arg(long, value_enum, conflicts_with = "resume")]
    pub optimizer: Option<OptimizerArg>,
    /// Save the study as your preset NAME once its calibration stage chose it (or at once,
    /// without one): a sweep of that preset re-runs the same study (`scaling-lab sweep NAME`).
    #[arg(long, value_name = "NAME")]
    pub save_preset: Option<String>,
    /// Stop once the calibration stage chose the study (with --save-preset: save it); `sweep
    /// --resume LOG` runs the study later.
    #[arg(long)]
    pub calibrate_only: bool,
    /// Batch sizes, e.g. 16,32,64 (default: the preset's).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = batch_size)]
    pub batch_sizes: Option<Vec<usize>>,
    /// Trials per batch size (default: the preset's).
    #[arg(long, allow_negative_numbers = true, value_parser = positive(scaling_lab::sweep::overrides::MAX_TRIALS as u64))]
    pub trials: Option<usize>,
    #[command(flatten)]
    pub devices: DeviceArgs,
    /// Trials run at once (default: the preset's).
    #[arg(long, allow_negative_numbers = true, value_parser = positive(scaling_lab::sweep::overrides::MAX_CONCURRENCY as u64))]
    pub concurrency: Option<usize>,
    /// GPU sweeps: every trial on one device, K trials per device at once (0: one trial spans
    /// all the devices, the default).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(0..=64))]
    pub trials_per_device: Option<u64>,
    /// Fused trial groups: the trials of one batch size trained as one program, at most K at a
    /// time; `off` trains every trial alone; `auto` (the default) measures which K pays.
    #[arg(long, value_name = "K|off|auto", value_parser = parse_fuse, allow_negative_numbers = true)]
    pub fuse: Option<Fuse>,
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Target value of the preset's metric (default: the preset's).
    #[arg(long, allow_negative_numbers = true)]
    pub target: Option<f64>,
    /// A ladder of targets, e.g. 0.2,0.1,0.06,0.04: trials run until the strictest (early
    /// stopping caps by its best so far), every rung is read exactly from the same trials.
    #[arg(
        long,
        value_delimiter = ',',
        allow_negative_numbers = true,
        conflicts_with = "target"
    )]
    pub targets: Option<Vec<f64>>,
    /// Resume the sweep logged in this file (runs only the missing trials).
    #[arg(long, value_name = "LOG")]
    pub resume: Option<PathBuf>,
    /// Print the report as JSON at the end instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Re-run each batch size's best metaparameters with R−1 more seeds (S(B) median, min–max).
    #[arg(long, value_name = "R", allow_negative_numbers = true, value_parser = positive(100))]
    pub repeats: Option<usize>,
    /// Keep adding trials where one more is expected to narrow the steps-to-target interval most,
    /// until every relative half-width is ≤ REL (e.g. 0.25), every other B has flattened, or
    /// --max-trials is spent; the report says per B: met, stalled (why) or budget. With a confirm
    /// stage it adds fresh seeds there (default: the preset's confirm_until; off: none).
    #[arg(long, value_name = "REL|off", allow_negative_numbers = true, value_parser = until_arg)]
    pub until: Option<UntilArg>,
    /// Trial budget of --until (default 4× the plan).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = positive(scaling_lab::sweep::overrides::MAX_TRIALS as u64 * 64))]
    pub max_trials: Option<usize>,
    /// Where a batch size's best trial sits at the edge of the η or 1−γ range, add trials there in
    /// the range moved half a width past that edge, up to N moves each way (e.g. 2).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = positive(scaling_lab::core::widen::WIDEN_MAX_SHIFT as u64))]
    pub widen: Option<usize>,
    /// The confirm stage: after the search at each batch size, re-run its best K configurations
    /// with R fresh seeds each; the confirmed S(B) is the seed median of the best of them, with an
    /// interval (KxR or K×R, e.g. 3x5; off: none; default: the preset's, 3x5).
    #[arg(long, value_name = "KxR|off", value_parser = parse_confirm)]
    pub confirm: Option<ConfirmArg>,
    /// Run the sweep as a Slurm job array (--slurm --array N …) or one shard of it (--shard i/N).
    #[command(flatten)]
    pub slurm: scaling_lab::cluster::SlurmArgs,
    #[command(flatten)]
    pub nodes: scaling_lab::cluster::NodeArgs,
}

#[derive(Args)]
pub struct CompareArgs {
    #[arg(required = true, num_args = 2..)]
    pub logs: Vec<PathBuf>,
    /// Read every log at this target value instead of its goal (exact at or looser than a log's
    /// goal; stricter is reported as not measured).
    #[arg(long, allow_negative_numbers = true, conflicts_with = "targets")]
    pub target: Option<f64>,
    /// B_crit of every log at each target: a comma list (e.g. 0.2,0.1,0.06) or `auto` (each
    /// log's own ladder).
    #[arg(long, value_name = "LIST|auto")]
    pub targets: Option<String>,
    /// Print the comparison as JSON: per run the fit, B_crit, the noise scale and the per-B S(B),
    /// each with its 95 % interval, and the evidence the curve rests on.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ExportArgs {
    pub log: PathBuf,
    #[arg(long)]
    pub svg: Option<PathBuf>,
    #[arg(long)]
    pub csv: Option<PathBuf>,
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Per-trial CSV (metaparameters and outcomes).
    #[arg(long)]
    pub trials_csv: Option<PathBuf>,
    /// The metaparameter picture (η × 1−γ per batch size, coloured by steps-to-target) as SVG.
    #[arg(long)]
    pub metaparams_svg: Option<PathBuf>,
    /// B_crit (with its 95 % interval) and S_min against the target, log axes, fitted trend, as
    /// SVG: over the log's ladder (geometric above the goal for a single-target log) or --targets.
    #[arg(long)]
    pub bcrit_svg: Option<PathBuf>,
    /// The targets of --bcrit-svg: a comma list or `auto` (the default).
    #[arg(long, value_name = "LIST|auto", requires = "bcrit_svg")]
    pub targets: Option<String>,
}

#[derive(Args)]
pub struct ImportArgs {
    pub dir: PathBuf,
    /// Measurement column that must reach the target.
    #[arg(long, default_value = "val/classification_error")]
    pub metric: String,
    /// Target value (the metric must be <= this).
    #[arg(long, allow_negative_numbers = true)]
    pub target: f64,
    /// Output run log (default: <runs-dir>/<name>.jsonl).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Largest `report --max-devices`.
pub const MAX_DEVICES: u64 = 1 << 20;

#[derive(Args)]
pub struct ReportArgs {
    pub log: PathBuf,
    /// Largest device count G in the projection (powers of two up to it; ≤ 1048576).
    #[arg(long, default_value_t = 1024, allow_negative_numbers = true, value_parser = positive(MAX_DEVICES))]
    pub max_devices: usize,
    /// Print the report as JSON (shape: docs/report-schema.json).
    #[arg(long)]
    pub json: bool,
    /// Read S(B), the fit and the regimes at this target value instead of the sweep's goal: exact
    /// from the trials' evaluation curves at or looser than the goal; stricter is not measured.
    #[arg(long, allow_negative_numbers = true, conflicts_with = "targets")]
    pub target: Option<f64>,
    /// One row per target (B_crit, S_min with intervals, regimes) and the trend: a comma list
    /// (e.g. 0.2,0.1,0.06,0.04) or `auto` (the sweep's ladder; geometric above a single goal).
    #[arg(long, value_name = "LIST|auto")]
    pub targets: Option<String>,
}

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub bench: scaling_lab::train::bench::BenchArgs,
    /// Instead: the nccl-tests-style all-reduce table of the lab's in-process exchange (message
    /// size 1 KiB … 64 MiB × G = 2, 4, 8 threads: time, algbw, busbw, and the latency +
    /// bytes/bandwidth fit the projection uses). Saves the table to <runs-dir>/allreduce.json,
    /// where `report` and `sweep` find it for the projection's measured link.
    #[arg(long)]
    pub allreduce: bool,
    /// With --allreduce: the numbers of replicas G (default 2,4,8).
    #[arg(long, value_delimiter = ',', requires = "allreduce", value_parser = clap::value_parser!(u64).range(2..=64))]
    pub worlds: Vec<u64>,
    /// With --allreduce: the largest message in bytes (1 KiB … this, ×4 steps; default 64 MiB).
    #[arg(long, requires = "allreduce", value_parser = clap::value_parser!(u64).range(1024..=(1u64 << 30)))]
    pub max_message: Option<u64>,
    /// Instead: a whole sweep of an image preset (MLP or small CNN) against the same protocol in
    /// JAX (benches/peers/jax_sweep.py, trial by trial: same plan, split and stopping rule), as
    /// whole processes, --rounds interleaved rounds; prints wall and CPU times and S(B) side by side.
    #[arg(long, conflicts_with = "allreduce")]
    pub sweep_peer: bool,
    /// With --sweep-peer: the preset (an MLP or small-CNN image preset: digits-mlp-*,
    /// mnist-cnn-*, fashion-cnn-*).
    #[arg(long, requires = "sweep_peer", default_value = "digits-mlp-sgd")]
    pub sweep_preset: String,
    /// With --sweep-peer: also run the vmapped JAX peer (benches/peers/jax_sweep_vmap.py: the
    /// trials of each batch size in one jitted program, the same protocol) in every round.
    #[arg(long, requires = "sweep_peer")]
    pub vmap: bool,
    /// With --sweep-peer: run the vmapped JAX peer instead of the trial-by-trial one.
    #[arg(long, requires = "sweep_peer")]
    pub vmap_only: bool,
    /// With --sweep-peer: trials per batch size.
    #[arg(long, requires = "sweep_peer", default_value_t = 8, value_parser = positive(scaling_lab::sweep::overrides::MAX_TRIALS as u64))]
    pub sweep_trials: usize,
    /// With --sweep-peer: batch sizes (default: the preset's first 8).
    #[arg(long, requires = "sweep_peer", value_delimiter = ',', value_parser = batch_size)]
    pub sweep_batch_sizes: Option<Vec<usize>>,
}

#[derive(Subcommand)]
pub enum DataCmd {
    /// Copy the bundled data files (checksummed) into DIR; then point SCALING_LAB_DATA_DIR at it.
    Install { dir: PathBuf },
    /// Show where the data files are looked for.
    Where,
}

#[derive(Args)]
pub struct ScreenshotArgs {
    #[arg(long, default_value = "screenshots")]
    pub out: PathBuf,
}
