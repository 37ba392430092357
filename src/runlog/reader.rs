//! Reads run logs back into the shared types.
//!
//! * A torn last line (no final newline and not valid JSON: the process died mid-write) is ignored
//!   with a warning; everything before it is kept.
//! * A header with a schema version this build does not read (`OLDEST_SCHEMA_VERSION` ..=
//!   `SCHEMA_VERSION`) is rejected with a clear message; older versions read as they were.
//! * Any other malformed line is an error naming the file and the 1-based line number.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::core::analysis::Analysis;
use crate::core::record::{Header, LogLine, Summary, TrialRecord, SCHEMA_VERSION};
use crate::core::trial::Outcome;

#[derive(Debug, thiserror::Error)]
pub enum RunLogError {
    #[error("{path}: cannot read run log: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: empty run log (no header line)")]
    Empty { path: PathBuf },
    #[error("{path}:{line}: the first line must be the run-log header, found {found}")]
    MissingHeader {
        path: PathBuf,
        line: usize,
        found: String,
    },
    #[error(
        "{path}:{line}: unknown run-log schema version {found} (this build reads versions 1 to {supported}); \
         it was written by a different scaling-lab version"
    )]
    UnknownSchema {
        path: PathBuf,
        line: usize,
        found: String,
        supported: u32,
    },
    #[error("{path}:{line}: {message}")]
    Malformed {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

impl RunLogError {
    /// 1-based line number of the problem, when it has one.
    pub fn line(&self) -> Option<usize> {
        match self {
            RunLogError::MissingHeader { line, .. }
            | RunLogError::UnknownSchema { line, .. }
            | RunLogError::Malformed { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// How a run log ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogStatus {
    /// Ends with a summary of a sweep that ran its whole plan.
    Complete,
    /// Ends with a summary of a sweep stopped early (ctrl-c, cancel): resumable.
    Interrupted,
    /// No summary after the last trial: still running, or killed (resumable).
    Unfinished,
}

impl LogStatus {
    pub fn label(self) -> &'static str {
        match self {
            LogStatus::Complete => "complete",
            LogStatus::Interrupted => "interrupted",
            LogStatus::Unfinished => "running or killed",
        }
    }
}

/// A run log read back.
#[derive(Clone, Debug, PartialEq)]
pub struct RunLog {
    pub path: PathBuf,
    pub header: Header,
    /// Finished trials in file order.
    pub trials: Vec<TrialRecord>,
    /// The summary, if it is the last line (a summary followed by more trials is a resumed sweep's
    /// stale one and is dropped).
    pub summary: Option<Summary>,
    pub warnings: Vec<String>,
    /// Byte length of the intact part of the file (without a torn last line).
    pub valid_len: u64,
}

impl RunLog {
    pub fn status(&self) -> LogStatus {
        match &self.summary {
            Some(s) if s.complete => LogStatus::Complete,
            Some(_) => LogStatus::Interrupted,
            None => LogStatus::Unfinished,
        }
    }

    /// Trials that resume must not run again: every recorded trial (a trial the user cancelled
    /// individually is recorded as cancelled and stays skipped).
    pub fn done_ids(&self) -> HashSet<u64> {
        self.trials.iter().map(|t| t.trial_id).collect()
    }

    pub fn planned_trials(&self) -> usize {
        self.header.batch_sizes.len() * self.header.trials_per_batch
    }

    /// Recomputes the analysis from the trial records (never trusts a stored summary).
    pub fn analysis(&self) -> Analysis {
        crate::analysis::analyze_preset(&self.header.preset, &self.trials)
    }

    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let mut c = (0, 0, 0, 0);
        for t in &self.trials {
            match t.outcome.outcome {
                Outcome::Reached { .. } => c.0 += 1,
                Outcome::NotReached { .. } => c.1 += 1,
                // out of memory counts with diverged here: a trial that failed at its B
                Outcome::Diverged { .. } | Outcome::Oom { .. } => c.2 += 1,
                Outcome::Cancelled { .. } => c.3 += 1,
            }
        }
        c
    }
}

/// Parses one complete line (already known not to be torn).
pub fn parse_line(path: &Path, line_no: usize, text: &str) -> Result<LogLine, RunLogError> {
    let malformed = |message: String| RunLogError::Malformed {
        path: path.to_path_buf(),
        line: line_no,
        message,
    };
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| malformed(format!("not valid JSON: {e}")))?;
    let kind = v
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or_else(|| {
            malformed("a run-log line needs a \"type\" (header, trial or summary)".into())
        })?
        .to_string();
    if kind == "header" {
        match v.get("schema") {
            Some(serde_json::Value::Number(n))
                if n.as_u64().is_some_and(crate::core::record::reads_schema) => {}
            Some(other) => {
                return Err(RunLogError::UnknownSchema {
                    path: path.to_path_buf(),
                    line: line_no,
                    found: other.to_string(),
                    supported: SCHEMA_VERSION,
                })
            }
            None => return Err(malformed("header has no \"schema\" version".into())),
        }
    } else if kind != "trial" && kind != "summary" {
        return Err(malformed(format!(
            "unknown line type {kind:?} (expected header, trial or summary)"
        )));
    }
    serde_json::from_value::<LogLine>(v).map_err(|e| {
        malformed(format!(
            "{kind} line does not match schema v{SCHEMA_VERSION}: {e}"
        ))
    })
}

/// Reads a whole run log.
pub fn read_run_log(path: &Path) -> Result<RunLog, RunLogError> {
    let io = |source| RunLogError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Only a regular file: a FIFO or device named as a log is an error, never a hang.
    let bytes = crate::data::files::read_regular(path).map_err(io)?;
    parse_run_log(path, &bytes)
}

/// Range checks on a header's numbers (they size allocations on resume and report): batch
/// sizes, trials per batch, workers, concurrency, and, for logs this tool wrote, the preset's
/// workload as a preset file is checked.
pub fn header_problem(h: &Header) -> Option<String> {
    use crate::workload::load as l;
    // replicas of one trial (one device each with `trials_per_device`)
    let workers = crate::core::devices::trial_devices(&h.devices, h.preset.sweep.trials_per_device)
        .replicas();
    if h.batch_sizes.is_empty() {
        return Some("header: batch_sizes is empty".into());
    }
    if h.batch_sizes.len() > l::MAX_BATCH_SIZES {
        return Some(format!(
            "header: {} batch sizes is absurd (at most {})",
            h.batch_sizes.len(),
            l::MAX_BATCH_SIZES
        ));
    }
    if h.trials_per_batch == 0 || h.trials_per_batch > l::MAX_TRIALS_PER_BATCH {
        return Some(format!(
            "header: trials_per_batch {} must be in 1..={}",
            h.trials_per_batch,
            l::MAX_TRIALS_PER_BATCH
        ));
    }
    if h.concurrency == 0 || h.concurrency > l::MAX_CONCURRENCY {
        return Some(format!(
            "header: concurrency {} must be in 1..={}",
            h.concurrency,
            l::MAX_CONCURRENCY
        ));
    }
    if workers == 0 || workers > l::MAX_WORKERS {
        return Some(format!(
            "header: {workers} workers/devices must be in 1..={}",
            l::MAX_WORKERS
        ));
    }
    let t = &h.preset.workload.target;
    if !t.value.is_finite() {
        return Some(format!("header: target value {} is not finite", t.value));
    }
    if h.import.is_some() {
        // Imported logs carry a placeholder model; their target is in the source's units.
        return None;
    }
    for &b in &h.batch_sizes {
        if let Some(m) = l::batch_size_problem(&h.preset.workload, b, workers) {
            return Some(format!("header: {m}"));
        }
    }
    if let Some(problem) = l::check(&h.preset).into_iter().next() {
        let key: Vec<String> = problem
            .key
            .iter()
            .map(|k| match k {
                l::KeySeg::Key(k) => k.to_string(),
                l::KeySeg::Index(i) => format!("[{i}]"),
            })
            .collect();
        return Some(format!(
            "header: preset {}: {}",
            key.join(".").replace(".[", "["),
            problem.message
        ));
    }
    None
}

/// A trial line that cannot belong to this log: a duplicate id (two writers, or an edit), or
/// (for logs this tool wrote) an id or batch size outside the header's plan.
fn trial_problem(
    h: &Header,
    t: &TrialRecord,
    seen: &std::collections::HashMap<u64, usize>,
) -> Option<String> {
    if let Some(first) = seen.get(&t.trial_id) {
        return Some(format!(
            "trial {} appears twice (first on line {first}): two processes wrote this log or it \
             was edited; keep one copy of the line",
            t.trial_id
        ));
    }
    if h.import.is_some() {
        return None;
    }
    let planned = (h.batch_sizes.len() as u64).saturating_mul(h.trials_per_batch as u64);
    // --until adds search trials past the plan (up to its budget, default 4× the plan);
    // --repeats logs re-runs of each B's best trial with ids from REPEAT_ID_BASE; --widen logs
    // re-centred search trials with ids from WIDEN_ID_BASE (crate::core::widen).
    let adaptive = h.adaptive.as_ref();
    // (--until numbers its k-th trial at batch index i as k·|B| + i: one B can take the whole
    // budget, so ids stay below |B| × budget.)
    let search_budget = match adaptive {
        Some(ad) if ad.until.is_some() => ad
            .max_trials
            .map(|m| m as u64)
            .unwrap_or(planned.saturating_mul(4))
            .max(planned)
            .saturating_mul(h.batch_sizes.len() as u64),
        _ => planned,
    };
    let base = crate::core::widen::REPEAT_ID_BASE;
    if (crate::core::widen::WIDEN_ID_BASE..base).contains(&t.trial_id) {
        let rounds = adaptive.and_then(|ad| ad.widen).unwrap_or(0) as i32;
        let w = crate::core::widen::WidenId::decode(t.trial_id);
        let ok = w.is_some_and(|w| {
            t.spec.repeat_of.is_none()
                && w.shift.rounds() <= rounds
                && h.batch_sizes.get(w.batch_index) == Some(&t.spec.batch_size)
        });
        if !ok {
            return Some(format!(
                "trial id {} is a re-centred (--widen) id that the header's plan does not allow \
                 (widen {rounds}, batch sizes {:?})",
                t.trial_id, h.batch_sizes
            ));
        }
    } else if t.trial_id >= base {
        let repeats = adaptive.map_or(1, |ad| ad.repeats) as u64;
        let allowed = (h.batch_sizes.len() as u64).saturating_mul(repeats.saturating_sub(1));
        if t.spec.repeat_of.is_none() || t.trial_id - base >= allowed {
            return Some(format!(
                "trial id {} is a repeat id, but the header plans {} repeat(s) per batch size",
                t.trial_id,
                repeats.saturating_sub(1)
            ));
        }
    } else if t.trial_id >= search_budget {
        return Some(format!(
            "trial id {} is outside the header's plan of {search_budget} trials",
            t.trial_id
        ));
    }
    if !h.batch_sizes.contains(&t.spec.batch_size) {
        return Some(format!(
            "trial {} has batch size {}, which is not among the header's batch sizes",
            t.trial_id, t.spec.batch_size
        ));
    }
    None
}

/// A stored outcome that its own evaluation curve contradicts (an edited log): the report uses
/// the stored outcome, so say so.
fn outcome_curve_mismatch(h: &Header, t: &TrialRecord) -> Option<String> {
    let evals = &t.outcome.evals;
    if evals.is_empty() || h.import.is_some() {
        return None;
    }
    let target = h.preset.workload.target.value;
    let first = evals
        .iter()
        .find(|e| e.metric.is_finite() && e.metric <= target)
        .map(|e| e.step);
    match (&t.outcome.outcome, first) {
        (Outcome::Reached { step }, Some(f)) if *step != f => Some(format!(
            "trial {}: stored outcome says the target was reached at step {step}, but its eval \
             curve first meets it at step {f} (edited log?)",
            t.trial_id
        )),
        (Outcome::Reached { step }, None) => Some(format!(
            "trial {}: stored outcome says the target was reached at step {step}, but no \
             evaluation in its curve meets the target {target} (edited log?)",
            t.trial_id
        )),
        (Outcome::NotReached { .. }, Some(f)) => Some(format!(
            "trial {}: stored outcome says not reached, but its eval curve meets the target at \
             step {f} (edited log?)",
            t.trial_id
        )),
        _ => None,
    }
}

/// Parses run-log bytes (the file's content); `path` is used in messages.
pub fn parse_run_log(path: &Path, bytes: &[u8]) -> Result<RunLog, RunLogError> {
    let mut header: Option<Header> = None;
    let mut seen: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut trials = Vec::new();
    let mut summary = None;
    let mut warnings = Vec::new();
    let mut valid_len = 0u64;
    let mut pos = 0usize;
    let mut line_no = 0usize;
    while pos < bytes.len() {
        line_no += 1;
        let (raw, next, complete) = match bytes[pos..].iter().position(|&c| c == b'\n') {
            Some(i) => (&bytes[pos..pos + i], pos + i + 1, true),
            None => (&bytes[pos..], bytes.len(), false),
        };
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t,
            Err(_) if !complete => {
                warnings.push(format!(
                    "{}:{line_no}: ignored a torn last line (the sweep was killed while writing it)",
                    path.display()
                ));
                break;
            }
            Err(e) => {
                return Err(RunLogError::Malformed {
                    path: path.to_path_buf(),
                    line: line_no,
                    message: format!("not UTF-8 text: {e}"),
                })
            }
        };
        if text.trim().is_empty() {
            pos = next;
            valid_len = next as u64;
            continue;
        }
        let parsed = match parse_line(path, line_no, text) {
            Ok(l) => l,
            Err(RunLogError::Malformed { .. })
                if !complete && serde_json::from_str::<serde_json::Value>(text).is_err() =>
            {
                warnings.push(format!(
                    "{}:{line_no}: ignored a torn last line (the sweep was killed while writing it)",
                    path.display()
                ));
                break;
            }
            Err(e) => return Err(e),
        };
        match parsed {
            LogLine::Header(h) => {
                if header.is_some() {
                    return Err(RunLogError::Malformed {
                        path: path.to_path_buf(),
                        line: line_no,
                        message: "a second header line (run logs have exactly one, on line 1)"
                            .into(),
                    });
                }
                if let Some(message) = header_problem(&h) {
                    return Err(RunLogError::Malformed {
                        path: path.to_path_buf(),
                        line: line_no,
                        message,
                    });
                }
                header = Some(*h);
            }
            other => {
                if header.is_none() {
                    return Err(RunLogError::MissingHeader {
                        path: path.to_path_buf(),
                        line: line_no,
                        found: match other {
                            LogLine::Trial(_) => "a trial line".into(),
                            _ => "a summary line".into(),
                        },
                    });
                }
                match other {
                    LogLine::Trial(t) => {
                        let h = header.as_ref().expect("checked above");
                        if let Some(message) = trial_problem(h, &t, &seen) {
                            return Err(RunLogError::Malformed {
                                path: path.to_path_buf(),
                                line: line_no,
                                message,
                            });
                        }
                        if let Some(w) = outcome_curve_mismatch(h, &t) {
                            warnings.push(format!("{}:{line_no}: {w}", path.display()));
                        }
                        seen.insert(t.trial_id, line_no);
                        summary = None;
                        trials.push(*t);
                    }
                    LogLine::Summary(s) => summary = Some(*s),
                    LogLine::Header(_) => unreachable!(),
                }
            }
        }
        pos = next;
        valid_len = next as u64;
    }
    let header = header.ok_or_else(|| {
        if line_no == 0 {
            RunLogError::Empty {
                path: path.to_path_buf(),
            }
        } else {
            RunLogError::MissingHeader {
                path: path.to_path_buf(),
                line: 1,
                found: "only a torn line".into(),
            }
        }
    })?;
    Ok(RunLog {
        path: path.to_path_buf(),
        header,
        trials,
        summary,
        warnings,
        valid_len,
    })
}

/// Follows a growing run log: each `poll` returns the complete lines appended since the last one.
pub struct RunLogTail {
    path: PathBuf,
    offset: u64,
    line_no: usize,
}

impl RunLogTail {
    pub fn new(path: &Path) -> Self {
        Self::from_offset(path, 0, 0)
    }

    /// Continue from a byte offset (e.g. `RunLog::valid_len`) whose preceding lines were `lines_before`.
    pub fn from_offset(path: &Path, offset: u64, lines_before: usize) -> Self {
        RunLogTail {
            path: path.to_path_buf(),
            offset,
            line_no: lines_before,
        }
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads complete new lines; a partial line at the end is left for the next poll.
    pub fn poll(&mut self) -> Result<Vec<LogLine>, RunLogError> {
        let io = |source| RunLogError::Io {
            path: self.path.clone(),
            source,
        };
        let mut f = crate::data::files::open_regular(&self.path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len();
        if len < self.offset {
            // Truncated (a resume cut a torn line): continue from the new end.
            self.offset = len;
            return Ok(Vec::new());
        }
        f.seek(SeekFrom::Start(self.offset)).map_err(io)?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).map_err(io)?;
        let mut out = Vec::new();
        let mut pos = 0;
        while let Some(i) = buf[pos..].iter().position(|&c| c == b'\n') {
            let raw = &buf[pos..pos + i];
            self.line_no += 1;
            pos += i + 1;
            let text = String::from_utf8_lossy(raw);
            if !text.trim().is_empty() {
                out.push(parse_line(&self.path, self.line_no, &text)?);
            }
            self.offset += (i + 1) as u64;
        }
        Ok(out)
    }
}
