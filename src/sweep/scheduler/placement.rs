//! What the coordinator starts next: the first queued trial that may start (early stopping's
//! caps do not depend on which trial finished first), and the trials beyond the plan (`--widen`,
//! `--until`, `--repeats`), each a pure function of the finished and running trials.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use super::Coordinator;
use crate::analysis::confirm_rounds::Seed;
use crate::core::confirm::{ConfirmId, CONFIRM_ID_BASE};
use crate::core::events::SweepEvent;
use crate::core::plan;
use crate::core::record::TrialRecord;
use crate::core::trial::TrialSpec;
use crate::core::widen::{RangeShift, WidenId, REPEAT_ID_BASE, WIDEN_ID_BASE};

impl Coordinator {
    /// The first queued trial that may start now. With early stopping a trial's step budget is
    /// cut at the best steps-to-target measured at its B *when it starts*, so with several trials
    /// at once a trial waits while another trial at its B runs (the scheduler starts one at another
    /// B meanwhile): every trial then starts after all trials queued before it at its B finished,
    /// its cap is the one a one-at-a-time sweep gives it, and the results do not depend on which
    /// trial finished first. Repeats (never cut) and sweeps without early stopping do not wait.
    pub(super) fn next_startable(
        &self,
        queue: &mut VecDeque<TrialSpec>,
        running: &HashMap<u64, TrialSpec>,
    ) -> Option<TrialSpec> {
        // a pilot with a target runs in waves of as many trials as run at once (groups × their
        // size, in the order of its learning rates): a trial waits while a trial of its pilot in
        // an earlier wave is queued or running, so its cap is the first reach of the waves before
        // it whichever finished first, and no core idles while a lone pilot runs (a reach also
        // ends the rest of its wave at that step: `Coordinator::cap_pilot`)
        let wave_size = (self.fuse() * self.slots.capacity()).max(1);
        let earlier_in_pilot = |a: &TrialSpec, b: &TrialSpec| match (a.calibrate, b.calibrate) {
            (Some(x), Some(y)) => {
                x.target.is_some()
                    && x.same_pilot(&y)
                    && (y.point % 1000) as usize / wave_size < (x.point % 1000) as usize / wave_size
            }
            _ => false,
        };
        let waits = |t: &TrialSpec| {
            running.values().any(|r| earlier_in_pilot(t, r))
                || queue.iter().any(|q| earlier_in_pilot(t, q))
                || self.cfg.preset.sweep.early_stopping
                    && t.is_search()
                    && running
                        .values()
                        .any(|r| r.batch_size == t.batch_size && r.is_search())
        };
        let i = queue.iter().position(|t| !waits(t))?;
        queue.remove(i)
    }

    /// The next trials beyond the plan, if any: first `--widen` trials in re-centred ranges, then
    /// `--until` search trials (one at a time per batch size; without a confirm stage), then the
    /// confirm stage of every B whose search has settled (all k×r trials of a B together, issue
    /// 42), then `--until` confirm seeds, then — once no search trial is running — the
    /// `--repeats` of each B's best trial. A pure function of the records and the running trials,
    /// so a resumed sweep (one trial at a time) continues exactly where it stopped.
    pub(super) fn next_extra(&self, running: &HashMap<u64, TrialSpec>) -> Vec<TrialSpec> {
        let specs = match self
            .next_widen(running)
            .or_else(|| self.next_until(running))
        {
            Some(s) => vec![s],
            None => {
                let confirm = self.next_confirm(running);
                let until = || self.next_until_confirm(running);
                if !confirm.is_empty() {
                    confirm
                } else if let Some(more) = Some(until()).filter(|v| !v.is_empty()) {
                    more
                } else if running.values().any(|s| s.is_search()) {
                    Vec::new() // the best trial may still change
                } else {
                    self.next_repeat(running).into_iter().collect()
                }
            }
        };
        for spec in &specs {
            self.emit(SweepEvent::Queued {
                trial_id: spec.trial_id,
                batch_size: spec.batch_size,
            });
        }
        specs
    }

    /// Orders a wave's queue longest first (a schedule's tail is its last long group): confirm
    /// trials by the longest wall time a confirm trial at their B took so far (their B's earlier
    /// block), else by their B, smallest first (the most steps); other trials keep their place
    /// ahead of them. Only the order in which they start changes, never what is placed.
    pub(super) fn longest_first(&self, queue: &mut VecDeque<TrialSpec>) {
        let mut took: HashMap<usize, f64> = HashMap::new();
        for r in self.records.iter().filter(|r| r.spec.confirm.is_some()) {
            let w = took.entry(r.spec.batch_size).or_default();
            *w = w.max(r.outcome.wall_s);
        }
        // (confirm?, its B's wall so far, B); trials of other kinds all compare equal (stable)
        let key = |t: &TrialSpec| match t.confirm {
            None => (false, 0.0, 0),
            Some(_) => {
                let seen = took.get(&t.batch_size).copied().unwrap_or(f64::INFINITY);
                (true, -seen, t.batch_size)
            }
        };
        queue.make_contiguous().sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0)
                .then(ka.1.total_cmp(&kb.1))
                .then(ka.2.cmp(&kb.2))
        });
    }

    /// The records the confirm stage is placed from: this process's, and those its peers logged
    /// into the same sweep (a Slurm array task, `SweepControl::set_peers`; its own win).
    fn placement_records(&self) -> Cow<'_, [TrialRecord]> {
        let peers = super::lock(&self.control.peers).clone();
        let Some(read) = peers else {
            return Cow::Borrowed(&self.records);
        };
        let mut all = self.records.clone();
        let mine: HashSet<u64> = all.iter().map(|r| r.trial_id).collect();
        all.extend(
            (read.0)()
                .into_iter()
                .filter(|r| !mine.contains(&r.trial_id)),
        );
        Cow::Owned(all)
    }

    /// Outside a wave: queues the confirm stage's first blocks at every B whose search has
    /// settled, as soon as it has, ahead of the queue (they are a pure function of that B's search
    /// records, so when they are placed does not change what they are; everything else beyond the
    /// plan waits for a wave). The long chains of the small batch sizes then start while the search of the large
    /// ones still runs. Not in a Slurm array task (its peers' logs would be read at every turn).
    /// Whether it queued any.
    pub(super) fn place_confirm_early(
        &self,
        queue: &mut VecDeque<TrialSpec>,
        running: &HashMap<u64, TrialSpec>,
    ) -> bool {
        if self.cfg.preset.sweep.confirm.is_none() || super::lock(&self.control.peers).is_some() {
            return false;
        }
        let mut placed = running.clone();
        for t in queue.iter() {
            placed.insert(t.trial_id, t.clone());
        }
        let extra = self.next_confirm(&placed);
        if extra.is_empty() {
            return false;
        }
        for spec in &extra {
            self.emit(SweepEvent::Queued {
                trial_id: spec.trial_id,
                batch_size: spec.batch_size,
            });
        }
        // ahead of the search trials still queued (shorter groups that fill in around them),
        // smallest B (the longest chain) first
        for spec in extra.into_iter().rev() {
            queue.push_front(spec);
        }
        true
    }

    /// Whether the search at batch size `b` (index `bi`) has settled in `records`: every plan
    /// trial at `b` is logged, none is running, and `--widen` has nothing left to add there. Only
    /// then is its ranking final and its confirm stage placed.
    fn search_settled(
        &self,
        records: &[TrialRecord],
        bi: usize,
        b: usize,
        running: &HashMap<u64, TrialSpec>,
    ) -> bool {
        if running.values().any(|s| s.batch_size == b && s.is_search()) {
            return false;
        }
        let n = self.cfg.batch_sizes.len() as u64;
        let logged: HashSet<u64> = records
            .iter()
            .filter(|r| r.spec.batch_size == b)
            .map(|r| r.trial_id)
            .collect();
        let planned = (0..self.cfg.trials_per_batch as u64).map(|k| k * n + bi as u64);
        if !planned.clone().all(|id| logged.contains(&id)) {
            return false;
        }
        self.cfg.widen == 0 || self.widen_next_at(b, running).is_none()
    }

    /// The confirm stage: at every batch size whose search has settled, the confirm
    /// trials of its best configurations not yet logged or running — all of a B together, so that
    /// they run as one group. A B's confirm trials are a pure function of its search records
    /// (`confirm_ids_at`), so when they are placed does not change what they are.
    fn next_confirm(&self, running: &HashMap<u64, TrialSpec>) -> Vec<TrialSpec> {
        let Some(plan) = self.cfg.preset.sweep.confirm else {
            return Vec::new();
        };
        let records = self.placement_records();
        let have: HashSet<u64> = records
            .iter()
            .map(|r| r.trial_id)
            .chain(running.keys().copied())
            .collect();
        let others = super::lock(&self.control.others).clone();
        let mut out = Vec::new();
        for (bi, &b) in self.cfg.batch_sizes.iter().enumerate() {
            if !self.search_settled(&records, bi, b, running) {
                continue;
            }
            let top = crate::analysis::confirm::top_configs(&records, b, plan.configs);
            for (rank, base) in top.iter().enumerate() {
                for seed in 0..plan.seeds {
                    let Some(id) = ConfirmId {
                        batch_index: bi,
                        rank: rank as u32,
                        seed: seed as u32,
                    }
                    .encode() else {
                        continue;
                    };
                    if have.contains(&id) || others.contains(&id) || !self.control.owns_extra(id) {
                        continue;
                    }
                    out.extend(plan::confirm_trial(&base.spec, id, self.cfg.seed));
                }
            }
        }
        out
    }

    /// `--widen`: at each B (in order) whose search trials have all finished, fill the open
    /// re-centred group, or open the next one when the best trial sits at the edge of the explored
    /// range (`analysis::widen_step`). A pure function of the records and running trials.
    fn next_widen(&self, running: &HashMap<u64, TrialSpec>) -> Option<TrialSpec> {
        if self.cfg.widen == 0 {
            return None;
        }
        for (bi, &b) in self.cfg.batch_sizes.iter().enumerate() {
            let Some((shift, j)) = self.widen_next_at(b, running) else {
                continue;
            };
            let id = WidenId {
                batch_index: bi,
                shift,
                j,
            }
            .encode()?;
            return plan::widen_trial(
                &self.cfg.preset,
                &self.cfg.batch_sizes,
                id,
                &self.cfg.trial_devices(),
                self.cfg.precision,
                self.cfg.seed,
            );
        }
        None
    }

    /// The re-centred group and index `--widen` would place next at batch size `b`:
    /// the lowest free index of an open group, or the first of the next group when every search
    /// trial at `b` has finished and the best sits at the edge of the explored range. None: nothing.
    fn widen_next_at(
        &self,
        b: usize,
        running: &HashMap<u64, TrialSpec>,
    ) -> Option<(RangeShift, u64)> {
        let per_group = crate::core::widen::group_size(self.cfg.trials_per_batch);
        {
            let at_b = |s: &&TrialSpec| s.batch_size == b && s.is_search();
            let specs: Vec<&TrialSpec> = self
                .records
                .iter()
                .map(|r| &r.spec)
                .chain(running.values())
                .filter(at_b)
                .collect();
            // An open group (fewer than per_group trials logged or running): its lowest free j.
            let mut groups: BTreeMap<RangeShift, BTreeSet<u64>> = BTreeMap::new();
            for s in &specs {
                if let Some(w) = WidenId::decode(s.trial_id) {
                    groups.entry(w.shift).or_default().insert(w.j);
                }
            }
            let open = groups
                .iter()
                .find(|(_, js)| (js.len() as u64) < per_group)
                .map(|(g, js)| (*g, (0..).find(|j| !js.contains(j)).unwrap_or(0)));
            match open {
                Some(o) => Some(o),
                None => {
                    if running.values().any(|s| at_b(&s)) {
                        return None; // the best trial at b may still change
                    }
                    let recs: Vec<&TrialRecord> = self
                        .records
                        .iter()
                        .filter(|r| r.spec.batch_size == b && r.spec.is_search())
                        .collect();
                    let opt = self.cfg.preset.workload.optimizer;
                    let next = crate::analysis::widen_step(
                        &self.cfg.preset.search,
                        opt,
                        b,
                        &recs,
                        self.cfg.widen as i32,
                    )?;
                    Some((next, 0))
                }
            }
        }
    }

    /// `--until REL` with a confirm stage: the rounds of a wave (`until_wave`), decided
    /// when it starts — nothing runs then, every first block is logged (a wave that places first
    /// blocks places no round) — so a wave's rounds are a pure function of the records logged
    /// before it. A sweep stopped in a wave (resumed, or a trial that failed) first finishes that
    /// wave: re-decided from the records before it (its rounds' logged seeds set aside: each B's
    /// rounds are re-derived one after another, `analysis::confirm_rounds`), its seeds the log
    /// lacks run before anything new is decided. Resume then places exactly what an
    /// uninterrupted sweep placed, the trial budget's share included.
    fn next_until_confirm(&self, running: &HashMap<u64, TrialSpec>) -> Vec<TrialSpec> {
        use crate::analysis::confirm_rounds::{rounds_at, seed_of};
        let (Some(rel), Some(_)) = (self.cfg.until, self.cfg.preset.sweep.confirm) else {
            return Vec::new();
        };
        if !running.is_empty() {
            return Vec::new();
        }
        let records = self.placement_records();
        let study = crate::core::analysis::Study::of_preset(&self.cfg.preset);
        // every settled B's last round as the log holds it
        let mut last: HashMap<usize, (usize, HashSet<Seed>)> = HashMap::new();
        for (bi, &b) in self.cfg.batch_sizes.iter().enumerate() {
            if self.search_settled(&records, bi, b, running) {
                let r = rounds_at(&records, &study, b, Some(rel));
                last.insert(b, (r.rounds, r.last.into_iter().collect()));
            }
        }
        let k = last.values().map(|l| l.0).max().unwrap_or(0);
        let logged: HashSet<u64> = records.iter().map(|r| r.trial_id).collect();
        if k > 0 {
            // the last wave, from the records before it
            let in_wave = |t: &TrialRecord| {
                let at = last.get(&t.spec.batch_size);
                at.is_some_and(|(n, seeds)| {
                    *n == k && seed_of(t).is_some_and(|s| seeds.contains(&s))
                })
            };
            let before: Vec<TrialRecord> =
                records.iter().filter(|t| !in_wave(t)).cloned().collect();
            let owed: Vec<TrialSpec> = self
                .until_wave(&before, rel)
                .into_iter()
                .filter(|t| !logged.contains(&t.trial_id))
                .collect();
            if !owed.is_empty() {
                return owed;
            }
        }
        self.until_wave(&records, rel)
    }

    /// The `--until REL` rounds a wave starting after `records` places (nothing running): at every
    /// settled B whose first blocks are logged, the seeds its last round lacks (a failed trial, a
    /// Slurm task's peers not done), else the next round where the confirmed interval is wider
    /// than ±REL (`analysis::confirm_rounds::next_round`) — in order of the expected narrowing
    /// per trial, while the trial budget (`--max-trials`, search and confirm trials together)
    /// lasts. A B where ±REL would take more trials than are left gets none.
    fn until_wave(&self, records: &[TrialRecord], rel: f64) -> Vec<TrialSpec> {
        use crate::analysis::confirm_rounds::{next_round, rounds_at};
        let study = crate::core::analysis::Study::of_preset(&self.cfg.preset);
        let none = HashMap::new();
        let ids: HashSet<u64> = records
            .iter()
            .map(|r| &r.spec)
            .filter(|s| s.confirm.is_some() || (s.is_search() && s.trial_id < WIDEN_ID_BASE))
            .map(|s| s.trial_id)
            .collect();
        let mut left = self.cfg.search_budget().saturating_sub(ids.len());
        let mut fills: Vec<(usize, Vec<Seed>)> = Vec::new();
        let mut looks = Vec::new();
        for (bi, &b) in self.cfg.batch_sizes.iter().enumerate() {
            if !self.search_settled(records, bi, b, &none) {
                continue;
            }
            let held = rounds_at(records, &study, b, Some(rel));
            if held.rounds > 0 && !held.open.is_empty() {
                fills.push((bi, held.open));
                continue;
            }
            if !held.open.is_empty() {
                continue; // its first blocks are not all logged (`next_confirm` places them)
            }
            let Some(round) = next_round(records, &study, b, rel) else {
                continue;
            };
            if round.outlook.trials_to(rel) > left {
                continue; // flattened: ±REL is out of the budget's reach here
            }
            looks.push((bi, b, round));
        }
        looks.sort_by(|x, y| {
            y.2.outlook
                .narrowing_per_trial()
                .total_cmp(&x.2.outlook.narrowing_per_trial())
                .then(x.1.cmp(&y.1))
        });
        left = left.saturating_sub(fills.iter().map(|f| f.1.len()).sum());
        for (bi, _, round) in looks {
            let cost = round.cost();
            if cost > left {
                continue;
            }
            left -= cost;
            fills.push((bi, round.seeds));
        }
        let mut out = Vec::new();
        for (bi, seeds) in fills {
            for (rank, of, seed) in seeds {
                let id = ConfirmId {
                    batch_index: bi,
                    rank,
                    seed,
                }
                .encode()
                .filter(|&id| self.control.owns_extra(id));
                let base = records.iter().find(|r| r.trial_id == of);
                if let (Some(id), Some(base)) = (id, base) {
                    out.extend(plan::confirm_trial(&base.spec, id, self.cfg.seed));
                }
            }
        }
        out
    }

    fn next_until(&self, running: &HashMap<u64, TrialSpec>) -> Option<TrialSpec> {
        let rel = self.cfg.until?;
        if self.cfg.preset.sweep.confirm.is_some() {
            return None; // --until narrows the confirmed S(B) instead (`next_until_confirm`)
        }
        let search_ids: HashSet<u64> = self
            .records
            .iter()
            .map(|r| &r.spec)
            .chain(running.values())
            .filter(|s| s.is_search() && s.trial_id < WIDEN_ID_BASE)
            .map(|s| s.trial_id)
            .collect();
        if search_ids.len() >= self.cfg.search_budget() {
            return None;
        }
        let left = self.cfg.search_budget() - search_ids.len();
        let opt = self.cfg.preset.workload.optimizer;
        let mut pts = crate::analysis::per_batch_with_ci(&self.records, opt);
        pts.retain(|p| p.rel_half_width().is_some_and(|w| w > rel));
        // a B whose last trials did not narrow it gets no more (the budget goes elsewhere); only
        // the B still wider than ±REL are judged
        use crate::analysis::until;
        let stalled = until::stalled(&self.records, opt, &pts, self.cfg.trials_per_batch);
        let busy: HashSet<usize> = running.values().map(|s| s.batch_size).collect();
        pts.retain(|p| !stalled.contains(&p.batch_size) && !busy.contains(&p.batch_size));
        // ranked by the expected narrowing of one more trial (the tail model's posterior
        // predictive); a B that has flattened, or could not get within ±REL on the budget left at
        // its rate, gets none: the budget goes where it helps
        let mut looks = until::outlooks(&self.records, &self.cfg.preset, &pts, rel);
        looks.retain(|o| !o.flattened(rel, left));
        looks.sort_by(|a, b| {
            b.narrowing()
                .total_cmp(&a.narrowing())
                .then(a.batch_size.cmp(&b.batch_size))
        });
        let n = self.cfg.batch_sizes.len();
        let p = looks.first()?;
        let bi = self
            .cfg
            .batch_sizes
            .iter()
            .position(|&b| b == p.batch_size)?;
        let k = search_ids
            .iter()
            .filter(|&&id| id < REPEAT_ID_BASE && id as usize % n == bi)
            .map(|&id| id as usize / n + 1)
            .max()
            .unwrap_or(0);
        Some(plan::trial_at(
            &self.cfg.preset,
            &self.cfg.batch_sizes,
            k,
            bi,
            &self.cfg.trial_devices(),
            self.cfg.precision,
            self.cfg.seed,
        ))
    }

    fn next_repeat(&self, running: &HashMap<u64, TrialSpec>) -> Option<TrialSpec> {
        if self.cfg.repeats <= 1 {
            return None;
        }
        let all: Vec<&TrialSpec> = self
            .records
            .iter()
            .map(|r| &r.spec)
            .chain(running.values())
            .collect();
        for &b in &self.cfg.batch_sizes {
            // The best search trial at b (earliest step, ties → lower id), as in the analysis.
            let best = self
                .records
                .iter()
                .filter(|r| r.spec.batch_size == b && r.spec.is_search())
                .filter_map(|r| {
                    r.outcome
                        .outcome
                        .steps_to_target()
                        .map(|s| (s, r.trial_id, r))
                })
                .min_by_key(|&(s, id, _)| (s, id));
            let Some((_, id, base)) = best else { continue };
            let have = all.iter().filter(|s| s.repeat_of == Some(id)).count();
            if have + 1 < self.cfg.repeats {
                let next_id = all
                    .iter()
                    .map(|s| s.trial_id)
                    .filter(|i| (REPEAT_ID_BASE..CONFIRM_ID_BASE).contains(i))
                    .max()
                    .map_or(REPEAT_ID_BASE, |m| m + 1);
                return Some(plan::repeat_of(&base.spec, next_id, self.cfg.seed));
            }
        }
        None
    }
}
