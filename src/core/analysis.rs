//! Result types of the sweep analysis (computed by `sweep::analysis`).

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
}

/// Steps-to-target at one batch size: the best trial over the study.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
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
    /// Metaparameters of the best trial.
    pub best_lr: Option<f64>,
    pub best_momentum: Option<f64>,
    /// η/(1−γ) for momentum optimizers, η otherwise.
    pub best_effective_lr: Option<f64>,
    /// Gradient noise scale of the best trial.
    pub b_simple: Option<f64>,
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
}
