//! The plain-text report (headless `sweep`, `report`, the import, the TUI's report screen): no
//! colour codes, numbers formatted by `format::num`.

use std::fmt::Write;

use super::format::{band, fmt_b, num, opt_num};
use super::notes::{note_text, off_curve_text};
use super::{regime_at, Report};
use crate::analysis::perfect_scaling_steps;
use crate::analysis::FitRange;
use crate::core::analysis::{Analysis, Note, Readout, Regime};

/// The per-batch-size table: steps-to-target with its interval, ratio to perfect scaling, the
/// regime, best metaparameters, noise scale and trial outcome counts; † marks a best trial at the
/// edge of the search space. ×ideal and the regime are the curve's: with the confirmed readout
/// they are in the confirm table, beside the values they are read from, and a column empty in
/// every row is left out.
pub fn per_batch_table(a: &Analysis) -> String {
    let mut s = String::new();
    let has_confirm = a.per_batch.iter().any(|p| p.confirmed.is_some());
    let best_curve = a.readout == Readout::BestTrial;
    let ideal_of =
        |p: &crate::core::analysis::BatchPoint| match (a.perfect_anchor, a.on_curve_steps(p)) {
            (Some(anchor), Some(st)) if best_curve => Some(num(
                st as f64 / perfect_scaling_steps(anchor, p.batch_size as f64)
            )),
            _ => None,
        };
    let regime_of = |p: &crate::core::analysis::BatchPoint| {
        a.on_curve_steps(p)
            .filter(|_| best_curve)
            .and_then(|_| regime_at(a, p.batch_size))
            .map(Regime::short)
    };
    let show_ideal = a.per_batch.iter().any(|p| ideal_of(p).is_some());
    let show_regime = a.per_batch.iter().any(|p| regime_of(p).is_some());
    let curve_cols = |ideal: &str, regime: &str| {
        let mut c = String::new();
        if show_ideal {
            let _ = write!(c, " {ideal:>7}");
        }
        if show_regime {
            let _ = write!(c, " {regime:<12}");
        }
        c
    };
    let _ = writeln!(
        s,
        "{:>7} {:>8} {:>15}{} {:>9} {:>9} {:>9} {:>6}  trials (reached/diverged/not reached/cancelled)",
        "B",
        if has_confirm { "best" } else { "steps" },
        "95% interval",
        curve_cols("×ideal", "regime"),
        "best η",
        "η/(1−γ)",
        "B_simple",
        "best#"
    );
    for p in &a.per_batch {
        let ideal = ideal_of(p).unwrap_or_else(|| "-".into());
        let regime = regime_of(p).unwrap_or("");
        let ci = p
            .steps_ci
            .map(|[lo, hi]| format!("[{lo}–{hi}]"))
            .unwrap_or_else(|| "-".into());
        let edge = if p.at_search_edge { "†" } else { "" };
        let c = &p.counts;
        let _ = writeln!(
            s,
            "{:>7} {:>8} {:>15}{} {:>9} {:>9} {:>9} {:>6}  {} ({}/{}/{}/{})",
            p.batch_size,
            match p.steps {
                Some(x) => format!("{x}{edge}"),
                None if p.not_measured => "not-meas".into(),
                None => "none".into(),
            },
            ci,
            curve_cols(&ideal, regime),
            opt_num(p.best_lr),
            opt_num(p.best_effective_lr),
            opt_num(p.b_simple),
            p.best_trial
                .map(|x| x.to_string())
                .unwrap_or_else(|| "-".into()),
            c.trials,
            c.reached,
            c.diverged,
            c.not_reached,
            c.cancelled
        );
        if c.oom > 0 {
            // the row's trial counts include them; the table keeps its columns
            s.pop();
            let _ = writeln!(s, " +{} out of memory", c.oom);
        }
    }
    s.push_str(&until_lines(a));
    s.push_str(&confirm_table(a));
    s
}

/// The confirm stage, one row per B beside the best trial: the confirmed S(B) (the
/// seed median of the best confirmed configuration) with its 95 % interval, the chosen
/// configuration, its seeds, and the seed-to-seed spread a single-seed readout hides. Empty
/// without confirm trials.
pub fn confirm_table(a: &Analysis) -> String {
    let mut s = String::new();
    if a.per_batch.iter().all(|p| p.confirmed.is_none()) {
        return s;
    }
    let _ = writeln!(
        s,
        "\nconfirmed S(B): the search's best configurations re-run with fresh seeds (never used to \
         choose them); the seed median of the best one, its 95 % interval accounting for that \
         choice"
    );
    let curve = a.readout == Readout::Confirmed;
    // ×ideal and the regime where the curve reads the confirmed S(B) (else in the first table)
    let ideal_regime =
        |p: &crate::core::analysis::BatchPoint| match (a.perfect_anchor, a.on_curve_steps(p)) {
            (Some(anchor), Some(st)) if curve => Some((
                num(st as f64 / perfect_scaling_steps(anchor, p.batch_size as f64)),
                regime_at(a, p.batch_size).map(Regime::short).unwrap_or(""),
            )),
            _ => None,
        };
    let show = a
        .per_batch
        .iter()
        .any(|p| p.confirmed.is_some() && ideal_regime(p).is_some());
    let curve_cols = |ideal: &str, regime: &str| {
        if show {
            format!(" {ideal:>7} {regime:<12}")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        s,
        "{:>7} {:>10} {:>10} {:>15} {:>6}{} {:<20} {:>9}  {:<22} {:>11}",
        "B",
        "best trial",
        "confirmed",
        "95% interval",
        "±",
        curve_cols("×ideal", "regime"),
        "chosen (rank, trial)",
        "η",
        "its seeds: reached, range",
        "seed spread"
    );
    for p in &a.per_batch {
        let Some(c) = &p.confirmed else {
            continue;
        };
        let steps = match (c.steps, c.not_measured) {
            (Some(x), _) => x.to_string(),
            (None, true) => "not-meas".into(),
            (None, false) if c.configs.is_empty() => "-".into(),
            (None, false) => "none".into(),
        };
        let ci = c
            .steps_ci
            .map(|ci| match ci.hi {
                Some(h) => format!("[{}–{h}]", ci.lo),
                None => format!("[{}–∞)", ci.lo),
            })
            .unwrap_or_else(|| "-".into());
        let pm = c
            .rel_half_width()
            .map(|w| format!("{:.0} %", w * 100.0))
            .unwrap_or_else(|| "-".into());
        let chosen = c.chosen_config();
        let who = chosen
            .map(|k| format!("#{} (trial {})", k.rank + 1, k.trial))
            .unwrap_or_else(|| "-".into());
        let lr = chosen
            .map(|k| num(k.learning_rate))
            .unwrap_or_else(|| "-".into());
        // seeds cut at their block's quorum are not failures: "≥ the quorum's step"
        let cut = |k: &crate::core::analysis::ConfirmedConfig| {
            if k.censored > 0 {
                format!(" +{} cut", k.censored)
            } else {
                String::new()
            }
        };
        let seeds = chosen
            .map(|k| match (k.min, k.max) {
                (Some(lo), Some(hi)) => format!("{}/{} {lo}–{hi}{}", k.reached, k.runs, cut(k)),
                _ => format!("{}/{}{}", k.reached, k.runs, cut(k)),
            })
            .unwrap_or_else(|| {
                let (r, n): (usize, usize) = c
                    .configs
                    .iter()
                    .fold((0, 0), |(r, n), k| (r + k.reached, n + k.runs));
                format!("{r}/{n} (all configs)")
            });
        let spread = c
            .seed_sd
            .map(|sd| format!("σ_ln {sd:.2}"))
            .unwrap_or_else(|| "-".into());
        let pending = if c.complete { "" } else { "  (running)" };
        let (ideal, regime) = ideal_regime(p).unwrap_or_else(|| ("-".to_string(), ""));
        let _ = writeln!(
            s,
            "{:>7} {:>10} {:>10} {:>15} {:>6}{} {:<20} {:>9}  {:<22} {:>11}{pending}",
            p.batch_size,
            p.steps
                .map(|x| x.to_string())
                .unwrap_or_else(|| "none".into()),
            steps,
            ci,
            pm,
            curve_cols(&ideal, regime),
            who,
            lr,
            seeds,
            spread
        );
    }
    let others: Vec<String> = a
        .per_batch
        .iter()
        .filter_map(|p| {
            let c = p.confirmed.as_ref()?;
            let rest: Vec<String> = c
                .configs
                .iter()
                .filter(|k| Some(k.trial) != c.chosen)
                .map(|k| {
                    format!(
                        "#{} {}",
                        k.rank + 1,
                        k.median
                            .map(|m| format!("{m:.0}"))
                            .unwrap_or_else(|| "not reached".into())
                    )
                })
                .collect();
            (!rest.is_empty()).then(|| format!("B {}: {}", p.batch_size, rest.join(", ")))
        })
        .collect();
    if !others.is_empty() {
        let _ = writeln!(
            s,
            "  the other confirmed configurations' seed medians: {}",
            others.join(" · ")
        );
    }
    confirm_legend(a, &mut s);
    let _ = writeln!(s, "  {}", readout_line(a));
    s
}

/// The confirm table's legend: the seed spread, and what a cut seed is where there are any.
fn confirm_legend(a: &Analysis, s: &mut String) {
    let _ = writeln!(
        *s,
        "  seed spread: the standard deviation of ln steps between seeds of one configuration \
         (σ_ln 0.2 ≈ a typical seed ±20 % off its median)"
    );
    let censored = a
        .per_batch
        .iter()
        .filter_map(|p| p.confirmed.as_ref())
        .any(|c| c.configs.iter().any(|k| k.censored > 0));
    if censored {
        let _ = writeln!(
            *s,
            "  cut: seeds stopped once three quarters of their block of fresh seeds reached \
             (slower than that step, which is all the median needs of them; not failures)"
        );
    }
}

/// Which readout the curve reads, in words.
pub fn readout_line(a: &Analysis) -> String {
    match a.readout {
        Readout::Confirmed => "the fit, regimes, ladders and projection read the confirmed S(B); \
                               the best trial (Shallue et al.'s readout) is shown beside it"
            .into(),
        Readout::BestTrial => "the fit, regimes, ladders and projection read the best trial \
                               (Shallue et al.'s readout) until the confirm stage has finished \
                               at every batch size"
            .into(),
    }
}

/// `--until`: where it met its half-width, and why it did not elsewhere (one line per such B), so
/// that a wide interval is never read as a tight one. Empty for a sweep without `--until`.
pub fn until_lines(a: &Analysis) -> String {
    use crate::core::analysis::UntilStatus;
    let mut s = String::new();
    let met: Vec<String> = a
        .per_batch
        .iter()
        .filter(|p| p.until == Some(UntilStatus::Met))
        .map(|p| p.batch_size.to_string())
        .collect();
    let of = if a.per_batch.iter().any(|p| p.confirmed.is_some()) {
        " (the confirmed S(B)'s interval; --until or the preset's confirm_until)"
    } else {
        ""
    };
    if !met.is_empty() {
        let _ = writeln!(s, "  --until met{of} at B = {}", met.join(", "));
    }
    for p in &a.per_batch {
        let Some(st) = p.until.filter(|st| *st != UntilStatus::Met) else {
            continue;
        };
        let why = p.until_reason.clone().unwrap_or_else(|| match st {
            UntilStatus::Budget => {
                "the search budget ran out (or the sweep stopped) while it still narrowed".into()
            }
            _ => String::new(),
        });
        // with a confirm stage --until narrowed the confirmed interval
        let w = match &p.confirmed {
            Some(c) => c.rel_half_width(),
            None => p.rel_half_width(),
        }
        .map(|w| format!(" (±{:.0} %)", w * 100.0))
        .unwrap_or_default();
        let _ = writeln!(
            s,
            "  --until {} at B = {}{w}: {why}",
            st.label(),
            p.batch_size
        );
    }
    s
}

/// One line for every view: "perfect 8–16 → diminishing 16–256 → maximal 256–1024 · boundaries
/// 16 [11–23], 256 [128–512]", then what the data cannot support.
pub fn regimes_line(a: &Analysis) -> String {
    let mut out = String::new();
    let measured = !(a.evidence.curve.is_empty() && a.evidence.thin.is_empty());
    if a.withheld() && measured {
        out.push_str("withheld (too little evidence)");
    } else if a.regimes.is_empty() {
        out.push_str("not enough data");
    }
    let mut bounds = Vec::new();
    for (i, s) in a.regimes.iter().enumerate() {
        if i > 0 {
            out.push_str(" → ");
        }
        out.push_str(&format!(
            "{} {}–{}{}",
            s.regime.short(),
            fmt_b(s.b_lo),
            fmt_b(s.b_hi),
            if s.uncertain { "?" } else { "" }
        ));
        if let Some([lo, hi]) = s.b_hi_ci {
            bounds.push(format!("{} [{}–{}]", fmt_b(s.b_hi), fmt_b(lo), fmt_b(hi)));
        }
    }
    if !bounds.is_empty() {
        out.push_str(" · boundaries ");
        out.push_str(&bounds.join(", "));
    }
    let has = |r: Regime| a.regimes.iter().any(|s| s.regime == r);
    if !a.regimes.is_empty() {
        if let Some(bmax) = a
            .regimes
            .last()
            .map(|s| s.b_hi)
            .filter(|_| !has(Regime::Maximal))
        {
            out.push_str(&format!(" · maximal not reached below {}", fmt_b(bmax)));
        }
        if !has(Regime::Perfect) {
            out.push_str(" · perfect not observed");
        }
    }
    out
}

impl Report {
    /// The report text without the projection (what a headless sweep prints before it).
    pub fn main_text(&self) -> String {
        let mut s = self.heading();
        s.push('\n');
        s.push_str(&per_batch_table(&self.analysis));
        s.push('\n');
        if let Some(t) = &self.transfer {
            s.push_str(&super::transfer::text(t));
            s.push('\n');
        }
        let reached = self
            .per_batch
            .iter()
            .filter(|p| p.best_trial_steps.is_some())
            .count();
        if self.per_batch.iter().any(|p| p.not_measured) {
            for n in &self.analysis.notes {
                let _ = writeln!(s, "  note: {}", note_text(n));
            }
            s.push_str(&self.tail_text());
            return s;
        }
        if reached == 0 {
            let _ = writeln!(s, "no batch size reached the target: no curve to analyse");
            return s;
        }
        if let Some((b0, s0)) = self.perfect_anchor {
            let _ = writeln!(
                s,
                "perfect scaling reference: S = {s0}·{b0}/B (anchored at the smallest B on the curve)"
            );
        }
        match &self.evidence.text {
            // one line says what is missing; nothing read from the curve is printed
            Some(w) => {
                let _ = writeln!(s, "{w}");
            }
            None => {
                let _ = writeln!(
                    s,
                    "regimes (ordered partition of a monotone fit, 95% intervals on boundaries): {}",
                    regimes_line(&self.analysis)
                );
            }
        }
        if let Some(off) = off_curve_text(&self.analysis.evidence) {
            let _ = writeln!(s, "  {off}");
        }
        for n in &self.analysis.notes {
            // a missing regime's note is said once, with why
            let missing = matches!(
                n,
                Note::MaximalNotReached { .. } | Note::PerfectNotObserved { .. }
            );
            if !missing || self.missing_regimes.is_empty() {
                let _ = writeln!(s, "  note: {}", note_text(n));
            }
        }
        for m in &self.missing_regimes {
            let _ = writeln!(s, "  note: {m}");
        }
        if self.evidence.text.is_none() {
            s.push_str(&self.fit_text());
        }
        s.push_str(&self.noise_text());
        s.push_str(&self.tail_text());
        s
    }

    /// "sweep NAME (optimizer, devices) — target …", the trial count and the log.
    fn heading(&self) -> String {
        let mut s = String::new();
        if !self.preset.is_empty() {
            let _ = writeln!(
                s,
                "sweep {} ({}, {}) — target {}",
                self.preset, self.optimizer, self.devices, self.target
            );
        } else {
            let _ = writeln!(s, "target {}", self.target);
        }
        // each stage against its own plan: "24/24 search trials + 50/50 confirm trials"
        let st = &self.stages;
        let mut status = if st.search.planned > 0 {
            format!("{}/{} trials", st.search.done, st.search.planned)
        } else {
            format!("{}/{} trials", self.trials_done, self.trials_planned)
        };
        if st.staged() {
            status = format!("{}/{} search trials", st.search.done, st.search.planned);
            if let Some(c) = st.confirm {
                let _ = write!(
                    status,
                    " + {}/{} confirm trials (confirm {})",
                    c.done,
                    c.planned,
                    self.confirm.as_deref().unwrap_or("on")
                );
            }
            if let Some(r) = st.repeats {
                let _ = write!(status, " + {}/{} repeats", r.done, r.planned);
            }
        }
        if let Some(w) = self.wall_s {
            let _ = write!(status, " in {w:.1} s");
        }
        if self.cancelled {
            status.push_str(" — interrupted, resumable");
        }
        let _ = writeln!(s, "{status}");
        if let Some(p) = &self.log {
            let _ = writeln!(s, "run log: {p}");
        }
        if let Some(c) = &self.calibration {
            let _ = writeln!(s, "{}", c.summary);
            let _ = writeln!(s, "  {}", super::calibration::price_line(c));
            for l in &c.lines {
                let _ = writeln!(s, "  {l}");
            }
        }
        if let Some(g) = &self.goal {
            let _ = writeln!(
                s,
                "read from the trials' evaluation curves: the sweep ran to its goal {g} \
                 (at or looser than the goal S(B) is exact; stricter is not measured)"
            );
        }
        if !self.ladder.is_empty() {
            let rungs: Vec<String> = self.ladder.iter().map(|t| t.to_string()).collect();
            let _ = writeln!(
                s,
                "ladder of targets: {} (report --targets auto: B_crit at each)",
                rungs.join(", ")
            );
        }
        s
    }

    /// The fit line with its intervals and verdict, and the noise-scale line.
    fn fit_text(&self) -> String {
        let mut s = String::new();
        match &self.fit {
            Some(f) => {
                let note = match f.range {
                    FitRange::AboveRange => " — beyond the largest B measured: no bend seen, B_crit is a lower bound at best",
                    FitRange::BelowRange => " — below the smallest B measured: already saturated",
                    FitRange::Within => "",
                };
                let af = self.analysis.fit.as_ref();
                let intervals = match (af.and_then(|f| f.s_min_ci), af.and_then(|f| f.b_crit_ci)) {
                    (Some([sl, sh]), Some([bl, bh])) => format!(
                        " (95% intervals: S_min {}–{}, B_crit {}–{})",
                        num(sl),
                        num(sh),
                        num(bl),
                        num(bh)
                    ),
                    _ => String::new(),
                };
                let uncertain = if af.is_some_and(|f| f.uncertain) {
                    " — UNCERTAIN (poor R² or an interval wider than its value)"
                } else {
                    ""
                };
                let _ = writeln!(
                    s,
                    "fit S = S_min·(1 + B_crit/B): S_min = {} steps, B_crit = {}{intervals}{note} (R² {:.3}, rms ln-residual {:.3}){uncertain}",
                    num(f.s_min),
                    num(f.b_crit),
                    f.r2,
                    f.rmse_log
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "fit S = S_min·(1 + B_crit/B): not determined by these points"
                );
            }
        }
        s
    }

    /// The noise-scale line: the median B_simple of the best trials with its band (and why the
    /// band has no upper end where it has none), beside the fitted B_crit where there is one.
    fn noise_text(&self) -> String {
        let mut s = String::new();
        // the band last: where it has no upper end the line says why
        let band_of = |n: &super::NoiseSummary| match &n.interval {
            Some(i) => format!(
                "; 95 % band {}{}",
                band(i),
                super::format::unbounded_band_reason(i, n.unbounded)
            ),
            None => String::new(),
        };
        match (&self.noise, &self.fit) {
            (Some(n), Some(f)) => {
                let _ = writeln!(
                    s,
                    "noise scale: median B_simple of the best trials = {} (fitted B_crit = {}, ratio {:.2}){}",
                    num(n.median_b_simple),
                    num(f.b_crit),
                    n.ratio_to_b_crit.unwrap_or(f64::NAN),
                    band_of(n)
                );
            }
            (Some(n), None) => {
                let _ = writeln!(
                    s,
                    "noise scale: median B_simple of the best trials = {}{}",
                    num(n.median_b_simple),
                    band_of(n)
                );
            }
            _ => {
                let _ = writeln!(s, "noise scale: not measured");
            }
        }
        if let Some(k) = self.noise.as_ref().and_then(|n| n.sampled_every) {
            let _ = if k <= 1.0 {
                writeln!(s, "  tr(Σ) measured on every step of the best trials")
            } else {
                writeln!(
                    s,
                    "  tr(Σ) measured on one step in {k:.0} of the best trials (median; the cadence follows the measured cost of a sample)"
                )
            };
        }
        s
    }

    /// The LR exponent, the kept trials, out-of-memory and failed trials.
    fn tail_text(&self) -> String {
        let mut s = String::new();
        if let Some(k) = self.lr_exponent {
            let _ = writeln!(
                s,
                "best η ∝ B^{k:.2} across batch sizes (linear rule: 1, sqrt rule: 0.5)"
            );
        }
        let k = &self.kept;
        let early_note = if k.early_stopped > 0 {
            format!(
                " ({} stopped early at their B's best step count: S(B) unchanged)",
                k.early_stopped
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "kept in the log: {} diverged, {} did not reach{early_note}, {} cancelled (cancelled never count)",
            k.diverged, k.not_reached, k.cancelled
        );
        if k.oom > 0 {
            let oom_at: Vec<String> = self
                .per_batch
                .iter()
                .filter(|p| p.counts.oom > 0)
                .map(|p| format!("B = {} ({})", p.batch_size, p.counts.oom))
                .collect();
            let _ = writeln!(
                s,
                "out of device memory: {} trial(s) at {}",
                k.oom,
                oom_at.join(", ")
            );
        }
        if !self.errors.is_empty() {
            let _ = writeln!(
                s,
                "{} trial(s) failed to run; first: trial {}: {}",
                self.errors.len(),
                self.errors[0].trial_id,
                self.errors[0].message
            );
        }
        s
    }

    /// The time-to-target projection section (docs/science.md §6), or a line saying
    /// why there is none.
    pub fn projection_text(&self) -> String {
        super::projection::section(self)
    }

    /// The whole report: main text, a blank line, the projection section.
    pub fn text(&self) -> String {
        let mut s = self.main_text();
        s.push('\n');
        s.push_str(&self.projection_text());
        s
    }
}
