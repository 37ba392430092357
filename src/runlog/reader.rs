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

use super::validate::{header_problem, LogValidator};

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
    #[error("{path}: {what}, not a run log: {hint}")]
    NotARunLog {
        path: PathBuf,
        /// What the file is ("a JSON export (`scaling-lab export --json`)").
        what: String,
        /// What to do instead.
        hint: String,
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
    /// The first trial that is not the trial its header's plan derives (`path:line: message`,
    /// also among `warnings`): an edited header or line. Readers warn; `sweep --resume` refuses.
    pub off_plan: Option<String>,
    /// Byte length of the intact part of the file (without a torn last line).
    pub valid_len: u64,
    /// A study with a calibration stage: the header as written (the given study; `header` is
    /// then the calibrated study's once its line is logged) and the calibrated study.
    pub given: Option<Header>,
    pub calibrated: Option<crate::core::calibrate::Calibrated>,
}

impl RunLog {
    /// The header as the sweep wrote it (for a calibrated study, the given study).
    pub fn given_header(&self) -> &Header {
        self.given.as_ref().unwrap_or(&self.header)
    }

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

    /// The search's plan: batch sizes × trials per batch size.
    pub fn planned_trials(&self) -> usize {
        self.header.batch_sizes.len() * self.header.trials_per_batch
    }

    /// Each stage's trials against its own plan (`analysis::stages`): what the log holds of the
    /// search, the confirm stage (with the seeds of a round it holds in part) and the repeats.
    pub fn stage_counts(&self) -> crate::core::stages::StageCounts {
        let owed = crate::analysis::stages::open_confirm_seeds(&self.header, &self.trials);
        crate::analysis::stages::stage_counts(&self.header, &self.trials, &owed)
    }

    /// Recomputes the analysis from the trial records (never trusts a stored summary).
    pub fn analysis(&self) -> Analysis {
        crate::analysis::analyze_preset(&self.header.preset, &self.trials)
    }
}

/// The file in a sweep directory (`cluster::sweepdir`) that holds its header.
pub const SWEEP_DIR_HEADER: &str = "header.json";

/// The run log of a Slurm array task's shard `i` in its sweep directory.
pub fn shard_file_name(i: usize) -> String {
    format!("shard-{i}.jsonl")
}

/// Whether `path` is a shard's log in a sweep directory (its confirm trials may re-run its peer
/// shards' search trials: the stage is checked on the merged directory).
pub fn is_shard_log(path: &Path) -> bool {
    let shard = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("shard-"))
        .and_then(|n| n.strip_suffix(".jsonl"))
        .is_some_and(|i| i.parse::<usize>().is_ok());
    shard && path.with_file_name(SWEEP_DIR_HEADER).is_file()
}

/// The UTF-8 byte-order mark, accepted before a log's first line.
const BOM: char = '\u{feff}';

/// Parses one complete line (already known not to be torn).
pub fn parse_line(path: &Path, line_no: usize, text: &str) -> Result<LogLine, RunLogError> {
    let malformed = |message: String| RunLogError::Malformed {
        path: path.to_path_buf(),
        line: line_no,
        message,
    };
    // A byte-order mark before the header (an editor's UTF-8 "with BOM") is not part of it.
    let text = match text.strip_prefix(BOM) {
        Some(rest) if line_no == 1 => rest,
        _ => text,
    };
    if text.contains('\0') {
        return Err(malformed(
            "NUL bytes, not a JSON line: the file is not text here (a damaged or zero-filled \
             log?)"
                .into(),
        ));
    }
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        malformed(if text.starts_with(BOM) {
            format!("a UTF-8 byte-order mark (U+FEFF) starts this line: not valid JSON ({e})")
        } else {
            format!("not valid JSON: {e}")
        })
    })?;
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
    } else if kind != "trial" && kind != "summary" && kind != "calibrated" {
        return Err(malformed(format!(
            "unknown line type {kind:?} (expected header, trial, calibrated or summary)"
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

/// The header line at `line_no`: refused when it is a second one (`seen`) or states an impossible
/// plan; a data file that changed since it was written is a warning. Gives the validator of the
/// trial lines after it.
fn accept_header(
    path: &Path,
    line_no: usize,
    h: Box<Header>,
    seen: bool,
    warnings: &mut Vec<String>,
) -> Result<(LogValidator, Header), RunLogError> {
    let malformed = |message: String| RunLogError::Malformed {
        path: path.to_path_buf(),
        line: line_no,
        message,
    };
    if seen {
        return Err(malformed(
            "a second header line (run logs have exactly one, on line 1)".into(),
        ));
    }
    if let Some(message) = header_problem(&h) {
        return Err(malformed(message));
    }
    if let Some(m) = super::validate::data_files_problem(&h) {
        warnings.push(format!("{}:{line_no}: {m}", path.display()));
    }
    Ok((LogValidator::new(&h), *h))
}

/// A whole file that is one JSON document rather than JSON lines: the lab's own JSON export,
/// a `report --json` output or another JSON file (None: not one JSON document, or a one-line
/// document that is a log line). Only asked once the first line failed to parse.
fn json_document(path: &Path, bytes: &[u8]) -> Option<RunLogError> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let o = v.as_object()?;
    let from = |key: &str| {
        o.get(key)
            .and_then(|p| p.as_str())
            .map(|p| format!(" (this one names {p})"))
            .unwrap_or_default()
    };
    let (what, hint) = if o.contains_key("report_version") {
        (
            "a report (`scaling-lab report --json`)".to_string(),
            format!("give the run log it was made from{}", from("log")),
        )
    } else if o.contains_key("header") && o.contains_key("trials") {
        (
            "a JSON export (`scaling-lab export --json`)".to_string(),
            format!(
                "report, compare and export read the run log it was exported from{}",
                from("path")
            ),
        )
    } else if o.contains_key("type") {
        return None;
    } else {
        (
            "a JSON document".to_string(),
            "a run log is JSON lines: a header line, one line per trial, a summary (docs/runlog-schema.json)"
                .to_string(),
        )
    };
    Some(RunLogError::NotARunLog {
        path: path.to_path_buf(),
        what,
        hint,
    })
}

/// Parses run-log bytes (the file's content); `path` is used in messages.
pub fn parse_run_log(path: &Path, bytes: &[u8]) -> Result<RunLog, RunLogError> {
    match parse_lines(path, bytes) {
        Err(e @ RunLogError::Malformed { line: 1, .. }) => {
            Err(json_document(path, bytes).unwrap_or(e))
        }
        r => r,
    }
}

/// [`parse_run_log`] line by line.
fn parse_lines(path: &Path, bytes: &[u8]) -> Result<RunLog, RunLogError> {
    let mut log = LogParser::new(path);
    let (mut pos, mut line_no, mut valid_len) = (0usize, 0usize, 0u64);
    while pos < bytes.len() {
        line_no += 1;
        let (raw, next, complete) = match bytes[pos..].iter().position(|&c| c == b'\n') {
            Some(i) => (&bytes[pos..pos + i], pos + i + 1, true),
            None => (&bytes[pos..], bytes.len(), false),
        };
        match log.decode(line_no, raw, complete)? {
            Decoded::Torn => break,
            Decoded::Blank => {}
            Decoded::Line(line) => log.accept(line_no, line)?,
        }
        pos = next;
        valid_len = next as u64;
    }
    log.finish(line_no, valid_len)
}

/// One line of a run log, decoded.
enum Decoded {
    Line(LogLine),
    /// An empty or blank line (skipped).
    Blank,
    /// A torn last line: the process died writing it (ignored with a warning; reading stops).
    Torn,
}

/// What [`parse_run_log`] has read so far.
struct LogParser<'p> {
    path: &'p Path,
    header: Option<Header>,
    validator: Option<LogValidator>,
    trials: Vec<TrialRecord>,
    summary: Option<Summary>,
    warnings: Vec<String>,
    /// Index in `warnings` of the first off-plan trial's warning.
    off_plan_warning: Option<usize>,
    /// The line of each trial in `trials`.
    trial_lines: Vec<usize>,
    /// A calibrated study: the header as written, and the calibrated study's line.
    given: Option<Header>,
    calibrated: Option<crate::core::calibrate::Calibrated>,
}

impl<'p> LogParser<'p> {
    fn new(path: &'p Path) -> Self {
        LogParser {
            path,
            header: None,
            validator: None,
            trials: Vec::new(),
            summary: None,
            warnings: Vec::new(),
            off_plan_warning: None,
            trial_lines: Vec::new(),
            given: None,
            calibrated: None,
        }
    }

    /// The line's bytes as a run-log line; a last line without its newline (`!complete`) that is
    /// not UTF-8 or not JSON is torn.
    fn decode(
        &mut self,
        line_no: usize,
        raw: &[u8],
        complete: bool,
    ) -> Result<Decoded, RunLogError> {
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t,
            Err(_) if !complete => return Ok(self.torn(line_no)),
            Err(e) => {
                return Err(RunLogError::Malformed {
                    path: self.path.to_path_buf(),
                    line: line_no,
                    message: format!("not UTF-8 text: {e}"),
                })
            }
        };
        if text.trim().is_empty() {
            return Ok(Decoded::Blank);
        }
        match parse_line(self.path, line_no, text) {
            Ok(l) => Ok(Decoded::Line(l)),
            Err(RunLogError::Malformed { .. })
                if !complete && serde_json::from_str::<serde_json::Value>(text).is_err() =>
            {
                Ok(self.torn(line_no))
            }
            Err(e) => Err(e),
        }
    }

    fn torn(&mut self, line_no: usize) -> Decoded {
        self.warnings.push(format!(
            "{}:{line_no}: ignored a torn last line (the sweep was killed while writing it)",
            self.path.display()
        ));
        Decoded::Torn
    }

    /// A header starts the log (and its validator); a trial or summary line needs one before it.
    fn accept(&mut self, line_no: usize, line: LogLine) -> Result<(), RunLogError> {
        match line {
            LogLine::Header(h) => {
                let seen = self.header.is_some();
                let (v, h) = accept_header(self.path, line_no, h, seen, &mut self.warnings)?;
                self.validator = Some(v);
                self.header = Some(h);
                Ok(())
            }
            other if self.header.is_none() => Err(RunLogError::MissingHeader {
                path: self.path.to_path_buf(),
                line: line_no,
                found: match other {
                    LogLine::Trial(_) => "a trial line".into(),
                    LogLine::Calibrated(_) => "a calibrated-study line".into(),
                    _ => "a summary line".into(),
                },
            }),
            LogLine::Trial(t) => self.trial(line_no, t),
            LogLine::Calibrated(c) => {
                self.calibrated(line_no, *c);
                Ok(())
            }
            LogLine::Summary(s) => {
                self.summary = Some(*s);
                Ok(())
            }
        }
    }

    /// A trial line, checked by the validator against the header's plan (its warnings kept, the
    /// first off-plan one remembered); a trial after a summary means the sweep went on.
    fn trial(&mut self, line_no: usize, mut t: Box<TrialRecord>) -> Result<(), RunLogError> {
        let v = self.validator.as_mut().expect("set with the header");
        let found = v
            .trial(line_no, &mut t)
            .map_err(|message| RunLogError::Malformed {
                path: self.path.to_path_buf(),
                line: line_no,
                message,
            })?;
        for w in found {
            self.warnings
                .push(format!("{}:{line_no}: {w}", self.path.display()));
        }
        if v.off_plan().is_some_and(|(l, _)| *l == line_no) {
            self.off_plan_warning = Some(self.warnings.len() - 1);
        }
        self.summary = None;
        self.trial_lines.push(line_no);
        self.trials.push(*t);
        Ok(())
    }

    /// The calibrated study's line: checked against what the pilots before it give (a warning
    /// where it is not); the header the log continues under becomes the calibrated study's.
    fn calibrated(&mut self, line_no: usize, c: crate::core::calibrate::Calibrated) {
        let v = self.validator.as_mut().expect("set with the header");
        if let Some(w) = v.calibrated(&c) {
            self.warnings
                .push(format!("{}:{line_no}: {w}", self.path.display()));
            if self.off_plan_warning.is_none() {
                self.off_plan_warning = Some(self.warnings.len() - 1);
            }
        }
        let written = self.header.replace(v.header().clone());
        if self.given.is_none() {
            self.given = written;
        }
        self.calibrated = Some(c);
    }

    /// The log as read (`lines` lines, the first `valid_len` bytes whole): it needs a header;
    /// the off-plan warning counts the lines like it; the confirm stage is checked as a whole.
    fn finish(mut self, lines: usize, valid_len: u64) -> Result<RunLog, RunLogError> {
        let path = self.path;
        let header = self.header.take().ok_or_else(|| {
            if lines == 0 {
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
        // One warning for an edited header (every trial then differs), with the count.
        let more = self
            .validator
            .as_ref()
            .map_or(0, |v| v.off_plan_lines().saturating_sub(1));
        if let (Some(i), true) = (self.off_plan_warning, more > 0) {
            self.warnings[i].push_str(&format!(" (+{more} more trial lines like it)"));
        }
        // the confirm stage as a whole (a Slurm array task's shard names its peers' search
        // trials: checked once its sweep directory is merged)
        if !is_shard_log(path) {
            self.confirm_stage(&header);
        }
        Ok(RunLog {
            path: path.to_path_buf(),
            header,
            off_plan: self.off_plan_warning.map(|i| self.warnings[i].clone()),
            trials: self.trials,
            summary: self.summary,
            warnings: self.warnings,
            valid_len,
            given: self.given,
            calibrated: self.calibrated,
        })
    }

    /// The confirm stage's problem (if any) as one warning at its first trial's line.
    fn confirm_stage(&mut self, header: &Header) {
        let Some((id, m, n)) = super::validate::confirm_problem(header, &self.trials) else {
            return;
        };
        let at = self.trials.iter().position(|t| t.trial_id == id);
        let line = at
            .and_then(|i| self.trial_lines.get(i))
            .copied()
            .unwrap_or(1);
        let mut w = format!("{}:{line}: {m}", self.path.display());
        if n > 1 {
            w.push_str(&format!(" (+{} more trial lines like it)", n - 1));
        }
        self.warnings.push(w);
        if self.off_plan_warning.is_none() {
            self.off_plan_warning = Some(self.warnings.len() - 1);
        }
    }
}

/// Follows a growing run log: each `poll` returns the complete lines appended since the last one,
/// checked by the same validator as [`read_run_log`] (from the header on).
pub struct RunLogTail {
    path: PathBuf,
    offset: u64,
    line_no: usize,
    validator: Option<LogValidator>,
    warnings: Vec<String>,
}

impl RunLogTail {
    pub fn new(path: &Path) -> Self {
        Self::from_offset(path, 0, 0)
    }

    /// Continue from a byte offset (e.g. `RunLog::valid_len`) whose preceding lines were
    /// `lines_before`. Trial lines are validated once a header line has been read; prefer
    /// [`RunLogTail::after`] to continue a log already read.
    pub fn from_offset(path: &Path, offset: u64, lines_before: usize) -> Self {
        RunLogTail {
            path: path.to_path_buf(),
            offset,
            line_no: lines_before,
            validator: None,
            warnings: Vec::new(),
        }
    }

    /// Continues `log` (read with [`read_run_log`]) from the end of its intact part, validating
    /// new trial lines against its header and the trials it already holds.
    pub fn after(log: &RunLog) -> Self {
        // Line numbers of later errors: count the lines of the part already read.
        let lines_before = crate::data::files::read_regular(&log.path)
            .map(|b| {
                let end = (log.valid_len as usize).min(b.len());
                b[..end].iter().filter(|&&c| c == b'\n').count()
            })
            .unwrap_or(log.trials.len() + 1);
        let mut t = Self::from_offset(&log.path, log.valid_len, lines_before);
        t.validator = Some(LogValidator::after(&log.header, &log.trials));
        t
    }

    /// The validator's warnings about the lines polled so far (drained).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
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
                let line = self.check(parse_line(&self.path, self.line_no, &text)?)?;
                out.push(line);
            }
            self.offset += (i + 1) as u64;
        }
        Ok(out)
    }

    /// The validator's verdict on one parsed line (a header starts the validation).
    fn check(&mut self, line: LogLine) -> Result<LogLine, RunLogError> {
        let (path, n) = (self.path.clone(), self.line_no);
        let malformed = |message: String| RunLogError::Malformed {
            path: path.clone(),
            line: n,
            message,
        };
        match line {
            LogLine::Header(h) => {
                if let Some(m) = header_problem(&h) {
                    return Err(malformed(m));
                }
                self.validator = Some(LogValidator::new(&h));
                Ok(LogLine::Header(h))
            }
            LogLine::Trial(mut t) => {
                if let Some(v) = self.validator.as_mut() {
                    let found = v.trial(n, &mut t).map_err(malformed)?;
                    let p = path.display();
                    self.warnings
                        .extend(found.into_iter().map(|w| format!("{p}:{n}: {w}")));
                }
                Ok(LogLine::Trial(t))
            }
            other => Ok(other),
        }
    }
}
