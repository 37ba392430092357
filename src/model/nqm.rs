//! The noisy quadratic model's spec (Zhang et al. 2019): d dimensions, curvature h_i = 1/i. It is
//! a family of `[workload.model]` without a network: the closed-form model runs in `crate::nqm`.

use serde::{Deserialize, Serialize};

use super::family::{Family, Input, ModelSpec, Registration};
use super::knob::{self, Knob};
use super::InputShape;

pub static FAMILY: Registration = Registration {
    kind: "nqm",
    label: "noisy quadratic model (Zhang et al., closed form)",
    input: Input::None,
    default: || ModelSpec::Nqm(NqmSpec::new(1000)),
    fits: |_| Ok(()),
    tiny: || {
        let no_data = InputShape::images(0, 0, 0, 0);
        (ModelSpec::Nqm(NqmSpec::new(10)), no_data)
    },
};

/// `kind = "nqm"`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NqmSpec {
    pub dim: usize,
    /// Preconditioning power p used by the "adam" optimizer (P = H^-p).
    #[serde(default = "default_precondition")]
    pub precondition_power: f64,
}

fn default_precondition() -> f64 {
    0.5
}

impl NqmSpec {
    /// d dimensions, p = 0.5.
    pub fn new(dim: usize) -> Self {
        NqmSpec {
            dim,
            precondition_power: default_precondition(),
        }
    }
    /// Values of state a trial keeps (the mean, its variance and the two optimizer slots per
    /// dimension): what the memory check counts.
    pub fn state_values(&self) -> f64 {
        4.0 * self.dim as f64
    }
}

impl Family for NqmSpec {
    fn registration(&self) -> &'static Registration {
        &FAMILY
    }
    fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.dim == 0 {
            out.push(("dim", "dim must be > 0".to_string()));
        }
        let p = self.precondition_power;
        if !(0.0..=1.0).contains(&p) {
            out.push((
                "precondition_power",
                format!("precondition_power {p} must be in [0, 1]"),
            ));
        }
        out
    }
    fn label(&self) -> String {
        format!("nqm d={}", self.dim)
    }
    fn size_key(&self) -> &'static str {
        "dim"
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::new(
                "dim",
                "dimensions (curvature 1/i along the i-th)",
                self.dim.to_string(),
            ),
            Knob::new(
                "precondition_power",
                "p of the preconditioner H^-p that Adam's update uses, in [0, 1]",
                self.precondition_power.to_string(),
            ),
        ]
    }
    fn set_knob(&mut self, key: &str, text: &str) -> Result<(), String> {
        match key {
            "dim" => self.dim = knob::count(key, text)?,
            "precondition_power" => self.precondition_power = knob::real(key, text)?,
            _ => return Err(knob::unknown(FAMILY.kind, key, &self.knobs())),
        }
        Ok(())
    }
}
