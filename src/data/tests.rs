use std::path::Path;

use super::formats::bundled as parse;
use super::formats::idx;
use super::*;

fn spec(name: &str) -> DatasetSpec {
    DatasetSpec {
        split_seed: 7,
        seq_len: 8,
        ..DatasetSpec::named(name)
    }
}

/// `spec(name)` read from `dir` (the preset's `dir`).
fn spec_in(name: &str, dir: &Path) -> DatasetSpec {
    DatasetSpec {
        dir: Some(dir.display().to_string()),
        ..spec(name)
    }
}

/// Decoded data as the loader gives it (no files).
fn raw(source: RawSource) -> Raw {
    Raw {
        source,
        files: vec![],
    }
}

fn text(bytes: &[u8]) -> Raw {
    raw(RawSource::Text {
        train: bytes.iter().map(|&b| b as u32).collect(),
        val: None,
        vocab: 256,
    })
}

fn idx_images(magic: u32, n: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [magic, n, rows, cols] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    b.extend_from_slice(pixels);
    b
}

fn idx_labels(magic: u32, labels: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&magic.to_be_bytes());
    b.extend_from_slice(&(labels.len() as u32).to_be_bytes());
    b.extend_from_slice(labels);
    b
}

fn synthetic_images(n: usize) -> Raw {
    // Sorted by class like MNIST-10k, pixel value = example index (mod 256) for identification.
    let pixels = (0..n * 4).map(|i| ((i / 4) % 256) as u8).collect();
    let labels = (0..n).map(|i| (i * 10 / n) as u8).collect();
    raw(RawSource::Images {
        train: RawImages {
            channels: 1,
            height: 2,
            width: 2,
            pixels: Pixels::U8 {
                data: pixels,
                max_value: 255,
            },
            labels,
            classes: 10,
        },
        val: None,
    })
}

#[test]
fn splitmix64_matches_reference_outputs() {
    // Reference values of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
    let mut r = SplitMix64::new(0);
    assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
    assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    let mut a = SplitMix64::new(3);
    for n in [1u64, 2, 3, 10, 1000] {
        for _ in 0..100 {
            assert!(a.below(n) < n);
        }
    }
}

#[test]
fn missing_file_error_names_path_and_how_to_restore() {
    let dir = tempfile::tempdir().unwrap();
    let err = load(&spec_in("digits", dir.path())).unwrap_err();
    let path = dir.path().join("digits.csv.gz");
    assert_eq!(err, DataError::Missing { path: path.clone() });
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("git checkout -- data/"), "{msg}");
    assert!(msg.contains("SCALING_LAB_DATA_DIR"), "{msg}");
}

#[test]
fn checksum_mismatch_error_names_file_and_both_hashes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shakespeare.txt.gz");
    std::fs::write(&path, b"not the real file").unwrap();
    let err = load(&spec_in("shakespeare", dir.path())).unwrap_err();
    let actual = files::sha256_hex(b"not the real file");
    match &err {
        DataError::Checksum {
            path: p,
            expected,
            actual: a,
        } => {
            assert_eq!(p, &path);
            assert_eq!(expected, files::SHAKESPEARE.sha256);
            assert_eq!(a, &actual);
        }
        other => panic!("expected a checksum error, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("shakespeare.txt.gz"), "{msg}");
    assert!(msg.contains(files::SHAKESPEARE.sha256), "{msg}");
    assert!(msg.contains(&actual), "{msg}");
}

#[test]
fn idx_parsing_of_tiny_synthetic_files() {
    let p = Path::new("x.idx");
    let px: Vec<u8> = (0..12).collect();
    let imgs = idx_images(2051, 2, 2, 3, &px);
    let (n, r, c, pixels) = idx::parse_idx_images(p, &imgs).unwrap();
    assert_eq!((n, r, c), (2, 2, 3));
    assert_eq!(pixels, px);
    let labels = idx::parse_idx_labels(p, &idx_labels(2049, &[3, 9])).unwrap();
    assert_eq!(labels, vec![3, 9]);
    let raw = idx::parse_idx_pair(p, &imgs, p, &idx_labels(2049, &[3, 9]), 10).expect("valid pair");
    assert_eq!(raw.len(), 2);
    assert_eq!((raw.height, raw.width), (2, 3));

    // Wrong magic numbers (images and labels swapped).
    let e = idx::parse_idx_images(p, &idx_images(2049, 2, 2, 3, &px)).unwrap_err();
    assert!(
        e.to_string().contains("magic number 2049 (expected 2051)"),
        "{e}"
    );
    let e = idx::parse_idx_labels(p, &idx_labels(2051, &[1])).unwrap_err();
    assert!(e.to_string().contains("expected 2049"), "{e}");
    // Truncated data and short header.
    let e = idx::parse_idx_images(p, &imgs[..imgs.len() - 1]).unwrap_err();
    assert!(e.to_string().contains("header says 2×2×3"), "{e}");
    assert!(idx::parse_idx_images(p, &imgs[..10]).is_err());
    assert!(idx::parse_idx_labels(p, &[0, 0, 8]).is_err());
    // Count mismatch and out-of-range labels.
    let e = idx::parse_idx_pair(p, &imgs, p, &idx_labels(2049, &[1]), 10).unwrap_err();
    assert!(e.to_string().contains("1 labels but"), "{e}");
    let e = idx::parse_idx_pair(p, &imgs, p, &idx_labels(2049, &[1, 12]), 10).unwrap_err();
    assert!(e.to_string().contains("label 12"), "{e}");
}

#[test]
fn digits_csv_errors_name_the_line() {
    let p = Path::new("d.csv");
    let good = format!("{}5\n", "1,".repeat(64));
    assert_eq!(
        parse::parse_digits_csv(p, good.as_bytes()).unwrap().len(),
        1
    );
    let bad = format!("{good}{}x\n", "1,".repeat(64));
    let e = parse::parse_digits_csv(p, bad.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    let short = "1,2,3\n";
    let e = parse::parse_digits_csv(p, short.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("line 1"), "{e}");
}

#[test]
fn split_is_deterministic_disjoint_and_seeded() {
    let raw = synthetic_images(500);
    let s = spec("mnist");
    let a = build(&raw, &s).unwrap();
    let b = build(&raw, &s).unwrap();
    assert_eq!(a, b);
    let ia = a.as_images().unwrap();
    assert_eq!(ia.n_val(), 50);
    assert_eq!(ia.n_train(), 450);
    assert_eq!(ia.split.fingerprint.len(), 16);
    // Every example exactly once across train ∪ val (pixel 0 identifies the example).
    let d = ia.example_len();
    let mut ids: Vec<u32> = ia
        .train_x
        .chunks(d)
        .chain(ia.val_x.chunks(d))
        .map(|c| (c[0] * 255.0).round() as u32)
        .collect();
    ids.sort();
    let expect: Vec<u32> = (0..500u32).map(|i| i % 256).collect::<Vec<_>>();
    let mut expect = expect;
    expect.sort();
    assert_eq!(ids, expect);
    // Sorted-by-class input: the shuffled validation set is not one class.
    let mut classes = ia.val_y.clone();
    classes.sort();
    classes.dedup();
    assert!(classes.len() >= 5, "validation classes {classes:?}");
    // Another seed: another split.
    let mut s2 = s.clone();
    s2.split_seed = 8;
    let c = build(&raw, &s2).unwrap();
    assert_ne!(c.split_info().fingerprint, a.split_info().fingerprint);
    // max_val caps what is evaluated but not what is held out.
    let mut s3 = s.clone();
    s3.max_val = Some(20);
    let d3 = build(&raw, &s3).unwrap();
    let i3 = d3.as_images().unwrap();
    assert_eq!(
        (i3.n_val(), i3.split.n_val, i3.split.n_val_used),
        (20, 50, 20)
    );
    assert_eq!(i3.val_y[..], ia.val_y[..20]);
}

#[test]
fn bad_spec_values_are_errors() {
    let raw = synthetic_images(10);
    for vf in [0.0, 1.0, -0.5, f64::NAN] {
        let mut s = spec("mnist");
        s.val_fraction = vf;
        assert!(matches!(build(&raw, &s), Err(DataError::Spec(_))), "{vf}");
    }
    let mut s = spec("mnist");
    s.val_fraction = 0.99;
    assert!(matches!(build(&raw, &s), Err(DataError::Spec(_))));
    let text = text(b"0123456789");
    let mut s = spec("shakespeare");
    s.seq_len = 8;
    let e = build(&text, &s).unwrap_err();
    assert!(e.to_string().contains("seq_len + 1 = 9"), "{e}");
}

#[test]
fn batcher_covers_each_example_once_per_epoch() {
    let n = 37;
    for b in [1usize, 5, 37, 64] {
        let mut bt = ImageBatcher::new(n, 11);
        let mut stream = Vec::new();
        while stream.len() < 4 * n {
            let batch = bt.next_batch(b);
            assert_eq!(batch.len(), b);
            stream.extend(batch);
        }
        for epoch in stream.chunks(n).take(4).filter(|c| c.len() == n) {
            let mut e = epoch.to_vec();
            e.sort();
            assert_eq!(e, (0..n).collect::<Vec<_>>(), "b = {b}");
        }
        // Epochs are reshuffled and the order is seeded.
        assert_ne!(stream[..n], stream[n..2 * n]);
        let mut again = ImageBatcher::new(n, 11);
        assert_eq!(again.next_batch(b), stream[..b]);
    }
    let mut bt = ImageBatcher::new(10, 1);
    bt.next_batch(25);
    assert_eq!(bt.epoch(), 2);
    assert!((bt.epochs_f64() - 2.5).abs() < 1e-12);
}

#[test]
fn gather_returns_the_indexed_examples() {
    let raw = synthetic_images(100);
    let d = build(&raw, &spec("mnist")).unwrap();
    let im = d.as_images().unwrap();
    let (x, y) = gather(im, &[3, 0, 3]);
    assert_eq!(x.len(), 3 * 4);
    assert_eq!(x[..4], im.train_x[12..16]);
    assert_eq!(x[4..8], im.train_x[..4]);
    assert_eq!(
        y,
        vec![
            im.train_y[3] as i64,
            im.train_y[0] as i64,
            im.train_y[3] as i64
        ]
    );
    let batches: Vec<_> = im.val_batches(3).collect();
    assert_eq!(batches.len(), 4);
    assert_eq!(batches[3].1.len(), 1);
}

#[test]
fn text_windows_are_aligned_and_validation_tiles_the_stream() {
    let corpus: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    let mut s = spec("shakespeare");
    s.seq_len = 16;
    s.val_fraction = 0.2;
    let d = build(&text(&corpus), &s).unwrap();
    let t = d.as_text().unwrap();
    assert_eq!(t.vocab, 256);
    let corpus: Vec<u32> = corpus.iter().map(|&c| c as u32).collect();
    assert_eq!(t.train, corpus[..800]);
    assert_eq!(t.val, corpus[800..]);
    let mut bt = TextBatcher::new(16, 5);
    let (x, y) = bt.next_batch(t, 32);
    assert_eq!((x.len(), y.len()), (32 * 16, 32 * 16));
    for (wx, wy) in x.chunks(16).zip(y.chunks(16)) {
        assert_eq!(wx[1..], wy[..15], "target = input shifted by one");
        // The window is a real slice of the training stream.
        let start = t.train.windows(17).position(|w| {
            w.iter()
                .map(|&c| c as i64)
                .eq(wx.iter().copied().chain([wy[15]]))
        });
        assert!(start.is_some());
    }
    let mut bt2 = TextBatcher::new(16, 5);
    assert_eq!(bt2.next_batch(t, 32), (x, y));

    // Validation: (200 - 1) / 16 = 12 non-overlapping windows whose targets tile val[1..193].
    assert_eq!(t.val_windows(), 12);
    let (vx, vy) = t.val_batch(0..12);
    let vy: Vec<u32> = vy.iter().map(|&c| c as u32).collect();
    assert_eq!(vy, t.val[1..193]);
    assert_eq!(vx[0], t.val[0] as i64);
    let total: usize = t.val_batches(5).map(|(bx, _)| bx.len() / 16).sum();
    assert_eq!(total, 12);
    let mut capped = s.clone();
    capped.max_val = Some(3);
    let bytes: Vec<u8> = corpus.iter().map(|&c| c as u8).collect();
    let c = build(&text(&bytes), &capped).unwrap();
    assert_eq!(c.as_text().unwrap().val_windows(), 3);
    assert_eq!(c.split_info().n_val_used, 3);
}

#[test]
fn shards_are_equal_or_an_error() {
    assert_eq!(shard_ranges(8, 4).unwrap(), vec![0..2, 2..4, 4..6, 6..8]);
    let e = shard_ranges(10, 4).unwrap_err();
    assert!(e.to_string().contains("10"), "{e}");
    assert!(shard_ranges(8, 0).is_err());
}

#[test]
fn bundled_files_verify() {
    for (f, r) in verify_all(&data_dir()) {
        assert!(r.is_ok(), "{}: {:?}", f.name, r);
    }
}

#[test]
fn bundled_digits_and_mnist_load() {
    let d = load(&spec("digits")).unwrap();
    let im = d.as_images().unwrap();
    assert_eq!(
        (im.height, im.width, im.channels, im.classes),
        (8, 8, 1, 10)
    );
    assert_eq!(im.n_train() + im.split.n_val, 1797);
    assert!(im.train_x.iter().all(|&v| (0.0..=1.0).contains(&v)));
    assert!(im.train_x.contains(&1.0));

    let mut s = spec("mnist");
    s.split_seed = 0;
    let a = load_cached(&s).unwrap();
    let b = load_cached(&s).unwrap();
    assert!(Arc::ptr_eq(&a, &b), "second load comes from the cache");
    let m = a.as_images().unwrap();
    assert_eq!((m.height, m.width), (28, 28));
    assert_eq!((m.n_train(), m.n_val()), (9000, 1000));
    let mut counts = [0usize; 10];
    for &l in &m.val_y {
        counts[l as usize] += 1;
    }
    assert!(
        counts.iter().all(|&c| c > 50),
        "shuffled val classes {counts:?}"
    );
    let mut st = m.clone();
    let (mean, std) = st.standardize();
    assert!(mean > 0.05 && mean < 0.3 && std > 0.1, "{mean} {std}");
    let new_mean = st.train_x.iter().map(|&v| v as f64).sum::<f64>() / st.train_x.len() as f64;
    assert!(new_mean.abs() < 1e-3);
}

#[test]
fn bundled_text_loads() {
    let mut s = spec("shakespeare");
    s.max_bytes = Some(100_000);
    s.seq_len = 64;
    let d = load(&s).unwrap();
    let t = d.as_text().unwrap();
    assert_eq!(t.train.len() + t.val.len(), 100_000);
    let head: Vec<u32> = b"ALL'S WELL THAT ENDS WELL"
        .iter()
        .map(|&c| c as u32)
        .collect();
    assert!(t.train.starts_with(&head));
    assert_eq!(t.split.method, "contiguous-tail");

    let mut r = spec("reviews");
    r.max_bytes = Some(50_000);
    let d = load(&r).unwrap();
    let t = d.as_text().unwrap();
    let labels = t.labels.as_ref().unwrap();
    let lines = |b: &[u32]| b.iter().filter(|&&c| c == b'\n' as u32).count();
    assert_eq!(labels.train.len(), lines(&t.train));
    assert_eq!(labels.val.len(), lines(&t.val));
    assert!(t.train.len() + t.val.len() <= 50_000);
    assert_eq!(load(&r).unwrap(), d);
}

/// With a transfer probe the bundled reviews' language-model text holds none of the probe's
/// sentences (as whole lines, in either stream), the probe's splits are the sizes asked for, and
/// the draw is recorded in the split.
#[test]
fn a_probe_sentence_is_never_language_model_text() {
    use crate::data::probe::ProbeSizes;
    let mut r = spec("reviews");
    r.probe = Some(ProbeSizes {
        train: 500,
        val: 100,
        test: 300,
    });
    let d = load(&r).unwrap();
    let t = d.as_text().unwrap();
    let p = t.probe.as_ref().expect("the probe's sentences");
    assert_eq!((p.train.len(), p.val.len(), p.test.len()), (500, 100, 300));
    assert_eq!(t.split.probe.as_ref(), Some(&p.info));
    let nl = u32::from(b'\n');
    let lines: std::collections::HashSet<Vec<u8>> = t
        .train
        .split(|&c| c == nl)
        .chain(t.val.split(|&c| c == nl))
        .map(|l| l.iter().map(|&c| c as u8).collect())
        .collect();
    for s in p.train.text.iter().chain(&p.val.text).chain(&p.test.text) {
        assert!(
            !lines.contains(s.as_slice()),
            "{}",
            String::from_utf8_lossy(s)
        );
    }
    let labels = t.labels.as_ref().unwrap();
    assert_eq!(
        labels.train.len() + labels.val.len() + p.info.excluded,
        10_568,
        "every sentence is text or the probe's"
    );
    // without a probe the split is the one it always was
    r.probe = None;
    assert!(load(&r).unwrap().as_text().unwrap().probe.is_none());
}

#[test]
fn downsample_average_pools_blocks() {
    // One 4×4 image with distinct 2×2 blocks → 2×2 image of the blocks' means.
    let pixels: Vec<u8> = vec![
        0, 0, 255, 255, //
        0, 0, 255, 255, //
        100, 100, 40, 0, //
        100, 100, 0, 0, //
    ];
    let raw = RawImages {
        channels: 1,
        height: 4,
        width: 4,
        pixels: Pixels::U8 {
            data: pixels.repeat(10),
            max_value: 255,
        },
        labels: vec![3; 10],
        classes: 10,
    };
    let mut s = spec("mnist");
    s.downsample = Some(2);
    let d = build::split_images(&raw, &s, "t".into()).unwrap();
    assert_eq!((d.height, d.width), (2, 2));
    let first: Vec<f32> = d.train_x[..4].to_vec();
    let want = [0.0, 1.0, 100.0 / 255.0, 10.0 / 255.0];
    for (a, b) in first.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{first:?}");
    }
    s.downsample = Some(8);
    assert!(build::split_images(&raw, &s, "t".into()).is_err());
    s.downsample = Some(3);
    let e = build::split_images(&raw, &s, "t".into()).unwrap_err();
    assert!(e.to_string().contains("does not divide"), "{e}");
}
