//! What a trial records of its language model's transfer (`[workload.transfer]`): the probe's
//! accuracy at its thinned evaluations, and the end-of-trial readout with its controls. Computed by
//! the `transfer` module, stored in the run log (`TrialOutcome::transfer`), worded by `report`.

use serde::{Deserialize, Serialize};

/// One probe (an L1 logistic regression, C chosen on validation) scored on the held-out test
/// sentences.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProbeScore {
    /// Test sentences classified right, of `n`.
    pub correct: u32,
    pub n: u32,
    pub train_acc: f64,
    pub val_acc: f64,
    /// The C (inverse L1 strength) chosen by validation accuracy.
    pub c: f64,
    /// Non-zero weights of the chosen probe, of `features`.
    pub nonzero: u32,
    pub features: u32,
    /// The unit with the largest |weight| refit alone (the "sentiment neuron").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<UnitScore>,
}

impl ProbeScore {
    /// Test accuracy.
    pub fn acc(&self) -> f64 {
        self.correct as f64 / (self.n.max(1)) as f64
    }
}

/// The best single unit of a probe: its index and its own probe's test result.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct UnitScore {
    pub index: u32,
    pub correct: u32,
    pub n: u32,
}

impl UnitScore {
    pub fn acc(&self) -> f64 {
        self.correct as f64 / (self.n.max(1)) as f64
    }
}

/// Two classifiers on the same test sentences: both right, only the probe, only the other one,
/// neither (what a paired interval of their difference needs).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PairedCounts {
    pub both: u32,
    pub only_probe: u32,
    pub only_other: u32,
    pub neither: u32,
}

/// The end-of-trial readout: the trained network's probe beside its controls, on the same splits.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TransferReadout {
    /// The step the weights were read at (the reaching evaluation, or the end of the budget).
    pub step: u64,
    /// The language model's validation bits per byte at that step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub val_bpc: Option<f64>,
    /// Which state a sentence's feature is ("cell", "hidden", "mean").
    pub feature: String,
    /// The features were standardised by the training sentences' mean and deviation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub standardized: bool,
    /// The probe's draw of labelled sentences (`data::probe`: its fingerprint): every readout of
    /// a sweep is on the same splits.
    #[serde(default)]
    pub split: String,
    /// The trained network's probe.
    pub probe: ProbeScore,
    /// The same probe on the untrained network's features (step 0, the trial's own seed).
    pub control: ProbeScore,
    pub vs_control: PairedCounts,
    /// Bag-of-bytes: the same L1 probe on byte and byte-bigram presence.
    pub bytes: ProbeScore,
    pub vs_bytes: PairedCounts,
    /// Test sentences the majority class of the probe's training labels gets right.
    pub majority_correct: u32,
    /// Seconds the readout took (encoding and fitting its probes).
    pub wall_s: f64,
}

/// A probe at a (thinned) evaluation of the trial.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct TransferPoint {
    pub step: u64,
    /// The probe's test accuracy.
    pub acc: f64,
    /// The language model's validation bits per byte at that evaluation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub val_bpc: Option<f64>,
}

/// Everything a trial records of transfer.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct TransferRecord {
    /// The probe at the evaluations `[workload.transfer] every` picks (every evaluation of a
    /// `transfer_acc` target).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve: Vec<TransferPoint>,
    /// The end-of-trial readout (absent for a trial that diverged, was stopped early or cancelled:
    /// none of them can be its batch size's best).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readout: Option<TransferReadout>,
    /// Seconds the trial spent on transfer (every probe, the readout included).
    #[serde(default)]
    pub cost_s: f64,
}
