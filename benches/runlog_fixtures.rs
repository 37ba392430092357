//! `SCALING_LAB_REGENERATE_FIXTURES=1 cargo bench --bench runlog_fixtures`: regenerates the run-log
//! fixtures `tests/fixtures/valid/{nqm-sgd,nqm-momentum,torn-tail}.jsonl` from a real NQM sweep and
//! the malformed logs of `tests/fixtures/invalid/*.jsonl` from them (the sweep tier's run-log tests
//! read them). Without the variable it says so and writes nothing.
use std::path::{Path, PathBuf};

use scaling_lab::workload::spec::OptimizerKind;

#[path = "../tests/common/mod.rs"]
mod common;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn main() {
    if std::env::var_os("SCALING_LAB_REGENERATE_FIXTURES").is_none_or(|v| v != "1") {
        println!("runlog_fixtures: set SCALING_LAB_REGENERATE_FIXTURES=1 to rewrite tests/fixtures/{{valid,invalid}}/*.jsonl");
        return;
    }

    let tmp = tempfile::tempdir().unwrap();
    let valid = fixtures().join("valid");
    let invalid = fixtures().join("invalid");
    std::fs::create_dir_all(&valid).unwrap();
    std::fs::create_dir_all(&invalid).unwrap();
    for opt in [OptimizerKind::Sgd, OptimizerKind::Momentum] {
        let p = common::fixture_sweep(tmp.path(), opt);
        std::fs::copy(&p, valid.join(format!("nqm-{}.jsonl", opt.name()))).unwrap();
    }
    let text = std::fs::read_to_string(valid.join("nqm-sgd.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (h, t1, t2) = (lines[0], lines[1], lines[2]);
    let n = lines.len();
    let w = |name: &str, s: String| std::fs::write(invalid.join(name), s).unwrap();
    // Valid but torn: summary dropped, last trial cut mid-line.
    std::fs::write(
        valid.join("torn-tail.jsonl"),
        format!(
            "{}\n{}",
            lines[..n - 2].join("\n"),
            &lines[n - 2][..lines[n - 2].len() / 2]
        ),
    )
    .unwrap();
    w(
        "unknown-schema.jsonl",
        format!("{}\n{t1}\n", h.replacen("\"schema\":1", "\"schema\":99", 1)),
    );
    w(
        "garbage-line.jsonl",
        format!("{h}\n{t1}\nthis is not json\n{t2}\n"),
    );
    w(
        "torn-middle.jsonl",
        format!("{h}\n{}\n{t2}\n", &t1[..t1.len() / 2]),
    );
    w("no-header.jsonl", format!("{t1}\n{t2}\n"));
    w(
        "bad-trial.jsonl",
        format!(
            "{h}\n{}\n",
            t1.replacen("\"batch_size\":", "\"batch_size\":\"x\",\"_\":", 1)
        ),
    );
    w("second-header.jsonl", format!("{h}\n{t1}\n{h}\n"));
    w(
        "unknown-type.jsonl",
        format!("{h}\n{{\"type\":\"note\",\"text\":\"hi\"}}\n"),
    );
    w("empty.jsonl", String::new());
    println!("runlog_fixtures: rewrote {}", fixtures().display());
}
