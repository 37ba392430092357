//! The bad-data corpus: generated bad data files (one class of damage each: wrong magic, header
//! counts past the file's end, truncated records, labels outside the classes, mismatched counts,
//! NaN/∞, empty files, a folder without class folders, images of another size or channel
//! count, a FIFO, a symlink loop, a folder where a file is expected, …) named by a preset, each
//! run through the commands a user types — `scaling-lab sweep my.toml --dry-run` and
//! `scaling-lab train --preset my.toml` — in the style of tests/inputs/corpus_inputs.rs. Every case
//! must end within a time bound with exit 1 (a data file at fault: a runtime error) or 2 (the
//! preset at fault: `file:line:col`), never 0 or 101, and exactly one line on stderr that names
//! the file and says what is wrong.
//!
//! The test prints each failing case with its command and output, then fails.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");
const TIME_BOUND: Duration = Duration::from_secs(20);

/// A small image-classifier preset around a `[workload.dataset]` table.
fn image_preset(dataset: &str) -> String {
    format!(
        r#"name = "mine"
description = "corpus data case"

[workload]
optimizer = "sgd"
eval_every = 5
step_budget = 10

[workload.dataset]
{dataset}

[workload.model]
kind = "mlp"
hidden = [4]

[workload.target]
metric = "val_error"
value = 0.5

[workload.defaults]
learning_rate = 0.05

[search]
learning_rate = [0.01, 0.1]

[sweep]
batch_sizes = [4]
trials_per_batch = 1
workers = 1
concurrency = 1
"#
    )
}

/// A small byte-level LM preset around a `[workload.dataset]` table.
fn text_preset(dataset: &str) -> String {
    image_preset(dataset)
        .replace(
            "kind = \"mlp\"\nhidden = [4]",
            "kind = \"char-lstm\"\nembed = 4\nhidden = 4",
        )
        .replace(
            "metric = \"val_error\"\nvalue = 0.5",
            "metric = \"val_bpc\"\nvalue = 3.0",
        )
}

struct Case {
    name: &'static str,
    preset: String,
    /// Exit code: 1 (a data file at fault) or 2 (the preset).
    code: i32,
    /// What the line must name (a file) and say.
    names: String,
    says: Vec<&'static str>,
    env: Vec<(&'static str, String)>,
}

fn case(name: &'static str, preset: String, names: &Path, says: &[&'static str]) -> Case {
    Case {
        name,
        preset,
        code: 1,
        names: names.display().to_string(),
        says: says.to_vec(),
        env: vec![],
    }
}

fn idx_images(magic: u32, n: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
    let mut b = vec![];
    for v in [magic, n, rows, cols] {
        b.extend_from_slice(&v.to_be_bytes());
    }
    b.extend_from_slice(pixels);
    b
}

fn idx_labels(labels: &[u8]) -> Vec<u8> {
    let mut b = 2049u32.to_be_bytes().to_vec();
    b.extend_from_slice(&(labels.len() as u32).to_be_bytes());
    b.extend_from_slice(labels);
    b
}

fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
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

fn png(w: u32, h: u32, rgba: bool) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    if rgba {
        image::RgbaImage::from_pixel(w, h, image::Rgba([1, 2, 3, 4]))
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
    } else {
        image::RgbImage::from_pixel(w, h, image::Rgb([1, 2, 3]))
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
    }
    out.into_inner()
}

fn put(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, bytes).unwrap();
    p
}

fn idx(images: &str, labels: &str) -> String {
    format!("format = \"idx\"\ntrain = {{ images = \"{images}\", labels = \"{labels}\" }}\nclasses = 10")
}

fn cifar(train: &str) -> String {
    format!("format = \"cifar10\"\ntrain = \"{train}\"")
}

fn folder(train: &str) -> String {
    format!("format = \"image-folder\"\ntrain = \"{train}\"")
}

fn npy_pair(images: &str, labels: &str, layout: &str) -> String {
    format!(
        "format = \"npy\"\ntrain = {{ images = \"{images}\", labels = \"{labels}\" }}\nlayout = \"{layout}\"\nclasses = 10"
    )
}

/// The corpus: files in `d`, presets naming them relative to `d` (the presets live there).
fn cases(d: &Path) -> Vec<Case> {
    let px = vec![7u8; 20 * 4];
    let good_images = put(d, "good-images.idx", &idx_images(2051, 20, 2, 2, &px));
    let good_labels = put(d, "good-labels.idx", &idx_labels(&[1; 20]));
    let _ = (&good_images, &good_labels);
    let mut out = vec![];
    // IDX
    let p = put(d, "swapped.idx", &idx_images(2049, 20, 2, 2, &px));
    out.push(case(
        "idx wrong magic",
        image_preset(&idx("swapped.idx", "good-labels.idx")),
        &p,
        &["magic", "2051"],
    ));
    let p = put(d, "short.idx", &idx_images(2051, 1_000_000, 28, 28, &px));
    out.push(case(
        "idx counts past the end",
        image_preset(&idx("short.idx", "good-labels.idx")),
        &p,
        &["header says 1000000"],
    ));
    let p = put(d, "label12.idx", &idx_labels(&[12; 20]));
    out.push(case(
        "idx label outside the classes",
        image_preset(&idx("good-images.idx", "label12.idx")),
        &p,
        &["label 12", "outside the 10 classes"],
    ));
    let p = put(d, "19labels.idx", &idx_labels(&[1; 19]));
    out.push(case(
        "idx counts differ",
        image_preset(&idx("good-images.idx", "19labels.idx")),
        &p,
        &["19 labels", "20 images"],
    ));
    let p = put(d, "empty.idx", b"");
    out.push(case(
        "idx empty",
        image_preset(&idx("empty.idx", "good-labels.idx")),
        &p,
        &["empty"],
    ));
    let p = put(d, "bad.idx.gz", b"not gzip at all");
    out.push(case(
        "idx .gz not gzip",
        image_preset(&idx("bad.idx.gz", "good-labels.idx")),
        &p,
        &["gzip"],
    ));
    let p = d.join("absent.idx");
    out.push(case(
        "idx missing",
        image_preset(&idx("absent.idx", "good-labels.idx")),
        &p,
        &["missing"],
    ));
    // CIFAR
    let mut rec = vec![3u8];
    rec.extend(vec![9u8; 3072]);
    let mut two = rec.repeat(2);
    two.truncate(2 * 3073 - 5);
    let p = put(d, "truncated.bin", &two);
    out.push(case(
        "cifar truncated record",
        image_preset(&cifar("truncated.bin")),
        &p,
        &["not a whole number", "1 whole records"],
    ));
    let mut bad = rec.repeat(3);
    bad[3073] = 10;
    let p = put(d, "label10.bin", &bad);
    out.push(case(
        "cifar label outside the classes",
        image_preset(&cifar("label10.bin")),
        &p,
        &["label 10 of example 1"],
    ));
    let p = put(d, "empty.bin", b"");
    out.push(case(
        "cifar empty file",
        image_preset(&cifar("empty.bin")),
        &p,
        &["empty"],
    ));
    let p = d.join("adir.bin");
    std::fs::create_dir_all(&p).unwrap();
    out.push(case(
        "cifar a folder where a file is expected",
        image_preset(&cifar("adir.bin")),
        &p,
        &["directory"],
    ));
    #[cfg(unix)]
    {
        let p = d.join("fifo.bin");
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        out.push(case(
            "cifar a FIFO",
            image_preset(&cifar("fifo.bin")),
            &p,
            &["FIFO"],
        ));
        let p = d.join("loop.bin");
        std::os::unix::fs::symlink(d.join("loop2.bin"), &p).unwrap();
        std::os::unix::fs::symlink(&p, d.join("loop2.bin")).unwrap();
        out.push(case(
            "cifar a symlink loop",
            image_preset(&cifar("loop.bin")),
            &p,
            &["symbolic links"],
        ));
    }
    // NumPy
    let mut f = vec![];
    for i in 0..20 * 4 {
        f.extend_from_slice(&(if i == 13 { f32::INFINITY } else { 0.5f32 }).to_le_bytes());
    }
    let p = put(d, "inf.npy", &npy("<f4", "(20, 2, 2)", &f));
    put(d, "y.npy", &npy("|u1", "(20,)", &[1; 20]));
    out.push(case(
        "npy infinity",
        image_preset(&npy_pair("inf.npy", "y.npy", "nhw")),
        &p,
        &["inf", "example 3"],
    ));
    let p = put(
        d,
        "huge.npy",
        &npy("|u1", "(1000000000000, 28, 28)", &[0; 16]),
    );
    out.push(case(
        "npy shape past the end",
        image_preset(&npy_pair("huge.npy", "y.npy", "nhw")),
        &p,
        &["data bytes"],
    ));
    let p = put(d, "notnpy.npy", b"PK\x03\x04 this is a zip, not an array");
    out.push(case(
        "npy wrong magic",
        image_preset(&npy_pair("notnpy.npy", "y.npy", "nhw")),
        &p,
        &["NUMPY"],
    ));
    put(d, "x.npy", &npy("|u1", "(20, 2, 2)", &px));
    let p = put(d, "y19.npy", &npy("|u1", "(19,)", &[1; 19]));
    out.push(case(
        "npy counts differ",
        image_preset(&npy_pair("x.npy", "y19.npy", "nhw")),
        &p,
        &["19 labels", "20 images"],
    ));
    let p = put(
        d,
        "yneg.npy",
        &npy("<i4", "(20,)", &(-1i32).to_le_bytes().repeat(20)),
    );
    out.push(case(
        "npy negative label",
        image_preset(&npy_pair("x.npy", "yneg.npy", "nhw")),
        &p,
        &["label -1"],
    ));
    let p = put(d, "x.npy", &npy("|u1", "(20, 2, 2)", &px));
    out.push(case(
        "npy layout of another rank",
        image_preset(&npy_pair("x.npy", "y.npy", "nchw")),
        &p,
        &["4 axes"],
    ));
    let p = put(d, "d.npz", b"");
    out.push(case(
        "npz empty",
        image_preset("format = \"npz\"\ntrain = { file = \"d.npz\", images = \"x\", labels = \"y\" }\nlayout = \"nhw\"\nclasses = 10"),
        &p,
        &["empty"],
    ));
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
    let p = put(d, "zip64.npz", &z);
    out.push(case(
        "npz a directory past the end",
        image_preset("format = \"npz\"\ntrain = { file = \"zip64.npz\", images = \"x\", labels = \"y\" }\nlayout = \"nhw\"\nclasses = 10"),
        &p,
        &["1099511627776 entries"],
    ));
    // ImageFolder
    let p = d.join("flat");
    put(&p, "a.png", &png(2, 2, false));
    out.push(case(
        "folder without class folders",
        image_preset(&folder("flat")),
        &p,
        &["no class folders"],
    ));
    let root = d.join("sizes");
    put(&root, "a/1.png", &png(2, 2, false));
    let p = put(&root, "b/2.png", &png(3, 2, false));
    out.push(case(
        "folder image of another size",
        image_preset(&folder("sizes")),
        &p,
        &["same size"],
    ));
    let root = d.join("alpha");
    let p = put(&root, "a/1.png", &png(2, 2, true));
    out.push(case(
        "folder RGBA image",
        image_preset(&folder("alpha")),
        &p,
        &["Rgba8", "channels"],
    ));
    let root = d.join("notpng");
    put(&root, "a/1.png", &png(2, 2, false));
    let p = put(&root, "b/2.png", b"plain text, not a picture");
    out.push(case(
        "folder a file that is not an image",
        image_preset(&folder("notpng")),
        &p,
        &["not a PNG or JPEG"],
    ));
    let root = d.join("emptyclass");
    put(&root, "a/1.png", &png(2, 2, false));
    std::fs::create_dir_all(root.join("b")).unwrap();
    out.push(case(
        "folder a class without images",
        image_preset(&folder("emptyclass")),
        &root.join("b"),
        &["without PNG or JPEG"],
    ));
    let p = put(d, "afile", b"x");
    out.push(case(
        "folder a file where a folder is expected",
        image_preset(&folder("afile")),
        &p,
        &["folder of class folders"],
    ));
    // Text
    let p = put(d, "empty.txt", b"");
    out.push(case(
        "bytes empty file",
        text_preset("format = \"bytes\"\ntrain = \"empty.txt\""),
        &p,
        &["empty"],
    ));
    let p = put(d, "odd.bin", &[1, 0, 2]);
    out.push(case(
        "tokens odd size",
        text_preset("format = \"tokens\"\ntrain = \"odd.bin\"\ndtype = \"u16\"\nvocab = 100"),
        &p,
        &["whole number of 2-byte"],
    ));
    let p = put(d, "big.bin", &[1, 0, 200, 0].repeat(100));
    out.push(case(
        "tokens id outside the vocabulary",
        text_preset("format = \"tokens\"\ntrain = \"big.bin\"\ndtype = \"u16\"\nvocab = 100"),
        &p,
        &["id 200", "vocabulary of 100"],
    ));
    // A named dataset whose files are absent: which files and where they come from.
    let empty = d.join("nothing-here");
    std::fs::create_dir_all(&empty).unwrap();
    out.push(Case {
        env: vec![("SCALING_LAB_DATA_DIR", empty.display().to_string())],
        ..case(
            "cifar10 absent",
            image_preset("name = \"cifar10\""),
            &empty,
            &[
                "data_batch_1.bin",
                "test_batch.bin",
                "cifar-10-binary.tar.gz",
            ],
        )
    });
    // The preset at fault: exit 2 at the key.
    let my = d.join("my.toml");
    out.push(Case {
        code: 2,
        ..case(
            "an unset variable",
            image_preset("format = \"cifar10\"\ntrain = \"$SCALING_LAB_CORPUS_UNSET/x.bin\""),
            &my,
            &["SCALING_LAB_CORPUS_UNSET is not set"],
        )
    });
    out.push(Case {
        code: 2,
        ..case(
            "a key of another format",
            image_preset(&format!("{}\nclasses = 10", cifar("empty.bin"))),
            &my,
            &["classes has no effect on format = \"cifar10\""],
        )
    });
    out.push(Case {
        code: 2,
        ..case(
            "a missing key",
            image_preset("format = \"idx\"\ntrain = { images = \"a\", labels = \"b\" }"),
            &my,
            &["needs classes"],
        )
    });
    out
}

/// (exit code, stderr) of `args` within the time bound (None: killed, a hang).
fn run(args: &[&str], env: &[(&'static str, String)]) -> (Option<i32>, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("SCALING_LAB_DATA_DIR")
        .env_remove("SCALING_LAB_CORPUS_UNSET")
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start scaling-lab");
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed() > TIME_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (
        status.and_then(|s| s.code()),
        reader.join().unwrap_or_default(),
    )
}

#[test]
fn every_bad_data_file_is_one_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let runs = d.join("runs");
    let mut failures = vec![];
    let all = cases(d);
    for c in &all {
        let preset = d.join("my.toml");
        std::fs::write(&preset, &c.preset).unwrap();
        let p = preset.to_str().unwrap();
        let r = runs.to_str().unwrap();
        let commands: [Vec<&str>; 2] = [
            vec!["sweep", p, "--dry-run", "--runs-dir", r],
            vec!["train", "--preset", p, "--batch-size", "4", "--runs-dir", r],
        ];
        for args in commands {
            let (code, stderr) = run(&args, &c.env);
            let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            let line = lines.first().copied().unwrap_or("");
            let problem = if code.is_none() {
                Some("hang")
            } else if code == Some(0) {
                Some("silent success")
            } else if code == Some(101) {
                Some("panic")
            } else if lines.len() != 1 {
                Some("not one line")
            } else if code != Some(c.code) {
                Some("wrong exit code")
            } else if !line.contains(&c.names) {
                Some("does not name the file")
            } else if !c.says.iter().all(|w| line.contains(w)) {
                Some("does not say what is wrong")
            } else {
                None
            };
            if let Some(why) = problem {
                failures.push(format!(
                    "{}: {why}: {args:?} -> {code:?} (want {}, naming {}, saying {:?}):\n{}",
                    c.name,
                    c.code,
                    c.names,
                    c.says,
                    stderr.trim()
                ));
            }
        }
    }
    println!(
        "{} cases × 2 commands, {} failures",
        all.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
