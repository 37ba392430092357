//! The transfer section of a report (a language model with `[workload.transfer]`): per batch size,
//! the best trial's end-of-trial probe beside S(B) and its bits per byte, against the controls
//! every readout carries on the same held-out sentences — the step-0 control (the same probe on
//! the untrained network), bag-of-bytes and the majority class. Transfer is written as the gain over
//! the step-0 control with a paired 95 % interval (`transfer::stats`), and a probe that does not
//! beat a control is said to in words.

use std::fmt::Write;

use serde::Serialize;

use crate::core::analysis::Analysis;
use crate::core::record::TrialRecord;
use crate::core::transfer::{PairedCounts, ProbeScore, TransferReadout};
use crate::data::probe::ProbeSizes;
use crate::transfer::{as_paired, stats};
use crate::workload::spec::Workload;

/// An accuracy on the test sentences with its 95 % Wilson interval.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct Accuracy {
    pub correct: u32,
    pub n: u32,
    pub acc: f64,
    pub ci: [f64; 2],
}

impl Accuracy {
    pub fn of(correct: u32, n: u32) -> Accuracy {
        Accuracy {
            correct,
            n,
            acc: correct as f64 / n.max(1) as f64,
            ci: stats::wilson(correct as usize, n as usize),
        }
    }
    fn of_score(s: &ProbeScore) -> Accuracy {
        Accuracy::of(s.correct, s.n)
    }
}

/// A difference of two accuracies on the same sentences, in percentage points, with its paired
/// 95 % interval (Newcombe): `beats` when the interval lies above 0.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct Gain {
    pub points: f64,
    pub ci: [f64; 2],
    pub beats: bool,
}

impl Gain {
    fn of(c: &PairedCounts) -> Gain {
        let p = as_paired(c);
        let [lo, hi] = p.interval();
        Gain {
            points: 100.0 * p.difference(),
            ci: [100.0 * lo, 100.0 * hi],
            beats: lo > 0.0,
        }
    }
}

/// The best single unit of a probe, refit alone.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct Unit {
    pub index: u32,
    pub acc: f64,
}

/// One batch size's best trial.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct TransferRow {
    pub batch_size: usize,
    /// S(B) at the report's target (the best trial's steps).
    pub steps: Option<u64>,
    pub trial: u64,
    /// The step its weights were read at.
    pub step: u64,
    pub val_bpc: Option<f64>,
    pub probe: Accuracy,
    /// The same probe on the trial's untrained network (step 0).
    pub control: Accuracy,
    /// The step-0 probe's non-zero weights (0: it kept none and predicts the majority class of
    /// its training labels).
    pub control_nonzero: u32,
    pub above_control: Gain,
    pub above_bytes: Gain,
    /// The probe's C and its non-zero weights of `features`.
    pub c: f64,
    pub nonzero: u32,
    pub features: u32,
    pub unit: Option<Unit>,
}

/// The transfer section.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct TransferReport {
    /// Which state a sentence's feature is ("cell", "hidden", "mean").
    pub feature: String,
    /// The features were standardised before the fit (off: the reference's raw states).
    pub standardized: bool,
    /// Held-out test sentences every accuracy is measured on.
    pub test_sentences: u32,
    /// The probe's labelled sentences per split (train, val, test), drawn with `split_seed` and
    /// held out of the language model's text; `split` is the draw's fingerprint.
    pub sentences: Option<ProbeSizes>,
    pub split_seed: Option<u64>,
    pub split: String,
    pub majority: Accuracy,
    pub bytes: Accuracy,
    /// Bag-of-bytes' non-zero weights and vocabulary (bytes and bigrams).
    pub bytes_weights: [u32; 2],
    pub per_batch: Vec<TransferRow>,
    /// Batch sizes with a best trial but no readout (it ran without a probe, or was imported).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<usize>,
}

/// The section from the trials and their analysis (None: no trial has a readout); `w`: the
/// sweep's workload (the probe's sizes and split seed).
pub fn build(trials: &[TrialRecord], a: &Analysis, w: &Workload) -> Option<TransferReport> {
    let readout = |id: u64| -> Option<&TransferReadout> {
        trials
            .iter()
            .find(|t| t.trial_id == id)?
            .outcome
            .transfer
            .as_ref()?
            .readout
            .as_ref()
    };
    let any = trials
        .iter()
        .find_map(|t| t.outcome.transfer.as_ref()?.readout.as_ref())?;
    let mut rep = section(any, w, Vec::new());
    for p in &a.per_batch {
        let Some(id) = p.best_trial else { continue };
        match readout(id) {
            Some(r) => rep.per_batch.push(row(p.batch_size, p.steps, id, r)),
            None => rep.missing.push(p.batch_size),
        }
    }
    Some(rep)
}

/// The section's controls from a readout (every readout of a sweep has the same ones) and the
/// probe's draw from the workload, with rows.
fn section(r: &TransferReadout, w: &Workload, per_batch: Vec<TransferRow>) -> TransferReport {
    let probe = w
        .dataset
        .as_ref()
        .and_then(|d| d.probe.map(|p| (p, d.split_seed)));
    TransferReport {
        feature: r.feature.clone(),
        standardized: r.standardized,
        test_sentences: r.probe.n,
        sentences: probe.map(|p| p.0),
        split_seed: probe.map(|p| p.1),
        split: r.split.clone(),
        majority: Accuracy::of(r.majority_correct, r.probe.n),
        bytes: Accuracy::of_score(&r.bytes),
        bytes_weights: [r.bytes.nonzero, r.bytes.features],
        per_batch,
        missing: Vec::new(),
    }
}

/// A batch size's row from its best trial's readout.
fn row(batch_size: usize, steps: Option<u64>, trial: u64, r: &TransferReadout) -> TransferRow {
    TransferRow {
        batch_size,
        steps,
        trial,
        step: r.step,
        val_bpc: r.val_bpc,
        probe: Accuracy::of_score(&r.probe),
        control: Accuracy::of_score(&r.control),
        control_nonzero: r.control.nonzero,
        above_control: Gain::of(&r.vs_control),
        above_bytes: Gain::of(&r.vs_bytes),
        c: r.probe.c,
        nonzero: r.probe.nonzero,
        features: r.probe.features,
        unit: r.probe.unit.map(|u| Unit {
            index: u.index,
            acc: u.acc(),
        }),
    }
}

/// One trial's readout (`train`) as the section's text: its controls, its row, the verdict.
pub fn readout_text(
    w: &Workload,
    batch_size: usize,
    steps: Option<u64>,
    trial: u64,
    r: &TransferReadout,
) -> String {
    text(&section(r, w, vec![row(batch_size, steps, trial, r)]))
}

fn pct(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

fn gain_text(g: &Gain) -> String {
    format!("{:+.1} [{:+.1}, {:+.1}]", g.points, g.ci[0], g.ci[1])
}

/// The section as text: the controls, a row per batch size, the verdict in words.
pub fn text(r: &TransferReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "transfer: an L1 logistic-regression probe (C by validation) on the LM's {}{}, {} held-out review sentences (95% intervals)",
        match r.feature.as_str() {
            "cell" => "cell state at a sentence's last byte",
            "hidden" => "hidden state at a sentence's last byte",
            _ => "hidden states averaged over a sentence's bytes",
        },
        if r.standardized { " (standardised)" } else { "" },
        r.test_sentences
    );
    if let (Some(z), Some(seed)) = (r.sentences, r.split_seed) {
        let _ = writeln!(
            s,
            "  labelled sentences {} train / {} val / {} test, drawn with split seed {seed} (draw {}) and held out of the LM's text",
            z.train, z.val, z.test, r.split
        );
    }
    let _ = writeln!(
        s,
        "  controls: majority class {}% [{}, {}] · bag-of-bytes {}% [{}, {}] ({} of {} weights)",
        pct(r.majority.acc),
        pct(r.majority.ci[0]),
        pct(r.majority.ci[1]),
        pct(r.bytes.acc),
        pct(r.bytes.ci[0]),
        pct(r.bytes.ci[1]),
        r.bytes_weights[0],
        r.bytes_weights[1],
    );
    let _ = writeln!(
        s,
        "  {:>6} {:>7} {:>6} {:>9} {:>20} {:>16} {:>24} {:>24} {:>10} {:>14}",
        "B",
        "S(B)",
        "step",
        "bits/byte",
        "probe % [95%]",
        "step 0 (weights)",
        "above step 0, points",
        "vs bag-of-bytes, points",
        "weights",
        "best unit"
    );
    for row in &r.per_batch {
        let _ = writeln!(
            s,
            "  {:>6} {:>7} {:>6} {:>9} {:>20} {:>16} {:>24} {:>24} {:>10} {:>14}",
            row.batch_size,
            row.steps.map_or("—".to_string(), |v| v.to_string()),
            row.step,
            row.val_bpc.map_or("—".to_string(), |v| format!("{v:.3}")),
            format!(
                "{} [{}, {}]",
                pct(row.probe.acc),
                pct(row.probe.ci[0]),
                pct(row.probe.ci[1])
            ),
            format!("{} ({})", pct(row.control.acc), row.control_nonzero),
            gain_text(&row.above_control),
            gain_text(&row.above_bytes),
            format!("{}/{}", row.nonzero, row.features),
            row.unit.map_or("—".to_string(), |u| format!(
                "#{} {}%",
                u.index,
                pct(u.acc)
            )),
        );
    }
    let empty: Vec<String> = r
        .per_batch
        .iter()
        .filter(|x| x.control_nonzero == 0)
        .map(|x| x.batch_size.to_string())
        .collect();
    if !empty.is_empty() {
        let _ = writeln!(
            s,
            "  step 0 kept 0 weights{}: the L1 probe on the untrained network found nothing worth a \
             weight, so it predicts the majority class of its training labels",
            if empty.len() == r.per_batch.len() && empty.len() == 1 {
                String::new()
            } else {
                format!(" at B = {}", empty.join(", "))
            }
        );
    }
    s.push_str(&verdict(r));
    s
}

/// Which batch sizes' probes beat the controls, in words.
pub fn verdict(r: &TransferReport) -> String {
    let mut s = String::new();
    if r.per_batch.is_empty() {
        let _ = writeln!(s, "  no batch size's best trial has a transfer readout");
        return s;
    }
    let list = |f: &dyn Fn(&TransferRow) -> bool| -> Vec<String> {
        r.per_batch
            .iter()
            .filter(|x| f(x))
            .map(|x| x.batch_size.to_string())
            .collect()
    };
    let n = r.per_batch.len();
    let above = list(&|x| x.above_control.beats);
    let bytes = list(&|x| x.above_bytes.beats);
    let line = |what: &str, v: &[String]| -> String {
        if v.len() == n {
            format!("the probe beats {what} at every batch size")
        } else if v.is_empty() {
            format!("the probe does NOT beat {what} at any batch size")
        } else {
            format!("the probe beats {what} only at B = {}", v.join(", "))
        }
    };
    let _ = writeln!(
        s,
        "  {}: training taught it{}",
        line("its step-0 control", &above),
        if above.is_empty() {
            " nothing a linear probe can read (no transfer measured)"
        } else {
            " something a linear probe reads"
        }
    );
    let _ = writeln!(
        s,
        "  {} (a paired interval above 0 counts)",
        line("bag-of-bytes", &bytes)
    );
    if !r.missing.is_empty() {
        let v: Vec<String> = r.missing.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(s, "  no readout at B = {}", v.join(", "));
    }
    s
}
