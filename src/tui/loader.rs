//! Loading what the screens list: presets and run logs read into the app's types. These are the
//! only file reads the UI does; the runtime calls them off the async executor and hands the
//! results to `update` as messages.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::app::{CompareRun, PresetEntry, RunEntry, RunStatus};
use crate::cluster::slurm::{job_state, JobState};
use crate::cluster::sweepdir::{self, is_sweep_dir, read_sweep_dir};
use crate::core::record::LogLine;
use crate::runlog::{read_run_log, LogStatus, RunLog};

/// A run log without a summary written to within this window counts as "running".
pub const RUNNING_WINDOW: Duration = Duration::from_secs(120);

/// Every preset in `dir` (sorted by file name), then the user's presets in `user_dir`, and the
/// file:line errors of those that failed.
pub fn load_presets(dir: &Path, user_dir: Option<&Path>) -> (Vec<PresetEntry>, Vec<String>) {
    let mut ok = Vec::new();
    let mut errs = Vec::new();
    for l in crate::workload::presets::list_all_presets(dir, user_dir) {
        match l.preset {
            Ok(preset) => ok.push(PresetEntry {
                preset,
                path: Some(l.path),
                user: l.user,
            }),
            Err(e) => errs.push(e.to_string()),
        }
    }
    (ok, errs)
}

/// Status of a log for the Runs screen: an unfinished log is "running" when it is the sweep this
/// TUI runs or was written to recently, otherwise interrupted (killed) and resumable.
pub fn run_status(log: &RunLog, active: Option<&Path>, modified: Option<SystemTime>) -> RunStatus {
    match log.status() {
        LogStatus::Complete => RunStatus::Complete,
        LogStatus::Interrupted => RunStatus::Interrupted,
        LogStatus::Unfinished => {
            let recent = modified
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age < RUNNING_WINDOW);
            if active == Some(log.path.as_path()) || recent {
                RunStatus::Running
            } else {
                RunStatus::Interrupted
            }
        }
    }
}

pub fn run_entry(log: &RunLog, active: Option<&Path>, modified: Option<SystemTime>) -> RunEntry {
    let a = log.analysis();
    let h = &log.header;
    let duration_s = match &log.summary {
        Some(sum) if sum.wall_s > 0.0 => Some(sum.wall_s),
        _ => {
            let total: f64 = log.trials.iter().map(|t| t.outcome.wall_s.max(0.0)).sum();
            (total > 0.0).then(|| total / h.concurrency.max(1) as f64)
        }
    };
    RunEntry {
        path: log.path.clone(),
        name: run_name(&log.path),
        preset: h.preset.name.clone(),
        optimizer: h.preset.workload.optimizer.name().to_string(),
        started: h.started.clone(),
        status: run_status(log, active, modified),
        done: log.trials.len(),
        // every stage's plan (the search's, the confirm stage's, the repeats')
        planned: log.stage_counts().planned().max(log.trials.len()),
        s_min: a.fit.as_ref().map(|f| f.s_min),
        b_crit: a.fit.as_ref().map(|f| f.b_crit),
        s_min_ci: a.fit.as_ref().and_then(|f| f.s_min_ci),
        b_crit_ci: a.fit.as_ref().and_then(|f| f.b_crit_ci),
        error: None,
        precision: h.preset.workload.precision.name().to_string(),
        devices: h.devices.label(),
        b_range: h
            .batch_sizes
            .iter()
            .min()
            .zip(h.batch_sizes.iter().max())
            .map(|(a, b)| (*a, *b)),
        duration_s,
        job: None,
    }
}

/// The state of a sweep directory's (latest) Slurm job; `None` when it has none or Slurm is not
/// there.
pub fn dir_job_state(log: &RunLog) -> Option<JobState> {
    let info = sweepdir::read_cluster_info(&log.path).ok()?;
    let job = info.jobs.last()?;
    job_state(job, log.status() == LogStatus::Complete)
}

/// The Runs entry of a sweep directory: its shards merged into one run, with its job's state
/// ("—" without Slurm). Running while its job is queued or running, or a shard was written to
/// recently.
pub fn dir_entry(log: &RunLog, job: Option<JobState>) -> RunEntry {
    let modified = sweepdir::shard_paths(&log.path)
        .ok()
        .into_iter()
        .flat_map(|m| m.into_values())
        .filter_map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .max();
    let mut e = run_entry(log, None, modified);
    if matches!(job, Some(JobState::Pending | JobState::Running)) {
        e.status = RunStatus::Running;
    }
    e.job = Some(job.map_or("—", JobState::label).to_string());
    e
}

/// A run's name: its log's file name without `.jsonl` (a sweep directory's: its name).
pub fn run_name(path: &Path) -> String {
    if path.is_dir() {
        return path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every `*.jsonl` and every sweep directory (Slurm shards, listed as one run) in the runs
/// directory, newest first (by name, which starts with the start time). Unreadable logs are
/// listed with their error.
pub fn scan_runs(dir: &Path, active: Option<&Path>) -> Vec<RunEntry> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| (p.is_file() && p.extension().is_some_and(|x| x == "jsonl")) || is_sweep_dir(p))
        .collect();
    paths.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
    paths
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p).ok();
            let modified = meta.as_ref().and_then(|m| m.modified().ok());
            if p.is_dir() {
                return match read_sweep_dir(&p) {
                    Ok(log) => dir_entry(&log, dir_job_state(&log)),
                    Err(e) => RunEntry::unreadable(p.clone(), run_name(&p), format!("{e:#}")),
                };
            }
            let key = (p.clone(), meta.as_ref().map_or(0, |m| m.len()), modified);
            if let Some(e) = complete_cache().get(&key) {
                return e.clone();
            }
            match read_run_log(&p) {
                Ok(log) => {
                    let e = run_entry(&log, active, modified);
                    if e.status == RunStatus::Complete {
                        complete_cache().insert(key, e.clone());
                    }
                    e
                }
                Err(e) => RunEntry::unreadable(p.clone(), run_name(&p), e.to_string()),
            }
        })
        .collect()
}

/// The entries of complete run logs by (path, length, modification time). Every sweep's end (and
/// `R`) rescans the runs directory; a complete log's entry depends on nothing but the file, so a
/// rescan reads and analyses only new or changed logs (a 6,000-trial log: ~0.5 CPU-s, measured
/// with `perf` in `benches/tui_cost.py`). A resumed or extended log changes length and is read again.
type CacheKey = (PathBuf, u64, Option<SystemTime>);

fn complete_cache() -> std::sync::MutexGuard<'static, std::collections::HashMap<CacheKey, RunEntry>>
{
    static CACHE: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<CacheKey, RunEntry>>,
    > = std::sync::OnceLock::new();
    CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The sweeps to overlay in Compare. Labels are the preset names, with the start time added
/// where two runs share a preset.
pub fn load_compare(paths: &[PathBuf]) -> (Vec<CompareRun>, Vec<String>) {
    let mut runs = Vec::new();
    let mut errs = Vec::new();
    let mut warnings = Vec::new();
    for p in paths {
        match read_run_log(p) {
            Ok(log) => {
                // the validator's warnings, shown (after any error) as `compare` prints them
                warnings.extend(log.warnings.iter().map(|w| format!("warning: {w}")));
                runs.push(compare_run(&log));
            }
            Err(e) => errs.push(e.to_string()),
        }
    }
    let names: Vec<String> = runs.iter().map(|r: &CompareRun| r.label.clone()).collect();
    for r in runs.iter_mut() {
        if names.iter().filter(|n| **n == r.label).count() > 1 {
            let stem = r
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let when = stem.get(5..16).unwrap_or("").to_string();
            r.label = format!("{} {when}", r.label);
        }
    }
    errs.extend(warnings);
    (runs, errs)
}

pub fn compare_run(log: &RunLog) -> CompareRun {
    CompareRun::new(
        log.header.preset.name.clone(),
        log.path.clone(),
        &log.header.preset,
        log.trials.clone(),
    )
}

/// Follows a sweep directory live: every shard, including shards that appear later, merged as
/// `report DIR` merges them. Each poll re-reads the directory (its shards are small) and returns
/// the trials not returned before, then — once the merged log has one — its summary.
pub struct DirTail {
    dir: PathBuf,
    sent: std::collections::HashSet<u64>,
}

impl DirTail {
    /// Follows `log` (a merged sweep directory) from the trials it already holds.
    pub fn new(log: &RunLog) -> Self {
        DirTail {
            dir: log.path.clone(),
            sent: log.trials.iter().map(|t| t.trial_id).collect(),
        }
    }

    /// The new trial lines (plan order), and the summary line once the sweep has ended.
    pub fn poll(&mut self) -> anyhow::Result<Vec<LogLine>> {
        let log = read_sweep_dir(&self.dir)?;
        let mut out = Vec::new();
        for t in log.trials {
            if self.sent.insert(t.trial_id) {
                out.push(LogLine::Trial(Box::new(t)));
            }
        }
        if let Some(s) = log.summary {
            out.push(LogLine::Summary(Box::new(s)));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rescan_reuses_complete_logs_and_rereads_changed_ones() {
        let dir = tempfile::tempdir().unwrap();
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/nqm-sgd.jsonl");
        let log = dir.path().join("a.jsonl");
        std::fs::copy(&fixture, &log).unwrap();
        let first = scan_runs(dir.path(), None);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].status, RunStatus::Complete, "{:?}", first[0]);
        assert_eq!(scan_runs(dir.path(), None), first);
        // the same file changed (here: cut to its header and first lines) is read again
        let text = std::fs::read_to_string(&fixture).unwrap();
        let head: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
        std::fs::write(&log, head).unwrap();
        let again = scan_runs(dir.path(), None);
        assert_eq!(again.len(), 1);
        assert_ne!(again[0].status, RunStatus::Complete, "{:?}", again[0]);
        assert!(again[0].done < first[0].done);
    }
}
