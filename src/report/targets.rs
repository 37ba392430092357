//! B_crit over targets: one sweep read at each rung of a ladder of targets — the
//! `report --targets` table and JSON, `compare --targets`, and the `export --bcrit-svg` chart
//! (B_crit with its bootstrap interval and S_min against the target, log axes, fitted trends).
//! Every rung is `analysis::analyze` at that target: the same pipeline as `report --target`.

use std::fmt::Write;

use plotters::prelude::*;
use serde::Serialize;
use serde_json::json;

use super::format::{fmt_sig, num};
use super::json::analysis_json;
use super::text::regimes_line;
use super::Run;
use crate::analysis::ladder::{
    analyze_ladder, bcrit_curve, bcrit_trend, default_ladder, s_min_trend, BcritPoint, Rung, Trend,
    TrendVerdict,
};
use crate::core::analysis::{target_text, Readout, Study};
use crate::core::record::TrialRecord;
use crate::runlog::reader::RunLog;
use crate::workload::spec::{ConfirmPlan, Target};

/// One sweep read at each rung of a ladder.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetsReport {
    pub preset: String,
    pub optimizer: String,
    /// The sweep's goal (the strictest rung it ran to).
    pub goal: Target,
    /// Loosest first.
    pub rungs: Vec<Rung>,
    pub curve: Vec<BcritPoint>,
    pub b_crit_trend: Option<Trend>,
    pub s_min_trend: Option<Trend>,
    /// Which S(B) the rungs read (the goal rung's readout).
    pub readout: Readout,
    /// The sweep's confirm stage.
    pub confirm: Option<ConfirmPlan>,
    /// An unresolved B_crit trend: the plan that would resolve it.
    pub needed: Option<NeededPlan>,
}

/// What a sweep would need for an unresolved B_crit(target) trend to be resolved at 95 %
/// (first order: B_crit's intervals narrow with the S(B) intervals it is fitted to, and those of
/// the confirmed S(B) narrow as 1/√r; the rungs share trials, so this is indicative).
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct NeededPlan {
    /// How many times narrower the exponent's 95 % interval must be to exclude 0 (its
    /// half-width over |exponent|).
    pub narrower: f64,
    /// Confirm configurations × seeds per batch size that would narrow it so.
    pub configs: usize,
    pub seeds: usize,
    /// Confirm trials per batch size and over the sweep's batch sizes.
    pub trials_per_batch: usize,
    pub trials: usize,
    /// The `--until REL` that asks for it: the goal rung's median confirmed half-width over
    /// `narrower` (None without confirmed intervals).
    pub until: Option<f64>,
}

/// The plan of [`NeededPlan`] for `trend` (None: resolved, or no trend).
pub fn needed_plan(
    trend: Option<&Trend>,
    goal: Option<&Rung>,
    confirm: Option<ConfirmPlan>,
) -> Option<NeededPlan> {
    let t = trend.filter(|t| t.verdict == TrendVerdict::Unresolved)?;
    let half = (t.exponent_ci[1] - t.exponent_ci[0]) / 2.0;
    let narrower = (half / t.exponent.abs().max(1e-6)).max(1.0);
    let plan = confirm.unwrap_or(ConfirmPlan::DEFAULT);
    let seeds = (plan.seeds as f64 * narrower * narrower).ceil().min(1e6) as usize;
    let n = goal.map_or(0, |g| g.analysis.per_batch.len());
    let widths: Vec<f64> = goal
        .map(|g| {
            g.analysis
                .per_batch
                .iter()
                .filter_map(|p| p.confirmed.as_ref()?.rel_half_width())
                .collect()
        })
        .unwrap_or_default();
    Some(NeededPlan {
        narrower,
        configs: plan.configs,
        seeds,
        trials_per_batch: plan.configs * seeds,
        trials: plan.configs * seeds * n,
        until: crate::analysis::median(widths).map(|w| w / narrower),
    })
}

/// The rungs `values` name, or the log's own ladder (a geometric one for a single-target log)
/// when `values` is empty.
pub fn ladder_values(run: &Run, values: &[f64]) -> Vec<f64> {
    if values.is_empty() {
        default_ladder(&run.header.preset.workload, run.trials)
    } else {
        values.to_vec()
    }
}

/// Reads `run` at each of `values` (empty: its default ladder).
pub fn build(run: &Run, values: &[f64]) -> TargetsReport {
    of_trials(
        &Study::of_preset(&run.header.preset),
        run.trials,
        &ladder_values(run, values),
        &run.header.preset.name,
    )
}

/// Reads the trials of `study` at each of `values`.
pub fn of_trials(
    study: &Study,
    trials: &[TrialRecord],
    values: &[f64],
    name: &str,
) -> TargetsReport {
    let rungs = analyze_ladder(study, trials, values);
    let curve = bcrit_curve(&rungs);
    let b_crit_trend = bcrit_trend(&curve);
    // the strictest rung measured (the goal when the ladder reaches it)
    let goal_rung = rungs
        .iter()
        .rev()
        .find(|r| r.analysis.per_batch.iter().all(|p| !p.not_measured));
    let needed = needed_plan(b_crit_trend.as_ref(), goal_rung, study.confirm);
    TargetsReport {
        preset: name.to_string(),
        optimizer: study.optimizer.name().to_string(),
        goal: study.goal,
        s_min_trend: s_min_trend(&curve),
        b_crit_trend,
        readout: goal_rung.map_or(Readout::BestTrial, |r| r.analysis.readout),
        confirm: study.confirm,
        needed,
        rungs,
        curve,
    }
}

/// "B_crit ∝ target^−0.62 [−0.95, −0.29] over 5 rungs: grows as the target tightens".
pub fn trend_text(what: &str, t: &Trend) -> String {
    let verdict = match t.verdict {
        TrendVerdict::Grows => format!("{what} grows as the target tightens"),
        TrendVerdict::Shrinks => format!("{what} shrinks as the target tightens"),
        TrendVerdict::Unresolved => {
            format!("no trend in {what} resolved (the exponent's interval contains 0)")
        }
    };
    format!(
        "{what} ∝ target^{:.2} [{:.2}, {:.2}] over {} rungs: {verdict}",
        t.exponent, t.exponent_ci[0], t.exponent_ci[1], t.rungs
    )
}

fn ci_text(v: Option<f64>, ci: Option<[f64; 2]>) -> String {
    match (v, ci) {
        (Some(v), Some([lo, hi])) => format!("{} [{}–{}]", num(v), num(lo), num(hi)),
        (Some(v), None) => num(v),
        _ => "-".into(),
    }
}

impl TargetsReport {
    /// One row per rung: B_crit and S_min with their intervals, R², measured batch sizes and the
    /// regimes; then the trends.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "sweep {} ({}) — B_crit over targets of {} (the sweep ran to its goal {}; looser \
             targets are exact, stricter ones not measured)",
            self.preset,
            self.optimizer,
            self.goal.metric.name(),
            target_text(&self.goal)
        );
        let _ = writeln!(
            s,
            "{:>9} {:>22} {:>22} {:>6} {:>10}  regimes",
            "target", "B_crit [95%]", "S_min [95%]", "R²", "B measured"
        );
        for (r, p) in self.rungs.iter().zip(&self.curve) {
            let n = r.analysis.per_batch.len();
            let measured = if p.not_measured > 0 {
                format!("{}/{n} ({} n/m)", p.measured, p.not_measured)
            } else {
                format!("{}/{n}", p.measured)
            };
            let regimes = if p.not_measured > 0 {
                "not measured (stricter than the goal)".to_string()
            } else {
                regimes_line(&r.analysis)
            };
            let _ = writeln!(
                s,
                "{:>9} {:>22} {:>22} {:>6} {:>10}  {}{}",
                fmt_target(r.target),
                ci_text(p.b_crit, p.b_crit_ci),
                ci_text(p.s_min, p.s_min_ci),
                p.r2.map(|r| format!("{r:.3}"))
                    .unwrap_or_else(|| "-".into()),
                measured,
                regimes,
                if p.uncertain { " · fit uncertain" } else { "" }
            );
        }
        match &self.b_crit_trend {
            Some(t) => {
                let _ = writeln!(s, "trend: {}", trend_text("B_crit", t));
            }
            None => {
                let _ = writeln!(s, "trend: needs B_crit at ≥ 2 targets");
            }
        }
        if let Some(t) = &self.s_min_trend {
            let _ = writeln!(s, "       {}", trend_text("S_min", t));
        }
        let _ = writeln!(s, "{}", self.readout_text());
        if let Some(n) = &self.needed {
            let _ = writeln!(s, "{}", self.needed_text(n));
        }
        s
    }

    /// Which S(B) the rungs' fits read.
    fn readout_text(&self) -> String {
        match self.readout {
            Readout::Confirmed => {
                "each rung's fit reads the confirmed S(B): the seed median of the \
                                   best of the configurations confirmed at the goal, re-chosen at \
                                   each rung from their evaluation curves"
                    .into()
            }
            Readout::BestTrial if self.confirm.is_some() => "each rung's fit reads the best trial \
                                   (the confirm stage has not finished at every batch size)"
                .into(),
            Readout::BestTrial => "each rung's fit reads the best trial (Shallue et al.'s \
                                   readout; no confirm stage)"
                .into(),
        }
    }

    /// What resolving the B_crit trend would take, in words.
    fn needed_text(&self, n: &NeededPlan) -> String {
        let how = match self.readout {
            Readout::Confirmed => format!(
                "the confirmed S(B) narrows as 1/√r, so about {}×{} per batch size ({} confirm \
                 trials per B, {} in all: --confirm {}x{}{})",
                n.configs,
                n.seeds,
                n.trials_per_batch,
                n.trials,
                n.configs,
                n.seeds,
                n.until
                    .map(|u| format!(", or --until {u:.2}"))
                    .unwrap_or_default()
            ),
            Readout::BestTrial => format!(
                "the best-trial S(B) narrows by ~0.25 % of its width per added search trial \
                 (docs/intervals.md), so more search trials will not do it; a confirm stage of about \
                 {}×{} per batch size ({} trials per B, {} in all: --confirm {}x{})",
                n.configs, n.seeds, n.trials_per_batch, n.trials, n.configs, n.seeds
            ),
        };
        format!(
            "to resolve the B_crit trend at 95 % its exponent's interval must narrow {:.1}× (its \
             half-width over |exponent|); {how}. First order: B_crit's intervals narrow with the \
             S(B) intervals they are fitted to; the rungs share trials",
            n.narrower
        )
    }

    /// `{"targets": [{"target": T, "analysis": {…}}, …], "b_crit": [...], trends}`: each rung's
    /// analysis exactly as `report --target T --json` shows it under `analysis`.
    pub fn to_json(&self) -> serde_json::Value {
        let targets: Vec<serde_json::Value> = self
            .rungs
            .iter()
            .map(|r| json!({"target": r.target, "analysis": analysis_json(&r.analysis)}))
            .collect();
        json!({
            "report_version": super::REPORT_VERSION,
            "preset": self.preset,
            "optimizer": self.optimizer,
            "goal": target_text(&self.goal),
            "targets": targets,
            "b_crit": self.curve,
            "b_crit_trend": self.b_crit_trend,
            "s_min_trend": self.s_min_trend,
            "readout": self.readout,
            "confirm": self.confirm.map(|c| c.to_string()),
            "needed": self.needed,
        })
    }

    /// The B_crit chart: B_crit with its 95 % interval (top) and S_min with its interval
    /// (bottom) against the target on log axes, the target tightening to the right, each with
    /// its fitted trend (dashed).
    pub fn svg(&self) -> anyhow::Result<String> {
        bcrit_svg(
            &format!(
                "{} — B_crit and S_min vs target ({})",
                self.preset,
                self.goal.metric.name()
            ),
            &self.curve,
            self.b_crit_trend.as_ref(),
            self.s_min_trend.as_ref(),
        )
    }
}

/// A target value as the tables print it.
pub fn fmt_target(t: f64) -> String {
    let s = format!("{t}");
    if s.len() <= 8 {
        s
    } else {
        fmt_sig(t)
    }
}

fn svg_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("svg: {e}")
}

/// One panel: y (log) against u = −log10(target) (so a tighter target is further right).
fn panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    pts: &[(f64, f64, Option<[f64; 2]>)],
    trend: Option<&Trend>,
    colour: RGBColor,
    u_range: (f64, f64),
) -> anyhow::Result<()> {
    let mut ys: Vec<f64> = Vec::new();
    for (_, y, ci) in pts {
        ys.push(*y);
        if let Some([lo, hi]) = ci {
            ys.push(lo.max(1e-9));
            ys.push(*hi);
        }
    }
    let (y0, y1) = if ys.is_empty() {
        (1.0, 10.0)
    } else {
        let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ys.iter().copied().fold(0.0, f64::max);
        ((lo / 2.0).max(1e-9), hi * 2.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(65)
        .build_cartesian_2d(u_range.0..u_range.1, (y0..y1).log_scale())
        .map_err(svg_err)?;
    chart
        .configure_mesh()
        .x_desc("target (log axis; tighter →)")
        .y_desc(y_desc)
        .x_label_formatter(&|u| fmt_sig(10f64.powf(-u)))
        .y_label_formatter(&|y| num(*y))
        .draw()
        .map_err(svg_err)?;
    let xy: Vec<(f64, f64)> = pts.iter().map(|(t, y, _)| (-t.log10(), *y)).collect();
    if pts.is_empty() {
        chart
            .draw_series(std::iter::once(Text::new(
                "no fit at any target (needs ≥ 3 measured batch sizes)",
                ((u_range.0 + u_range.1) / 2.0, (y0 * y1).sqrt()),
                ("sans-serif", 14),
            )))
            .map_err(svg_err)?;
        return Ok(());
    }
    chart
        .draw_series(LineSeries::new(xy.clone(), colour.stroke_width(2)))
        .map_err(svg_err)?
        .label(format!("{y_desc} (fit at each target)"))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
    chart
        .draw_series(xy.iter().map(|&p| Circle::new(p, 4, colour.filled())))
        .map_err(svg_err)?;
    for (t, _, ci) in pts {
        let Some([lo, hi]) = ci else { continue };
        let u = -t.log10();
        let w = (u_range.1 - u_range.0) * 0.008;
        for path in [
            vec![(u, lo.max(y0)), (u, hi.min(y1))],
            vec![(u - w, lo.max(y0)), (u + w, lo.max(y0))],
            vec![(u - w, hi.min(y1)), (u + w, hi.min(y1))],
        ] {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    path,
                    colour.stroke_width(1),
                )))
                .map_err(svg_err)?;
        }
    }
    if let Some(tr) = trend {
        let grid: Vec<(f64, f64)> = (0..=50)
            .map(|i| {
                let u = u_range.0 + (u_range.1 - u_range.0) * i as f64 / 50.0;
                (u, tr.at(10f64.powf(-u)))
            })
            .filter(|&(_, y)| y >= y0 && y <= y1)
            .collect();
        let dashed: Vec<Vec<(f64, f64)>> = grid.chunks(2).map(|c| c.to_vec()).collect();
        let grey = RGBColor(90, 90, 90);
        for seg in dashed.iter().step_by(2) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    seg.clone(),
                    grey.stroke_width(1),
                )))
                .map_err(svg_err)?;
        }
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(svg_err)?
            .label(format!(
                "trend ∝ target^{:.2} [{:.2}, {:.2}]",
                tr.exponent, tr.exponent_ci[0], tr.exponent_ci[1]
            ))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(svg_err)?;
    Ok(())
}

/// The B_crit chart of a ladder (see [`TargetsReport::svg`]).
pub fn bcrit_svg(
    title: &str,
    curve: &[BcritPoint],
    b_trend: Option<&Trend>,
    s_trend: Option<&Trend>,
) -> anyhow::Result<String> {
    anyhow::ensure!(!curve.is_empty(), "nothing to plot: no targets");
    let us: Vec<f64> = curve.iter().map(|p| -p.target.log10()).collect();
    let lo = us.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = us.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.08).max(0.05);
    let u_range = (lo - pad, hi + pad);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 760)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_err)?;
        let root = root.titled(title, ("sans-serif", 20)).map_err(svg_err)?;
        let (top, bottom) = root.split_vertically(400);
        let bc: Vec<(f64, f64, Option<[f64; 2]>)> = curve
            .iter()
            .filter_map(|p| Some((p.target, p.b_crit?, p.b_crit_ci)))
            .collect();
        let sm: Vec<(f64, f64, Option<[f64; 2]>)> = curve
            .iter()
            .filter_map(|p| Some((p.target, p.s_min?, p.s_min_ci)))
            .collect();
        panel(
            &top,
            "critical batch size B_crit (95% bootstrap interval)",
            "B_crit",
            &bc,
            b_trend,
            RGBColor(31, 119, 180),
            u_range,
        )?;
        panel(
            &bottom,
            "minimum steps S_min (95% bootstrap interval)",
            "S_min",
            &sm,
            s_trend,
            RGBColor(214, 39, 40),
            u_range,
        )?;
        root.present().map_err(svg_err)?;
    }
    Ok(out)
}

/// `compare --targets`: B_crit [95 %] of each log at each target, side by side.
pub fn render_compare_targets(logs: &[RunLog], values: &[f64]) -> String {
    let reports: Vec<(String, TargetsReport)> = logs
        .iter()
        .map(|l| {
            let label = l
                .path
                .file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_else(|| l.path.display().to_string());
            (label, build(&Run::of_log(l), values))
        })
        .collect();
    let mut s = String::new();
    for (i, (label, r)) in reports.iter().enumerate() {
        let _ = writeln!(
            s,
            "#{} {} ({}, goal {})",
            i + 1,
            label,
            r.optimizer,
            target_text(&r.goal)
        );
    }
    let mut all: Vec<f64> = reports
        .iter()
        .flat_map(|(_, r)| r.rungs.iter().map(|x| x.target))
        .collect();
    all = crate::analysis::ladder::order_loosest_first(&all);
    let _ = write!(s, "\n{:>9}", "target");
    for i in 0..reports.len() {
        let _ = write!(s, " {:>24}", format!("#{} B_crit [95%]", i + 1));
    }
    s.push('\n');
    for t in all {
        let _ = write!(s, "{:>9}", fmt_target(t));
        for (_, r) in &reports {
            let cell = match r.curve.iter().find(|p| p.target == t) {
                Some(p) if p.not_measured > 0 => "not measured".to_string(),
                Some(p) => ci_text(p.b_crit, p.b_crit_ci),
                None => String::new(),
            };
            let _ = write!(s, " {cell:>24}");
        }
        s.push('\n');
    }
    for (i, (_, r)) in reports.iter().enumerate() {
        if let Some(t) = &r.b_crit_trend {
            let _ = writeln!(s, "#{} {}", i + 1, trend_text("B_crit", t));
        }
    }
    s
}
