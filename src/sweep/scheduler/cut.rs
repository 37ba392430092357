//! What kind of trials a group holds and how it is cut: search trials at the first reach, a
//! confirm group (issue 42) in whole blocks of r seeds, each at its quorum
//! (`core::confirm::block_need`, the same rule the analysis applies to the records).

use std::collections::{BTreeMap, HashMap};

use crate::core::trial::TrialSpec;
use crate::core::GroupCut;

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
