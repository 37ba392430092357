//! One report, three views: a fixture log rendered by `report` (text), `report --json` and the
//! TUI's Live status panel shows the same numbers from the same `Report`; the JSON of `report`
//! and of `sweep --json` validates against `docs/report-schema.json`.

use std::path::PathBuf;

use scaling_lab::report::{num, Report};
use scaling_lab::tui::app::{LiveState, Screen};
use scaling_lab::tui::theme::Theme;
use scaling_lab::tui::{initial_app, TuiOptions};

use crate::common::{only_log, root, run_ok as run};

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/report-schema.json")).unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn assert_valid(v: &serde_json::Value, what: &str) {
    let val = validator();
    let errors: Vec<String> = val
        .iter_errors(v)
        .map(|e| format!("at {}: {}", e.instance_path, e))
        .collect();
    assert!(errors.is_empty(), "{what}: {}", errors.join("\n"));
}

fn panel_text(log: &scaling_lab::runlog::RunLog) -> String {
    let mut o = TuiOptions::new(PathBuf::from("runs"), root().join("presets"));
    o.initial_preset = None;
    let mut app = initial_app(&o, Theme::default());
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
fn text_json_and_tui_panel_show_the_same_numbers() {
    let path = root().join("tests/fixtures/valid/nqm-sgd.jsonl");
    let p = path.display().to_string();
    let log = scaling_lab::runlog::reader::read_run_log(&path).unwrap();
    let report = Report::from_log(&log, 1024);
    let fit = report.fit.as_ref().expect("the fixture has a fit");

    // CLI text: exactly the report's text.
    let text = run(&["report", &p]);
    assert_eq!(text, report.text());
    let (s_min, b_crit, r2) = report.fit_numbers().unwrap();
    assert!(
        text.contains(&format!("S_min = {s_min} steps, B_crit = {b_crit}")),
        "{text}"
    );

    // JSON: the same value, valid against the committed schema.
    let json: serde_json::Value = serde_json::from_str(&run(&["report", &p, "--json"])).unwrap();
    assert_valid(&json, "report --json");
    assert_eq!(json, report.to_json());
    assert_eq!(json["fit"]["b_crit"].as_f64(), Some(fit.b_crit));
    assert_eq!(num(json["fit"]["s_min"].as_f64().unwrap()), s_min);
    let rows = json["per_batch"].as_array().unwrap();
    assert_eq!(rows.len(), report.per_batch.len());

    // TUI Live status panel: same fit, noise prediction and per-B steps.
    let panel = panel_text(&log);
    assert!(
        panel.contains(&format!("S_min {s_min} · B_crit {b_crit}")),
        "{panel}"
    );
    assert!(panel.contains(&format!("r² {r2}")), "{panel}");
    if let Some(n) = &report.noise {
        let m = num(n.median_b_simple);
        assert!(panel.contains(&format!("median {m}")), "{panel}");
        assert!(text.contains(&format!("best trials = {m}")), "{text}");
    }
    for (row, jrow) in report.per_batch.iter().zip(rows) {
        let steps = row
            .steps
            .map(|s| s.to_string())
            .unwrap_or_else(|| "–".into());
        assert!(
            panel.contains(&format!("{:>5} {:>7} ", row.batch_size, steps)),
            "B={} steps {steps} missing from the panel:\n{panel}",
            row.batch_size
        );
        assert_eq!(jrow["steps"].as_u64(), row.steps);
        let cli_steps = row
            .steps
            .map(|s| s.to_string())
            .unwrap_or_else(|| "none".into());
        assert!(
            text.lines().any(|l| {
                let mut f = l.split_whitespace();
                f.next() == Some(&row.batch_size.to_string()) && f.next() == Some(&cli_steps)
            }),
            "B={} missing from the text",
            row.batch_size
        );
    }
    if let Some(pu) = report.perfect_up_to {
        assert!(panel.contains(&format!("perfect ≤ {pu}")), "{panel}");
        assert_eq!(json["perfect_up_to"].as_u64(), Some(pu as u64));
    }
}

#[test]
fn sweep_json_validates_and_matches_report_json() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().display().to_string();
    let out = run(&[
        "sweep",
        "digits-mlp-sgd",
        "--batch-sizes",
        "32,128,512",
        "--trials",
        "2",
        "--json",
        "--runs-dir",
        &runs,
    ]);
    let sweep: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON value");
    assert_valid(&sweep, "sweep --json");
    assert!(sweep["projections"].is_array(), "{sweep}");
    // 6 search trials and the confirm stage (the preset's plan is 1x10 with
    // confirm_until 0.15): blocks of 10 fresh seeds of each B's best configuration that reached,
    // or that early stopping cut before it could — at least one block, more where the confirmed
    // interval was wider than ±15 % (then "met" or why not)
    let confirm: u64 = sweep["analysis"]["per_batch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["confirmed"]["configs"]
                .as_array()
                .map_or(0, |c| c.iter().map(|k| k["runs"].as_u64().unwrap()).sum())
        })
        .sum();
    for (p, a) in sweep["per_batch"]
        .as_array()
        .unwrap()
        .iter()
        .zip(sweep["analysis"]["per_batch"].as_array().unwrap())
    {
        let candidates = p["reached"].as_u64().unwrap() + p["early_stopped"].as_u64().unwrap();
        let runs: u64 = a["confirmed"]["configs"]
            .as_array()
            .map_or(0, |c| c.iter().map(|k| k["runs"].as_u64().unwrap()).sum());
        if candidates == 0 {
            assert_eq!(runs, 0, "{a}");
            continue;
        }
        assert!(
            runs >= 10 && runs.is_multiple_of(10),
            "whole blocks of 10: {a}"
        );
        let w = a["confirmed"]["steps_ci"]["hi"]
            .as_u64()
            .zip(a["confirmed"]["steps"].as_u64())
            .map(|(hi, s)| {
                (hi - a["confirmed"]["steps_ci"]["lo"].as_u64().unwrap()) as f64 / 2.0 / s as f64
            });
        // a block beyond the first only where the interval was wider than ±15 %; the report
        // says for every B whether ±15 % was met, and why not
        assert!(a["until"].is_string(), "{a}");
        if a["until"] == "met" {
            assert!(w.is_some_and(|w| w <= 0.15), "{a}");
        }
    }
    assert_eq!(sweep["trials_done"], 6 + confirm);
    assert_eq!(sweep["confirm"], "1x10");
    assert_eq!(sweep["readout"], "confirmed");
    assert_eq!(sweep["errors"].as_array().map(Vec::len), Some(0));
    let log = only_log(dir.path()).display().to_string();
    let report: serde_json::Value =
        serde_json::from_str(&run(&["report", &log, "--json"])).unwrap();
    assert_valid(&report, "report --json");
    for key in ["per_batch", "fit", "regimes", "noise", "kept", "target"] {
        assert_eq!(sweep[key], report[key], "{key}");
    }
    // a real training's log (B_simple and its interval in every trial) validates against the
    // run-log schema, and the report's band comes from those intervals
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/runlog-schema.json")).unwrap(),
    )
    .unwrap();
    let runlog = jsonschema::validator_for(&schema).expect("schema compiles");
    let mut intervals = 0;
    for (i, line) in std::fs::read_to_string(&log).unwrap().lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let errors: Vec<String> = runlog
            .iter_errors(&v)
            .map(|e| format!("at {}: {}", e.instance_path, e))
            .collect();
        assert!(errors.is_empty(), "{log}:{}: {}", i + 1, errors.join("\n"));
        let noise = &v["outcome"]["noise"];
        if noise["b_simple"].is_number() {
            let (b, lo) = (
                noise["b_simple"].as_f64().unwrap(),
                &noise["interval"]["lo"],
            );
            assert!(lo.as_f64().is_some_and(|lo| lo <= b), "{line}");
            intervals += 1;
        }
    }
    assert!(intervals >= 3, "{intervals} trials with an interval");
    if report["noise"].is_object() {
        assert!(report["noise"]["interval"]["lo"].is_number(), "{report}");
    }
}
