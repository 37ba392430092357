//! `bench --sweep-peer`: a whole sweep here against the same protocol in JAX, in one run.
//!
//! The lab's sweep of an MLP image preset (`scaling-lab sweep PRESET --trials K --batch-sizes …`,
//! run as its own process, the way a user runs it) and `benches/peers/jax_sweep.py` on the same
//! trial plan (every trial's batch size, metaparameters and seed, in the lab's order), the same
//! train/validation split, the same stopping rule (evaluation steps, target, divergence, budget,
//! early stopping) — interleaved round by round, each timed as a whole process. Prints both wall
//! times, their ratio, and S(B) of both side by side (the protocols agree when the curves do).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{anyhow, bail, Context};
use serde::Serialize;

use scaling_lab::core::DeviceSpec;
use scaling_lab::data::Dataset;
use scaling_lab::sweep::plan::plan_trials;
use scaling_lab::train::bench::{peer_python, peers_dir, PEER_PYTHON_HINT};
use scaling_lab::workload::load::find_preset;
use scaling_lab::workload::spec::{Decay, ModelSpec, OptimizerKind, Preset};

/// What `bench --sweep-peer` measures.
pub struct SweepPeerArgs {
    pub preset: String,
    pub trials: usize,
    /// None: the preset's first 8 batch sizes.
    pub batch_sizes: Option<Vec<usize>>,
    pub rounds: usize,
}

#[derive(Serialize, Debug)]
pub struct SweepPeerRow {
    pub batch_size: usize,
    pub ours_steps: Option<u64>,
    pub jax_steps: Option<u64>,
}

#[derive(Serialize, Debug)]
pub struct SweepPeerReport {
    pub preset: String,
    pub batch_sizes: Vec<usize>,
    pub trials_per_batch: usize,
    /// Whole-process wall seconds of every round.
    pub ours_wall_s: Vec<f64>,
    pub jax_wall_s: Vec<f64>,
    /// Whole-process CPU seconds (user + system, all threads) of every round: on a loaded
    /// machine the fairer figure (the scheduler shares cores per thread, not per process).
    pub ours_cpu_s: Vec<f64>,
    pub jax_cpu_s: Vec<f64>,
    /// JAX's own time from the first trial (imports excluded) and its compilations, per round.
    pub jax_inner_wall_s: Vec<f64>,
    pub jax_compile_s: Vec<f64>,
    /// Median over rounds of jax / ours (> 1: the lab is faster).
    pub speedup_median: f64,
    /// Best round against best round.
    pub speedup_best: f64,
    /// Median over rounds of jax / ours in CPU seconds.
    pub cpu_ratio_median: f64,
    pub rows: Vec<SweepPeerRow>,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => 0.5 * (s[n / 2 - 1] + s[n / 2]),
    }
}

/// CPU seconds (user + system) of every child process waited for so far.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) } != 0 {
        return f64::NAN;
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(u.ru_utime) + s(u.ru_stime)
}

fn write_f32(path: &Path, v: &[f32]) -> anyhow::Result<()> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn write_i32(path: &Path, v: &[u8]) -> anyhow::Result<()> {
    let bytes: Vec<u8> = v.iter().flat_map(|&x| (x as i32).to_le_bytes()).collect();
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Writes the split and the trial plan the JAX script reads into `dir`.
fn write_protocol(preset: &Preset, bs: &[usize], trials: usize, dir: &Path) -> anyhow::Result<()> {
    let w = &preset.workload;
    let ModelSpec::Mlp { hidden } = &w.model else {
        bail!(
            "--sweep-peer: {} is not an MLP preset (the JAX peer is an MLP)",
            preset.name
        );
    };
    let spec = w
        .dataset
        .as_ref()
        .ok_or_else(|| anyhow!("--sweep-peer: {} has no dataset", preset.name))?;
    let data = scaling_lab::data::load_cached(spec).map_err(|e| anyhow!("{e}"))?;
    let Dataset::Images(d) = &*data else {
        bail!("--sweep-peer: {} is not an image preset", preset.name);
    };
    write_f32(&dir.join("train_x.f32"), &d.train_x)?;
    write_i32(&dir.join("train_y.i32"), &d.train_y)?;
    write_f32(&dir.join("val_x.f32"), &d.val_x)?;
    write_i32(&dir.join("val_y.i32"), &d.val_y)?;
    let devices = DeviceSpec::Cpu {
        workers: preset.sweep.workers,
    };
    let plan = plan_trials(preset, bs, trials, &devices, w.precision, preset.sweep.seed);
    let trials: Vec<serde_json::Value> = plan
        .iter()
        .map(|t| {
            let m = &t.metaparams;
            let decay = match m.schedule.decay {
                Decay::Constant => serde_json::json!({ "kind": "constant" }),
                Decay::Linear { alpha, steps } => {
                    serde_json::json!({ "kind": "linear", "alpha": alpha, "steps": steps })
                }
            };
            serde_json::json!({
                "trial_id": t.trial_id,
                "batch_size": t.batch_size,
                "learning_rate": m.learning_rate,
                "momentum": m.momentum,
                "beta2": m.beta2,
                "epsilon": m.epsilon,
                "warmup_steps": m.schedule.warmup_steps,
                "decay": decay,
                "seed": t.seed,
                "budget": w.budget_for(t.batch_size),
            })
        })
        .collect();
    let optimizer = match w.optimizer {
        OptimizerKind::Sgd => "sgd",
        OptimizerKind::Momentum => "momentum",
        OptimizerKind::Nesterov => "nesterov",
        OptimizerKind::Adam => "adam",
    };
    let plan = serde_json::json!({
        "features": d.example_len(),
        "classes": d.classes,
        "hidden": hidden,
        "optimizer": optimizer,
        "eval_every": w.eval_every,
        "eval_growth": w.eval_growth,
        "target": w.target.value,
        "divergence_factor": w.divergence_factor,
        "early_stopping": preset.sweep.early_stopping,
        "trials": trials,
    });
    std::fs::write(dir.join("plan.json"), serde_json::to_vec(&plan)?)?;
    Ok(())
}

/// S(B) per batch size (None: no trial reached the target).
type StepsPerB = Vec<(usize, Option<u64>)>;

/// One round of ours: the sweep as its own process; (wall seconds, S(B) per batch size).
fn run_ours(a: &SweepPeerArgs, bs: &[usize], runs: &Path) -> anyhow::Result<(f64, StepsPerB)> {
    let exe = std::env::current_exe().context("the scaling-lab executable")?;
    let list = bs
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let t0 = Instant::now();
    let out = Command::new(exe)
        .args(["sweep", &a.preset, "--trials", &a.trials.to_string()])
        .args(["--batch-sizes", &list, "--json", "--runs-dir"])
        .arg(runs)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("running the lab's sweep")?;
    let wall = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!("the lab's sweep failed ({})", out.status);
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("the lab's sweep --json report")?;
    let rows = v["per_batch"]
        .as_array()
        .ok_or_else(|| anyhow!("no per_batch rows in the sweep report"))?
        .iter()
        .map(|r| {
            (
                r["batch_size"].as_u64().unwrap_or(0) as usize,
                r["steps"].as_u64(),
            )
        })
        .collect();
    Ok((wall, rows))
}

/// JAX's round: (whole-process wall, its own wall, compile seconds, S(B) per batch size).
type JaxRound = (f64, f64, f64, StepsPerB);

fn run_jax(python: &Path, dir: &Path) -> anyhow::Result<JaxRound> {
    let t0 = Instant::now();
    let out = Command::new(python)
        .arg(peers_dir().join("jax_sweep.py"))
        .arg(dir)
        .env("JAX_PLATFORMS", "cpu")
        .stdin(Stdio::null())
        .output()
        .context("running jax_sweep.py")?;
    let wall = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "jax_sweep.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut best: std::collections::BTreeMap<usize, Option<u64>> = Default::default();
    let (mut inner, mut compile) = (f64::NAN, f64::NAN);
    for line in text.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            let b = v["batch_size"].as_u64().unwrap_or(0) as usize;
            let e = best.entry(b).or_insert(None);
            if v["outcome"] == "reached" {
                let s = v["steps"].as_u64().unwrap_or(u64::MAX);
                *e = Some(e.map_or(s, |x| x.min(s)));
            }
        } else if let Some(rest) = line.strip_prefix("jax sweep ") {
            for kv in rest.split_whitespace() {
                if let Some(x) = kv.strip_prefix("wall_s=") {
                    inner = x.parse().unwrap_or(f64::NAN);
                } else if let Some(x) = kv.strip_prefix("compile_s=") {
                    compile = x.parse().unwrap_or(f64::NAN);
                }
            }
        }
    }
    Ok((wall, inner, compile, best.into_iter().collect()))
}

pub fn sweep_peer(a: &SweepPeerArgs) -> anyhow::Result<SweepPeerReport> {
    let (_, preset) = find_preset(&a.preset).map_err(|e| super::usage(format!("--preset: {e}")))?;
    let bs: Vec<usize> = match &a.batch_sizes {
        Some(v) => v.clone(),
        None => preset.sweep.batch_sizes.iter().copied().take(8).collect(),
    };
    let python = peer_python().ok_or_else(|| anyhow!("--sweep-peer: {PEER_PYTHON_HINT}"))?;
    let tmp = tempdir()?;
    let proto = tmp.join("protocol");
    std::fs::create_dir_all(&proto)?;
    write_protocol(&preset, &bs, a.trials, &proto)?;
    let mut rep = SweepPeerReport {
        preset: preset.name.clone(),
        batch_sizes: bs.clone(),
        trials_per_batch: a.trials,
        ours_wall_s: vec![],
        jax_wall_s: vec![],
        ours_cpu_s: vec![],
        jax_cpu_s: vec![],
        jax_inner_wall_s: vec![],
        jax_compile_s: vec![],
        speedup_median: f64::NAN,
        speedup_best: f64::NAN,
        cpu_ratio_median: f64::NAN,
        rows: vec![],
    };
    let (mut ratios, mut cpu_ratios) = (vec![], vec![]);
    let (mut ours_rows, mut jax_rows) = (vec![], vec![]);
    for round in 0..a.rounds.max(1) {
        let runs = tmp.join(format!("runs-{round}"));
        let c0 = children_cpu_s();
        let (ow, orows) = run_ours(a, &bs, &runs)?;
        let c1 = children_cpu_s();
        let (jw, inner, compile, jrows) = run_jax(&python, &proto)?;
        let c2 = children_cpu_s();
        eprintln!(
            "round {}: lab {ow:.2} s ({:.2} s CPU), jax {jw:.2} s ({:.2} s CPU)",
            round + 1,
            c1 - c0,
            c2 - c1
        );
        rep.ours_wall_s.push(ow);
        rep.jax_wall_s.push(jw);
        rep.ours_cpu_s.push(c1 - c0);
        rep.jax_cpu_s.push(c2 - c1);
        cpu_ratios.push((c2 - c1) / (c1 - c0));
        rep.jax_inner_wall_s.push(inner);
        rep.jax_compile_s.push(compile);
        ratios.push(jw / ow);
        ours_rows = orows;
        jax_rows = jrows;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    rep.speedup_median = median(&ratios);
    rep.cpu_ratio_median = median(&cpu_ratios);
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    rep.speedup_best = min(&rep.jax_wall_s) / min(&rep.ours_wall_s);
    rep.rows = bs
        .iter()
        .map(|&b| SweepPeerRow {
            batch_size: b,
            ours_steps: ours_rows.iter().find(|r| r.0 == b).and_then(|r| r.1),
            jax_steps: jax_rows.iter().find(|r| r.0 == b).and_then(|r| r.1),
        })
        .collect();
    Ok(rep)
}

fn tempdir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("scaling-lab-sweep-peer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

pub fn render(r: &SweepPeerReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let steps = |s: Option<u64>| s.map_or("–".to_string(), |v| v.to_string());
    let _ = writeln!(
        out,
        "Sweep {} ({} B × {} trials): the lab's `sweep` against the same protocol in JAX (benches/peers/jax_sweep.py), whole processes, {} round(s) interleaved",
        r.preset,
        r.batch_sizes.len(),
        r.trials_per_batch,
        r.ours_wall_s.len()
    );
    let f = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "  lab  wall s: {} (median {:.2}); CPU s: {}",
        f(&r.ours_wall_s),
        median(&r.ours_wall_s),
        f(&r.ours_cpu_s)
    );
    let _ = writeln!(
        out,
        "  jax  wall s: {} (median {:.2}; in-script {:.2}, of which compiling {:.2}); CPU s: {}",
        f(&r.jax_wall_s),
        median(&r.jax_wall_s),
        median(&r.jax_inner_wall_s),
        median(&r.jax_compile_s),
        f(&r.jax_cpu_s)
    );
    let _ = writeln!(
        out,
        "  jax / lab: {:.2}x wall (median of rounds), {:.2}x (best against best), {:.2}x CPU (median)",
        r.speedup_median, r.speedup_best, r.cpu_ratio_median
    );
    let _ = writeln!(out, "{:>8} {:>10} {:>10}", "batch", "lab S(B)", "jax S(B)");
    for row in &r.rows {
        let _ = writeln!(
            out,
            "{:>8} {:>10} {:>10}",
            row.batch_size,
            steps(row.ours_steps),
            steps(row.jax_steps)
        );
    }
    out
}
