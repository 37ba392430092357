//! `report` and `compare`: a run log's report (text or `--json`), and several logs side by side.

use std::process::ExitCode;

use scaling_lab::report::compare::{compare, render_compare};
use scaling_lab::report::Report;
use scaling_lab::runlog::link_table::find_link_table;

use super::args::{CompareArgs, ReportArgs};
use super::{out, outln, read_log, CmdResult};

pub fn cmd_report(a: ReportArgs) -> CmdResult {
    let log = read_log(&a.log)?;
    let (table, note) = find_link_table(&a.log);
    if let Some(n) = note {
        eprintln!("warning: {n} (ignored; the projection uses the trials' exchange times)");
    }
    let report = Report::from_log_with(&log, a.max_devices, table.as_ref());
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
    out(&render_compare(&compare(&logs)));
    Ok(ExitCode::SUCCESS)
}
