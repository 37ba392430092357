//! The confirmed S(B) and its interval (docs/intervals.md, docs/science.md §10).
//!
//! After the search at a batch size, its best k configurations re-run with r fresh seeds each
//! (seeds that played no part in choosing them). Per configuration c the **seed median** m̂_c is
//! the median of its r steps-to-target, a seed that did not reach (diverged, out of memory, or ran
//! its whole budget) counting as +∞ — larger than any seed that reached, since every trial at a B
//! has the same budget; with an even count the median is the geometric mean of the two middle
//! values, and it is "not reached" when half or more of the seeds did not reach. The **confirmed
//! S(B)** is θ̂ = min_c m̂_c, the seed median of the configuration with the best seed median (ties →
//! the better search rank).
//!
//! **Interval.** Choosing the configuration with the lowest median among k biases θ̂ low (the
//! winner's curse again, now among k). Write ln m̂_c = ln m_c + e_c (m_c the true median of c,
//! e_c its sampling error). For the chosen ĉ, ln θ̂ − ln m_ĉ = e_ĉ ≥ min_c e_c, and also
//! ln θ̂ − ln min_c m_c ≥ min_c e_c; and a chosen configuration's error is not pushed upward by
//! being chosen. So with q_hi the 97.5 % quantile of one configuration's error and q_lo the 2.5 %
//! quantile of the minimum of the k errors,
//!
//! ```text
//!     [θ̂·e^(−q_hi), θ̂·e^(−q_lo)]
//! ```
//!
//! covers both the true median of the chosen configuration and that of the best of the k (the
//! upper end is the selection-aware one: it holds whatever the true medians are, ties included,
//! where a bootstrap that repeats the choice under-covers). The errors' distribution comes from a
//! location-scale model of ln steps shared by the configurations at a B: Normal seed noise with
//! the pooled within-configuration variance σ̂² (ν = Σ(n_c − 1) degrees of freedom, σ drawn as
//! σ̂·√(ν/χ²_ν) so its own uncertainty is carried; every simulated seed and true median put on the
//! evaluation grid — spacing Δ in ln steps, at a random phase per draw — as the trainer sees them:
//! at the first evaluation at or after the target is met; a Δ²/12 variance term instead
//! under-covered at 20 seeds, where the grid's discreteness outweighs the seed noise),
//! and per configuration a probability of not reaching drawn from its posterior Beta(f + 2p̄,
//! n − f + 2(1 − p̄)) — its own f failures of n seeds on a prior worth two seeds centred on the
//! pooled rate p̄ = (F + ½)/(N + 1) of all the B's confirm seeds. Each Monte Carlo draw simulates every configuration's n_c seeds, its
//! sample median and its true median (with failures: σ·Φ⁻¹(½/(1−p))), so failures widen the
//! interval and can leave its upper end unbounded. The width scales as σ/√r. Deterministic: the
//! draws are seeded per B. Coverage on synthetic trials: `confirm/tests.rs`, docs/intervals.md.

use std::collections::BTreeMap;

use super::bootstrap::Rng;
use super::stats::{median, quantile_sorted};
use super::steps::{Observation, Observed};
use crate::core::analysis::{BatchPoint, Confirmed, ConfirmedConfig, StepsInterval, Study};
use crate::core::record::TrialRecord;

/// Monte Carlo draws of the interval.
pub const CONFIRM_DRAWS: usize = 2000;
/// The weight, in seeds, of the prior on a configuration's probability of not reaching (centred
/// on the pooled rate of its B's confirm seeds).
pub const PRIOR_SEEDS: f64 = 2.0;

/// One confirmed configuration's seeds as the interval reads them.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ConfigSeeds {
    /// Steps-to-target of the seeds that reached.
    pub steps: Vec<f64>,
    /// Seeds that did not reach (diverged, out of memory, ran the whole budget).
    pub failed: usize,
    /// Seeds censored at their block's quorum (`core::confirm::BLOCK_QUORUM`): each is "≥ c",
    /// c the step given.
    pub censored: Vec<f64>,
    /// The block size r of the censoring (0: none) and the complete blocks among the seeds.
    pub block: usize,
    pub blocks: usize,
}

impl ConfigSeeds {
    /// Seeds in all (cancelled ones are not seeds).
    pub fn runs(&self) -> usize {
        self.steps.len() + self.failed + self.censored.len()
    }

    /// The seed median (None: not reached — half or more of the seeds did not reach, or none ran).
    pub fn median(&self) -> Option<f64> {
        let mut v = self.steps.clone();
        v.sort_by(f64::total_cmp);
        median_with_failures(&v, self.runs())
    }
}

/// The median of `n` values of which the sorted `reached` are finite and the rest +∞ (None: the
/// median is +∞, or n = 0). An even count takes the geometric mean of the two middle values.
fn median_with_failures(reached: &[f64], n: usize) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let at = |i: usize| reached.get(i).copied();
    if n % 2 == 1 {
        at(n / 2)
    } else {
        Some((0.5 * (at(n / 2 - 1)?.ln() + at(n / 2)?.ln())).exp())
    }
}

/// The chosen configuration: the lowest finite seed median, ties to the lower index (the better
/// search rank when `configs` is in rank order).
pub fn choose(configs: &[ConfigSeeds]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, c) in configs.iter().enumerate() {
        if let Some(m) = c.median() {
            if best.is_none_or(|(_, b)| m < b) {
                best = Some((i, m));
            }
        }
    }
    best.map(|b| b.0)
}

/// The pooled within-configuration standard deviation of ln steps (reached seeds only) and its
/// degrees of freedom.
pub fn pooled_sd(configs: &[ConfigSeeds]) -> Option<(f64, usize)> {
    let (mut ss, mut nu) = (0.0, 0usize);
    for c in configs {
        if c.steps.len() < 2 {
            continue;
        }
        let y: Vec<f64> = c.steps.iter().map(|s| s.max(1.0).ln()).collect();
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        ss += y.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
        nu += y.len() - 1;
    }
    (nu > 0).then(|| ((ss / nu as f64).sqrt(), nu))
}

/// The interval of a confirmed S(B).
#[derive(Clone, Debug, PartialEq)]
pub struct ConfirmInterval {
    /// θ̂: the chosen configuration's seed median.
    pub point: f64,
    pub lo: f64,
    /// None: unbounded above (the chosen configuration may not reach the target half the time).
    pub hi: Option<f64>,
    /// Draws of ln S for the fit's refits: ln θ̂ − T with T the chosen configuration's error when
    /// it is positive, else the minimum error of the k (so their quantiles are near the interval's).
    pub draws: Vec<f64>,
}

impl ConfirmInterval {
    /// Relative half-width (hi − lo)/2/θ̂ (None: unbounded).
    pub fn rel_half_width(&self) -> Option<f64> {
        self.hi.map(|h| (h - self.lo) / 2.0 / self.point)
    }
}

/// The interval for the confirmed S(B) of `configs` (see the module documentation), from
/// `draws` Monte Carlo draws seeded by `seed`. `resolution`: the spacing of the evaluation grid
/// near the chosen median, in ln steps (0: exact steps). None without a finite seed median or
/// without a seed-to-seed spread to estimate (no configuration with two seeds that reached).
pub fn interval(
    configs: &[ConfigSeeds],
    resolution: f64,
    draws: usize,
    seed: u64,
) -> Option<ConfirmInterval> {
    // A pure function of its arguments, asked again and again for the same seeds (every --until
    // wave, the sweep's summary, its report, the TUI): the answers are kept, keyed by every bit
    // of the arguments (a key that differs in any value computes anew).
    use std::collections::HashMap;
    use std::sync::Mutex;
    static KEPT: Mutex<Option<HashMap<Vec<u64>, Option<ConfirmInterval>>>> = Mutex::new(None);
    const KEEP: usize = 1024;
    let mut key = vec![
        resolution.to_bits(),
        draws as u64,
        seed,
        configs.len() as u64,
    ];
    for c in configs {
        key.extend(
            [c.failed, c.block, c.blocks, c.steps.len(), c.censored.len()].map(|v| v as u64),
        );
        key.extend(c.steps.iter().chain(&c.censored).map(|v| v.to_bits()));
    }
    let lock = || KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(got) = lock().as_ref().and_then(|m| m.get(&key)) {
        return got.clone();
    }
    let got = interval_of(configs, resolution, draws, seed);
    let mut kept = lock();
    let map = kept.get_or_insert_with(HashMap::new);
    if map.len() >= KEEP {
        map.clear();
    }
    map.insert(key, got.clone());
    got
}

fn interval_of(
    configs: &[ConfigSeeds],
    resolution: f64,
    draws: usize,
    seed: u64,
) -> Option<ConfirmInterval> {
    let chosen = choose(configs)?;
    let point = configs[chosen].median()?;
    let (sd, nu) = seed_sd(configs)?;
    // the observed spread already holds the grid's jitter; the grid itself is simulated below
    let sigma_hat = sd;
    let mut single = Vec::with_capacity(draws);
    let mut least = Vec::with_capacity(draws);
    let mut pairs = Vec::with_capacity(draws);
    let mut seeds_buf: Vec<f64> = Vec::new();
    // each configuration's probability of not reaching: its own seeds on a prior worth two seeds
    // centred on the B's pooled rate (Jeffreys' ½ added), so that a configuration with no failure
    // among five seeds is not given the ~8 % its own Jeffreys posterior would
    let runs: usize = configs.iter().map(ConfigSeeds::runs).sum();
    let fails: usize = configs.iter().map(|c| c.failed).sum();
    let pooled = (fails as f64 + 0.5) / (runs as f64 + 1.0);
    let (a0, b0) = (PRIOR_SEEDS * pooled, PRIOR_SEEDS * (1.0 - pooled));
    for d in 0..draws {
        let mut rng = Rng::new(crate::core::splitmix64(seed ^ ((d as u64) << 1)));
        let sigma = sigma_hat * (nu as f64 / chi_square(&mut rng, nu as f64)).sqrt();
        // the evaluation grid: a seed is seen at the first evaluation at or after it meets the
        // target, so every step count (and the true median the interval is for) sits on a grid
        // of spacing `resolution` in ln steps, at a phase this draw picks
        let phase = unit(&mut rng);
        let on_grid = |x: f64| {
            if resolution > 0.0 && x.is_finite() {
                resolution * ((x / resolution - phase).ceil() + phase)
            } else {
                x
            }
        };
        let (mut e_chosen, mut e_min) = (None, f64::INFINITY);
        for (i, c) in configs.iter().enumerate() {
            let n = c.runs();
            if n == 0 {
                continue;
            }
            let p = beta(&mut rng, c.failed as f64 + a0, c.steps.len() as f64 + b0);
            seeds_buf.clear();
            // complete blocks first (each censored at its quorum, as the sweep does), then the
            // seeds outside one
            let need = crate::core::confirm::block_need(c.block);
            let in_blocks = if need < c.block {
                c.blocks * c.block
            } else {
                0
            };
            let mut j = 0;
            while j < n {
                let len = if j < in_blocks { c.block } else { n - j };
                let start = seeds_buf.len();
                for _ in 0..len {
                    if unit(&mut rng) >= p {
                        seeds_buf.push(on_grid(sigma * normal(&mut rng)));
                    }
                }
                if j < in_blocks {
                    let block = &mut seeds_buf[start..];
                    block.sort_by(f64::total_cmp);
                    if block.len() >= need {
                        let cut = block[need - 1];
                        let keep = block.iter().filter(|&&v| v <= cut).count();
                        seeds_buf.truncate(start + keep);
                    }
                }
                j += len;
            }
            seeds_buf.sort_by(f64::total_cmp);
            // medians in ln space (the shift by ln m_c cancels in the error)
            let Some(sample) = median_ln(&seeds_buf, n) else {
                continue; // not a measurement in this draw: no error to take
            };
            let truth = if p < 0.5 {
                on_grid(sigma * inverse_normal(0.5 / (1.0 - p)))
            } else {
                f64::INFINITY
            };
            if truth.is_infinite() && i != chosen {
                // a rival that does not reach half the time in this draw is neither the best
                // configuration nor the one chosen (the chosen one is the observed `chosen`): it
                // bounds nothing
                continue;
            }
            let e = sample - truth;
            e_min = e_min.min(e);
            if i == chosen {
                e_chosen = Some(e);
            }
        }
        if let Some(e) = e_chosen {
            single.push(e);
            pairs.push(if e > 0.0 { e } else { e_min });
        }
        if e_min < f64::INFINITY {
            least.push(e_min);
        }
    }
    if single.is_empty() || least.is_empty() {
        return None;
    }
    single.sort_by(f64::total_cmp);
    least.sort_by(f64::total_cmp);
    let q_hi = quantile_sorted(&single, 0.975);
    let q_lo = quantile_sorted(&least, 0.025);
    let lo = point * (-q_hi).exp();
    let hi = q_lo.is_finite().then(|| point * (-q_lo).exp());
    let ln_point = point.ln();
    Some(ConfirmInterval {
        point,
        lo: lo.min(point),
        hi: hi.map(|h| h.max(point)),
        draws: pairs.into_iter().map(|t| ln_point - t).collect(),
    })
}

/// The configurations the confirm stage re-runs at batch size `b`, best first, at most `k`: the
/// search trials there that reached the sweep's goal (fewest steps, ties to the lower id), then
/// those early stopping cut before they could (they had not reached by their B's best step
/// count: a fused group cuts every member at the first member's reach), by their validation
/// metric at the cut (closest to the target first, ties to the lower id). Diverged trials and
/// trials that ran out their budget are not candidates, nor are repeats and confirm trials; a
/// pure function of the records (resume and every array task derive the same ranking).
pub fn top_configs(trials: &[TrialRecord], b: usize, k: usize) -> Vec<&TrialRecord> {
    let mut v: Vec<(Rank, &TrialRecord)> = super::per_batch::dedup_trials(trials)
        .into_iter()
        .filter(|t| t.spec.batch_size == b && t.spec.is_search())
        .filter_map(|t| rank(t).map(|r| (r, t)))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.trial_id.cmp(&b.1.trial_id)));
    v.into_iter().take(k).map(|x| x.1).collect()
}

/// Where a search trial stands among the confirm stage's candidates (None: not one).
enum Rank {
    Reached(u64),
    Cut(f64),
}

impl PartialEq for Rank {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Rank {}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        match (self, other) {
            (Rank::Reached(a), Rank::Reached(b)) => a.cmp(b),
            (Rank::Cut(a), Rank::Cut(b)) => a.total_cmp(b),
            (Rank::Reached(_), Rank::Cut(_)) => Less,
            (Rank::Cut(_), Rank::Reached(_)) => Greater,
        }
    }
}

fn rank(t: &TrialRecord) -> Option<Rank> {
    if let Some(s) = t.outcome.outcome.steps_to_target() {
        return Some(Rank::Reached(s));
    }
    match t.outcome.outcome {
        crate::core::trial::Outcome::NotReached {
            early_stopped: true,
            ..
        } => t
            .outcome
            .evals
            .last()
            .map(|e| e.metric)
            .filter(|m| m.is_finite())
            .map(Rank::Cut),
        _ => None,
    }
}

/// The per-B seed of the confirm interval's draws (the same records give the same interval).
pub fn confirm_seed(batch_size: usize) -> u64 {
    crate::core::splitmix64(0xc0f1_4242_u64 ^ batch_size as u64)
}

/// Search trials at `b` the confirm stage can choose from ([`top_configs`]' candidates).
fn reached_goal(observed: &Observed, b: usize) -> usize {
    observed
        .search
        .get(&b)
        .map_or(0, |v| v.iter().filter(|(t, _)| rank(t).is_some()).count())
}

/// The spacing of the evaluation grid where a seed met the target: ln(step / the evaluation
/// before it).
fn grid_spacing(t: &TrialRecord, step: u64) -> Option<f64> {
    let i = t.outcome.evals.iter().position(|e| e.step == step)?;
    let prev = t.outcome.evals.get(i.checked_sub(1)?)?.step;
    (prev > 0 && step > prev).then(|| (step as f64 / prev as f64).ln())
}

/// Sets `confirmed` at every batch size of `per_batch` that has confirm trials, read at the same
/// reading as `observed`, and returns each such B's ln S draws for the fit's refits (B with a
/// confirmed value only). `study.confirm` says what a complete stage holds.
pub(crate) fn attach(
    observed: &Observed,
    per_batch: &mut [BatchPoint],
    study: &Study,
) -> BTreeMap<usize, Vec<f64>> {
    use rayon::prelude::*;
    // each B on its own (its Monte Carlo draws from its own seed, `confirm_seed`): in parallel
    let done: Vec<Option<(Confirmed, Option<Vec<f64>>)>> = per_batch
        .par_iter()
        .map(|p| {
            let b = p.batch_size;
            let ts = observed.confirm.get(&b)?;
            Some(confirmed_at(observed, b, ts, study))
        })
        .collect();
    let mut draws = BTreeMap::new();
    for (p, got) in per_batch.iter_mut().zip(done) {
        let Some((c, d)) = got else {
            continue;
        };
        if let Some(d) = d {
            draws.insert(p.batch_size, d);
        }
        p.confirmed = Some(c);
    }
    draws
}

fn confirmed_at(
    observed: &Observed,
    b: usize,
    ts: &[(&TrialRecord, Observation)],
    study: &Study,
) -> (Confirmed, Option<Vec<f64>>) {
    // configurations by (rank, search trial), each with its seeds
    let mut by: BTreeMap<(u32, u64), Vec<(&TrialRecord, Observation)>> = BTreeMap::new();
    for &(t, o) in ts {
        if let Some(m) = t.spec.confirm {
            by.entry((m.rank, m.of)).or_default().push((t, o));
        }
    }
    // a target stricter than the goal: the seeds that reached stopped at the goal (a seed cut at
    // its block's quorum is censored at every reading, and says nothing of this)
    let not_measured = ts.iter().any(|(_, o)| {
        matches!(
            o,
            Observation::Censored {
                early_stopped: false,
                ..
            }
        )
    });
    let r = study.confirm.map(|p| p.seeds);
    let search_obs = |id: u64| {
        observed
            .search
            .get(&b)
            .and_then(|v| v.iter().find(|(t, _)| t.trial_id == id))
            .and_then(|(_, o)| o.steps())
    };
    let mut seeds = Vec::new();
    let mut configs = Vec::new();
    for (&(rank, of), runs) in &by {
        let cs = config_seeds(runs, r);
        let mp = &runs[0].0.spec.metaparams;
        let reached: Vec<u64> = cs.steps.iter().map(|&s| s as u64).collect();
        configs.push(ConfirmedConfig {
            trial: of,
            rank,
            search_steps: search_obs(of),
            runs: cs.runs(),
            reached: cs.steps.len(),
            failed: cs.failed,
            censored: cs.censored.len(),
            median: cs.median(),
            min: reached.iter().min().copied(),
            max: reached.iter().max().copied(),
            learning_rate: mp.learning_rate,
            momentum: super::per_batch::optimizer_momentum(study.optimizer, mp.momentum),
            effective_lr: mp.effective_lr(study.optimizer),
        });
        seeds.push(cs);
    }
    let complete = match study.confirm {
        Some(plan) => {
            let want = plan.configs.min(reached_goal(observed, b));
            let full = |n: usize| n >= plan.seeds;
            configs.len() >= want && by.values().take(want).all(|v| full(v.len()))
        }
        None => true,
    };
    let seed_sd = self::seed_sd(&seeds).map(|x| x.0);
    let mut c = Confirmed {
        steps: None,
        steps_ci: None,
        chosen: None,
        configs,
        seed_sd,
        complete,
        not_measured,
    };
    if not_measured {
        return (c, None);
    }
    let Some(i) = choose(&seeds) else {
        return (c, None);
    };
    let chosen_runs = by.values().nth(i).map(Vec::as_slice).unwrap_or_default();
    // the grid where the chosen configuration's kept seeds met the target (not a censored seed's
    // later reach: the same seeds whether or not the trainer cut it)
    let kept_max = seeds[i].steps.iter().copied().fold(0.0, f64::max);
    let spacing: Vec<f64> = chosen_runs
        .iter()
        .filter_map(|(t, o)| {
            let s = o.steps()?;
            ((s as f64) <= kept_max)
                .then(|| grid_spacing(t, s))
                .flatten()
        })
        .collect();
    let resolution = median(spacing).unwrap_or(0.0);
    let point = seeds[i].median().unwrap_or(f64::NAN);
    c.chosen = Some(c.configs[i].trial);
    c.steps = Some(point.round().max(1.0) as u64);
    let iv = interval(&seeds, resolution, CONFIRM_DRAWS, confirm_seed(b));
    if let Some(iv) = &iv {
        c.steps_ci = Some(StepsInterval {
            lo: (iv.lo * (1.0 + 1e-9)).floor() as u64,
            hi: iv.hi.map(|h| (h * (1.0 - 1e-9)).ceil() as u64),
        });
    }
    let draws = iv
        .map(|iv| iv.draws)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| vec![point.max(1.0).ln(); super::BOOTSTRAP_DRAWS]);
    (c, Some(draws))
}

/// What `--until REL` does next at a B with a confirm stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConfirmStep {
    /// One more fresh seed for every confirmed configuration (k trials).
    SeedRound,
    /// Confirm the next configuration of the search (rank `rank`) with the plan's r seeds: no
    /// confirmed configuration's median reached the target, or the interval is unbounded above.
    NextConfig { rank: u32 },
}

/// The expected effect of the next `--until` step at a B.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConfirmOutlook {
    pub batch_size: usize,
    pub step: ConfirmStep,
    /// Trials the step costs.
    pub trials: usize,
    /// Seeds per configuration now (the chosen configuration's).
    pub seeds: usize,
    /// The relative half-width now (None: unbounded or no interval).
    pub now: Option<f64>,
    /// Its expected value after the step (None: no estimate; NaN: it may become bounded).
    pub after: Option<f64>,
}

impl ConfirmOutlook {
    /// Expected narrowing of the relative half-width per trial the step costs (an unbounded
    /// interval that the step may bound counts as a narrowing of 1).
    pub fn narrowing_per_trial(&self) -> f64 {
        let d = match (self.now, self.after) {
            (Some(n), Some(a)) if a.is_finite() => n - a,
            (None, Some(_)) => 1.0,
            _ => 0.0,
        };
        d / self.trials.max(1) as f64
    }

    /// Seed rounds to ±`rel` at the 1/√r rate (None: no interval to extrapolate).
    pub fn rounds_to(&self, rel: f64) -> Option<f64> {
        let w = self.now?;
        let r = self.seeds.max(1) as f64;
        Some(((w / rel).powi(2) * r - r).max(0.0).ceil())
    }

    /// Seeds per configuration for the next `--until` step towards ±`rel`: the seeds the 1/√r
    /// rate says ±`rel` takes, at least one and at most twice as many as the configuration has
    /// (the width and σ it is extrapolated from are themselves estimates; the step after
    /// re-measures).
    /// All of them start together, as one group: one seed at a time left the cores idle while a
    /// wide B took its last seeds one after another.
    pub fn round_for(&self, rel: f64) -> usize {
        let cap = 2 * self.seeds.max(1);
        match (self.step, self.rounds_to(rel)) {
            (ConfirmStep::SeedRound, Some(n)) if n.is_finite() => (n as usize).clamp(1, cap),
            _ => 1,
        }
    }

    /// Trials ±`rel` is expected to take: its seed rounds × the configurations, or one more
    /// configuration (usize::MAX: unknown).
    pub fn trials_to(&self, rel: f64) -> usize {
        match self.step {
            // an unbounded interval: at least one round (it may bound it)
            ConfirmStep::SeedRound => self.rounds_to(rel).map_or(self.trials, |r| {
                (r as usize).saturating_mul(self.trials.max(1))
            }),
            ConfirmStep::NextConfig { .. } => self.trials,
        }
    }

    /// In words, for the report.
    pub fn describe(&self, rel: f64, left: usize) -> String {
        let (seeds, configs) = (self.seeds, self.trials);
        match (self.step, self.now) {
            (ConfirmStep::NextConfig { rank }, _) => format!(
                "no confirmed configuration's seed median is bounded: the next one would be the \
                 search's #{} ({} trials), {left} were left",
                rank + 1,
                self.trials
            ),
            (ConfirmStep::SeedRound, Some(w)) => {
                let more = self.rounds_to(rel).unwrap_or(0.0);
                format!(
                    "±{:.0} % with {seeds} seeds per configuration: ±{:.0} % would take ~{more:.0} \
                     more seeds each (~{:.0} trials at {configs} configurations), {left} were left",
                    w * 100.0,
                    rel * 100.0,
                    more * configs as f64
                )
            }
            (ConfirmStep::SeedRound, None) => "no interval yet".into(),
        }
    }
}

/// The B's confirmed configurations' seeds as the interval reads them at the goal (rank order);
/// `r`: the plan's seeds per configuration (the censoring's block).
fn seeds_at(c: &Confirmed, trials: &[TrialRecord], b: usize, r: Option<usize>) -> Vec<ConfigSeeds> {
    let all = super::per_batch::dedup_trials(trials);
    c.configs
        .iter()
        .map(|k| {
            let runs: Vec<(&TrialRecord, Observation)> = all
                .iter()
                .filter(|t| {
                    t.spec.batch_size == b && t.spec.confirm.is_some_and(|m| m.of == k.trial)
                })
                .map(|t| (*t, super::steps::observe(t, &super::steps::Reading::Goal)))
                .collect();
            config_seeds(&runs, r)
        })
        .collect()
}

/// The outlook of the next `--until` step at the B of `p` (its confirm stage complete; `seeds`:
/// the plan's r). None: no step can help (nothing reached and no other configuration).
pub fn outlook(p: &BatchPoint, trials: &[TrialRecord], seeds: usize) -> Option<ConfirmOutlook> {
    let c = p.confirmed.as_ref()?;
    let seeds_now = c.chosen_config().map_or(seeds, |k| k.runs);
    let b = p.batch_size;
    let configs = seeds_at(c, trials, b, Some(seeds));
    let now = c.rel_half_width();
    let reached_configs = top_configs(trials, b, usize::MAX).len();
    if c.steps.is_none() {
        // no configuration's median reached: only another configuration can help
        // the new configuration gets as many seeds as the others have (each step leaves every
        // configuration at a B with the same seeds)
        let common = configs
            .iter()
            .map(ConfigSeeds::runs)
            .max()
            .unwrap_or(seeds)
            .max(seeds);
        return (configs.len() < reached_configs).then_some(ConfirmOutlook {
            batch_size: b,
            step: ConfirmStep::NextConfig {
                rank: configs.len() as u32,
            },
            trials: common,
            seeds: seeds_now,
            now,
            after: None,
        });
    }
    // a seed round: the interval narrows as 1/√r (`tests::narrows_as_one_over_root_r`),
    // so one more seed per configuration is expected to take it to √(r/(r+1)) of its width; an
    // unbounded one may become bounded
    seed_sd(&configs)?;
    let r = seeds_now.max(1) as f64;
    let after = now.map(|w| w * (r / (r + 1.0)).sqrt()).or(Some(f64::NAN));
    Some(ConfirmOutlook {
        batch_size: b,
        step: ConfirmStep::SeedRound,
        trials: configs.len(),
        seeds: seeds_now,
        now,
        after,
    })
}

/// Marks every point with a confirm stage with what `--until rel` did there: `met`
/// (the confirmed interval within ±rel), `budget` (the budget ran out while a step would still
/// narrow it) or `stalled` (no step narrows it: every confirmed configuration fails half its
/// seeds and the search has no other configuration, or ±rel would take more trials than the
/// budget had left), with the numbers.
pub fn mark_until(
    points: &mut [BatchPoint],
    trials: &[TrialRecord],
    rel: f64,
    seeds: usize,
    left: usize,
) {
    use crate::core::analysis::UntilStatus;
    for p in points.iter_mut() {
        let Some(c) = &p.confirmed else { continue };
        let (status, reason) = match c.rel_half_width() {
            Some(w) if w <= rel => (UntilStatus::Met, None),
            _ => match outlook(p, trials, seeds) {
                None => (
                    UntilStatus::Stalled,
                    Some(
                        "no confirmed configuration reached the target on half its seeds and the \
                         search has no other configuration that reached it"
                            .to_string(),
                    ),
                ),
                Some(o) => {
                    let need = o.trials_to(rel);
                    let why = o.describe(rel, left);
                    if need > left && left < o.trials.max(1) {
                        (
                            UntilStatus::Budget,
                            Some(format!("{why} (raise --max-trials)")),
                        )
                    } else if need > left {
                        (UntilStatus::Stalled, Some(why))
                    } else {
                        (
                            UntilStatus::Budget,
                            Some(format!("{why} (raise --max-trials)")),
                        )
                    }
                }
            },
        };
        p.until = Some(status);
        p.until_reason = reason;
    }
}

/// The median of `n` ln-values of which the sorted `finite` are finite and the rest +∞ (the
/// even-count median is the midpoint in ln space).
fn median_ln(finite: &[f64], n: usize) -> Option<f64> {
    let at = |i: usize| finite.get(i).copied();
    if n % 2 == 1 {
        at(n / 2)
    } else {
        Some(0.5 * (at(n / 2 - 1)? + at(n / 2)?))
    }
}

pub(crate) fn unit(r: &mut Rng) -> f64 {
    ((r.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal draw (Box–Muller, one of the pair).
pub(crate) fn normal(r: &mut Rng) -> f64 {
    let (u, v) = (unit(r), unit(r));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A Gamma(shape, 1) draw (Marsaglia–Tsang; shape < 1 boosted by U^(1/shape)).
fn gamma(r: &mut Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        return gamma(r, shape + 1.0) * unit(r).powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(r);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = unit(r);
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

fn chi_square(r: &mut Rng, nu: f64) -> f64 {
    2.0 * gamma(r, nu / 2.0)
}

fn beta(r: &mut Rng, a: f64, b: f64) -> f64 {
    let x = gamma(r, a);
    let y = gamma(r, b);
    x / (x + y)
}

/// Φ⁻¹(p), the standard normal quantile (Acklam's rational approximation, relative error
/// < 1.2·10⁻⁹), for p in (0, 1).
pub fn inverse_normal(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let low = 0.02425;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -inverse_normal(1.0 - p)
    }
}

mod censor;
use censor::config_seeds;
pub use censor::seed_sd;

#[cfg(test)]
mod tests;
