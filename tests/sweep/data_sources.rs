//! Datasets from files give the trials the bundled dataset gives: the bundled MNIST exported by
//! the test as raw IDX files and as a compressed .npz archive trains every trial of a short
//! sweep bit for bit as `name = "mnist"` does (the same trial records, evaluation curves
//! included). The run log records each data file (path, size, SHA-256); when one changes,
//! `report` warns and `sweep --resume` refuses, naming the file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use scaling_lab::core::record::TrialRecord;
use scaling_lab::runlog::read_run_log;

/// A short MLP sweep on MNIST at 14×14 around a `[workload.dataset]` table.
fn preset(dataset: &str) -> String {
    format!(
        r#"name = "mnist-files"
description = "MNIST from files"

[workload]
optimizer = "momentum"
eval_every = 10
step_budget = 30

[workload.dataset]
{dataset}
val_fraction = 0.1
split_seed = 3
downsample = 2
max_val = 500

[workload.model]
kind = "mlp"
hidden = [16]

[workload.target]
metric = "val_error"
value = 0.2

[workload.defaults]
learning_rate = 0.05
momentum = 0.9

[search]
learning_rate = [0.01, 0.5]
one_minus_momentum = [0.05, 0.5]

[sweep]
batch_sizes = [16, 64]
trials_per_batch = 2
workers = 1
concurrency = 1
fuse = "off"
confirm = "off"
"#
    )
}

fn gunzip(p: &Path) -> Vec<u8> {
    let mut out = vec![];
    flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
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

/// Runs `sweep PRESET` into `runs` and returns its log.
fn sweep(preset_path: &Path, runs: &Path) -> PathBuf {
    crate::common::run_ok(&[
        "sweep",
        preset_path.to_str().unwrap(),
        "--runs-dir",
        runs.to_str().unwrap(),
    ]);
    crate::common::only_log(runs)
}

/// What a trial computed: its record without times, throughput and the noise-scale summary
/// (sampled at a cadence that follows its measured cost).
fn computed(t: &TrialRecord) -> String {
    let o = &t.outcome;
    serde_json::json!({
        "id": t.trial_id,
        "spec": t.spec,
        "outcome": o.outcome,
        "steps": o.steps,
        "evals": o.evals,
        "skipped": o.skipped_steps,
    })
    .to_string()
}

#[test]
fn bundled_mnist_exported_as_idx_and_npz_trains_every_trial_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data = scaling_lab::data::data_dir();
    let images = gunzip(&data.join("mnist10k-images-idx3-ubyte.gz"));
    let labels = gunzip(&data.join("mnist10k-labels-idx1-ubyte.gz"));
    std::fs::create_dir_all(d.join("files")).unwrap();
    std::fs::write(d.join("files/images.idx"), &images).unwrap();
    std::fs::write(d.join("files/labels.idx"), &labels).unwrap();
    // the same examples as NumPy arrays: (10000, 28, 28) uint8 images, (10000,) int64 labels
    let y: Vec<u8> = labels[8..]
        .iter()
        .flat_map(|&l| (l as i64).to_le_bytes())
        .collect();
    let mut z = zip::ZipWriter::new(std::fs::File::create(d.join("files/mnist.npz")).unwrap());
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    z.start_file("x.npy", deflated).unwrap();
    z.write_all(&npy("|u1", "(10000, 28, 28)", &images[16..]))
        .unwrap();
    z.start_file("y.npy", deflated).unwrap();
    z.write_all(&npy("<i8", "(10000,)", &y)).unwrap();
    z.finish().unwrap();

    let cases = [
        ("bundled", "name = \"mnist\"".to_string()),
        (
            "idx",
            "format = \"idx\"\ndir = \"files\"\ntrain = { images = \"images.idx\", labels = \"labels.idx\" }\nclasses = 10"
                .to_string(),
        ),
        (
            "npz",
            "format = \"npz\"\ntrain = { file = \"files/mnist.npz\", images = \"x\", labels = \"y\" }\nlayout = \"nhw\"\nclasses = 10"
                .to_string(),
        ),
    ];
    let mut logs = vec![];
    for (name, dataset) in &cases {
        let p = d.join(format!("{name}.toml"));
        std::fs::write(&p, preset(dataset)).unwrap();
        logs.push(read_run_log(&sweep(&p, &d.join(format!("runs-{name}")))).unwrap());
    }
    let bundled: Vec<String> = logs[0].trials.iter().map(computed).collect();
    assert_eq!(bundled.len(), 4);
    assert!(
        logs[0].trials.iter().any(|t| t.outcome.evals.len() >= 2),
        "the trials train"
    );
    for (log, (name, _)) in logs.iter().zip(&cases).skip(1) {
        let mine: Vec<String> = log.trials.iter().map(computed).collect();
        assert_eq!(
            mine, bundled,
            "{name}: every trial as with the bundled dataset"
        );
        assert!(log.warnings.is_empty(), "{:?}", log.warnings);
    }
    // Each header records the files read: the bundled ones by their pins, the rest by digest.
    let rec = |i: usize| logs[i].header.data_files.clone();
    assert_eq!(rec(0).len(), 2);
    assert!(rec(0).iter().all(|r| r.bundled));
    assert_eq!(
        rec(0)[0].sha256,
        scaling_lab::data::files::MNIST_IMAGES.sha256
    );
    assert_eq!(rec(1).len(), 2);
    assert_eq!(
        rec(1)[0].path,
        std::path::absolute(d.join("files/images.idx"))
            .unwrap()
            .display()
            .to_string()
    );
    assert_eq!(
        (rec(1)[0].bytes, rec(1)[0].sha256.clone()),
        (
            images.len() as u64,
            scaling_lab::data::files::sha256_hex(&images)
        )
    );
    assert!(!rec(1)[0].bundled);
    assert_eq!(rec(2).len(), 1);
    assert!(rec(2)[0].path.ends_with("mnist.npz"));

    // A data file changed since: report warns, resume refuses; both name the file.
    let log_path = logs[1].path.clone();
    let mut changed = labels.clone();
    changed[100] = (changed[100] + 1) % 10;
    std::fs::write(d.join("files/labels.idx"), &changed).unwrap();
    let out = crate::common::spawn(
        &["report", log_path.to_str().unwrap()],
        std::process::Stdio::piped(),
    )
    .wait_with_output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("warning: {}:1: data file ", log_path.display()))
            && err.contains("labels.idx changed since the log was written: its sha256 was"),
        "{err}"
    );
    let out = crate::common::spawn(
        &[
            "sweep",
            "--resume",
            log_path.to_str().unwrap(),
            "--runs-dir",
            d.join("runs-idx").to_str().unwrap(),
        ],
        std::process::Stdio::piped(),
    )
    .wait_with_output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("labels.idx changed since the log was written") && err.contains("refuses"),
        "{err}"
    );
    std::fs::remove_file(d.join("files/labels.idx")).unwrap();
    let log = read_run_log(&log_path).unwrap();
    assert!(
        log.warnings[0].contains("labels.idx cannot be read now"),
        "{:?}",
        log.warnings
    );
}

/// `n` CIFAR-10 records with labels i mod 10 and pixels (i + k) mod 256.
fn cifar_records(n: usize) -> Vec<u8> {
    let mut b = vec![];
    for i in 0..n {
        b.push((i % 10) as u8);
        b.extend((0..3072).map(|k| ((i + k) % 256) as u8));
    }
    b
}

#[test]
fn the_cifar10_entry_finds_the_distributed_folder_by_dir_or_the_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let batches = d.join("downloads/cifar-10-batches-bin");
    std::fs::create_dir_all(&batches).unwrap();
    for f in [
        "data_batch_1.bin",
        "data_batch_2.bin",
        "data_batch_3.bin",
        "data_batch_4.bin",
        "data_batch_5.bin",
        "test_batch.bin",
    ] {
        std::fs::write(batches.join(f), cifar_records(20)).unwrap();
    }
    let dataset_with_dir = "name = \"cifar10\"\ndir = \"downloads\"";
    for (name, dataset, env) in [
        ("by-dir", dataset_with_dir, None),
        ("by-env", "name = \"cifar10\"", Some(d.join("downloads"))),
    ] {
        let text = preset(dataset)
            .replace("val_fraction = 0.1\n", "")
            .replace(
                "split_seed = 3\ndownsample = 2\nmax_val = 500",
                "max_val = 15",
            )
            .replace("batch_sizes = [16, 64]", "batch_sizes = [8]")
            .replace("trials_per_batch = 2", "trials_per_batch = 1");
        let p = d.join(format!("{name}.toml"));
        std::fs::write(&p, text).unwrap();
        let runs = d.join(format!("runs-{name}"));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_scaling-lab"));
        cmd.args([
            "sweep",
            p.to_str().unwrap(),
            "--runs-dir",
            runs.to_str().unwrap(),
        ]);
        match &env {
            Some(e) => cmd.env("SCALING_LAB_DATA_DIR", e),
            None => cmd.env_remove("SCALING_LAB_DATA_DIR"),
        };
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let log = read_run_log(&crate::common::only_log(&runs)).unwrap();
        let files: Vec<String> = log
            .header
            .data_files
            .iter()
            .map(|f| f.path.clone())
            .collect();
        assert_eq!(files.len(), 6, "{files:?}");
        assert!(
            files[0].ends_with("cifar-10-batches-bin/data_batch_1.bin")
                && files[5].ends_with("test_batch.bin"),
            "{files:?}"
        );
        assert_eq!(log.trials.len(), 1);
        assert!(!log.trials[0].outcome.evals.is_empty(), "{name}: it trains");
    }
}
