//! The calibration stage: what a study leaves out — its target, its per-B learning-rate ranges,
//! its batch sizes, its step budget and example cap, its evaluation spacing
//! (`workload::spec::Calibrate`) — chosen from short pilot trials by written rules
//! (docs/calibration.md, the protocol a reviewer can check). A pure function of the study and the
//! pilot trials' records: [`next`] says which pilot trials the next round runs, or, once the rules
//! have what they need, the [`Calibrated`] study. The sweep runs the rounds (`sweep::scheduler`),
//! every reader re-derives the same rounds and the same study from the log, and a resumed sweep
//! runs only the pilots a round has not logged.
//!
//! The rounds:
//! 1. **Reference scan** at B_ref: a geometric grid of learning rates over the optimizer's wide
//!    range, each trial run for the same budget with no target; its evaluation curves give the
//!    target (the metric the best curve has reached a third of the way through the budget, rounded
//!    looser to two significant digits) and the first point of the learning-rate-vs-B curve.
//! 2. **The batch ladder**, up and down from B_ref in steps of 4× (one pilot each way per round,
//!    run side by side): four learning rates around the previous pilot's best moved by half the
//!    linear rule, each stopping at the target (the first reach cuts the group). Upward, the
//!    budget is 1.5× the previous pilot's steps; maximal data parallelism is observed where S
//!    falls by less than a factor 0.87 per doubling (0.76 over two). Downward, the budget is 1.5×
//!    the steps perfect scaling predicts; perfect scaling is observed where S grows by at least a
//!    factor 1.73 per halving (3.0 over two). A pilot whose best learning rate is an end of its
//!    grid is re-run with the grid moved that way before the ladder goes on (at most twice).
//!    The ladder stops where the rule is met, or where the data, the model or memory end it.
//! 3. **The study**: every power of two between the two ends; per-B learning-rate ranges of 16×
//!    centred on the pilots' best (interpolated in log-log between pilots); a step budget and an
//!    example cap of 3× the pilots' steps and examples; evaluations 20 times before the target at
//!    the fastest B, then every 5 %.

use crate::core::calibrate::{
    CalibrateId, CalibrateMark, Calibrated, End, Facts, PilotReading, TargetChoice,
};
use crate::core::plan::trial_seed;
use crate::core::record::{Header, TrialRecord};
use crate::core::trial::{DeviceSpec, Outcome, TrialSpec};
use crate::workload::spec::{Calibrate, Metaparams, OptimizerKind, Precision, Preset, Target};

/// The reference batch size, if the workload allows it (else the allowed power of two nearest).
pub const REF_BATCH: usize = 64;
/// Learning rates of the reference scan (a geometric grid over the optimizer's wide range).
pub const REF_GRID: usize = 8;
/// The reference scan's budget: this many passes over the training set…
pub const REF_EPOCHS: f64 = 8.0;
/// …at most this many training FLOPs for the whole scan (forward and backward: 3× forward)…
pub const REF_FLOPS: f64 = 3e12;
/// …and between these many steps.
pub const REF_STEPS: [u64; 2] = [200, 4000];
/// Steps of a reference scan where the workload has no dataset (the noisy quadratic model).
pub const REF_STEPS_CLOSED_FORM: u64 = 2000;
/// The target is what the best scan curve reached by this fraction of its budget.
pub const TARGET_AT: f64 = 1.0 / 3.0;
/// The ladder's looser rungs: what it reached by these fractions.
pub const RUNGS_AT: [f64; 2] = [1.0 / 6.0, 1.0 / 12.0];
/// Learning rates of a ladder pilot, spaced by `LADDER_SPACING`.
pub const LADDER_GRID: usize = 4;
pub const LADDER_SPACING: f64 = 2.5;
/// Batch-size step of the ladder.
pub const LADDER_STEP: usize = 4;
/// Exponent of the rule the ladder centres its next pilot by (½: halfway between no change
/// and the linear rule, which the grid's span covers both ways).
pub const LADDER_RULE_UP: f64 = 0.5;
pub const LADDER_RULE_DOWN: f64 = 0.75;
/// Upward pilots run 1.5× the previous pilot's steps: not reaching by then is "not faster".
pub const UP_BUDGET: f64 = 1.5;
/// Downward pilots run 1.5× the steps perfect scaling predicts.
pub const DOWN_BUDGET: f64 = 1.5;
/// The ladder ends where B is this far past the fitted B_crit, both ways. The regime model
/// (slopes −1, −½, 0; `analysis::regimes`) puts the start of maximal data parallelism near
/// 4·B_crit (where the −½ tangent at B_crit meets S_min) and the end of perfect scaling near
/// B_crit/4, and names a regime only with two measured batch sizes in it: at 16·B_crit and
/// B_crit/16 the study holds at least two past each bend (at 8× the second sat on the boundary,
/// and the char-LSTM's curve, shallower at small B than S_min(1 + B_crit/B), lost perfect
/// scaling at B_crit/8 and maximal data parallelism at 8·B_crit).
pub const END_FACTOR_UP: f64 = 16.0;
pub const END_FACTOR_DOWN: f64 = 16.0;
/// Maximal data parallelism: S falls by less than this factor per doubling of B.
pub const FLAT_PER_DOUBLING: f64 = 0.87;
/// Perfect scaling: S grows by at least this factor per halving of B.
pub const PERFECT_PER_HALVING: f64 = 1.73;
/// Re-runs of a pilot whose best learning rate is an end of its grid.
pub const MAX_MOVES: u32 = 2;
/// The study's learning-rate range at each B: its centre ×/÷ this.
pub const LR_HALF_SPAN: f64 = 4.0;
/// 1−γ range of a calibrated momentum study (learning rates are then effective rates η/(1−γ)).
pub const ONE_MINUS_MOMENTUM: [f64; 2] = [0.02, 0.5];
/// Pilots' γ (β1 for Adam).
pub const PILOT_MOMENTUM: f64 = 0.9;
/// Step budget and example cap: this many times the pilots' steps and examples.
pub const BUDGET_FACTOR: f64 = 3.0;
/// Evaluations before the target at the fastest batch size.
pub const EVALS_BEFORE_TARGET: u64 = 20;

/// The optimizer's wide learning-rate range for the reference scan (for momentum optimizers the
/// effective rate η/(1−γ)).
pub fn wide_range(opt: OptimizerKind) -> [f64; 2] {
    match opt {
        OptimizerKind::Sgd | OptimizerKind::Momentum | OptimizerKind::Nesterov => [1e-3, 10.0],
        OptimizerKind::Adam => [1e-5, 1e-1],
    }
}

/// Everything the rounds depend on.
#[derive(Clone, Debug, PartialEq)]
pub struct Inputs {
    /// The study as given (placeholders where `calibrate` says).
    pub preset: Preset,
    pub calibrate: Calibrate,
    /// The study's batch sizes when given.
    pub batch_sizes: Vec<usize>,
    pub trials_per_batch: usize,
    pub facts: Facts,
    pub seed: u64,
    pub devices: DeviceSpec,
    pub precision: Precision,
    /// Trials run at once (the header's): the pilots' group times over it are wall time.
    pub concurrency: usize,
}

/// One pilot: trials at one B, one per learning rate.
#[derive(Clone, Debug, PartialEq)]
pub struct Pilot {
    pub batch_size: usize,
    pub lrs: Vec<f64>,
    pub budget: u64,
    pub eval_every: u64,
    pub target: Option<f64>,
}

/// What the calibration does next.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Run these pilot trials (a round; the logged ones included).
    Run(Vec<TrialSpec>),
    Done(Box<Calibrated>),
    /// The rules cannot go on (nothing trained): the message says why and what to give.
    Failed(String),
}

/// The next round, or the study, from the pilot records so far (other records are ignored).
pub fn next(inp: &Inputs, records: &[TrialRecord]) -> Next {
    let pilots: Vec<&TrialRecord> = records
        .iter()
        .filter(|r| r.spec.calibrate.is_some())
        .collect();
    let mut rounds = Rounds {
        inp,
        records: &pilots,
        round: 0,
    };
    match rounds.run() {
        Ok(done) => done,
        Err(step) => step,
    }
}

/// The calibration rounds' inputs of a run log's header (None without a calibration stage):
/// the given study, what it leaves out, the recorded facts, the seed and the devices.
pub fn inputs_of_header(h: &Header) -> Option<Inputs> {
    let facts = h.calibration.clone()?;
    let calibrate = h.preset.calibrate.unwrap_or_default();
    Some(Inputs {
        preset: h.preset.clone(),
        calibrate,
        batch_sizes: if calibrate.batch_sizes {
            Vec::new()
        } else {
            h.batch_sizes.clone()
        },
        trials_per_batch: h.trials_per_batch.max(1),
        facts,
        seed: h.seed,
        devices: crate::core::devices::trial_devices(&h.devices, h.preset.sweep.trials_per_device),
        precision: h.preset.workload.precision,
        concurrency: h.concurrency.max(1),
    })
}

/// The header a calibrated study continues under: the given header with the calibrated preset,
/// batch sizes and trials per batch size (what the search and confirm stages plan from).
pub fn calibrated_header(given: &Header, c: &Calibrated) -> Header {
    Header {
        preset: c.preset.clone(),
        batch_sizes: c.batch_sizes.clone(),
        trials_per_batch: c.trials_per_batch,
        ..given.clone()
    }
}

struct Rounds<'a> {
    inp: &'a Inputs,
    records: &'a [&'a TrialRecord],
    round: u32,
}

/// One direction of the ladder.
#[derive(Clone, Debug)]
struct Ladder {
    up: bool,
    /// The settled reading at the B before `last`'s (None: `last` is the reference).
    prev: Option<PilotReading>,
    last: PilotReading,
    moves: u32,
    end: Option<End>,
    pending: Option<Pilot>,
}

impl Rounds<'_> {
    fn metric_target(&self, value: f64) -> Target {
        Target {
            metric: self.inp.preset.workload.target.metric,
            value,
        }
    }

    /// Runs (replays) the rounds; Err carries the round to run next or a failure.
    fn run(&mut self) -> Result<Next, Next> {
        let inp = self.inp;
        let given_target = (!inp.calibrate.target).then_some(inp.preset.workload.target.value);
        if inp.preset.workload.target.metric.maximised() && inp.calibrate.target {
            return Err(Next::Failed(
                "the lab does not choose a target for a maximised metric (transfer_acc): give \
                 [workload.target]"
                    .into(),
            ));
        }
        // Round 0: the reference scan.
        let b_ref = self.reference_batch();
        let scan = self.reference_pilot(b_ref, given_target);
        let recs = self.play(std::slice::from_ref(&scan))?;
        let (mut reference, choice) = self.read_reference(&scan, &recs[0], given_target)?;
        let target = choice
            .as_ref()
            .map_or(given_target.unwrap_or(0.0), |c| c.value);
        let mut pilots = vec![reference.clone()];
        // a best learning rate at an end of the scan's grid: the grid moved that way, at most
        // MAX_MOVES times, before the ladder starts from it
        let mut moves = 0;
        while inp.calibrate.search && moves < MAX_MOVES && reference.edge() != 0 {
            moves += 1;
            let p = self.moved(&reference, target);
            self.round += 1;
            let recs = self.play(std::slice::from_ref(&p))?;
            let reading = self.read_pilot(&p, &recs[0]);
            pilots.push(reading.clone());
            if reading.steps.unwrap_or(u64::MAX) <= reference.steps.unwrap_or(u64::MAX) {
                reference = reading;
            } else {
                break;
            }
        }
        if reference.steps.is_none() {
            return Err(Next::Failed(format!(
                "no learning rate of the reference scan at B = {} reached the target {} within \
                 its {} steps: give a looser [workload.target] or a [search] learning_rate range",
                reference.batch_size, target, reference.budget
            )));
        }
        let ladder_needed = inp.calibrate.batch_sizes
            || inp.calibrate.search
            || inp.calibrate.budget
            || inp.calibrate.eval;
        let mut up = Ladder::new(true, reference.clone());
        let mut down = Ladder::new(false, reference.clone());
        if !ladder_needed {
            up.end = Some(End::Given {
                batch_size: inp.batch_sizes.iter().copied().max().unwrap_or(b_ref),
            });
            down.end = Some(End::Given {
                batch_size: inp.batch_sizes.iter().copied().min().unwrap_or(b_ref),
            });
        }
        loop {
            for l in [&mut up, &mut down] {
                if l.end.is_none() && l.pending.is_none() {
                    l.pending = self.next_pilot(l, target);
                }
            }
            let round: Vec<Pilot> = [&up, &down]
                .iter()
                .filter_map(|l| l.pending.clone())
                .collect();
            if round.is_empty() {
                break;
            }
            self.round += 1;
            let recs = self.play(&round)?;
            let mut read = Vec::new();
            for (k, p) in round.iter().enumerate() {
                let reading = self.read_pilot(p, &recs[k]);
                pilots.push(reading.clone());
                read.push(reading);
            }
            let mut read = read.into_iter();
            for l in [&mut up, &mut down] {
                if let Some(p) = l.pending.take() {
                    let reading = read.next().expect("one reading per pilot");
                    self.advance(l, &p, reading, &pilots);
                }
            }
        }
        let (Some(high), Some(low)) = (up.end.clone(), down.end.clone()) else {
            return Err(Next::Failed(
                "the calibration's ladder ended without ends".into(),
            ));
        };
        Ok(Next::Done(Box::new(
            self.assemble(target, choice, pilots, low, high),
        )))
    }

    /// The allowed power of two nearest `REF_BATCH` (the training set permitting, at most a
    /// sixteenth of it, so the ladder has room to climb).
    fn reference_batch(&self) -> usize {
        let f = &self.inp.facts;
        let cap = f.n_train.map_or(usize::MAX, |n| (n / 16).max(1));
        let want = REF_BATCH.min(cap);
        let given = &self.inp.batch_sizes;
        if !self.inp.calibrate.batch_sizes && !given.is_empty() {
            // the given batch size nearest B_ref (log scale)
            return *given
                .iter()
                .min_by(|a, b| {
                    let d = |x: usize| ((x as f64).ln() - (want as f64).ln()).abs();
                    d(**a).total_cmp(&d(**b))
                })
                .unwrap_or(&want);
        }
        *f.allowed
            .iter()
            .min_by(|a, b| {
                let d = |x: usize| ((x as f64).ln() - (want as f64).ln()).abs();
                d(**a).total_cmp(&d(**b)).then(a.cmp(b))
            })
            .unwrap_or(&1)
    }

    /// The reference scan at `b`: the wide grid (or the given range at `b`), the scan budget.
    fn reference_pilot(&self, b: usize, target: Option<f64>) -> Pilot {
        let inp = self.inp;
        let range = if inp.calibrate.search {
            let [lo, hi] = wide_range(inp.preset.workload.optimizer);
            [lo * self.pilot_factor(), hi * self.pilot_factor()]
        } else {
            self.given_range(b)
        };
        let lrs = geometric(range[0], range[1], REF_GRID);
        let budget = match (inp.facts.n_train, inp.facts.train_flops) {
            (Some(n), flops) => {
                let mut examples = REF_EPOCHS * n as f64;
                if let Some(f) = flops.filter(|f| *f > 0.0) {
                    examples = examples.min(REF_FLOPS / (f * lrs.len() as f64));
                }
                ((examples / b as f64).ceil() as u64).clamp(REF_STEPS[0], REF_STEPS[1])
            }
            (None, _) => REF_STEPS_CLOSED_FORM,
        };
        let budget = if inp.calibrate.budget {
            budget
        } else {
            inp.preset.workload.budget_for(b)
        };
        Pilot {
            batch_size: b,
            lrs,
            budget,
            eval_every: (budget / 64).max(1),
            target,
        }
    }

    /// The given search range at `b` in the pilots' η (an effective range times 1 − γ).
    fn given_range(&self, b: usize) -> [f64; 2] {
        let s = &self.inp.preset.search;
        let [lo, hi] = s.lr_range_at(b);
        let f = if s.effective_lr {
            self.pilot_factor()
        } else {
            1.0
        };
        [lo * f, hi * f]
    }

    /// η = effective rate × (1 − γ) for the momentum optimizers' pilots (γ = 0.9).
    fn pilot_factor(&self) -> f64 {
        if self.inp.preset.workload.optimizer.uses_momentum() {
            1.0 - PILOT_MOMENTUM
        } else {
            1.0
        }
    }

    /// The records of `round`'s pilots (in order), or Err(Run) when a point is not logged.
    fn play(&self, round: &[Pilot]) -> Result<Vec<Vec<Option<&TrialRecord>>>, Next> {
        let specs = self.specs(round);
        let mut out: Vec<Vec<Option<&TrialRecord>>> =
            round.iter().map(|p| vec![None; p.lrs.len()]).collect();
        let mut missing = false;
        for (pi, lj, spec) in specs.iter() {
            match self.records.iter().find(|r| r.trial_id == spec.trial_id) {
                Some(r) => out[*pi][*lj] = Some(r),
                None => missing = true,
            }
        }
        if missing {
            return Err(Next::Run(specs.into_iter().map(|(_, _, s)| s).collect()));
        }
        Ok(out)
    }

    /// The trial specs of a round: point = pilot index · 1000 + learning-rate index.
    fn specs(&self, round: &[Pilot]) -> Vec<(usize, usize, TrialSpec)> {
        let inp = self.inp;
        let w = &inp.preset.workload;
        let mut out = Vec::new();
        for (pi, p) in round.iter().enumerate() {
            for (lj, &lr) in p.lrs.iter().enumerate() {
                let point = (pi * 1000 + lj) as u32;
                let id = CalibrateId {
                    round: self.round,
                    point,
                }
                .encode()
                .expect("calibration ids in range");
                let mut mp = Metaparams {
                    learning_rate: lr,
                    momentum: PILOT_MOMENTUM,
                    ..w.defaults.clone()
                };
                if inp.calibrate.defaults {
                    mp.schedule = Default::default();
                }
                out.push((
                    pi,
                    lj,
                    TrialSpec {
                        trial_id: id,
                        batch_size: p.batch_size,
                        devices: inp.devices.clone(),
                        precision: inp.precision,
                        metaparams: crate::workload::applied::as_applied(w, &mp),
                        seed: trial_seed(inp.seed, id),
                        repeat_of: None,
                        confirm: None,
                        calibrate: Some(CalibrateMark {
                            round: self.round,
                            point,
                            budget: p.budget,
                            eval_every: p.eval_every,
                            target: p.target,
                        }),
                    },
                ));
            }
        }
        out
    }

    /// The reference scan's reading, and the target it chooses (none when given).
    fn read_reference(
        &self,
        scan: &Pilot,
        recs: &[Option<&TrialRecord>],
        given: Option<f64>,
    ) -> Result<(PilotReading, Option<TargetChoice>), Next> {
        let metric = self.inp.preset.workload.target.metric;
        let choice = match given {
            Some(_) => None,
            None => {
                let at = ((scan.budget as f64 * TARGET_AT).floor() as u64).max(1);
                // the best value any curve met by `at`, and over the whole budget
                let best_by = |limit: u64| {
                    recs.iter()
                        .flatten()
                        .flat_map(|r| r.outcome.evals.iter())
                        .filter(|e| e.step <= limit && e.metric.is_finite())
                        .map(|e| e.metric)
                        .fold(f64::INFINITY, f64::min)
                };
                let (v, best) = (best_by(at), best_by(u64::MAX));
                let start = recs
                    .iter()
                    .flatten()
                    .filter_map(|r| r.outcome.evals.first())
                    .map(|e| e.metric)
                    .filter(|m| m.is_finite())
                    .fold(f64::NEG_INFINITY, f64::max);
                if !v.is_finite() || v.partial_cmp(&start) != Some(std::cmp::Ordering::Less) {
                    return Err(Next::Failed(format!(
                        "the reference scan at B = {} trained no learning rate in {:.1e}–{:.1e} \
                         past its first evaluation ({} steps each): the lab cannot choose a \
                         target; give [workload.target] and [search] learning_rate",
                        scan.batch_size,
                        scan.lrs[0],
                        scan.lrs[scan.lrs.len() - 1],
                        scan.budget
                    )));
                }
                let value = round_looser(v, metric.maximised());
                let mut rungs: Vec<f64> = RUNGS_AT
                    .iter()
                    .map(|f| ((scan.budget as f64 * f).floor() as u64).max(1))
                    .map(|step| round_looser(best_by(step), metric.maximised()))
                    .filter(|r| r.is_finite() && *r > value && *r < start)
                    .collect();
                rungs.sort_by(|a, b| b.total_cmp(a));
                rungs.dedup();
                Some(TargetChoice {
                    value,
                    batch_size: scan.batch_size,
                    at_step: at,
                    budget: scan.budget,
                    best_value: best,
                    rungs,
                })
            }
        };
        let target = choice.as_ref().map_or(given.unwrap_or(0.0), |c| c.value);
        let mut reading = self.read_at(scan, recs, target);
        reading.round = 0;
        Ok((reading, choice))
    }

    /// A pilot's reading at `target`: each trial's first evaluation meeting it; the best η is
    /// the fastest one's — of several that tie (the same evaluation), the middle one, and of two
    /// middle ones the one nearer the grid's centre, so that a flat optimum is not read as an end
    /// of the grid (two rates tying at an end and its neighbour do not move the grid).
    fn read_at(&self, p: &Pilot, recs: &[Option<&TrialRecord>], target: f64) -> PilotReading {
        let t = self.metric_target(target);
        let mut reached: Vec<(u64, usize)> = Vec::new();
        let mut diverged = Vec::new();
        for (j, r) in recs.iter().enumerate() {
            let Some(r) = r else { continue };
            let reach = crate::analysis::steps::first_meeting(&r.outcome.evals, &t);
            if let Some(s) = reach {
                reached.push((s, j));
            }
            if matches!(r.outcome.outcome, Outcome::Diverged { .. }) && reach.is_none() {
                diverged.push(p.lrs[j]);
            }
        }
        let fastest = reached.iter().map(|r| r.0).min();
        let best = fastest.map(|s| {
            let mut tied: Vec<usize> = reached.iter().filter(|r| r.0 == s).map(|r| r.1).collect();
            tied.sort_unstable();
            (s, p.lrs[middle_tied(&tied, p.lrs.len())])
        });
        PilotReading {
            round: self.round,
            batch_size: p.batch_size,
            lrs: p.lrs.clone(),
            budget: p.budget,
            steps: best.map(|b| b.0),
            best_lr: best.map(|b| b.1),
            diverged,
        }
    }

    fn read_pilot(&self, p: &Pilot, recs: &[Option<&TrialRecord>]) -> PilotReading {
        self.read_at(p, recs, p.target.unwrap_or(0.0))
    }

    /// The next pilot of a ladder direction, or None with its end set.
    fn next_pilot(&self, l: &mut Ladder, target: f64) -> Option<Pilot> {
        let inp = self.inp;
        let last = &l.last;
        // a best learning rate at an end of its grid: the same B again, the grid moved
        if inp.calibrate.search && l.moves < MAX_MOVES && last.edge() != 0 {
            l.moves += 1;
            return Some(self.moved(last, target));
        }
        let b = last.batch_size;
        let next_b = if l.up {
            self.allowed_above(b)
        } else {
            self.allowed_below(b)
        };
        let Some(nb) = next_b else {
            let why = if l.up {
                &inp.facts.high_limit
            } else {
                &inp.facts.low_limit
            };
            l.end = Some(if inp.calibrate.batch_sizes {
                End::Limit {
                    batch_size: b,
                    why: why.clone(),
                }
            } else {
                End::Given { batch_size: b }
            });
            return None;
        };
        let ratio = nb as f64 / b as f64;
        let rule = if l.up {
            LADDER_RULE_UP
        } else {
            LADDER_RULE_DOWN
        };
        let centre = if inp.calibrate.search {
            let c = last.best_lr.unwrap_or(last.lrs[last.lrs.len() / 2]);
            c * ratio.powf(rule)
        } else {
            0.0
        };
        let mut p = self.ladder_pilot(nb, last, ratio, target, l.up);
        if inp.calibrate.search {
            p.lrs = grid_around(centre, LADDER_GRID, LADDER_SPACING);
        }
        Some(p)
    }

    /// The pilot at `last`'s B with its grid moved two steps towards the end its best learning
    /// rate sits at.
    fn moved(&self, last: &PilotReading, target: f64) -> Pilot {
        let dir = last.edge() as f64;
        let c = last.best_lr.unwrap_or(last.lrs[last.lrs.len() / 2]);
        // two grid steps: the new grid holds only rates past the old best
        let centre = c * LADDER_SPACING.powf(dir * 2.0);
        Pilot {
            lrs: grid_around(centre, LADDER_GRID, LADDER_SPACING),
            // the same steps again: a reach by then is at least as fast
            ..self.ladder_pilot(last.batch_size, last, 1.0, target, true)
        }
    }

    /// A ladder pilot at `b`, `ratio` = b / the last pilot's B: its budget from the last
    /// pilot's steps, its grid from the given range when the search is given.
    fn ladder_pilot(
        &self,
        b: usize,
        last: &PilotReading,
        ratio: f64,
        target: f64,
        up: bool,
    ) -> Pilot {
        let inp = self.inp;
        let prev = last.steps_or_budget() as f64;
        let steps = if up {
            UP_BUDGET * prev
        } else {
            DOWN_BUDGET * prev / ratio
        };
        let budget = if inp.calibrate.budget {
            steps.ceil() as u64
        } else {
            inp.preset.workload.budget_for(b)
        };
        let lrs = if inp.calibrate.search {
            Vec::new()
        } else {
            let [lo, hi] = self.given_range(b);
            geometric(lo, hi, LADDER_GRID)
        };
        Pilot {
            batch_size: b,
            lrs,
            budget: budget.max(8),
            eval_every: (budget / 40).max(1),
            target: Some(target),
        }
    }

    /// The next batch size up the ladder: ×4 (or the largest allowed when ×4 is past it; None
    /// past the top or, with given batch sizes, past the largest given).
    fn allowed_above(&self, b: usize) -> Option<usize> {
        let top = if self.inp.calibrate.batch_sizes {
            *self.inp.facts.allowed.last()?
        } else {
            *self.inp.batch_sizes.iter().max()?
        };
        if b >= top {
            return None;
        }
        let want = b.saturating_mul(LADDER_STEP);
        let mut cands = self.candidates();
        cands.retain(|&x| x > b && x <= want.min(top));
        cands.last().copied()
    }

    fn allowed_below(&self, b: usize) -> Option<usize> {
        let bottom = if self.inp.calibrate.batch_sizes {
            *self.inp.facts.allowed.first()?
        } else {
            *self.inp.batch_sizes.iter().min()?
        };
        if b <= bottom {
            return None;
        }
        let want = (b / LADDER_STEP).max(bottom);
        let mut cands = self.candidates();
        cands.retain(|&x| x < b && x >= want);
        cands.first().copied()
    }

    /// The batch sizes a ladder may visit: the allowed powers of two, or the given ones.
    fn candidates(&self) -> Vec<usize> {
        if self.inp.calibrate.batch_sizes {
            self.inp.facts.allowed.clone()
        } else {
            let mut v = self.inp.batch_sizes.clone();
            v.sort_unstable();
            v
        }
    }

    /// Reads a ladder pilot: a moved grid replaces the last reading at its B; a new B checks the
    /// rule that ends the ladder against the fit of S_min(1 + B_crit/B) to every pilot so far
    /// (`all`; one pilot's steps are one seed's, so one ratio alone is noisy): maximal data
    /// parallelism once B ≥ `END_FACTOR_UP`·B_crit, perfect scaling once B ≤
    /// B_crit/`END_FACTOR_DOWN`.
    /// With fewer than three pilot points, the ratio to the previous pilot decides. A pilot
    /// that reached nothing within its budget ends its direction at once (not faster upward,
    /// slower than perfect scaling predicts downward).
    fn advance(&self, l: &mut Ladder, p: &Pilot, reading: PilotReading, all: &[PilotReading]) {
        if p.batch_size == l.last.batch_size {
            // a moved grid at the same B: keep whichever found the faster reach
            if reading.steps.unwrap_or(u64::MAX) <= l.last.steps.unwrap_or(u64::MAX) {
                l.last = reading;
            } else {
                l.moves = MAX_MOVES; // the move did not help: stop moving
            }
        } else {
            l.prev = Some(std::mem::replace(&mut l.last, reading));
            l.moves = 0;
        }
        // a best learning rate at an end of its grid moves the grid first (`next_pilot`): the
        // end is decided on the B's settled reading
        if self.inp.calibrate.search && l.moves < MAX_MOVES && l.last.edge() != 0 {
            return;
        }
        let Some(prev) = &l.prev else { return };
        let doublings = (l.last.batch_size as f64 / prev.batch_size as f64)
            .log2()
            .abs();
        let ratio = l.last.steps_or_budget() as f64 / (prev.steps_or_budget() as f64).max(1.0);
        let b = l.last.batch_size as f64;
        let b_crit = fitted_b_crit(all);
        let observed = l.last.steps.is_none()
            || match (b_crit, l.up) {
                (Some(bc), true) => b >= END_FACTOR_UP * bc,
                (Some(bc), false) => b <= bc / END_FACTOR_DOWN,
                (None, true) => ratio >= FLAT_PER_DOUBLING.powf(doublings),
                (None, false) => ratio >= PERFECT_PER_HALVING.powf(doublings),
            };
        // (the moves at this B are spent: the ladder goes on from it)
        l.moves = MAX_MOVES;
        if observed && self.inp.calibrate.batch_sizes {
            l.end = Some(End::Observed {
                batch_size: l.last.batch_size,
                ratio,
                b_crit,
            });
        }
    }
}

impl Ladder {
    /// A ladder from `last` (settled: its grid is not moved again).
    fn new(up: bool, last: PilotReading) -> Self {
        Ladder {
            up,
            prev: None,
            last,
            moves: MAX_MOVES,
            end: None,
            pending: None,
        }
    }
}

/// B_crit of S_min(1 + B_crit/B) fitted to the pilots' steps (the fastest reach at each B);
/// None below three batch sizes that reached.
/// Of the grid indices `tied` (ascending, at least one) in a grid of `n`, the middle one; of two
/// middle ones, the one nearer the grid's centre (the lower where both are as near).
pub fn middle_tied(tied: &[usize], n: usize) -> usize {
    let (a, b) = (tied[(tied.len() - 1) / 2], tied[tied.len() / 2]);
    let centre = (n as f64 - 1.0) / 2.0;
    if (b as f64 - centre).abs() < (a as f64 - centre).abs() {
        b
    } else {
        a
    }
}

pub fn fitted_b_crit(pilots: &[PilotReading]) -> Option<f64> {
    let mut pts: Vec<(f64, f64)> = Vec::new();
    for p in pilots {
        let Some(s) = p.steps else { continue };
        let b = p.batch_size as f64;
        match pts.iter_mut().find(|q| q.0 == b) {
            Some(q) => q.1 = q.1.min(s as f64),
            None => pts.push((b, s as f64)),
        }
    }
    if pts.len() < 3 {
        return None;
    }
    crate::analysis::fit::fit_scaling(&pts).map(|f| f.b_crit)
}

/// `n` values log-spaced from `lo` to `hi` inclusive.
pub fn geometric(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    if n <= 1 || hi <= lo {
        return vec![lo];
    }
    let (a, b) = (lo.ln(), hi.ln());
    (0..n)
        .map(|i| (a + (b - a) * i as f64 / (n - 1) as f64).exp())
        .collect()
}

/// `n` values spaced by `spacing`, centred on `c` (log scale).
pub fn grid_around(c: f64, n: usize, spacing: f64) -> Vec<f64> {
    let half = (n as f64 - 1.0) / 2.0;
    (0..n).map(|i| c * spacing.powf(i as f64 - half)).collect()
}

/// Piecewise-linear interpolation of ln y in ln x through `pts` (sorted by x), constant beyond
/// the ends; 1 without points.
pub fn interp_loglog(pts: &[(f64, f64)], x: f64) -> f64 {
    match pts {
        [] => 1.0,
        [p] => p.1,
        _ => {
            if x <= pts[0].0 {
                return pts[0].1;
            }
            for w in pts.windows(2) {
                let ((x0, y0), (x1, y1)) = (w[0], w[1]);
                if x <= x1 {
                    let t = (x.ln() - x0.ln()) / (x1.ln() - x0.ln()).max(1e-300);
                    return (y0.ln() + t * (y1.ln() - y0.ln())).exp();
                }
            }
            pts[pts.len() - 1].1
        }
    }
}

/// `v` rounded to two significant digits, away from the goal (up for a minimised metric).
pub fn round_looser(v: f64, maximised: bool) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return v;
    }
    let scale = 10f64.powf(v.log10().floor() - 1.0);
    let r = if maximised {
        (v / scale).floor() * scale
    } else {
        (v / scale).ceil() * scale
    };
    // clean decimal representation (0.0370000001 → 0.037)
    format!("{r:.12}").parse().unwrap_or(r)
}

pub mod size;
mod study;

#[cfg(test)]
pub(crate) mod tests;
