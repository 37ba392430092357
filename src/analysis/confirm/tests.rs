//! Coverage of the confirmed S(B)'s interval on synthetic seeds whose distribution is known: k
//! configurations (tied, close, or far apart), r seeds each, Normal, heavy-tailed, skewed or
//! contaminated seed noise in ln steps, seeds that never reach, a step budget, steps quantised to
//! an evaluation grid. Two estimands: the true seed median of the chosen configuration and that of
//! the best of the k. Printed with --nocapture: docs/intervals.md summarises them.

use super::*;
use crate::analysis::bootstrap::Rng;
use crate::analysis::stats::median;

#[derive(Clone, Copy, Debug)]
enum Noise {
    Normal,
    /// Student's t with 3 degrees of freedom, scaled to the same standard deviation.
    T3,
    /// A right-skewed (maximum-Gumbel) noise: occasional slow seeds.
    Skewed,
    /// 90 % Normal, 10 % three times as wide.
    Contaminated,
}

fn noise(r: &mut Rng, kind: Noise) -> f64 {
    match kind {
        Noise::Normal => normal(r),
        Noise::T3 => {
            let z = normal(r);
            let chi: f64 = (0..3).map(|_| normal(r).powi(2)).sum();
            z / (chi / 3.0).sqrt() / 3f64.sqrt()
        }
        Noise::Skewed => {
            // standard maximum-Gumbel: mean γ ≈ 0.5772, sd π/√6
            let g = -(-unit(r).ln()).ln();
            (g - 0.577_215_664_9) / (std::f64::consts::PI / 6f64.sqrt())
        }
        Noise::Contaminated => {
            if unit(r) < 0.1 {
                3.0 * normal(r)
            } else {
                normal(r)
            }
        }
    }
}

/// A scenario: configurations' true ln-locations (in units of σ), seed noise, a probability of
/// never reaching per configuration, the budget (in units of the median, ∞: none) and whether
/// steps are quantised to a 5 % evaluation grid.
#[derive(Clone, Debug)]
struct Scenario {
    offsets: Vec<f64>,
    sigma: f64,
    noise: Noise,
    never: Vec<f64>,
    budget: f64,
    grid: bool,
}

impl Scenario {
    fn new(offsets: &[f64], sigma: f64, noise: Noise) -> Self {
        Scenario {
            never: vec![0.0; offsets.len()],
            offsets: offsets.to_vec(),
            sigma,
            noise,
            budget: f64::INFINITY,
            grid: false,
        }
    }

    /// One seed of configuration c: its steps, or None (never reaches / out of budget).
    fn seed(&self, r: &mut Rng, c: usize) -> Option<f64> {
        let z = noise(r, self.noise);
        if unit(r) < self.never[c] {
            return None;
        }
        let mut t = 500.0 * (self.sigma * (self.offsets[c] + z)).exp();
        if self.grid {
            // the first evaluation at or after t on a grid 10·1.05^i
            t = 10.0 * 1.05f64.powf(((t / 10.0).ln() / 1.05f64.ln()).ceil());
        }
        // past the budget: +∞ (it runs on to its budget, past any quorum's cut)
        Some(if t <= self.budget * 500.0 {
            t
        } else {
            f64::INFINITY
        })
    }

    /// The true seed median of each configuration (None: it does not reach half the time), by
    /// Monte Carlo.
    fn truths(&self) -> Vec<Option<f64>> {
        let mut r = Rng::new(11);
        (0..self.offsets.len())
            .map(|c| {
                let n = 40_001;
                let mut v: Vec<f64> = (0..n)
                    .filter_map(|_| self.seed(&mut r, c))
                    .filter(|t| t.is_finite())
                    .collect();
                v.sort_by(f64::total_cmp);
                v.get(n / 2).copied()
            })
            .collect()
    }

    /// Every configuration's `seeds` seeds, censored in one block of `seeds` at its quorum as the
    /// sweep censors them (`core::confirm::block_need`).
    fn draw(&self, r: &mut Rng, seeds: usize) -> Vec<ConfigSeeds> {
        (0..self.offsets.len())
            .map(|c| {
                let mut cs = ConfigSeeds::default();
                self.add_block(r, c, seeds, &mut cs);
                cs
            })
            .collect()
    }

    /// Adds one block of `n` seeds of configuration `c` to `cs`, censored at its quorum.
    fn add_block(&self, r: &mut Rng, c: usize, n: usize, cs: &mut ConfigSeeds) {
        let mut v: Vec<Option<f64>> = (0..n).map(|_| self.seed(r, c)).collect();
        let need = crate::core::confirm::block_need(n);
        let mut reached: Vec<f64> = v
            .iter()
            .flatten()
            .copied()
            .filter(|t| t.is_finite())
            .collect();
        reached.sort_by(f64::total_cmp);
        let cut = (need < n && reached.len() >= need).then(|| reached[need - 1]);
        if need < n {
            cs.block = n;
            cs.blocks += 1;
        }
        for s in v.drain(..) {
            match (s, cut) {
                // slower than the quorum (also one past its budget): censored there
                (Some(t), Some(c)) if t > c => cs.censored.push(c),
                (Some(t), _) if t.is_finite() => cs.steps.push(t),
                // past its budget without a cut, or never reaching (diverged early): failed
                _ => cs.failed += 1,
            }
        }
    }
}

/// Coverage of (the chosen configuration's median, the best configuration's median) and the
/// median relative half-width (unbounded intervals left out of it), over `reps` repetitions.
fn coverage(s: &Scenario, seeds: usize, reps: usize) -> (f64, f64, f64) {
    let truths = s.truths();
    let best = truths
        .iter()
        .flatten()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let res = if s.grid { 1.05f64.ln() } else { 0.0 };
    let mut r = Rng::new(0xc0_ffee ^ (seeds as u64) << 8 ^ s.offsets.len() as u64);
    let (mut chosen_hit, mut best_hit, mut n) = (0, 0, 0);
    let mut widths = Vec::new();
    for rep in 0..reps {
        let cs = s.draw(&mut r, seeds);
        let Some(iv) = interval(&cs, res, CONFIRM_DRAWS, rep as u64) else {
            continue;
        };
        n += 1;
        let covers = |t: Option<f64>| match (t, iv.hi) {
            (Some(t), Some(h)) => iv.lo <= t * (1.0 + 1e-9) && t <= h * (1.0 + 1e-9),
            (Some(t), None) => iv.lo <= t * (1.0 + 1e-9),
            (None, None) => true,
            (None, Some(_)) => false,
        };
        let c = choose(&cs).unwrap();
        chosen_hit += covers(truths[c]) as usize;
        best_hit += covers(Some(best)) as usize;
        if let Some(w) = iv.rel_half_width() {
            widths.push(w);
        }
    }
    let n = n.max(1) as f64;
    (
        chosen_hit as f64 / n,
        best_hit as f64 / n,
        median(widths).unwrap_or(f64::NAN),
    )
}

/// `coverage` of the sequential plan `--until rel` runs on one configuration: a first block of
/// `r` seeds, then whole blocks of `r` as `ConfirmOutlook::round_for` asks while the interval is
/// wider than ±rel, up to `max` seeds. Stopping on the observed width is optional stopping; this
/// is its coverage. Returns (coverage, median half-width, mean seeds).
fn coverage_until(s: &Scenario, r: usize, rel: f64, max: usize, reps: usize) -> (f64, f64, f64) {
    let truth = s.truths()[0];
    let res = if s.grid { 1.05f64.ln() } else { 0.0 };
    let mut rng = Rng::new(0x5eed_u64 ^ (r as u64) << 8);
    let (mut hit, mut n, mut seeds) = (0usize, 0usize, 0usize);
    let mut widths = Vec::new();
    for rep in 0..reps {
        let mut cs = vec![ConfigSeeds::default()];
        s.add_block(&mut rng, 0, r, &mut cs[0]);
        let iv = loop {
            let iv = interval(&cs, res, CONFIRM_DRAWS, rep as u64);
            let w = iv.as_ref().and_then(|iv| iv.rel_half_width());
            let runs = cs[0].runs();
            if w.is_some_and(|w| w <= rel) || runs + r > max {
                break iv;
            }
            let o = ConfirmOutlook {
                batch_size: 0,
                step: ConfirmStep::SeedRound,
                trials: 1,
                seeds: runs,
                now: w,
                after: None,
            };
            let blocks = o.round_for(rel).div_ceil(r).min((max - runs) / r).max(1);
            for _ in 0..blocks {
                s.add_block(&mut rng, 0, r, &mut cs[0]);
            }
        };
        seeds += cs[0].runs();
        let Some(iv) = iv else { continue };
        n += 1;
        let covers = match (truth, iv.hi) {
            (Some(t), Some(h)) => iv.lo <= t * (1.0 + 1e-9) && t <= h * (1.0 + 1e-9),
            (Some(t), None) => iv.lo <= t * (1.0 + 1e-9),
            (None, h) => h.is_none(),
        };
        hit += covers as usize;
        widths.extend(iv.rel_half_width());
    }
    (
        hit as f64 / n.max(1) as f64,
        median(widths).unwrap_or(f64::NAN),
        seeds as f64 / reps as f64,
    )
}

fn scenarios() -> Vec<(&'static str, Scenario)> {
    let sd = 0.2;
    let mut out = vec![
        (
            "tied, normal",
            Scenario::new(&[0.0, 0.0, 0.0], sd, Noise::Normal),
        ),
        (
            "close, normal",
            Scenario::new(&[0.0, 0.5, 1.0], sd, Noise::Normal),
        ),
        (
            "far, normal",
            Scenario::new(&[0.0, 3.0, 6.0], sd, Noise::Normal),
        ),
        ("tied, t3", Scenario::new(&[0.0, 0.0, 0.0], sd, Noise::T3)),
        (
            "tied, skewed",
            Scenario::new(&[0.0, 0.0, 0.0], sd, Noise::Skewed),
        ),
        (
            "tied, contaminated",
            Scenario::new(&[0.0, 0.0, 0.0], sd, Noise::Contaminated),
        ),
    ];
    let mut fail = Scenario::new(&[0.0, 0.0, 0.0], sd, Noise::Normal);
    fail.never = vec![0.1, 0.1, 0.1];
    out.push(("tied, 10 % never reach", fail));
    let mut one_bad = Scenario::new(&[0.0, 0.0, 0.5], sd, Noise::Normal);
    one_bad.never = vec![0.3, 0.0, 0.0];
    out.push(("best one fails 30 %", one_bad));
    let mut rival = Scenario::new(&[0.0, -0.5, 0.0], sd, Noise::Normal);
    rival.never = vec![0.0, 0.6, 0.0];
    out.push(("a faster rival fails 60 %", rival));
    let mut budget = Scenario::new(&[0.0, 0.3, 0.6], 0.3, Noise::Skewed);
    budget.budget = 1.6;
    budget.grid = true;
    out.push(("skewed σ 0.3, budget, 5 % grid", budget));
    let mut grid = Scenario::new(&[0.0, 0.2, 0.4], 0.1, Noise::Normal);
    grid.grid = true;
    out.push(("σ 0.1 on a 5 % grid", grid));
    out
}

#[test]
fn coverage_table() {
    // 3×5 (the default), 1×5, 3×3, 5×5, 3×10 on every scenario, 1×20 (the digits presets') on
    // one configuration; asserted ≥ 0.9 (nominal 0.95)
    let mut worst: f64 = 1.0;
    for (k, r) in [(3usize, 5usize), (3, 3), (3, 10)] {
        for (name, s) in scenarios() {
            let (c, b, w) = coverage(&s, r, 300);
            println!(
                "{k}x{r} {name:32}: chosen {c:.3}, best {b:.3}, median half-width {:.0} %",
                w * 100.0
            );
            assert!(
                c >= 0.9 && b >= 0.9,
                "{k}x{r} {name}: coverage {c} (chosen) / {b} (best) below 0.9"
            );
            worst = worst.min(c).min(b);
        }
    }
    for (k, name) in [(1usize, "one configuration"), (5, "five tied")] {
        let s = Scenario::new(&vec![0.0; k], 0.2, Noise::Normal);
        let (c, b, w) = coverage(&s, 5, 300);
        println!(
            "{k}x5 {name:32}: chosen {c:.3}, best {b:.3}, median half-width {:.0} %",
            w * 100.0
        );
        assert!(c >= 0.9 && b >= 0.9, "{k}x5 {name}: {c} / {b}");
    }
    // 1×20 (the digits presets' plan): one configuration, 20 seeds, every noise model, failures
    // and the evaluation grid
    let mut one: Vec<(&str, Scenario)> = [
        ("normal", Noise::Normal),
        ("t3", Noise::T3),
        ("skewed", Noise::Skewed),
        ("contaminated", Noise::Contaminated),
    ]
    .into_iter()
    .map(|(name, noise)| (name, Scenario::new(&[0.0], 0.2, noise)))
    .collect();
    let mut fail = Scenario::new(&[0.0], 0.2, Noise::Normal);
    fail.never = vec![0.1];
    one.push(("10 % never reach", fail));
    let mut grid = Scenario::new(&[0.0], 0.1, Noise::Normal);
    grid.grid = true;
    one.push(("σ 0.1 on a 5 % grid", grid));
    for (name, s) in one {
        let (c, b, w) = coverage(&s, 20, 300);
        println!(
            "1x20 {name:32}: chosen {c:.3}, best {b:.3}, median half-width {:.0} %",
            w * 100.0
        );
        assert!(c >= 0.9 && b >= 0.9, "1x20 {name}: {c} / {b}");
        worst = worst.min(c).min(b);
    }
    println!("worst coverage {worst:.3}");
}

/// The digits presets' plan: 1×10 censored at its quorum, then `confirm_until = 0.15` adding
/// blocks of 10 while wider (optional stopping on the observed width), up to 60 seeds; seed
/// spreads σ 0.15–0.3 as digits measures, every noise model, failures, budget and the grid.
#[test]
fn coverage_of_the_sequential_plan() {
    let mut one: Vec<(String, Scenario)> = Vec::new();
    for sd in [0.15, 0.3] {
        for (name, noise) in [
            ("normal", Noise::Normal),
            ("t3", Noise::T3),
            ("skewed", Noise::Skewed),
            ("contaminated", Noise::Contaminated),
        ] {
            one.push((format!("σ {sd} {name}"), Scenario::new(&[0.0], sd, noise)));
        }
    }
    let mut fail = Scenario::new(&[0.0], 0.25, Noise::Normal);
    fail.never = vec![0.1];
    one.push(("σ 0.25, 10 % never reach".into(), fail));
    let mut budget = Scenario::new(&[0.0], 0.3, Noise::Skewed);
    budget.budget = 1.6;
    budget.grid = true;
    one.push(("skewed σ 0.3, budget, 5 % grid".into(), budget));
    let mut grid = Scenario::new(&[0.0], 0.1, Noise::Normal);
    grid.grid = true;
    one.push(("σ 0.1 on a 5 % grid".into(), grid));
    let mut worst: f64 = 1.0;
    for (name, s) in one {
        let (c, w, n) = coverage_until(&s, 10, 0.15, 60, 300);
        println!(
            "1x10 until 0.15 {name:32}: coverage {c:.3}, median half-width {:.0} %, {n:.1} seeds",
            w * 100.0
        );
        assert!(c >= 0.9, "1x10 until 0.15 {name}: coverage {c}");
        worst = worst.min(c);
    }
    println!("worst coverage {worst:.3}");
}

/// Censoring at the quorum: the EM's σ of censored Normal seeds is close to the σ of the whole
/// sample, where the reached seeds' own spread is not (it misses the slow tail).
#[test]
fn censored_spread_recovers_the_whole_sample_spread() {
    let s = Scenario::new(&[0.0], 0.25, Noise::Normal);
    let mut r = Rng::new(7);
    let (mut em, mut naive) = (Vec::new(), Vec::new());
    for _ in 0..400 {
        let cs = s.draw(&mut r, 12);
        assert_eq!(
            cs[0].censored.len(),
            12 - crate::core::confirm::block_need(12)
        );
        em.push(seed_sd(&cs).unwrap().0);
        naive.push(pooled_sd(&cs).unwrap().0);
    }
    let (em, naive) = (median(em).unwrap(), median(naive).unwrap());
    println!("σ 0.25: censored EM {em:.3}, reached seeds alone {naive:.3}");
    assert!((em - 0.25).abs() < 0.03, "{em}");
    assert!(naive < 0.2, "{naive}");
    // no censoring: the pooled value itself
    let clean = vec![ConfigSeeds {
        steps: vec![100.0, 120.0, 150.0, 90.0],
        ..Default::default()
    }];
    assert_eq!(seed_sd(&clean), pooled_sd(&clean));
}

/// The interval narrows as 1/√r: 4× the seeds, about half the width (a little less than half
/// at small r, where σ's own uncertainty with ν = 12 degrees of freedom also shrinks).
#[test]
fn narrows_as_one_over_root_r() {
    let s = Scenario::new(&[0.0, 0.5, 1.0], 0.2, Noise::Normal);
    let (_, _, w5) = coverage(&s, 5, 150);
    let (_, _, w20) = coverage(&s, 20, 150);
    let ratio = w20 / w5;
    println!("half-width r=5 {w5:.3}, r=20 {w20:.3}: ratio {ratio:.3}");
    assert!(
        (0.4..=0.55).contains(&ratio),
        "ratio {ratio} ({w5} → {w20})"
    );
}

#[test]
fn the_median_counts_a_seed_that_did_not_reach_as_slowest() {
    let c = |steps: &[f64], failed| ConfigSeeds {
        steps: steps.to_vec(),
        failed,
        ..Default::default()
    };
    assert_eq!(c(&[300.0, 100.0, 200.0], 0).median(), Some(200.0));
    // 5 seeds, 2 did not reach: the median is the third of the five, the largest that reached
    assert_eq!(c(&[100.0, 300.0, 200.0], 2).median(), Some(300.0));
    // 3 of 5 did not reach: not reached
    assert_eq!(c(&[100.0, 200.0], 3).median(), None);
    // even count: geometric mean of the two middle values; half not reached → not reached
    let m = c(&[100.0, 400.0, 900.0, 50.0], 0).median().unwrap();
    assert!((m - 200.0).abs() < 1e-9, "{m}");
    assert_eq!(c(&[100.0, 200.0], 2).median(), None);
    assert_eq!(c(&[], 0).median(), None);
    // the chosen configuration: the lowest median; ties to the better rank
    let cs = vec![
        c(&[300.0, 310.0, 320.0], 0),
        c(&[200.0, 210.0, 220.0], 0),
        c(&[210.0, 200.0, 220.0], 0),
    ];
    assert_eq!(choose(&cs), Some(1));
    assert_eq!(choose(&[c(&[1.0], 3)]), None);
}

#[test]
fn failures_widen_and_can_unbound_the_interval() {
    let c = |steps: &[f64], failed| ConfigSeeds {
        steps: steps.to_vec(),
        failed,
        ..Default::default()
    };
    let clean = vec![
        c(&[200.0, 220.0, 240.0, 260.0, 280.0], 0),
        c(&[250.0, 270.0, 290.0, 310.0, 330.0], 0),
    ];
    let a = interval(&clean, 0.0, CONFIRM_DRAWS, 1).unwrap();
    assert_eq!(a.point, 240.0);
    assert!(a.lo < 240.0 && a.hi.unwrap() > 240.0, "{a:?}");
    // the same reached seeds plus two that did not reach: median moves up, the upper end goes
    let failing = vec![c(&[200.0, 220.0, 240.0], 2), clean[1].clone()];
    let b = interval(&failing, 0.0, CONFIRM_DRAWS, 1).unwrap();
    assert_eq!(b.point, 240.0);
    assert!(b.hi.is_none_or(|h| h > a.hi.unwrap()), "{b:?} vs {a:?}");
    // nothing to estimate a spread from: no interval
    assert!(interval(&[c(&[100.0], 0), c(&[120.0], 0)], 0.0, 100, 1).is_none());
    // identical seeds on an exact grid: a zero-width interval at the point
    let same = vec![c(&[100.0; 5], 0)];
    let z = interval(&same, 0.0, 200, 1).unwrap();
    assert_eq!((z.lo, z.hi), (100.0, Some(100.0)));
}

#[test]
fn inverse_normal_matches_known_quantiles() {
    for (p, z) in [
        (0.5, 0.0),
        (0.975, 1.959_963_985),
        (0.025, -1.959_963_985),
        (0.999, 3.090_232_306),
        (0.8413447461, 1.0),
    ] {
        assert!(
            (inverse_normal(p) - z).abs() < 1e-6,
            "{p}: {}",
            inverse_normal(p)
        );
    }
}

/// The kept answers are the function's: the same arguments give what a fresh computation gives,
/// and arguments that differ in any value (a step, a censored seed, the grid, the draws, the
/// seed, the block layout) are computed anew.
#[test]
fn kept_intervals_are_the_fresh_ones() {
    let base = ConfigSeeds {
        steps: vec![200.0, 220.0, 240.0, 260.0, 280.0, 300.0, 310.0],
        failed: 1,
        censored: vec![330.0, 330.0],
        block: 10,
        blocks: 1,
    };
    let other = ConfigSeeds {
        steps: vec![250.0, 270.0, 290.0, 310.0],
        ..Default::default()
    };
    let variants: Vec<(Vec<ConfigSeeds>, f64, usize, u64)> = vec![
        (vec![base.clone(), other.clone()], 0.05, 500, 3),
        (vec![base.clone(), other.clone()], 0.0, 500, 3),
        (vec![base.clone(), other.clone()], 0.05, 400, 3),
        (vec![base.clone(), other.clone()], 0.05, 500, 4),
        (vec![base.clone()], 0.05, 500, 3),
        (
            vec![
                ConfigSeeds {
                    censored: vec![330.0, 331.0],
                    ..base.clone()
                },
                other.clone(),
            ],
            0.05,
            500,
            3,
        ),
        (
            vec![
                ConfigSeeds {
                    blocks: 0,
                    ..base.clone()
                },
                other.clone(),
            ],
            0.05,
            500,
            3,
        ),
    ];
    for round in 0..2 {
        for (i, (c, res, draws, seed)) in variants.iter().enumerate() {
            let kept = interval(c, *res, *draws, *seed);
            let fresh = super::interval_of(c, *res, *draws, *seed);
            assert_eq!(kept, fresh, "variant {i}, round {round}");
        }
    }
    let a = interval(&variants[0].0, 0.05, 500, 3).unwrap();
    let b = interval(&variants[5].0, 0.05, 500, 3).unwrap();
    assert_ne!(
        a.draws, b.draws,
        "a censored seed one step later is another interval"
    );
}
