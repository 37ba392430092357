//! The run-log validator's checks of a trial's transfer record (`TrialOutcome::transfer`): every
//! accuracy in [0, 1], every count within its test sentences, paired counts that add up to them
//! and agree with each side's own count — what no probe can have measured is an impossible line.

use crate::core::record::TrialRecord;
use crate::core::transfer::{PairedCounts, ProbeScore};

/// The first impossible value of the trial's transfer record, in words.
pub(super) fn transfer_problem(t: &TrialRecord) -> Option<String> {
    let id = t.trial_id;
    let rec = t.outcome.transfer.as_ref()?;
    let unit = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
    for p in &rec.curve {
        if !unit(p.acc) {
            return Some(format!(
                "trial {id}: transfer accuracy {} at step {} is impossible (in [0, 1])",
                p.acc, p.step
            ));
        }
    }
    if !(rec.cost_s.is_finite() && rec.cost_s >= 0.0) {
        return Some(format!(
            "trial {id}: transfer cost_s {} is impossible",
            rec.cost_s
        ));
    }
    let r = rec.readout.as_ref()?;
    let score = |what: &str, s: &ProbeScore| -> Option<String> {
        let bad = s.correct > s.n
            || s.nonzero > s.features
            || !unit(s.train_acc)
            || !unit(s.val_acc)
            || !(s.c.is_finite() && s.c > 0.0)
            || s.unit
                .is_some_and(|u| u.correct > u.n || u.index >= s.features);
        bad.then(|| {
            format!(
                "trial {id}: the transfer readout's {what} probe has impossible counts or rates"
            )
        })
    };
    let paired = |what: &str, p: &PairedCounts, a: &ProbeScore, b: &ProbeScore| -> Option<String> {
        let sum = p.both as u64 + p.only_probe as u64 + p.only_other as u64 + p.neither as u64;
        let bad = sum != a.n as u64
            || p.both + p.only_probe != a.correct
            || p.both + p.only_other != b.correct
            || a.n != b.n;
        bad.then(|| {
            format!("trial {id}: the transfer readout's paired counts against {what} do not add up")
        })
    };
    score("trained", &r.probe)
        .or_else(|| score("step-0 control", &r.control))
        .or_else(|| score("bag-of-bytes", &r.bytes))
        .or_else(|| paired("the step-0 control", &r.vs_control, &r.probe, &r.control))
        .or_else(|| paired("bag-of-bytes", &r.vs_bytes, &r.probe, &r.bytes))
        .or_else(|| {
            (r.majority_correct > r.probe.n).then(|| {
                format!("trial {id}: the transfer readout's majority class is right more often than there are test sentences")
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::transfer::{TransferPoint, TransferReadout, TransferRecord};
    use crate::core::trial::{Outcome, TrialOutcome, TrialSpec};
    use crate::workload::spec::Metaparams;

    fn score(correct: u32) -> ProbeScore {
        ProbeScore {
            correct,
            n: 10,
            train_acc: 0.7,
            val_acc: 0.6,
            c: 0.25,
            nonzero: 3,
            features: 16,
            unit: None,
        }
    }

    fn record(edit: impl FnOnce(&mut TransferRecord)) -> TrialRecord {
        let mut rec = TransferRecord {
            curve: vec![TransferPoint {
                step: 5,
                acc: 0.6,
                val_bpc: Some(3.0),
            }],
            readout: Some(TransferReadout {
                step: 10,
                val_bpc: None,
                feature: "cell".into(),
                standardized: false,
                split: String::new(),
                probe: score(7),
                control: score(5),
                vs_control: PairedCounts {
                    both: 4,
                    only_probe: 3,
                    only_other: 1,
                    neither: 2,
                },
                bytes: score(6),
                vs_bytes: PairedCounts {
                    both: 6,
                    only_probe: 1,
                    only_other: 0,
                    neither: 3,
                },
                majority_correct: 5,
                wall_s: 0.1,
            }),
            cost_s: 0.2,
        };
        edit(&mut rec);
        let mut out = TrialOutcome::bare(Outcome::Reached { step: 10 }, 10);
        out.transfer = Some(Box::new(rec));
        TrialRecord::new(TrialSpec::cpu(8, Metaparams::new(0.1, 0.9)), out)
    }

    #[test]
    fn impossible_transfer_values_are_named() {
        assert_eq!(transfer_problem(&record(|_| {})), None);
        type Break = Box<dyn FnOnce(&mut TransferRecord)>;
        let cases: Vec<(Break, &str)> = vec![
            (Box::new(|r| r.curve[0].acc = 1.5), "accuracy 1.5"),
            (Box::new(|r| r.cost_s = f64::NAN), "cost_s"),
            (
                Box::new(|r| r.readout.as_mut().unwrap().probe.correct = 11),
                "trained probe",
            ),
            (
                Box::new(|r| r.readout.as_mut().unwrap().control.c = 0.0),
                "step-0 control probe",
            ),
            (
                Box::new(|r| r.readout.as_mut().unwrap().vs_control.both = 5),
                "against the step-0 control",
            ),
            (
                Box::new(|r| r.readout.as_mut().unwrap().vs_bytes.only_other = 1),
                "against bag-of-bytes",
            ),
            (
                Box::new(|r| r.readout.as_mut().unwrap().majority_correct = 11),
                "majority",
            ),
        ];
        for (edit, says) in cases {
            let p = transfer_problem(&record(edit)).expect("a problem");
            assert!(p.contains(says), "{p} (wanted {says})");
        }
    }
}
