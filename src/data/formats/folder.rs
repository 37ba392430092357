//! ImageFolder: `DIR/CLASS/IMAGE.png|jpg|jpeg`, one folder per class (the classes are the
//! folders' names in sorted order; label i = the i-th). Only PNG and JPEG files are read (other
//! files are not images and are passed over, as torchvision's ImageFolder does); every image
//! must have the same size and channel count (8-bit grey or RGB), the preset's or the first
//! image's. A folder inside a class folder, a class folder without images, an unreadable entry
//! (a symlink loop, a FIFO named like an image) are errors naming the path.

use std::path::{Path, PathBuf};

use super::{format_err, Pixels, RawImages};
use crate::data::digest::{DataFileRecord, Manifest};
use crate::data::{files, DataError};

/// The images of a folder, in class then file-name order: (class index, path relative to the
/// folder, full path), and the class names.
type Walk = (Vec<(usize, String, PathBuf)>, Vec<String>);

fn is_image_name(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["png", "jpg", "jpeg"].contains(&e.to_ascii_lowercase().as_str()))
}

/// Sorted entries of a folder: (name, path, metadata following symlinks).
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, std::fs::Metadata)>, DataError> {
    let rd = std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))?;
    let mut out = vec![];
    for e in rd {
        let e = e.map_err(|e| DataError::io(dir, e))?;
        let path = e.path();
        let meta = std::fs::metadata(&path).map_err(|e| DataError::io(&path, e))?;
        out.push((e.file_name().to_string_lossy().into_owned(), path, meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Walks `dir`: its class folders and their images.
pub fn walk(dir: &Path) -> Result<Walk, DataError> {
    let meta = std::fs::metadata(dir).map_err(|e| DataError::io(dir, e))?;
    if !meta.is_dir() {
        return Err(format_err(
            dir,
            format!(
                "image-folder takes a folder of class folders, and this is {}",
                files::file_kind(&meta)
            ),
        ));
    }
    let classes: Vec<(String, PathBuf)> = entries(dir)?
        .into_iter()
        .filter(|(name, _, m)| m.is_dir() && !name.starts_with('.'))
        .map(|(name, p, _)| (name, p))
        .collect();
    if classes.is_empty() {
        return Err(format_err(
            dir,
            "no class folders: image-folder reads DIR/CLASS/IMAGE.png, one folder per class",
        ));
    }
    if classes.len() > crate::data::spec::MAX_CLASSES {
        return Err(format_err(
            dir,
            format!(
                "{} class folders: at most {} classes",
                classes.len(),
                crate::data::spec::MAX_CLASSES
            ),
        ));
    }
    let mut images = vec![];
    for (c, (class, cdir)) in classes.iter().enumerate() {
        let before = images.len();
        for (name, path, m) in entries(cdir)? {
            if m.is_dir() {
                return Err(format_err(
                    &path,
                    "a folder inside a class folder: image-folder reads the images directly in \
                     each class folder",
                ));
            }
            if is_image_name(&path) {
                images.push((c, format!("{class}/{name}"), path));
            }
        }
        if images.len() == before {
            return Err(format_err(cdir, "class folder without PNG or JPEG images"));
        }
    }
    Ok((images, classes.into_iter().map(|(n, _)| n).collect()))
}

/// The record of a folder as it is now (its manifest), for the run-log check.
pub fn manifest(dir: &Path) -> Result<DataFileRecord, DataError> {
    let (images, _) = walk(dir)?;
    let mut m = Manifest::default();
    for (_, rel, path) in images {
        let bytes = files::read_regular(&path).map_err(|e| DataError::io(&path, e))?;
        m.add(&rel, &bytes);
    }
    Ok(m.record(dir))
}

/// Reads and decodes a folder. `size` ([h, w]) and `channels` are what every image must have
/// (the first image's when not given); `classes` the train folder's class names, which a
/// validation folder must have too.
pub fn read(
    dir: &Path,
    size: Option<[usize; 2]>,
    channels: Option<usize>,
    classes: Option<&[String]>,
) -> Result<(RawImages, Vec<String>, DataFileRecord), DataError> {
    let (images, names) = walk(dir)?;
    if let Some(train) = classes {
        if train != names.as_slice() {
            return Err(format_err(
                dir,
                format!(
                    "its class folders ({}) are not the training folder's ({})",
                    names.join(", "),
                    train.join(", ")
                ),
            ));
        }
    }
    let mut want = size.map(|[h, w]| (h, w, channels));
    let mut pixels = vec![];
    let mut labels = Vec::with_capacity(images.len());
    let mut m = Manifest::default();
    let mut shape = (0, 0, 0);
    for (c, rel, path) in images {
        let bytes = files::read_regular(&path).map_err(|e| DataError::io(&path, e))?;
        m.add(&rel, &bytes);
        let (chw, s) = decode(&path, &bytes, &mut want, channels)?;
        shape = s;
        pixels.extend_from_slice(&chw);
        labels.push(c as u8);
    }
    let (c, h, w) = shape;
    Ok((
        RawImages {
            channels: c,
            height: h,
            width: w,
            pixels: Pixels::U8 {
                data: pixels,
                max_value: 255,
            },
            labels,
            classes: names.len(),
        },
        names,
        m.record(dir),
    ))
}

/// (channels, height, width) of an image.
type Shape = (usize, usize, usize);

/// Largest side of an image read, and most pixels (checked from its header before it is decoded).
const MAX_SIDE: usize = 1 << 14;
const MAX_PIXELS: usize = 1 << 24;

/// One image as channel-major bytes, with its (channels, height, width). `want` holds the size
/// (and channels) every image must have; the first image sets what is not given.
fn decode(
    path: &Path,
    bytes: &[u8],
    want: &mut Option<(usize, usize, Option<usize>)>,
    channels: Option<usize>,
) -> Result<(Vec<u8>, Shape), DataError> {
    use image::ImageDecoder;
    let err = |m: String| format_err(path, m);
    if bytes.is_empty() {
        return Err(err("empty file: not an image".into()));
    }
    let reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| err(format!("cannot read: {e}")))?;
    if !matches!(
        reader.format(),
        Some(image::ImageFormat::Png | image::ImageFormat::Jpeg)
    ) {
        return Err(err("not a PNG or JPEG image (by its content)".into()));
    }
    let decoder = reader
        .into_decoder()
        .map_err(|e| err(format!("not a readable image: {e}")))?;
    let (w, h) = decoder.dimensions();
    let (w, h) = (w as usize, h as usize);
    let c = match decoder.color_type() {
        image::ColorType::L8 => 1,
        image::ColorType::Rgb8 => 3,
        other => {
            return Err(err(format!(
                "its pixels are {other:?}: images are read as 8-bit grey (1 channel) or RGB (3 \
                 channels); convert it (e.g. drop the alpha channel)"
            )))
        }
    };
    if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE || w * h > MAX_PIXELS {
        return Err(err(format!(
            "an image of {w}×{h} pixels (each side 1 to {MAX_SIDE}, at most {MAX_PIXELS} pixels)"
        )));
    }
    let (wh, ww, wc) = *want.get_or_insert((h, w, channels.or(Some(c))));
    if (h, w) != (wh, ww) {
        return Err(err(format!(
            "the image is {h}×{w} (height × width), the others {wh}×{ww}: every image must have \
             the same size"
        )));
    }
    let wc = wc.unwrap_or(c);
    if want.is_some_and(|w| w.2.is_none()) {
        *want = Some((wh, ww, Some(c)));
    }
    if c != wc {
        return Err(err(format!(
            "the image has {c} channel(s), the others {wc}: every image must have the same \
             channels (grey or RGB)"
        )));
    }
    let mut hwc = vec![0u8; h * w * c];
    decoder
        .read_image(&mut hwc)
        .map_err(|e| err(format!("cannot decode the image: {e}")))?;
    let mut chw = Vec::with_capacity(hwc.len());
    for ch in 0..c {
        chw.extend(hwc.iter().skip(ch).step_by(c));
    }
    Ok((chw, (c, h, w)))
}
