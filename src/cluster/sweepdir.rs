//! A sweep directory: one sweep spread over Slurm array tasks (or nodes).
//!
//! ```text
//! runs/<time>-<preset>/
//!   header.json        the run-log header, written once at submission (the plan is re-derived from it)
//!   cluster.json       array size N, nodes, submitted job ids
//!   sbatch.sh          the submitted script
//!   shard-<i>.jsonl    array task i's run log: the same header, its trials, its summary
//!   slurm-<job>_<i>.out
//! ```
//! Every shard log follows the local durability rules (each trial fsynced before the next starts;
//! a torn last line is ignored with a warning), so a failed or pre-empted task loses at most its
//! unfinished trial. Reading the directory merges the shards into one `RunLog`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::Shard;
use crate::core::record::{Header, LogLine, Summary};
use crate::runlog::reader::{read_run_log, RunLog};
use crate::sweep::SweepConfig;

pub const HEADER_FILE: &str = crate::runlog::reader::SWEEP_DIR_HEADER;
pub const CLUSTER_FILE: &str = "cluster.json";
pub const SCRIPT_FILE: &str = "sbatch.sh";

/// What was submitted (cluster.json).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ClusterInfo {
    /// Array tasks: task i runs the plan trials ≡ i (mod array).
    pub array: usize,
    /// Nodes per task (1 = plain array task).
    #[serde(default = "one")]
    pub nodes: usize,
    /// Job ids of every submission (first, then each resume), newest last.
    #[serde(default)]
    pub jobs: Vec<String>,
}

fn one() -> usize {
    1
}

pub fn shard_file_name(i: usize) -> String {
    crate::runlog::reader::shard_file_name(i)
}

/// Is this path a sweep directory (has header.json)?
pub fn is_sweep_dir(p: &Path) -> bool {
    p.is_dir() && p.join(HEADER_FILE).is_file()
}

pub fn read_header(dir: &Path) -> anyhow::Result<Header> {
    let p = dir.join(HEADER_FILE);
    let text =
        std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))?;
    match serde_json::from_str::<LogLine>(&text)
        .with_context(|| format!("{}: not a run-log header", p.display()))?
    {
        LogLine::Header(h) => {
            anyhow::ensure!(
                crate::core::record::reads_schema(h.schema as u64),
                "{}: unknown run-log schema version {} (this build reads versions 1 to {})",
                p.display(),
                h.schema,
                crate::core::record::SCHEMA_VERSION
            );
            Ok(*h)
        }
        _ => bail!("{}: not a run-log header", p.display()),
    }
}

pub fn read_cluster_info(dir: &Path) -> anyhow::Result<ClusterInfo> {
    let p = dir.join(CLUSTER_FILE);
    let text =
        std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: malformed", p.display()))
}

/// Writes a small file atomically (temp file + rename) and durably.
pub fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

pub fn write_cluster_info(dir: &Path, info: &ClusterInfo) -> anyhow::Result<()> {
    write_atomic(
        &dir.join(CLUSTER_FILE),
        &(serde_json::to_string_pretty(info)? + "\n"),
    )
}

/// Creates a new sweep directory under `runs_dir` for `header` (never reuses one).
pub fn create_sweep_dir(runs_dir: &Path, header: &Header) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(runs_dir)
        .with_context(|| format!("cannot create runs directory {}", runs_dir.display()))?;
    let base = crate::runlog::writer::log_file_name(&header.preset.name, chrono::Local::now());
    let stem = base.trim_end_matches(".jsonl").to_string();
    for n in 1..1000 {
        let name = if n == 1 {
            stem.clone()
        } else {
            format!("{stem}-{n}")
        };
        let dir = runs_dir.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                let line = serde_json::to_string(&LogLine::Header(Box::new(header.clone())))?;
                write_atomic(&dir.join(HEADER_FILE), &(line + "\n"))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create {}", dir.display()));
            }
        }
    }
    bail!("no free sweep directory name in {}", runs_dir.display())
}

/// The shard logs of a sweep directory, by index.
pub fn shard_paths(dir: &Path) -> anyhow::Result<BTreeMap<usize, PathBuf>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let e = e?;
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(i) = name
            .strip_prefix("shard-")
            .and_then(|s| s.strip_suffix(".jsonl"))
            .and_then(|s| s.parse::<usize>().ok())
        {
            out.insert(i, e.path());
        }
    }
    Ok(out)
}

/// Reads a sweep directory and merges its shards into one run log: the header of header.json,
/// every shard's trials (ordered by plan index; a trial logged twice is kept once), warnings
/// prefixed with the shard's file name. The summary is recomputed: complete when every planned
/// trial is logged; absent while a shard has not written its own summary (running or killed).
pub fn read_sweep_dir(dir: &Path) -> anyhow::Result<RunLog> {
    let header = read_header(dir)?;
    let mut trials = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut off_plan = None;
    let mut all_shards_ended = true;
    let mut wall_s: f64 = 0.0;
    let mut finished: Option<String> = None;
    for (i, path) in shard_paths(dir)? {
        let log = read_run_log(&path)?;
        let name = shard_file_name(i);
        anyhow::ensure!(
            log.header.seed == header.seed
                && log.header.batch_sizes == header.batch_sizes
                && log.header.trials_per_batch == header.trials_per_batch
                && log.header.preset.name == header.preset.name,
            "{}: its header does not match {} (seed, batch sizes, trials or preset differ)",
            path.display(),
            HEADER_FILE
        );
        warnings.extend(log.warnings.iter().map(|w| format!("{name}: {w}")));
        if off_plan.is_none() {
            off_plan = log.off_plan.as_ref().map(|w| format!("{name}: {w}"));
        }
        match &log.summary {
            Some(s) => {
                wall_s = wall_s.max(s.wall_s);
                if finished.as_ref().is_none_or(|f| s.finished > *f) {
                    finished = Some(s.finished.clone());
                }
            }
            None => all_shards_ended = false,
        }
        for t in log.trials {
            trials.entry(t.trial_id).or_insert(t);
        }
    }
    let trials: Vec<_> = trials.into_values().collect();
    // the confirm stage over every shard's records (a shard's confirm trial may re-run a peer's
    // search trial): what readers warn about and resume refuses
    if let Some((id, m, n)) = crate::runlog::validate::confirm_problem(&header, &trials) {
        let mut w = format!("{}: trial {id}: {m}", dir.display());
        if n > 1 {
            w.push_str(&format!(" (+{} more trial lines like it)", n - 1));
        }
        warnings.push(w.clone());
        off_plan.get_or_insert(w);
    }
    let planned = header.batch_sizes.len() * header.trials_per_batch;
    let done: HashSet<u64> = trials.iter().map(|t| t.trial_id).collect();
    let complete = (0..planned as u64).all(|id| done.contains(&id));
    let mut log = RunLog {
        path: dir.to_path_buf(),
        header,
        trials,
        summary: None,
        warnings,
        off_plan,
        valid_len: 0,
        given: None,
        calibrated: None,
    };
    if complete || all_shards_ended && !done.is_empty() {
        log.summary = Some(Summary {
            finished: finished.unwrap_or_else(|| chrono::Local::now().to_rfc3339()),
            trials_done: done.len(),
            trials_planned: planned,
            complete,
            wall_s,
            analysis: serde_json::to_value(log.analysis()).unwrap_or_default(),
        });
    }
    Ok(log)
}

/// A run log file or a sweep directory (merged): what report, compare, export and the TUI open.
pub fn open_log_or_dir(path: &Path) -> anyhow::Result<RunLog> {
    if path.is_dir() {
        anyhow::ensure!(
            is_sweep_dir(path),
            "{} is a directory without {HEADER_FILE}: not a sweep directory",
            path.display()
        );
        read_sweep_dir(path)
    } else {
        Ok(read_run_log(path)?)
    }
}

/// Plan indices no shard has logged yet.
pub fn missing_trials(dir: &Path) -> anyhow::Result<Vec<u64>> {
    let log = read_sweep_dir(dir)?;
    let done = log.done_ids();
    let mut missing: Vec<u64> = (0..log.planned_trials() as u64)
        .filter(|id| !done.contains(id))
        .collect();
    // the confirm stage: the confirm trials the logged search calls for
    let cfg = SweepConfig::from_header(&log.header, dir.to_path_buf());
    missing.extend(
        crate::sweep::confirm_stage_ids(&cfg, &log.trials)
            .into_iter()
            .filter(|id| !done.contains(id)),
    );
    Ok(missing)
}

/// The sweep configuration recorded in a sweep directory.
pub fn config_of(dir: &Path) -> anyhow::Result<SweepConfig> {
    let header = read_header(dir)?;
    Ok(SweepConfig::from_header(&header, dir.to_path_buf()))
}

/// The shard's own run log in the directory, created with the directory's header if missing.
/// Returns its path (then resumed by the scheduler like any log).
pub fn shard_log(dir: &Path, shard: Shard) -> anyhow::Result<PathBuf> {
    let header = read_header(dir)?;
    let path = dir.join(shard_file_name(shard.index));
    if !path.exists() {
        // create_at truncates: only ever called for a file that does not exist yet
        drop(crate::runlog::writer::RunLogWriter::create_at(
            &path, &header,
        )?);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_parsing_and_ownership() {
        let s: Shard = "1/4".parse().unwrap();
        assert_eq!(s, Shard { index: 1, count: 4 });
        assert!(s.owns(1) && s.owns(5) && !s.owns(4));
        assert!("4/4".parse::<Shard>().is_err());
        assert!("x/4".parse::<Shard>().is_err());
        assert!("1".parse::<Shard>().is_err());
        // every trial is owned by exactly one shard
        for n in 1..6usize {
            for id in 0..40u64 {
                let owners = (0..n)
                    .filter(|&i| Shard { index: i, count: n }.owns(id))
                    .count();
                assert_eq!(owners, 1);
            }
        }
    }
}
