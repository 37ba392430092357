//! NumPy `.npy` arrays and `.npz` archives of them (stored or deflate-compressed, as
//! `np.savez` / `np.savez_compressed` write them). Images are uint8 (scaled by 1/255) or float32
//! (used as they are; NaN and ∞ are refused) in the layout the preset names (NHWC, NCHW or NHW);
//! labels are integers of any width, shape (N,) or (N, 1). The header's shape is checked
//! against the file's length before anything is allocated from it. `format = "npy"`
//! (`train = { images, labels }`) and `format = "npz"` (`train = { file, images, labels }`), with
//! `layout` and `classes`.

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    check_finite, check_labels, classes, format_err, need, Decoder, Files, FormatDef, Hostile,
    PartShape, Pixels, RawImages, Sample,
};
use crate::data::spec::{DatasetSpec, Part, SpecProblem};
use crate::data::DataError;

/// The axes of a NumPy image array (`layout = "…"`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// (N, H, W, C): TensorFlow/Keras.
    Nhwc,
    /// (N, C, H, W): PyTorch.
    Nchw,
    /// (N, H, W): one channel.
    Nhw,
}

pub const NPY: FormatDef = FormatDef {
    name: "npy",
    part: PartShape::Pair,
    train: "{ images = \"x_train.npy\", labels = \"y_train.npy\" }",
    keys: &["layout", "classes"],
    keys_doc: "`layout`, `classes`",
    notes: "images uint8 (÷255) or float32 (as stored); labels integers, (N,) or (N, 1)",
    decoder: |spec| {
        let (layout, classes) = keys(spec, NPY.name)?;
        Ok(Decoder::Npy { layout, classes })
    },
    sample: || sample(false),
    hostile: hostile_npy,
};

pub const NPZ: FormatDef = FormatDef {
    name: "npz",
    part: PartShape::Archive,
    train: "{ file = \"data.npz\", images = \"x_train\", labels = \"y_train\" }",
    keys: &["layout", "classes"],
    keys_doc: "`layout`, `classes`",
    notes: "`np.savez` or `np.savez_compressed`",
    decoder: |spec| {
        let (layout, classes) = keys(spec, NPZ.name)?;
        Ok(Decoder::Npz { layout, classes })
    },
    sample: || sample(true),
    hostile: hostile_npz,
};

/// `layout` and `classes`, which both formats need.
fn keys(spec: &DatasetSpec, format: &str) -> Result<(Layout, usize), SpecProblem> {
    let layout = spec.layout.ok_or_else(|| {
        need(
            format,
            "layout",
            "\"nhwc\", \"nchw\" or \"nhw\" (the image array's axes)",
        )
    })?;
    Ok((layout, classes(spec, format)?))
}

/// A part's image and label arrays, from two `.npy` files.
pub fn read_npy(
    part: &Part,
    files: &mut dyn Files,
    layout: Layout,
    classes: usize,
) -> Result<RawImages, DataError> {
    let names = super::file_names(part);
    let (pi, bi) = files.read(names[0])?;
    let (pl, bl) = files.read(names[1])?;
    let im = images(&pi, &parse_npy(&pi, &bi)?, layout)?;
    drop(bi);
    let l = labels(&pl, &parse_npy(&pl, &bl)?, classes)?;
    pair(&pi, im, &pl, l, classes)
}

/// A part's image and label arrays, from one `.npz` archive.
pub fn read_npz(
    part: &Part,
    files: &mut dyn Files,
    layout: Layout,
    classes: usize,
) -> Result<RawImages, DataError> {
    let Part::Archive {
        file,
        images: xname,
        labels: yname,
    } = part
    else {
        unreachable!("npz takes {{ file, images, labels }}: the part's shape is checked")
    };
    let (p, b) = files.read(file)?;
    let cap = crate::data::read::read_cap();
    let xi = npz_member(&p, &b, xname, cap)?;
    let xl = npz_member(&p, &b, yname, cap)?;
    let (ni, nl) = (p.join(xname), p.join(yname));
    let im = images(&ni, &parse_npy(&ni, &xi)?, layout)?;
    let l = labels(&nl, &parse_npy(&nl, &xl)?, classes)?;
    pair(&ni, im, &nl, l, classes)
}

/// The element types read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    U8,
    I8,
    F32,
    /// An integer of this many bytes (2, 4, 8), signed or not.
    Int {
        bytes: usize,
        signed: bool,
    },
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::U8 | Dtype::I8 => 1,
            Dtype::F32 => 4,
            Dtype::Int { bytes, .. } => bytes,
        }
    }
}

/// A parsed array: its shape, element type and data bytes (little-endian).
#[derive(Debug)]
pub struct Array<'a> {
    shape: Vec<usize>,
    dtype: Dtype,
    data: &'a [u8],
}

/// Parses an `.npy` file's header; `data` borrows the rest of `b`.
pub fn parse_npy<'a>(path: &Path, b: &'a [u8]) -> Result<Array<'a>, DataError> {
    let err = |m: String| format_err(path, m);
    if b.is_empty() {
        return Err(err("empty file: not a .npy array".into()));
    }
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err(err(
            "not a .npy array: it does not start with the magic \\x93NUMPY".into(),
        ));
    }
    let (len, start): (usize, usize) = match b[6] {
        1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10),
        2 | 3 if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
        v => {
            return Err(err(format!(
                ".npy format version {v} is not read (1, 2 or 3)"
            )))
        }
    };
    let end = start
        .checked_add(len)
        .filter(|&e| e <= b.len())
        .ok_or_else(|| {
            err(format!(
                "the .npy header says it is {len} bytes long, past the end of the {}-byte file",
                b.len()
            ))
        })?;
    let header = std::str::from_utf8(&b[start..end])
        .map_err(|_| err("the .npy header is not text".into()))?;
    let descr = dict_value(header, "descr")
        .ok_or_else(|| err(format!("the .npy header has no 'descr': {}", header.trim())))?;
    let dtype = parse_descr(descr.trim_matches(|c| c == '\'' || c == '"'))
        .map_err(|m| err(format!("{m} (descr {descr})")))?;
    if dict_value(header, "fortran_order").is_some_and(|v| v.trim() == "True") {
        return Err(err(
            "a Fortran-ordered array is not read: save a C-ordered one (np.ascontiguousarray)"
                .into(),
        ));
    }
    let shape = dict_value(header, "shape")
        .ok_or_else(|| err(format!("the .npy header has no 'shape': {}", header.trim())))?;
    let shape = parse_shape(shape).map_err(|m| err(format!("shape {shape}: {m}")))?;
    let data = &b[end..];
    let need = shape
        .iter()
        .try_fold(dtype.size(), |acc, &d| acc.checked_mul(d));
    match need {
        Some(n) if n == data.len() => Ok(Array { shape, dtype, data }),
        Some(n) => Err(err(format!(
            "the header's shape {shape:?} of {}-byte elements needs {n} data bytes, the file \
             holds {} (truncated or damaged)",
            dtype.size(),
            data.len()
        ))),
        None => Err(err(format!("the header's shape {shape:?} overflows"))),
    }
}

/// The text of `'key': value` in a .npy header dict (up to the next top-level comma).
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = &header[at + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
    }
    Some(rest.trim())
}

fn parse_descr(d: &str) -> Result<Dtype, String> {
    let (order, code) = match d.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &d[1..]),
        _ => ('|', d),
    };
    let t = match code {
        "u1" | "B" => Dtype::U8,
        "i1" | "b" => Dtype::I8,
        "f4" => Dtype::F32,
        "i2" | "i4" | "i8" | "u2" | "u4" | "u8" => Dtype::Int {
            bytes: code[1..].parse().unwrap_or(8),
            signed: code.starts_with('i'),
        },
        _ => {
            return Err(format!(
                "element type `{d}` is not read: images are uint8 or float32, labels integers"
            ))
        }
    };
    if order == '>' && t.size() > 1 {
        return Err(format!(
            "big-endian `{d}` is not read: save little-endian ('<') data"
        ));
    }
    Ok(t)
}

fn parse_shape(s: &str) -> Result<Vec<usize>, String> {
    let inner = s
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or("not a tuple")?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.trim_end_matches('L')
                .parse::<usize>()
                .map_err(|_| format!("`{p}` is not a dimension"))
        })
        .collect()
}

/// Images from an array of `layout`.
pub fn images(path: &Path, a: &Array<'_>, layout: Layout) -> Result<RawImages, DataError> {
    let err = |m: String| format_err(path, m);
    let (n, c, h, w) = match (layout, a.shape.as_slice()) {
        (Layout::Nhwc, &[n, h, w, c]) => (n, c, h, w),
        (Layout::Nchw, &[n, c, h, w]) => (n, c, h, w),
        (Layout::Nhw, &[n, h, w]) => (n, 1, h, w),
        (l, s) => {
            return Err(err(format!(
                "the image array has shape {s:?}, but layout = \"{}\" needs {} axes",
                match l {
                    Layout::Nhwc => "nhwc",
                    Layout::Nchw => "nchw",
                    Layout::Nhw => "nhw",
                },
                if l == Layout::Nhw { 3 } else { 4 }
            )))
        }
    };
    if n == 0 || c == 0 || h == 0 || w == 0 {
        return Err(err(format!(
            "the image array of shape {:?} is empty",
            a.shape
        )));
    }
    if c > 64 {
        return Err(err(format!(
            "{c} channels per image (shape {:?}): is the layout right? (at most 64)",
            a.shape
        )));
    }
    let per = c * h * w;
    let pixels = match a.dtype {
        Dtype::U8 => Pixels::U8 {
            data: to_nchw(a.data, n, c, h, w, layout),
            max_value: 255,
        },
        Dtype::F32 => {
            let v: Vec<f32> = a
                .data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            check_finite(path, &v, per)?;
            Pixels::F32(to_nchw(&v, n, c, h, w, layout))
        }
        t => {
            return Err(err(format!(
                "the image array's elements are {t:?}: images are uint8 or float32"
            )))
        }
    };
    Ok(RawImages {
        channels: c,
        height: h,
        width: w,
        pixels,
        labels: vec![],
        classes: 0,
    })
}

/// `v` (n examples of `layout`) in NCHW order.
fn to_nchw<T: Copy>(v: &[T], n: usize, c: usize, h: usize, w: usize, layout: Layout) -> Vec<T> {
    if layout != Layout::Nhwc || c == 1 {
        return v.to_vec();
    }
    let mut out = Vec::with_capacity(v.len());
    for e in v.chunks_exact(h * w * c) {
        for ch in 0..c {
            out.extend((0..h * w).map(|p| e[p * c + ch]));
        }
    }
    debug_assert_eq!(out.len(), n * c * h * w);
    out
}

/// Labels (integers, shape (N,) or (N, 1)) below `classes`.
pub fn labels(path: &Path, a: &Array<'_>, classes: usize) -> Result<Vec<u8>, DataError> {
    let err = |m: String| format_err(path, m);
    let n = match a.shape.as_slice() {
        &[n] | &[n, 1] => n,
        s => {
            return Err(err(format!(
            "the label array has shape {s:?}: labels are one integer per example, (N,) or (N, 1)"
        )))
        }
    };
    let size = a.dtype.size();
    let signed = matches!(a.dtype, Dtype::I8 | Dtype::Int { signed: true, .. });
    if a.dtype == Dtype::F32 {
        return Err(err("the labels are float32: labels must be integers".into()));
    }
    let mut out = Vec::with_capacity(n);
    for (i, b) in a.data.chunks_exact(size).enumerate() {
        let mut buf = [0u8; 8];
        buf[..size].copy_from_slice(b);
        let raw = u64::from_le_bytes(buf);
        // sign-extend
        let v: i128 = if signed && b[size - 1] & 0x80 != 0 {
            raw as i128 - (1i128 << (8 * size))
        } else {
            raw as i128
        };
        if v < 0 || v >= classes as i128 {
            return Err(err(format!(
                "label {v} of example {i} is outside the {classes} classes (0 … {})",
                classes - 1
            )));
        }
        out.push(v as u8);
    }
    check_labels(path, &out, classes)?;
    Ok(out)
}

/// Pairs images and labels (counts must agree).
pub fn pair(
    images_path: &Path,
    mut im: RawImages,
    labels_path: &Path,
    labels: Vec<u8>,
    classes: usize,
) -> Result<RawImages, DataError> {
    if labels.len() != im.pixels.len() / im.example_len() {
        return Err(format_err(
            labels_path,
            format!(
                "{} labels but {} holds {} images",
                labels.len(),
                images_path.display(),
                im.pixels.len() / im.example_len()
            ),
        ));
    }
    im.labels = labels;
    im.classes = classes;
    Ok(im)
}

/// The member `name` (or `name.npy`) of the archive `b`, decompressed, at most `cap` bytes.
pub fn npz_member(
    path: &Path,
    b: &[u8],
    name: &str,
    cap: crate::data::read::ReadCap,
) -> Result<Vec<u8>, DataError> {
    let err = |m: String| format_err(path, m);
    if b.is_empty() {
        return Err(err("empty file: not a .npz archive".into()));
    }
    check_zip_directory(b).map_err(|m| err(format!("not a readable .npz (zip) archive: {m}")))?;
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(b))
        .map_err(|e| err(format!("not a .npz (zip) archive: {e}")))?;
    let names: Vec<String> = zip.file_names().map(str::to_string).collect();
    let want = [name.to_string(), format!("{name}.npy")];
    let Some(found) = names.iter().find(|n| want.contains(n)) else {
        let mut arrays: Vec<&str> = names
            .iter()
            .map(|n| n.strip_suffix(".npy").unwrap_or(n))
            .collect();
        arrays.sort();
        return Err(err(format!(
            "the archive has no array `{name}` (it holds {})",
            arrays.join(", ")
        )));
    };
    let f = zip
        .by_name(found)
        .map_err(|e| err(format!("cannot read array `{name}`: {e}")))?;
    let mut out = Vec::new();
    let read = f.take(cap.bytes + 1).read_to_end(&mut out);
    if read
        .as_ref()
        .is_err_and(|e| e.kind() == std::io::ErrorKind::OutOfMemory)
        || out.len() as u64 > cap.bytes
    {
        return Err(err(format!(
            "array `{name}` is too large when decompressed: {}",
            cap.past(out.len())
        )));
    }
    read.map_err(|e| err(format!("cannot decompress array `{name}`: {e}")))?;
    Ok(out)
}

/// The zip directory's entry count and offset checked against the archive's length before the
/// zip reader sizes anything by them (a damaged ZIP64 record may claim 2^60 entries): every entry
/// takes at least 46 bytes of central directory.
fn check_zip_directory(b: &[u8]) -> Result<(), String> {
    let le = |at: usize, n: usize| -> Option<u64> {
        let s = b.get(at..at + n)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(s);
        Some(u64::from_le_bytes(v))
    };
    let len = b.len() as u64;
    let lo = b.len().saturating_sub(22 + 65_535);
    let Some(eocd) = (lo..b.len().saturating_sub(21))
        .rev()
        .find(|&i| le(i, 4) == Some(0x0605_4b50))
    else {
        return Ok(()); // no directory: the zip reader says so
    };
    let mut entries = le(eocd + 10, 2).unwrap_or(0);
    let mut offset = le(eocd + 16, 4).unwrap_or(0);
    let zip64 = entries == 0xFFFF || offset == 0xFFFF_FFFF;
    if zip64 && eocd >= 20 && le(eocd - 20, 4) == Some(0x0706_4b50) {
        let at = le(eocd - 20 + 8, 8).unwrap_or(u64::MAX);
        let at = usize::try_from(at).map_err(|_| "its ZIP64 record is past the end")?;
        if le(at, 4) != Some(0x0606_4b50) {
            return Err("its ZIP64 record is damaged".into());
        }
        entries = le(at + 32, 8).unwrap_or(u64::MAX);
        offset = le(at + 48, 8).unwrap_or(u64::MAX);
    }
    if offset > len || entries > len / 46 {
        return Err(format!(
            "its directory claims {entries} entries at byte {offset} of a {len}-byte file"
        ));
    }
    Ok(())
}

/// A .npy file's bytes: a version 1.0 header (padded to 64 bytes), then `data`.
pub fn npy_file(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A .npz archive of `arrays` (name, .npy bytes), deflate-compressed as `np.savez_compressed`
/// writes them.
pub fn npz_file(arrays: &[(&str, Vec<u8>)]) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in arrays {
        w.start_file(format!("{name}.npy"), opts)
            .and_then(|_| w.write_all(bytes).map_err(Into::into))
            .expect("writing to memory");
    }
    w.finish().expect("writing to memory").into_inner()
}

/// 20 images of 2×2 (uint8, NHW) and their labels 0…9 twice.
fn sample_arrays() -> (Vec<u8>, Vec<u8>) {
    let px: Vec<u8> = (0..80).map(|i| (i * 3) as u8).collect();
    let y: Vec<u8> = (0..20).map(|i| i % 10).collect();
    (
        npy_file("|u1", &[20, 2, 2], &px),
        npy_file("|u1", &[20], &y),
    )
}

fn sample(archive: bool) -> Sample {
    let (x, y) = sample_arrays();
    if archive {
        return Sample {
            files: vec![("data.npz".into(), npz_file(&[("x_train", x), ("y_train", y)]))],
            table: "format = \"npz\"\ntrain = { file = \"data.npz\", images = \"x_train\", labels = \"y_train\" }\nlayout = \"nhw\"\nclasses = 10".into(),
        };
    }
    Sample {
        files: vec![("x_train.npy".into(), x), ("y_train.npy".into(), y)],
        table: "format = \"npy\"\ntrain = { images = \"x_train.npy\", labels = \"y_train.npy\" }\nlayout = \"nhw\"\nclasses = 10".into(),
    }
}

fn hostile_npy() -> Vec<Hostile> {
    let (x, y) = ("x_train.npy", "y_train.npy");
    let mut inf = vec![];
    for i in 0..80 {
        inf.extend_from_slice(&(if i == 13 { f32::INFINITY } else { 0.5f32 }).to_le_bytes());
    }
    let file = |name: &str, bytes: Vec<u8>| vec![(name.to_string(), bytes)];
    vec![
        Hostile::file(
            "an infinity",
            file(x, npy_file("<f4", &[20, 2, 2], &inf)),
            x,
            &["inf", "example 3"],
        ),
        Hostile::file(
            "a shape past the end",
            file(x, npy_file("|u1", &[1_000_000_000_000, 28, 28], &[0; 16])),
            x,
            &["data bytes"],
        ),
        Hostile::file(
            "a zip where an array is expected",
            file(x, b"PK\x03\x04 this is a zip, not an array".to_vec()),
            x,
            &["NUMPY"],
        ),
        Hostile::file(
            "counts differ",
            file(y, npy_file("|u1", &[19], &[1; 19])),
            y,
            &["19 labels", "20 images"],
        ),
        Hostile::file(
            "a negative label",
            file(y, npy_file("<i4", &[20], &(-1i32).to_le_bytes().repeat(20))),
            y,
            &["label -1"],
        ),
        Hostile::file(
            "big-endian floats",
            file(x, npy_file(">f4", &[20, 2, 2], &[0; 320])),
            x,
            &["big-endian"],
        ),
        Hostile::file(
            "a layout of another rank",
            vec![],
            x,
            &["4 axes"],
        )
        .with_table("format = \"npy\"\ntrain = { images = \"x_train.npy\", labels = \"y_train.npy\" }\nlayout = \"nchw\"\nclasses = 10"),
    ]
}

fn hostile_npz() -> Vec<Hostile> {
    let (x, y) = sample_arrays();
    // a ZIP64 directory that claims 2^40 entries (sized before anything is read)
    let mut z = b"PK\x03\x04 junk".to_vec();
    let at = z.len() as u64;
    z.extend(0x0606_4b50u32.to_le_bytes());
    z.extend(44u64.to_le_bytes());
    z.extend([45, 0, 45, 0]);
    z.extend([0; 8]);
    z.extend((1u64 << 40).to_le_bytes());
    z.extend((1u64 << 40).to_le_bytes());
    z.extend(100u64.to_le_bytes());
    z.extend(0u64.to_le_bytes());
    z.extend(0x0706_4b50u32.to_le_bytes());
    z.extend(0u32.to_le_bytes());
    z.extend(at.to_le_bytes());
    z.extend(1u32.to_le_bytes());
    z.extend(0x0605_4b50u32.to_le_bytes());
    z.extend([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    z.extend([0xff; 8]);
    z.extend([0, 0]);
    let npz = "data.npz";
    vec![
        Hostile::file(
            "a directory past the end",
            vec![(npz.into(), z)],
            npz,
            &["1099511627776 entries"],
        ),
        Hostile::file(
            "no such array",
            vec![(
                npz.into(),
                npz_file(&[("x_test", x.clone()), ("y_train", y.clone())]),
            )],
            npz,
            &["no array `x_train`", "x_test, y_train"],
        ),
        Hostile::file(
            "an array that is not one",
            vec![(
                npz.into(),
                npz_file(&[("x_train", b"not an array".to_vec()), ("y_train", y)]),
            )],
            &format!("{npz}/x_train"),
            &["not a .npy array"],
        ),
        Hostile::file(
            "not a zip archive",
            vec![(npz.into(), x)],
            npz,
            &["not a .npz (zip) archive"],
        ),
    ]
}
