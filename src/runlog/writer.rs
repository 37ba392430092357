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

/// One writer per log: the writer holds an exclusive lock on the log file (`flock`) for its
/// whole lifetime and writes its PID to a sidecar `LOG.lock` so a second writer can name it.
/// Readers (the TUI's tail, `report`) never take the lock. Before each append the writer checks
/// that the path still names the file it opened and that the file is as long as it left it, so a
/// log deleted, truncated, replaced or written by another program stops the sweep with an error
/// instead of writing garbage.
pub struct RunLogWriter {
    file: File,
    path: PathBuf,
    /// (device, inode) of the opened file.
    id: (u64, u64),
    /// The file's length after our last write.
    offset: u64,
    pid_file: Option<PathBuf>,
}

/// The sidecar holding the PID of a log's writer: `LOG.lock` (e.g. `x.jsonl.lock`).
pub fn lock_sidecar(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".lock");
    PathBuf::from(s)
}

#[cfg(unix)]
fn file_id(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn file_id(_m: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// Takes the exclusive lock on an opened log, or explains who holds it.
fn lock_or_refuse(file: &File, path: &Path) -> anyhow::Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(lock_sidecar(path))
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
                .map_or_else(
                    || "another scaling-lab process".to_string(),
                    |pid| format!("another scaling-lab process (PID {pid})"),
                );
            anyhow::bail!(
                "{}: {holder} is writing this run log; wait for it to finish (or stop it), then resume",
                path.display()
            )
        }
        // A filesystem without locks (some network mounts): go on unlocked.
        Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
            Ok(())
        }
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock run log {}", path.display()))
        }
    }
}

impl RunLogWriter {
    /// Wraps a freshly opened and locked file.
    fn adopt(file: File, path: &Path) -> anyhow::Result<Self> {
        let meta = file
            .metadata()
            .with_context(|| format!("cannot stat run log {}", path.display()))?;
        let pid_file = lock_sidecar(path);
        // Best effort: the lock, not the sidecar, is what keeps a second writer out.
        let pid_file = std::fs::write(&pid_file, format!("{}\n", std::process::id()))
            .ok()
            .map(|_| pid_file);
        Ok(RunLogWriter {
            id: file_id(&meta),
            offset: meta.len(),
            file,
            path: path.to_path_buf(),
            pid_file,
        })
    }

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
            match OpenOptions::new()
                .read(true)
                .append(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => {
                    lock_or_refuse(&file, &path)?;
                    let mut w = RunLogWriter::adopt(file, &path)?;
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

    /// Creates a new log at an exact path and writes the header. Never overwrites: an existing
    /// file or a symlink at `path` is an error.
    pub fn create_at(path: &Path, header: &Header) -> anyhow::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        if let Ok(m) = path.symlink_metadata() {
            anyhow::bail!(
                "{}: already exists ({}): a run log is never overwritten; choose another name",
                path.display(),
                if m.file_type().is_symlink() {
                    "a symbolic link"
                } else {
                    crate::data::files::file_kind(&m)
                }
            );
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        lock_or_refuse(&file, path)?;
        let mut w = RunLogWriter::adopt(file, path)?;
        w.write_line(&LogLine::Header(Box::new(header.clone())))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            sync_dir(dir);
        }
        Ok(w)
    }

    /// Opens an existing log for appending (resume) and locks it (a second writer is refused with
    /// the holder's PID). `valid_len` is the length of its intact part (`RunLog::valid_len`, read
    /// before this call): a torn last line beyond it is cut off first, and a missing final newline
    /// is added, so appended lines never merge with garbage. If complete lines were appended since
    /// the log was read (another process finished them), nothing is cut: it is an error.
    pub fn open_append(path: &Path, valid_len: u64) -> anyhow::Result<Self> {
        let meta = std::fs::metadata(path)
            .with_context(|| format!("cannot open run log {} for appending", path.display()))?;
        if !meta.is_file() {
            anyhow::bail!(
                "{}: cannot append: not a regular file (it is {})",
                path.display(),
                crate::data::files::file_kind(&meta)
            );
        }
        let mut opts = OpenOptions::new();
        opts.read(true).append(true);
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.custom_flags(0o4000); // O_NONBLOCK: never blocks on a swapped-in FIFO
        }
        let mut file = opts
            .open(path)
            .with_context(|| format!("cannot open run log {} for appending", path.display()))?;
        anyhow::ensure!(
            file.metadata()?.is_file(),
            "{}: cannot append: not a regular file",
            path.display()
        );
        lock_or_refuse(&file, path)?;
        let len = file.metadata()?.len();
        if len > valid_len {
            use std::io::Read;
            let mut tail = Vec::new();
            file.seek(SeekFrom::Start(valid_len))?;
            (&mut file).take(len - valid_len).read_to_end(&mut tail)?;
            if tail.contains(&b'\n') {
                anyhow::bail!(
                    "{}: the log grew while it was being read for resume (another process appended \
                     to it); nothing was changed: run the resume again",
                    path.display()
                );
            }
            file.set_len(valid_len)
                .with_context(|| format!("cannot cut the torn line off {}", path.display()))?;
        } else if len < valid_len {
            anyhow::bail!(
                "{}: the log shrank while it was being read for resume; nothing was changed: run \
                 the resume again",
                path.display()
            );
        }
        let end = file.seek(SeekFrom::End(0))?;
        if end > 0 {
            use std::io::Read;
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(end - 1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        file.sync_all()?;
        RunLogWriter::adopt(file, path)
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

    /// The path still names the file this writer opened, and the file is as long as the writer
    /// left it.
    fn check_still_ours(&self) -> anyhow::Result<()> {
        let p = self.path.display();
        match std::fs::metadata(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
                "{p}: the run log was deleted while this sweep was writing it; nothing more is \
                 written (the trials it held are gone: start the sweep again)"
            ),
            Ok(m) if file_id(&m) != self.id => anyhow::bail!(
                "{p}: the run log was replaced by another file while this sweep was writing it; \
                 nothing more is written; {}",
                self.what_is_left()
            ),
            _ => {}
        }
        let len = self
            .file
            .metadata()
            .with_context(|| format!("cannot stat run log {p}"))?
            .len();
        if len != self.offset {
            anyhow::bail!(
                "{p}: the run log is {len} bytes but this sweep left it at {} (it was {} by another \
                 program); nothing more is written; {}",
                self.offset,
                if len < self.offset { "truncated" } else { "written" },
                self.what_is_left()
            );
        }
        Ok(())
    }

    /// What to do with the log another program changed: resume from it when a resume can read
    /// it, else why not (a log without its header cannot be resumed).
    fn what_is_left(&self) -> String {
        let p = self.path.display();
        match crate::runlog::reader::read_run_log(&self.path) {
            Ok(log) => format!(
                "resume from what is left ({} trial(s)) with `scaling-lab sweep --resume {p}`",
                log.trials.len()
            ),
            Err(e) => {
                let why = e.to_string();
                let prefix = format!("{p}:");
                let why = why.strip_prefix(&prefix).unwrap_or(&why).trim_start();
                format!("what is left cannot be resumed ({why}): start the sweep again")
            }
        }
    }

    /// One line, one write, flush, fsync — after checking the file is still ours.
    pub fn write_line(&mut self, line: &LogLine) -> anyhow::Result<()> {
        self.check_still_ours()?;
        let mut buf = serde_json::to_vec(line).context("cannot serialise a run-log line")?;
        buf.push(b'\n');
        let written = self
            .file
            .write_all(&buf)
            .and_then(|_| self.file.flush())
            .and_then(|_| self.file.sync_data());
        if let Err(e) = written {
            // Cut a partly written line off again (disk full…) so a later line or a resume
            // starts at a line boundary.
            let _ = self.file.set_len(self.offset);
            return Err(e)
                .with_context(|| format!("cannot write to run log {}", self.path.display()));
        }
        self.offset += buf.len() as u64;
        Ok(())
    }
}

impl Drop for RunLogWriter {
    fn drop(&mut self) {
        if let Some(p) = &self.pid_file {
            let ours = std::fs::read_to_string(p)
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
                == Some(std::process::id());
            if ours {
                let _ = std::fs::remove_file(p);
            }
        }
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

    fn fixture() -> crate::runlog::RunLog {
        crate::runlog::reader::read_run_log(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/valid/nqm-sgd.jsonl"
        )))
        .unwrap()
    }

    #[test]
    fn a_second_writer_is_refused_with_the_holders_pid() {
        let log = fixture();
        let dir = tempfile::tempdir().unwrap();
        let w = RunLogWriter::create(dir.path(), &log.header).unwrap();
        let path = w.path().to_path_buf();
        let sidecar = lock_sidecar(&path);
        assert_eq!(
            std::fs::read_to_string(&sidecar).unwrap().trim(),
            std::process::id().to_string()
        );
        let len = std::fs::metadata(&path).unwrap().len();
        let e = RunLogWriter::open_append(&path, len)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains(&format!("PID {}", std::process::id())) && !e.contains('\n'),
            "{e}"
        );
        drop(w);
        assert!(!sidecar.exists(), "the sidecar is removed with the writer");
        // Released: now a resume may open it.
        let w2 = RunLogWriter::open_append(&path, len).unwrap();
        drop(w2);
    }

    #[test]
    fn truncation_deletion_and_replacement_stop_the_writer() {
        let log = fixture();
        let dir = tempfile::tempdir().unwrap();
        // Truncated under the writer.
        let mut w = RunLogWriter::create(dir.path(), &log.header).unwrap();
        w.write_trial(&log.trials[0]).unwrap();
        let path = w.path().to_path_buf();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(10)
            .unwrap();
        let e = format!("{:#}", w.write_trial(&log.trials[1]).unwrap_err());
        // 10 bytes of the header are left: nothing a resume could read (the advice
        // must not be a resume that fails).
        assert!(
            e.contains("truncated") && e.contains("cannot be resumed") && !e.contains("--resume"),
            "{e}"
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            10,
            "nothing written"
        );
        drop(w);
        std::fs::remove_file(&path).unwrap();
        // Truncated to its header line: resumable, and the message says so.
        let mut w = RunLogWriter::create(dir.path(), &log.header).unwrap();
        let path = w.path().to_path_buf();
        let header_len = std::fs::metadata(&path).unwrap().len();
        w.write_trial(&log.trials[0]).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(header_len)
            .unwrap();
        let e = format!("{:#}", w.write_trial(&log.trials[1]).unwrap_err());
        assert!(e.contains("truncated") && e.contains("--resume"), "{e}");
        drop(w);
        std::fs::remove_file(&path).unwrap();
        // Deleted under the writer.
        let mut w = RunLogWriter::create(dir.path(), &log.header).unwrap();
        std::fs::remove_file(w.path()).unwrap();
        let e = format!("{:#}", w.write_trial(&log.trials[0]).unwrap_err());
        assert!(e.contains("deleted"), "{e}");
        drop(w);
        // Replaced under the writer.
        let mut w = RunLogWriter::create(dir.path(), &log.header).unwrap();
        let p = w.path().to_path_buf();
        let other = dir.path().join("other");
        std::fs::write(&other, "x\n").unwrap();
        std::fs::rename(&other, &p).unwrap();
        let e = format!("{:#}", w.write_trial(&log.trials[0]).unwrap_err());
        assert!(e.contains("replaced"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "x\n");
    }

    #[test]
    fn resume_refuses_a_log_that_grew_after_it_was_read() {
        let log = fixture();
        let dir = tempfile::tempdir().unwrap();
        let mut w = RunLogWriter::create(dir.path(), &log.header).unwrap();
        let path = w.path().to_path_buf();
        let read_len = std::fs::metadata(&path).unwrap().len();
        w.write_trial(&log.trials[0]).unwrap();
        drop(w);
        let before = std::fs::read(&path).unwrap();
        let e = RunLogWriter::open_append(&path, read_len)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("grew"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing cut");
        // A torn fragment (no newline) past the valid part is still cut.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"type\":\"tri").unwrap();
        drop(f);
        let w = RunLogWriter::open_append(&path, before.len() as u64).unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn create_at_never_overwrites_nor_follows_a_symlink() {
        let log = fixture();
        let dir = tempfile::tempdir().unwrap();
        let existing = dir.path().join("a.jsonl");
        std::fs::write(&existing, "keep").unwrap();
        let e = RunLogWriter::create_at(&existing, &log.header)
            .err()
            .unwrap();
        assert!(e.to_string().contains("already exists"), "{e}");
        assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep");
        #[cfg(unix)]
        {
            let link = dir.path().join("b.jsonl");
            let target = dir.path().join("elsewhere.jsonl");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            let e = RunLogWriter::create_at(&link, &log.header).err().unwrap();
            assert!(e.to_string().contains("symbolic link"), "{e}");
            assert!(!target.exists());
        }
        let fresh = dir.path().join("c.jsonl");
        drop(RunLogWriter::create_at(&fresh, &log.header).unwrap());
        assert!(crate::runlog::reader::read_run_log(&fresh).is_ok());
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
