//! The one loader path: a [`Source`] (a registry entry or a preset's files) is located, its
//! files read (bundled ones checked against their pinned SHA-256, every one recorded with its
//! path, size and digest for the run log), `.gz` files decompressed, and decoded by its format.

use std::path::{Path, PathBuf};

use super::digest::DataFileRecord;
use super::formats::{self, RawImages, RawSource};
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

/// The most bytes one file may hold or decompress to: the memory available (64 GiB when that is
/// unknown). A larger file is an error, never an allocation that fails.
pub fn read_cap() -> u64 {
    available_memory().unwrap_or(64 << 30)
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
    let train = r.part(src.decoder, &src.train, None)?;
    let val = match &src.val {
        Some(v) => Some(r.part(src.decoder, v, train.class_names.as_deref())?),
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

enum Decoded {
    Images(RawImages),
    Text(Vec<u32>, usize),
    Sentences(Vec<u8>, Vec<String>),
}

struct PartData {
    data: Decoded,
    /// image-folder: the class folders' names.
    class_names: Option<Vec<String>>,
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

    fn part(
        &mut self,
        decoder: Decoder,
        part: &Part,
        train_classes: Option<&[String]>,
    ) -> Result<PartData, DataError> {
        let plain = |data| PartData {
            data,
            class_names: None,
        };
        let names: Vec<String> = match part {
            Part::Files(v) => v.clone(),
            Part::Pair { images, labels } => vec![images.clone(), labels.clone()],
            Part::Archive { file, .. } => vec![file.clone()],
        };
        Ok(match decoder {
            Decoder::DigitsCsv => {
                let (p, b) = self.file(&names[0])?;
                plain(Decoded::Images(formats::bundled::parse_digits_csv(&p, &b)?))
            }
            Decoder::ReviewsTsv => {
                let (p, b) = self.file(&names[0])?;
                let (l, s) = formats::bundled::parse_reviews_tsv(&p, &b)?;
                plain(Decoded::Sentences(l, s))
            }
            Decoder::Idx { classes } => {
                let (pi, bi) = self.file(&names[0])?;
                let (pl, bl) = self.file(&names[1])?;
                plain(Decoded::Images(formats::idx::parse_idx_pair(
                    &pi, &bi, &pl, &bl, classes,
                )?))
            }
            Decoder::Cifar { label } => {
                let mut all: Option<RawImages> = None;
                for n in &names {
                    let (p, b) = self.file(n)?;
                    let im = formats::cifar::parse(&p, &b, label)?;
                    match all.as_mut() {
                        Some(a) => a.append(im, &p)?,
                        None => all = Some(im),
                    }
                }
                plain(Decoded::Images(all.expect("at least one file")))
            }
            Decoder::Npy { layout, classes } => {
                let (pi, bi) = self.file(&names[0])?;
                let (pl, bl) = self.file(&names[1])?;
                let im =
                    formats::numpy::images(&pi, &formats::numpy::parse_npy(&pi, &bi)?, layout)?;
                drop(bi);
                let l =
                    formats::numpy::labels(&pl, &formats::numpy::parse_npy(&pl, &bl)?, classes)?;
                plain(Decoded::Images(formats::numpy::pair(
                    &pi, im, &pl, l, classes,
                )?))
            }
            Decoder::Npz { layout, classes } => {
                let Part::Archive { images, labels, .. } = part else {
                    unreachable!("checked by the spec")
                };
                let (p, b) = self.file(&names[0])?;
                let cap = read_cap();
                let xi = formats::numpy::npz_member(&p, &b, images, cap)?;
                let xl = formats::numpy::npz_member(&p, &b, labels, cap)?;
                let (ni, nl) = (p.join(images), p.join(labels));
                let im =
                    formats::numpy::images(&ni, &formats::numpy::parse_npy(&ni, &xi)?, layout)?;
                let l =
                    formats::numpy::labels(&nl, &formats::numpy::parse_npy(&nl, &xl)?, classes)?;
                plain(Decoded::Images(formats::numpy::pair(
                    &ni, im, &nl, l, classes,
                )?))
            }
            Decoder::ImageFolder { size, channels } => {
                let dir = self.dir.join(&names[0]);
                let (im, names, rec) = formats::folder::read(&dir, size, channels, train_classes)?;
                self.files.push(rec);
                PartData {
                    data: Decoded::Images(im),
                    class_names: Some(names),
                }
            }
            Decoder::Bytes | Decoder::Tokens { .. } => {
                let mut all = vec![];
                for n in &names {
                    let (p, b) = self.file(n)?;
                    all.extend(match decoder {
                        Decoder::Tokens { dtype, vocab } => {
                            formats::text::tokens(&p, &b, dtype, vocab)?
                        }
                        _ => formats::text::bytes(&p, &b)?,
                    });
                }
                let vocab = match decoder {
                    Decoder::Tokens { vocab, .. } => vocab,
                    _ => super::BYTE_VOCAB,
                };
                plain(Decoded::Text(all, vocab))
            }
        })
    }
}

/// A regular file read whole, refused when it is larger than [`read_cap`].
fn read_checked(path: &Path) -> Result<Vec<u8>, DataError> {
    let io = |e| DataError::io(path, e);
    let f = files::open_regular(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let cap = read_cap();
    if len > cap {
        return Err(DataError::Format {
            path: path.to_path_buf(),
            message: format!("{len} bytes: more than the {cap} bytes of memory available"),
        });
    }
    let mut out = Vec::with_capacity(len as usize);
    use std::io::Read;
    f.take(cap + 1).read_to_end(&mut out).map_err(io)?;
    if out.is_empty() {
        return Err(DataError::Format {
            path: path.to_path_buf(),
            message: "empty file".into(),
        });
    }
    Ok(out)
}

/// Gunzips `bytes`, refusing output larger than [`read_cap`] (a gzip bomb is an error).
fn gunzip_capped(path: &Path, bytes: &[u8]) -> Result<Vec<u8>, DataError> {
    use std::io::Read;
    if bytes.len() < 2 || bytes[..2] != [0x1f, 0x8b] {
        return Err(DataError::Format {
            path: path.to_path_buf(),
            message: "named .gz but not gzip-compressed (no gzip magic 1f 8b)".into(),
        });
    }
    let cap = read_cap();
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(cap + 1)
        .read_to_end(&mut out)
        .map_err(|e| DataError::Format {
            path: path.to_path_buf(),
            message: format!("not a valid gzip stream: {e}"),
        })?;
    if out.len() as u64 > cap {
        return Err(DataError::Format {
            path: path.to_path_buf(),
            message: format!("decompresses to more than the {cap} bytes of memory available"),
        });
    }
    Ok(out)
}
