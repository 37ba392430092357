//! Export renderers: CSV of the per-B points and of the trials, the export JSON, and the
//! metaparameter picture (plotters); the log-log chart of steps-to-target is `chart` (re-exported
//! here). They render an analysis already made; writing the files is `runlog::export`.

use std::fmt::Write;

use plotters::coord::Shift;
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

/// The columns of [`points_csv`], in order. `steps` is S(B) as the fit, the regimes and the
/// chart read it (`readout`: the confirmed S(B) once the confirm stage has finished, else the
/// best trial), `steps_lo`/`steps_hi` its 95 % interval; the best trial is `best_trial_steps`
/// beside it, with its own interval; `on_curve`: enough trials behind `steps` for the curve.
pub const POINTS_COLUMNS: &str = "batch_size,steps,steps_lo,steps_hi,readout,on_curve,best_trial_steps,best_trial_lo,best_trial_hi,best_trial,trials,reached,diverged,not_reached,cancelled,best_lr,best_momentum,best_effective_lr,b_simple,b_simple_lo,b_simple_hi,perfect_scaling_steps,fitted_steps,regime,at_search_edge,search_edges,repeat_runs,repeat_median,repeat_min,repeat_max,confirmed_steps,confirmed_lo,confirmed_hi,confirmed_trial,confirm_runs,seed_sd";

/// One row per batch size (columns: [`POINTS_COLUMNS`]).
pub fn points_csv(a: &Analysis) -> String {
    let mut s = format!("{POINTS_COLUMNS}\n");
    let u = |x: Option<u64>| x.map(|x| x.to_string()).unwrap_or_default();
    for p in &a.per_batch {
        let on_curve = a.on_curve_steps(p).is_some();
        let perfect = a
            .perfect_anchor
            .map(|anchor| crate::analysis::perfect_scaling_steps(anchor, p.batch_size as f64));
        let fitted = a.fit.as_ref().map(|f| f.steps_at(p.batch_size as f64));
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
        let regime = a
            .on_curve_steps(p)
            .and_then(|_| super::regime_at(a, p.batch_size))
            .map(|r| r.short())
            .unwrap_or_default();
        let (b_lo, b_hi) = interval_fields(p.b_simple_interval);
        let c = p.confirmed.as_ref();
        let steps_interval = |ci: Option<crate::core::analysis::StepsInterval>| match ci {
            Some(ci) => (
                ci.lo.to_string(),
                ci.hi.map_or_else(|| "inf".into(), |h| h.to_string()),
            ),
            None => (String::new(), String::new()),
        };
        let (c_lo, c_hi) = steps_interval(c.and_then(|c| c.steps_ci));
        let (best_lo, best_hi) = (u(p.steps_ci.map(|c| c[0])), u(p.steps_ci.map(|c| c[1])));
        let (lo, hi) = match a.readout {
            Readout::BestTrial => (best_lo.clone(), best_hi.clone()),
            Readout::Confirmed => (c_lo.clone(), c_hi.clone()),
        };
        let row: Vec<String> = vec![
            p.batch_size.to_string(),
            u(a.curve_steps(p)),
            lo,
            hi,
            match a.readout {
                Readout::BestTrial => "best_trial",
                Readout::Confirmed => "confirmed",
            }
            .into(),
            on_curve.to_string(),
            u(p.steps),
            best_lo,
            best_hi,
            u(p.best_trial),
            p.counts.trials.to_string(),
            p.counts.reached.to_string(),
            p.counts.diverged.to_string(),
            p.counts.not_reached.to_string(),
            p.counts.cancelled.to_string(),
            opt(p.best_lr),
            opt(p.best_momentum),
            opt(p.best_effective_lr),
            opt(p.b_simple),
            b_lo,
            b_hi,
            opt(perfect),
            opt(fitted),
            regime.into(),
            p.at_search_edge.to_string(),
            edges.join(";"),
            r.map(|r| r.runs.to_string()).unwrap_or_default(),
            opt(r.map(|r| r.median)),
            r.map(|r| r.min.to_string()).unwrap_or_default(),
            r.map(|r| r.max.to_string()).unwrap_or_default(),
            u(c.and_then(|c| c.steps)),
            c_lo,
            c_hi,
            u(c.and_then(|c| c.chosen)),
            c.map(|c| c.runs().to_string()).unwrap_or_default(),
            opt(c.and_then(|c| c.seed_sd)),
        ];
        let _ = writeln!(s, "{}", row.join(","));
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

pub use super::chart::{svg_chart, svg_for_log, ChartSeries};

fn svg_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("svg: {e}")
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
