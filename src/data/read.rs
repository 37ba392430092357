//! The one loader path: a [`Source`] (a registry entry or a preset's files) is located, its
//! files read (bundled ones checked against their pinned SHA-256, every one recorded with its
//! path, size and digest for the run log), `.gz` files decompressed, and decoded by its format
//! ([`Decoder::read`]: nothing here names a format).

use std::path::{Path, PathBuf};

use super::digest::DataFileRecord;
use super::formats::{Decoded, Files, PartData, RawSource};
use super::registry::Entry;
use super::spec::{Decoder, Part, Source};
use super::{data_dir, data_search_path, files, searched_places, DataError, DATA_DIR_ENV};

/// Decoded source data and the files it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Raw {
    pub source: RawSource,
    pub files: Vec<DataFileRecord>,
}

/// Memory this machine has available (bytes), from /proc/meminfo; None when unknown.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// The most bytes one file may hold or decompress to, and what sets that limit: the memory
/// available, or less when the process may use less (a cgroup's memory limit, `ulimit -v`).
/// A larger file is an error, never an allocation that fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadCap {
    pub bytes: u64,
    /// What sets it, for messages ("the memory available").
    pub what: &'static str,
}

impl ReadCap {
    /// Why `read` bytes (and more to come) are too many: past the cap, or memory ran out first.
    pub fn past(&self, read: usize) -> String {
        let limit = format!("{}, {}", size(self.bytes), self.what);
        if read as u64 > self.bytes {
            format!("more than the limit of {limit}")
        } else {
            format!(
                "memory ran out after {}; the limit is {limit}",
                size(read as u64)
            )
        }
    }
}

/// `b` bytes for messages: in GiB or MiB, with the exact count.
fn size(b: u64) -> String {
    let (unit, name) = match b {
        b if b >= 1 << 30 => (1u64 << 30, "GiB"),
        b if b >= 1 << 20 => (1 << 20, "MiB"),
        _ => return format!("{b} bytes"),
    };
    format!("{:.1} {name} ({b} bytes)", b as f64 / unit as f64)
}

/// The cap on what one file may hold or decompress to ([`ReadCap`]; 64 GiB when the memory
/// available is unknown).
pub fn read_cap() -> ReadCap {
    let mut cap = match available_memory() {
        Some(bytes) => ReadCap {
            bytes,
            what: "the memory available",
        },
        None => ReadCap {
            bytes: 64 << 30,
            what: "64 GiB when the memory available is unknown",
        },
    };
    let limits = [
        (
            cgroup_memory_left(),
            "what the cgroup's memory limit leaves",
        ),
        (address_space_limit(), "the address-space limit (ulimit -v)"),
    ];
    for (bytes, what) in limits {
        if let Some(bytes) = bytes.filter(|&b| b < cap.bytes) {
            cap = ReadCap { bytes, what };
        }
    }
    cap
}

/// What the cgroup (v2) memory limit of this process leaves (`memory.max` − `memory.current`);
/// None when there is no limit or no cgroup v2.
fn cgroup_memory_left() -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{name}")).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?;
    let current: u64 = read("memory.current")?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// The soft address-space limit (`ulimit -v`), when there is one.
fn address_space_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given and nothing else.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut l) } == 0;
        (ok && l.rlim_cur != libc::RLIM_INFINITY).then_some(l.rlim_cur)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Reads and decodes `src`; `dir` is the folder its relative names are in (see [`locate`]).
pub fn read_source(src: &Source) -> Result<Raw, DataError> {
    let dir = locate(src)?;
    let mut r = Reader {
        entry: src.entry,
        dir,
        explicit_dir: src.dir.is_some(),
        files: vec![],
    };
    let train = r.part("train", src.decoder, &src.train, None)?;
    let val = match &src.val {
        Some(v) => Some(r.part("val", src.decoder, v, train.class_names.as_deref())?),
        None => None,
    };
    let source = match (train.data, val.map(|v| v.data)) {
        (Decoded::Images(t), v) => RawSource::Images {
            train: t,
            val: v.map(|v| match v {
                Decoded::Images(v) => v,
                _ => unreachable!("one decoder, one kind"),
            }),
        },
        (Decoded::Text(t, vocab), v) => RawSource::Text {
            train: t,
            val: v.map(|v| match v {
                Decoded::Text(v, _) => v,
                _ => unreachable!("one decoder, one kind"),
            }),
            vocab,
        },
        (Decoded::Sentences(labels, sentences), _) => RawSource::Sentences { labels, sentences },
    };
    Ok(Raw {
        source,
        files: r.files,
    })
}

/// The folder a source's relative names are in: a preset's `dir` (an entry: that folder or its
/// distributed sub-folder, e.g. `cifar-10-batches-bin/`), else for a bundled entry the data
/// directory, for another entry the first place of the data search path (or its sub-folder)
/// that holds its files.
pub fn locate(src: &Source) -> Result<PathBuf, DataError> {
    let Some(entry) = src.entry else {
        return Ok(src.dir.clone().unwrap_or_default());
    };
    let places: Vec<PathBuf> = match &src.dir {
        Some(d) => vec![d.clone()],
        None if entry.is_bundled() => return Ok(data_dir()),
        None => data_search_path(),
    };
    let candidates: Vec<PathBuf> = places
        .iter()
        .flat_map(|p| std::iter::once(p.clone()).chain(entry.folder.map(|f| p.join(f))))
        .collect();
    let first = entry.file_names()[0];
    if let Some(found) = candidates.iter().find(|c| c.join(first).exists()) {
        return Ok(found.clone());
    }
    if entry.is_bundled() {
        return Ok(candidates[0].clone());
    }
    Err(missing_entry(entry, &places, src.dir.is_some()))
}

/// The one-line error for an entry whose files are nowhere: which files, where it looked, where
/// they come from and how to point at them.
fn missing_entry(entry: &Entry, places: &[PathBuf], from_preset: bool) -> DataError {
    let names = entry.file_names();
    let list = if names.len() > 3 {
        format!(
            "{} … {} and {}",
            names[0],
            names[names.len() - 2],
            names[names.len() - 1]
        )
    } else {
        names.join(", ")
    };
    let looked = if from_preset {
        places
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        searched_places()
    };
    let sub = entry
        .folder
        .map_or(String::new(), |f| format!(" (and {f}/ in each)"));
    let from = entry.source_hint.map_or(String::new(), |u| {
        format!("; they come from {u} (extract it)")
    });
    DataError::NotFound(format!(
        "dataset {}: its files ({list}) are not in {looked}{sub}{from}; then name the folder \
         with dir = \"…\" under [workload.dataset] or {DATA_DIR_ENV}=…",
        entry.name
    ))
}

struct Reader {
    entry: Option<&'static Entry>,
    dir: PathBuf,
    /// The preset named the folder (`dir`).
    explicit_dir: bool,
    files: Vec<DataFileRecord>,
}

impl Reader {
    /// Reads one file (named relative to the source's folder): verified against its pin for a
    /// bundled entry, recorded, decompressed when its name ends in `.gz`.
    fn file(&mut self, name: &str) -> Result<(PathBuf, Vec<u8>), DataError> {
        let path = self.dir.join(name);
        let pin = self.entry.and_then(|e| e.pin(name));
        let bytes = match pin {
            Some(f) => match files::read_verified_path(&path, f.sha256) {
                Err(DataError::Missing { .. }) if self.embedded_fallback() => {
                    let path = PathBuf::from(format!("<embedded>/{name}"));
                    self.files.push(DataFileRecord::of_bytes(
                        &path,
                        super::EMBEDDED_DIGITS,
                        true,
                    ));
                    return Ok((path.clone(), files::gunzip(&path, super::EMBEDDED_DIGITS)?));
                }
                other => other?,
            },
            None => read_checked(&path)?,
        };
        self.files.push(match pin {
            // verified against its pin just now: no second hash
            Some(f) => DataFileRecord {
                path: path.display().to_string(),
                bytes: bytes.len() as u64,
                sha256: f.sha256.to_string(),
                files: None,
                bundled: true,
            },
            None => DataFileRecord::of_bytes(&path, &bytes, false),
        });
        let bytes = if name.ends_with(".gz") {
            gunzip_capped(&path, &bytes)?
        } else {
            bytes
        };
        Ok((path, bytes))
    }

    /// The embedded digits file stands in for a missing one, unless `SCALING_LAB_DATA_DIR` or
    /// the preset's `dir` names a folder (an explicit folder is never silently replaced).
    fn embedded_fallback(&self) -> bool {
        self.entry.is_some_and(|e| e.name == "digits")
            && !self.explicit_dir
            && std::env::var_os(DATA_DIR_ENV).is_none_or(|d| d.is_empty())
    }

    /// Reads part `key` (`train` or `val`). A missing file of the user's own is named with the
    /// key that names it; a missing file of a named dataset that does not ship says where its
    /// files come from.
    fn part(
        &mut self,
        key: &'static str,
        decoder: Decoder,
        part: &Part,
        train_classes: Option<&[String]>,
    ) -> Result<PartData, DataError> {
        decoder
            .read(part, self, train_classes)
            .map_err(|e| match e {
                DataError::Missing { path } => self.missing(path, key, part),
                e => e,
            })
    }

    fn missing(&self, path: PathBuf, key: &str, part: &Part) -> DataError {
        match self.entry {
            Some(e) if e.is_bundled() => DataError::Missing { path },
            Some(e) => DataError::NotFound(format!(
                "dataset {}: its file {} is missing{}",
                e.name,
                path.display(),
                e.source_hint.map_or(String::new(), |u| {
                    format!(
                        " ({} holds some of its files but not this one); they come from {u} \
                         (extract all of it)",
                        self.dir.display()
                    )
                })
            )),
            None => {
                let key = part
                    .keyed(key)
                    .into_iter()
                    .find(|(_, name)| self.dir.join(name) == path)
                    .map_or(key.to_string(), |(k, _)| k);
                DataError::MissingFile { path, key }
            }
        }
    }
}

impl Files for Reader {
    fn read(&mut self, name: &str) -> Result<(PathBuf, Vec<u8>), DataError> {
        self.file(name)
    }
    fn folder(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    fn record(&mut self, record: DataFileRecord) {
        self.files.push(record);
    }
}

/// A regular file read whole, refused when it is larger than [`read_cap`].
fn read_checked(path: &Path) -> Result<Vec<u8>, DataError> {
    let io = |e| DataError::io(path, e);
    let f = files::open_regular(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let cap = read_cap();
    if len > cap.bytes {
        return Err(DataError::Format {
            path: path.to_path_buf(),
            message: format!("{len} bytes: too large to read, {}", cap.past(len as usize)),
        });
    }
    let mut out = Vec::with_capacity(len as usize);
    use std::io::Read;
    f.take(cap.bytes + 1).read_to_end(&mut out).map_err(io)?;
    if out.is_empty() {
        return Err(DataError::Format {
            path: path.to_path_buf(),
            message: "empty file".into(),
        });
    }
    Ok(out)
}

/// Gunzips `bytes`, refusing output larger than [`read_cap`] (a gzip bomb is an error, and so
/// is memory running out before the cap).
fn gunzip_capped(path: &Path, bytes: &[u8]) -> Result<Vec<u8>, DataError> {
    gunzip_within(path, bytes, read_cap())
}

/// Gunzips `bytes`, refusing output larger than `cap`.
pub(crate) fn gunzip_within(path: &Path, bytes: &[u8], cap: ReadCap) -> Result<Vec<u8>, DataError> {
    use std::io::Read;
    let err = |message: String| DataError::Format {
        path: path.to_path_buf(),
        message,
    };
    if bytes.len() < 2 || bytes[..2] != [0x1f, 0x8b] {
        return Err(err(
            "named .gz but not gzip-compressed (no gzip magic 1f 8b)".into(),
        ));
    }
    let mut out = Vec::new();
    let read = flate2::read::MultiGzDecoder::new(bytes)
        .take(cap.bytes + 1)
        .read_to_end(&mut out);
    let out_of_memory = read
        .as_ref()
        .is_err_and(|e| e.kind() == std::io::ErrorKind::OutOfMemory);
    if out_of_memory || out.len() as u64 > cap.bytes {
        return Err(err(format!(
            "too large when decompressed: {}",
            cap.past(out.len())
        )));
    }
    read.map_err(|e| err(format!("not a valid gzip stream: {e}")))?;
    Ok(out)
}
