//! `export` (CSV / JSON / SVG of a run log) and `import-batch-science` (Google's measurements).

use std::process::ExitCode;

use anyhow::bail;

use scaling_lab::report::{export as render, Report};
use scaling_lab::runlog;
use scaling_lab::runlog::export::write_file;

use super::args::{ExportArgs, ImportArgs};
use super::{out, outln, read_log, usage, CmdResult};

pub fn cmd_export(a: ExportArgs) -> CmdResult {
    if a.svg.is_none()
        && a.csv.is_none()
        && a.json.is_none()
        && a.trials_csv.is_none()
        && a.metaparams_svg.is_none()
    {
        return Err(usage(
            "nothing to export: give --svg, --csv, --json, --trials-csv and/or --metaparams-svg",
        ));
    }
    let l = read_log(&a.log)?;
    let input = std::fs::canonicalize(&a.log).ok();
    for (flag, p) in [
        ("--svg", &a.svg),
        ("--csv", &a.csv),
        ("--trials-csv", &a.trials_csv),
        ("--json", &a.json),
        ("--metaparams-svg", &a.metaparams_svg),
    ] {
        if let Some(p) = p {
            if input.is_some() && std::fs::canonicalize(p).ok() == input {
                bail!("{flag}: {} is the run log being exported", p.display());
            }
        }
    }
    // one analysis, every rendering of it
    let an = l.analysis();
    if let Some(p) = &a.svg {
        write_file(p, &render::svg_for_log(&l, &an)?)?;
        outln(&format!("wrote {}", p.display()));
    }
    if let Some(p) = &a.csv {
        write_file(p, &render::points_csv(&an))?;
        outln(&format!("wrote {}", p.display()));
    }
    if let Some(p) = &a.trials_csv {
        write_file(p, &render::trials_csv(&l.trials))?;
        outln(&format!("wrote {}", p.display()));
    }
    if let Some(p) = &a.metaparams_svg {
        write_file(p, &render::metaparam_svg(&l, &an)?)?;
        outln(&format!("wrote {}", p.display()));
    }
    if let Some(p) = &a.json {
        let v = render::export_json(&l, &an);
        write_file(p, &serde_json::to_string_pretty(&v)?)?;
        outln(&format!("wrote {}", p.display()));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn cmd_import(a: ImportArgs, runs_dir: std::path::PathBuf) -> CmdResult {
    if !a.target.is_finite() {
        return Err(usage(format!(
            "--target: {} is not a finite number",
            a.target
        )));
    }
    let log = runlog::batch_science::import_batch_science(&a.dir, &a.metric, a.target)?;
    let path = match a.out {
        Some(p) => p,
        None => {
            let name = a
                .dir
                .components()
                .rev()
                .take(4)
                .map(|c| c.as_os_str().to_string_lossy().to_string())
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("-");
            runs_dir.join(format!("batch-science-{name}.jsonl"))
        }
    };
    let p = runlog::batch_science::save_import(&log, &path)?;
    outln(&format!(
        "imported {} trials into {}",
        log.trials.len(),
        p.display()
    ));
    let report = Report::from_log(&log, 1);
    out(&report.main_text());
    Ok(ExitCode::SUCCESS)
}
