//! Export renderers: CSV of the per-B points and of the trials, the export JSON, and the SVG
//! charts (plotters) — the log-log chart of steps-to-target (measured best points, error bars,
//! perfect-scaling line, fitted curve, batch sizes without a result, the ordered regimes) and the
//! metaparameter picture. They render an analysis already made; writing the files is
//! `runlog::export`.

use std::fmt::Write;

use plotters::coord::{combinators::LogCoord, Shift};
use plotters::prelude::*;

use crate::core::analysis::{target_text, Analysis, BatchPoint, Readout};
use crate::core::record::TrialRecord;
use crate::core::trial::{NoiseInterval, Outcome};
use crate::runlog::reader::RunLog;
use crate::workload::spec::{Decay, OptimizerKind, SearchSpace};

fn opt(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

/// A B_simple interval as two CSV fields: empty without one, "inf" where unbounded above.
fn interval_fields(i: Option<NoiseInterval>) -> (String, String) {
    match i {
        None => (String::new(), String::new()),
        Some(i) => (
            format!("{}", i.lo),
            i.hi.map_or_else(|| "inf".into(), |h| format!("{h}")),
        ),
    }
}

/// One row per batch size.
pub fn points_csv(a: &Analysis) -> String {
    let mut s = String::from(
        "batch_size,steps,best_trial,trials,reached,diverged,not_reached,cancelled,best_lr,best_momentum,best_effective_lr,b_simple,perfect_scaling_steps,fitted_steps,steps_ci_lo,steps_ci_hi,at_search_edge,search_edges,repeat_runs,repeat_median,repeat_min,repeat_max,regime,b_simple_lo,b_simple_hi,confirmed_steps,confirmed_lo,confirmed_hi,confirmed_trial,confirm_runs,seed_sd,readout\n",
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
        let (b_lo, b_hi) = interval_fields(p.b_simple_interval);
        let c = p.confirmed.as_ref();
        let (c_lo, c_hi) = match c.and_then(|c| c.steps_ci) {
            Some(ci) => (
                ci.lo.to_string(),
                ci.hi.map_or_else(|| "inf".into(), |h| h.to_string()),
            ),
            None => (String::new(), String::new()),
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            p.batch_size,
            p.steps.map(|x| x.to_string()).unwrap_or_default(),
            p.best_trial.map(|x| x.to_string()).unwrap_or_default(),
            p.counts.trials,
            p.counts.reached,
            p.counts.diverged,
            p.counts.not_reached,
            p.counts.cancelled,
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
            regime,
            b_lo,
            b_hi,
            c.and_then(|c| c.steps).map(|x| x.to_string()).unwrap_or_default(),
            c_lo,
            c_hi,
            c.and_then(|c| c.chosen).map(|x| x.to_string()).unwrap_or_default(),
            c.map(|c| c.runs().to_string()).unwrap_or_default(),
            opt(c.and_then(|c| c.seed_sd)),
            match a.readout {
                Readout::BestTrial => "best_trial",
                Readout::Confirmed => "confirmed",
            }
        );
    }
    s
}

/// One row per trial.
pub fn trials_csv(trials: &[TrialRecord]) -> String {
    let mut s = String::from(
        "trial_id,batch_size,outcome,outcome_step,steps_to_target,learning_rate,momentum,warmup_steps,decay_alpha,decay_steps,seed,b_simple,wall_s,examples_per_s,evals,repeat_of,b_simple_lo,b_simple_hi,confirm_of,confirm_rank,confirm_seed\n",
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
        let (b_lo, b_hi) = interval_fields(t.outcome.noise.interval);
        let cm = t.spec.confirm;
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
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
            t.spec.repeat_of.map(|x| x.to_string()).unwrap_or_default(),
            b_lo,
            b_hi,
            cm.map(|m| m.of.to_string()).unwrap_or_default(),
            cm.map(|m| m.rank.to_string()).unwrap_or_default(),
            cm.map(|m| m.seed.to_string()).unwrap_or_default()
        );
    }
    s
}

/// Header, analysis and trial records as one JSON document (`export --json`).
pub fn export_json(log: &RunLog, analysis: &Analysis) -> serde_json::Value {
    serde_json::json!({
        "path": log.path.display().to_string(),
        "status": log.status().label(),
        "header": log.header,
        "analysis": super::json::analysis_json(analysis),
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

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>;

fn svg_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("svg: {e}")
}

/// The chart's extent: batch sizes (x) and steps (y), with margins.
#[derive(Clone, Copy)]
struct Extent {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

fn extent(series: &[ChartSeries]) -> anyhow::Result<Extent> {
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
            if let Some(c) = &p.confirmed {
                ss.extend(c.steps.map(|x| x as f64));
                if let Some(ci) = c.steps_ci {
                    ss.push(ci.lo.max(1) as f64);
                    ss.extend(ci.hi.map(|h| h as f64));
                }
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
    Ok(Extent {
        x0: bmin / 1.5,
        x1: bmax * 1.5,
        y0: (smin / 2.0).max(0.5),
        y1: smax * 3.0,
    })
}

/// An SVG log-log chart of steps-to-target vs batch size for one or more sweeps.
pub fn svg_chart(title: &str, series: &[ChartSeries]) -> anyhow::Result<String> {
    let e = extent(series)?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(65)
            .build_cartesian_2d((e.x0..e.x1).log_scale(), (e.y0..e.y1).log_scale())
            .map_err(svg_err)?;
        chart
            .configure_mesh()
            .x_desc("batch size B")
            .y_desc("steps to target")
            .x_label_formatter(&|x| format!("{}", x.round() as u64))
            .y_label_formatter(&|y| format!("{}", y.round() as u64))
            .draw()
            .map_err(svg_err)?;
        let grid: Vec<f64> = (0..=100)
            .map(|i| e.x0 * (e.x1 / e.x0).powf(i as f64 / 100.0))
            .collect();
        for (k, s) in series.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            draw_measured(&mut chart, s, colour)?;
            draw_reference_and_fit(&mut chart, s, colour, &grid, e)?;
            draw_failures(&mut chart, s, colour, e, series.len() == 1)?;
            if series.len() == 1 {
                draw_regimes(&mut chart, s.analysis, colour, e)?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(svg_err)?;
        root.present().map_err(svg_err)?;
    }
    Ok(out)
}

/// The curve's points (the best trials, or the confirmed seed medians once the confirm stage is
/// complete) joined by a line, their error bars (the 95 % interval; an unbounded one runs to the
/// top) and an open ring where the best trial is at the search-space edge (S(B) there is an
/// upper bound). With the confirmed readout the best trials (the paper's readout) are small open
/// squares beside it.
fn draw_measured(chart: &mut Chart, s: &ChartSeries, colour: RGBColor) -> anyhow::Result<()> {
    let a = s.analysis;
    let confirmed = a.readout == Readout::Confirmed;
    let pts: Vec<(f64, f64)> = a
        .per_batch
        .iter()
        .filter_map(|p| a.curve_steps(p).map(|st| (p.batch_size as f64, st as f64)))
        .collect();
    let what = if confirmed {
        "confirmed: seed median of the best configuration"
    } else {
        "measured best"
    };
    chart
        .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
        .map_err(svg_err)?
        .label(format!("{} ({what})", s.label))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    chart
        .draw_series(pts.iter().map(|&p| Circle::new(p, 4, colour.filled())))
        .map_err(svg_err)?;
    if confirmed {
        let best: Vec<(f64, f64)> = a
            .per_batch
            .iter()
            .filter_map(|p| p.steps.map(|st| (p.batch_size as f64, st as f64)))
            .collect();
        let sq = |(x, y): (f64, f64)| {
            Rectangle::new(
                [(x / 1.03, y / 1.03), (x * 1.03, y * 1.03)],
                colour.stroke_width(1),
            )
        };
        chart
            .draw_series(best.into_iter().map(sq))
            .map_err(svg_err)?
            .label(format!("{} (best trial, the paper's readout)", s.label))
            .legend(move |(x, y)| {
                Rectangle::new([(x + 6, y - 4), (x + 14, y + 4)], colour.stroke_width(1))
            });
    }
    let top = chart.y_range().end;
    for p in &a.per_batch {
        let (lo, hi) = match (confirmed, p.confirmed.as_ref()) {
            (true, Some(c)) => match (c.steps, c.steps_ci) {
                (Some(_), Some(ci)) => (ci.lo, ci.hi.map_or(top, |h| h as f64)),
                _ => continue,
            },
            (true, None) => continue,
            (false, _) => match (p.steps, p.steps_ci) {
                (Some(_), Some([lo, hi])) => (lo, hi as f64),
                _ => continue,
            },
        };
        let (b, lo, hi) = (p.batch_size as f64, lo.max(1) as f64, hi);
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
                .map_err(svg_err)?;
        }
    }
    chart
        .draw_series(
            a.per_batch
                .iter()
                .filter(|p| p.at_search_edge)
                .filter_map(|p| p.steps.map(|s| (p.batch_size as f64, s as f64)))
                .map(|p| Circle::new(p, 8, colour.stroke_width(1))),
        )
        .map_err(svg_err)?;
    Ok(())
}

/// The perfect-scaling line (dashed) and the fitted curve (dashed when uncertain).
fn draw_reference_and_fit(
    chart: &mut Chart,
    s: &ChartSeries,
    colour: RGBColor,
    grid: &[f64],
    e: Extent,
) -> anyhow::Result<()> {
    let a = s.analysis;
    let inside = |&(_, y): &(f64, f64)| y >= e.y0 && y <= e.y1;
    if let Some(anchor) = a.perfect_anchor {
        let line: Vec<(f64, f64)> = grid
            .iter()
            .map(|&b| (b, crate::analysis::perfect_scaling_steps(anchor, b)))
            .filter(inside)
            .collect();
        chart
            .draw_series(DashedLineSeries::new(
                line,
                6,
                4,
                colour.mix(0.5).stroke_width(1),
            ))
            .map_err(svg_err)?
            .label(format!("{}: perfect scaling", s.label))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.mix(0.5)));
    }
    let Some(f) = &a.fit else { return Ok(()) };
    let curve: Vec<(f64, f64)> = grid
        .iter()
        .map(|&b| (b, f.steps_at(b)))
        .filter(inside)
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
    let style = if f.uncertain {
        colour.mix(0.5).stroke_width(3)
    } else {
        colour.mix(0.35).stroke_width(3)
    };
    let drawn = if f.uncertain {
        chart.draw_series(DashedLineSeries::new(curve, 3, 5, style))
    } else {
        chart.draw_series(LineSeries::new(curve, style))
    };
    drawn
        .map_err(svg_err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    Ok(())
}

/// Batch sizes where no trial reached the target (a cross at the top edge) and, for one series,
/// the count of failed trials under each point.
fn draw_failures(
    chart: &mut Chart,
    s: &ChartSeries,
    colour: RGBColor,
    e: Extent,
    labels: bool,
) -> anyhow::Result<()> {
    let a = s.analysis;
    let none: Vec<(f64, f64)> = a
        .per_batch
        .iter()
        .filter(|p| p.steps.is_none())
        .map(|p| (p.batch_size as f64, e.y1 / 1.3))
        .collect();
    chart
        .draw_series(
            none.iter()
                .map(|&p| Cross::new(p, 6, colour.stroke_width(2))),
        )
        .map_err(svg_err)?;
    for p in &a.per_batch {
        let y = match p.steps {
            Some(st) => st as f64 / 1.35,
            None => e.y1 / 1.8,
        };
        let parts = failure_label(p);
        if !parts.is_empty() && labels {
            chart
                .draw_series(std::iter::once(Text::new(
                    parts.join(", "),
                    (p.batch_size as f64, y),
                    ("sans-serif", 10)
                        .into_font()
                        .color(&RGBColor(120, 120, 120)),
                )))
                .map_err(svg_err)?;
        }
    }
    Ok(())
}

fn failure_label(p: &BatchPoint) -> Vec<String> {
    let mut parts = Vec::new();
    if p.steps.is_none() {
        parts.push("none reached".to_string());
    }
    if p.counts.diverged > 0 {
        parts.push(format!("{} div", p.counts.diverged));
    }
    if p.counts.not_reached > 0 {
        parts.push(format!("{} n/r", p.counts.not_reached));
    }
    parts
}

/// The ordered regime partition: a label at the geometric middle of each span, thin vertical
/// lines at the boundaries with their intervals as a band.
fn draw_regimes(
    chart: &mut Chart,
    a: &Analysis,
    colour: RGBColor,
    e: Extent,
) -> anyhow::Result<()> {
    for r in &a.regimes {
        let xm = (r.b_lo * r.b_hi).sqrt();
        let text = format!("{}{}", r.regime.short(), if r.uncertain { "?" } else { "" });
        chart
            .draw_series(std::iter::once(Text::new(
                text,
                (xm, e.y1 / 1.6),
                ("sans-serif", 13).into_font().color(&colour),
            )))
            .map_err(svg_err)?;
        if let Some([lo, hi]) = r.b_hi_ci {
            let b = r.b_hi;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(b, e.y0), (b, e.y1 / 1.2)],
                    4,
                    4,
                    RGBColor(150, 150, 150).stroke_width(1),
                ))
                .map_err(svg_err)?;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(lo.max(e.x0), e.y0), (hi.min(e.x1), e.y0 * 1.15)],
                    RGBColor(150, 150, 150).mix(0.4).filled(),
                )))
                .map_err(svg_err)?;
        }
    }
    Ok(())
}

/// The chart of one run log's analysis.
pub fn svg_for_log(log: &RunLog, a: &Analysis) -> anyhow::Result<String> {
    let target = a.target.as_ref().map(target_text).unwrap_or_default();
    let title = format!(
        "{} — steps to {} vs batch size",
        log.header.preset.name, target
    );
    svg_chart(
        &title,
        &[ChartSeries {
            label: log.header.preset.workload.optimizer.name().to_string(),
            analysis: a,
        }],
    )
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
pub fn metaparam_svg(log: &RunLog, a: &Analysis) -> anyhow::Result<String> {
    let preset = &log.header.preset;
    anyhow::ensure!(
        !a.per_batch.is_empty(),
        "nothing to plot: the run log has no trials"
    );
    let view = MetaView {
        search: &preset.search,
        two_d: preset.search.one_minus_momentum.is_some()
            && !matches!(preset.workload.optimizer, OptimizerKind::Sgd),
        y_name: match preset.workload.optimizer {
            OptimizerKind::Adam => "1 − β1",
            _ => "1 − γ",
        },
    };
    let n = a.per_batch.len();
    let cols = n.clamp(1, 4);
    let rows = n.div_ceil(cols);
    let (w, h) = (300 * cols as u32, 270 * rows as u32 + 40);
    let trials = crate::analysis::dedup_trials(&log.trials);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_err)?;
        let title = format!(
            "{} — search trials per batch size: η × {}; colour = steps to {} (dark fast), × diverged, · not reached, ★ best",
            preset.name,
            if view.two_d { view.y_name } else { "steps" },
            a.target.as_ref().map(target_text).unwrap_or_default()
        );
        let (top, body) = root.split_vertically(40);
        top.draw(&Text::new(
            title,
            (10, 12),
            ("sans-serif", 14).into_font().color(&BLACK),
        ))
        .map_err(svg_err)?;
        let panels = body.split_evenly((rows, cols));
        for (p, area) in a.per_batch.iter().zip(panels.iter()) {
            let ts: Vec<&TrialRecord> = trials
                .iter()
                .copied()
                .filter(|t| t.spec.batch_size == p.batch_size && t.spec.is_search())
                .filter(|t| !matches!(t.outcome.outcome, Outcome::Cancelled { .. }))
                .collect();
            view.panel(area, p, &ts)?;
        }
        root.present().map_err(svg_err)?;
    }
    Ok(out)
}

/// How the metaparameter picture draws its panels.
struct MetaView<'a> {
    search: &'a SearchSpace,
    /// η × 1−γ (else η × steps).
    two_d: bool,
    y_name: &'static str,
}

impl MetaView<'_> {
    /// One batch size's panel: its search trials `ts`.
    fn panel(
        &self,
        area: &DrawingArea<SVGBackend, Shift>,
        p: &BatchPoint,
        ts: &[&TrialRecord],
    ) -> anyhow::Result<()> {
        let (two_d, b) = (self.two_d, p.batch_size);
        let [lr_lo, lr_hi] = self.search.lr_range_at(b);
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
            let r = self.search.one_minus_momentum.unwrap_or([1e-3, 1.0]);
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
            .map_err(svg_err)?;
        chart
            .configure_mesh()
            .x_desc("η")
            .y_desc(if two_d { self.y_name } else { "steps" })
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
            .map_err(svg_err)?;
        // In the 1-D view, trials without a result sit in a band at the top.
        let top_y = yhi / 1.6;
        for t in ts {
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
            mapped.map_err(svg_err)?;
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
                    .map_err(svg_err)?;
            }
        }
        Ok(())
    }
}
