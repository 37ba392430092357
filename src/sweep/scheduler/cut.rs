//! How many trials a group holds, what kind they are and how it is cut: search trials at the
//! first reach, a confirm group in whole blocks of r seeds, each at its quorum
//! (`core::confirm::block_need`, the same rule the analysis applies to the records). A block a
//! stopped sweep left part-run is cut as it would have been in one group: its logged seeds count
//! towards the quorum (`Coordinator::block_logged`), so a resumed sweep logs the same records.

use std::collections::{BTreeMap, HashMap};

use super::Coordinator;
use crate::core::runner::GroupCut;
use crate::core::trial::TrialSpec;
use crate::core::widen::WIDEN_ID_BASE;

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

    /// The fused group a plan search trial belongs to at its B: its place among the B's plan
    /// trials over the group size (the groups an uninterrupted sweep forms, one after another).
    /// A group a stop left part-logged runs its other trials as its own rest, never with the next
    /// group's (a first reach cuts the whole group: grouped otherwise, the rest and the next group
    /// would be cut at other steps); the best step its logged trials reached caps the rest as
    /// the first reach did. None for every other trial.
    pub(super) fn chunk_of(&self, t: &TrialSpec, fuse: usize) -> Option<u64> {
        if let Some(m) = t.calibrate {
            // a pilot's trials, in chunks of the group size (a pilot = a round's point / 1000)
            let (pilot, lr) = (m.point / 1000, m.point % 1000);
            return Some(
                (m.round as u64 * 1000 + pilot as u64) * 1000 + (lr as u64 / fuse.max(1) as u64),
            );
        }
        let n = self.cfg.batch_sizes.len() as u64;
        let plan = n * self.cfg.trials_per_batch as u64;
        (t.is_search() && t.trial_id < plan).then(|| t.trial_id / n / fuse.max(1) as u64)
    }

    /// The step budget early stopping gives a trial starting now (None: its full budget).
    /// Past the best steps-to-target already measured at its B a trial can no longer be the best
    /// one, so S(B) is unchanged by stopping it there.
    pub(super) fn cap_of(&self, spec: &TrialSpec) -> Option<u64> {
        if let Some(m) = spec.calibrate {
            // a pilot stops at its first reach: the rest of a pilot a stopped sweep left part-run
            // stops where its logged trials first reached (what one group would have done)
            m.target?;
            let pilot = |t: &TrialSpec| t.calibrate.is_some_and(|o| o.same_pilot(&m));
            return self
                .records
                .iter()
                .filter(|r| pilot(&r.spec))
                .filter_map(|r| r.outcome.outcome.steps_to_target())
                .min()
                .filter(|&c| c < m.budget);
        }
        let full_budget = self.cfg.preset.workload.budget_for(spec.batch_size);
        if spec.confirm.is_some() {
            // a seed of a block whose quorum its logged seeds already reached stops where the
            // quorum did (a block a stopped sweep left part-run: the seeds it cut were not logged)
            return self.quorum_logged(spec).filter(|&c| c < full_budget);
        }
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

/// A confirm block's seeds in the log: how many, and the steps at which those that reached did
/// (sorted).
#[derive(Clone, Debug, Default)]
pub(super) struct BlockLogged {
    pub seeds: usize,
    pub reached: Vec<u64>,
}

impl Coordinator {
    /// The plan's r where blocks are cut at their quorum (`core::confirm::block_need` < r), which
    /// needs a group to hold a whole block: fused groups of at least r trials, and all of a
    /// block's seeds in this process (not a Slurm array task's share). Elsewhere every confirm
    /// seed runs to its own end, whatever the log holds (the analysis censors them alike).
    pub(super) fn cut_blocks(&self) -> Option<usize> {
        let r = self.cfg.preset.sweep.confirm?.seeds;
        let cut = crate::core::confirm::block_need(r) < r
            && self.fuse() > 1
            && r <= self.max_group()
            && super::lock(&self.control.share).is_none();
        cut.then_some(r)
    }

    /// The logged seeds of confirm trial `t`'s block (this process's records: a block is never
    /// split between processes where it is cut).
    pub(super) fn block_logged(&self, t: &TrialSpec, r: usize) -> BlockLogged {
        let mut out = BlockLogged::default();
        let Some(k) = block_of(t, r) else {
            return out;
        };
        for rec in &self.records {
            if rec.spec.batch_size == t.batch_size && block_of(&rec.spec, r) == Some(k) {
                out.seeds += 1;
                out.reached.extend(rec.outcome.outcome.steps_to_target());
            }
        }
        out.reached.sort_unstable();
        out
    }

    /// The step at which the logged seeds of `t`'s block reached its quorum, where blocks are cut
    /// (`cut_blocks`): the block's other seeds stop there, as they would have in one group.
    fn quorum_logged(&self, t: &TrialSpec) -> Option<u64> {
        let r = self.cut_blocks()?;
        let need = crate::core::confirm::block_need(r);
        self.block_logged(t, r).reached.get(need - 1).copied()
    }

    /// The cut of a group of `specs` (one kind): search trials stop together at the first reach
    /// (with early stopping); each confirm block it holds whole — its seeds here and those logged
    /// — at its quorum, counting the logged seeds that reached (`confirm_cut`); repeats measure
    /// their own steps.
    pub(super) fn group_cut(&self, specs: &[TrialSpec]) -> GroupCut {
        match TrialKind::of(&specs[0]) {
            TrialKind::Search if self.cfg.preset.sweep.early_stopping => GroupCut::FirstReach,
            // a pilot with a target reads only its first reach
            TrialKind::Calibrate if specs[0].calibrate.is_some_and(|m| m.target.is_some()) => {
                GroupCut::FirstReach
            }
            TrialKind::Confirm => match self.cut_blocks() {
                Some(r) => confirm_cut(specs, r, &|t| self.block_logged(t, r)),
                None => GroupCut::None,
            },
            _ => GroupCut::None,
        }
    }
}

/// The confirm block (configuration, seed / r) of a confirm trial.
fn block_of(t: &TrialSpec, r: usize) -> Option<(u64, u32)> {
    t.confirm.map(|m| (m.of, m.block(r)))
}

/// `members` split into the trials of the blocks they hold whole — a block's r seeds, those
/// `logged` counted (a block a stopped sweep left part-run is whole with the seeds it did not
/// log) — and the others; when they hold no block whole, all of them.
pub(super) fn whole_blocks(
    members: Vec<TrialSpec>,
    r: usize,
    logged: &dyn Fn(&TrialSpec) -> usize,
) -> (Vec<TrialSpec>, Vec<TrialSpec>) {
    let mut count: HashMap<(u64, u32), usize> = HashMap::new();
    for t in &members {
        if let Some(k) = block_of(t, r) {
            *count.entry(k).or_insert_with(|| logged(t)) += 1;
        }
    }
    let whole = |t: &TrialSpec| block_of(t, r).is_some_and(|k| count[&k] >= r);
    if !members.iter().any(whole) {
        return (members, Vec::new());
    }
    members.into_iter().partition(|t| whole(t))
}

/// The cut of a confirm group: each block it holds whole (its seeds here and those `logged`:
/// r) is a cohort cut once `block_need(r)` of its seeds reached, the logged ones that reached
/// counted; the other members run uncut (a block whose logged seeds met the quorum runs with its
/// step as the budget instead: `Coordinator::cap_of`).
fn confirm_cut(
    specs: &[TrialSpec],
    r: usize,
    logged: &dyn Fn(&TrialSpec) -> BlockLogged,
) -> GroupCut {
    let need = crate::core::confirm::block_need(r);
    if need >= r {
        return GroupCut::None;
    }
    // per block: (seeds here + logged, the logged that reached)
    let mut count: BTreeMap<(u64, u32), (usize, usize)> = BTreeMap::new();
    for t in specs {
        if let Some(k) = block_of(t, r) {
            let e = count.entry(k).or_insert_with(|| {
                let l = logged(t);
                (l.seeds, l.reached.len())
            });
            e.0 += 1;
        }
    }
    let cohorts: Vec<((u64, u32), usize)> = count
        .into_iter()
        .filter(|&(_, (n, reached))| n >= r && reached < need)
        .map(|(k, (_, reached))| (k, need - reached))
        .collect();
    if cohorts.is_empty() {
        return GroupCut::None;
    }
    let cohort = specs
        .iter()
        .map(|t| block_of(t, r).and_then(|k| cohorts.iter().position(|c| c.0 == k)))
        .collect();
    GroupCut::Quorum {
        cohort,
        need: cohorts.iter().map(|c| c.1).collect(),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TrialKind {
    Calibrate,
    Search,
    Repeat,
    Confirm,
}

impl TrialKind {
    pub(super) fn of(t: &TrialSpec) -> Self {
        if t.calibrate.is_some() {
            TrialKind::Calibrate
        } else if t.confirm.is_some() {
            TrialKind::Confirm
        } else if t.repeat_of.is_some() {
            TrialKind::Repeat
        } else {
            TrialKind::Search
        }
    }
}
