//! The run-log validator's check of the confirm stage as a whole log: every confirm
//! trial must be one its header's plan places — the stage's first blocks at its batch size (the
//! best k configurations of the search there × r seeds, the configuration its rank names) or a
//! `--until` round re-derived from the records before it (`analysis::confirm_rounds`) — and a
//! seed recorded as cut at its block's quorum must have a block that reached it. An edited
//! `confirm.of`, a trial that does not exist, or a header whose `confirm` (or `--until`) does not
//! match its records fail it: readers warn, `sweep --resume` refuses (one verdict).

use crate::analysis::confirm::top_configs;
use crate::analysis::confirm_rounds::rounds_at;
use crate::core::analysis::Study;
use crate::core::record::{Header, TrialRecord};
use crate::core::trial::Outcome;

/// The first confirm trial (its id and the message, without the location) that the header's
/// plan does not place, and how many such trials there are; None for a log without them.
pub fn confirm_problem(h: &Header, trials: &[TrialRecord]) -> Option<(u64, String, usize)> {
    if h.import.is_some() || !trials.iter().any(|t| t.spec.confirm.is_some()) {
        return None;
    }
    let study = Study::of_preset(&h.preset);
    let rel = h.adaptive.as_ref().and_then(|a| a.until);
    let mut found: Vec<(u64, String)> = Vec::new();
    for &b in &h.batch_sizes {
        let held = rounds_at(trials, &study, b, rel);
        for id in held.unexplained {
            if let Some(t) = trials.iter().find(|t| t.trial_id == id) {
                found.push((id, unplaced(h, trials, t, rel)));
            }
        }
    }
    for (id, m) in unjustified_cuts(h, trials) {
        if !found.iter().any(|f| f.0 == id) {
            found.push((id, m));
        }
    }
    let n = found.len();
    found.sort_by_key(|f| trials.iter().position(|t| t.trial_id == f.0));
    let (id, m) = found.into_iter().next()?;
    Some((
        id,
        format!("{m}; the header or this line was edited (`sweep --resume` refuses this log)"),
        n,
    ))
}

/// Why confirm trial `t` is not one the plan places.
fn unplaced(h: &Header, trials: &[TrialRecord], t: &TrialRecord, rel: Option<f64>) -> String {
    let (b, id) = (t.spec.batch_size, t.trial_id);
    let Some(m) = t.spec.confirm else {
        return format!("trial {id} is not a confirm trial");
    };
    let searched = trials
        .iter()
        .any(|s| s.trial_id == m.of && s.spec.is_search() && s.spec.batch_size == b);
    if !searched {
        return format!(
            "confirm trial {id} re-runs trial {}, which is not a search trial at B = {b} in this log",
            m.of
        );
    }
    let top = top_configs(trials, b, m.rank as usize + 1);
    match top.get(m.rank as usize) {
        Some(base) if base.trial_id != m.of => {
            return format!(
                "confirm trial {id} re-runs trial {} as configuration #{} at B = {b}, but the \
                 search's #{} there is trial {}",
                m.of,
                m.rank + 1,
                m.rank + 1,
                base.trial_id
            )
        }
        None => {
            return format!(
                "confirm trial {id} re-runs trial {} as configuration #{} at B = {b}, but the \
                 search there has {} candidate(s)",
                m.of,
                m.rank + 1,
                top.len()
            )
        }
        _ => {}
    }
    let plan = h
        .preset
        .sweep
        .confirm
        .map_or("off".to_string(), |p| p.to_string());
    let until = rel.map_or("off".to_string(), |r| format!("±{:.0} %", r * 100.0));
    format!(
        "confirm trial {id} (configuration #{}, seed {}) at B = {b} is not one the header's \
         confirm stage places (confirm {plan}, --until {until}): the header's confirm does not \
         match its records",
        m.rank + 1,
        m.seed
    )
}

/// Confirm seeds recorded as cut at their block's quorum (not reached, early stopped) where the
/// plan's blocks are never cut, or where fewer than the quorum of their block reached by then.
fn unjustified_cuts(h: &Header, trials: &[TrialRecord]) -> Vec<(u64, String)> {
    let Some(plan) = h.preset.sweep.confirm else {
        return Vec::new();
    };
    let r = plan.seeds;
    let need = crate::core::confirm::block_need(r);
    let mut out = Vec::new();
    for t in trials {
        let (
            Some(m),
            Outcome::NotReached {
                budget: c,
                early_stopped: true,
            },
        ) = (t.spec.confirm, &t.outcome.outcome)
        else {
            continue;
        };
        let reached = trials
            .iter()
            .filter(|o| {
                o.spec.batch_size == t.spec.batch_size
                    && o.spec
                        .confirm
                        .is_some_and(|n| n.of == m.of && n.block(r) == m.block(r))
            })
            .filter(|o| o.outcome.outcome.steps_to_target().is_some_and(|s| s <= *c))
            .count();
        if need >= r || reached < need {
            out.push((
                t.trial_id,
                format!(
                    "confirm trial {} is recorded as cut at its block's quorum (step {c}), but \
                     {reached} of its block's seeds reached by then where confirm {plan} needs \
                     {need} of {r}: the header's confirm does not match its records",
                    t.trial_id
                ),
            ));
        }
    }
    out
}
