//! The CIFAR-10 ResNet presets read the user's CIFAR-10 files: without them `train` stops with one
//! line naming the files and where they come from (exit 1, a runtime error: the preset is valid);
//! with files of CIFAR-10's binary format on `SCALING_LAB_DATA_DIR` (a few records each, random
//! pixels) the preset builds its ResNet with ghost batch normalisation and trains a few steps.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");
const PRESETS: [&str; 3] = [
    "cifar10-resnet8-adam",
    "cifar10-resnet8-momentum",
    "cifar10-resnet8-sgd",
];

fn train(preset: &str, data_dir: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(BIN)
        .args(["train", "--json", "--preset", preset, "--batch-size", "32"])
        .args(["--steps", "2", "--eval-every", "2"])
        .env("SCALING_LAB_DATA_DIR", data_dir)
        .env_remove("SCALING_LAB_PRESETS_DIR")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_the_files_one_line_names_them_and_their_source() {
    let dir = tempfile::tempdir().unwrap();
    for p in PRESETS {
        let (code, _, err) = train(p, dir.path());
        assert_eq!(code, Some(1), "{p}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{p}: one line, got:\n{err}");
        for says in [
            "data_batch_1.bin",
            "test_batch.bin",
            "cifar-10-binary.tar.gz",
        ] {
            assert!(lines[0].contains(says), "{p}: {says} missing in {err}");
        }
    }
}

#[test]
fn with_cifar10_files_the_resnet_trains() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<String> = (1..=5).map(|i| format!("data_batch_{i}.bin")).collect();
    files.push("test_batch.bin".into());
    for (f, name) in files.iter().enumerate() {
        // 40 records: a label byte (0..9), then 3,072 pixel bytes
        let mut bytes = Vec::new();
        for r in 0..40u32 {
            bytes.push(((r + f as u32) % 10) as u8);
            bytes.extend((0..3072u32).map(|i| (i.wrapping_mul(31) ^ r.wrapping_mul(97)) as u8));
        }
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let (code, out, err) = train("cifar10-resnet8-momentum", dir.path());
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["outcome"]["steps"], 2, "{out}");
    let evals = v["outcome"]["evals"].as_array().unwrap();
    let last = evals.last().unwrap()["metric"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&last), "{out}");
}
