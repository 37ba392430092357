//! Datasets from files: each format written by the test in its documented layout, loaded through
//! the one loader (`load`), and checked example by example.

use std::path::{Path, PathBuf};

use super::*;

/// A byte as the loader scales it (× 1/255, as the bundled datasets always were).
fn px(b: usize) -> f32 {
    b as f32 * (1.0 / 255.0)
}

/// A .npy file's bytes: version 1.0 header (padded to 64 bytes) then `data`.
pub(crate) fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
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

/// A .npz archive of `arrays` (name, .npy bytes), deflate-compressed.
pub(crate) fn npz(arrays: &[(&str, Vec<u8>)]) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in arrays {
        w.start_file(format!("{name}.npy"), opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The format named `name` (as a preset names it).
fn fmt(name: &str) -> Format {
    Format::named(name).expect(name)
}

fn files_spec(format: Format, train: Part, dir: &Path) -> DatasetSpec {
    DatasetSpec {
        dir: Some(dir.display().to_string()),
        ..DatasetSpec::files(format, train)
    }
}

fn one(name: &str) -> Part {
    Part::Files(vec![name.to_string()])
}

/// n CIFAR records: label bytes `labels(i)`, pixel k of record i = (i·7 + k) mod 256.
fn cifar_records(n: usize, labels: impl Fn(usize) -> Vec<u8>) -> Vec<u8> {
    let mut b = vec![];
    for i in 0..n {
        b.extend(labels(i));
        b.extend((0..3072).map(|k| ((i * 7 + k) % 256) as u8));
    }
    b
}

#[test]
fn a_cifar10_file_loads_to_its_labels_and_pixels() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "b1.bin",
        &cifar_records(30, |i| vec![(i % 10) as u8]),
    );
    write(
        dir.path(),
        "b2.bin",
        &cifar_records(5, |i| vec![9 - i as u8]),
    );
    write(
        dir.path(),
        "test.bin",
        &cifar_records(12, |i| vec![(i % 3) as u8]),
    );
    let mut s = files_spec(
        fmt("cifar10"),
        Part::Files(vec!["b1.bin".into(), "b2.bin".into()]),
        dir.path(),
    );
    s.val = Some(one("test.bin"));
    let d = load(&s).unwrap();
    let im = d.as_images().unwrap();
    assert_eq!(
        (im.channels, im.height, im.width, im.classes),
        (3, 32, 32, 10)
    );
    // the training files in order (the batcher shuffles), the second after the first
    assert_eq!(im.n_train(), 35);
    let want_y: Vec<u8> = (0..30)
        .map(|i| (i % 10) as u8)
        .chain((0..5).map(|i| 9 - i))
        .collect();
    assert_eq!(im.train_y, want_y);
    // record layout: channel-major planes, pixel k of the record at index k of the example
    for (i, file_i) in [(0usize, 0usize), (17, 17), (31, 1)] {
        let x = &im.train_x[i * 3072..(i + 1) * 3072];
        for k in [0, 1, 1023, 1024, 2048, 3071] {
            assert_eq!(x[k], px((file_i * 7 + k) % 256), "example {i} pixel {k}");
        }
    }
    // the validation file, in a seeded order
    assert_eq!((im.n_val(), im.split.method.as_str()), (12, "files"));
    let mut vy = im.val_y.clone();
    vy.sort();
    assert_eq!(vy, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    // every file recorded with its size and digest
    let rec = d.files();
    assert_eq!(rec.len(), 3);
    assert!(rec[0].path.ends_with("b1.bin") && rec[0].bytes == 30 * 3073);
    assert_eq!(
        rec[2].sha256,
        files::sha256_hex(&std::fs::read(dir.path().join("test.bin")).unwrap())
    );
    // a label outside the classes, a partial record
    write(
        dir.path(),
        "bad.bin",
        &cifar_records(3, |i| vec![8 + i as u8]),
    );
    let e = load(&files_spec(fmt("cifar10"), one("bad.bin"), dir.path())).unwrap_err();
    assert!(
        e.to_string()
            .contains("label 10 of example 2 is outside the 10 classes"),
        "{e}"
    );
    let mut short = cifar_records(3, |_| vec![1]);
    short.pop();
    write(dir.path(), "short.bin", &short);
    let e = load(&files_spec(fmt("cifar10"), one("short.bin"), dir.path())).unwrap_err();
    assert!(
        e.to_string().contains("short.bin")
            && e.to_string()
                .contains("2 whole records and 3072 bytes over"),
        "{e}"
    );
}

#[test]
fn a_cifar100_file_gives_the_fine_or_the_coarse_label() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "train.bin",
        &cifar_records(40, |i| vec![(i % 20) as u8, (i * 2 % 100) as u8]),
    );
    let mut s = files_spec(fmt("cifar100"), one("train.bin"), dir.path());
    for (label, classes, want) in [
        (
            CifarLabel::Fine,
            100,
            (0..40).map(|i| (i * 2 % 100) as u8).collect::<Vec<_>>(),
        ),
        (
            CifarLabel::Coarse,
            20,
            (0..40).map(|i| (i % 20) as u8).collect(),
        ),
    ] {
        s.label = Some(label);
        s.val_fraction = 0.25;
        let d = load(&s).unwrap();
        let im = d.as_images().unwrap();
        assert_eq!(im.classes, classes);
        // the seeded split: every example once, with its own label and pixels
        let mut seen: Vec<(u8, f32)> = im
            .train_y
            .iter()
            .zip(im.train_x.chunks(3072))
            .chain(im.val_y.iter().zip(im.val_x.chunks(3072)))
            .map(|(&y, x)| (y, x[0]))
            .collect();
        seen.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let mut expect: Vec<(u8, f32)> = (0..40).map(|i| (want[i], px((i * 7) % 256))).collect();
        expect.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        assert_eq!(seen, expect, "{label:?}");
    }
    // a CIFAR-10 file read as CIFAR-100 is not a whole number of records
    write(dir.path(), "c10.bin", &cifar_records(3, |_| vec![1]));
    let e =
        load(&files_spec(fmt("cifar100"), one("c10.bin"), dir.path()).with_label()).unwrap_err();
    assert!(
        e.to_string().contains("not a whole number of CIFAR-100"),
        "{e}"
    );
}

impl DatasetSpec {
    fn with_label(mut self) -> Self {
        self.label = Some(CifarLabel::Fine);
        self
    }
}

/// 6 images 3×4×5 (c, h, w) whose value names (example, channel, row, column).
fn chw_images() -> Vec<u8> {
    let mut v = vec![];
    for n in 0..6 {
        for c in 0..3 {
            for y in 0..4 {
                for x in 0..5 {
                    v.push((n * 40 + c * 12 + y * 3 + x) as u8);
                }
            }
        }
    }
    v
}

fn to_nhwc(v: &[u8]) -> Vec<u8> {
    let mut out = vec![];
    for e in v.chunks(60) {
        for p in 0..20 {
            for c in 0..3 {
                out.push(e[c * 20 + p]);
            }
        }
    }
    out
}

#[test]
fn npy_nhwc_and_nchw_give_the_same_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let labels: Vec<u8> = [3i64, 1, 4, 1, 5, 9]
        .iter()
        .flat_map(|l| l.to_le_bytes())
        .collect();
    write(dir.path(), "y.npy", &npy("<i8", &[6], &labels));
    write(
        dir.path(),
        "nchw.npy",
        &npy("|u1", &[6, 3, 4, 5], &chw_images()),
    );
    write(
        dir.path(),
        "nhwc.npy",
        &npy("|u1", &[6, 4, 5, 3], &to_nhwc(&chw_images())),
    );
    let floats: Vec<u8> = to_nhwc(&chw_images())
        .iter()
        .flat_map(|&b| px(b as usize).to_le_bytes())
        .collect();
    write(dir.path(), "f32.npy", &npy("<f4", &[6, 4, 5, 3], &floats));
    let load_as = |images: &str, layout: Layout| {
        let mut s = files_spec(
            fmt("npy"),
            Part::Pair {
                images: images.into(),
                labels: "y.npy".into(),
            },
            dir.path(),
        );
        s.layout = Some(layout);
        s.classes = Some(10);
        s.val_fraction = 0.34;
        load(&s)
    };
    let a = load_as("nchw.npy", Layout::Nchw).unwrap();
    let b = load_as("nhwc.npy", Layout::Nhwc).unwrap();
    let c = load_as("f32.npy", Layout::Nhwc).unwrap();
    let (a, b, c) = (
        a.as_images().unwrap(),
        b.as_images().unwrap(),
        c.as_images().unwrap(),
    );
    assert_eq!((a.channels, a.height, a.width), (3, 4, 5));
    assert_eq!(
        (a.train_x.clone(), a.train_y.clone()),
        (b.train_x.clone(), b.train_y.clone())
    );
    assert_eq!(a.val_x, b.val_x);
    assert_eq!(a.train_x, c.train_x, "float32 as stored = uint8 / 255");
    // each example is its own: channel c, row y, column x of example n
    let all: Vec<&[f32]> = a.train_x.chunks(60).chain(a.val_x.chunks(60)).collect();
    for e in all {
        let n = (e[0] * 255.0).round() as usize / 40;
        for (k, v) in e.iter().enumerate() {
            let (ch, y, x) = (k / 20, k % 20 / 5, k % 5);
            assert_eq!((v * 255.0).round() as usize, n * 40 + ch * 12 + y * 3 + x);
        }
    }
    // a wrong layout for the array's rank, NaN in float data
    let e = load_as("nchw.npy", Layout::Nhw).unwrap_err();
    assert!(e.to_string().contains("needs 3 axes"), "{e}");
    let mut nan = floats.clone();
    nan[4 * 77..4 * 78].copy_from_slice(&f32::NAN.to_le_bytes());
    write(dir.path(), "nan.npy", &npy("<f4", &[6, 4, 5, 3], &nan));
    let e = load_as("nan.npy", Layout::Nhwc).unwrap_err();
    assert!(
        e.to_string().contains("nan.npy") && e.to_string().contains("example 1 is NaN"),
        "{e}"
    );
}

#[test]
fn npz_archives_load_as_their_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let y: Vec<u8> = (0..6u8).collect();
    write(
        dir.path(),
        "d.npz",
        &npz(&[
            ("x_train", npy("|u1", &[6, 3, 4, 5], &chw_images())),
            ("y_train", npy("|u1", &[6, 1], &y)),
        ]),
    );
    let mut s = files_spec(
        fmt("npz"),
        Part::Archive {
            file: "d.npz".into(),
            images: "x_train".into(),
            labels: "y_train".into(),
        },
        dir.path(),
    );
    s.layout = Some(Layout::Nchw);
    s.classes = Some(6);
    s.val_fraction = 0.34;
    let d = load(&s).unwrap();
    let im = d.as_images().unwrap();
    assert_eq!(im.n_train() + im.n_val(), 6);
    for (x, &l) in im.train_x.chunks(60).zip(&im.train_y) {
        assert_eq!((x[0] * 255.0).round() as u8, l * 40);
    }
    s.train = Some(Part::Archive {
        file: "d.npz".into(),
        images: "x_test".into(),
        labels: "y_train".into(),
    });
    let e = load(&s).unwrap_err().to_string();
    assert!(
        e.contains("no array `x_test` (it holds x_train, y_train)"),
        "{e}"
    );
}

/// A PNG of `w`×`h` whose pixel (x, y) is (x·20 + y, 100, 200 − c) in RGB or the first in grey.
fn png(w: u32, h: u32, grey: bool, c: u8) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    if grey {
        image::GrayImage::from_fn(w, h, |x, y| image::Luma([(x * 20 + y) as u8]))
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
    } else {
        image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 20 + y) as u8, 100, 200 - c]))
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
    }
    out.into_inner()
}

#[test]
fn an_image_folder_of_pngs_loads_with_its_classes() {
    let dir = tempfile::tempdir().unwrap();
    for (class, n) in [("cat", 3), ("ant", 2), ("dog", 4)] {
        std::fs::create_dir_all(dir.path().join("train").join(class)).unwrap();
        for i in 0..n {
            write(
                &dir.path().join("train").join(class),
                &format!("{i}.png"),
                &png(4, 3, false, i as u8),
            );
        }
    }
    write(&dir.path().join("train"), "README.txt", b"not an image");
    let s = files_spec(fmt("image-folder"), one("train"), dir.path());
    let d = load(&DatasetSpec {
        val_fraction: 0.2,
        ..s.clone()
    })
    .unwrap();
    let im = d.as_images().unwrap();
    assert_eq!((im.channels, im.height, im.width, im.classes), (3, 3, 4, 3));
    assert_eq!(im.n_train() + im.n_val(), 9);
    // classes in sorted order: ant 0, cat 1, dog 2
    let mut ys: Vec<u8> = im.train_y.iter().chain(&im.val_y).copied().collect();
    ys.sort();
    assert_eq!(ys, [0, 0, 1, 1, 1, 2, 2, 2, 2]);
    // channel-major: plane 0 = red = x·20 + y, plane 1 = 100
    let x = &im.train_x[..36];
    assert_eq!(x[5], px(21)); // red, row 1, column 1
    assert!(x[12..24].iter().all(|&v| v == px(100)));
    // one record for the folder: its images' manifest
    let rec = &d.files()[0];
    assert_eq!((rec.files, rec.path.ends_with("train")), (Some(9), true));
    assert_eq!(
        formats::folder::manifest(&dir.path().join("train")).unwrap(),
        *rec
    );
    // an image of another size, a grey image among RGB ones, no class folders
    write(
        &dir.path().join("train/dog"),
        "big.png",
        &png(5, 3, false, 0),
    );
    let e = load(&s).unwrap_err().to_string();
    assert!(
        e.contains("big.png")
            && e.contains(
                "the image is 3×5 (height × width), but every image must be 3×4, the \
                           size of most images: 9 of the 10 are (the first: ant/0.png), 1 differs"
            ),
        "{e}"
    );
    write(
        &dir.path().join("train/dog"),
        "big.png",
        &png(4, 3, true, 0),
    );
    let e = load(&s).unwrap_err().to_string();
    assert!(
        e.contains("big.png")
            && e.contains("has 1 channel(s), but every image must have 3, as most images have"),
        "{e}"
    );
    std::fs::create_dir_all(dir.path().join("flat")).unwrap();
    write(&dir.path().join("flat"), "a.png", &png(4, 3, false, 0));
    let e = load(&files_spec(fmt("image-folder"), one("flat"), dir.path()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("flat") && e.contains("no class folders"), "{e}");
}

#[test]
fn token_files_and_byte_files_are_token_streams() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<u16> = (0..500u16).map(|i| i * 7 % 1000).collect();
    let b: Vec<u8> = ids.iter().flat_map(|t| t.to_le_bytes()).collect();
    write(dir.path(), "train.bin", &b);
    write(dir.path(), "val.bin", &b[..200]);
    let mut s = files_spec(fmt("tokens"), one("train.bin"), dir.path());
    s.val = Some(one("val.bin"));
    s.dtype = Some(TokenType::U16);
    s.vocab = Some(1000);
    s.seq_len = 16;
    let d = load(&s).unwrap();
    let t = d.as_text().unwrap();
    assert_eq!(t.vocab, 1000);
    assert_eq!(t.train, ids.iter().map(|&i| i as u32).collect::<Vec<_>>());
    assert_eq!(t.val.len(), 100);
    assert_eq!(t.split.unit, "tokens");
    s.vocab = Some(900);
    let e = load(&s).unwrap_err().to_string();
    assert!(
        e.contains("train.bin") && e.contains("outside the vocabulary of 900"),
        "{e}"
    );
    // bytes: a gzip file named .gz is decompressed; the tail split as for Shakespeare
    let text = b"to be or not to be, that is the question. ".repeat(10);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &text).unwrap();
    write(dir.path(), "t.txt.gz", &gz.finish().unwrap());
    let mut s = files_spec(fmt("bytes"), one("t.txt.gz"), dir.path());
    s.seq_len = 8;
    let d = load(&s).unwrap();
    let t = d.as_text().unwrap();
    assert_eq!(t.train.len() + t.val.len(), text.len());
    assert_eq!(t.val[0], text[t.train.len()] as u32);
    assert_eq!(t.split.method, "contiguous-tail");
}

#[test]
fn a_data_file_record_says_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "a.bin", b"0123456789");
    let rec = digest::DataFileRecord::of_bytes(&p, b"0123456789", false);
    assert_eq!(digest::changed(&rec), None);
    std::fs::write(&p, b"0123456789!").unwrap();
    let m = digest::changed(&rec).unwrap();
    assert!(
        m.contains("a.bin") && m.contains("10 bytes then, 11 now"),
        "{m}"
    );
    std::fs::write(&p, b"0123456780").unwrap();
    let m = digest::changed(&rec).unwrap();
    assert!(
        m.contains("its sha256 was") && m.contains("(same size)"),
        "{m}"
    );
    std::fs::remove_file(&p).unwrap();
    assert!(digest::changed(&rec)
        .unwrap()
        .contains("cannot be read now"));
    // a bundled file is checked against this build's pin, wherever it lives
    let mut b =
        digest::DataFileRecord::of_bytes(Path::new("/x/mnist10k-labels-idx1-ubyte.gz"), b"", true);
    b.sha256 = files::MNIST_LABELS.sha256.into();
    assert_eq!(digest::changed(&b), None);
    b.sha256 = "0".repeat(64);
    assert!(digest::changed(&b).unwrap().contains("this build's is"));
}

/// A `.gz` or a `.npz` array that inflates past the cap is "too large when decompressed" with
/// the limit and what sets it; within the cap it reads (the binary's corpus runs the case where
/// memory runs out first, under `ulimit -v`).
#[test]
fn inflating_past_the_cap_says_too_large_with_the_limit() {
    use std::io::Write;
    let cap = |bytes| read::ReadCap {
        bytes,
        what: "the test's limit",
    };
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&[7u8; 5000]).unwrap();
    let gz = e.finish().unwrap();
    let p = Path::new("/d/x.bin.gz");
    assert_eq!(read::gunzip_within(p, &gz, cap(5000)).unwrap(), [7u8; 5000]);
    let e = read::gunzip_within(p, &gz, cap(4999))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "dataset file /d/x.bin.gz: too large when decompressed: more than the limit of 4999 \
         bytes, the test's limit"
    );
    let e = read::gunzip_within(p, b"not gzip", cap(4999))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not gzip-compressed"), "{e}");
    // an .npz member: the archive's path and the array's name
    let x = formats::numpy::npy_file("|u1", &[5000], &[1; 5000]);
    let npz = formats::numpy::npz_file(&[("x", x.clone())]);
    let p = Path::new("/d/d.npz");
    assert_eq!(
        formats::numpy::npz_member(p, &npz, "x", cap(1 << 20)).unwrap(),
        x
    );
    let e = formats::numpy::npz_member(p, &npz, "x", cap(3072))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "dataset file /d/d.npz: array `x` is too large when decompressed: more than the limit of \
         3072 bytes, the test's limit"
    );
}

/// A missing file of one's own dataset is named with the key that names it, not with the
/// bundled files' advice; a bundled one keeps that advice.
#[test]
fn a_missing_file_of_ones_own_is_named_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", &[b'a'; 500]);
    let s = files_spec(
        fmt("bytes"),
        Part::Files(vec!["a.txt".into(), "b.txt".into()]),
        dir.path(),
    );
    let e = load(&s).unwrap_err();
    let path = dir.path().join("b.txt");
    assert_eq!(
        e,
        DataError::MissingFile {
            path: path.clone(),
            key: "train[1]".into()
        }
    );
    let e = e.to_string();
    assert!(
        e.starts_with(&format!(
            "dataset file {} is missing: `train[1]` under [workload.dataset] names it",
            path.display()
        )) && !e.contains("data install"),
        "{e}"
    );
    let mut s = files_spec(
        fmt("idx"),
        Part::Pair {
            images: "i".into(),
            labels: "l".into(),
        },
        dir.path(),
    );
    s.classes = Some(10);
    s.val = Some(Part::Pair {
        images: "vi".into(),
        labels: "vl".into(),
    });
    let e = load(&s).unwrap_err();
    assert!(
        matches!(&e, DataError::MissingFile { key, .. } if key == "train.images"),
        "{e:?}"
    );
}
