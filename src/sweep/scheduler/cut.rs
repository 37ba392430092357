//! How many trials a group holds, what kind they are and how it is cut: search trials at the
//! first reach, a confirm group in whole blocks of r seeds, each at its quorum
//! (`core::confirm::block_need`, the same rule the analysis applies to the records).

use std::collections::{BTreeMap, HashMap};

use super::Coordinator;
use crate::core::trial::TrialSpec;
use crate::core::widen::WIDEN_ID_BASE;
use crate::core::GroupCut;

/// How many trials a group holds, and the step budget early stopping gives a search trial.
impl Coordinator {
    /// The most trials a group holds in this sweep: the configuration's fuse setting (resolved
    /// when the sweep started) within what the runner can fuse.
    pub(super) fn fuse(&self) -> usize {
        let k = self.cfg.fuse.members().unwrap_or(1).max(1);
        k.min(self.max_group())
    }

    /// The most trials the runner fuses into one group for this workload and these devices.
    fn max_group(&self) -> usize {
        self.runner
            .max_group(&self.cfg.preset.workload, &self.cfg.devices)
            .max(1)
    }

    /// The most trials a group led by `first` holds: `fuse`, except that a confirm group holds
    /// whole blocks of r seeds — at least one, so that its quorum cut applies even where `fuse` <
    /// r (a block split across groups runs every seed to its own reach) — within what the runner
    /// can fuse.
    pub(super) fn group_room(&self, first: &TrialSpec, fuse: usize) -> usize {
        match self.cfg.preset.sweep.confirm.map(|p| p.seeds) {
            Some(r) if r > 1 && TrialKind::of(first) == TrialKind::Confirm => {
                let blocks = r * (fuse / r).max(1);
                if fuse > 1 && blocks <= self.max_group() {
                    blocks
                } else {
                    fuse
                }
            }
            _ => fuse,
        }
    }

    /// The step budget early stopping gives a trial starting now (None: its full budget).
    /// Past the best steps-to-target already measured at its B a trial can no longer be the best
    /// one, so S(B) is unchanged by stopping it there.
    pub(super) fn cap_of(&self, spec: &TrialSpec) -> Option<u64> {
        let full_budget = self.cfg.preset.workload.budget_for(spec.batch_size);
        self.cfg
            .preset
            .sweep
            .early_stopping
            .then(|| self.best.get(&spec.batch_size).copied())
            // A repeat or confirm trial measures its own steps-to-target: never cut.
            .filter(|_| spec.is_search())
            .flatten()
            .filter(|&best| best < full_budget)
            // a `--until` trial beyond the plan runs on to a multiple of S(B): its reaching
            // between S(B) and that cap is what narrows the interval (analysis::until::UNTIL_CAP)
            .map(|best| {
                let beyond_plan = self.cfg.until.is_some()
                    && spec.trial_id < WIDEN_ID_BASE
                    && spec.trial_id as usize
                        >= self.cfg.batch_sizes.len() * self.cfg.trials_per_batch;
                if beyond_plan {
                    crate::analysis::until::until_cap(Some(best), full_budget)
                } else {
                    best
                }
            })
            .filter(|&cap| cap < full_budget)
    }
}

/// The confirm block (configuration, seed / r) of a confirm trial.
fn block_of(t: &TrialSpec, r: usize) -> Option<(u64, u32)> {
    t.confirm.map(|m| (m.of, m.block(r)))
}

/// `members` split into the trials of the blocks they hold whole (r seeds) and the others; when
/// they hold no block whole, all of them (they run uncut: the analysis censors them).
pub(super) fn whole_blocks(members: Vec<TrialSpec>, r: usize) -> (Vec<TrialSpec>, Vec<TrialSpec>) {
    let mut count: HashMap<(u64, u32), usize> = HashMap::new();
    for t in &members {
        if let Some(k) = block_of(t, r) {
            *count.entry(k).or_default() += 1;
        }
    }
    let whole = |t: &TrialSpec| block_of(t, r).is_some_and(|k| count[&k] >= r);
    if !members.iter().any(whole) {
        return (members, Vec::new());
    }
    members.into_iter().partition(|t| whole(t))
}

/// The cut of a confirm group: each block it holds whole (r seeds) is a cohort cut at
/// `block_need(r)` reached seeds; the other members run uncut.
fn confirm_cut(specs: &[TrialSpec], r: usize) -> GroupCut {
    let need = crate::core::confirm::block_need(r);
    if need >= r {
        return GroupCut::None;
    }
    let mut count: BTreeMap<(u64, u32), usize> = BTreeMap::new();
    for t in specs {
        if let Some(k) = block_of(t, r) {
            *count.entry(k).or_default() += 1;
        }
    }
    let cohorts: Vec<(u64, u32)> = count
        .into_iter()
        .filter(|&(_, n)| n >= r)
        .map(|(k, _)| k)
        .collect();
    if cohorts.is_empty() {
        return GroupCut::None;
    }
    let cohort = specs
        .iter()
        .map(|t| block_of(t, r).and_then(|k| cohorts.iter().position(|c| *c == k)))
        .collect();
    GroupCut::Quorum {
        cohort,
        need: vec![need; cohorts.len()],
    }
}

/// The cut of a group of `specs` (one kind): search trials stop together at the first reach
/// (with early stopping); a confirm block at its quorum; repeats measure their own steps.
pub(super) fn group_cut(specs: &[TrialSpec], early_stopping: bool, r: Option<usize>) -> GroupCut {
    match (TrialKind::of(&specs[0]), r) {
        (TrialKind::Search, _) if early_stopping => GroupCut::FirstReach,
        (TrialKind::Confirm, Some(r)) => confirm_cut(specs, r),
        _ => GroupCut::None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TrialKind {
    Search,
    Repeat,
    Confirm,
}

impl TrialKind {
    pub(super) fn of(t: &TrialSpec) -> Self {
        if t.confirm.is_some() {
            TrialKind::Confirm
        } else if t.repeat_of.is_some() {
            TrialKind::Repeat
        } else {
            TrialKind::Search
        }
    }
}
