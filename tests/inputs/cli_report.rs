//! `sweep` then `report` through the real binary: the report ends with the time-to-target
//! projection, and a sweep run on 2 data-parallel workers gets a measured link whose G = 2 cell
//! is the only one marked measured.

use crate::common;

use std::process::Command;

use crate::common::{only_log, run_ok as run, BIN};

#[test]
fn sweep_then_report_with_projection() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().display().to_string();
    let sweep = run(&[
        "sweep",
        "digits-mlp-momentum",
        "--batch-sizes",
        "16,64,256",
        "--trials",
        "2",
        "--workers",
        "2",
        "--runs-dir",
        &runs,
    ]);
    assert!(sweep.contains("time-to-target vs devices"), "{sweep}");
    let log = only_log(dir.path());
    let log_s = log.display().to_string();

    let report = run(&["report", &log_s, "--max-devices", "64"]);
    assert!(report.starts_with("sweep digits-mlp-momentum"), "{report}");
    for needle in ["regimes", "NVLink", "InfiniBand EDR", "10GbE", "measured "] {
        assert!(report.contains(needle), "missing {needle}:\n{report}");
    }
    // G = 1 … 64 (every B ≥ 64 exists): 7 rows, 4 links.
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| {
            l.trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
                && l.contains('│')
        })
        .collect();
    assert_eq!(rows.len(), 7, "{report}");
    let starred: Vec<&&str> = rows.iter().filter(|l| l.contains("×*")).collect();
    assert_eq!(starred.len(), 1, "{report}");
    assert!(starred[0].trim_start().starts_with("2 "), "{report}");

    let json: serde_json::Value =
        serde_json::from_str(&run(&["report", &log_s, "--json", "--max-devices", "64"])).unwrap();
    let ps = json["projections"].as_array().expect("projections");
    assert_eq!(ps.len(), 4);
    let measured = &ps[3];
    assert_eq!(measured["link"]["measured"], true);
    assert!(measured["link"]["bandwidth"].as_f64().unwrap() > 0.0);
    assert_eq!(measured["compute"]["replicas"], 2);
    for p in ps {
        for r in p["rows"].as_array().unwrap() {
            assert!(r["batch_size"].as_u64().unwrap() >= r["devices"].as_u64().unwrap());
            assert!(r["time_to_target_s"].as_f64().unwrap() > 0.0);
        }
    }
    assert!(
        measured["link"]["source"]
            .as_str()
            .unwrap()
            .contains("trials' exchange times"),
        "{measured}"
    );

    // A real (small) `bench --allreduce` saves its table in the runs directory; from then on the
    // projection's measured link is the ring model fitted to that table (latency and bandwidth),
    // and the report checks it against the trials' own exchange times.
    let bench = run(&[
        "bench",
        "--allreduce",
        "--worlds",
        "2,4",
        "--max-message",
        "262144",
        "--runs-dir",
        &runs,
    ]);
    assert!(bench.contains("ring model over all cells"), "{bench}");
    assert!(dir.path().join("allreduce.json").is_file(), "{bench}");
    let report = run(&["report", &log_s, "--max-devices", "64"]);
    assert!(
        report.contains("measured link: fit of `bench --allreduce`"),
        "{report}"
    );
    assert!(report.contains("exchange check at G = 2"), "{report}");
    let json: serde_json::Value =
        serde_json::from_str(&run(&["report", &log_s, "--json", "--max-devices", "64"])).unwrap();
    let link = &json["projections"][3]["link"];
    assert_eq!(link["measured"], true);
    assert!(link["latency"].as_f64().unwrap() >= 0.0, "{link}");
    assert!(
        link["source"].as_str().unwrap().contains("cells, G = 2, 4"),
        "{link}"
    );
    assert!(json["exchange_check"]["measured_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn report_of_a_bad_file_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.jsonl");
    std::fs::write(&p, "not json\n").unwrap();
    let out = Command::new(BIN)
        .args(["report", &p.display().to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("x.jsonl") && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn nqm_report_has_no_projection() {
    let fixture = common::root().join("tests/fixtures/valid/nqm-sgd.jsonl");
    let f = fixture.display().to_string();
    let report = run(&["report", &f]);
    assert!(report.contains("B_crit"), "{report}");
    assert!(report.contains("none for the NQM"), "{report}");
    let json: serde_json::Value = serde_json::from_str(&run(&["report", &f, "--json"])).unwrap();
    assert!(json["projections"].is_null());
    assert!(json["analysis"]["per_batch"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
}
