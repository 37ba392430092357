//! A language model's transfer probe as a user sees it: `train` prints the readout beside its
//! controls, a sweep's report shows the probe per batch size beside S(B) (text, `--json` valid
//! against `docs/report-schema.json`, and the TUI's status panel), and the run log it writes
//! validates against `docs/runlog-schema.json`. Real short trainings of a small char-LSTM on the bundled reviews.

use crate::common::{only_log, root, run_ok as run};

const PRESET: &str = r#"name = "reviews-transfer-test"
description = "a small LSTM on the reviews with a sentiment probe"

[workload]
optimizer = "adam"
eval_every = 5
step_budget = 10
grad_clip = 1.0

[workload.dataset]
name = "reviews"
split_seed = 3
max_bytes = 60000
seq_len = 32
max_val = 8
probe = { train = 80, val = 30, test = 60 }

[workload.model]
kind = "char-lstm"
embed = 8
hidden = 16

[workload.target]
metric = "val_bpc"
value = 7.9

[workload.transfer]
feature = "cell"

[workload.defaults]
learning_rate = 0.01

[search]
learning_rate = [0.003, 0.03]

[sweep]
batch_sizes = [4, 8]
trials_per_batch = 1
confirm = "off"
"#;

fn validator(path: &str) -> jsonschema::Validator {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(path)).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn assert_valid(v: &jsonschema::Validator, doc: &serde_json::Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("at {}: {}", e.instance_path, e))
        .collect();
    assert!(errors.is_empty(), "{what}: {}", errors.join("\n"));
}

/// The Live screen of `log`, as text.
fn panel_text(log: &scaling_lab::runlog::RunLog) -> String {
    use scaling_lab::tui::app::{LiveState, Screen};
    let mut o = scaling_lab::tui::TuiOptions::new("runs".into(), root().join("presets"));
    o.initial_preset = None;
    let mut app = scaling_lab::tui::initial_app(&o, scaling_lab::tui::theme::Theme::default());
    app.log = Some(LiveState::from_log(log, false, 0.0));
    app.view = scaling_lab::tui::app::LiveView::Log;
    app.screen = Screen::Live;
    let (w, h) = (160u16, 48u16);
    let buf = scaling_lab::tui::screenshot::render_app(&app, w, h);
    let mut s = String::new();
    for y in 0..h {
        for x in 0..w {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

#[test]
fn train_prints_the_readout_beside_its_controls() {
    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("p.toml");
    std::fs::write(&preset, PRESET).unwrap();
    let p = preset.display().to_string();
    let runs = dir.path().join("runs").display().to_string();
    let out = run(&[
        "train",
        "--preset",
        &p,
        "--batch-size",
        "4",
        "--runs-dir",
        &runs,
    ]);
    for want in [
        "transfer: an L1 logistic-regression probe",
        "80 train / 30 val / 60 test",
        "controls: majority class",
        "bag-of-bytes",
        "above step 0, points",
        "its step-0 control",
        // the step-0 control's weights beside its accuracy
        "step 0 (weights)",
        // what the transfer time holds (never "X s of the trial's Y s")
        "s in all — the step-0 encoding of the probe's sentences before the trial's clock started",
    ] {
        assert!(out.contains(want), "{want:?} missing:\n{out}");
    }
    assert!(!out.contains("of the trial's"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&run(&[
        "train",
        "--preset",
        &p,
        "--batch-size",
        "4",
        "--json",
        "--runs-dir",
        &runs,
    ]))
    .unwrap();
    let r = &json["outcome"]["transfer"]["readout"];
    assert_eq!(r["probe"]["n"], 60, "{json}");
    assert_eq!(r["control"]["n"], 60);
    // a step-0 probe that kept no weight is said to predict the majority class
    let kept = r["control"]["nonzero"].as_u64().unwrap();
    assert_eq!(
        out.contains("step 0 kept 0 weights"),
        kept == 0,
        "{kept} weights:\n{out}"
    );
}

#[test]
fn a_sweeps_report_shows_the_probe_per_batch_size() {
    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("p.toml");
    std::fs::write(&preset, PRESET).unwrap();
    let runs = dir.path().join("runs").display().to_string();
    let sweep: serde_json::Value = serde_json::from_str(&run(&[
        "sweep",
        &preset.display().to_string(),
        "--json",
        "--runs-dir",
        &runs,
    ]))
    .unwrap();
    let report_schema = validator("docs/report-schema.json");
    assert_valid(&report_schema, &sweep, "sweep --json");
    let t = &sweep["transfer"];
    let rows = t["per_batch"].as_array().expect("a transfer section");
    let bs: Vec<u64> = rows
        .iter()
        .map(|r| r["batch_size"].as_u64().unwrap())
        .collect();
    assert_eq!(bs, vec![4, 8], "{t}");
    assert_eq!(t["test_sentences"], 60);
    assert_eq!(t["sentences"]["train"], 80);
    for r in rows {
        // the best trial's steps beside its probe, read at that step
        assert_eq!(r["steps"], r["step"], "{r}");
        assert!(r["control_nonzero"].as_u64().is_some(), "{r}");
        assert!(r["val_bpc"].as_f64().unwrap() <= 7.9);
    }
    let log = only_log(dir.path().join("runs").as_path());
    let text = run(&["report", &log.display().to_string()]);
    for want in ["transfer: an L1", "step 0", "its step-0 control"] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    // the TUI's status panel: the probe and its gain over step 0 beside S(B)
    let read = scaling_lab::runlog::reader::read_run_log(&log).unwrap();
    let panel = panel_text(&read);
    assert!(panel.contains("probe% Δ0"), "{panel}");
    let runlog = validator("docs/runlog-schema.json");
    for (i, line) in std::fs::read_to_string(&log).unwrap().lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_valid(&runlog, &v, &format!("{}:{}", log.display(), i + 1));
    }
}
