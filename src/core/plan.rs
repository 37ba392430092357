//! The sweep plan: batch sizes × K trials, metaparameters drawn quasi-randomly.
//!
//! Trial k (0-based) of every batch size uses point k of a 4-dimensional Halton sequence
//! (bases 2, 3, 5, 7 for η, 1−γ, α, T), shifted modulo 1 by a per-dimension offset derived from the
//! sweep seed (a Cranley–Patterson rotation: it keeps the low discrepancy and makes different seeds
//! give different point sets). The learning-rate coordinate is mapped log-uniformly onto the preset's
//! range, re-centred per batch size by the preset's LR rule relative to `base_batch`.
//!
//! The order is k-major — trial 0 of every batch size, then trial 1 of every batch size, … — so a
//! partial sweep already covers the whole curve, and `trial_id` is the position in that order. The
//! plan is a pure function of (preset, batch sizes, K, devices, precision, seed): resume re-derives
//! it, and raising K keeps the ids and metaparameters of the trials already run.

use crate::core::confirm::ConfirmId;
use crate::core::record::Header;
use crate::core::splitmix64;
use crate::core::trial::{DeviceSpec, TrialSpec};
use crate::core::widen::{shift_range, WidenId, REPEAT_ID_BASE};
use crate::workload::spec::{Decay, Metaparams, Precision, Preset, Schedule};

/// The full plan in execution order; `trial_id` = index.
pub fn plan_trials(
    preset: &Preset,
    batch_sizes: &[usize],
    trials_per_batch: usize,
    devices: &DeviceSpec,
    precision: Precision,
    seed: u64,
) -> Vec<TrialSpec> {
    let mut out = Vec::with_capacity(batch_sizes.len() * trials_per_batch);
    for k in 0..trials_per_batch {
        for bi in 0..batch_sizes.len() {
            out.push(trial_at(
                preset,
                batch_sizes,
                k,
                bi,
                devices,
                precision,
                seed,
            ));
        }
    }
    out
}

/// Search trial k (any k ≥ 0, also beyond the plan: `--until` continues the Halton sequence) at
/// batch size `batch_sizes[bi]`: id k·|batch sizes| + bi, the id it would have in a plan with more
/// trials per B. A pure function, so resume can check a logged trial against it.
pub fn trial_at(
    preset: &Preset,
    batch_sizes: &[usize],
    k: usize,
    bi: usize,
    devices: &DeviceSpec,
    precision: Precision,
    seed: u64,
) -> TrialSpec {
    let u = halton_point(k, &rotation(seed));
    let b = batch_sizes[bi];
    let trial_id = (k * batch_sizes.len() + bi) as u64;
    TrialSpec {
        trial_id,
        batch_size: b,
        devices: devices.clone(),
        precision,
        metaparams: metaparams_at(preset, b, u),
        seed: trial_seed(seed, trial_id),
        repeat_of: None,
        confirm: None,
        calibrate: None,
    }
}

/// Re-centred search trial `id` (`--widen`, `crate::core::widen`): point j of a Halton sequence
/// rotated per group, mapped onto the preset's η / 1−γ ranges moved by the group's shift. A pure
/// function of the id, so resume re-derives it. None if the id is not a valid re-centred id for
/// these batch sizes.
pub fn widen_trial(
    preset: &Preset,
    batch_sizes: &[usize],
    id: u64,
    devices: &DeviceSpec,
    precision: Precision,
    seed: u64,
) -> Option<TrialSpec> {
    let w = WidenId::decode(id)?;
    let b = *batch_sizes.get(w.batch_index)?;
    let mut shifted = preset.clone();
    let s = &mut shifted.search;
    s.learning_rate = shift_range(s.learning_rate, w.shift.lr);
    for row in &mut s.learning_rate_at {
        let [lo, hi] = shift_range([row[1], row[2]], w.shift.lr);
        (row[1], row[2]) = (lo, hi);
    }
    s.one_minus_momentum = s.one_minus_momentum.map(|r| shift_range(r, w.shift.omm));
    let group = id - w.j;
    let u = halton_point(w.j as usize, &rotation(seed ^ splitmix64(group)));
    Some(TrialSpec {
        trial_id: id,
        batch_size: b,
        devices: devices.clone(),
        precision,
        metaparams: metaparams_at(&shifted, b, u),
        seed: trial_seed(seed, id),
        repeat_of: None,
        confirm: None,
        calibrate: None,
    })
}

/// Repeat `id` of a search trial: the same batch size and metaparameters, the seed of `id`.
pub fn repeat_of(base: &TrialSpec, id: u64, sweep_seed: u64) -> TrialSpec {
    TrialSpec {
        trial_id: id,
        seed: trial_seed(sweep_seed, id),
        repeat_of: Some(base.trial_id),
        confirm: None,
        ..base.clone()
    }
}

/// Confirm trial `id` (`crate::core::confirm`) of search trial `base`, the configuration
/// of rank `rank` at its B: the same batch size and metaparameters, the fresh seed of `id` (never a
/// search trial's seed: `trial_seed` is a bijection of the id). None if `id` is not a confirm id.
pub fn confirm_trial(base: &TrialSpec, id: u64, sweep_seed: u64) -> Option<TrialSpec> {
    let c = ConfirmId::decode(id)?;
    Some(TrialSpec {
        trial_id: id,
        seed: trial_seed(sweep_seed, id),
        repeat_of: None,
        confirm: Some(crate::core::confirm::ConfirmMark {
            of: base.trial_id,
            rank: c.rank,
            seed: c.seed,
        }),
        ..base.clone()
    })
}

/// Point k of the rotated 4-D Halton sequence, each coordinate in [0, 1).
pub fn halton_point(k: usize, shift: &[f64; 4]) -> [f64; 4] {
    const BASES: [u8; 4] = [2, 3, 5, 7];
    let mut u = [0.0; 4];
    for d in 0..4 {
        // index k+1: halton::number(_, 0) is 0 for every base.
        let x = halton::number(BASES[d], k + 1) + shift[d];
        u[d] = x - x.floor();
    }
    u
}

/// Per-dimension shifts in [0, 1) derived from the sweep seed.
pub fn rotation(seed: u64) -> [f64; 4] {
    let mut s = [0.0; 4];
    let mut state = seed;
    for x in s.iter_mut() {
        state = splitmix64(state);
        *x = (state >> 11) as f64 / (1u64 << 53) as f64;
    }
    s
}

/// Seed of a trial's initialisation and data order.
pub fn trial_seed(sweep_seed: u64, trial_id: u64) -> u64 {
    splitmix64(sweep_seed ^ splitmix64(trial_id.wrapping_add(0x9e37_79b9)))
}

fn log_uniform(range: [f64; 2], u: f64) -> f64 {
    let (lo, hi) = (range[0].ln(), range[1].ln());
    (lo + u * (hi - lo)).exp()
}

/// Maps a point of the unit hypercube to metaparameters at batch size `b`.
pub fn metaparams_at(preset: &Preset, b: usize, u: [f64; 4]) -> Metaparams {
    let s = &preset.search;
    let w = &preset.workload;
    let d = &w.defaults;
    let momentum = match s.one_minus_momentum {
        Some(r) => 1.0 - log_uniform(r, u[1]),
        None => d.momentum,
    };
    let mut learning_rate = log_uniform(s.lr_range_at(b), u[0]);
    if s.effective_lr && w.optimizer.uses_momentum() {
        // the drawn rate is η/(1−γ)
        learning_rate *= 1.0 - momentum;
    }
    // Decay length and warmup fractions are of the trial's own budget at this B:
    // min(step_budget, max_examples/B) — with max_examples = one pass over the data this is Puri
    // et al.'s "decay to zero over the epoch" at every batch size.
    let budget = w.budget_for(b) as f64;
    let decay = match s.decay_alpha {
        Some(alpha_range) => {
            let alpha = log_uniform(alpha_range, u[2]);
            let frac = match s.decay_fraction {
                Some([lo, hi]) => lo + u[3] * (hi - lo),
                None => 1.0,
            };
            Decay::Linear {
                alpha,
                steps: ((frac * budget).round() as u64).max(1),
            }
        }
        None => d.schedule.decay.clone(),
    };
    let warmup_steps = if s.warmup_fraction > 0.0 {
        (s.warmup_fraction * budget).round() as u64
    } else {
        d.schedule.warmup_steps
    };
    // As the optimizer applies them: the record states only what ran (no γ for SGD, …).
    crate::workload::applied::as_applied(
        w,
        &Metaparams {
            learning_rate,
            momentum,
            beta2: d.beta2,
            epsilon: d.epsilon,
            schedule: Schedule {
                warmup_steps,
                decay,
            },
        },
    )
}

/// Rejects search spaces the plan cannot sample (clear message instead of NaN metaparameters).
pub fn validate_search(preset: &Preset) -> anyhow::Result<()> {
    let s = &preset.search;
    let pos_range = |name: &str, r: [f64; 2]| -> anyhow::Result<()> {
        anyhow::ensure!(
            r[0].is_finite() && r[1].is_finite() && r[0] > 0.0 && r[0] <= r[1],
            "search.{name} must be [lo, hi] with 0 < lo <= hi (got [{}, {}])",
            r[0],
            r[1]
        );
        Ok(())
    };
    pos_range("learning_rate", s.learning_rate)?;
    if let Some(r) = s.one_minus_momentum {
        pos_range("one_minus_momentum", r)?;
        anyhow::ensure!(
            r[1] < 1.0,
            "search.one_minus_momentum must stay below 1 (got {})",
            r[1]
        );
    }
    if let Some(r) = s.decay_alpha {
        pos_range("decay_alpha", r)?;
        anyhow::ensure!(
            r[1] <= 1.0,
            "search.decay_alpha must be at most 1 (got {})",
            r[1]
        );
    }
    if let Some([lo, hi]) = s.decay_fraction {
        anyhow::ensure!(
            (0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi) && lo <= hi,
            "search.decay_fraction must be [lo, hi] within [0, 1] (got [{lo}, {hi}])"
        );
    }
    anyhow::ensure!(
        (0.0..1.0).contains(&s.warmup_fraction),
        "search.warmup_fraction must be in [0, 1) (got {})",
        s.warmup_fraction
    );
    anyhow::ensure!(s.base_batch > 0, "search.base_batch must be positive");
    Ok(())
}

/// The spec a run log's header plans for trial `spec.trial_id` (what `--resume` would run under
/// that id): its plan entry, the Halton continuation for `--until` trials beyond the plan, the
/// re-centred draw its id encodes (`--widen`), or, for a repeat, the metaparameters of the trial
/// it re-runs (`base`, as logged) with the repeat's seed, or for a confirm trial the
/// metaparameters of the configuration it confirms (`base`) with its id's fresh seed. None when
/// no plan of this header has such a trial (a repeat or confirm trial whose base is not logged, a
/// re-centred id the header does not allow, a confirm trial of a header without a confirm stage).
/// Which configurations a confirm stage picks (their rank at a B) is checked by `sweep --resume`
/// (it sees the records of every process of the sweep), not here.
pub fn planned_spec(h: &Header, spec: &TrialSpec, base: Option<&TrialSpec>) -> Option<TrialSpec> {
    let devices = crate::core::devices::trial_devices(&h.devices, h.preset.sweep.trials_per_device);
    let precision = h.preset.workload.precision;
    if let Some(base_id) = spec.repeat_of {
        let base = base.filter(|b| b.trial_id == base_id && b.is_search())?;
        return (spec.trial_id >= REPEAT_ID_BASE).then(|| repeat_of(base, spec.trial_id, h.seed));
    }
    if let Some(mark) = spec.confirm {
        // a confirm trial: the configuration it re-runs (`base`, as logged) with the
        // fresh seed of its id, at the batch size its id names
        h.preset.sweep.confirm?;
        let base = base.filter(|b| b.trial_id == mark.of && b.is_search())?;
        let c = ConfirmId::decode(spec.trial_id)?;
        if h.batch_sizes.get(c.batch_index) != Some(&base.batch_size) {
            return None;
        }
        return confirm_trial(base, spec.trial_id, h.seed);
    }
    let n = h.batch_sizes.len() as u64;
    if n == 0 || spec.trial_id >= REPEAT_ID_BASE {
        return None;
    }
    if spec.trial_id >= crate::core::widen::WIDEN_ID_BASE {
        let widen = h.adaptive.as_ref().and_then(|a| a.widen).unwrap_or(0);
        return (widen > 0)
            .then(|| {
                widen_trial(
                    &h.preset,
                    &h.batch_sizes,
                    spec.trial_id,
                    &devices,
                    precision,
                    h.seed,
                )
            })
            .flatten();
    }
    Some(trial_at(
        &h.preset,
        &h.batch_sizes,
        (spec.trial_id / n) as usize,
        (spec.trial_id % n) as usize,
        &devices,
        precision,
        h.seed,
    ))
}

/// Where a logged trial differs from the one its header plans ([`planned_spec`]), in words
/// (`seed 17 here, 4242 in the plan`; at most three fields); None when it is that trial. Floats
/// are compared to 1e-12 (JSON round trips); which of the sweep's GPUs ran a trial is not part
/// of its identity.
pub fn plan_difference(h: &Header, logged: &TrialSpec, base: Option<&TrialSpec>) -> Option<String> {
    let Some(planned) = planned_spec(h, logged, base) else {
        return Some(match (logged.repeat_of, logged.confirm) {
            (Some(b), _) => {
                format!("it repeats trial {b}, which is not a search trial of this log")
            }
            (None, Some(m)) => format!(
                "it confirms trial {} at a batch size or under a confirm stage this header does \
                 not plan",
                m.of
            ),
            (None, None) => "no plan of this header has such a trial".into(),
        });
    };
    let logged = assigned_as_planned(h, &planned, logged);
    let mut diffs = Vec::new();
    json_diffs("", &to_json(&logged), &to_json(&planned), &mut diffs);
    if diffs.is_empty() {
        return None;
    }
    // the trial's identity first (its seed, batch size), then its metaparameters
    diffs.sort_by_key(|d| d.starts_with("metaparams"));
    let more = diffs.len().saturating_sub(3);
    diffs.truncate(3);
    let mut text = diffs.join(", ");
    if more > 0 {
        text.push_str(&format!(" (+{more} more)"));
    }
    Some(text)
}

/// A logged trial with the device it was assigned (one of the sweep's, `trials_per_device`)
/// replaced by the planned one: which device ran a trial is not part of its identity.
fn assigned_as_planned(h: &Header, planned: &TrialSpec, logged: &TrialSpec) -> TrialSpec {
    let mut t = logged.clone();
    if let (Some(all), Some(one), true) = (
        h.devices.gpu_ids(),
        logged.devices.gpu_ids(),
        h.preset.sweep.trials_per_device >= 1,
    ) {
        let same_kind = h.devices.with_gpu_ids(one.to_vec()) == logged.devices;
        if same_kind && one.len() == 1 && all.contains(&one[0]) {
            t.devices = planned.devices.clone();
        }
    }
    t
}

fn to_json<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

/// Equal as JSON, numbers to a relative 1e-12 (what a JSON round trip keeps).
pub fn approx_json_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    let mut d = Vec::new();
    json_diffs("", a, b, &mut d);
    d.is_empty()
}

/// The leaves where `here` and `plan` differ: `path value here, value in the plan`.
fn json_diffs(
    path: &str,
    here: &serde_json::Value,
    plan: &serde_json::Value,
    out: &mut Vec<String>,
) {
    use serde_json::Value as V;
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (here, plan) {
        (V::Number(x), V::Number(y)) => {
            let same = match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                _ => x == y,
            };
            if !same {
                out.push(format!("{path} {x} here, {y} in the plan"));
            }
        }
        (V::Object(x), V::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => json_diffs(&join(k), v, w, out),
                    None => out.push(format!("{} {v} here, none in the plan", join(k))),
                }
            }
            for (k, w) in y {
                if !x.contains_key(k) {
                    out.push(format!("{} none here, {w} in the plan", join(k)));
                }
            }
        }
        (V::Array(x), V::Array(y)) if x.len() == y.len() => {
            for (i, (a, b)) in x.iter().zip(y).enumerate() {
                json_diffs(&format!("{path}[{i}]"), a, b, out);
            }
        }
        _ if here == plan => {}
        _ => out.push(format!("{path} {here} here, {plan} in the plan")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::workload::spec::*;

    pub(crate) fn preset() -> Preset {
        Preset {
            name: "t".into(),
            description: String::new(),
            workload: Workload {
                eval_every: 10,
                step_budget: 1000,
                ..Workload::nqm(100, OptimizerKind::Momentum, 0.1)
            },
            search: SearchSpace {
                learning_rate: [1e-3, 1.0],
                one_minus_momentum: Some([1e-3, 0.5]),
                decay_alpha: Some([1e-3, 0.1]),
                decay_fraction: Some([0.5, 1.0]),
                warmup_fraction: 0.05,
                lr_rule: LrRule::None,
                base_batch: 64,
                learning_rate_at: Vec::new(),
                effective_lr: false,
            },
            sweep: SweepDefaults::default(),
            calibrate: None,
        }
    }

    fn plan(p: &Preset, seed: u64) -> Vec<TrialSpec> {
        plan_trials(
            p,
            &[16, 64, 256],
            5,
            &DeviceSpec::Cpu { workers: 1 },
            Precision::Fp32,
            seed,
        )
    }

    #[test]
    fn deterministic_and_ordered() {
        let p = preset();
        let a = plan(&p, 7);
        assert_eq!(a, plan(&p, 7));
        assert_ne!(a, plan(&p, 8));
        assert_eq!(a.len(), 15);
        for (i, t) in a.iter().enumerate() {
            assert_eq!(t.trial_id, i as u64);
            assert_eq!(t.batch_size, [16, 64, 256][i % 3]);
        }
        // Raising K keeps what was already planned.
        let more = plan_trials(
            &p,
            &[16, 64, 256],
            8,
            &DeviceSpec::Cpu { workers: 1 },
            Precision::Fp32,
            7,
        );
        assert_eq!(&more[..15], &a[..]);
    }

    #[test]
    fn samples_inside_the_search_space() {
        let p = preset();
        let mut lrs = Vec::new();
        for t in plan_trials(
            &p,
            &[32],
            64,
            &DeviceSpec::Cpu { workers: 1 },
            Precision::Fp32,
            3,
        ) {
            let m = &t.metaparams;
            assert!((1e-3..=1.0).contains(&m.learning_rate));
            assert!((0.5..=0.999).contains(&m.momentum));
            assert_eq!(m.schedule.warmup_steps, 50);
            match m.schedule.decay {
                Decay::Linear { alpha, steps } => {
                    assert!((1e-3..=0.1).contains(&alpha));
                    assert!((500..=1000).contains(&steps));
                }
                _ => panic!("expected linear decay"),
            }
            lrs.push(m.learning_rate.log10());
        }
        // Low discrepancy: every decade of [1e-3, 1] gets roughly a third of 64 points.
        for dec in [-3.0, -2.0, -1.0] {
            let n = lrs.iter().filter(|&&x| x >= dec && x < dec + 1.0).count();
            assert!((19..=24).contains(&n), "decade {dec}: {n} points");
        }
    }

    #[test]
    fn lr_rule_centres_the_range() {
        let mut p = preset();
        p.search.lr_rule = LrRule::Linear;
        let t = plan_trials(
            &p,
            &[64, 256],
            1,
            &DeviceSpec::Cpu { workers: 1 },
            Precision::Fp32,
            1,
        );
        let r = t[1].metaparams.learning_rate / t[0].metaparams.learning_rate;
        assert!((r - 4.0).abs() < 1e-9, "ratio {r}");
        assert_eq!(p.search.lr_range_at(256), [4e-3, 4.0]);
        p.search.lr_rule = LrRule::Sqrt;
        assert_eq!(p.search.lr_range_at(256), [2e-3, 2.0]);
    }

    #[test]
    fn rejects_bad_ranges() {
        let mut p = preset();
        p.search.learning_rate = [0.0, 1.0];
        assert!(validate_search(&p)
            .unwrap_err()
            .to_string()
            .contains("learning_rate"));
        let mut p = preset();
        p.search.one_minus_momentum = Some([0.1, 1.5]);
        assert!(validate_search(&p).is_err());
    }

    /// A confirm trial keeps its configuration's batch size and metaparameters, carries its
    /// marker, and its seed is never a search trial's (nor another confirm trial's) seed.
    #[test]
    fn confirm_seeds_never_coincide_with_search_seeds() {
        let p = preset();
        for sweep_seed in [0u64, 1, 42, u64::MAX] {
            let search = plan(&p, sweep_seed);
            let mut seeds: std::collections::HashSet<u64> = search.iter().map(|t| t.seed).collect();
            // the ids --until may give search trials beyond the plan, too
            for id in 15..5_000u64 {
                seeds.insert(trial_seed(sweep_seed, id));
            }
            let n = seeds.len();
            for (bi, base) in search.iter().take(3).enumerate() {
                for rank in 0..3u32 {
                    for seed in 0..5u32 {
                        let id = ConfirmId::id(bi, rank, seed).unwrap();
                        let c = confirm_trial(base, id, sweep_seed).unwrap();
                        assert_eq!(c.metaparams, base.metaparams);
                        assert_eq!(c.batch_size, base.batch_size);
                        assert!(!c.is_search() && c.repeat_of.is_none());
                        let m = c.confirm.unwrap();
                        assert_eq!((m.of, m.rank, m.seed), (base.trial_id, rank, seed));
                        assert!(seeds.insert(c.seed), "seed of confirm trial {id} repeats");
                    }
                }
            }
            assert_eq!(seeds.len(), n + 3 * 3 * 5);
        }
        assert!(confirm_trial(&plan(&p, 0)[0], 17, 0).is_none());
    }
}
