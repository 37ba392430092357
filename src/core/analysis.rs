//! The analysis's input (`Study`) and result types (computed by `analysis`, worded by `report`):
//! numbers and enums only — no prose, no files, no text.

use serde::{Deserialize, Serialize};

use crate::core::trial::NoiseInterval;
use crate::workload::spec::{ConfirmPlan, LrRule, OptimizerKind, Preset, SearchSpace, Target};

/// What a sweep's trials are read against: the target, the optimizer (which metaparameters exist)
/// and the search space (the edge checks and the LR-rule caveat; None: imported or scripted data
/// without one). One study, one analysis: every view builds it the same way (`of_preset`), and a
/// reading at another target is the same study [`at`](Study::at) another value.
#[derive(Clone, Debug, PartialEq)]
pub struct Study {
    /// The target S(B) is read at.
    pub target: Target,
    /// The sweep's own goal: its trials stopped at the first evaluation that met it (the strictest
    /// rung of a ladder). At the goal every trial's recorded outcome is read; at another target
    /// its evaluation curve (`analysis::steps`).
    pub goal: Target,
    pub optimizer: OptimizerKind,
    pub search: Option<SearchSpace>,
    /// The sweep's confirm stage (None: off, or a log from before it): what a complete
    /// stage at a B holds, so the analysis knows when the confirmed S(B) is final.
    pub confirm: Option<ConfirmPlan>,
}

impl Study {
    /// The study a preset describes (its workload's target and optimizer, its search space).
    pub fn of_preset(preset: &Preset) -> Study {
        Study {
            target: preset.workload.target,
            goal: preset.workload.target,
            optimizer: preset.workload.optimizer,
            search: Some(preset.search.clone()),
            confirm: preset.sweep.confirm,
        }
    }

    /// A study without a search space (no edge checks).
    pub fn bare(target: Target, optimizer: OptimizerKind) -> Study {
        Study {
            target,
            goal: target,
            optimizer,
            search: None,
            confirm: None,
        }
    }

    /// The same study read at another target value (same metric, same goal).
    pub fn at(&self, value: f64) -> Study {
        Study {
            target: Target {
                metric: self.goal.metric,
                value,
            },
            ..self.clone()
        }
    }

    /// The target is the goal itself.
    pub fn at_goal(&self) -> bool {
        self.target == self.goal
    }
}

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

/// How a set of trials ended: the one count type of the reports, the run lists and the views.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct OutcomeCounts {
    pub trials: usize,
    pub reached: usize,
    pub diverged: usize,
    pub not_reached: usize,
    /// Of `not_reached`: stopped early at the best steps already measured at their B.
    #[serde(default)]
    pub early_stopped: usize,
    pub cancelled: usize,
    /// Out of device memory (CUDA).
    #[serde(default, skip_serializing_if = "crate::core::analysis::is_zero")]
    pub oom: usize,
}

impl OutcomeCounts {
    /// Counts one more trial that ended with `o`.
    pub fn add(&mut self, o: &crate::core::trial::Outcome) {
        use crate::core::trial::Outcome;
        self.trials += 1;
        match o {
            Outcome::Reached { .. } => self.reached += 1,
            Outcome::NotReached { early_stopped, .. } => {
                self.not_reached += 1;
                self.early_stopped += usize::from(*early_stopped);
            }
            Outcome::Diverged { .. } => self.diverged += 1,
            Outcome::Cancelled { .. } => self.cancelled += 1,
            Outcome::Oom { .. } => self.oom += 1,
        }
    }

    /// The counts of these outcomes.
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a crate::core::trial::Outcome>) -> Self {
        let mut c = OutcomeCounts::default();
        for o in outcomes {
            c.add(o);
        }
        c
    }
}

impl std::ops::AddAssign for OutcomeCounts {
    fn add_assign(&mut self, o: Self) {
        self.trials += o.trials;
        self.reached += o.reached;
        self.diverged += o.diverged;
        self.not_reached += o.not_reached;
        self.early_stopped += o.early_stopped;
        self.cancelled += o.cancelled;
        self.oom += o.oom;
    }
}

impl std::iter::Sum for OutcomeCounts {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        let mut c = OutcomeCounts::default();
        for x in iter {
            c += x;
        }
        c
    }
}

/// Steps-to-target at one batch size: the best trial over the study.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct BatchPoint {
    pub batch_size: usize,
    /// Earliest evaluation step at which any trial met the target (None: no trial did).
    pub steps: Option<u64>,
    pub best_trial: Option<u64>,
    /// How this B's search trials ended (repeats are not counted).
    #[serde(flatten)]
    pub counts: OutcomeCounts,
    /// Metaparameters of the best trial.
    pub best_lr: Option<f64>,
    pub best_momentum: Option<f64>,
    /// η/(1−γ) for momentum optimizers, η otherwise.
    pub best_effective_lr: Option<f64>,
    /// Gradient noise scale of the best trial.
    pub b_simple: Option<f64>,
    /// Its 95 % interval (at the goal, where the trial recorded one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_simple_interval: Option<NoiseInterval>,
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
    /// A target stricter than the sweep's goal: a trial that stopped at the goal (or was cut by
    /// early stopping) before the best one found might have met it sooner, so S(B) is not
    /// measured here (`steps` is None). Never true at the goal or a looser target.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_measured: bool,
    /// A sweep with `--until REL`, at its goal: what it did at this B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<UntilStatus>,
    /// Why `until` is `stalled` (or `budget` with no interval at all), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_reason: Option<String>,
    /// The confirm stage at this B: the search's best configurations re-run with fresh
    /// seeds, and the confirmed S(B) they give (`analysis::confirm`). None without confirm trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<Confirmed>,
}

/// Which S(B) the curve reads — the fit, the regimes, the ladders, the projection, `--until`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Readout {
    /// The best trial of the search (Shallue et al.'s readout, and batch_science's).
    #[default]
    BestTrial,
    /// The confirmed S(B): the seed median of the best confirmed configuration.
    Confirmed,
}

impl Readout {
    pub fn label(self) -> &'static str {
        match self {
            Readout::BestTrial => "best trial",
            Readout::Confirmed => "confirmed",
        }
    }
}

/// A 95 % interval of steps whose upper end may be unbounded.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct StepsInterval {
    pub lo: u64,
    /// None: unbounded above (the chosen configuration may not reach the target half the time).
    pub hi: Option<u64>,
}

/// One configuration of a B's confirm stage: a search trial's metaparameters over fresh seeds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ConfirmedConfig {
    /// The search trial whose metaparameters were re-run.
    pub trial: u64,
    /// Its rank in the search at this B (0 = the best trial).
    pub rank: u32,
    /// Its own (selected, single-seed) steps in the search.
    pub search_steps: Option<u64>,
    /// Fresh seeds that ran (cancelled ones left out).
    pub runs: usize,
    pub reached: usize,
    /// Seeds that did not reach: diverged, out of memory or ran the whole budget.
    pub failed: usize,
    /// Seeds censored at their block's quorum (`core::confirm::BLOCK_QUORUM`): slower than the
    /// quorum's step, which is all the seed median and the interval need of them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub censored: usize,
    /// The seed median (None: half or more of the seeds did not reach).
    pub median: Option<f64>,
    /// Fastest and slowest seed that reached.
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub learning_rate: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub momentum: Option<f64>,
    /// η/(1−γ) for momentum optimizers, η otherwise.
    pub effective_lr: f64,
}

/// The confirmed S(B) at one batch size (`analysis::confirm`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Confirmed {
    /// The seed median of the chosen configuration, in whole steps (None: no configuration's seed
    /// median reached the target).
    pub steps: Option<u64>,
    /// 95 % interval for the true seed median of the chosen configuration (and of the best of the
    /// confirmed ones), accounting for the choice among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_ci: Option<StepsInterval>,
    /// The chosen configuration's search trial.
    pub chosen: Option<u64>,
    /// Every confirmed configuration, in search rank order.
    pub configs: Vec<ConfirmedConfig>,
    /// The seed-to-seed spread: the pooled standard deviation of ln steps between seeds of one
    /// configuration (what a single-seed readout hides).
    pub seed_sd: Option<f64>,
    /// Every planned confirm trial of this B has run: the value is final.
    pub complete: bool,
    /// A target stricter than the sweep's goal: the confirm seeds stopped at the goal, so the
    /// confirmed S(B) is not measured here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_measured: bool,
}

impl Confirmed {
    /// The chosen configuration.
    pub fn chosen_config(&self) -> Option<&ConfirmedConfig> {
        let id = self.chosen?;
        self.configs.iter().find(|c| c.trial == id)
    }

    /// Relative half-width of the interval: (hi − lo)/2/steps (None: no interval or unbounded).
    pub fn rel_half_width(&self) -> Option<f64> {
        let s = self.steps.filter(|&s| s > 0)? as f64;
        let ci = self.steps_ci?;
        Some((ci.hi? as f64 - ci.lo as f64) / 2.0 / s)
    }

    /// Seeds run in all (every configuration).
    pub fn runs(&self) -> usize {
        self.configs.iter().map(|c| c.runs).sum()
    }
}

/// What `--until REL` did at one batch size (`analysis::until`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UntilStatus {
    /// The interval's relative half-width is within ±REL.
    Met,
    /// More trials did not narrow it (`until_reason` says why); `--until` stopped adding here.
    Stalled,
    /// The search budget ran out (or the sweep was stopped) while it was still wider than ±REL.
    Budget,
}

impl UntilStatus {
    pub fn label(self) -> &'static str {
        match self {
            UntilStatus::Met => "met",
            UntilStatus::Stalled => "stalled",
            UntilStatus::Budget => "budget",
        }
    }
}

impl BatchPoint {
    /// Relative half-width of `steps_ci`: (hi − lo) / 2 / steps.
    pub fn rel_half_width(&self) -> Option<f64> {
        let (s, [lo, hi]) = (self.steps?, self.steps_ci?);
        (s > 0).then(|| (hi as f64 - lo as f64) / 2.0 / s as f64)
    }
}

/// The local log-log slope between two consecutive measured batch sizes (a measured number, not
/// a regime: the regimes are the ordered partition, `Analysis::regimes`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Segment {
    pub b_lo: usize,
    pub b_hi: usize,
    /// d log S / d log B.
    pub slope: f64,
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

/// Which end of a regime span.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SpanEnd {
    Start,
    End,
}

/// The η and 1−γ ranges explored at some batch sizes of a sweep that re-centred its search
/// (`--widen`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExploredRange {
    pub batch_sizes: Vec<usize>,
    pub learning_rate: [f64; 2],
    /// None for SGD (no momentum).
    pub one_minus_momentum: Option<[f64; 2]>,
}

/// A batch size whose best trial sits at the edge of the explored search space.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct EdgeAt {
    pub batch_size: usize,
    pub edges: Vec<SearchEdge>,
}

/// What the data cannot support, caveats and disagreements between the models, as data (the
/// report words them: `report::notes`). In the order the analysis finds them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum Note {
    /// The regimes need at least 3 batch sizes that reached the target.
    TooFewForRegimes { reached: usize },
    /// S already falls slower than 1/B from the smallest measured B.
    PerfectNotObserved { b_min: f64 },
    /// The curve is still falling at the largest measured B.
    MaximalNotReached { b_max: f64 },
    /// Perfect scaling turns to flat with no diminishing-returns band between.
    NoDiminishingBand {
        perfect_end: f64,
        maximal_start: f64,
    },
    /// A regime boundary's 95 % interval spans more than `analysis::WIDE_BOUNDARY` in B.
    PoorBoundary {
        regime: Regime,
        end: SpanEnd,
        ci: [f64; 2],
    },
    /// The fit's end of perfect scaling (B_crit/3, interval from `b_crit_ci`) misses the segmented
    /// model's `segmented`.
    FitPerfectEndDisagrees {
        b_crit: f64,
        b_crit_ci: [f64; 2],
        segmented: f64,
    },
    /// The fit's start of maximal data parallelism (3·B_crit) misses the segmented model's.
    FitMaximalStartDisagrees {
        b_crit: f64,
        b_crit_ci: [f64; 2],
        segmented: f64,
    },
    /// The S_min(1 + B_crit/B) fit is uncertain (`Fit::uncertain`).
    FitUncertain {
        r2: f64,
        b_crit_ci: Option<[f64; 2]>,
    },
    /// `--widen` re-centred the search range at these batch sizes.
    RangeRecentred { ranges: Vec<ExploredRange> },
    /// Best trials at the edge of the search space: S(B) there is an upper bound.
    AtSearchEdge { at: Vec<EdgeAt> },
    /// The best 1−γ is at the top of its range where a move would pass γ = 0.
    MomentumAtZero { batch_sizes: Vec<usize> },
    /// The η range is centred per B by an LR rule, which partly sets the fitted exponent.
    LrRuleSetsExponent { rule: LrRule, exponent: Option<f64> },
    /// A target stricter than the sweep's goal (`goal`): S(B) is not measured at these batch
    /// sizes (trials stopped at the goal), so no fit and no regimes are drawn.
    NotMeasured { batch_sizes: Vec<usize>, goal: f64 },
    /// The confirm stage has not finished at every batch size with a best trial: the curve reads
    /// the best trials until it has.
    ConfirmIncomplete { confirmed: usize, of: usize },
    /// The confirmed configuration's seed median did not reach the target at these batch sizes:
    /// they are left out of the confirmed curve.
    ConfirmNotReached { batch_sizes: Vec<usize> },
}

/// A measured S(B) left off the curve: it rests on fewer finished trials than
/// `analysis::evidence::MIN_TRIALS_PER_POINT`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThinPoint {
    pub batch_size: usize,
    /// The finished trials its S(B) rests on.
    pub trials: usize,
}

/// How much evidence the curve rests on (`analysis::evidence`): the batch sizes on it, the
/// measured ones left off it, and whether what is read from the curve is withheld.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Evidence {
    /// Batch sizes on the curve: a measured S(B) from enough finished trials.
    pub curve: Vec<usize>,
    /// Measured batch sizes whose S(B) rests on fewer trials: in the per-B table, off the curve.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thin: Vec<ThinPoint>,
    /// Fewer batch sizes on the curve than `analysis::evidence::MIN_CURVE_POINTS`: the fit,
    /// B_crit, the regimes, the η exponent and the time-to-target projection are withheld.
    pub withheld: bool,
}

impl Evidence {
    /// `b` is on the curve.
    pub fn on_curve(&self, b: usize) -> bool {
        self.curve.contains(&b)
    }
}

/// The analysis of a sweep's trials (`analysis::analyze`): numbers and enums only.
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct Analysis {
    /// What S(B) measures (None: nothing analysed yet). Serialised as "metric <= value".
    #[serde(serialize_with = "target_string")]
    pub target: Option<Target>,
    /// The sweep's goal when the analysis reads another target (None: it reads the goal itself).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "target_string"
    )]
    pub goal: Option<Target>,
    pub per_batch: Vec<BatchPoint>,
    /// The perfect-scaling reference S(B0)·B0/B anchored at the smallest B that reached: (B0, S0).
    pub perfect_anchor: Option<(usize, u64)>,
    /// Local slopes between consecutive measured batch sizes.
    pub segments: Vec<Segment>,
    pub fit: Option<Fit>,
    /// Median B_simple over the best trials: the noise-scale prediction of B_crit.
    pub noise_prediction: Option<f64>,
    /// A band around `noise_prediction`: the medians of the best trials' 95 % intervals' ends
    /// (an unbounded end counts as +∞), where every best trial with a B_simple has an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_interval: Option<NoiseInterval>,
    pub lr_rules: Vec<LrRulePoint>,
    /// The regimes as one ordered partition of the measured range: the one regime model.
    pub regimes: Vec<RegimeSpan>,
    /// What the data cannot support, caveats, model disagreements.
    pub notes: Vec<Note>,
    /// Which S(B) the curve reads (the perfect-scaling anchor, the segments, the fit, the regimes,
    /// the LR rules): the confirmed one once every B with a best trial has a complete confirm
    /// stage, else the best trial.
    #[serde(default)]
    pub readout: Readout,
    /// The evidence the curve rests on: below the minimum (`analysis::evidence`) the fit and the
    /// regimes are empty and the report withholds what it reads from the curve.
    pub evidence: Evidence,
}

impl Analysis {
    /// S(B) as the curve reads it at `p` (the readout's value).
    pub fn curve_steps(&self, p: &BatchPoint) -> Option<u64> {
        p.readout_steps(self.readout)
    }

    /// S(B) at `p` where it is on the curve (enough trials behind it): what ×ideal and the
    /// regime of a batch size are read from.
    pub fn on_curve_steps(&self, p: &BatchPoint) -> Option<u64> {
        self.curve_steps(p)
            .filter(|_| self.evidence.on_curve(p.batch_size))
    }

    /// What is read from the curve (the fit, B_crit, the regimes, the η exponent, the
    /// projection) is withheld: too little evidence.
    pub fn withheld(&self) -> bool {
        self.evidence.withheld
    }
}

impl BatchPoint {
    /// S(B) in `readout`: the best trial's steps, or the confirmed seed median.
    pub fn readout_steps(&self, readout: Readout) -> Option<u64> {
        match readout {
            Readout::BestTrial => self.steps,
            Readout::Confirmed => self.confirmed.as_ref().and_then(|c| c.steps),
        }
    }

    /// The readout's 95 % interval as [lo, hi] (None: none, or unbounded above).
    pub fn readout_ci(&self, readout: Readout) -> Option<[u64; 2]> {
        match readout {
            Readout::BestTrial => self.steps_ci,
            Readout::Confirmed => {
                let ci = self.confirmed.as_ref()?.steps_ci?;
                Some([ci.lo, ci.hi?])
            }
        }
    }

    /// The readout's relative half-width.
    pub fn readout_rel_half_width(&self, readout: Readout) -> Option<f64> {
        match readout {
            Readout::BestTrial => self.rel_half_width(),
            Readout::Confirmed => self.confirmed.as_ref()?.rel_half_width(),
        }
    }

    /// The η of the readout's configuration (the best trial's, or the chosen confirmed one's).
    pub fn readout_lr(&self, readout: Readout) -> Option<f64> {
        match readout {
            Readout::BestTrial => self.best_lr,
            Readout::Confirmed => self
                .confirmed
                .as_ref()?
                .chosen_config()
                .map(|c| c.learning_rate),
        }
    }
}

/// "metric <= value" (">=" for a maximised metric): how the target is written in the JSON outputs.
pub fn target_text(t: &Target) -> String {
    format!("{} {} {}", t.metric.name(), t.metric.relation(), t.value)
}

fn target_string<S: serde::Serializer>(t: &Option<Target>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.as_ref().map(target_text).unwrap_or_default())
}

pub fn is_zero(n: &usize) -> bool {
    *n == 0
}
