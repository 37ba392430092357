//! What a workload's optimizer and runner actually use (a setting either takes effect or
//! is an error naming it; a trial's record states only what ran).
//!
//! * SGD keeps no momentum buffer: its update is the momentum update with γ = 0, so a trial
//!   record says `momentum: 0`, never the preset's default 0.9.
//! * β2 and ε exist only in Adam on a real model (the NQM's "adam" is a fixed preconditioner with
//!   momentum β1): elsewhere a record says `beta2: 0, epsilon: 0` ("no such parameter").
//! * The NQM is closed form in f64: no data, no seed, no precision, no gradient clipping, no
//!   workers; `precondition_power` only shapes its "adam".
//!
//! [`as_applied`] is the normalisation every trial spec goes through (the plan, `train`, and the
//! run-log reader for logs written before it); [`unused`] says why a setting has no effect, for
//! the preset checks (`load`) and the flags (`overrides`, the CLI).

use crate::workload::spec::{Metaparams, OptimizerKind, Workload};

/// Whether the optimizer keeps a momentum (β1 for Adam) buffer.
pub fn uses_momentum(w: &Workload) -> bool {
    w.optimizer != OptimizerKind::Sgd
}

/// Whether the optimizer has Adam's second moment (β2) and ε.
pub fn uses_second_moment(w: &Workload) -> bool {
    w.optimizer == OptimizerKind::Adam && !w.closed_form()
}

/// `mp` as the optimizer of `w` applies it: γ = 0 for SGD, β2 = ε = 0 where there is no second
/// moment. Idempotent; the identity for settings the optimizer uses.
pub fn as_applied(w: &Workload, mp: &Metaparams) -> Metaparams {
    let mut m = mp.clone();
    if !uses_momentum(w) {
        m.momentum = 0.0;
    }
    if !uses_second_moment(w) {
        m.beta2 = 0.0;
        m.epsilon = 0.0;
    }
    m
}

/// A setting that can be given (a preset key or a flag) but only applies to some workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// γ (β1 for Adam): `defaults.momentum`, `--momentum`.
    Momentum,
    /// `search.one_minus_momentum`.
    OneMinusMomentum,
    /// Adam's β2 / ε: `defaults.beta2`, `defaults.epsilon`.
    Beta2,
    Epsilon,
    /// A precision other than fp32.
    LowPrecision,
    GradClip,
    /// The seed of one `train` trial (initialisation and data order).
    TrainSeed,
    /// More than one data-parallel worker/device.
    Workers,
    /// Skipping the gradient-noise-scale estimate.
    NoNoiseScale,
    /// `model.precondition_power` (the NQM's "adam" preconditioner).
    PreconditionPower,
    /// `dataset.max_bytes`, `dataset.seq_len`: text datasets only.
    MaxBytes,
    SeqLen,
}

/// Why `s` has no effect on workload `w` (None: it takes effect).
pub fn unused(w: &Workload, s: Setting) -> Option<String> {
    let opt = w.optimizer.name();
    let closed = w.closed_form();
    let closed_form =
        "the noisy quadratic model is closed form (its expected loss is computed in f64)";
    match s {
        Setting::Momentum | Setting::OneMinusMomentum if !uses_momentum(w) => Some(format!(
            "optimizer {opt} has no momentum (plain SGD is γ = 0): use a momentum, nesterov or \
             adam preset"
        )),
        Setting::Beta2 | Setting::Epsilon if !uses_second_moment(w) => Some(if closed {
            format!("the noisy quadratic model's {opt} is a fixed preconditioner with momentum: it has no β2 or ε")
        } else {
            format!("optimizer {opt} has no second moment: β2 and ε are Adam's")
        }),
        Setting::LowPrecision if closed => Some(format!("{closed_form}: it has no precision")),
        Setting::GradClip if closed => Some(format!("{closed_form}: it has no gradients to clip")),
        Setting::TrainSeed if closed => {
            Some(format!("{closed_form}: a trial is the same for every seed"))
        }
        Setting::Workers if closed => Some(format!(
            "{closed_form}: data-parallel workers do not change it (B is the global batch)"
        )),
        Setting::NoNoiseScale if closed => {
            Some(format!("{closed_form}: its noise scale is exact and free"))
        }
        Setting::PreconditionPower if !(closed && w.optimizer == OptimizerKind::Adam) => {
            Some(format!(
                "precondition_power shapes the noisy quadratic model's adam only (this is {opt})"
            ))
        }
        Setting::MaxBytes | Setting::SeqLen => {
            let images = w.dataset.as_ref().and_then(|d| d.is_images())?;
            images.then(|| {
                "applies to text datasets (shakespeare, reviews) only: image examples are whole \
                 images"
                    .to_string()
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nqm(opt: OptimizerKind) -> Workload {
        Workload::nqm(4, opt, 0.1)
    }

    fn bundled(name: &str) -> Workload {
        let (_, text) = crate::workload::presets::EMBEDDED_PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap();
        crate::workload::load::parse_preset(std::path::Path::new(name), text)
            .unwrap()
            .workload
    }

    #[test]
    fn sgd_records_no_momentum_and_only_adam_has_a_second_moment() {
        let mp = Metaparams::new(0.1, 0.9);
        let mut w = bundled("digits-mlp-sgd");
        for (opt, momentum, beta2) in [
            (OptimizerKind::Sgd, 0.0, 0.0),
            (OptimizerKind::Momentum, 0.9, 0.0),
            (OptimizerKind::Nesterov, 0.9, 0.0),
            (OptimizerKind::Adam, 0.9, 0.999),
        ] {
            w.optimizer = opt;
            let a = as_applied(&w, &mp);
            assert_eq!((a.momentum, a.beta2), (momentum, beta2), "{opt:?}");
            assert_eq!(a.epsilon > 0.0, beta2 > 0.0);
            assert_eq!(as_applied(&w, &a), a, "idempotent");
            assert_eq!(a.learning_rate, 0.1);
        }
        // The NQM's adam uses β1 only.
        let a = as_applied(&nqm(OptimizerKind::Adam), &mp);
        assert_eq!((a.momentum, a.beta2, a.epsilon), (0.9, 0.0, 0.0));
    }

    #[test]
    fn settings_without_effect_say_why() {
        let sgd = nqm(OptimizerKind::Sgd);
        assert!(unused(&sgd, Setting::Momentum)
            .unwrap()
            .contains("no momentum"));
        assert!(unused(&sgd, Setting::TrainSeed).is_some());
        assert!(unused(&sgd, Setting::PreconditionPower).is_some());
        assert!(unused(&nqm(OptimizerKind::Adam), Setting::PreconditionPower).is_none());
        assert!(unused(&nqm(OptimizerKind::Momentum), Setting::Momentum).is_none());
        let digits = bundled("digits-mlp-sgd");
        assert!(unused(&digits, Setting::TrainSeed).is_none());
        assert!(unused(&digits, Setting::LowPrecision).is_none());
        assert!(unused(&digits, Setting::MaxBytes).is_some());
        assert!(
            unused(&sgd, Setting::MaxBytes).is_none(),
            "no dataset: nothing to say"
        );
    }
}
