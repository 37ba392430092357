//! Export of a run log: CSV and JSON of the per-B points and the trials, and an SVG log-log chart
//! (plotters) with the measured best points, the perfect-scaling line, the fitted curve, markers for
//! batch sizes where no trial reached the target, the regimes of the ordered partition, and error
//! bars (`steps_ci`); plus the metaparameter picture (`metaparam_svg`).

use std::fmt::Write;

use plotters::prelude::*;

use crate::core::analysis::Analysis;
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
        "batch_size,steps,best_trial,trials,reached,diverged,not_reached,cancelled,best_lr,best_momentum,best_effective_lr,b_simple,perfect_scaling_steps,fitted_steps,steps_ci_lo,steps_ci_hi,at_search_edge,search_edges,repeat_runs,repeat_median,repeat_min,repeat_max,regime\n",
    );
    for p in &a.per_batch {
        let perfect = a
            .perfect_anchor
            .map(|anchor| crate::analysis::perfect_scaling_steps(anchor, p.batch_size as f64));
        let fitted = a.fit.as_ref().map(|f| f.steps_at(p.batch_size as f64));
        let ci = |i: usize| p.steps_ci.map(|c| c[i].to_string()).unwrap_or_default();
        let edges: Vec<String> = p
            .search_edges
            .iter()
            .map(|e| {
                serde_json::to_value(e)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            })
            .collect();
        let r = p.repeat_steps.as_ref();
        let b = p.batch_size as f64;
        let regime = a
            .regimes
            .iter()
            .find(|s| b >= s.b_lo / 1.0001 && b <= s.b_hi * 1.0001)
            .map(|s| s.regime.short())
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
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
            opt(fitted),
            ci(0),
            ci(1),
            p.at_search_edge,
            edges.join(";"),
            r.map(|r| r.runs.to_string()).unwrap_or_default(),
            opt(r.map(|r| r.median)),
            r.map(|r| r.min.to_string()).unwrap_or_default(),
            r.map(|r| r.max.to_string()).unwrap_or_default(),
            regime
        );
    }
    s
}

/// One row per trial.
pub fn trials_csv(trials: &[TrialRecord]) -> String {
    let mut s = String::from(
        "trial_id,batch_size,outcome,outcome_step,steps_to_target,learning_rate,momentum,warmup_steps,decay_alpha,decay_steps,seed,b_simple,wall_s,examples_per_s,evals,repeat_of\n",
    );
    for t in trials {
        let o = &t.outcome.outcome;
        let step = match o {
            Outcome::Reached { step }
            | Outcome::Diverged { step }
            | Outcome::Cancelled { step }
            | Outcome::Oom { step, .. } => *step,
            Outcome::NotReached { budget, .. } => *budget,
        };
        let m = &t.spec.metaparams;
        let (alpha, dsteps) = match m.schedule.decay {
            Decay::Constant => (String::new(), String::new()),
            Decay::Linear { alpha, steps } => (alpha.to_string(), steps.to_string()),
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
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
            t.outcome.evals.len(),
            t.spec.repeat_of.map(|x| x.to_string()).unwrap_or_default()
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
        "analysis": crate::analysis::analyze_preset(&log.header.preset, &log.trials),
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
            if let Some([lo, hi]) = p.steps_ci {
                ss.push(lo.max(1) as f64);
                ss.push(hi as f64);
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
            // Error bars: the 95 % interval of S(B), a vertical whisker with caps.
            for p in &a.per_batch {
                let (Some(_), Some([lo, hi])) = (p.steps, p.steps_ci) else {
                    continue;
                };
                let (b, lo, hi) = (p.batch_size as f64, lo.max(1) as f64, hi as f64);
                let cap = 1.04f64;
                for path in [
                    vec![(b, lo), (b, hi)],
                    vec![(b / cap, lo), (b * cap, lo)],
                    vec![(b / cap, hi), (b * cap, hi)],
                ] {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            path,
                            colour.stroke_width(1),
                        )))
                        .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
                }
            }
            // Best trial at the edge of the search space: an open ring (S(B) is an upper bound).
            chart
                .draw_series(
                    a.per_batch
                        .iter()
                        .filter(|p| p.at_search_edge)
                        .filter_map(|p| p.steps.map(|s| (p.batch_size as f64, s as f64)))
                        .map(|p| Circle::new(p, 8, colour.stroke_width(1))),
                )
                .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
            if let Some(anchor) = a.perfect_anchor {
                let line: Vec<(f64, f64)> = grid
                    .iter()
                    .map(|&b| (b, crate::analysis::perfect_scaling_steps(anchor, b)))
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
                let ci = f
                    .b_crit_ci
                    .map(|[lo, hi]| format!(" [{lo:.0}–{hi:.0}]"))
                    .unwrap_or_default();
                let label = format!(
                    "{}: fit S_min={:.0}, B_crit={:.0}{ci}{}",
                    s.label,
                    f.s_min,
                    f.b_crit,
                    if f.uncertain { " (uncertain)" } else { "" }
                );
                if f.uncertain {
                    chart
                        .draw_series(DashedLineSeries::new(
                            curve,
                            3,
                            5,
                            colour.mix(0.5).stroke_width(3),
                        ))
                        .map_err(|e| anyhow::anyhow!("svg: {e}"))?
                        .label(label)
                        .legend(move |(x, y)| {
                            PathElement::new(
                                vec![(x, y), (x + 20, y)],
                                colour.mix(0.5).stroke_width(3),
                            )
                        });
                } else {
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
                // The ordered regime partition: a label at the geometric middle of each span,
                // thin vertical lines at the boundaries.
                for r in &a.regimes {
                    let xm = (r.b_lo * r.b_hi).sqrt();
                    let text =
                        format!("{}{}", r.regime.short(), if r.uncertain { "?" } else { "" });
                    chart
                        .draw_series(std::iter::once(Text::new(
                            text,
                            (xm, y1 / 1.6),
                            ("sans-serif", 13).into_font().color(&colour),
                        )))
                        .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
                    if let Some([lo, hi]) = r.b_hi_ci {
                        let b = r.b_hi;
                        chart
                            .draw_series(DashedLineSeries::new(
                                vec![(b, y0), (b, y1 / 1.2)],
                                4,
                                4,
                                RGBColor(150, 150, 150).stroke_width(1),
                            ))
                            .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
                        chart
                            .draw_series(std::iter::once(Rectangle::new(
                                [(lo.max(x0), y0), (hi.min(x1), y0 * 1.15)],
                                RGBColor(150, 150, 150).mix(0.4).filled(),
                            )))
                            .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
                    }
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
    let a = crate::analysis::analyze_preset(&log.header.preset, &log.trials);
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

/// Colour of a steps-to-target on a log scale between the fastest and slowest reached trial of a
/// panel: dark blue (fastest) → teal → yellow (slowest).
fn steps_colour(steps: u64, lo: u64, hi: u64) -> RGBColor {
    let t = if hi > lo {
        ((steps as f64).ln() - (lo as f64).ln()) / ((hi as f64).ln() - (lo as f64).ln())
    } else {
        0.0
    }
    .clamp(0.0, 1.0);
    let stops = [
        (40.0, 30.0, 120.0),
        (30.0, 150.0, 140.0),
        (235.0, 205.0, 40.0),
    ];
    let (a, b, f) = if t < 0.5 {
        (stops[0], stops[1], t * 2.0)
    } else {
        (stops[1], stops[2], (t - 0.5) * 2.0)
    };
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The metaparameter picture (Shallue et al.'s figure): one panel per batch size, each search
/// trial a point — η (x, log) × 1−γ (y, log) when the search space samples momentum (momentum,
/// Nesterov; β1 for Adam), else η × steps-to-target. Reached trials are coloured by their steps
/// (dark = fast, yellow = slow), diverged ×, not reached ·, the best trial ★. The η axis of each
/// panel is the search range at that B, so a ★ near a panel's side is at the search-space edge.
pub fn metaparam_svg(log: &RunLog) -> anyhow::Result<String> {
    let preset = &log.header.preset;
    let search = &preset.search;
    let a = crate::analysis::analyze_preset(preset, &log.trials);
    anyhow::ensure!(
        !a.per_batch.is_empty(),
        "nothing to plot: the run log has no trials"
    );
    let two_d = search.one_minus_momentum.is_some()
        && !matches!(
            preset.workload.optimizer,
            crate::workload::spec::OptimizerKind::Sgd
        );
    let y_name = match preset.workload.optimizer {
        crate::workload::spec::OptimizerKind::Adam => "1 − β1",
        _ => "1 − γ",
    };
    let n = a.per_batch.len();
    let cols = n.clamp(1, 4);
    let rows = n.div_ceil(cols);
    let (w, h) = (300 * cols as u32, 270 * rows as u32 + 40);
    let trials = crate::analysis::dedup_trials(&log.trials);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("svg: {e}"))?;
        let title = format!(
            "{} — search trials per batch size: η × {}; colour = steps to {} (dark fast), × diverged, · not reached, ★ best",
            preset.name,
            if two_d { y_name } else { "steps" },
            a.target
        );
        let (top, body) = root.split_vertically(40);
        top.draw(&Text::new(
            title,
            (10, 12),
            ("sans-serif", 14).into_font().color(&BLACK),
        ))
        .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
        let panels = body.split_evenly((rows, cols));
        for (p, area) in a.per_batch.iter().zip(panels.iter()) {
            let b = p.batch_size;
            let ts: Vec<&&TrialRecord> = trials
                .iter()
                .filter(|t| t.spec.batch_size == b && t.spec.repeat_of.is_none())
                .filter(|t| !matches!(t.outcome.outcome, Outcome::Cancelled { .. }))
                .collect();
            let [lr_lo, lr_hi] = search.lr_range_at(b);
            let lrs = ts.iter().map(|t| t.spec.metaparams.learning_rate);
            let xmin = lrs.clone().fold(lr_lo, f64::min) / 1.15;
            let xmax = lrs.fold(lr_hi, f64::max) * 1.15;
            let reached: Vec<u64> = ts
                .iter()
                .filter_map(|t| t.outcome.outcome.steps_to_target())
                .collect();
            let (smin, smax) = (
                reached.iter().copied().min().unwrap_or(1),
                reached.iter().copied().max().unwrap_or(1),
            );
            let caption = format!(
                "B = {b}: {}{}",
                p.steps
                    .map(|s| format!("S = {s}"))
                    .unwrap_or_else(|| "none reached".into()),
                if p.at_search_edge { " (at edge)" } else { "" }
            );
            let (ylo, yhi) = if two_d {
                let r = search.one_minus_momentum.unwrap_or([1e-3, 1.0]);
                let ys = ts
                    .iter()
                    .map(|t| (1.0 - t.spec.metaparams.momentum).max(1e-12));
                (
                    ys.clone().fold(r[0], f64::min) / 1.15,
                    ys.fold(r[1], f64::max) * 1.15,
                )
            } else {
                ((smin as f64 / 1.5).max(0.5), smax as f64 * 4.0)
            };
            let mut chart = ChartBuilder::on(area)
                .caption(caption, ("sans-serif", 13))
                .margin(6)
                .x_label_area_size(28)
                .y_label_area_size(44)
                .build_cartesian_2d((xmin..xmax).log_scale(), (ylo..yhi).log_scale())
                .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
            chart
                .configure_mesh()
                .x_desc("η")
                .y_desc(if two_d { y_name } else { "steps" })
                .x_labels(4)
                .y_labels(4)
                .x_label_formatter(&|x| format!("{x:.0e}"))
                .y_label_formatter(&|y| {
                    if two_d {
                        format!("{y:.0e}")
                    } else {
                        format!("{}", y.round() as u64)
                    }
                })
                .draw()
                .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
            // In the 1-D view, trials without a result sit in a band at the top.
            let top_y = yhi / 1.6;
            for t in &ts {
                let m = &t.spec.metaparams;
                let x = m.learning_rate;
                let y_of = |steps: Option<u64>| {
                    if two_d {
                        (1.0 - m.momentum).max(1e-12)
                    } else {
                        steps.map_or(top_y, |s| s as f64)
                    }
                };
                let mapped = match t.outcome.outcome {
                    Outcome::Reached { step } => chart.draw_series(std::iter::once(Circle::new(
                        (x, y_of(Some(step))),
                        4,
                        steps_colour(step, smin, smax).filled(),
                    ))),
                    Outcome::Diverged { .. } => chart.draw_series(std::iter::once(Cross::new(
                        (x, y_of(None)),
                        4,
                        RGBColor(200, 40, 40).stroke_width(2),
                    ))),
                    _ => chart.draw_series(std::iter::once(Circle::new(
                        (x, y_of(None)),
                        1,
                        RGBColor(110, 110, 110).filled(),
                    ))),
                };
                mapped.map_err(|e| anyhow::anyhow!("svg: {e}"))?;
                if Some(t.trial_id) == p.best_trial {
                    chart
                        .draw_series(std::iter::once(Text::new(
                            "★",
                            (x, y_of(p.steps)),
                            ("sans-serif", 18).into_font().color(&BLACK).pos(
                                plotters::style::text_anchor::Pos::new(
                                    plotters::style::text_anchor::HPos::Center,
                                    plotters::style::text_anchor::VPos::Center,
                                ),
                            ),
                        )))
                        .map_err(|e| anyhow::anyhow!("svg: {e}"))?;
                }
            }
        }
        root.present().map_err(|e| anyhow::anyhow!("svg: {e}"))?;
    }
    Ok(out)
}
