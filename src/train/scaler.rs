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

/// A loss-scaler setting out of range: which field, its value and what it must be.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("loss scaler: {field} must be {expected} (got {value})")]
pub struct ScalerConfigError {
    /// `init_scale` (the CLI's `--loss-scale`), `backoff`, `growth` or `growth_interval`.
    pub field: &'static str,
    pub value: f64,
    pub expected: &'static str,
}

impl ScalerConfig {
    /// The fp16 default with initial scale `init_scale` (the CLI's `--loss-scale`), validated.
    pub fn fp16_with_scale(init_scale: f64) -> Result<Self, ScalerConfigError> {
        let c = ScalerConfig {
            init_scale,
            ..Self::fp16()
        };
        c.validate()?;
        Ok(c)
    }

    /// Every field in range: a finite initial scale ≥ 1 (an infinite one can never back off to a
    /// usable value), backoff in (0, 1), finite growth ≥ 1, growth interval ≥ 1.
    pub fn validate(&self) -> Result<(), ScalerConfigError> {
        let err = |field, value, expected| {
            Err(ScalerConfigError {
                field,
                value,
                expected,
            })
        };
        if !(self.init_scale.is_finite() && self.init_scale >= 1.0) {
            return err("init_scale", self.init_scale, "a finite number ≥ 1");
        }
        if !(self.backoff > 0.0 && self.backoff < 1.0) {
            return err("backoff", self.backoff, "in (0, 1)");
        }
        if !(self.growth.is_finite() && self.growth >= 1.0) {
            return err("growth", self.growth, "a finite number ≥ 1");
        }
        if self.growth_interval == 0 {
            return err("growth_interval", 0.0, "at least 1");
        }
        Ok(())
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
    fn out_of_range_settings_are_structured_errors() {
        for bad in [f64::INFINITY, f64::NAN, 0.0, 0.5, -3.0] {
            let e = ScalerConfig::fp16_with_scale(bad).unwrap_err();
            assert_eq!(e.field, "init_scale", "{bad}");
            assert!(e.to_string().contains("finite number ≥ 1"), "{e}");
        }
        assert_eq!(
            ScalerConfig::fp16_with_scale(1024.0).unwrap().init_scale,
            1024.0
        );
        assert!(ScalerConfig::fp16().validate().is_ok());
        assert!(ScalerConfig::bf16().validate().is_ok());
        let e = ScalerConfig {
            backoff: 1.0,
            ..ScalerConfig::fp16()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "backoff");
        let e = ScalerConfig {
            growth_interval: 0,
            ..ScalerConfig::fp16()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "growth_interval");
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
