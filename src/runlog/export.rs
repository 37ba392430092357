//! Export of a run log: CSV and JSON of the per-B points and the trials, and an SVG log-log chart
//! (plotters) with the measured best points, the perfect-scaling line, the fitted curve, markers for
//! batch sizes where no trial reached the target, and regime labels.

use std::fmt::Write;

use plotters::prelude::*;

use crate::core::analysis::{Analysis, Regime};
use crate::core::record::TrialRecord;
use crate::core::trial::Outcome;
use crate::runlog::reader::RunLog;
use crate::workload::spec::Decay;

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

/// One row per batch size.
pub fn points_csv(a: &Analysis) -> String {
    let mut s = String::from(
        "batch_size,steps,best_trial,trials,reached,diverged,not_reached,cancelled,best_lr,best_momentum,best_effective_lr,b_simple,perfect_scaling_steps,fitted_steps\n",
    );
    for p in &a.per_batch {
        let perfect = a.perfect_anchor.map(|anchor| {
            crate::sweep::analysis::perfect_scaling_steps(anchor, p.batch_size as f64)
        });
        let fitted = a.fit.as_ref().map(|f| f.steps_at(p.batch_size as f64));
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            p.batch_size,
            p.steps.map(|x| x.to_string()).unwrap_or_default(),
            p.best_trial.map(|x| x.to_string()).unwrap_or_default(),
            p.trials,
            p.reached,
            p.diverged,
            p.not_reached,
            p.cancelled,
            opt(p.best_lr),
            opt(p.best_momentum),
            opt(p.best_effective_lr),
            opt(p.b_simple),
            opt(perfect),
            opt(fitted)
        );
    }
    s
}

/// One row per trial.
pub fn trials_csv(trials: &[TrialRecord]) -> String {
    let mut s = String::from(
        "trial_id,batch_size,outcome,outcome_step,steps_to_target,learning_rate,momentum,warmup_steps,decay_alpha,decay_steps,seed,b_simple,wall_s,examples_per_s,evals\n",
    );
    for t in trials {
        let o = &t.outcome.outcome;
        let step = match o {
            Outcome::Reached { step }
            | Outcome::Diverged { step }
            | Outcome::Cancelled { step } => *step,
            Outcome::NotReached { budget, .. } => *budget,
        };
        let m = &t.spec.metaparams;
        let (alpha, dsteps) = match m.schedule.decay {
            Decay::Constant => (String::new(), String::new()),
            Decay::Linear { alpha, steps } => (alpha.to_string(), steps.to_string()),
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            t.trial_id,
            t.spec.batch_size,
            o.label().replace(' ', "_"),
            step,
            o.steps_to_target()
                .map(|x| x.to_string())
                .unwrap_or_default(),
            m.learning_rate,
            m.momentum,
            m.schedule.warmup_steps,
            alpha,
            dsteps,
            t.spec.seed,
            opt(t.outcome.noise.b_simple),
            t.outcome.wall_s,
            t.outcome.throughput.examples_per_s,
            t.outcome.evals.len()
        );
    }
    s
}

/// Header, recomputed analysis and trial records as one JSON document.
pub fn export_json(log: &RunLog) -> serde_json::Value {
    serde_json::json!({
        "path": log.path.display().to_string(),
        "status": log.status().label(),
        "header": log.header,
        "analysis": log.analysis(),
        "trials": log.trials,
    })
}

/// One curve of a chart.
pub struct ChartSeries<'a> {
    pub label: String,
    pub analysis: &'a Analysis,
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

fn regime_word(r: Regime) -> &'static str {
    match r {
        Regime::Perfect => "perfect",
        Regime::Diminishing => "diminishing",
        Regime::Maximal => "maximal",
    }
}

/// An SVG log-log chart of steps-to-target vs batch size for one or more sweeps.
pub fn svg_chart(title: &str, series: &[ChartSeries]) -> anyhow::Result<String> {
    let mut bs: Vec<f64> = Vec::new();
    let mut ss: Vec<f64> = Vec::new();
    for s in series {
        for p in &s.analysis.per_batch {
            bs.push(p.batch_size as f64);
            if let Some(st) = p.steps {
                ss.push(st as f64);
            }
        }
    }
    anyhow::ensure!(!bs.is_empty(), "nothing to plot: the run log has no trials");
    let bmin = bs.iter().copied().fold(f64::INFINITY, f64::min);
    let bmax = bs.iter().copied().fold(0.0, f64::max);
    let (smin, smax) = if ss.is_empty() {
        (1.0, 10.0)
    } else {
        (
            ss.iter().copied().fold(f64::INFINITY, f64::min),
            ss.iter().copied().fold(0.0, f64::max),
        )
    };
    let (x0, x1) = (bmin / 1.5, bmax * 1.5);
    let (y0, y1) = ((smin / 2.0).max(0.5), smax * 3.0);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("svg: {e}"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(65)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
        chart
            .configure_mesh()
            .x_desc("batch size B")
            .y_desc("steps to target")
            .x_label_formatter(&|x| format!("{}", x.round() as u64))
            .y_label_formatter(&|y| format!("{}", y.round() as u64))
            .draw()
            .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
        let grid: Vec<f64> = (0..=100)
            .map(|i| x0 * (x1 / x0).powf(i as f64 / 100.0))
            .collect();
        for (k, s) in series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let a = s.analysis;
            let pts: Vec<(f64, f64)> = a
                .per_batch
                .iter()
                .filter_map(|p| p.steps.map(|st| (p.batch_size as f64, st as f64)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
                .map_err(|e| anyhow::anyhow!("svg: {e}"))?
                .label(format!("{} (measured best)", s.label))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, colour.filled())))
                .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
            if let Some(anchor) = a.perfect_anchor {
                let line: Vec<(f64, f64)> = grid
                    .iter()
                    .map(|&b| (b, crate::sweep::analysis::perfect_scaling_steps(anchor, b)))
                    .filter(|&(_, y)| y >= y0 && y <= y1)
                    .collect();
                chart
                    .draw_series(DashedLineSeries::new(
                        line,
                        6,
                        4,
                        colour.mix(0.5).stroke_width(1),
                    ))
                    .map_err(|e| anyhow::anyhow!("svg: {e}"))?
                    .label(format!("{}: perfect scaling", s.label))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], colour.mix(0.5))
                    });
            }
            if let Some(f) = &a.fit {
                let curve: Vec<(f64, f64)> = grid
                    .iter()
                    .map(|&b| (b, f.steps_at(b)))
                    .filter(|&(_, y)| y >= y0 && y <= y1)
                    .collect();
                let label = format!(
                    "{}: fit S_min={:.0}, B_crit={:.0}",
                    s.label, f.s_min, f.b_crit
                );
                chart
                    .draw_series(LineSeries::new(curve, colour.mix(0.35).stroke_width(3)))
                    .map_err(|e| anyhow::anyhow!("svg: {e}"))?
                    .label(label)
                    .legend(move |(x, y)| {
                        PathElement::new(
                            vec![(x, y), (x + 20, y)],
                            colour.mix(0.35).stroke_width(3),
                        )
                    });
            }
            // Batch sizes where no trial reached the target: a cross at the top edge.
            let none: Vec<(f64, f64)> = a
                .per_batch
                .iter()
                .filter(|p| p.steps.is_none())
                .map(|p| (p.batch_size as f64, y1 / 1.3))
                .collect();
            chart
                .draw_series(
                    none.iter()
                        .map(|&p| Cross::new(p, 6, colour.stroke_width(2))),
                )
                .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
            for p in &a.per_batch {
                let y = match p.steps {
                    Some(st) => st as f64 / 1.35,
                    None => y1 / 1.8,
                };
                let mut parts = Vec::new();
                if p.steps.is_none() {
                    parts.push("none reached".to_string());
                }
                if p.diverged > 0 {
                    parts.push(format!("{} div", p.diverged));
                }
                if p.not_reached > 0 {
                    parts.push(format!("{} n/r", p.not_reached));
                }
                if !parts.is_empty() && series.len() == 1 {
                    chart
                        .draw_series(std::iter::once(Text::new(
                            parts.join(", "),
                            (p.batch_size as f64, y),
                            ("sans-serif", 10)
                                .into_font()
                                .color(&RGBColor(120, 120, 120)),
                        )))
                        .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
                }
            }
            if series.len() == 1 {
                for seg in &a.segments {
                    let (b0, b1) = (seg.b_lo as f64, seg.b_hi as f64);
                    let xm = (b0 * b1).sqrt();
                    let ym = pts
                        .iter()
                        .filter(|p| p.0 == b0 || p.0 == b1)
                        .map(|p| p.1)
                        .fold(1.0, |acc, v| acc * v)
                        .sqrt();
                    chart
                        .draw_series(std::iter::once(Text::new(
                            regime_word(seg.regime).to_string(),
                            (xm, ym * 1.4),
                            ("sans-serif", 12).into_font().color(&colour),
                        )))
                        .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
                }
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    }
    Ok(out)
}

/// The chart of one run log.
pub fn svg_for_log(log: &RunLog) -> anyhow::Result<String> {
    let a = log.analysis();
    let title = format!(
        "{} — steps to {} vs batch size",
        log.header.preset.name, a.target
    );
    svg_chart(
        &title,
        &[ChartSeries {
            label: log.header.preset.workload.optimizer.name().to_string(),
            analysis: &a,
        }],
    )
}

/// Writes an output file (export), naming it in the error. Create-new semantics: an existing
/// file is never overwritten (use [`write_file_forced`] for an explicit `--force`), and a symlink
/// or a run log at `path` is always refused.
pub fn write_file(path: &std::path::Path, contents: &str) -> anyhow::Result<()> {
    write_output(path, contents, false)
}

/// [`write_file`] for `--force`: replaces an existing regular file (atomically, via a temporary
/// file and a rename) unless it is a run log; still refuses symlinks and non-regular files.
pub fn write_file_forced(path: &std::path::Path, contents: &str) -> anyhow::Result<()> {
    write_output(path, contents, true)
}

/// Whether the file at `path` starts like a run log (its first line is a run-log header).
pub fn looks_like_run_log(path: &std::path::Path) -> bool {
    use std::io::Read;
    let Ok(f) = crate::data::files::open_regular(path) else {
        return false;
    };
    let mut head = Vec::new();
    if f.take(4096).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().next().unwrap_or("");
    let compact: String = first.chars().filter(|c| !c.is_whitespace()).collect();
    compact.starts_with('{') && compact.contains("\"type\":\"header\"")
}

fn write_output(path: &std::path::Path, contents: &str, force: bool) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let p = path.display();
    if let Ok(m) = path.symlink_metadata() {
        if m.file_type().is_symlink() {
            anyhow::bail!("{p}: is a symbolic link: outputs are never written through a link");
        }
        if !m.is_file() {
            anyhow::bail!(
                "{p}: not a regular file (it is {}): choose another output name",
                crate::data::files::file_kind(&m)
            );
        }
        if looks_like_run_log(path) {
            anyhow::bail!("{p}: is a run log: exports never overwrite a run log");
        }
        if !force {
            anyhow::bail!("{p}: already exists: choose another name (or remove it first)");
        }
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let write_new = |target: &std::path::Path| -> anyhow::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(target)
            .with_context(|| format!("cannot create {}", target.display()))?;
        f.write_all(contents.as_bytes())
            .and_then(|_| f.sync_all())
            .with_context(|| format!("cannot write {}", target.display()))
    };
    if !force {
        return write_new(path);
    }
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".partial-{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    write_new(&tmp)?;
    std::fs::rename(&tmp, path).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {p}")
    })
}
