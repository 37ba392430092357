//! The least evidence a curve is read from (docs/protocol.md, "Too little evidence"): the fit,
//! B_crit, the regimes, the η exponent and the time-to-target projection read S(B) as a curve over
//! B, and a curve drawn through a best of one or two trials is mostly the luck of the draw. So a
//! batch size is on the curve only where its S(B) rests on at least [`MIN_TRIALS_PER_POINT`]
//! finished trials, and the curve is read only with at least [`MIN_CURVE_POINTS`] of them; below
//! that everything read from it is withheld (`Evidence::withheld`), never printed with a flag.
//! The per-B table (each S(B) with its own interval) is shown whatever the evidence.

use crate::core::analysis::{BatchPoint, Evidence, Readout, ThinPoint};

/// Batch sizes on the curve (a measured S(B) from enough trials) the curve needs: the fit has
/// two parameters and the regimes' ordered partition needs three points.
pub const MIN_CURVE_POINTS: usize = 3;

/// Finished trials a batch size's S(B) must rest on to be on the curve: with the best-trial
/// readout its search trials that reached, diverged or did not reach (cancelled and
/// out-of-memory trials say nothing about S(B)); with the confirmed readout the seeds of the
/// chosen configuration.
pub const MIN_TRIALS_PER_POINT: usize = 3;

/// The finished trials `p`'s S(B) rests on in `readout` (see [`MIN_TRIALS_PER_POINT`]).
pub fn trials_behind(p: &BatchPoint, readout: Readout) -> usize {
    match readout {
        Readout::BestTrial => p.counts.reached + p.counts.diverged + p.counts.not_reached,
        Readout::Confirmed => p
            .confirmed
            .as_ref()
            .and_then(|c| c.chosen_config())
            .map_or(0, |k| k.runs),
    }
}

/// The evidence of `per_batch` in `readout`: the batch sizes on the curve, those measured from
/// fewer trials, and whether the curve's readings are withheld.
pub fn evidence(per_batch: &[BatchPoint], readout: Readout) -> Evidence {
    let mut e = Evidence::default();
    for p in per_batch {
        if p.readout_steps(readout).is_none() {
            continue;
        }
        let trials = trials_behind(p, readout);
        if trials >= MIN_TRIALS_PER_POINT {
            e.curve.push(p.batch_size);
        } else {
            e.thin.push(ThinPoint {
                batch_size: p.batch_size,
                trials,
            });
        }
    }
    e.withheld = e.curve.len() < MIN_CURVE_POINTS;
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::analysis::OutcomeCounts;

    fn point(b: usize, steps: Option<u64>, reached: usize, other: usize) -> BatchPoint {
        BatchPoint {
            batch_size: b,
            steps,
            counts: OutcomeCounts {
                trials: reached + other + 1,
                reached,
                not_reached: other,
                cancelled: 1,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// Cancelled trials never count; a B is on the curve from three finished trials; three such
    /// B make a curve.
    #[test]
    fn a_curve_needs_three_batch_sizes_of_three_trials() {
        let thin = [
            point(8, Some(100), 1, 1),
            point(16, Some(60), 2, 0),
            point(32, Some(40), 3, 0),
            point(64, None, 0, 5),
        ];
        let e = evidence(&thin, Readout::BestTrial);
        assert_eq!(e.curve, [32]);
        assert_eq!(
            e.thin,
            [
                ThinPoint {
                    batch_size: 8,
                    trials: 2
                },
                ThinPoint {
                    batch_size: 16,
                    trials: 2
                }
            ]
        );
        assert!(e.withheld);
        let enough = [
            point(8, Some(100), 1, 2),
            point(16, Some(60), 2, 1),
            point(32, Some(40), 3, 0),
            point(64, Some(40), 1, 1),
        ];
        let e = evidence(&enough, Readout::BestTrial);
        assert_eq!(e.curve, [8, 16, 32]);
        assert_eq!(e.thin.len(), 1);
        assert!(!e.withheld);
        // the confirmed readout counts the chosen configuration's seeds, not the search's
        assert!(evidence(&enough, Readout::Confirmed).curve.is_empty());
    }
}
