//! Moving the target along the ladder: on a finished Live screen `[` and `]` move the
//! target the state reads its trials at, one rung of the log's ladder at a time
//! (`analysis::ladder::default_ladder`: the preset's rungs and goal, or a geometric ladder above a
//! single target; loosest first, ending at the goal — stricter is never offered).
//!
//! A move only changes state: `target` names the rung, and the state's shown report is then for
//! another target (`LiveState::updating`), so `update` asks the analysis worker for the reading
//! at the new target (urgent: the user asked for it). Every result that lands for the current
//! data is kept per target ([`RungCache`]): stepping back to a rung already read adopts it at
//! once, in the same `update`. Key repeats coalesce: one request per state is in flight; a result
//! for a target the user has moved past is cached and dropped, and the next request reads the
//! rung the user stopped at.

use std::collections::BTreeMap;

use super::analysis::{Analyzed, Rendered};
use super::LiveState;
use crate::report::Report;

/// The readings of one state's data at each target already analysed (key: the target's bits).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RungCache {
    /// (data generation, report, rendered) per target value.
    entries: BTreeMap<u64, (u64, Box<Report>, Rendered)>,
}

impl RungCache {
    /// Keeps the reading of target `value` at data `generation`; readings of older data go.
    pub fn keep(&mut self, value: f64, generation: u64, report: &Report, rendered: &Rendered) {
        self.entries.retain(|_, e| e.0 >= generation);
        self.entries.insert(
            value.to_bits(),
            (generation, Box::new(report.clone()), rendered.clone()),
        );
    }

    /// The reading of target `value` at data `generation`, if it was kept.
    pub fn get(&self, value: f64, generation: u64) -> Option<(&Report, &Rendered)> {
        self.entries
            .get(&value.to_bits())
            .filter(|e| e.0 == generation)
            .map(|e| (&*e.1, &e.2))
    }

    /// How many targets are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// "target 0.08 of ladder 0.3…0.04": where on its ladder a reading is.
pub fn ladder_text(target: f64, ladder: &[f64]) -> String {
    match (ladder.first(), ladder.last()) {
        (Some(a), Some(b)) if ladder.len() > 1 => format!("target {target} of ladder {a}…{b}"),
        _ => format!("target {target}"),
    }
}

/// The rung `stricter` (or looser) of `current` on `ladder` (loosest first); a value between
/// rungs moves to the neighbouring rung in that direction.
pub fn next_rung(ladder: &[f64], current: f64, stricter: bool) -> Option<f64> {
    if stricter {
        ladder.iter().copied().find(|&v| v < current)
    } else {
        ladder.iter().rev().copied().find(|&v| v > current)
    }
}

impl LiveState {
    /// The goal of the sweep (its header's target value).
    pub fn goal(&self) -> Option<f64> {
        self.header.as_ref().map(|h| h.preset.workload.target.value)
    }

    /// The target value the state reads its trials at (the goal unless moved).
    pub fn target_value(&self) -> Option<f64> {
        self.target.or(self.goal())
    }

    /// Moves the target one rung looser or stricter along the log's ladder (computed on the first
    /// move). The new target, or why it did not move. Adopts the rung's reading at once if it was
    /// read before for the current data; otherwise `update` asks for it.
    pub fn step_target(&mut self, stricter: bool) -> Result<f64, String> {
        let Some(h) = &self.header else {
            return Err("no run to read at another target".into());
        };
        let goal = h.preset.workload.target.value;
        if self.ladder.is_empty() {
            self.ladder =
                crate::analysis::ladder::default_ladder(&h.preset.workload, &self.finished);
        }
        let current = self.target.unwrap_or(goal);
        let Some(next) = next_rung(&self.ladder, current, stricter) else {
            return Err(if stricter {
                format!("{current} is the goal: stricter targets were not measured")
            } else {
                format!("{current} is the loosest rung of the ladder")
            });
        };
        self.target = (next != goal).then_some(next);
        self.show_cached();
        Ok(next)
    }

    /// Keeps a landed reading for its target if it is of the current data.
    pub(crate) fn keep_rung(&mut self, a: &Analyzed) {
        if a.for_.generation == self.generation {
            self.rungs.keep(
                a.for_.target.value,
                a.for_.generation,
                &a.report,
                &a.rendered,
            );
        }
    }

    /// Shows the kept reading of the current target and data, if there is one.
    fn show_cached(&mut self) {
        let Some(t) = self.analysis_target() else {
            return;
        };
        let Some((r, rendered)) = self.rungs.get(t.value, self.generation) else {
            return;
        };
        self.report = r.clone();
        self.rendered = rendered.clone();
        self.shown = Some(self.generation);
        self.shown_at = Some(t);
        self.provisional = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rungs_step_along_the_ladder_and_stop_at_its_ends() {
        let l = [0.3, 0.2, 0.12, 0.08];
        assert_eq!(next_rung(&l, 0.08, false), Some(0.12));
        assert_eq!(next_rung(&l, 0.12, true), Some(0.08));
        assert_eq!(next_rung(&l, 0.08, true), None);
        assert_eq!(next_rung(&l, 0.3, false), None);
        // between rungs: the neighbour in that direction
        assert_eq!(next_rung(&l, 0.1, false), Some(0.12));
        assert_eq!(next_rung(&l, 0.1, true), Some(0.08));
        assert_eq!(
            ladder_text(0.08, &[0.3, 0.08, 0.04]),
            "target 0.08 of ladder 0.3…0.04"
        );
        assert_eq!(ladder_text(0.04, &[0.04]), "target 0.04");
    }

    #[test]
    fn the_cache_keeps_readings_of_the_current_data_only() {
        let mut c = RungCache::default();
        let r = Report::default();
        let x = Rendered::default();
        c.keep(0.1, 3, &r, &x);
        c.keep(0.2, 3, &r, &x);
        assert_eq!(c.len(), 2);
        assert!(c.get(0.1, 3).is_some());
        assert!(c.get(0.1, 4).is_none(), "another generation");
        c.keep(0.3, 4, &r, &x);
        assert_eq!(c.len(), 1, "older data's readings are dropped");
    }
}
