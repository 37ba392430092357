//! Checks the subcommands share before anything runs: every error names what is
//! wrong and where — the flag when a flag asked for it, `file:line:col` in the preset when the
//! preset did, the data file when the data is at fault (a runtime error, exit 1, not a usage
//! error of a preset that is fine) — and a flag that would not take effect is an error.

use std::path::Path;

use scaling_lab::data::DataError;
use scaling_lab::sweep::overrides::Problem;
use scaling_lab::sweep::{self, SweepConfig};
use scaling_lab::workload::applied::{unused, Setting};
use scaling_lab::workload::check::KeySeg;
use scaling_lab::workload::load::{key_path, preset_error_at, sets_key};
use scaling_lab::workload::spec::Workload;

use super::usage;

/// Loads the workload's dataset (cached for what follows). A missing, damaged or unreadable data
/// file is a runtime error naming the file; settings the data cannot satisfy (`max_bytes` too
/// small for `seq_len`, …) are the preset's usage error at the key.
pub fn preflight_data(w: &Workload, preset_path: &Path) -> anyhow::Result<()> {
    let Some(d) = &w.dataset else { return Ok(()) };
    match scaling_lab::data::load_cached(d) {
        Ok(_) => Ok(()),
        Err(DataError::Spec(message)) => {
            let key = [
                "max_bytes",
                "seq_len",
                "max_val",
                "val_fraction",
                "downsample",
            ]
            .into_iter()
            .find(|k| message.contains(k));
            let mut keys = key_path(&["workload", "dataset"]);
            if let Some(k) = key {
                keys.push(KeySeg::Key(k));
            }
            Err(usage(
                preset_error_at(preset_path, &keys, format!("dataset: {message}")).to_string(),
            ))
        }
        // a setting the data contradicts (an `image_size` no image has): the preset's, at its key
        Err(DataError::Setting { key, message }) => Err(usage(
            preset_error_at(
                preset_path,
                &key_path(&["workload", "dataset", key]),
                message,
            )
            .to_string(),
        )),
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

/// The preset key a sweep setting comes from when no flag gave it.
fn preset_key(field: &str) -> Option<Vec<KeySeg>> {
    let keys: &[&'static str] = match field {
        "batch_sizes" | "shards" => &["sweep", "batch_sizes"],
        "trials" => &["sweep", "trials_per_batch"],
        "workers" => &["sweep", "workers"],
        "concurrency" => &["sweep", "concurrency"],
        "target" => &["workload", "target", "value"],
        "steps" => &["workload", "step_budget"],
        "eval_every" => &["workload", "eval_every"],
        "precision" => &["workload", "precision"],
        "confirm" => &["sweep", "confirm"],
        _ => return None,
    };
    Some(key_path(keys))
}

/// Like `check_problems`, but a blocking problem with a setting that no flag gave is the
/// preset's: `file:line:col: message` at its key, not the name of a flag the user never typed.
pub fn check_blamed(
    problems: &[Problem],
    given: &dyn Fn(&str) -> bool,
    preset_path: &Path,
    batch_sizes: &[usize],
) -> anyhow::Result<()> {
    for p in problems.iter().filter(|p| !p.blocking) {
        // a warning about a setting no flag gave is the preset's, at its key — where the file
        // sets it (a default nobody chose: the confirm stage's 3x5 where a preset runs 1 trial)
        match preset_key(p.field).filter(|_| !given(p.field)) {
            Some(keys) => {
                let dotted: Vec<&str> = keys
                    .iter()
                    .filter_map(|k| match k {
                        KeySeg::Key(k) => Some(*k),
                        KeySeg::Index(_) => None,
                    })
                    .collect();
                if sets_key(preset_path, &dotted) {
                    eprintln!(
                        "warning: {}",
                        preset_error_at(preset_path, &keys, p.message.clone())
                    );
                }
            }
            None => eprintln!("warning: {p}"),
        }
    }
    let Some(p) = problems.iter().find(|p| p.blocking) else {
        return Ok(());
    };
    if p.field == "shards" && !given("batch_sizes") && given("workers") {
        // the preset's batch sizes do not split over the workers the flag asked for
        return Err(usage(format!("--workers: {}", p.message)));
    }
    if given(p.field) {
        return Err(usage(p.to_string()));
    }
    match preset_key(p.field) {
        Some(mut keys) => {
            // the element of batch_sizes the message is about, when it names one
            if let Some(i) = batch_sizes
                .iter()
                .position(|b| p.message.contains(&format!("batch size {b} ")))
                .filter(|_| matches!(p.field, "batch_sizes" | "shards"))
            {
                keys.push(KeySeg::Index(i));
            }
            Err(usage(
                preset_error_at(preset_path, &keys, p.message.clone()).to_string(),
            ))
        }
        None => Err(usage(p.to_string())),
    }
}

/// A flag given for a setting the workload does not use is an error naming it:
/// (given, flag, setting).
pub fn refuse_unused_flags(w: &Workload, flags: &[(bool, &str, Setting)]) -> anyhow::Result<()> {
    for &(given, flag, setting) in flags {
        if given {
            if let Some(why) = unused(w, setting) {
                return Err(usage(format!("{flag}: has no effect here: {why}")));
            }
        }
    }
    Ok(())
}

/// The warning for a CPU sweep one of whose trials may take 10 min or more, or the whole sweep
/// an hour (`sweep::layout::WallEstimate::is_long`), whatever its preset; None for shorter
/// sweeps, the NQM,
/// CUDA, GPU-scale presets (they have their own warning) and when no step could be timed. The
/// bound is `--dry-run`'s, from the workload's calibration (cached in the runs directory; the
/// one GPU-scale presets use); without a cached one, 2 training steps at the smallest B first
/// bound it from above (step time ∝ B), and only a sweep that may be long is calibrated (a few
/// steps, announced on stderr, then cached).
pub fn long_sweep_warning(
    cfg: &SweepConfig,
    runner: &dyn scaling_lab::core::runner::TrialRunner,
) -> Option<String> {
    let w = &cfg.preset.workload;
    if !cfg.devices.is_cpu() || w.closed_form() || cfg.preset.sweep.gpu_scale {
        return None;
    }
    let concurrency = |cal: &sweep::layout::Calibration| {
        if cfg.preset.sweep.auto_concurrency {
            cal.concurrency
        } else {
            cfg.concurrency
        }
    };
    let cal = match sweep::layout::cached_calibration(cfg) {
        Some(c) => c,
        None => {
            let quick =
                sweep::layout::quick_calibration(runner, w, cfg.precision, &cfg.batch_sizes)
                    .ok()?;
            let upper = sweep::layout::estimate_wall_time(cfg, &quick, 1, 0);
            if !upper.is_long() {
                return None;
            }
            eprintln!(
                "{}: estimating the sweep's wall time (a few training steps per batch size, then cached)…",
                cfg.preset.name
            );
            sweep::layout::calibration(cfg, runner).ok()?.0
        }
    };
    let est = sweep::layout::estimate_wall_time(cfg, &cal, concurrency(&cal), cal.n_val);
    sweep::layout::long_sweep_warning(cfg, &est)
}
