//! Search-space edges: a best trial whose η or 1−γ lies in the outer 10 % (log scale) of the range
//! explored at its B is flagged (S(B) there is an upper bound), and `--widen` picks the re-centred
//! group to run next (`widen_step`; the id layout is `core::widen`).

use super::per_batch::optimizer_momentum;
use super::steps::steps_to_target;
use crate::core::analysis::{BatchPoint, EdgeAt, ExploredRange, Note, SearchEdge};
use crate::core::record::TrialRecord;
use crate::core::widen::{shift_range, RangeShift, WIDEN_MAX_SHIFT};
use crate::workload::spec::{OptimizerKind, SearchSpace};

/// Outer fraction (log scale) of a search range that counts as its edge.
pub const EDGE_FRACTION: f64 = 0.1;

/// Which edges of the search space a value sits at: `t` = position in [lo, hi] in log space.
fn edge_of(range: [f64; 2], v: f64) -> Option<bool> {
    let (lo, hi) = (range[0].ln(), range[1].ln());
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater)
        || v.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
    {
        return None;
    }
    let t = (v.ln() - lo) / (hi - lo);
    if t < EDGE_FRACTION {
        Some(false)
    } else if t > 1.0 - EDGE_FRACTION {
        Some(true)
    } else {
        None
    }
}

/// The learning rate the search drew for a trial with (η, γ): η/(1−γ) where the search space
/// draws effective rates (`SearchSpace::effective_lr`, momentum optimizers), else η.
pub fn searched_lr(
    search: &SearchSpace,
    optimizer: OptimizerKind,
    lr: f64,
    momentum: Option<f64>,
) -> f64 {
    match momentum {
        Some(g) if search.effective_lr && optimizer.uses_momentum() => lr / (1.0 - g).max(1e-12),
        _ => lr,
    }
}

/// The edges of the search space at which a best trial with (η, γ) at batch size `b` sits
/// (the preset's ranges at `b`; see `explored_ranges` for a sweep that re-centred them).
pub fn search_edges(
    search: &SearchSpace,
    optimizer: OptimizerKind,
    b: usize,
    lr: f64,
    momentum: Option<f64>,
) -> Vec<SearchEdge> {
    edges_in(
        search.lr_range_at(b),
        search.one_minus_momentum,
        optimizer,
        searched_lr(search, optimizer, lr, momentum),
        momentum,
    )
}

/// The edges of the ranges `lr_range` (η) and `omm_range` (1−γ) at which (η, γ) sits.
pub fn edges_in(
    lr_range: [f64; 2],
    omm_range: Option<[f64; 2]>,
    optimizer: OptimizerKind,
    lr: f64,
    momentum: Option<f64>,
) -> Vec<SearchEdge> {
    let mut v = Vec::new();
    match edge_of(lr_range, lr) {
        Some(false) => v.push(SearchEdge::LrLow),
        Some(true) => v.push(SearchEdge::LrHigh),
        None => {}
    }
    let uses_momentum = !matches!(optimizer, OptimizerKind::Sgd);
    if let (true, Some(r), Some(g)) = (uses_momentum, omm_range, momentum) {
        match edge_of(r, 1.0 - g) {
            Some(false) => v.push(SearchEdge::OneMinusMomentumLow),
            Some(true) => v.push(SearchEdge::OneMinusMomentumHigh),
            None => {}
        }
    }
    v
}

/// The η and 1−γ ranges explored at batch size `b`: the preset's ranges at `b` joined with the
/// re-centred ranges (`--widen`, `crate::core::widen`) of the groups in `shifts`. Consecutive
/// groups overlap by half a width, so the join is one interval per dimension.
pub fn explored_ranges(
    search: &SearchSpace,
    b: usize,
    shifts: impl IntoIterator<Item = RangeShift>,
) -> ([f64; 2], Option<[f64; 2]>) {
    let base_lr = search.lr_range_at(b);
    let (mut lr, mut omm) = (base_lr, search.one_minus_momentum);
    for s in shifts {
        let r = shift_range(base_lr, s.lr);
        lr = [lr[0].min(r[0]), lr[1].max(r[1])];
        if let (Some(o), Some(base)) = (omm.as_mut(), search.one_minus_momentum) {
            let r = shift_range(base, s.omm);
            *o = [o[0].min(r[0]), o[1].max(r[1])];
        }
    }
    (lr, omm)
}

/// The re-centred group (`--widen`) the search at batch size `b` should run next, from the
/// finished search trials at `b` (`at_b`): None when the best trial is inside the explored range,
/// no trial reached the target, the move would exceed `max_rounds` half-widths, 1−γ would reach 1,
/// or that group was already run. The group keeps the best trial's own shift in a dimension whose
/// edge it is not at, and moves one half-width past the explored range in one whose edge it is at.
pub fn widen_step(
    search: &SearchSpace,
    optimizer: OptimizerKind,
    b: usize,
    at_b: &[&TrialRecord],
    max_rounds: i32,
) -> Option<RangeShift> {
    let best = at_b
        .iter()
        .filter(|t| t.spec.batch_size == b && t.spec.is_search())
        .filter_map(|t| steps_to_target(t).map(|s| (s, t.trial_id, *t)))
        .min_by_key(|&(s, id, _)| (s, id))?
        .2;
    let shifts: std::collections::BTreeSet<RangeShift> = at_b
        .iter()
        .filter(|t| t.spec.batch_size == b && t.spec.is_search())
        .map(|t| RangeShift::of_trial(t.trial_id))
        .collect();
    let (lr_r, omm_r) = explored_ranges(search, b, shifts.iter().copied());
    let m = &best.spec.metaparams;
    let momentum = optimizer_momentum(optimizer, m.momentum);
    let lr = searched_lr(search, optimizer, m.learning_rate, momentum);
    let edges = edges_in(lr_r, omm_r, optimizer, lr, momentum);
    let own = RangeShift::of_trial(best.trial_id);
    let mut next = own;
    let lo_hi = |f: fn(&RangeShift) -> i32| {
        let it = shifts.iter().map(f).chain([0]);
        (it.clone().min().unwrap_or(0), it.max().unwrap_or(0))
    };
    let (lr_lo, lr_hi) = lo_hi(|s| s.lr);
    let (omm_lo, omm_hi) = lo_hi(|s| s.omm);
    for e in edges {
        match e {
            SearchEdge::LrHigh => next.lr = lr_hi + 1,
            SearchEdge::LrLow => next.lr = lr_lo - 1,
            SearchEdge::OneMinusMomentumLow => next.omm = omm_lo - 1,
            SearchEdge::OneMinusMomentumHigh => {
                let fits = search
                    .one_minus_momentum
                    .is_some_and(|r| shift_range(r, omm_hi + 1)[1] < 1.0);
                if fits {
                    next.omm = omm_hi + 1;
                }
            }
        }
    }
    (next != own && next.rounds() <= max_rounds.min(WIDEN_MAX_SHIFT) && !shifts.contains(&next))
        .then_some(next)
}

/// Flags the best trials at the edge of the explored search space and notes what `--widen`
/// explored and which edges it cannot move.
pub(crate) fn mark_search_edges(
    per_batch: &mut [BatchPoint],
    trials: &[TrialRecord],
    search: &SearchSpace,
    optimizer: OptimizerKind,
    notes: &mut Vec<Note>,
) {
    let mut flagged = Vec::new();
    let mut at_gamma_zero = Vec::new();
    let mut moved: Vec<ExploredRange> = Vec::new();
    for p in per_batch.iter_mut() {
        let shifts: std::collections::BTreeSet<RangeShift> = trials
            .iter()
            .filter(|t| t.spec.batch_size == p.batch_size && t.spec.is_search())
            .map(|t| RangeShift::of_trial(t.trial_id))
            .filter(|s| *s != RangeShift::NONE)
            .collect();
        let (lr_r, omm_r) = explored_ranges(search, p.batch_size, shifts.iter().copied());
        if !shifts.is_empty() {
            let omm = omm_r.filter(|_| !matches!(optimizer, OptimizerKind::Sgd));
            match moved
                .iter_mut()
                .find(|r| r.learning_rate == lr_r && r.one_minus_momentum == omm)
            {
                Some(r) => r.batch_sizes.push(p.batch_size),
                None => moved.push(ExploredRange {
                    batch_sizes: vec![p.batch_size],
                    learning_rate: lr_r,
                    one_minus_momentum: omm,
                }),
            }
        }
        let Some(lr) = p.best_lr else { continue };
        let lr = searched_lr(search, optimizer, lr, p.best_momentum);
        p.search_edges = edges_in(lr_r, omm_r, optimizer, lr, p.best_momentum);
        p.at_search_edge = !p.search_edges.is_empty();
        if p.at_search_edge {
            flagged.push(EdgeAt {
                batch_size: p.batch_size,
                edges: p.search_edges.clone(),
            });
        }
        // 1−γ at the top of its range where one more move would pass 1 (γ < 0): the edge
        // `widen_step` cannot move
        let omm_hi = shifts.iter().map(|s| s.omm).max().unwrap_or(0).max(0);
        let capped = search
            .one_minus_momentum
            .is_some_and(|r| shift_range(r, omm_hi + 1)[1] >= 1.0);
        if capped && p.search_edges.contains(&SearchEdge::OneMinusMomentumHigh) {
            at_gamma_zero.push(p.batch_size);
        }
    }
    if !moved.is_empty() {
        notes.push(Note::RangeRecentred { ranges: moved });
    }
    if !flagged.is_empty() {
        notes.push(Note::AtSearchEdge { at: flagged });
    }
    if !at_gamma_zero.is_empty() {
        notes.push(Note::MomentumAtZero {
            batch_sizes: at_gamma_zero,
        });
    }
}
