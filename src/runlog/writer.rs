//! Appends run-log lines durably: every line is one `write_all` of `json + "\n"`, then flush and
//! fsync, so a crash can tear at most the last line (which the reader tolerates).

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::core::record::{Header, LogLine, Summary, TrialRecord};

/// Environment variable overriding the default runs directory `./runs`.
pub const RUNS_DIR_ENV: &str = "SCALING_LAB_RUNS_DIR";

/// `--runs-dir` wins, then `$SCALING_LAB_RUNS_DIR`, then `./runs`.
pub fn resolve_runs_dir(cli: Option<PathBuf>) -> PathBuf {
    if let Some(p) = cli {
        return p;
    }
    match std::env::var_os(RUNS_DIR_ENV) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from("runs"),
    }
}

/// `2026-12-01T10-22-05-<preset>.jsonl` (local time; the preset name reduced to [A-Za-z0-9._-]).
pub fn log_file_name(preset: &str, at: chrono::DateTime<chrono::Local>) -> String {
    let clean: String = preset
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean = if clean.is_empty() {
        "sweep".to_string()
    } else {
        clean
    };
    format!("{}-{clean}.jsonl", at.format("%Y-%m-%dT%H-%M-%S"))
}

pub struct RunLogWriter {
    file: File,
    path: PathBuf,
}

impl RunLogWriter {
    /// Creates a new log under `runs_dir` (created if missing) named after the preset and the time,
    /// and writes the header durably. Never overwrites: a name clash gets a `-2`, `-3`, … suffix.
    pub fn create(runs_dir: &Path, header: &Header) -> anyhow::Result<Self> {
        std::fs::create_dir_all(runs_dir)
            .with_context(|| format!("cannot create runs directory {}", runs_dir.display()))?;
        let base = log_file_name(&header.preset.name, chrono::Local::now());
        let stem = base.trim_end_matches(".jsonl").to_string();
        for n in 1..1000 {
            let name = if n == 1 {
                base.clone()
            } else {
                format!("{stem}-{n}.jsonl")
            };
            let path = runs_dir.join(name);
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => {
                    let mut w = RunLogWriter { file, path };
                    w.write_line(&LogLine::Header(Box::new(header.clone())))?;
                    sync_dir(runs_dir);
                    return Ok(w);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("cannot create run log {}", path.display()))
                }
            }
        }
        anyhow::bail!(
            "could not find a free run-log name in {}",
            runs_dir.display()
        )
    }

    /// Creates (or truncates) a log at an exact path and writes the header.
    pub fn create_at(path: &Path, header: &Header) -> anyhow::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        let file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let mut w = RunLogWriter {
            file,
            path: path.to_path_buf(),
        };
        w.write_line(&LogLine::Header(Box::new(header.clone())))?;
        Ok(w)
    }

    /// Opens an existing log for appending (resume). `valid_len` is the length of its intact part
    /// (`RunLog::valid_len`): a torn last line beyond it is cut off first, and a missing final
    /// newline is added, so appended lines never merge with garbage.
    pub fn open_append(path: &Path, valid_len: u64) -> anyhow::Result<Self> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open run log {} for appending", path.display()))?;
        let len = file.metadata()?.len();
        if valid_len < len {
            file.set_len(valid_len)
                .with_context(|| format!("cannot cut the torn line off {}", path.display()))?;
        }
        let end = file.seek(SeekFrom::End(0))?;
        if end > 0 {
            use std::io::Read;
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(end - 1))?;
            file.read_exact(&mut last)?;
            file.seek(SeekFrom::End(0))?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        file.sync_all()?;
        Ok(RunLogWriter {
            file,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one finished trial; returns only after it is on disk.
    pub fn write_trial(&mut self, rec: &TrialRecord) -> anyhow::Result<()> {
        self.write_line(&LogLine::Trial(Box::new(rec.clone())))
    }

    pub fn write_summary(&mut self, s: &Summary) -> anyhow::Result<()> {
        self.write_line(&LogLine::Summary(Box::new(s.clone())))
    }

    /// One line, one write, flush, fsync.
    pub fn write_line(&mut self, line: &LogLine) -> anyhow::Result<()> {
        let mut buf = serde_json::to_vec(line).context("cannot serialise a run-log line")?;
        buf.push(b'\n');
        self.file
            .write_all(&buf)
            .and_then(|_| self.file.flush())
            .and_then(|_| self.file.sync_data())
            .with_context(|| format!("cannot write to run log {}", self.path.display()))
    }
}

/// Makes a newly created file's directory entry durable (best effort; a no-op off Unix).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_name_is_sanitised() {
        use chrono::TimeZone;
        let t = chrono::Local
            .with_ymd_and_hms(2026, 12, 1, 10, 22, 5)
            .unwrap();
        assert_eq!(
            log_file_name("mnist-cnn-sgd", t),
            "2026-12-01T10-22-05-mnist-cnn-sgd.jsonl"
        );
        assert_eq!(log_file_name("a/b c", t), "2026-12-01T10-22-05-a-b-c.jsonl");
    }

    #[test]
    fn runs_dir_precedence() {
        // Only this test touches the variable.
        std::env::remove_var(RUNS_DIR_ENV);
        assert_eq!(resolve_runs_dir(None), PathBuf::from("runs"));
        std::env::set_var(RUNS_DIR_ENV, "/tmp/x-runs");
        assert_eq!(resolve_runs_dir(None), PathBuf::from("/tmp/x-runs"));
        assert_eq!(resolve_runs_dir(Some("cli".into())), PathBuf::from("cli"));
        std::env::remove_var(RUNS_DIR_ENV);
    }
}
