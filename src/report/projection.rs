//! The time-to-target projection as text: the table of all links (`report`, `sweep`), one link's
//! table, and the one-line brief of the TUI's status panel.

use std::fmt::Write;

use super::Report;
use crate::analysis::projection::{is_cross_process, Projection};

/// A plain-text table of a projection.
pub fn render_projection(p: &Projection) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "time-to-target vs devices — link {} ({:.3} GB/s, {:.1} µs){}; compute {:.3} ms + {:.3} µs/example (fitted on {} trials, {} device(s)/trial), all-reduce payload {:.2} MB",
        p.link.name,
        p.link.bandwidth / 1e9,
        p.link.latency * 1e6,
        if p.link.measured { ", measured" } else { ", datasheet preset" },
        p.compute.overhead_s * 1e3,
        p.compute.per_example_s * 1e6,
        p.compute.samples,
        p.compute.replicas,
        p.compute.param_bytes / 1e6,
    );
    let _ = writeln!(
        s,
        "{:>6} {:>7} {:>8} {:>11} {:>11} {:>12} {:>8}  kind",
        "G", "best B", "steps", "compute ms", "allred ms", "time s", "speedup"
    );
    for r in &p.rows {
        let _ = writeln!(
            s,
            "{:>6} {:>7} {:>8} {:>11.3} {:>11.3} {:>12.3} {:>8.1}  {}",
            r.devices,
            r.batch_size,
            r.steps,
            r.compute_s * 1e3,
            r.allreduce_s * 1e3,
            r.time_to_target_s,
            r.speedup,
            if r.measured { "measured" } else { "modelled" }
        );
    }
    s
}

fn short_time(s: f64) -> String {
    if !s.is_finite() {
        "–".into()
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// One table for all links: per G the projected time-to-target, the B that minimises it and the
/// speedup over G = 1. `*` marks the only measured cell (G = the trials' device count on the
/// measured link); every other cell is modelled. `backend` names what the compute was timed on.
pub fn render_projection_table(
    ps: &[Projection],
    backend: &str,
    check: Option<(usize, f64, f64)>,
) -> String {
    let mut s = String::new();
    let Some(first) = ps.first() else {
        return s;
    };
    let c = &first.compute;
    let _ = writeln!(
        s,
        "time-to-target vs devices G (docs/science.md §6): t = S(B)·[t_compute(B/G) + ring all-reduce of {} over G]",
        bytes_label(c.param_bytes)
    );
    let _ = writeln!(
        s,
        "compute timed on {backend}, {} device(s)/trial: {:.3} ms + {:.2} µs/example (fit over {} trials); best B ≥ G per cell",
        c.replicas,
        c.overhead_s * 1e3,
        c.per_example_s * 1e6,
        c.samples
    );
    if let Some((b, measured, modelled)) = check {
        let _ = writeln!(
            s,
            "check at G = {}: best trial at B = {b} trained in {} measured, the model says {}",
            c.replicas,
            short_time(measured),
            short_time(modelled)
        );
    }
    let _ = write!(s, "{:>5}", "G");
    for p in ps {
        let name = if p.link.measured && p.link.latency > 0.0 {
            format!(
                "measured {:.2} GB/s {:.0} µs",
                p.link.bandwidth / 1e9,
                p.link.latency * 1e6
            )
        } else if is_cross_process(&p.link) {
            format!("{} {:.2} GB/s", p.link.name, p.link.bandwidth / 1e9)
        } else if p.link.measured {
            format!("measured {:.2} GB/s", p.link.bandwidth / 1e9)
        } else {
            p.link.name.clone()
        };
        let _ = write!(s, " │ {name:<24}");
    }
    s.push('\n');
    let gs: Vec<usize> = first.rows.iter().map(|r| r.devices).collect();
    for g in gs {
        let _ = write!(s, "{g:>5}");
        for p in ps {
            let cell = match p.rows.iter().find(|r| r.devices == g) {
                Some(r) => format!(
                    "{:>9} B{:<6}{:>6.1}×{}",
                    short_time(r.time_to_target_s),
                    r.batch_size,
                    r.speedup,
                    if r.measured { "*" } else { " " }
                ),
                None => String::new(),
            };
            let _ = write!(s, " │ {cell:<24}");
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "all cells are modelled except those marked * (measured link at the measured device count)"
    );
    s
}

fn bytes_label(b: f64) -> String {
    if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else {
        format!("{:.1} kB", b / 1e3)
    }
}

/// The projection section of a report (docs/science.md §6), or a line saying why there is none.
pub fn section(r: &Report) -> String {
    let caveat = if r.projections.is_some() && r.analysis.fit.as_ref().is_some_and(|f| f.uncertain)
    {
        "note: the S(B) curve behind this projection is uncertain (see the fit line): treat the speedups as rough\n"
    } else {
        ""
    };
    let mut link = String::new();
    if r.projections.is_some() {
        if let Some(src) = &r.projection_link {
            link += &format!("measured link: {src}\n");
        }
        if let Some(c) = &r.exchange_check {
            link += &format!(
                "exchange check at G = {}: the trials measured {:.3} ms per step for {:.1} kB, the measured link model says {:.3} ms\n",
                c.devices,
                c.measured_s * 1e3,
                c.bytes / 1e3,
                c.modelled_s * 1e3
            );
        }
    }
    caveat.to_string()
        + &match &r.projections {
            Some(ps) => render_projection_table(
                ps,
                r.projection_backend.as_deref().unwrap_or("?"),
                r.projection_check
                    .as_ref()
                    .map(|c| (c.batch_size, c.measured_s, c.modelled_s)),
            ),
            None => format!(
                "time-to-target projection: {}\n",
                r.projection_note.as_deref().unwrap_or("not computed")
            ),
        }
        + &link
}

/// One line for the TUI's status panel: the best modelled speedup on a fast and on a slow link
/// (e.g. "NVLink 13.9×@G256 · 10GbE 6.6×@G64"), from the report's projections. None without them.
pub fn brief(r: &Report) -> Option<String> {
    let ps = r.projections.as_ref()?;
    let parts: Vec<String> = ["NVLink", "10GbE"]
        .iter()
        .filter_map(|name| {
            let p = ps
                .iter()
                .find(|p| !p.link.measured && p.link.name == *name)?;
            let best = p
                .rows
                .iter()
                .max_by(|a, b| a.speedup.total_cmp(&b.speedup))?;
            Some(format!(
                "{} {:.1}×@G{}",
                p.link.name, best.speedup, best.devices
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}
