//! Result types of the sweep analysis (computed by `analysis`).

use serde::{Deserialize, Serialize};

/// The three regimes of Shallue et al., classified per segment by local log-log slope.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Regime {
    /// slope ≈ −1: doubling B halves the steps.
    Perfect,
    /// in between.
    Diminishing,
    /// slope ≈ 0: more batch, no fewer steps.
    Maximal,
}

impl Regime {
    pub fn label(self) -> &'static str {
        match self {
            Regime::Perfect => "perfect scaling",
            Regime::Diminishing => "diminishing returns",
            Regime::Maximal => "maximal data parallelism",
        }
    }
    /// One short word per regime (chart labels, one-line summaries, table columns).
    pub fn short(self) -> &'static str {
        match self {
            Regime::Perfect => "perfect",
            Regime::Diminishing => "diminishing",
            Regime::Maximal => "maximal",
        }
    }
}

/// One regime of the ordered partition of a sweep's measured batch-size range
/// (`analysis::regimes`): at most one span per regime, always perfect → diminishing → maximal.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RegimeSpan {
    pub regime: Regime,
    /// Lower end in batch-size units (the smallest measured B, or a fitted boundary).
    pub b_lo: f64,
    /// Upper end in batch-size units (a fitted boundary, or the largest measured B).
    pub b_hi: f64,
    /// 95 % bootstrap interval of `b_lo` when it is a fitted boundary (None: the end of the
    /// measured range, not a boundary).
    #[serde(default)]
    pub b_lo_ci: Option<[f64; 2]>,
    /// 95 % bootstrap interval of `b_hi` when it is a fitted boundary.
    #[serde(default)]
    pub b_hi_ci: Option<[f64; 2]>,
    /// Measured batch sizes inside the span (ends included, 5 % tolerance).
    #[serde(default)]
    pub points: usize,
    /// A boundary of this span is poorly determined (its interval spans more than 8× in B).
    #[serde(default)]
    pub uncertain: bool,
}

/// Which edge of the search space a best trial sits at (outer 10 % of the range in log space).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SearchEdge {
    /// η near the bottom of its (per-B) range.
    LrLow,
    /// η near the top of its range.
    LrHigh,
    /// 1−γ near the bottom of its range (γ close to its maximum).
    OneMinusMomentumLow,
    /// 1−γ near the top of its range (γ close to its minimum).
    OneMinusMomentumHigh,
}

impl SearchEdge {
    pub fn label(self) -> &'static str {
        match self {
            SearchEdge::LrLow => "η low",
            SearchEdge::LrHigh => "η high",
            SearchEdge::OneMinusMomentumLow => "1−γ low",
            SearchEdge::OneMinusMomentumHigh => "1−γ high",
        }
    }
}

/// Steps-to-target of the best metaparameters re-run with other seeds (`--repeats R`): the best
/// search trial itself plus its repeats.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RepeatSteps {
    /// Runs that reached the target (the best trial and its repeats).
    pub runs: usize,
    /// Repeats that did not reach the target within the full budget (or diverged).
    #[serde(default)]
    pub not_reached: usize,
    pub median: f64,
    pub min: u64,
    pub max: u64,
}

/// Steps-to-target at one batch size: the best trial over the study.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct BatchPoint {
    pub batch_size: usize,
    /// Earliest evaluation step at which any trial met the target (None: no trial did).
    pub steps: Option<u64>,
    pub best_trial: Option<u64>,
    pub trials: usize,
    pub reached: usize,
    pub diverged: usize,
    pub not_reached: usize,
    /// Of `not_reached`: stopped early at the best steps already measured at this B.
    #[serde(default)]
    pub early_stopped: usize,
    pub cancelled: usize,
    /// Trials that ran out of device memory at this B (CUDA).
    #[serde(default, skip_serializing_if = "crate::core::analysis::is_zero")]
    pub oom: usize,
    /// Metaparameters of the best trial.
    pub best_lr: Option<f64>,
    pub best_momentum: Option<f64>,
    /// η/(1−γ) for momentum optimizers, η otherwise.
    pub best_effective_lr: Option<f64>,
    /// Gradient noise scale of the best trial.
    pub b_simple: Option<f64>,
    /// 95 % interval of `steps` (lo ≤ steps ≤ hi): bootstrap over this B's search trials of the
    /// best-of-K minimum, symmetrised in log space, widened by the seed spread of the repeats.
    #[serde(default)]
    pub steps_ci: Option<[u64; 2]>,
    /// The best trial's η or 1−γ lies in the outer 10 % (log scale) of the search range: S(B) is
    /// then an upper bound, not a measurement.
    #[serde(default)]
    pub at_search_edge: bool,
    /// Which edges (empty unless `at_search_edge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search_edges: Vec<SearchEdge>,
    /// `--repeats`: steps of the best metaparameters over seeds (median, min–max).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_steps: Option<RepeatSteps>,
}

impl BatchPoint {
    /// Relative half-width of `steps_ci`: (hi − lo) / 2 / steps.
    pub fn rel_half_width(&self) -> Option<f64> {
        let (s, [lo, hi]) = (self.steps?, self.steps_ci?);
        (s > 0).then(|| (hi as f64 - lo as f64) / 2.0 / s as f64)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Segment {
    pub b_lo: usize,
    pub b_hi: usize,
    /// d log S / d log B.
    pub slope: f64,
    pub regime: Regime,
}

/// Least-squares fit in log space of S = S_min·(1 + B_crit/B).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Fit {
    pub s_min: f64,
    pub b_crit: f64,
    /// Coefficient of determination of log S.
    pub r2: f64,
    /// Root-mean-square residual of ln S.
    pub rmse_log: f64,
    /// 95 % bootstrap interval of B_crit (refits to per-B bootstrap draws of S).
    #[serde(default)]
    pub b_crit_ci: Option<[f64; 2]>,
    /// 95 % bootstrap interval of S_min.
    #[serde(default)]
    pub s_min_ci: Option<[f64; 2]>,
    /// r² < 0.9, or the B_crit / S_min interval is wider than the value: draw dashed, say so.
    #[serde(default)]
    pub uncertain: bool,
}

impl Fit {
    pub fn steps_at(&self, b: f64) -> f64 {
        self.s_min * (1.0 + self.b_crit / b)
    }
}

/// The best learning rate per batch size against what the linear and sqrt rules predict
/// from the smallest batch size's optimum.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LrRulePoint {
    pub batch_size: usize,
    pub best_lr: f64,
    pub best_effective_lr: f64,
    pub linear_rule: f64,
    pub sqrt_rule: f64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Analysis {
    pub target: String,
    pub per_batch: Vec<BatchPoint>,
    /// The perfect-scaling reference S(B0)·B0/B anchored at the smallest B that reached: (B0, S0).
    pub perfect_anchor: Option<(usize, u64)>,
    pub segments: Vec<Segment>,
    pub fit: Option<Fit>,
    /// Median B_simple over the best trials: the noise-scale prediction of B_crit.
    pub noise_prediction: Option<f64>,
    pub lr_rules: Vec<LrRulePoint>,
    /// The regimes as one ordered partition of the measured range (use this, not `segments`).
    #[serde(default)]
    pub regimes: Vec<RegimeSpan>,
    /// What the data cannot support ("maximal regime not reached below B = 1024"), search-edge
    /// and LR-rule caveats, disagreements between the two regime models.
    #[serde(default)]
    pub notes: Vec<String>,
}

pub fn is_zero(n: &usize) -> bool {
    *n == 0
}
