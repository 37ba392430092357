//! What runs a trial: the `TrialRunner` trait (the Burn trainer, the NQM, scripted fakes), the
//! factory type the TUI is given, and the per-trial CPU thread budget. (It speaks both `trial` and
//! `events`, which do not import each other.)

use std::sync::Arc;

use super::events::TrialEvent;
use super::trial::{CancelToken, DeviceSpec, TrialOutcome, TrialSpec};
use crate::workload::spec::{Precision, Workload};

/// Anything that can run a trial of a workload: the Burn trainer, the NQM, a scripted fake.
/// Implementations emit `TrialEvent`s through `emit` (never print) and return the outcome.
/// A diverged trial is an `Ok` outcome, not an error; errors are for broken set-ups.
pub trait TrialRunner: Send + Sync {
    /// Trains one trial. The default trains it as a group of one with `run_group`: a runner
    /// overrides at least one of the two (each default is written in terms of the other).
    fn run(
        &self,
        workload: &Workload,
        spec: &TrialSpec,
        emit: &mut dyn FnMut(TrialEvent),
        cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        let group = Group {
            specs: std::slice::from_ref(spec),
            cancels: std::slice::from_ref(cancel),
            cut: GroupCut::None,
        };
        let mut out = None;
        self.run_group(workload, &group, &mut |_, e| emit(e), &mut |_, r| {
            out = Some(r)
        });
        out.unwrap_or_else(|| Err(anyhow::anyhow!("the trial ended without an outcome")))
    }

    /// Backend label for run-log headers ("flex-cpu", "cuda", "nqm-closed-form", ...).
    fn backend(&self) -> String;

    /// Backend label of runs on `devices` (what run-log headers record): the Burn runner names
    /// the CUDA devices; other runners do not depend on the devices.
    fn backend_on(&self, devices: &DeviceSpec) -> String {
        let _ = devices;
        self.backend()
    }

    /// The most trials of `workload` this runner trains as one fused program on `devices`
    /// (`run_group`); 1: it trains each trial alone.
    fn max_group(&self, workload: &Workload, devices: &DeviceSpec) -> usize {
        let _ = (workload, devices);
        1
    }

    /// Trains `group.specs` — trials of `workload` at one batch size and precision, on the same
    /// devices — as one fused group. `emit(i, event)` and `done(i, result)` name a trial by its
    /// index in `group.specs`; `done` is called exactly once per trial, as soon as it finished (a
    /// sweep saves it at once). The default trains the trials one after another with `run` (runners
    /// that do not fuse; their `max_group` of 1 keeps a sweep's groups to one trial).
    fn run_group(
        &self,
        workload: &Workload,
        group: &Group<'_>,
        emit: &mut dyn FnMut(usize, TrialEvent),
        done: &mut dyn FnMut(usize, anyhow::Result<TrialOutcome>),
    ) {
        for (i, spec) in group.specs.iter().enumerate() {
            let r = self.run(workload, spec, &mut |e| emit(i, e), &group.cancels[i]);
            done(i, r);
        }
    }

    /// Checks, before a sweep's first trial, that `devices` exist and can compute in `precision`:
    /// one clear error instead of a sweep of failing trials. The Burn runner probes wgpu
    /// adapters; other runners accept any devices.
    fn check_devices(&self, devices: &DeviceSpec, precision: Precision) -> anyhow::Result<()> {
        let _ = (devices, precision);
        Ok(())
    }
}

/// Trials trained together as one fused group (`TrialRunner::run_group`).
pub struct Group<'a> {
    pub specs: &'a [TrialSpec],
    /// One per trial.
    pub cancels: &'a [CancelToken],
    /// How members are stopped before their own end (see [`GroupCut`]).
    pub cut: GroupCut,
}

/// How a fused group stops members before their own end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum GroupCut {
    /// Every member runs to its own end.
    #[default]
    None,
    /// Every member stops at the first member's reach (a sweep's search trials: past that step
    /// none of them can set the batch size's steps-to-target).
    FirstReach,
    /// Type II censoring per cohort (a confirm block): member i belongs to cohort
    /// `cohort[i]` (None: never cut); when `need[c]` members of cohort c have reached, every other
    /// member of c stops at that evaluation (`NotReached`, early stopped). The same rule the
    /// analysis applies to the records (`analysis::confirm::censor_blocks`), so a cut changes the
    /// time a block takes and nothing it reports.
    Quorum {
        cohort: Vec<Option<usize>>,
        need: Vec<usize>,
    },
}

/// Builds the runner for a workload (Burn trainer for data workloads, closed-form NQM, fakes in tests).
pub type RunnerFactory =
    Arc<dyn Fn(&Workload) -> anyhow::Result<Arc<dyn TrialRunner>> + Send + Sync>;

thread_local! {
    static THREAD_BUDGET: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with a CPU thread budget for the trial it starts on this thread (`None`: the shared
/// global rayon pool). The scheduler sets it when several trials run at once, so that each trial
/// computes in its own pool of `cores / concurrency` threads instead of all of them contending for
/// one pool.
pub fn with_thread_budget<R>(threads: Option<usize>, f: impl FnOnce() -> R) -> R {
    let prev = THREAD_BUDGET.with(|b| b.replace(threads));
    let r = f();
    THREAD_BUDGET.with(|b| b.set(prev));
    r
}

/// Runs `f` with a thread budget **inside its own rayon pool** of that many threads (`None`: on
/// this thread, with the global pool). The trial's replica then computes on the pool's thread
/// itself (the trainer sees it is already in a pool of its budget and runs inline): no hand-over
/// to a worker thread and back twice a step, and every parallel op of the trial stays in its pool.
/// A pool that cannot be built falls back to `with_thread_budget` on this thread.
pub fn in_thread_budget<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> R {
    match threads.and_then(super::float_mode::pool) {
        Some(pool) => pool.install(|| with_thread_budget(threads, f)),
        None => with_thread_budget(threads, f),
    }
}

/// Whether this thread is a worker of a rayon pool of exactly `threads` threads (a trial started
/// by `in_thread_budget`).
pub fn in_budget_pool(threads: usize) -> bool {
    rayon::current_thread_index().is_some() && rayon::current_num_threads() == threads
}

/// The thread budget set by `with_thread_budget` on this thread.
pub fn thread_budget() -> Option<usize> {
    THREAD_BUDGET.with(|b| b.get())
}

/// The message of a caught panic (`catch_unwind`'s payload): its text, or "unknown panic".
#[allow(clippy::borrowed_box)]
pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}
