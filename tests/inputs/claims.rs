//! The scientific claims README.md, docs/targets.md and the digits presets' headers make, checked
//! against a fresh default study (they go stale when the lab's readout changes: this fails then).

use crate::common;

use std::process::{Command, Stdio};

use common::{find_log, BIN};

/// `report LOG --json --targets …` of a fresh default `sweep PRESET`: the B_crit trend.
fn b_crit_trend(preset: &str) -> serde_json::Value {
    let runs = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["sweep", preset, "--runs-dir"])
        .arg(runs.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = find_log(runs.path()).unwrap();
    let out = Command::new(BIN)
        .arg("report")
        .arg(&log)
        .args(["--json", "--targets", "0.2,0.1,0.06,0.04"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["b_crit_trend"].clone()
}

/// "On digits-MLP B_crit grows as the target tightens" (README, docs/targets.md,
/// presets/digits-mlp-*.toml): with every optimizer, the trend's exponent interval lies below 0 on
/// the default confirmed readout.
#[test]
fn digits_b_crit_grows_as_the_target_tightens() {
    for opt in ["sgd", "momentum", "nesterov", "adam"] {
        let t = b_crit_trend(&format!("digits-mlp-{opt}"));
        let ci = t["exponent_ci"]
            .as_array()
            .expect("a trend with an interval");
        let hi = ci[1].as_f64().unwrap();
        assert!(
            hi < 0.0,
            "{opt}: B_crit ∝ target^k, k's interval reaches 0: {t}"
        );
    }
}
