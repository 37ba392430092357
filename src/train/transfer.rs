//! A trial's transfer probe, as the group loop runs it (`[workload.transfer]`; the `transfer`
//! module does the work):
//!
//! - **At the start** every member's untrained network encodes the probe's sentences: the step-0
//!   control's features (the network the member starts from, before any update).
//! - **At a thinned evaluation** (every `every`-th evaluation of a member; every evaluation of a
//!   `transfer_acc` target, whose metric it then is) the members due encode the sentences and each
//!   fits its probe: its test accuracy joins the trial's transfer curve.
//! - **At the end** a member that can be its batch size's best (it reached the target, or ran its
//!   whole budget) gets the readout: its probe with the best unit refit alone, beside the step-0
//!   control, bag-of-bytes and the majority class on the same test sentences. A diverged,
//!   early-stopped or cancelled member gets none (it cannot set S(B)).

use std::sync::Arc;
use std::time::Instant;

use burn::tensor::backend::Backend;
use rayon::prelude::*;

use crate::core::transfer::{TransferPoint, TransferReadout};
use crate::core::trial::Outcome;
use crate::data::probe::ProbeSet;
use crate::data::Dataset;
use crate::model::Net;
use crate::transfer::{self, encode::Features};
use crate::workload::spec::{Metric, TransferSpec, Workload};

/// What a group's transfer probe holds for the whole trial.
pub(super) struct TransferRun {
    pub(super) spec: TransferSpec,
    /// The target is `transfer_acc`: every evaluation probes, and the probe is the metric.
    pub(super) target: bool,
    set: Arc<ProbeSet>,
    width: usize,
    /// Each member's step-0 features (by its index in the group's specs).
    controls: Vec<Vec<f32>>,
    /// Seconds the step-0 encoding took, per member (booked in each member's transfer cost).
    pub(super) start_s: f64,
}

impl TransferRun {
    /// The probe of a workload with `[workload.transfer]` (None without one): encodes the step-0
    /// controls with the group's untrained model.
    pub(super) fn start<B: Backend>(
        workload: &Workload,
        dataset: &Dataset,
        model: &Net<B>,
        device: &B::Device,
    ) -> anyhow::Result<Option<TransferRun>> {
        let Some(spec) = workload.transfer else {
            return Ok(None);
        };
        let set = match dataset {
            Dataset::Text(t) => t.probe.clone(),
            Dataset::Images(_) => None,
        }
        .ok_or_else(|| {
            anyhow::anyhow!(
                "[workload.transfer] needs the probe's sentences: set `probe = {{ train, val, test }}` under [workload.dataset] (the reviews)"
            )
        })?;
        let t0 = Instant::now();
        let f = transfer::encode::encode(
            model,
            &transfer::sentences(&set),
            spec.feature,
            transfer::encode::DEFAULT_BATCH_ELEMENTS,
            device,
        )?;
        Ok(Some(TransferRun {
            spec,
            target: workload.target.metric == Metric::TransferAcc,
            set,
            width: f.width,
            start_s: since(t0) / f.per_member.len().max(1) as f64,
            controls: f.per_member,
        }))
    }

    /// Whether a member's evaluation number `n` (1-based) probes.
    pub(super) fn due(&self, n: usize) -> bool {
        self.target || (self.spec.every > 0 && (n as u64).is_multiple_of(self.spec.every))
    }

    /// Each encoded member's probe test accuracy (members in `f`'s order), fitted in parallel.
    pub(super) fn accuracies(&self, f: &Features) -> Vec<f64> {
        f.per_member
            .par_iter()
            .map(|x| {
                let rows = transfer::split_rows(&self.set, self.width, x, self.spec.standardize);
                transfer::fit_probe(&rows, &self.set, false).score.acc()
            })
            .collect()
    }

    /// The readouts of the encoded members: `slots[i]` is the group index of `f`'s member i, and
    /// `steps[i]` its step.
    pub(super) fn readouts(
        &self,
        f: &Features,
        slots: &[usize],
        steps: &[u64],
    ) -> Vec<TransferReadout> {
        f.per_member
            .par_iter()
            .zip(slots.par_iter().zip(steps))
            .map(|(x, (&slot, &step))| {
                transfer::readout(
                    step,
                    &self.spec,
                    &self.set,
                    self.width,
                    x,
                    &self.controls[slot],
                )
            })
            .collect()
    }
}

/// Whether a member that ended with `o` gets the end-of-trial readout (it can be its batch size's
/// best trial).
pub(super) fn reads_out(o: &Outcome) -> bool {
    matches!(
        o,
        Outcome::Reached { .. }
            | Outcome::NotReached {
                early_stopped: false,
                ..
            }
    )
}

/// A probe's point on the curve.
pub(super) fn point(step: u64, acc: f64, val_bpc: Option<f64>) -> TransferPoint {
    TransferPoint { step, acc, val_bpc }
}

/// Seconds since `t0`.
pub(super) fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}
