//! A batch-size schedule: a trial starts at one batch size and switches to a
//! larger one at the first evaluation whose validation metric meets a threshold.
//!
//! Written `"16,0.2:64,0.08:256"`: B = 16 from the start, 64 from the first evaluation whose metric
//! meets 0.2, 256 from the first one that meets 0.08. Every metric of the lab is lower-is-better, so
//! the thresholds fall while the batch sizes rise. The trainer (`train::trainer`) switches; the
//! record of what ran is `TrialOutcome::stages`.

use serde::{Deserialize, Serialize};

/// One stage of a schedule: its batch size and learning rate, from the first evaluation meeting
/// `from` (None: from the start).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct BatchStage {
    pub batch_size: usize,
    pub learning_rate: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<f64>,
}

/// The stages, in order (stage 0 has no threshold).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct BatchSchedule {
    pub stages: Vec<BatchStage>,
}

/// A stage as it ran: switched to at `start_step` (0 for the first), at an evaluation whose metric
/// was `start_metric`; `steps` applied steps at this batch size.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StageRun {
    pub batch_size: usize,
    pub learning_rate: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<f64>,
    pub start_step: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_metric: Option<f64>,
    pub steps: u64,
}

/// Parses the explicit form into (B, threshold) pairs, checking what needs no workload: each B a
/// positive integer, B strictly increasing, the thresholds finite and strictly decreasing (every
/// metric is lower-is-better).
pub fn parse(s: &str) -> Result<Vec<(usize, Option<f64>)>, String> {
    let mut out: Vec<(usize, Option<f64>)> = Vec::new();
    let parts: Vec<&str> = s.split(':').map(str::trim).collect();
    if parts.len() < 2 {
        return Err(format!(
            "{s:?} has one stage: write B0,T1:B1[,T2:B2…], e.g. \"16,0.2:64,0.08:256\" (B = 16, then 64 once the metric meets 0.2, …)"
        ));
    }
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut it = p.split(',').map(str::trim);
        let b_text = it.next().unwrap_or("");
        let b: usize = b_text.parse().ok().filter(|&b| b > 0).ok_or_else(|| {
            format!(
                "stage {}: batch size {b_text:?} is not a positive integer",
                i + 1
            )
        })?;
        let t = it.next();
        if it.next().is_some() || (t.is_some() == last) {
            return Err(format!(
                "stage {}: {p:?} should be {}",
                i + 1,
                if last {
                    "B (the last stage has no threshold)"
                } else {
                    "B,THRESHOLD"
                }
            ));
        }
        if let Some((pb, _)) = out.last() {
            if b <= *pb {
                return Err(format!(
                    "batch sizes must increase: {b} after {pb} (a schedule only grows the batch)"
                ));
            }
        }
        out.push((b, None));
        if let Some(t) = t {
            let v: f64 = t
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| format!("stage {}: threshold {t:?} is not a number", i + 1))?;
            if let Some(prev) = out.iter().rev().skip(1).find_map(|(_, t)| *t) {
                if v >= prev {
                    return Err(format!(
                        "thresholds must decrease (lower is better): {v} after {prev}"
                    ));
                }
            }
            out.last_mut().expect("pushed above").1 = Some(v);
        }
    }
    // Stored as (B, threshold that ends the stage); turn into (B, threshold that starts it).
    let mut stages = Vec::with_capacity(out.len());
    let mut from = None;
    for (b, ends) in out {
        stages.push((b, from));
        from = ends;
    }
    Ok(stages)
}

impl BatchSchedule {
    pub fn first_batch(&self) -> usize {
        self.stages.first().map_or(0, |s| s.batch_size)
    }

    /// The stage to be in after an evaluation with `metric`, in stage `current`: the last stage
    /// whose threshold the metric meets (a metric meeting two thresholds at once skips a stage);
    /// never an earlier one.
    pub fn stage_after(&self, current: usize, metric: f64) -> usize {
        let mut k = current;
        while let Some(s) = self.stages.get(k + 1) {
            match s.from {
                Some(t) if metric.is_finite() && metric <= t => k += 1,
                _ => break,
            }
        }
        k
    }

    /// The explicit form of the schedule ("16,0.2:64,0.08:256").
    pub fn spec_text(&self) -> String {
        let mut s = String::new();
        for (i, st) in self.stages.iter().enumerate() {
            if let (Some(t), true) = (st.from, i > 0) {
                s.push_str(&format!(",{t}:"));
            }
            s.push_str(&st.batch_size.to_string());
        }
        s
    }
}

/// Examples processed up to `step` (Σ steps × B over the stages as they ran); with no stages, a
/// fixed `batch_size`.
pub fn examples_to(stages: &[StageRun], batch_size: usize, step: u64) -> u64 {
    if stages.is_empty() {
        return step * batch_size as u64;
    }
    let mut n = 0;
    for (i, s) in stages.iter().enumerate() {
        let end = stages
            .get(i + 1)
            .map_or(u64::MAX, |n| n.start_step)
            .min(step);
        if end > s.start_step {
            n += (end - s.start_step) * s.batch_size as u64;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_explicit_form() {
        assert_eq!(
            parse("16,0.2:64,0.08:256").unwrap(),
            vec![(16, None), (64, Some(0.2)), (256, Some(0.08))]
        );
        assert_eq!(
            parse(" 8 , 0.5 : 32 ").unwrap(),
            vec![(8, None), (32, Some(0.5))]
        );
    }

    #[test]
    fn refuses_each_bad_form() {
        for (s, says) in [
            ("64", "one stage"),
            ("64,0.2:32", "must increase"),
            ("64,0.2:64", "must increase"),
            ("16,0.1:64,0.2:256", "must decrease"),
            ("16,0.1:64,0.1:256", "must decrease"),
            ("16,x:64", "not a number"),
            ("0,0.1:64", "not a positive integer"),
            ("16:64", "B,THRESHOLD"),
            ("16,0.1:64,0.05", "last stage"),
        ] {
            let e = parse(s).unwrap_err();
            assert!(e.contains(says), "{s}: {e}");
        }
    }

    #[test]
    fn switches_to_the_last_stage_met_and_never_back() {
        let st = |b, from| BatchStage {
            batch_size: b,
            learning_rate: 0.1,
            from,
        };
        let s = BatchSchedule {
            stages: vec![st(16, None), st(64, Some(0.2)), st(256, Some(0.08))],
        };
        assert_eq!(s.stage_after(0, 0.5), 0);
        assert_eq!(s.stage_after(0, 0.2), 1);
        assert_eq!(s.stage_after(0, 0.05), 2);
        assert_eq!(s.stage_after(1, 0.5), 1);
        assert_eq!(s.stage_after(0, f64::NAN), 0);
        assert_eq!(s.spec_text(), "16,0.2:64,0.08:256");
    }

    #[test]
    fn examples_sum_steps_times_batch() {
        let run = |b, start_step| StageRun {
            batch_size: b,
            learning_rate: 0.1,
            from: None,
            start_step,
            start_metric: None,
            steps: 0,
        };
        let stages = vec![run(16, 0), run(64, 10), run(256, 14)];
        assert_eq!(examples_to(&stages, 0, 8), 8 * 16);
        assert_eq!(examples_to(&stages, 0, 12), 10 * 16 + 2 * 64);
        assert_eq!(examples_to(&stages, 0, 20), 10 * 16 + 4 * 64 + 6 * 256);
        assert_eq!(examples_to(&[], 32, 5), 160);
    }
}
