//! `bench --sweep-peer`: a whole sweep here against the same protocol in JAX, in one run.
//!
//! The lab's sweep of an image preset (digits MLP or small CNN; `scaling-lab sweep PRESET --trials K
//! --batch-sizes …`, run as its own process, the way a user runs it) and the JAX peers on the same
//! trial plan (every trial's batch size, metaparameters and seed, in the lab's order), the same
//! train/validation split, the same stopping rule (evaluation steps, target, divergence, budget,
//! early stopping): `benches/peers/jax_sweep.py` trial by trial and, with `--vmap`,
//! `benches/peers/jax_sweep_vmap.py` (the trials of each batch size vmapped into one jitted
//! program) — interleaved round by round, each timed as a whole process. Prints the wall and CPU
//! times, the ratios, and S(B) of every side (the protocols agree when the curves do).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{anyhow, bail, Context};
use serde::Serialize;

use scaling_lab::core::plan::plan_trials;
use scaling_lab::core::trial::DeviceSpec;
use scaling_lab::data::Dataset;
use scaling_lab::train::bench_peer::{peer_python, peers_dir, PEER_PYTHON_HINT};
use scaling_lab::workload::presets::find_preset;
use scaling_lab::workload::spec::{Decay, OptimizerKind, Preset};

/// What `bench --sweep-peer` measures.
pub struct SweepPeerArgs {
    pub preset: String,
    pub trials: usize,
    /// None: the preset's first 8 batch sizes.
    pub batch_sizes: Option<Vec<usize>>,
    pub rounds: usize,
    /// Which JAX peers run beside the lab's sweep.
    pub peers: JaxPeers,
}

/// Which JAX sweep peers a `--sweep-peer` run measures (at least one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JaxPeers {
    /// `jax_sweep.py`: trial by trial.
    pub looped: bool,
    /// `jax_sweep_vmap.py`: the trials of each batch size vmapped into one jitted program.
    pub vmapped: bool,
}

impl JaxPeers {
    /// From the flags: `--vmap` adds the vmapped peer, `--vmap-only` runs it alone.
    pub fn from_flags(vmap: bool, vmap_only: bool) -> Self {
        JaxPeers {
            looped: !vmap_only,
            vmapped: vmap || vmap_only,
        }
    }
}

#[derive(Serialize, Debug)]
pub struct SweepPeerRow {
    pub batch_size: usize,
    pub ours_steps: Option<u64>,
    /// The trial-by-trial JAX peer's S(B) (absent when it did not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jax_steps: Option<u64>,
    /// The vmapped JAX peer's S(B) (absent when it did not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jax_vmap_steps: Option<u64>,
}

/// One JAX peer's rounds, against the lab's.
#[derive(Serialize, Debug, Default)]
pub struct JaxSide {
    /// The script under benches/peers.
    pub script: String,
    /// Whole-process wall seconds of every round.
    pub wall_s: Vec<f64>,
    /// Whole-process CPU seconds (user + system, all threads) of every round.
    pub cpu_s: Vec<f64>,
    /// The script's own time from the first trial (imports and data loading excluded) and its
    /// compilations, per round.
    pub inner_wall_s: Vec<f64>,
    pub compile_s: Vec<f64>,
    /// Median over rounds of jax / lab wall (> 1: the lab is faster).
    pub speedup_median: f64,
    /// Best round against best round.
    pub speedup_best: f64,
    /// Median over rounds of jax / lab in CPU seconds.
    pub cpu_ratio_median: f64,
    /// S(B) per batch size of the last round (None: no trial reached the target).
    #[serde(skip)]
    steps: StepsPerB,
    #[serde(skip)]
    ratios: (Vec<f64>, Vec<f64>),
}

#[derive(Serialize, Debug)]
pub struct SweepPeerReport {
    pub preset: String,
    pub batch_sizes: Vec<usize>,
    pub trials_per_batch: usize,
    /// The lab's whole-process wall seconds of every round.
    pub ours_wall_s: Vec<f64>,
    /// The lab's whole-process CPU seconds (user + system, all threads) of every round: on a
    /// loaded machine the fairer figure (the scheduler shares cores per thread, not per process).
    pub ours_cpu_s: Vec<f64>,
    /// `jax_sweep.py`, trial by trial (absent with `--vmap-only`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jax: Option<JaxSide>,
    /// `jax_sweep_vmap.py`, the trials of a batch size vmapped (with `--vmap`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jax_vmap: Option<JaxSide>,
    /// Median over rounds of trial-by-trial / vmapped wall (> 1: vmapping is faster); both ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loop_over_vmap_median: Option<f64>,
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

/// The plan's model object (benches/peers/sweep_protocol.py): the family's peer description
/// (the MLP and the small CNN have JAX sweep peers).
fn model_json(preset: &Preset) -> anyhow::Result<serde_json::Value> {
    match preset.workload.model.family().peer_model() {
        Some(m) => Ok(m),
        None => bail!(
            "--sweep-preset: {} is not an MLP or CNN image preset (the JAX sweep peers are those)",
            preset.name
        ),
    }
}

/// Writes the split and the trial plan the JAX scripts read into `dir`.
fn write_protocol(preset: &Preset, bs: &[usize], trials: usize, dir: &Path) -> anyhow::Result<()> {
    let w = &preset.workload;
    let model = model_json(preset)?;
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
        "image": [d.channels, d.height, d.width],
        "classes": d.classes,
        "model": model,
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
        // the peers run the search protocol alone: so does the lab (no confirm stage)
        .args([
            "--confirm",
            "off",
            "--batch-sizes",
            &list,
            "--json",
            "--runs-dir",
        ])
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
                // the best trial, as the peers read S(B)
                r["best_trial_steps"].as_u64(),
            )
        })
        .collect();
    Ok((wall, rows))
}

/// What a JAX sweep script printed: its own wall seconds, its compile seconds, S(B) per batch size.
#[derive(Debug, PartialEq)]
pub struct JaxOutput {
    pub inner_wall_s: f64,
    pub compile_s: f64,
    pub steps: StepsPerB,
}

/// Parses a JAX sweep script's stdout: one JSON line per trial (`batch_size`, `outcome`, `steps`;
/// S(B) is the least `steps` of a `reached` trial at B) and the summary line
/// `jax sweep trials=N wall_s=W compile_s=C …` (other keys ignored). Other lines are ignored.
pub fn parse_jax_output(text: &str) -> JaxOutput {
    let mut best: std::collections::BTreeMap<usize, Option<u64>> = Default::default();
    let (mut inner, mut compile) = (f64::NAN, f64::NAN);
    for line in text.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            let Some(b) = v["batch_size"].as_u64() else {
                continue;
            };
            let e = best.entry(b as usize).or_insert(None);
            if v["outcome"] == "reached" {
                if let Some(s) = v["steps"].as_u64() {
                    *e = Some(e.map_or(s, |x| x.min(s)));
                }
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
    JaxOutput {
        inner_wall_s: inner,
        compile_s: compile,
        steps: best.into_iter().collect(),
    }
}

/// One JAX script's round: (whole-process wall seconds, what it printed).
fn run_jax(python: &Path, script: &str, dir: &Path) -> anyhow::Result<(f64, JaxOutput)> {
    let t0 = Instant::now();
    let out = Command::new(python)
        .arg(peers_dir().join(script))
        .arg(dir)
        .env("JAX_PLATFORMS", "cpu")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {script}"))?;
    let wall = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "{script} failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    Ok((
        wall,
        parse_jax_output(&String::from_utf8_lossy(&out.stdout)),
    ))
}

pub fn sweep_peer(a: &SweepPeerArgs) -> anyhow::Result<SweepPeerReport> {
    let (_, preset) = find_preset(&a.preset).map_err(|e| super::usage(format!("--preset: {e}")))?;
    // a preset the peers cannot run is a usage error, before anything is written or run
    model_json(&preset).map_err(|e| super::usage(format!("{e}")))?;
    let bs: Vec<usize> = match &a.batch_sizes {
        Some(v) => v.clone(),
        None => preset.sweep.batch_sizes.iter().copied().take(8).collect(),
    };
    let python = peer_python().ok_or_else(|| anyhow!("--sweep-peer: {PEER_PYTHON_HINT}"))?;
    let tmp = tempdir()?;
    let proto = tmp.join("protocol");
    std::fs::create_dir_all(&proto)?;
    write_protocol(&preset, &bs, a.trials, &proto)?;
    let side = |on: bool, script: &str| {
        on.then(|| JaxSide {
            script: script.to_string(),
            ..Default::default()
        })
    };
    let mut sides = [
        side(a.peers.looped, "jax_sweep.py"),
        side(a.peers.vmapped, "jax_sweep_vmap.py"),
    ];
    let (mut ours_wall, mut ours_cpu) = (vec![], vec![]);
    let mut ours_rows = vec![];
    for round in 0..a.rounds.max(1) {
        let runs = tmp.join(format!("runs-{round}"));
        let c0 = children_cpu_s();
        let (ow, orows) = run_ours(a, &bs, &runs)?;
        let oc = children_cpu_s() - c0;
        let mut line = format!("round {}: lab {ow:.2} s ({oc:.2} s CPU)", round + 1);
        ours_wall.push(ow);
        ours_cpu.push(oc);
        ours_rows = orows;
        for s in sides.iter_mut().flatten() {
            let c1 = children_cpu_s();
            let (jw, o) = run_jax(&python, &s.script, &proto)?;
            let jc = children_cpu_s() - c1;
            line += &format!(", {} {jw:.2} s ({jc:.2} s CPU)", s.script);
            s.wall_s.push(jw);
            s.cpu_s.push(jc);
            s.inner_wall_s.push(o.inner_wall_s);
            s.compile_s.push(o.compile_s);
            s.ratios.0.push(jw / ow);
            s.ratios.1.push(jc / oc);
            s.steps = o.steps;
        }
        eprintln!("{line}");
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    for s in sides.iter_mut().flatten() {
        s.speedup_median = median(&s.ratios.0);
        s.cpu_ratio_median = median(&s.ratios.1);
        s.speedup_best = min(&s.wall_s) / min(&ours_wall);
    }
    let [jax, jax_vmap] = sides;
    let loop_over_vmap_median = match (&jax, &jax_vmap) {
        (Some(l), Some(v)) => Some(median(
            &l.wall_s
                .iter()
                .zip(&v.wall_s)
                .map(|(l, v)| l / v)
                .collect::<Vec<_>>(),
        )),
        _ => None,
    };
    let steps_at = |rows: &StepsPerB, b: usize| rows.iter().find(|r| r.0 == b).and_then(|r| r.1);
    let rows = bs
        .iter()
        .map(|&b| SweepPeerRow {
            batch_size: b,
            ours_steps: steps_at(&ours_rows, b),
            jax_steps: jax.as_ref().and_then(|s| steps_at(&s.steps, b)),
            jax_vmap_steps: jax_vmap.as_ref().and_then(|s| steps_at(&s.steps, b)),
        })
        .collect();
    Ok(SweepPeerReport {
        preset: preset.name.clone(),
        batch_sizes: bs,
        trials_per_batch: a.trials,
        ours_wall_s: ours_wall,
        ours_cpu_s: ours_cpu,
        jax,
        jax_vmap,
        loop_over_vmap_median,
        rows,
    })
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
    let scripts = [&r.jax, &r.jax_vmap]
        .into_iter()
        .flatten()
        .map(|s| format!("benches/peers/{}", s.script))
        .collect::<Vec<_>>()
        .join(" and ");
    let _ = writeln!(
        out,
        "Sweep {} ({} B × {} trials): the lab's `sweep` against the same protocol in JAX ({scripts}), whole processes, {} round(s) interleaved",
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
    for (name, side) in [("jax ", &r.jax), ("vmap", &r.jax_vmap)] {
        let Some(s) = side else { continue };
        let _ = writeln!(
            out,
            "  {name} wall s: {} (median {:.2}; in-script {:.2}, of which compiling {:.2}); CPU s: {}",
            f(&s.wall_s),
            median(&s.wall_s),
            median(&s.inner_wall_s),
            median(&s.compile_s),
            f(&s.cpu_s)
        );
    }
    for (name, side) in [("jax ", &r.jax), ("vmap", &r.jax_vmap)] {
        let Some(s) = side else { continue };
        let _ = writeln!(
            out,
            "  {name} / lab: {:.2}x wall (median of rounds), {:.2}x (best against best), {:.2}x CPU (median)",
            s.speedup_median, s.speedup_best, s.cpu_ratio_median
        );
    }
    if let Some(x) = r.loop_over_vmap_median {
        let _ = writeln!(
            out,
            "  jax trial by trial / vmapped: {x:.2}x wall (median of rounds)"
        );
    }
    let mut head = format!("{:>8} {:>10}", "batch", "lab S(B)");
    if r.jax.is_some() {
        head += &format!(" {:>10}", "jax S(B)");
    }
    if r.jax_vmap.is_some() {
        head += &format!(" {:>10}", "vmap S(B)");
    }
    let _ = writeln!(out, "{head}");
    for row in &r.rows {
        let mut line = format!("{:>8} {:>10}", row.batch_size, steps(row.ours_steps));
        if r.jax.is_some() {
            line += &format!(" {:>10}", steps(row.jax_steps));
        }
        if r.jax_vmap.is_some() {
            line += &format!(" {:>10}", steps(row.jax_vmap_steps));
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_jax_sweep_scripts_output() {
        let text = "\
{\"trial_id\": 0, \"batch_size\": 16, \"outcome\": \"not_reached\", \"steps\": 3000}
{\"trial_id\": 1, \"batch_size\": 16, \"outcome\": \"reached\", \"steps\": 870}
{\"trial_id\": 2, \"batch_size\": 16, \"outcome\": \"reached\", \"steps\": 640}
{\"trial_id\": 3, \"batch_size\": 32, \"outcome\": \"diverged\", \"steps\": 20}
{\"trial_id\": 4, \"batch_size\": 64, \"outcome\": \"reached\", \"steps\": 410}
a warning from jax
jax sweep trials=5 wall_s=12.500 compile_s=3.250 groups=3 mode=vmap
";
        let o = parse_jax_output(text);
        assert_eq!(o.inner_wall_s, 12.5);
        assert_eq!(o.compile_s, 3.25);
        assert_eq!(o.steps, vec![(16, Some(640)), (32, None), (64, Some(410))]);
        // the trial-by-trial script's summary has no groups / mode
        let o = parse_jax_output("jax sweep trials=64 wall_s=9.8 compile_s=2.1\n");
        assert_eq!((o.inner_wall_s, o.compile_s), (9.8, 2.1));
        assert!(o.steps.is_empty());
        // nothing parsable: NaN times, no rows
        let o = parse_jax_output("Traceback (most recent call last):\n");
        assert!(o.inner_wall_s.is_nan() && o.compile_s.is_nan());
    }

    #[test]
    fn the_vmap_flags_pick_the_peers() {
        let p = JaxPeers::from_flags;
        assert_eq!(
            p(false, false),
            JaxPeers {
                looped: true,
                vmapped: false
            }
        );
        assert_eq!(
            p(true, false),
            JaxPeers {
                looped: true,
                vmapped: true
            }
        );
        for vmap in [false, true] {
            assert_eq!(
                p(vmap, true),
                JaxPeers {
                    looped: false,
                    vmapped: true
                }
            );
        }
    }
}
