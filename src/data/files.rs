//! The bundled data files, their expected SHA-256 digests, and verified reading.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::DataError;

/// One file under `data/`, with the SHA-256 of its exact bytes (the `.gz` as shipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataFile {
    pub name: &'static str,
    pub sha256: &'static str,
}

/// Declares each bundled file as a constant and lists them all, in order, in `ALL_FILES` (the same
/// list as `data/NOTICE`): one line per file, so a file cannot be declared and left out of the list.
macro_rules! data_files {
    ($($id:ident = $name:literal, $sha:literal;)+) => {
        $(pub const $id: DataFile = DataFile { name: $name, sha256: $sha };)+
        /// Every bundled file (the same list as `data/NOTICE`).
        pub const ALL_FILES: [DataFile; [$($name),+].len()] = [$($id),+];
    };
}

data_files! {
    DIGITS_CSV = "digits.csv.gz",
        "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22";
    MNIST_IMAGES = "mnist10k-images-idx3-ubyte.gz",
        "e4fe0d60f60f8f0df0398586d502bc3b12ed90a528a834cda9d327a4f0dd8adb";
    MNIST_LABELS = "mnist10k-labels-idx1-ubyte.gz",
        "90a5104fcc3b28740476f5545ec6579a11daed8a4330dc2ede05ea153f69fb98";
    FASHION_IMAGES = "fashion-mnist-t10k-images-idx3-ubyte.gz",
        "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa";
    FASHION_LABELS = "fashion-mnist-t10k-labels-idx1-ubyte.gz",
        "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05";
    SHAKESPEARE = "shakespeare.txt.gz",
        "315a122776be4e3f7bb982803c09d14b29e1e47d5544632278c7f2188ebacb20";
    REVIEWS = "movie-review-sentences.tsv.gz",
        "203c22d62953b5b59db41afc31dc430a88e08c4e4517c76607b0afdeb59b5597";
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest.iter() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Read `dir/file.name`, check its SHA-256, return the raw (still compressed) bytes.
pub fn read_verified(dir: &Path, file: &DataFile) -> Result<Vec<u8>, DataError> {
    let path = dir.join(file.name);
    read_verified_path(&path, file.sha256)
}

/// What a non-regular file is, in words ("a directory", "a FIFO (named pipe)", …).
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        return "a regular file";
    }
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// The error for a path that exists but is not a regular file.
fn not_regular(meta: &std::fs::Metadata) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "not a regular file (it is {}); give a file",
            file_kind(meta)
        ),
    )
}

/// Opens `path` for reading only if it is a regular file (symlinks followed). A FIFO, a
/// directory or a device is refused from its metadata before it is opened, and the open itself
/// is non-blocking, so nothing can block on a pipe planted at the path between the two checks.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK (no effect on a regular file; never blocks on a swapped-in FIFO).
        opts.custom_flags(0o4000);
    }
    let file = opts.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    Ok(file)
}

/// Reads a whole regular file ([`open_regular`]): never blocks on a FIFO or a device.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = open_regular(path)?;
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
}

/// Read `path` and check that its SHA-256 equals `expected` (lower-case hex).
pub fn read_verified_path(path: &Path, expected: &str) -> Result<Vec<u8>, DataError> {
    let bytes = match read_regular(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(DataError::Missing {
                path: path.to_path_buf(),
            })
        }
        Err(e) => {
            return Err(DataError::Io {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
    };
    let actual = sha256_hex(&bytes);
    if actual != expected {
        return Err(DataError::Checksum {
            path: path.to_path_buf(),
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(bytes)
}

/// Gunzip `bytes` read from `path` (the path only names the file in errors).
pub fn gunzip(path: &Path, bytes: &[u8]) -> Result<Vec<u8>, DataError> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| DataError::Format {
            path: PathBuf::from(path),
            message: format!("not a valid gzip stream: {e}"),
        })?;
    Ok(out)
}

/// Read, verify and decompress one bundled file.
pub fn read_gz_verified(dir: &Path, file: &DataFile) -> Result<Vec<u8>, DataError> {
    let raw = read_verified(dir, file)?;
    gunzip(&dir.join(file.name), &raw)
}
