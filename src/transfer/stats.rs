//! Binomial intervals of a probe's accuracy: the Wilson score interval of one accuracy, and
//! Newcombe's interval for the difference of two accuracies measured on the **same** test
//! sentences (paired: what a probe gains over its step-0 control or over bag-of-bytes).

/// z of a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval of `k` successes in `n` trials at 95 % (Wilson 1927; Newcombe 1998a
/// method 3). [0, 1] when n = 0.
pub fn wilson(k: usize, n: usize) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

/// Two classifiers scored on the same n examples: both right, only the first, only the second,
/// both wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Paired {
    pub both: usize,
    pub only_first: usize,
    pub only_second: usize,
    pub neither: usize,
}

impl Paired {
    /// Counts from the two classifiers' per-example correctness.
    pub fn of(first: &[bool], second: &[bool]) -> Paired {
        let mut p = Paired::default();
        for (&a, &b) in first.iter().zip(second) {
            match (a, b) {
                (true, true) => p.both += 1,
                (true, false) => p.only_first += 1,
                (false, true) => p.only_second += 1,
                (false, false) => p.neither += 1,
            }
        }
        p
    }
    pub fn n(&self) -> usize {
        self.both + self.only_first + self.only_second + self.neither
    }
    /// Accuracy of the first minus the second.
    pub fn difference(&self) -> f64 {
        let n = self.n().max(1) as f64;
        (self.only_first as f64 - self.only_second as f64) / n
    }

    /// 95 % interval of the difference of the paired accuracies: Newcombe 1998b's method 10
    /// (each accuracy's Wilson interval, combined with the correlation φ of the pairs).
    pub fn interval(&self) -> [f64; 2] {
        let n = self.n();
        if n == 0 {
            return [-1.0, 1.0];
        }
        let (a, b, c, d) = (
            self.both as f64,
            self.only_first as f64,
            self.only_second as f64,
            self.neither as f64,
        );
        let nf = n as f64;
        let p1 = (a + b) / nf;
        let p2 = (a + c) / nf;
        let [l1, u1] = wilson(self.both + self.only_first, n);
        let [l2, u2] = wilson(self.both + self.only_second, n);
        let denom = ((a + b) * (c + d) * (a + c) * (b + d)).sqrt();
        let phi = if denom > 0.0 {
            (a * d - b * c) / denom
        } else {
            0.0
        };
        let diff = p1 - p2;
        let lower = ((p1 - l1).powi(2) - 2.0 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2).powi(2))
            .max(0.0)
            .sqrt();
        let upper = ((u1 - p1).powi(2) - 2.0 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2).powi(2))
            .max(0.0)
            .sqrt();
        [(diff - lower).max(-1.0), (diff + upper).min(1.0)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs counted by outcome: both right, only the first, only the second, neither.
    fn counts(both: usize, only_first: usize, only_second: usize, neither: usize) -> Paired {
        Paired {
            both,
            only_first,
            only_second,
            neither,
        }
    }

    /// Newcombe 1998a's worked examples of the score interval (Table II): 81/263 → 0.2553–0.3662,
    /// 15/148 → 0.0624–0.1605, 0/20 → 0–0.1611, 1/29 → 0.0061–0.1718.
    #[test]
    fn wilson_matches_newcombes_examples() {
        for (k, n, lo, hi) in [
            (81, 263, 0.2553, 0.3662),
            (15, 148, 0.0624, 0.1605),
            (0, 20, 0.0, 0.1611),
            (1, 29, 0.0061, 0.1718),
        ] {
            let [l, h] = wilson(k, n);
            assert!(
                (l - lo).abs() < 6e-5 && (h - hi).abs() < 6e-5,
                "{k}/{n}: {l} {h}"
            );
        }
    }

    /// The paired interval contains the difference, flips with the pair, stays in [−1, 1], and
    /// for many pairs approaches the Wald interval of a paired difference.
    #[test]
    fn the_paired_interval_behaves() {
        let p = counts(700, 90, 50, 160);
        let [lo, hi] = p.interval();
        let d = p.difference();
        assert!((d - 0.04).abs() < 1e-12);
        assert!(lo < d && d < hi && lo > 0.0, "{lo} {hi}");
        let flipped = Paired {
            only_first: 50,
            only_second: 90,
            ..p
        };
        let [l2, h2] = flipped.interval();
        assert!((l2 + hi).abs() < 1e-12 && (h2 + lo).abs() < 1e-12);
        // Wald: var = ((b + c) − (b − c)²/n)/n², for 100× the pairs
        let big = counts(70_000, 9_000, 5_000, 16_000);
        let n = big.n() as f64;
        let (b, c) = (9_000f64, 5_000f64);
        let se = ((b + c) - (b - c).powi(2) / n).sqrt() / n;
        let [lo, hi] = big.interval();
        assert!((lo - (0.04 - Z95 * se)).abs() < 2e-4, "{lo}");
        assert!((hi - (0.04 + Z95 * se)).abs() < 2e-4, "{hi}");
        // identical classifiers: the interval holds 0 and is narrow
        let same = counts(600, 0, 0, 400);
        let [lo, hi] = same.interval();
        assert!(lo <= 0.0 && hi >= 0.0 && hi - lo < 0.01, "{lo} {hi}");
        assert_eq!(Paired::default().interval(), [-1.0, 1.0]);
    }
}
