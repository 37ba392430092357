//! The controls of a running sweep, shared by every view: cancel the sweep or one trial, pause
//! (start no new trials), this process's share of a split plan, and the records of its peers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::lock;
use crate::core::record::TrialRecord;
use crate::core::trial::CancelToken;

/// Shared controls of a running sweep (cheap to clone, usable from any thread).
#[derive(Clone, Debug, Default)]
pub struct SweepControl {
    pub(super) cancel: CancelToken,
    pub(super) paused: Arc<AtomicBool>,
    pub(super) running: Arc<Mutex<HashMap<u64, CancelToken>>>,
    pub(super) user_cancelled: Arc<Mutex<HashSet<u64>>>,
    /// Trials another process runs (a Slurm array task's static shard, src/cluster): never started
    /// here, never recorded here.
    pub(super) others: Arc<Mutex<HashSet<u64>>>,
    /// A Slurm array task's share of the trials placed beyond the plan (confirm trials):
    /// (index, count) — a confirm trial runs here only if its id % count == index.
    pub(super) share: Arc<Mutex<Option<(u64, u64)>>>,
    /// The records other processes logged into the same sweep (a Slurm array task's peers): the
    /// confirm stage of a batch size is placed from all of its search trials, wherever they ran.
    pub(super) peers: Arc<Mutex<Option<PeerRecords>>>,
}

/// Reads the trial records other processes logged into the same sweep (`SweepControl::set_peers`).
#[derive(Clone)]
pub struct PeerRecords(pub Arc<dyn Fn() -> Vec<TrialRecord> + Send + Sync>);

impl std::fmt::Debug for PeerRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerRecords(..)")
    }
}

impl SweepControl {
    pub fn new() -> Self {
        Self::default()
    }
    /// Stops the sweep: no new trials; running trials are cancelled and left for `--resume`.
    pub fn cancel(&self) {
        self.cancel.cancel();
        for t in lock(&self.running).values() {
            t.cancel();
        }
    }
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
    /// The sweep-level token (e.g. for a ctrl-c handler).
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::SeqCst);
    }
    pub fn pause(&self) {
        self.set_paused(true)
    }
    pub fn resume(&self) {
        self.set_paused(false)
    }
    pub fn toggle_pause(&self) -> bool {
        !self.paused.fetch_xor(true, Ordering::SeqCst)
    }
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }
    /// Skips one trial (running: cancelled now; queued: never started). It is recorded as
    /// cancelled. Returns false if the trial already finished.
    pub fn cancel_trial(&self, trial_id: u64) -> bool {
        lock(&self.user_cancelled).insert(trial_id);
        if let Some(t) = lock(&self.running).get(&trial_id) {
            t.cancel();
        }
        true
    }
    /// Ids of the trials running now.
    pub fn running_trials(&self) -> Vec<u64> {
        let mut v: Vec<u64> = lock(&self.running).keys().copied().collect();
        v.sort_unstable();
        v
    }
    /// Leaves these trials to another process (src/cluster shards): they are not run or logged.
    pub fn leave_to_others(&self, ids: impl IntoIterator<Item = u64>) {
        lock(&self.others).extend(ids);
    }
    /// A Slurm array task: of the confirm trials this process runs those whose id %
    /// `count` == `index`; the others are its peers'.
    pub fn set_share(&self, index: usize, count: usize) {
        *lock(&self.share) = Some((index as u64, count.max(1) as u64));
    }
    /// The records the peers of an array task logged (read when trials beyond the plan are
    /// placed; this process's own records win over theirs).
    pub fn set_peers(&self, read: PeerRecords) {
        *lock(&self.peers) = Some(read);
    }
    /// Whether a trial placed beyond the plan is this process's to run.
    pub(crate) fn owns_extra(&self, id: u64) -> bool {
        lock(&self.share).is_none_or(|(i, n)| id % n == i)
    }
    pub(super) fn is_user_cancelled(&self, id: u64) -> bool {
        lock(&self.user_cancelled).contains(&id)
    }
}
