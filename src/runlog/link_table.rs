//! The saved `bench --allreduce` table next to a run log: the measured link the projection fits
//! (`analysis::projection::LinkTable`). Reading files is this module's part; the fit is the
//! analysis's.

use std::path::Path;

use crate::analysis::projection::{fit_ring, LinkTable};

/// Reads a saved table (`bench --allreduce` writes `<runs-dir>/allreduce.json`).
pub fn read_link_table(path: &Path) -> anyhow::Result<LinkTable> {
    use anyhow::Context;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the all-reduce table", path.display()))?;
    let t: LinkTable = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not an all-reduce table (written by `scaling-lab bench --allreduce`)",
            path.display()
        )
    })?;
    anyhow::ensure!(
        fit_ring(&t.rows).is_some(),
        "{}: the all-reduce table has no usable rows",
        path.display()
    );
    Ok(t)
}

/// The file name `bench --allreduce` saves its table under, in the runs directory.
pub const LINK_TABLE_FILE: &str = "allreduce.json";

/// The saved all-reduce table for a run log at `log_path`: `allreduce.json` in the log's directory
/// or the one above it (a Slurm sweep directory sits inside the runs directory). Unreadable or
/// malformed tables are skipped with the reason.
pub fn find_link_table(log_path: &Path) -> (Option<LinkTable>, Option<String>) {
    let dir = if log_path.is_dir() {
        Some(log_path)
    } else {
        log_path.parent()
    };
    let mut note = None;
    for d in dir
        .into_iter()
        .flat_map(|d| [Some(d), d.parent()])
        .flatten()
    {
        let d = if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        };
        let p = d.join(LINK_TABLE_FILE);
        if p.is_file() {
            match read_link_table(&p) {
                Ok(t) => return (Some(t), note),
                Err(e) => note = Some(format!("{e:#}")),
            }
        }
    }
    (None, note)
}
