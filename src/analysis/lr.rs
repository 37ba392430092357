//! How the best learning rate scales with B: the best η (and η/(1−γ)) per B against the linear and
//! sqrt rules from the smallest B, the fitted exponent, and the caveat when the search range itself
//! follows a rule.

use crate::core::analysis::{BatchPoint, LrRulePoint, Note};
use crate::workload::spec::{LrRule, SearchSpace};

/// Best η per B against the linear and sqrt rules scaled from the smallest B with a best trial.
pub fn lr_rules(per_batch: &[BatchPoint]) -> Vec<LrRulePoint> {
    let with_best: Vec<&BatchPoint> = per_batch.iter().filter(|p| p.best_lr.is_some()).collect();
    let Some(base) = with_best.first() else {
        return Vec::new();
    };
    let (b0, lr0) = (base.batch_size as f64, base.best_lr.unwrap_or(0.0));
    with_best
        .iter()
        .map(|p| {
            let r = p.batch_size as f64 / b0;
            let lr = p.best_lr.unwrap_or(0.0);
            LrRulePoint {
                batch_size: p.batch_size,
                best_lr: lr,
                best_effective_lr: p.best_effective_lr.unwrap_or(lr),
                linear_rule: lr0 * r,
                sqrt_rule: lr0 * r.sqrt(),
            }
        })
        .collect()
}

/// Least-squares slope of ln(best η) against ln B: 1 = linear rule, 0.5 = sqrt rule.
pub fn lr_scaling_exponent(points: &[LrRulePoint]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.best_lr > 0.0)
        .map(|p| ((p.batch_size as f64).ln(), p.best_lr.ln()))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The caveat of a search range centred per B by an LR rule: the fitted exponent is partly set by
/// that rule.
pub(crate) fn lr_rule_note(search: &SearchSpace, lr_rules: &[LrRulePoint]) -> Option<Note> {
    (search.lr_rule != LrRule::None).then(|| Note::LrRuleSetsExponent {
        rule: search.lr_rule,
        exponent: lr_scaling_exponent(lr_rules),
    })
}
