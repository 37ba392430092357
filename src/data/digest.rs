//! What a run log records about the data files a sweep read (path, size, SHA-256), and the check
//! of such a record against the disk now: the run-log validator (`runlog::validate`) warns when a
//! file changed since the log was written, and `sweep --resume` refuses.
//!
//! A folder of images (ImageFolder) is recorded as one entry: the SHA-256 of its manifest — one
//! line `relative/path<TAB>bytes<TAB>sha256` per image, sorted by path — with the number of
//! images and their total size. A bundled file is recorded with its pinned digest and checked
//! against this build's pin (it may live anywhere on the data search path).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::files::sha256_hex;

/// One data file (or folder of images) a sweep read.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DataFileRecord {
    /// The path read (absolute for files of a preset; `<embedded>/NAME` for the embedded digits).
    pub path: String,
    /// Its size in bytes (a folder: the images' total).
    pub bytes: u64,
    /// SHA-256 of its bytes (a folder: of its manifest).
    pub sha256: String,
    /// A folder of images: how many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<usize>,
    /// A bundled file (its digest is pinned by the build).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bundled: bool,
}

impl DataFileRecord {
    /// The record of a file read whole.
    pub fn of_bytes(path: &Path, bytes: &[u8], bundled: bool) -> Self {
        DataFileRecord {
            path: path.display().to_string(),
            bytes: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            files: None,
            bundled,
        }
    }
}

/// A folder's manifest digest as it is built: add each image, then [`Manifest::record`].
#[derive(Default)]
pub struct Manifest {
    lines: Vec<(String, u64, String)>,
}

impl Manifest {
    pub fn add(&mut self, relative: &str, bytes: &[u8]) {
        self.lines
            .push((relative.to_string(), bytes.len() as u64, sha256_hex(bytes)));
    }
    pub fn record(mut self, dir: &Path) -> DataFileRecord {
        self.lines.sort();
        let mut text = String::new();
        for (p, n, h) in &self.lines {
            text.push_str(&format!("{p}\t{n}\t{h}\n"));
        }
        DataFileRecord {
            path: dir.display().to_string(),
            bytes: self.lines.iter().map(|l| l.1).sum(),
            sha256: sha256_hex(text.as_bytes()),
            files: Some(self.lines.len()),
            bundled: false,
        }
    }
}

/// How a recorded data file differs from what is on disk now (None: unchanged). A folder's
/// images are re-read for its manifest.
pub fn changed(rec: &DataFileRecord) -> Option<String> {
    let p = &rec.path;
    if rec.bundled {
        let name = Path::new(p).file_name()?.to_string_lossy().into_owned();
        return match super::registry::bundled_file(&name) {
            Some(f) if f.sha256 == rec.sha256 => None,
            Some(f) => Some(format!(
                "bundled data file {name} changed since the log was written: its sha256 was {}, \
                 this build's is {}",
                rec.sha256, f.sha256
            )),
            None => Some(format!(
                "bundled data file {name} is not bundled with this build"
            )),
        };
    }
    let path = Path::new(p);
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return Some(format!("data file {p} cannot be read now ({e})")),
    };
    if rec.files.is_some() {
        let now = match super::formats::folder::manifest(path) {
            Ok(r) => r,
            Err(e) => return Some(format!("data folder {p} cannot be read now ({e})")),
        };
        return folder_difference(rec, &now);
    }
    if !meta.is_file() {
        return Some(format!(
            "data file {p} is now {}, not a file",
            super::files::file_kind(&meta)
        ));
    }
    if meta.len() != rec.bytes {
        return Some(format!(
            "data file {p} changed since the log was written: {} bytes then, {} now",
            rec.bytes,
            meta.len()
        ));
    }
    match digest_of(path, &meta) {
        Ok(h) if h == rec.sha256 => None,
        Ok(h) => Some(format!(
            "data file {p} changed since the log was written: its sha256 was {}, now {h} (same \
             size)",
            rec.sha256
        )),
        Err(e) => Some(format!("data file {p} cannot be read now ({e})")),
    }
}

fn folder_difference(then: &DataFileRecord, now: &DataFileRecord) -> Option<String> {
    let p = &then.path;
    if then.files != now.files {
        return Some(format!(
            "data folder {p} changed since the log was written: {} images then, {} now",
            then.files.unwrap_or(0),
            now.files.unwrap_or(0)
        ));
    }
    if then.bytes != now.bytes || then.sha256 != now.sha256 {
        return Some(format!(
            "data folder {p} changed since the log was written: its manifest's sha256 was {}, \
             now {} ({} bytes then, {} now)",
            then.sha256, now.sha256, then.bytes, now.bytes
        ));
    }
    None
}

/// The SHA-256 of a file, kept per (path, size, modification time) for the process: a report
/// re-checking a log's 180 MB of CIFAR-10 hashes it once.
fn digest_of(path: &Path, meta: &std::fs::Metadata) -> std::io::Result<String> {
    type Key = (std::path::PathBuf, u64, Option<std::time::SystemTime>);
    static SEEN: OnceLock<Mutex<HashMap<Key, String>>> = OnceLock::new();
    let key = (path.to_path_buf(), meta.len(), meta.modified().ok());
    let seen = SEEN.get_or_init(Default::default);
    if let Some(h) = seen.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(h.clone());
    }
    let bytes = super::files::read_regular(path)?;
    let h = sha256_hex(&bytes);
    seen.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, h.clone());
    Ok(h)
}
