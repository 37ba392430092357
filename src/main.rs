//! scaling-lab: the TUI (no arguments) and the headless CLI, two thin views over the same engine.
//! This file is clap and dispatch only; the subcommands live in `cli/`.

mod cli;

/// mimalloc instead of the system allocator: Burn allocates and frees a few small buffers per tensor
/// op, and glibc's malloc/free/consolidate took ~17% of a small-model sweep's time (perf).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    fn mi_option_get(option: std::os::raw::c_int) -> std::os::raw::c_long;
    fn mi_option_set(option: std::os::raw::c_int, value: std::os::raw::c_long);
}

/// mimalloc 3's `mi_option_purge_delay` (libmimalloc-sys 0.1.49, v3 `mimalloc.h`, whose
/// `options.c` gives it the default 1000).
const MI_OPTION_PURGE_DELAY: std::os::raw::c_int = 15;

/// Freed memory stays with the process instead of being returned to the OS a second later
/// (mimalloc 3's default; the process's memory then stays at its peak, which a training's working
/// set bounds): the gemm crate allocates its packing workspace on every call, and purged pages were
/// re-faulted from the kernel again and again (transparent huge pages zeroed: 5–15 % of a small
/// CNN's step in perf; 300 steps took 798 page faults with the default, 369 — all of them the first
/// steps' — never purging). Only when the option reads one of its documented defaults (10 ms in
/// mimalloc 2, 1000 ms in 3), so another mimalloc's option numbering is never touched.
fn keep_freed_memory() {
    // SAFETY: plain option reads/writes of the linked mimalloc; no allocation is involved.
    unsafe {
        if matches!(mi_option_get(MI_OPTION_PURGE_DELAY), 10 | 1000) {
            mi_option_set(MI_OPTION_PURGE_DELAY, -1);
        }
    }
}

/// No transparent huge pages for this process (unless `MIMALLOC_ALLOW_THP` says otherwise):
/// mimalloc asks for them on its arenas, and a sweep's threads (one per fused group, every group
/// its own thread heap) keep touching fresh 2 MiB regions that the kernel zeroes on the first
/// touch: a digits sweep spent 10 % of its CPU time in `clear_page_erms`. Without them: −6 % CPU
/// time and −7 % wall time on a digits-adam sweep (paired, 2-core machine); the steady-state steps
/// of `bench` (MLP, CNNs, char-LSTM) did not move beyond their noise.
fn no_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) only sets a flag of this process's memory map.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use cli::args::{
    BenchArgs, CompareArgs, DataCmd, ExportArgs, ImportArgs, ReportArgs, ScreenshotArgs, SweepArgs,
    TrainArgs,
};

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

#[derive(Subcommand)]
enum Cmd {
    /// Train one trial at one batch size and report steps-to-target.
    Train(TrainArgs),
    /// Run a batch-size sweep (or resume one) and print the report.
    Sweep(Box<SweepArgs>),
    /// Compare two or more run logs side by side.
    Compare(CompareArgs),
    /// Export a run log as CSV / JSON / SVG chart.
    Export(ExportArgs),
    /// Import Google's released batch_science measurements (<dir>/<batch_size>/<trial>/...).
    ImportBatchScience(ImportArgs),
    /// Print a run log's report: steps-to-target per B, regimes, fit, noise scale, and the
    /// time-to-target projection over 1 … --max-devices devices.
    Report(ReportArgs),
    /// List the presets.
    Presets,
    /// Throughput benchmark: the MLP 784-256-10, paper-CNN, small-CNN (mnist-cnn-sgd) and
    /// char-LSTM (shakespeare-lstm-adam) training steps and every preset model.
    ///
    /// Against JAX (python from $SCALING_LAB_JAX_PYTHON, JAX_PLATFORMS=cpu; docs/speed.md):
    /// `bench --peer --rounds 5` prints every step beside its JAX peer (benches/peers/*_step.py,
    /// interleaved rounds, best of rounds, ratio > 1: we are faster);
    /// `bench --sweep-peer --vmap --rounds 5` runs the digits-MLP sweep (8 B × 8 trials) here, trial by
    /// trial in JAX and vmapped in JAX; `bench --sweep-peer --sweep-preset mnist-cnn-sgd
    /// --sweep-trials 6 --vmap` the small-CNN sweep (6 B × 6 trials).
    Bench(BenchArgs),
    /// Render the TUI screens to SVG (from the run logs in --runs-dir).
    Screenshot(ScreenshotArgs),
    /// The bundled data files: install a copy, or show where they are looked for.
    #[command(subcommand)]
    Data(DataCmd),
    /// The devices this build can train on: CPU, CUDA GPUs, wgpu adapters (--probe: precisions).
    Devices(cli::devices::DevicesArgs),
    /// Internal: whether a trial fits in device memory (a sweep's child process; JSON on stdin).
    #[command(name = "fit-probe", hide = true)]
    FitProbe,
}

fn main() -> ExitCode {
    keep_freed_memory();
    no_huge_pages();
    scaling_lab::core::float_mode::ensure_process();
    scaling_lab::train::wgpu::quiet_device_select_layer();
    let args = cli::hyphen_values(&Cli::command(), std::env::args_os().collect());
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return cli::clap_error(e),
    };
    let runs_dir = scaling_lab::runlog::writer::resolve_runs_dir(cli.runs_dir.clone());
    let result = match cli.command {
        None => cli::misc::cmd_tui(cli.preset, cli.open, runs_dir),
        Some(Cmd::Train(a)) => cli::train::cmd_train(a),
        Some(Cmd::Sweep(a)) => cli::sweep::cmd_sweep(*a, runs_dir),
        Some(Cmd::Compare(a)) => cli::report::cmd_compare(a),
        Some(Cmd::Export(a)) => cli::export::cmd_export(a),
        Some(Cmd::ImportBatchScience(a)) => cli::export::cmd_import(a, runs_dir),
        Some(Cmd::Report(a)) => cli::report::cmd_report(a),
        Some(Cmd::Presets) => cli::misc::cmd_presets(),
        Some(Cmd::Bench(a)) => cli::misc::cmd_bench(a, runs_dir),
        Some(Cmd::Screenshot(a)) => cli::misc::cmd_screenshot(a, runs_dir),
        Some(Cmd::Data(c)) => cli::misc::cmd_data(c),
        Some(Cmd::Devices(a)) => cli::devices::cmd_devices(a),
        // exits at once: the device threads of a probe that ran out of memory are not joined
        Some(Cmd::FitProbe) => std::process::exit(scaling_lab::train::fit_probe::child_main()),
    };
    cli::finish(result)
}
