//! Runs anywhere: the binary copied out of the build tree and run from `/` lists the presets and
//! trains on digits with SCALING_LAB_DATA_DIR set; the embedded presets are exactly the files in
//! presets/; `install_data` copies verified files and never overwrites.

use std::path::Path;
use std::process::{Command, Stdio};

use scaling_lab::data::{install_data, ALL_FILES};
use scaling_lab::workload::presets::{find_preset_in, list_presets, EMBEDDED_PRESETS};

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");

#[test]
fn every_preset_file_is_embedded_verbatim() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("presets");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = EMBEDDED_PRESETS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    embedded.sort();
    assert_eq!(
        embedded, on_disk,
        "add new presets to EMBEDDED_PRESETS in src/workload/load.rs"
    );
    for (name, text) in EMBEDDED_PRESETS {
        let file = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
        assert_eq!(*text, file, "{name} differs from its file");
    }
}

#[test]
fn a_missing_presets_dir_falls_back_to_the_embedded_presets_but_a_path_never_does() {
    let nowhere = Path::new("/nonexistent-scaling-lab-presets");
    let listed = list_presets(nowhere);
    assert_eq!(listed.len(), EMBEDDED_PRESETS.len());
    for (p, r) in &listed {
        assert!(r.is_ok(), "{}: {:?}", p.display(), r);
    }
    let (path, p) = find_preset_in(nowhere, "digits-mlp-sgd").unwrap();
    assert_eq!(p.name, "digits-mlp-sgd");
    assert!(
        path.display().to_string().contains("<bundled>"),
        "{}",
        path.display()
    );
    // A path to a missing file is an error, not the bundled preset of the same name.
    let e = find_preset_in(nowhere, "/tmp/no-such-dir-x/digits-mlp-sgd.toml").unwrap_err();
    assert!(
        e.to_string()
            .contains("/tmp/no-such-dir-x/digits-mlp-sgd.toml"),
        "{e}"
    );
}

#[test]
fn install_data_copies_verified_files_and_never_overwrites() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("d");
    let r = install_data(&dest).unwrap();
    // In the build tree every file is found.
    assert_eq!(r.installed.len(), ALL_FILES.len(), "{r:?}");
    assert!(r.missing.is_empty());
    assert!(dest.join("NOTICE").is_file());
    for (f, res) in scaling_lab::data::verify_all(&dest) {
        assert!(res.is_ok(), "{}: {res:?}", f.name);
    }
    // Again: everything is already there.
    let r2 = install_data(&dest).unwrap();
    assert_eq!(r2.already.len(), ALL_FILES.len());
    assert!(r2.installed.is_empty());
    // A modified file is an error, never overwritten.
    let digits = dest.join(ALL_FILES[0].name);
    std::fs::write(&digits, b"not the file").unwrap();
    assert!(install_data(&dest).is_err());
    assert_eq!(std::fs::read(&digits).unwrap(), b"not the file");
}

#[test]
fn a_copied_binary_runs_from_root() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("scaling-lab");
    std::fs::copy(BIN, &bin).unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/digits.csv.gz");
    std::fs::copy(src, data.join("digits.csv.gz")).unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |args: &[&str]| {
        Command::new(&bin)
            .args(args)
            .current_dir("/")
            .env("HOME", &home)
            .env_remove("SCALING_LAB_PRESETS_DIR")
            .env("SCALING_LAB_DATA_DIR", &data)
            .env("SCALING_LAB_RUNS_DIR", tmp.path().join("runs"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["presets"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("digits-mlp-sgd"), "{stdout}");
    let out = run(&[
        "train",
        "--preset",
        "digits-mlp-sgd",
        "--batch-size",
        "16",
        "--steps",
        "20",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.is_object(), "{v}");
}
