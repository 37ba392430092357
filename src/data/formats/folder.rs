//! ImageFolder: `DIR/CLASS/IMAGE.png|jpg|jpeg`, one folder per class (the classes are the
//! folders' names in sorted order; label i = the i-th). Only PNG and JPEG files are read (other
//! files are not images and are passed over, as torchvision's ImageFolder does); every image
//! must have the same size and channel count (8-bit grey or RGB): the preset's `image_size` /
//! `channels`, else the most common among the images. An image that differs is an error naming
//! it and an image that has the size; a preset size no image has is the preset's error at its
//! key. A folder inside a class folder, a class folder without images, an unreadable entry (a
//! symlink loop, a FIFO named like an image) are errors naming the path.
//! `format = "image-folder"`, `train = "train/"`.

use std::path::{Path, PathBuf};

use super::{
    format_err, problem, Decoded, Decoder, Files, FormatDef, Hostile, PartData, PartShape, Pixels,
    RawImages, Sample,
};
use crate::data::digest::{DataFileRecord, Manifest};
use crate::data::spec::{DatasetSpec, Part, SpecProblem};
use crate::data::{files, DataError};

pub const IMAGE_FOLDER: FormatDef = FormatDef {
    name: "image-folder",
    part: PartShape::Folder,
    train: "\"train/\"",
    keys: &["image_size", "channels"],
    keys_doc: "`image_size = [h, w]`, `channels = 1 \\| 3`",
    notes: "a folder of class folders; PNG/JPEG; classes = folder names, sorted",
    decoder,
    sample,
    hostile,
};

fn decoder(spec: &DatasetSpec) -> Result<Decoder, SpecProblem> {
    if let Some([h, w]) = spec.image_size {
        if h == 0 || w == 0 || h > MAX_SIDE || w > MAX_SIDE {
            return Err(problem(
                "image_size",
                format!("image_size [{h}, {w}]: each side must be 1 to {MAX_SIDE} pixels"),
            ));
        }
    }
    if let Some(c) = spec.channels.filter(|c| ![1, 3].contains(c)) {
        return Err(problem(
            "channels",
            format!("channels = {c}: images are read as 1 (grey) or 3 (RGB) channels"),
        ));
    }
    Ok(Decoder::ImageFolder {
        size: spec.image_size,
        channels: spec.channels,
    })
}

/// The folder a part names, read and recorded (its manifest), with its class names.
pub fn read_part(
    part: &Part,
    files: &mut dyn Files,
    size: Option<[usize; 2]>,
    channels: Option<usize>,
    train_classes: Option<&[String]>,
) -> Result<PartData, DataError> {
    let dir = files.folder(super::file_names(part)[0]);
    let (im, names, rec) = read(&dir, size, channels, train_classes)?;
    files.record(rec);
    Ok(PartData {
        data: Decoded::Images(im),
        class_names: Some(names),
    })
}

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
/// (the most common among the images when not given); `classes` the train folder's class names,
/// which a validation folder must have too.
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
    let mut pixels = vec![];
    let mut labels = Vec::with_capacity(images.len());
    let mut shapes: Vec<Shape> = Vec::with_capacity(images.len());
    let mut m = Manifest::default();
    for (c, rel, path) in &images {
        let bytes = files::read_regular(path).map_err(|e| DataError::io(path, e))?;
        m.add(rel, &bytes);
        let (chw, s) = decode(path, &bytes)?;
        // the pixels of images of the first one's shape (when the shapes differ, the folder is
        // an error below)
        if shapes.first().is_none_or(|&first| first == s) {
            pixels.extend_from_slice(&chw);
        }
        shapes.push(s);
        labels.push(*c as u8);
    }
    let (c, h, w) = agreed_shape(dir, &images, &shapes, size, channels)?;
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

/// The most common value among `values` (a tie: the one seen first), with its count.
fn most_common<T: PartialEq + Copy>(values: impl Iterator<Item = T>) -> Option<(T, usize)> {
    let mut counts: Vec<(T, usize)> = vec![];
    for v in values {
        match counts.iter_mut().find(|(u, _)| *u == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    // `max_by_key` keeps the last of equal counts: reversed, the first seen
    counts.into_iter().rev().max_by_key(|&(_, n)| n)
}

/// The values among `values` and how many images have each, most common first ("8×8 (1,796),
/// 10×10 (1)").
fn tally<T: PartialEq + Copy>(
    values: impl Iterator<Item = T>,
    show: impl Fn(T) -> String,
) -> String {
    let mut counts: Vec<(T, usize)> = vec![];
    for v in values {
        match counts.iter_mut().find(|(u, _)| *u == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    counts.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let shown: Vec<String> = counts
        .iter()
        .take(4)
        .map(|&(v, n)| format!("{} ({n})", show(v)))
        .collect();
    let more = if counts.len() > 4 { ", …" } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// The shape every image of the folder has: the size the preset sets, else the most common;
/// then the channels likewise. A preset value no image has is the preset's error at its key;
/// an image that differs is an error naming it, how many differ, and the first image that has
/// what it should.
fn agreed_shape(
    dir: &Path,
    images: &[(usize, String, PathBuf)],
    shapes: &[Shape],
    size: Option<[usize; 2]>,
    channels: Option<usize>,
) -> Result<Shape, DataError> {
    let n = shapes.len();
    let hw = |s: &Shape| (s.1, s.2);
    let (wh, ww) = match size {
        Some([h, w]) => (h, w),
        None => {
            most_common(shapes.iter().map(hw))
                .expect("a class folder has images")
                .0
        }
    };
    let fits = |s: &Shape| hw(s) == (wh, ww);
    let with = shapes.iter().filter(|s| fits(s)).count();
    if with == 0 {
        return Err(DataError::Setting {
            key: "image_size",
            message: format!(
                "image_size = [{wh}, {ww}]: no image in {} is {wh}×{ww} (height × width); its {n} \
                 images are {}",
                dir.display(),
                tally(shapes.iter().map(hw), |(h, w)| format!("{h}×{w}"))
            ),
        });
    }
    if let Some(odd) = shapes.iter().position(|s| !fits(s)) {
        let first = shapes.iter().position(fits).expect("with > 0");
        let (h, w) = hw(&shapes[odd]);
        let set_by = match size {
            Some(_) => format!("the preset's image_size [{wh}, {ww}]"),
            None => format!("{wh}×{ww}, the size of most images"),
        };
        return Err(format_err(
            &images[odd].2,
            format!(
                "the image is {h}×{w} (height × width), but every image must be {set_by}: {with} \
                 of the {n} are (the first: {}), {} differ{}",
                images[first].1,
                n - with,
                if n - with == 1 { "s" } else { "" }
            ),
        ));
    }
    let wc = match channels {
        Some(c) => c,
        None => {
            most_common(shapes.iter().map(|s| s.0))
                .expect("a class folder has images")
                .0
        }
    };
    let with = shapes.iter().filter(|s| s.0 == wc).count();
    if with == 0 {
        return Err(DataError::Setting {
            key: "channels",
            message: format!(
                "channels = {wc}: no image in {} has {wc} channel(s); its {n} images have {}",
                dir.display(),
                tally(shapes.iter().map(|s| s.0), |c| c.to_string())
            ),
        });
    }
    if let Some(odd) = shapes.iter().position(|s| s.0 != wc) {
        let first = shapes.iter().position(|s| s.0 == wc).expect("with > 0");
        let set_by = match channels {
            Some(_) => format!("the preset's channels = {wc}"),
            None => format!("{wc}, as most images have"),
        };
        return Err(format_err(
            &images[odd].2,
            format!(
                "the image has {} channel(s), but every image must have {set_by} (grey 1, RGB 3): \
                 {with} of the {n} have (the first: {}), {} differ{}",
                shapes[odd].0,
                images[first].1,
                n - with,
                if n - with == 1 { "s" } else { "" }
            ),
        ));
    }
    Ok((wc, wh, ww))
}

/// One image as channel-major bytes, with its (channels, height, width).
fn decode(path: &Path, bytes: &[u8]) -> Result<(Vec<u8>, Shape), DataError> {
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

/// A PNG of `w`×`h` pixels of `channels` (1 grey, 3 RGB, 4 RGBA), pixel values from `seed`.
pub fn png_file(w: u32, h: u32, channels: u8, seed: u8) -> Vec<u8> {
    let px = |x: u32, y: u32, k: u32| seed.wrapping_add((x * 7 + y * 13 + k * 29) as u8);
    let mut out = std::io::Cursor::new(Vec::new());
    let written = match channels {
        1 => image::GrayImage::from_fn(w, h, |x, y| image::Luma([px(x, y, 0)]))
            .write_to(&mut out, image::ImageFormat::Png),
        3 => image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([px(x, y, 0), px(x, y, 1), px(x, y, 2)])
        })
        .write_to(&mut out, image::ImageFormat::Png),
        _ => image::RgbaImage::from_fn(w, h, |x, y| {
            image::Rgba([px(x, y, 0), px(x, y, 1), px(x, y, 2), 255])
        })
        .write_to(&mut out, image::ImageFormat::Png),
    };
    written.expect("encoding to memory");
    out.into_inner()
}

/// `train/<class>/<i>.png`: 20 grey images of 2×2 in two classes, `odd` replacing some.
fn images(odd: &[(usize, u32, u32, u8)]) -> Vec<(String, Vec<u8>)> {
    (0..20)
        .map(|i| {
            let (w, h, c) = odd
                .iter()
                .find(|o| o.0 == i)
                .map_or((2, 2, 1), |o| (o.1, o.2, o.3));
            (
                format!("train/{}/{i:04}.png", ["cat", "dog"][i % 2]),
                png_file(w, h, c, i as u8),
            )
        })
        .collect()
}

const TABLE: &str = "format = \"image-folder\"\ntrain = \"train\"";

fn sample() -> Sample {
    Sample {
        files: images(&[]),
        table: TABLE.into(),
    }
}

fn hostile() -> Vec<Hostile> {
    let with_keys = |keys: &str| format!("{TABLE}\n{keys}");
    vec![
        Hostile::file(
            "no class folders",
            vec![("flat/a.png".into(), png_file(2, 2, 1, 0))],
            "flat",
            &["no class folders"],
        )
        .with_table("format = \"image-folder\"\ntrain = \"flat\""),
        Hostile::file(
            "the first image of another size",
            images(&[(0, 3, 3, 1)]),
            "train/cat/0000.png",
            &[
                "3×3",
                "2×2, the size of most images",
                "19 of the 20",
                "cat/0002.png",
                "1 differs",
            ],
        ),
        Hostile::file(
            "a later image of another size",
            images(&[(7, 2, 3, 1)]),
            "train/dog/0007.png",
            &[
                "3×2",
                "2×2, the size of most images",
                "19 of the 20",
                "cat/0000.png",
            ],
        ),
        Hostile::file(
            "an image of other channels",
            images(&[(0, 2, 2, 3)]),
            "train/cat/0000.png",
            &["3 channel(s)", "1, as most images have", "cat/0002.png"],
        ),
        Hostile::file(
            "an RGBA image",
            images(&[(5, 2, 2, 4)]),
            "train/dog/0005.png",
            &["Rgba8", "channels"],
        ),
        Hostile::file(
            "a file that is not an image",
            vec![(
                "train/dog/0003.png".into(),
                b"plain text, not a picture".to_vec(),
            )],
            "train/dog/0003.png",
            &["not a PNG or JPEG"],
        ),
        Hostile::file(
            "a class without images",
            vec![("train/emu/".into(), vec![])],
            "train/emu",
            &["without PNG or JPEG"],
        ),
        Hostile::file(
            "a folder inside a class folder",
            vec![("train/cat/more/".into(), vec![])],
            "train/cat/more",
            &["a folder inside a class folder"],
        ),
        Hostile::file(
            "validation classes that are not the training ones",
            vec![("val/cat/0.png".into(), png_file(2, 2, 1, 0))],
            "val",
            &["(cat)", "(cat, dog)"],
        )
        .with_table(with_keys("val = \"val\"")),
        Hostile {
            name: "an image_size no image has",
            files: vec![],
            table: Some(with_keys("image_size = [3, 3]")),
            blames: super::Blame::Key("image_size"),
            says: vec!["image_size = [3, 3]", "no image", "2×2 (20)"],
        },
        Hostile {
            name: "channels no image has",
            files: vec![],
            table: Some(with_keys("channels = 3")),
            blames: super::Blame::Key("channels"),
            says: vec!["channels = 3", "no image", "1 (20)"],
        },
    ]
}
