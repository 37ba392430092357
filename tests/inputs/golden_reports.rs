//! The before/after guard of the report pipeline: every fixture run log (the committed NQM
//! fixtures; NQM sweeps of `tests/fixtures/golden/nqm-narrow.toml` with search-edge flags, and
//! widened with repeats; an NQM sweep with two batch sizes; a digits sweep on 2 workers with
//! measured times and exchange; a batch_science import) is read through the binary —
//! `report` (text and `--json`), `export` (points CSV, trials CSV, JSON, SVG chart, metaparameter
//! SVG), `compare` and `import-batch-science` — and the output is compared byte for byte with the
//! golden files in `tests/golden/`. The same logs give the same numbers whatever shape the code
//! takes.
//!
//! After an intended change of what a report says: `UPDATE_GOLDEN=1 cargo test --release --test
//! inputs golden` rewrites the files; the commit says what changed and why.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{root, BIN};

/// The run logs under test, relative to the repository root.
const LOGS: &[&str] = &[
    "tests/fixtures/valid/nqm-sgd.jsonl",
    "tests/fixtures/valid/nqm-momentum.jsonl",
    "tests/fixtures/valid/torn-tail.jsonl",
    "tests/fixtures/golden/nqm-narrow-edges.jsonl",
    "tests/fixtures/golden/nqm-narrow-widen.jsonl",
    "tests/fixtures/golden/nqm-sgd-two-sizes.jsonl",
    "tests/fixtures/golden/digits-momentum-2workers.jsonl",
    "tests/fixtures/golden/batch-science-momentum.jsonl",
];

fn golden_dir() -> PathBuf {
    root().join("tests/golden")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v != "0")
}

/// Runs the binary in the repository root (relative paths in the output), no runs dir of ours:
/// stdout, or a panic with both streams.
fn run(args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(root())
        .env_remove("SCALING_LAB_RUNS_DIR")
        .output()
        .expect("run scaling-lab");
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Compares `actual` with the golden file `name` (or writes it with UPDATE_GOLDEN); returns a
/// description of the difference.
fn check(name: &str, actual: &str) -> Option<String> {
    let path = golden_dir().join(name);
    if updating() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return None;
    }
    let expected = match std::fs::read_to_string(&path) {
        Ok(e) => e,
        Err(e) => {
            return Some(format!(
                "{name}: no golden file ({e}); run with UPDATE_GOLDEN=1"
            ))
        }
    };
    if expected == actual {
        return None;
    }
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let first = (0..e.len().max(a.len()))
        .find(|&i| e.get(i) != a.get(i))
        .unwrap_or(0);
    Some(format!(
        "{name}: differs from the golden file first at line {}:\n  golden: {:?}\n  now:    {:?}",
        first + 1,
        e.get(first).copied().unwrap_or("<end>"),
        a.get(first).copied().unwrap_or("<end>")
    ))
}

fn stem(log: &str) -> String {
    Path::new(log)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn report_outputs(log: &str) -> Vec<(String, String)> {
    let s = stem(log);
    vec![
        (format!("{s}.report.txt"), run(&["report", log])),
        (format!("{s}.report.json"), run(&["report", log, "--json"])),
    ]
}

fn export_outputs(log: &str) -> Vec<(String, String)> {
    let s = stem(log);
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("--csv", "points.csv"),
        ("--trials-csv", "trials.csv"),
        ("--json", "export.json"),
        ("--svg", "chart.svg"),
        ("--metaparams-svg", "meta.svg"),
    ];
    let mut args: Vec<String> = vec!["export".into(), log.into()];
    for (flag, f) in files {
        args.push(flag.into());
        args.push(dir.path().join(f).display().to_string());
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&argv);
    files
        .iter()
        .map(|(_, f)| {
            let mut text = std::fs::read_to_string(dir.path().join(f)).unwrap();
            if *f == "export.json" {
                text = without_log_copy(log, &text);
            }
            (format!("{s}.{f}"), text)
        })
        .collect()
}

/// The export JSON without its copy of the log's header and trials (checked here to be exactly
/// the log's own): what stays is the recomputed analysis, the path and the status.
fn without_log_copy(log: &str, text: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    let read = scaling_lab::runlog::reader::read_run_log(&root().join(log)).unwrap();
    let o = v.as_object_mut().unwrap();
    let header = o.remove("header").unwrap();
    let trials = o.remove("trials").unwrap();
    assert_eq!(header, serde_json::to_value(&read.header).unwrap(), "{log}");
    assert_eq!(trials, serde_json::to_value(&read.trials).unwrap(), "{log}");
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

fn assert_all(outputs: Vec<(String, String)>) {
    let diffs: Vec<String> = outputs
        .iter()
        .filter_map(|(name, text)| check(name, text))
        .collect();
    assert!(diffs.is_empty(), "{}", diffs.join("\n\n"));
}

#[test]
fn report_text_and_json_of_every_fixture_log_are_unchanged() {
    assert_all(LOGS.iter().flat_map(|l| report_outputs(l)).collect());
}

#[test]
fn exports_of_every_fixture_log_are_unchanged() {
    assert_all(LOGS.iter().flat_map(|l| export_outputs(l)).collect());
}

#[test]
fn compare_outputs_are_unchanged() {
    assert_all(vec![
        (
            "compare-nqm.txt".into(),
            run(&["compare", LOGS[0], LOGS[1]]),
        ),
        (
            "compare-three.txt".into(),
            run(&["compare", LOGS[1], LOGS[4], LOGS[6]]),
        ),
    ]);
}

/// The import prints the imported log's report: the same one `report` gives for it.
#[test]
fn import_output_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported.jsonl");
    let text = run(&[
        "import-batch-science",
        "tests/fixtures/batch_science/mnist/simple_cnn_base/momentum",
        "--target",
        "0.01",
        "--out",
        &out.display().to_string(),
    ]);
    let text = text.replace(&dir.path().display().to_string(), "<tmp>");
    assert_all(vec![("import.txt".into(), text)]);
}
