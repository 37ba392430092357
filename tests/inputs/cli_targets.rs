//! Reading a log at other targets, through the binary: `report --target` / `--targets` (text and
//! JSON, validated against docs/report-schema.json), a target stricter than the goal (not
//! measured), `compare` and an imported batch_science log at other targets, `export --bcrit-svg`,
//! a ladder sweep (`sweep --targets`: schema-2 header, goal = strictest rung), and every bad input
//! one clear error with exit 2.

use std::process::Command;

use crate::common::{only_log, root, run_ok as run, BIN};

fn golden(name: &str) -> String {
    root()
        .join("tests/fixtures/golden")
        .join(name)
        .display()
        .to_string()
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&run(args)).unwrap()
}

fn schema() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("docs/report-schema.json")).unwrap())
        .unwrap()
}

fn assert_valid(schema: &serde_json::Value, v: &serde_json::Value, what: &str) {
    let val = jsonschema::validator_for(schema).expect("schema compiles");
    let errors: Vec<String> = val
        .iter_errors(v)
        .map(|e| format!("at {}: {}", e.instance_path, e))
        .collect();
    assert!(errors.is_empty(), "{what}: {}", errors.join("\n"));
}

/// The `--targets --json` shape: the report schema's `$defs/targets_report`.
fn targets_schema() -> serde_json::Value {
    let mut s = schema();
    let o = s.as_object_mut().unwrap();
    o.remove("required");
    o.insert("$ref".into(), "#/$defs/targets_report".into());
    s
}

/// Exit code and stderr of a command expected to fail.
fn fails(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn report_at_a_looser_target_is_the_same_report_read_there() {
    let log = golden("digits-momentum-2workers.jsonl");
    let goal = json(&["report", &log, "--json"]);
    assert!(
        goal.get("goal").is_none(),
        "the goal reading has no goal field"
    );
    let at = json(&["report", &log, "--json", "--target", "0.1"]);
    assert_valid(&schema(), &at, "report --target --json");
    assert_eq!(at["target"], "val_error <= 0.1");
    assert_eq!(at["goal"], "val_error <= 0.04");
    assert_eq!(at["analysis"]["target"], "val_error <= 0.1");
    // the same shape as the goal's report, and fewer (or equal) steps at every B
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.retain(|k| k != "goal");
        k.sort();
        k
    };
    assert_eq!(keys(&goal), keys(&at));
    for (g, a) in goal["per_batch"]
        .as_array()
        .unwrap()
        .iter()
        .zip(at["per_batch"].as_array().unwrap())
    {
        let (g, a) = (g["steps"].as_u64().unwrap(), a["steps"].as_u64().unwrap());
        assert!(a <= g, "{a} > {g}");
    }
    let text = run(&["report", &log, "--target", "0.1"]);
    assert!(text.contains("target val_error <= 0.1"), "{text}");
    assert!(
        text.contains("the sweep ran to its goal val_error <= 0.04"),
        "{text}"
    );
    assert!(text.contains("fit S = S_min"), "{text}");
    // the goal itself, named explicitly: byte for byte today's report
    assert_eq!(
        run(&["report", &log, "--target", "0.04"]),
        run(&["report", &log])
    );
}

#[test]
fn a_stricter_target_is_never_extrapolated() {
    let log = golden("digits-momentum-2workers.jsonl");
    let v = json(&["report", &log, "--json", "--target", "0.01"]);
    assert_valid(&schema(), &v, "stricter --json");
    let rows = v["per_batch"].as_array().unwrap();
    let unmeasured: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["not_measured"] == true).collect();
    assert!(!unmeasured.is_empty(), "{v}");
    for r in &unmeasured {
        assert!(r["steps"].is_null(), "{r}");
    }
    assert!(v["fit"].is_null() && v["analysis"]["fit"].is_null());
    let text = run(&["report", &log, "--target", "0.01"]);
    assert!(text.contains("not-meas"), "{text}");
    assert!(text.contains("not measured at B ="), "{text}");
    assert!(!text.contains("fit S = S_min"), "{text}");
}

#[test]
fn targets_print_one_row_per_target_and_the_same_analyses() {
    let log = golden("digits-momentum-2workers.jsonl");
    let v = json(&["report", &log, "--json", "--targets", "0.2,0.1,0.06,0.04"]);
    assert_valid(&targets_schema(), &v, "--targets --json");
    let ts = v["targets"].as_array().unwrap();
    let values: Vec<f64> = ts.iter().map(|t| t["target"].as_f64().unwrap()).collect();
    assert_eq!(values, vec![0.2, 0.1, 0.06, 0.04]);
    for t in ts {
        let one = json(&[
            "report",
            &log,
            "--json",
            "--target",
            &t["target"].as_f64().unwrap().to_string(),
        ]);
        assert_eq!(t["analysis"], one["analysis"], "at {}", t["target"]);
    }
    assert_eq!(v["b_crit"].as_array().unwrap().len(), 4);
    let text = run(&["report", &log, "--targets", "0.2,0.1,0.06,0.04"]);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            let f = l.split_whitespace().next().unwrap_or("");
            f.parse::<f64>().is_ok()
        })
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    assert!(text.contains("trend: "), "{text}");
    // a single-target log gets a geometric ladder above its goal
    let auto = json(&["report", &log, "--json", "--targets", "auto"]);
    let n = auto["targets"].as_array().unwrap().len();
    assert!(n >= 3, "{auto}");
    assert_eq!(auto["targets"][n - 1]["target"], 0.04);
}

#[test]
fn compare_and_an_import_read_other_targets() {
    let a = golden("digits-momentum-2workers.jsonl");
    let b = golden("nqm-narrow-edges.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("bs.jsonl").display().to_string();
    run(&[
        "import-batch-science",
        &root()
            .join("tests/fixtures/batch_science/mnist/simple_cnn_base/momentum")
            .display()
            .to_string(),
        "--target",
        "0.01",
        "--out",
        &imported,
    ]);
    let loose = json(&["report", &imported, "--json", "--target", "0.03"]);
    assert_valid(&schema(), &loose, "import at 0.03");
    assert_eq!(loose["goal"], "val_error <= 0.01");
    let c = run(&["compare", &a, &imported, "--target", "0.05"]);
    assert!(c.contains("val_error <= 0.05"), "{c}");
    let c = run(&["compare", &a, &imported, "--targets", "0.2,0.1,0.05"]);
    assert!(
        c.contains("#1 B_crit [95%]") && c.contains("#2 B_crit [95%]"),
        "{c}"
    );
    assert_eq!(
        c.lines()
            .filter(|l| l.trim_start().starts_with("0.1 "))
            .count(),
        1,
        "{c}"
    );
    // a target out of one log's metric range: one usage error
    let (code, err) = fails(&["compare", &a, &b, "--target", "1.5"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: --target:"), "{err}");
}

#[test]
fn export_bcrit_svg_plots_the_ladder() {
    let log = golden("digits-momentum-2workers.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("bcrit.svg");
    let s = svg.display().to_string();
    let out = run(&["export", &log, "--bcrit-svg", &s]);
    assert!(out.contains("wrote"), "{out}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..100]);
    for needle in ["B_crit", "S_min", "tighter", "trend"] {
        assert!(text.contains(needle), "missing {needle}");
    }
    let svg2 = dir.path().join("b2.svg").display().to_string();
    run(&[
        "export",
        &log,
        "--bcrit-svg",
        &svg2,
        "--targets",
        "0.3,0.1,0.04",
    ]);
    let (code, err) = fails(&["export", &log, "--targets", "0.1"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn bad_target_inputs_are_one_clear_usage_error() {
    let log = golden("digits-momentum-2workers.jsonl");
    for (args, needle) in [
        (vec!["--target", "1.5"], "--target: 1.5 is out of range"),
        (vec!["--target", "0"], "--target:"),
        (vec!["--target", "nan"], "--target:"),
        (
            vec!["--targets", "0.1,abc"],
            "--targets: `abc` is not a number",
        ),
        (vec!["--targets", "0.1,-0.2"], "--targets:"),
        (vec!["--targets", ""], "--targets:"),
        (vec!["--target", "0.1", "--targets", "0.2"], "--target"),
    ] {
        let mut a = vec!["report", log.as_str()];
        a.extend(args.iter().copied());
        let (code, err) = fails(&a);
        assert_eq!(code, 2, "{a:?}: {err}");
        assert!(err.contains(needle), "{a:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{a:?}: {err}");
    }
}

#[test]
fn a_ladder_sweep_runs_to_the_strictest_rung() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().display().to_string();
    let out = run(&[
        "sweep",
        "nqm-sgd",
        "--batch-sizes",
        "4,16,64,256",
        "--trials",
        "4",
        "--targets",
        "0.5,0.2,0.1",
        "--runs-dir",
        &runs,
    ]);
    assert!(out.contains("target nqm_loss <= 0.1"), "{out}");
    assert!(out.contains("ladder of targets: 0.5, 0.2, 0.1"), "{out}");
    let log = only_log(dir.path());
    let header: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["schema"], 2);
    // every line of the schema-2 log, and of a schema-1 fixture, validates against the run-log schema
    let runlog_schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/runlog-schema.json")).unwrap(),
    )
    .unwrap();
    for path in [
        log.clone(),
        root().join("tests/fixtures/golden/nqm-narrow-edges.jsonl"),
    ] {
        for (i, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_valid(&runlog_schema, &v, &format!("{}:{}", path.display(), i + 1));
        }
    }
    let mut bad = header.clone();
    bad["preset"]["workload"]["targets"] = serde_json::json!(["0.2"]);
    assert!(!jsonschema::validator_for(&runlog_schema)
        .unwrap()
        .is_valid(&bad));
    assert_eq!(header["preset"]["workload"]["target"]["value"], 0.1);
    assert_eq!(
        header["preset"]["workload"]["targets"],
        serde_json::json!([0.5, 0.2])
    );
    let v = json(&[
        "report",
        &log.display().to_string(),
        "--json",
        "--targets",
        "auto",
    ]);
    let values: Vec<f64> = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_f64().unwrap())
        .collect();
    assert_eq!(values, vec![0.5, 0.2, 0.1]);
    for t in v["targets"].as_array().unwrap() {
        for p in t["analysis"]["per_batch"].as_array().unwrap() {
            assert!(p.get("not_measured").is_none(), "{p}");
        }
    }
    // a ladder rung out of range, and --targets with --resume
    let (code, err) = fails(&[
        "sweep",
        "nqm-sgd",
        "--targets",
        "0.1,-1",
        "--runs-dir",
        &runs,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--targets"), "{err}");
    let (code, err) = fails(&[
        "sweep",
        "--resume",
        &log.display().to_string(),
        "--targets",
        "0.3",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--targets cannot change a resumed sweep"),
        "{err}"
    );
}
