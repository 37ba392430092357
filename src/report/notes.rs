//! The wording of the analysis's typed notes (`core::analysis::Note`): what every view prints.

use super::format::{fmt_b, fmt_sig};
use crate::core::analysis::{Evidence, Note, SpanEnd};
use crate::workload::spec::LrRule;

/// One note in words.
pub fn note_text(n: &Note) -> String {
    match n {
        Note::TooFewForRegimes { reached } => format!(
            "regimes need at least 3 batch sizes that reached the target ({reached} did)"
        ),
        Note::PerfectNotObserved { b_min } => format!(
            "perfect scaling not observed: S already falls slower than 1/B from the smallest \
             measured B = {}",
            fmt_b(*b_min)
        ),
        Note::MaximalNotReached { b_max } => format!(
            "maximal data parallelism not reached below B = {}",
            fmt_b(*b_max)
        ),
        Note::NoDiminishingBand {
            perfect_end,
            maximal_start,
        } => format!(
            "no diminishing-returns band resolved: the curve turns from perfect scaling to flat \
             between B = {} and {}",
            fmt_b(*perfect_end),
            fmt_b(*maximal_start)
        ),
        Note::PoorBoundary { regime, end, ci } => format!(
            "the {} of {} is poorly determined (95 % B ≈ {}–{})",
            match end {
                SpanEnd::Start => "start",
                SpanEnd::End => "end",
            },
            regime.label(),
            fmt_b(ci[0]),
            fmt_b(ci[1])
        ),
        Note::FitPerfectEndDisagrees {
            b_crit,
            b_crit_ci: [lo, hi],
            segmented,
        } => format!(
            "the fit puts the end of perfect scaling at B_crit/3 ≈ {} ({}–{}), the \
             segmented model at {}: the curve bends more sharply than S_min(1 + B_crit/B)",
            fmt_b(b_crit / 3.0),
            fmt_b(lo / 3.0),
            fmt_b(hi / 3.0),
            fmt_b(*segmented)
        ),
        Note::FitMaximalStartDisagrees {
            b_crit,
            b_crit_ci: [lo, hi],
            segmented,
        } => format!(
            "the fit puts the start of maximal data parallelism at 3·B_crit ≈ {} ({}–{}), \
             the segmented model at {}",
            fmt_b(b_crit * 3.0),
            fmt_b(lo * 3.0),
            fmt_b(hi * 3.0),
            fmt_b(*segmented)
        ),
        Note::FitUncertain { r2, b_crit_ci } => format!(
            "the fit S = S_min(1 + B_crit/B) is uncertain (r² {:.2}{}): B_crit and anything projected from it are indicative only",
            r2,
            b_crit_ci
                .map(|[lo, hi]| format!(", B_crit 95 % {lo:.0}–{hi:.0}"))
                .unwrap_or_default()
        ),
        Note::RangeRecentred { ranges } => {
            let at: Vec<String> = ranges
                .iter()
                .map(|r| {
                    let lr = r.learning_rate;
                    let range = format!(
                        "η {}–{}{}",
                        fmt_sig(lr[0]),
                        fmt_sig(lr[1]),
                        r.one_minus_momentum
                            .map(|o| format!(", 1−γ {}–{}", fmt_sig(o[0]), fmt_sig(o[1])))
                            .unwrap_or_default()
                    );
                    let bs: Vec<String> = r.batch_sizes.iter().map(|b| b.to_string()).collect();
                    format!("B = {} ({range} explored)", bs.join(", "))
                })
                .collect();
            format!(
                "search range re-centred (--widen) at {}: S(B) there is the best over the wider range",
                at.join("; ")
            )
        }
        Note::AtSearchEdge { at } => {
            let flagged: Vec<String> = at
                .iter()
                .map(|e| {
                    let what: Vec<&str> = e.edges.iter().map(|x| x.label()).collect();
                    format!("{} ({})", e.batch_size, what.join(", "))
                })
                .collect();
            format!(
                "best trial at the edge of the search space at B = {}: S(B) there is an upper bound \
                 (widen or re-centre the range: sweep --widen N)",
                flagged.join(", ")
            )
        }
        Note::MomentumAtZero { batch_sizes } => {
            let bs: Vec<String> = batch_sizes.iter().map(|b| b.to_string()).collect();
            format!(
                "at B = {} the best 1−γ is at the top of its range and cannot move past γ = 0 (--widen \
                 does not try): little or no momentum works best there",
                bs.join(", ")
            )
        }
        Note::LrRuleSetsExponent { rule, exponent } => {
            let (name, e) = match rule {
                LrRule::None | LrRule::Linear => ("linear", "1"),
                LrRule::Sqrt => ("sqrt", "0.5"),
            };
            let k = exponent
                .map(|k| format!(" (k = {k:.2})"))
                .unwrap_or_default();
            format!(
                "the η range is centred per B by the {name} rule (∝ B^{e}), so the fitted \"best η ∝ B^k\" \
                 exponent{k} is partly set by that rule"
            )
        }
        Note::NotMeasured { batch_sizes, goal } => {
            let bs: Vec<String> = batch_sizes.iter().map(|b| b.to_string()).collect();
            format!(
                "not measured at B = {}: this target is stricter than the sweep's goal ({}), where \
                 trials stopped, so a better trial may be hidden (no fit, no regimes; run a sweep \
                 with --targets down to this value to measure it)",
                bs.join(", "),
                goal
            )
        }
        Note::ConfirmIncomplete { confirmed, of } => format!(
            "the confirm stage has finished at {confirmed} of {of} batch sizes: the curve (fit, \
             regimes) reads the best trials until it has finished at every one"
        ),
        Note::ConfirmNotReached { batch_sizes } => {
            let bs: Vec<String> = batch_sizes.iter().map(|b| b.to_string()).collect();
            format!(
                "at B = {} no confirmed configuration reached the target on half its seeds: \
                 left out of the confirmed curve (its best trial was a lucky seed)",
                bs.join(", ")
            )
        }
    }
}

/// The evidence rule in words (`analysis::evidence`): "S(B) at ≥ 3 batch sizes from ≥ 3
/// finished trials each".
pub fn evidence_rule() -> String {
    use crate::analysis::evidence::{MIN_CURVE_POINTS, MIN_TRIALS_PER_POINT};
    format!("S(B) at ≥ {MIN_CURVE_POINTS} batch sizes from ≥ {MIN_TRIALS_PER_POINT} finished trials each")
}

/// "B = 8: 1 trial, 16: 2": measured batch sizes off the curve with their trials.
fn thin_list(e: &Evidence) -> String {
    let parts: Vec<String> = e
        .thin
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let unit = match (i, t.trials) {
                (0, 1) => " trial",
                (0, _) => " trials",
                _ => "",
            };
            format!("{}: {}{unit}", t.batch_size, t.trials)
        })
        .collect();
    format!("B = {}", parts.join(", "))
}

/// The one line of a withheld curve: what it needs and what the run has ("withheld (too little
/// evidence): the fit, B_crit, … need S(B) at ≥ 3 batch sizes from ≥ 3 finished trials each;
/// this run has 1 (B = 32; fewer trials at B = 8: 1 trial, 16: 2)"). None when nothing is
/// withheld.
pub fn withheld_text(e: &Evidence) -> Option<String> {
    if !e.withheld {
        return None;
    }
    let on: Vec<String> = e.curve.iter().map(|b| b.to_string()).collect();
    let fewer = (!e.thin.is_empty()).then(|| format!("fewer trials at {}", thin_list(e)));
    let detail = match (on.is_empty(), fewer) {
        (true, None) => String::new(),
        (true, Some(f)) => format!(" ({f})"),
        (false, None) => format!(" (B = {})", on.join(", ")),
        (false, Some(f)) => format!(" (B = {}; {f})", on.join(", ")),
    };
    Some(format!(
        "withheld (too little evidence): the fit, B_crit, the regimes, the η exponent and the \
         time-to-target projection need {}; this run has {}{detail}",
        evidence_rule(),
        on.len()
    ))
}

/// The line for measured batch sizes left off a curve that is read ("off the curve (S(B) from
/// fewer than 3 finished trials; …): B = 1024: 2 trials"). None without any.
pub fn off_curve_text(e: &Evidence) -> Option<String> {
    use crate::analysis::evidence::MIN_TRIALS_PER_POINT;
    (!e.withheld && !e.thin.is_empty()).then(|| {
        format!(
            "off the curve (S(B) from fewer than {MIN_TRIALS_PER_POINT} finished trials; in the \
             table, not in the fit or the regimes): {}",
            thin_list(e)
        )
    })
}
