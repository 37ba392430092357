//! The thread layout of a CPU sweep and its wall-time estimate.
//!
//! On C cores a sweep either runs one trial at a time on all C threads or C trials at once on one
//! thread each (each trial's replica in its own rayon pool, see `core::runner::with_thread_budget`). Which
//! is faster depends on the workload: a small model's step is per-op overhead that a second thread
//! barely shortens, a large gemm-bound step uses both cores. So the choice is **measured**, not
//! guessed: a short calibration (a few steps of the workload's own trainer, no evaluation) times
//! one trial on all threads at the sweep's smallest, middle and largest batch size and C trials at
//! once at the middle one; C trials win when their total examples/s beats one trial's by 5 %. The
//! result is cached per workload (model, dataset, precision, cores, CPU features, crate version) in
//! `<runs-dir>/layout-calibration.json`, so it costs a few seconds once.
//!
//! An explicit `--concurrency N` or `[sweep] concurrency = N` in the preset wins: the calibration
//! runs only for presets that leave `concurrency` out (`SweepDefaults::auto_concurrency`).
//! Trials with several data-parallel workers, CUDA trials and the closed-form NQM follow rules
//! (stated in `Layout::why`) instead.
//!
//! The same calibration fits a step time t(B) = overhead + per_example·B, from which
//! `estimate_wall_time` bounds a sweep's wall time (every trial running its full step budget, plus
//! its evaluations); `sweep --dry-run` prints it and the TUI's Setup can call `sweep_estimate`
//! (or the non-blocking `cached_sweep_estimate`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::SweepConfig;
use crate::core::runner::TrialRunner;
use crate::core::trial::{CancelToken, DeviceSpec, TrialSpec};
use crate::workload::spec::{Fuse, Precision, Workload};

/// Name of the calibration cache in the runs directory.
pub const CACHE_FILE: &str = "layout-calibration.json";

/// Several trials at once must beat one trial's examples/s by this factor to be chosen.
pub const MIN_GAIN: f64 = 1.05;

/// One workload's calibration on this machine.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Calibration {
    pub key: String,
    pub cores: usize,
    /// One trial on all threads: (batch size, seconds per step).
    pub one_trial: Vec<(usize, f64)>,
    /// Batch size of the comparison.
    pub batch: usize,
    /// One trial on all threads at `batch`.
    pub one_trial_examples_per_s: f64,
    /// `cores` trials at once, one thread each, at `batch` (their total).
    pub many_trials_examples_per_s: f64,
    /// The faster choice: 1 or `cores`.
    pub concurrency: usize,
    pub measured: String,
    /// Validation examples per evaluation of the workload (what an evaluation costs in the wall
    /// time estimate; 0 in caches written before it was recorded).
    #[serde(default)]
    pub n_val: usize,
    /// Fused groups measured at `batch` (`resolve_fuse`): total examples/s of a group of
    /// `members` trials on `threads` threads (empty in caches from before fused groups).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fused: Vec<FusedPoint>,
}

/// The throughput of one fused group size (`Calibration::fused`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FusedPoint {
    pub members: usize,
    pub threads: usize,
    /// Σ over the members of examples/s.
    pub examples_per_s: f64,
}

impl Calibration {
    /// Seconds per step of one trial on all threads at batch `b`: the least-squares line
    /// overhead + per_example·b through the measured points (overhead, slope ≥ 0).
    pub fn step_s(&self, b: usize) -> f64 {
        let pts = &self.one_trial;
        match pts.len() {
            0 => 0.0,
            1 => pts[0].1 * b as f64 / pts[0].0.max(1) as f64,
            _ => {
                let n = pts.len() as f64;
                let mx = pts.iter().map(|p| p.0 as f64).sum::<f64>() / n;
                let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
                let sxx: f64 = pts.iter().map(|p| (p.0 as f64 - mx).powi(2)).sum();
                let sxy: f64 = pts.iter().map(|p| (p.0 as f64 - mx) * (p.1 - my)).sum();
                let slope = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
                let overhead = my - slope * mx;
                if overhead >= 0.0 {
                    overhead + slope * b as f64
                } else {
                    // no fixed cost visible: proportional through the mean point
                    my / mx * b as f64
                }
            }
        }
    }

    /// Total examples/s of `concurrency` trials relative to one trial (1 for concurrency 1).
    pub fn speedup(&self, concurrency: usize) -> f64 {
        if concurrency <= 1 || self.one_trial_examples_per_s <= 0.0 {
            1.0
        } else {
            (self.many_trials_examples_per_s / self.one_trial_examples_per_s).max(1e-3)
        }
    }
}

/// What a sweep runs at once and on how many threads each.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub concurrency: usize,
    /// Rayon threads per trial (None: the shared global pool).
    pub threads_per_trial: Option<usize>,
    /// Why (shown to the user).
    pub why: String,
}

/// CPU cores available to this process (rayon's global pool size).
pub fn cores() -> usize {
    rayon::current_num_threads().max(1)
}

/// Threads each trial gets when `concurrency` trials run at once on `cores` cores (None: one
/// trial at a time on the global pool, or a GPU sweep).
pub fn threads_per_trial(devices: &DeviceSpec, concurrency: usize, cores: usize) -> Option<usize> {
    match devices {
        DeviceSpec::Cpu { .. } if concurrency > 1 => Some((cores / concurrency).max(1)),
        _ => None,
    }
}

/// The layout a configuration asks for as it stands (no calibration).
pub fn fixed_layout(cfg: &SweepConfig, why: &str) -> Layout {
    Layout {
        concurrency: cfg.concurrency,
        threads_per_trial: threads_per_trial(&cfg.devices, cfg.concurrency, cores()),
        why: why.to_string(),
    }
}

/// Cache key of a workload's calibration.
pub fn calibration_key(w: &Workload, precision: Precision, cores: usize) -> String {
    let f = crate::train::bench::cpu_features();
    format!(
        "{}|{}|{}|{}|cores={cores}|avx512={}|v{}",
        serde_json::to_string(&w.model).unwrap_or_default(),
        serde_json::to_string(&w.dataset).unwrap_or_default(),
        w.optimizer.name(),
        precision.name(),
        f.avx512f,
        env!("CARGO_PKG_VERSION")
    )
}

/// The workload cut down to `steps` timed training steps: no evaluation, no target.
fn short(w: &Workload, steps: u64) -> Workload {
    let mut w = w.clone();
    w.step_budget = steps.max(1);
    w.max_examples = None;
    w.eval_every = u64::MAX / 2;
    w.eval_growth = 0.0;
    w.target.value = crate::workload::spec::Target::unreachable_value(w.target.metric);
    // the timed steps only: no probe at the start or the end
    w.transfer = None;
    w
}

fn spec(w: &Workload, b: usize, precision: Precision) -> TrialSpec {
    TrialSpec {
        trial_id: 0,
        batch_size: b,
        devices: DeviceSpec::Cpu { workers: 1 },
        precision,
        metaparams: w.defaults.clone(),
        seed: 0,
        repeat_of: None,
        confirm: None,
        calibrate: None,
    }
}

/// Mean seconds per step of `steps` steps of one trial at `b`, on `threads` (None: all).
fn step_time(
    runner: &dyn TrialRunner,
    w: &Workload,
    b: usize,
    steps: u64,
    precision: Precision,
    threads: Option<usize>,
) -> anyhow::Result<f64> {
    let w = short(w, steps);
    let o = crate::core::runner::in_thread_budget(threads, || {
        runner.run(
            &w,
            &spec(&w, b, precision),
            &mut |_| {},
            &CancelToken::new(),
        )
    })?;
    let s = o.throughput.step_s;
    anyhow::ensure!(
        s.is_finite() && s > 0.0,
        "calibration at B = {b}: no step time measured"
    );
    Ok(s)
}

/// Runs the calibration of `w` for batch sizes `batches` (the sweep's) on `cores` cores.
/// Takes about `cores + 3` × `budget_s` seconds.
pub fn calibrate(
    runner: &dyn TrialRunner,
    w: &Workload,
    precision: Precision,
    batches: &[usize],
    cores: usize,
    budget_s: f64,
) -> anyhow::Result<Calibration> {
    anyhow::ensure!(!batches.is_empty(), "no batch sizes to calibrate");
    let mut bs = batches.to_vec();
    bs.sort_unstable();
    let (lo, mid, hi) = (bs[0], bs[bs.len() / 2], bs[bs.len() - 1]);
    // a 2-step probe at the largest B sizes the measurements
    let probe = step_time(runner, w, hi, 2, precision, None)?;
    let steps_at = |b: usize| -> u64 {
        let t = probe * (b as f64 / hi as f64).max(0.05);
        ((budget_s / t).ceil() as u64).clamp(3, 400)
    };
    let mut one_trial = Vec::new();
    for b in [lo, mid, hi] {
        if one_trial.iter().any(|p: &(usize, f64)| p.0 == b) {
            continue;
        }
        one_trial.push((b, step_time(runner, w, b, steps_at(b), precision, None)?));
    }
    let t_mid = one_trial
        .iter()
        .find(|p| p.0 == mid)
        .map(|p| p.1)
        .expect("mid measured");
    let one = mid as f64 / t_mid;
    let many = if cores > 1 {
        let n = steps_at(mid);
        let times: Vec<anyhow::Result<f64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..cores)
                .map(|_| s.spawn(|| step_time(runner, w, mid, n, precision, Some(1))))
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("calibration trial panicked")))
                })
                .collect()
        });
        let mut total = 0.0;
        for t in times {
            total += mid as f64 / t?;
        }
        total
    } else {
        one
    };
    Ok(Calibration {
        key: calibration_key(w, precision, cores),
        cores,
        one_trial,
        batch: mid,
        one_trial_examples_per_s: one,
        many_trials_examples_per_s: many,
        concurrency: if cores > 1 && many > one * MIN_GAIN {
            cores
        } else {
            1
        },
        measured: chrono::Local::now().to_rfc3339(),
        n_val: 0,
        fused: Vec::new(),
    })
}

/// The calibration of a GPU-scale workload on the CPU, where one step at the largest B can take
/// a minute: 2 steps at the smallest B on all threads, step time taken ∝ B (one point: see
/// `Calibration::step_s`), one trial at a time. Seconds, not minutes, and enough for the
/// warning's wall-time bound.
pub fn quick_calibration(
    runner: &dyn TrialRunner,
    w: &Workload,
    precision: Precision,
    batches: &[usize],
) -> anyhow::Result<Calibration> {
    let lo = batches
        .iter()
        .copied()
        .min()
        .context("no batch sizes to calibrate")?;
    let cores = cores();
    let t = step_time(runner, w, lo, 2, precision, None)?;
    Ok(Calibration {
        key: calibration_key(w, precision, cores),
        cores,
        one_trial: vec![(lo, t)],
        batch: lo,
        one_trial_examples_per_s: lo as f64 / t,
        many_trials_examples_per_s: lo as f64 / t,
        concurrency: 1,
        measured: format!(
            "{} (quick: 2 steps at B = {lo})",
            chrono::Local::now().to_rfc3339()
        ),
        n_val: 0,
        fused: Vec::new(),
    })
}

pub fn cache_path(runs_dir: &Path) -> PathBuf {
    runs_dir.join(CACHE_FILE)
}

/// Every cached calibration in `runs_dir`, by key (empty when there is no readable cache).
pub fn read_cache(runs_dir: &Path) -> BTreeMap<String, Calibration> {
    std::fs::read_to_string(cache_path(runs_dir))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Adds `cal` to the cache (written to a temporary file, then renamed: never half a file).
fn write_cache(runs_dir: &Path, cal: &Calibration) -> anyhow::Result<()> {
    std::fs::create_dir_all(runs_dir)?;
    let mut all = read_cache(runs_dir);
    all.insert(cal.key.clone(), cal.clone());
    let tmp = runs_dir.join(format!(".{CACHE_FILE}.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_string_pretty(&all)? + "\n")?;
    std::fs::rename(&tmp, cache_path(runs_dir))?;
    Ok(())
}

/// The cached calibration of this configuration's workload, if any.
pub fn cached_calibration(cfg: &SweepConfig) -> Option<Calibration> {
    let key = calibration_key(&cfg.preset.workload, cfg.precision, cores());
    read_cache(&cfg.runs_dir).remove(&key)
}

/// The calibration of this configuration's workload: cached, or measured now and cached.
/// Returns it and whether it came from the cache.
pub fn calibration(
    cfg: &SweepConfig,
    runner: &dyn TrialRunner,
) -> anyhow::Result<(Calibration, bool)> {
    if let Some(c) = cached_calibration(cfg) {
        return Ok((c, true));
    }
    // a study whose calibration stage chooses its batch sizes: those around its reference B
    let batches = if cfg.batch_sizes.is_empty() {
        super::calibrate::stand_in_batches(&cfg.preset.workload, cfg.trial_devices().replicas())
    } else {
        cfg.batch_sizes.clone()
    };
    let mut c = if cfg.preset.sweep.gpu_scale {
        quick_calibration(runner, &cfg.preset.workload, cfg.precision, &batches)?
    } else {
        calibrate(
            runner,
            &cfg.preset.workload,
            cfg.precision,
            &batches,
            cores(),
            0.4,
        )?
    };
    c.n_val = n_val(cfg);
    // a cache that cannot be written only costs a re-measurement next time
    let _ = write_cache(&cfg.runs_dir, &c);
    Ok((c, false))
}

/// Whether this configuration's layout is chosen by calibration (else: a rule or the user).
fn calibrated(cfg: &SweepConfig) -> bool {
    matches!(cfg.devices, DeviceSpec::Cpu { workers: 1 })
        && !cfg.preset.workload.closed_form()
        && cores() > 1
}

/// The layout the scheduler uses for `cfg`: the user's when `concurrency` was given (flag or
/// preset), else the rule or the calibration (which may run now, a few seconds, then cached).
pub fn resolve(cfg: &SweepConfig, runner: &dyn TrialRunner) -> anyhow::Result<Layout> {
    if !cfg.preset.sweep.auto_concurrency {
        return Ok(fixed_layout(cfg, "set by the preset or --concurrency"));
    }
    let c = cores();
    let (concurrency, why) = match &cfg.devices {
        DeviceSpec::Cuda { .. } | DeviceSpec::Wgpu { .. } => (
            cfg.concurrency,
            "GPU: the device assignment sets what runs at once".to_string(),
        ),
        DeviceSpec::Cpu { workers } if *workers > 1 => (
            1,
            format!("rule: the trial's {workers} workers already share the {c} cores"),
        ),
        _ if cfg.preset.workload.closed_form() => (
            c,
            format!("rule: closed-form NQM trials are single-threaded; {c} at once"),
        ),
        _ if c <= 1 => (1, "one core".to_string()),
        _ => {
            let (cal, cached) = calibration(cfg, runner)?;
            (
                cal.concurrency,
                format!(
                    "{} at B = {}: 1 trial × {} threads {:.0} ex/s vs {} trials × 1 thread {:.0} ex/s",
                    if cached { "calibrated (cached)" } else { "calibrated now" },
                    cal.batch,
                    cal.cores,
                    cal.one_trial_examples_per_s,
                    cal.cores,
                    cal.many_trials_examples_per_s
                ),
            )
        }
    };
    Ok(Layout {
        concurrency,
        threads_per_trial: threads_per_trial(&cfg.devices, concurrency, c),
        why,
    })
}

/// Mean seconds per step of a fused group of `members` trials at `b` (`steps` steps), on
/// `threads` threads (None: all); an out-of-memory or a failure is an error.
#[allow(clippy::too_many_arguments)]
fn group_step_time(
    runner: &dyn TrialRunner,
    w: &Workload,
    b: usize,
    steps: u64,
    precision: Precision,
    threads: Option<usize>,
    members: usize,
) -> anyhow::Result<f64> {
    let w = short(w, steps);
    let (specs, cancels) = spec(&w, b, precision).members(members);
    let group = crate::core::runner::Group {
        specs: &specs,
        cancels: &cancels,
        cut: crate::core::runner::GroupCut::None,
    };
    let mut step_s: Option<anyhow::Result<f64>> = None;
    // the steady state: the mean step without the first (the first step of a group allocates
    // and first touches its buffers, a cost that grows with the group); the first step's time
    // is what its Step event's rate says (examples of one step over the time trained so far)
    let first_s: std::sync::Mutex<Option<f64>> = std::sync::Mutex::new(None);
    crate::core::runner::in_thread_budget(threads, || {
        runner.run_group(
            &w,
            &group,
            &mut |i, e| {
                let mut first = first_s.lock().unwrap_or_else(|p| p.into_inner());
                if let (0, None, crate::core::events::TrialEvent::Step(s)) = (i, *first, &e) {
                    if s.step + s.skipped_steps == 1 && s.examples_per_s > 0.0 {
                        *first = Some(b as f64 / s.examples_per_s);
                    }
                }
            },
            &mut |_, r| {
                if step_s.is_none() {
                    step_s = Some(r.and_then(|o| match o.outcome {
                        crate::core::trial::Outcome::Oom { .. } => {
                            anyhow::bail!("out of device memory at B = {b} × {members} trials")
                        }
                        _ => {
                            let n = (o.steps + o.skipped_steps) as f64;
                            let total = o.throughput.step_s * n;
                            Ok(match *first_s.lock().unwrap_or_else(|p| p.into_inner()) {
                                Some(f) if n >= 2.0 && total - f > 0.0 => (total - f) / (n - 1.0),
                                _ => o.throughput.step_s,
                            })
                        }
                    }));
                }
            },
        )
    });
    let s =
        step_s.unwrap_or_else(|| Err(anyhow::anyhow!("the calibration group reported nothing")))?;
    anyhow::ensure!(
        s.is_finite() && s > 0.0,
        "calibration of {members} fused trials at B = {b}: no step time measured"
    );
    Ok(s)
}

/// A larger group must give this share of the best measured throughput to be chosen over a
/// smaller one (larger groups also stop together at the first reach, which the throughput does
/// not show).
pub const FUSE_NEAR_BEST: f64 = 0.95;

/// The fuse setting of `cfg` when it is automatic: the largest group (up to the trials of one
/// batch size, at most 16) whose measured throughput at the calibration's batch size is within
/// 5 % of the best group size measured (1, half and all), if fusing gains at least 5 % over one
/// trial at a time; else off. Measured on the sweep's thread layout, cached with the workload's
/// calibration. Returns the setting and why.
pub fn resolve_fuse(cfg: &SweepConfig, runner: &dyn TrialRunner) -> anyhow::Result<(Fuse, String)> {
    if let Some(k) = cfg.fuse.members() {
        return Ok((
            cfg.fuse,
            format!(
                "set to {} by the preset or --fuse",
                Fuse::of_members(k).label()
            ),
        ));
    }
    let kmax = cfg
        .trials_per_batch
        .min(16)
        .min(runner.max_group(&cfg.preset.workload, &cfg.devices));
    if kmax <= 1 {
        return Ok((Fuse::Off, "rule: nothing to fuse (one trial per batch size, or a runner that trains trials alone)".into()));
    }
    if cfg.preset.workload.closed_form() {
        return Ok((
            Fuse::Off,
            "rule: closed-form NQM trials are not fused".into(),
        ));
    }
    if cfg.preset.sweep.gpu_scale && cfg.devices.is_cpu() {
        return Ok((
            Fuse::Off,
            "rule: a GPU-scale preset on the CPU trains each trial alone".into(),
        ));
    }
    let (mut cal, _) = calibration(cfg, runner)?;
    let threads = threads_per_trial(&cfg.devices, cfg.concurrency, cores()).unwrap_or(cores());
    let b = cal.batch;
    let mut ks = vec![1, kmax];
    if kmax >= 4 {
        ks.insert(1, kmax / 2);
    }
    let mut fresh = false;
    let mut points = Vec::new();
    let t1 = cal.step_s(b).max(1e-5);
    for &k in &ks {
        if let Some(p) = cal
            .fused
            .iter()
            .find(|p| p.members == k && p.threads == threads)
        {
            points.push(p.clone());
            continue;
        }
        // about 0.4 s of steps per size (the first step of a group is its warm-up)
        let steps = ((0.4 / (t1 * k as f64)).ceil() as u64).clamp(3, 200);
        let t = match group_step_time(
            runner,
            &cfg.preset.workload,
            b,
            steps,
            cfg.precision,
            Some(threads),
            k,
        ) {
            Ok(t) => t,
            // a group that does not fit (or fails) is not a candidate
            Err(_) if k > 1 => continue,
            Err(e) => return Err(e),
        };
        let p = FusedPoint {
            members: k,
            threads,
            examples_per_s: (k * b) as f64 / t,
        };
        cal.fused.push(p.clone());
        points.push(p);
        fresh = true;
    }
    if fresh {
        let _ = write_cache(&cfg.runs_dir, &cal);
    }
    let solo = points
        .iter()
        .find(|p| p.members == 1)
        .map_or(0.0, |p| p.examples_per_s);
    let best = points.iter().map(|p| p.examples_per_s).fold(0.0, f64::max);
    let chosen = points
        .iter()
        .filter(|p| p.examples_per_s >= FUSE_NEAR_BEST * best)
        .map(|p| p.members)
        .max()
        .unwrap_or(1);
    let table = points
        .iter()
        .map(|p| format!("{} × {:.0}", p.members, p.examples_per_s))
        .collect::<Vec<_>>()
        .join(", ");
    let how = if fresh {
        "calibrated now"
    } else {
        "calibrated (cached)"
    };
    if chosen <= 1 || best < MIN_GAIN * solo {
        return Ok((
            Fuse::Off,
            format!("{how} at B = {b} on {threads} thread(s): trials × ex/s {table}; fusing gains < 5 %"),
        ));
    }
    Ok((
        Fuse::Members(chosen),
        format!("{how} at B = {b} on {threads} thread(s): trials × ex/s {table}"),
    ))
}

/// A bound on a sweep's wall time.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WallEstimate {
    /// Seconds if every trial runs its full step budget (trials that reach the target or are
    /// stopped early end sooner).
    pub upper_s: f64,
    pub trials: usize,
    pub train_steps: u64,
    pub evals: u64,
    pub concurrency: usize,
    /// Seconds of the longest single trial at this concurrency (its full budget): how long the
    /// first results may wait.
    pub longest_trial_s: f64,
}

impl WallEstimate {
    /// "≤ 4 min 10 s (240 trials, 2 at once; every trial to its full budget)".
    pub fn line(&self) -> String {
        format!(
            "≤ {} ({} trial{}, {} at once; every trial to its full budget, trials that reach the target or stop early end sooner)",
            human_s(self.upper_s),
            self.trials,
            if self.trials == 1 { "" } else { "s" },
            self.concurrency
        )
    }
}

pub fn human_s(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// The wall-time bound of `cfg` run with `concurrency` trials at once, from a calibration:
/// Σ over planned trials of (budget·t(B) + evaluations·n_val·t_example/3) / speedup, where t(B)
/// is the calibrated step time, an evaluation is a forward pass (≈ a third of a training step per
/// example) over the `n_val` validation examples, and speedup is the measured total-throughput
/// gain of running `concurrency` trials at once.
pub fn estimate_wall_time(
    cfg: &SweepConfig,
    cal: &Calibration,
    concurrency: usize,
    n_val: usize,
) -> WallEstimate {
    let w = &cfg.preset.workload;
    let (mut secs, mut steps, mut evals, mut longest) = (0.0, 0u64, 0u64, 0.0f64);
    for &b in &cfg.batch_sizes {
        let budget = w.budget_for(b);
        let mut n_eval = 0u64;
        let mut at = w.next_eval(0);
        while at <= budget && n_eval < 100_000 {
            n_eval += 1;
            at = w.next_eval(at);
        }
        let t = cal.step_s(b);
        let per_example = t / b.max(1) as f64;
        let trial = budget as f64 * t + n_eval as f64 * n_val as f64 * per_example / 3.0;
        longest = longest.max(trial);
        secs += trial * cfg.trials_per_batch as f64;
        steps += budget * cfg.trials_per_batch as u64;
        evals += n_eval * cfg.trials_per_batch as u64;
    }
    let trials = cfg.batch_sizes.len() * cfg.trials_per_batch * cfg.repeats.max(1);
    WallEstimate {
        upper_s: secs * cfg.repeats.max(1) as f64 / cal.speedup(concurrency),
        trials,
        train_steps: steps * cfg.repeats.max(1) as u64,
        evals: evals * cfg.repeats.max(1) as u64,
        concurrency,
        // `concurrency` trials share the cores: each runs at speedup/concurrency of one alone
        longest_trial_s: longest * concurrency.max(1) as f64 / cal.speedup(concurrency),
    }
}

fn n_val(cfg: &SweepConfig) -> usize {
    cfg.preset
        .workload
        .dataset
        .as_ref()
        .and_then(|d| crate::data::load_cached(d).ok())
        .map_or(0, |d| match &*d {
            crate::data::Dataset::Images(i) => i.n_val(),
            // validation windows of seq_len bytes, capped per evaluation
            crate::data::Dataset::Text(t) => {
                let n = t.val.len() / t.seq_len.max(1);
                t.max_val.map_or(n, |m| n.min(m))
            }
        })
}

/// For `sweep --dry-run` and the TUI's Setup: the layout the scheduler would choose and the
/// sweep's wall-time bound. May calibrate (a few seconds, once per workload; then cached). A
/// CPU sweep only: None for NQM and CUDA sweeps (no calibration exists for them).
pub fn sweep_estimate(
    cfg: &SweepConfig,
    runner: &dyn TrialRunner,
) -> anyhow::Result<(Layout, Option<WallEstimate>)> {
    let layout = resolve(cfg, runner)?;
    if !calibrated(cfg) && !matches!(cfg.devices, DeviceSpec::Cpu { .. }) {
        return Ok((layout, None));
    }
    if cfg.preset.workload.closed_form() {
        return Ok((layout, None));
    }
    let (cal, _) = calibration(cfg, runner)?;
    let est = estimate_wall_time(cfg, &cal, layout.concurrency, n_val(cfg));
    Ok((layout, Some(est)))
}

/// `sweep_estimate` without measuring: None when the workload has no cached calibration yet (a
/// UI can call this on every redraw, and `sweep_estimate` in the background once).
pub fn cached_sweep_estimate(cfg: &SweepConfig) -> Option<(Layout, WallEstimate)> {
    estimate_from(cfg, &read_cache(&cfg.runs_dir))
}

/// The layout and wall-time bound of `cfg` from already-read calibrations (`read_cache`): no
/// IO, no measurement (the Setup screen's estimate). None without a calibration of its workload
/// on this machine, and for NQM and CUDA sweeps.
pub fn estimate_from(
    cfg: &SweepConfig,
    cals: &BTreeMap<String, Calibration>,
) -> Option<(Layout, WallEstimate)> {
    if !cfg.devices.is_cpu() || cfg.preset.workload.closed_form() {
        return None;
    }
    let key = calibration_key(&cfg.preset.workload, cfg.precision, cores());
    let cal = cals.get(&key)?;
    let concurrency = if cfg.preset.sweep.auto_concurrency && calibrated(cfg) {
        cal.concurrency
    } else {
        cfg.concurrency
    };
    let layout = Layout {
        concurrency,
        threads_per_trial: threads_per_trial(&cfg.devices, concurrency, cores()),
        why: "cached calibration".into(),
    };
    let est = estimate_wall_time(cfg, cal, concurrency, cal.n_val);
    Some((layout, est))
}

/// A CPU sweep says so before it starts, whatever its preset (GPU-scale presets say more:
/// [`gpu_scale_warning`]), when one of its trials may take this long (its first results wait
/// that long)…
pub const LONG_TRIAL_S: f64 = 600.0;
/// … or the whole sweep this long. (The sweep's bound counts every trial to its full budget:
/// the digits presets' 6-second sweeps are bounded by 12–25 min, so the bound alone would cry
/// wolf at 10 minutes.)
pub const LONG_SWEEP_S: f64 = 3600.0;

impl WallEstimate {
    /// One trial or the whole sweep may take long ([`LONG_TRIAL_S`], [`LONG_SWEEP_S`]).
    pub fn is_long(&self) -> bool {
        self.longest_trial_s >= LONG_TRIAL_S || self.upper_s >= LONG_SWEEP_S
    }
}

/// The warning for a CPU sweep whose bound `est` is long ([`WallEstimate::is_long`]); None for
/// shorter sweeps, GPU-scale presets (they have their own warning) and other devices.
pub fn long_sweep_warning(cfg: &SweepConfig, est: &WallEstimate) -> Option<String> {
    if cfg.preset.sweep.gpu_scale || !cfg.devices.is_cpu() || !est.is_long() {
        return None;
    }
    Some(format!(
        "this sweep may take long: {}; one trial alone up to {} (`--dry-run` shows the plan; \
         fewer --trials or --batch-sizes, or a smaller step_budget or model, shorten it; ctrl-c \
         stops it keeping every finished trial)",
        est.line(),
        human_s(est.longest_trial_s)
    ))
}

/// The warning for a GPU-scale preset (`[sweep] gpu_scale`) swept on the CPU, with its
/// estimated wall time when one is known; None for other presets and for CUDA sweeps.
pub fn gpu_scale_warning(cfg: &SweepConfig, est: Option<&WallEstimate>) -> Option<String> {
    if !cfg.preset.sweep.gpu_scale || !cfg.devices.is_cpu() {
        return None;
    }
    let time = match est {
        Some(e) => format!("estimated {}", e.line()),
        None => format!(
            "no estimate yet (`scaling-lab sweep {} --dry-run` calibrates it, once)",
            cfg.preset.name
        ),
    };
    Some(format!(
        "{} is a GPU-scale preset running on the CPU: {time}; build with --features cuda and pass --devices cuda:0 to run it at its scale",
        cfg.preset.name
    ))
}

#[cfg(test)]
mod tests;
