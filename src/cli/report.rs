//! `report` and `compare`: a run log's report (text or `--json`), at its goal or at other targets
//! (`--target`, `--targets`), and several logs side by side.

use std::process::ExitCode;

use scaling_lab::report::compare::{compare_at, compare_json, render_compare};
use scaling_lab::report::targets::{self, render_compare_targets};
use scaling_lab::report::{Report, Run};
use scaling_lab::runlog::link_table::find_link_table;
use scaling_lab::runlog::RunLog;
use scaling_lab::sweep::overrides::check_target;

use super::args::{CompareArgs, ReportArgs};
use super::{out, outln, read_log, usage, CmdResult};

/// Checks a target value against the metric of every log (a usage error naming `flag`).
fn check_value(flag: &str, v: f64, logs: &[&RunLog]) -> anyhow::Result<()> {
    for l in logs {
        if let Some(p) = check_target(l.header.preset.workload.target.metric, v) {
            return Err(usage(format!("{flag}: {}", p.message)));
        }
    }
    Ok(())
}

/// `--targets`: `auto` (empty: each log's own ladder) or a comma list of values in range.
pub fn parse_targets(text: &str, logs: &[&RunLog]) -> anyhow::Result<Vec<f64>> {
    if text.trim() == "auto" {
        return Ok(Vec::new());
    }
    let mut v = Vec::new();
    for part in text.split(',') {
        let p = part.trim();
        let x: f64 = p.parse().map_err(|_| {
            usage(format!(
                "--targets: `{p}` is not a number (give e.g. 0.2,0.1,0.06 or auto)"
            ))
        })?;
        check_value("--targets", x, logs)?;
        v.push(x);
    }
    if v.len() > scaling_lab::workload::check::MAX_TARGETS + 1 {
        return Err(usage(format!(
            "--targets: {} values, at most {}",
            v.len(),
            scaling_lab::workload::check::MAX_TARGETS + 1
        )));
    }
    Ok(v)
}

pub fn cmd_report(a: ReportArgs) -> CmdResult {
    let log = read_log(&a.log)?;
    if let Some(t) = a.target {
        check_value("--target", t, &[&log])?;
    }
    if let Some(text) = &a.targets {
        let values = parse_targets(text, &[&log])?;
        let r = targets::build(&Run::of_log(&log), &values);
        if a.json {
            outln(&serde_json::to_string_pretty(&r.to_json())?);
        } else {
            out(&r.text());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (table, note) = find_link_table(&a.log);
    if let Some(n) = note {
        eprintln!("warning: {n} (ignored; the projection uses the trials' exchange times)");
    }
    let report = Report::from_log_at(&log, a.max_devices, table.as_ref(), a.target);
    if a.json {
        outln(&serde_json::to_string_pretty(&report.to_json())?);
    } else {
        out(&report.text());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn cmd_compare(a: CompareArgs) -> CmdResult {
    let mut logs = vec![];
    for l in &a.logs {
        logs.push(read_log(l)?);
    }
    let refs: Vec<&RunLog> = logs.iter().collect();
    if let Some(t) = a.target {
        check_value("--target", t, &refs)?;
    }
    if let Some(text) = &a.targets {
        let values = parse_targets(text, &refs)?;
        if a.json {
            let runs: Vec<serde_json::Value> = logs
                .iter()
                .map(|l| targets::build(&Run::of_log(l), &values).to_json())
                .collect();
            outln(&serde_json::to_string_pretty(
                &serde_json::json!({ "runs": runs }),
            )?);
        } else {
            out(&render_compare_targets(&logs, &values));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let c = compare_at(&logs, a.target);
    if a.json {
        outln(&serde_json::to_string_pretty(&compare_json(&c))?);
    } else {
        out(&render_compare(&c));
    }
    Ok(ExitCode::SUCCESS)
}
