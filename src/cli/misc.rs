//! The TUI launcher (with its no-terminal fallbacks), `presets`, `bench` and `screenshot`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use scaling_lab::core::runner::RunnerFactory;
use scaling_lab::train::{self, TrainOptions};
use scaling_lab::workload::presets::{list_all_presets, presets_dir};

use super::args::{BenchArgs, DataCmd, ScreenshotArgs};
use super::{check_regular_file, out, outln, usage, CmdResult};

/// The runner factory of the TUI's sweeps.
pub fn factory() -> RunnerFactory {
    Arc::new(|w| scaling_lab::sweep::runner_for(w, &sweep_options()))
}

/// The trainer's options for a sweep of this binary: GPU trials are probed for memory in a child
/// process first (`train::fit_probe`).
pub fn sweep_options() -> TrainOptions {
    TrainOptions {
        fit_probe: true,
        ..Default::default()
    }
}

/// Why the full-screen UI cannot be drawn here (None: it can).
fn no_terminal_reason() -> Option<&'static str> {
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb" || t.is_empty());
    if dumb {
        Some("TERM=dumb")
    } else if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        Some("no terminal")
    } else {
        None
    }
}

/// No subcommand: the TUI, or (without a usable terminal) one clear message.
pub fn cmd_tui(preset: Option<String>, open: Option<PathBuf>, runs_dir: PathBuf) -> CmdResult {
    // The preset Setup selects: one that does not load is an error naming it (as `sweep`'s),
    // never Setup on another preset.
    let preset_file = match &preset {
        Some(name) => {
            let (path, p) = scaling_lab::workload::presets::find_preset_in(&presets_dir(), name)
                .map_err(|e| usage(format!("--preset: {e}")))?;
            let user = scaling_lab::workload::presets::user_presets_dir()
                .is_some_and(|d| path.starts_with(d));
            Some(scaling_lab::tui::app::PresetEntry {
                preset: p,
                path: Some(path),
                user,
            })
        }
        None => None,
    };
    if let Some(why) = no_terminal_reason() {
        if let Some(log) = &open {
            return Err(usage(format!(
                "--open: the TUI needs a terminal ({why}); print the log's report with `scaling-lab report {}`",
                log.display()
            )));
        }
        let p = preset.as_deref().unwrap_or("digits-mlp-momentum");
        return Err(usage(format!(
            "the TUI needs a terminal ({why}); run the sweep headless with `scaling-lab sweep {p}` (see --help)"
        )));
    }
    if let Some(log) = &open {
        if log.is_dir() {
            // a Slurm sweep directory: its shards are followed live, merged
            scaling_lab::cluster::open_log_or_dir(log).context("--open")?;
        } else {
            check_regular_file(log, "--open")?;
        }
    }
    let mut opts = scaling_lab::tui::TuiOptions::new(runs_dir, presets_dir());
    opts.user_presets_dir = scaling_lab::workload::presets::user_presets_dir();
    opts.initial_preset = preset_file.as_ref().map(|e| e.preset.name.clone());
    opts.preset_file = preset_file;
    opts.open_log = open;
    if let Ok(n) = train::runner::cuda::probe() {
        opts.gpu_labels = (0..n).map(|i| format!("cuda:{i}")).collect();
    }
    if let Ok(found) = train::wgpu::probe() {
        opts.wgpu_labels = found.iter().map(|a| a.label()).collect();
    }
    scaling_lab::tui::run(opts, factory())
}

/// `presets`: the bundled presets, then the user's (marked "(yours)").
pub fn cmd_presets() -> CmdResult {
    let user_dir = scaling_lab::workload::presets::user_presets_dir();
    for l in list_all_presets(&presets_dir(), user_dir.as_deref()) {
        let line = match (l.preset, l.user) {
            (Ok(p), false) => format!("{:<32} {}", p.name, p.description),
            (Ok(p), true) => format!("{:<32} (yours) {}", p.name, p.description),
            (Err(e), _) => format!("{:<32} INVALID: {e}", l.path.display()),
        };
        if !outln(&line) {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the all-reduce table to `<runs-dir>/allreduce.json` (temp file + rename, so a reader
/// never sees half a table).
fn save_link_table(
    runs_dir: &std::path::Path,
    b: &scaling_lab::train::allreduce_bench::AllreduceBench,
) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    std::fs::create_dir_all(runs_dir)
        .with_context(|| format!("{}: cannot create the runs directory", runs_dir.display()))?;
    let path = runs_dir.join(scaling_lab::runlog::link_table::LINK_TABLE_FILE);
    let tmp = runs_dir.join(format!(".allreduce.json.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_string_pretty(b)?)
        .with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(path)
}

pub fn cmd_bench(a: BenchArgs, runs_dir: PathBuf) -> CmdResult {
    if a.allreduce {
        let mut opts = scaling_lab::train::allreduce_bench::AllreduceBenchOptions::default();
        if !a.worlds.is_empty() {
            opts.worlds = a.worlds.iter().map(|&g| g as usize).collect();
        }
        if let Some(max) = a.max_message {
            opts.sizes.retain(|&b| b as u64 <= max);
        }
        let json = a.bench.json;
        let b = scaling_lab::train::allreduce_bench::allreduce_bench(&opts, &mut |r| {
            if !json {
                eprintln!(
                    "  G={} {:>10} B: {:>10.1} µs",
                    r.world,
                    r.bytes,
                    r.time_s * 1e6
                );
            }
        })?;
        // Saved for the projection: `report`/`sweep` fit their measured link to this table.
        let saved = save_link_table(&runs_dir, &b)?;
        if json {
            outln(&serde_json::to_string_pretty(&b)?);
        } else {
            out(&b.render());
            if let Some(link) = scaling_lab::runlog::link_table::read_link_table(&saved)
                .ok()
                .and_then(|t| t.link())
            {
                outln(&format!(
                    "ring model over all cells: 2(G−1)·{:.1} µs + 2(G−1)/G · bytes / {:.3} GB/s",
                    link.latency * 1e6,
                    link.bandwidth / 1e9
                ));
            }
            outln(&format!(
                "saved {} (the projection of `report`/`sweep` logs in that directory fits its measured link to it)",
                saved.display()
            ));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if a.sweep_peer {
        let r = super::sweep_peer::sweep_peer(&super::sweep_peer::SweepPeerArgs {
            preset: a.sweep_preset,
            trials: a.sweep_trials,
            batch_sizes: a.sweep_batch_sizes,
            rounds: a.bench.rounds,
            peers: super::sweep_peer::JaxPeers::from_flags(a.vmap, a.vmap_only),
        })?;
        if a.bench.json {
            outln(&serde_json::to_string_pretty(&r)?);
        } else {
            out(&super::sweep_peer::render(&r));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let r = scaling_lab::train::bench::run_bench_with(&a.bench, &mut bench_progress);
    out(&scaling_lab::report::bench::render(&r, a.bench.json)?);
    Ok(ExitCode::SUCCESS)
}

pub fn cmd_data(c: DataCmd) -> CmdResult {
    match c {
        DataCmd::Install { dir } => {
            let r = scaling_lab::data::install_data(&dir)?;
            for p in &r.installed {
                outln(&format!("installed {}", p.display()));
            }
            for p in &r.already {
                outln(&format!("already there {}", p.display()));
            }
            for m in &r.missing {
                eprintln!("warning: {m}: not found in this build's data search path");
            }
            outln(&format!(
                "use it with: export SCALING_LAB_DATA_DIR={}",
                dir.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
        DataCmd::Where => {
            for p in scaling_lab::data::data_search_path() {
                outln(&p.display().to_string());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub fn cmd_screenshot(a: ScreenshotArgs, runs_dir: PathBuf) -> CmdResult {
    let mut files = scaling_lab::tui::render_screenshots(&a.out, &runs_dir)?;
    files.push(scaling_lab::tui::render_meta_screenshot(&a.out, &runs_dir)?);
    for f in files {
        outln(&format!("wrote {}", f.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench`'s progress on stderr (stdout keeps the tables or the JSON): the plan and its
/// predicted duration first, then one line per measurement with what is left.
fn bench_progress(e: scaling_lab::train::bench::BenchEvent) {
    use scaling_lab::sweep::estimate::human_s;
    use scaling_lab::train::bench::BenchEvent;
    match e {
        BenchEvent::Plan {
            measurements,
            estimate_s,
            sgemm_gflops,
        } => {
            let range = if human_s(estimate_s[0]) == human_s(estimate_s[1]) {
                format!("about {}", human_s(estimate_s[0]))
            } else {
                format!(
                    "about {} to {}",
                    human_s(estimate_s[0]),
                    human_s(estimate_s[1])
                )
            };
            let machine = sgemm_gflops
                .map(|g| format!(" (this machine's sgemm: {g:.0} GFLOP/s)"))
                .unwrap_or_default();
            eprintln!(
                "bench: {} measurements, {range}{machine}; `--no-presets` skips the presets, \
                 `--mlp-only` all but the MLP",
                measurements.len()
            );
            for (i, m) in measurements.iter().enumerate() {
                eprintln!("  {:>2}. {m}", i + 1);
            }
        }
        BenchEvent::Done {
            index,
            of,
            name,
            result,
            seconds,
            left_s,
        } => {
            let left = if index < of {
                format!("; about {} left", human_s(left_s))
            } else {
                String::new()
            };
            eprintln!("[bench {index}/{of}] {name}: {result} ({seconds:.1} s{left})");
        }
    }
}
