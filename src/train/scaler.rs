//! Dynamic loss scaling (Micikevicius et al.; Puri et al. §3; PyTorch GradScaler semantics).

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ScalerConfig {
    /// Initial scale (2^16 by default, like PyTorch; Puri et al. start at 2^32).
    pub init_scale: f64,
    /// Multiply the scale by this on a non-finite gradient (0.5).
    pub backoff: f64,
    /// Multiply the scale by this after `growth_interval` clean steps (2.0).
    pub growth: f64,
    pub growth_interval: u64,
    /// Fixed-scale mode (bf16: only detect and skip non-finite steps).
    pub dynamic: bool,
}

impl ScalerConfig {
    pub fn fp16() -> Self {
        ScalerConfig {
            init_scale: 65536.0,
            backoff: 0.5,
            growth: 2.0,
            growth_interval: 2000,
            dynamic: true,
        }
    }
    /// bf16 has fp32's exponent range: scale 1, but non-finite gradients are still skipped.
    pub fn bf16() -> Self {
        ScalerConfig {
            init_scale: 1.0,
            dynamic: false,
            ..Self::fp16()
        }
    }
}

/// What to do with the current step's gradients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleDecision {
    /// Gradients finite: unscale and apply.
    Apply,
    /// Non-finite gradient: skip the update (and do not advance the LR schedule).
    Skip,
}

#[derive(Clone, Debug)]
pub struct LossScaler {
    cfg: ScalerConfig,
    scale: f64,
    clean_steps: u64,
    skipped: u64,
    consecutive_skips: u64,
}

impl LossScaler {
    pub fn new(cfg: ScalerConfig) -> Self {
        let scale = cfg.init_scale.max(1.0);
        LossScaler {
            cfg,
            scale,
            clean_steps: 0,
            skipped: 0,
            consecutive_skips: 0,
        }
    }
    pub fn scale(&self) -> f64 {
        self.scale
    }
    pub fn skipped(&self) -> u64 {
        self.skipped
    }
    pub fn consecutive_skips(&self) -> u64 {
        self.consecutive_skips
    }

    /// Feed whether this step's (scaled, all-reduced) gradient was finite.
    pub fn update(&mut self, grads_finite: bool) -> ScaleDecision {
        if grads_finite {
            self.consecutive_skips = 0;
            self.clean_steps += 1;
            if self.cfg.dynamic && self.clean_steps >= self.cfg.growth_interval {
                self.scale *= self.cfg.growth;
                self.clean_steps = 0;
            }
            ScaleDecision::Apply
        } else {
            self.skipped += 1;
            self.consecutive_skips += 1;
            self.clean_steps = 0;
            if self.cfg.dynamic {
                self.scale = (self.scale * self.cfg.backoff).max(1.0);
            }
            ScaleDecision::Skip
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_skips_exactly_one_step_and_halves() {
        let mut s = LossScaler::new(ScalerConfig::fp16());
        assert_eq!(s.scale(), 65536.0);
        assert_eq!(s.update(true), ScaleDecision::Apply);
        assert_eq!(s.update(false), ScaleDecision::Skip);
        assert_eq!(s.scale(), 32768.0);
        assert_eq!(s.skipped(), 1);
        assert_eq!(s.update(true), ScaleDecision::Apply);
        assert_eq!(s.skipped(), 1);
        assert_eq!(s.scale(), 32768.0);
    }

    #[test]
    fn grows_after_interval_clean_steps() {
        let mut s = LossScaler::new(ScalerConfig {
            growth_interval: 3,
            ..ScalerConfig::fp16()
        });
        s.update(true);
        s.update(true);
        assert_eq!(s.scale(), 65536.0);
        s.update(true);
        assert_eq!(s.scale(), 131072.0);
        // an overflow resets the clean-step counter
        s.update(true);
        s.update(false);
        s.update(true);
        s.update(true);
        assert_eq!(s.scale(), 65536.0);
        s.update(true);
        assert_eq!(s.scale(), 131072.0);
    }

    #[test]
    fn never_below_one_and_bf16_is_fixed() {
        let mut s = LossScaler::new(ScalerConfig {
            init_scale: 2.0,
            ..ScalerConfig::fp16()
        });
        for _ in 0..5 {
            s.update(false);
        }
        assert_eq!(s.scale(), 1.0);
        assert_eq!(s.consecutive_skips(), 5);
        let mut b = LossScaler::new(ScalerConfig::bf16());
        assert_eq!(b.update(false), ScaleDecision::Skip);
        assert_eq!(b.scale(), 1.0);
        for _ in 0..5000 {
            b.update(true);
        }
        assert_eq!(b.scale(), 1.0);
    }
}
