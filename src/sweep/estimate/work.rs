//! The work a sweep still has ([`Work`]): every stage its plan runs, as the jobs (trials or
//! fused groups) the scheduler starts, each at its full step budget with its evaluations —
//! what the bound counts, and what the expectation scales by measured trials.

use std::collections::HashMap;

use super::super::SweepConfig;
use crate::analysis::calibrate::{self as rules, Inputs, Next};
use crate::core::calibrate::{workload_for, CalibrateMark};
use crate::core::record::TrialRecord;
use crate::core::stages::Stage;
use crate::core::trial::TrialSpec;
use crate::core::widen::WIDEN_ID_BASE;
use crate::workload::spec::Workload;

/// One job: a trial, or a fused group of trials of one batch size, that holds one slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Job {
    pub stage: Stage,
    /// Its batch size; None: any of the sweep's (a `--until` trial whose B its rounds choose:
    /// bounded at the costliest).
    pub batch_size: Option<usize>,
    pub members: usize,
    /// Each member's step budget.
    pub steps: u64,
    /// Each member's evaluations within it (the last at the end of the budget included).
    pub evals: u64,
    /// Jobs with the same chain run one after another where `serial` (a batch size's search
    /// trials under early stopping, a pilot's groups); the others of a chain after those.
    pub chain: u64,
    pub serial: bool,
    /// It may not run at all (`--until` rounds, `--widen` groups): the expectation counts it
    /// from none to all, the bound as run.
    pub optional: bool,
    /// Seconds it has run already (a running trial).
    pub ran_s: f64,
}

/// Trials of a stage still to run: those the plan is sure to run, and at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageTrials {
    pub stage: Stage,
    pub sure: usize,
    pub most: usize,
}

/// The calibration stage's part of the work.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pilots {
    /// Its rounds still to run, one after another: the current round's pilots as the rules
    /// place them, then the rounds the rules may still place, at most (the reference scan's
    /// moves and the batch ladder, every pilot to its budget).
    pub rounds: Vec<Vec<Job>>,
    /// The reference scan while it is still to run: (trials, steps each, B_ref).
    pub scan: Option<(usize, u64, usize)>,
    /// Pilot trials the current round still runs, and at most in all.
    pub now: usize,
    pub most: usize,
    /// The whole run's wall-time budget the calibration sizes the study to (None: the study
    /// gives its trials per batch size or its confirm stage).
    pub sized_s: Option<f64>,
}

/// What a sweep still runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Work {
    /// The calibration stage while it has rounds to run.
    pub pilots: Option<Pilots>,
    /// The study after the calibration stage is known (false while its pilots run, or after a
    /// calibration that failed).
    pub study_known: bool,
    /// The study's batch sizes (the calibrated ones once chosen).
    pub batch_sizes: Vec<usize>,
    /// Jobs placed as the plan goes (search groups, the confirm stage's first blocks, running
    /// trials): side by side on the slots, within their chains.
    pub side: Vec<Job>,
    /// Jobs placed in waves, each when nothing runs (`--until` rounds, repeats, `--widen`):
    /// bounded one after another.
    pub waved: Vec<Job>,
    pub trials: Vec<StageTrials>,
    /// Each batch size's step budget and evaluations (what a job of any B is bounded at).
    pub budgets: Vec<(usize, u64, u64)>,
}

impl Work {
    /// The work of `cfg` with `fuse` trials per fused group at most, after the trials `done`
    /// (its run log's records) with `running` ((trial, seconds it ran) not logged yet);
    /// `calibrating`: the calibration stage's inputs while it has not chosen the study.
    pub fn of(
        cfg: &SweepConfig,
        fuse: usize,
        calibrating: Option<&Inputs>,
        done: &[TrialRecord],
        running: &[(TrialSpec, f64)],
    ) -> Work {
        let fuse = fuse.max(1);
        let mut cfg = cfg.clone();
        if let Some(inp) = calibrating {
            match rules::next(inp, done) {
                Next::Run(round) => {
                    return Work {
                        pilots: Some(pilots(inp, &round, fuse, done, running)),
                        ..Work::default()
                    }
                }
                Next::Failed(_) => return Work::default(),
                Next::Done(c) => {
                    cfg.preset = c.preset.clone();
                    cfg.batch_sizes = c.batch_sizes.clone();
                    cfg.trials_per_batch = c.trials_per_batch;
                }
            }
        }
        study(&cfg, fuse, done, running)
    }

    /// Trials still to run at most, every stage.
    pub fn most_trials(&self) -> usize {
        self.trials.iter().map(|t| t.most).sum::<usize>()
            + self.pilots.as_ref().map_or(0, |p| p.most)
    }
}

/// Evaluations of a trial of `w` that runs `steps` steps: on the cadence, and at the end.
pub fn evals_within(w: &Workload, steps: u64) -> u64 {
    let mut n = 0u64;
    let mut at = w.next_eval(0);
    while at <= steps && n < 1_000_000 {
        n += 1;
        at = w.next_eval(at);
    }
    n + 1
}

/// Splits `n` trials into groups of at most `room`: their sizes.
fn groups(n: usize, room: usize) -> Vec<usize> {
    let room = room.max(1);
    let mut v = vec![room; n / room];
    if !n.is_multiple_of(room) {
        v.push(n % room);
    }
    v
}

/// The study's work: search, confirm stage (first blocks, `--until` rounds up to the trial
/// budget), `--until` search trials, `--widen` groups and repeats, less what is done or running.
fn study(
    cfg: &SweepConfig,
    fuse: usize,
    done: &[TrialRecord],
    running: &[(TrialSpec, f64)],
) -> Work {
    let w = &cfg.preset.workload;
    let sweep = &cfg.preset.sweep;
    let n = cfg.batch_sizes.len();
    let k = cfg.trials_per_batch;
    let plan = n * k;
    let bi_of: HashMap<usize, usize> = cfg
        .batch_sizes
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, i))
        .collect();
    // (search plan, `--until` search, confirm, repeats, `--widen`) done or running, per B
    let mut have = vec![[0usize; 5]; n];
    let kind = |id: u64| match Stage::of(id) {
        Stage::Search if (id as usize) < plan => Some(0),
        Stage::Search if id < WIDEN_ID_BASE => Some(1),
        Stage::Search => Some(4),
        Stage::Confirm => Some(2),
        Stage::Repeats => Some(3),
        Stage::Calibrate => None,
    };
    let ids = done
        .iter()
        .map(|r| (r.trial_id, r.spec.batch_size))
        .chain(running.iter().map(|(s, _)| (s.trial_id, s.batch_size)));
    for (id, b) in ids {
        if let (Some(&bi), Some(c)) = (bi_of.get(&b), kind(id)) {
            have[bi][c] += 1;
        }
    }
    let mut out = Work {
        study_known: true,
        batch_sizes: cfg.batch_sizes.clone(),
        ..Work::default()
    };
    let mut count = |stage: Stage, sure: usize, most: usize| match out
        .trials
        .iter_mut()
        .find(|t| t.stage == stage)
    {
        Some(t) => {
            t.sure += sure;
            t.most += most;
        }
        None => out.trials.push(StageTrials { stage, sure, most }),
    };
    let mut side = Vec::new();
    let mut waved = Vec::new();
    let job = |stage: Stage, b: usize, members: usize, chain: usize, serial: bool| {
        full_job(w, stage, b, members, chain, serial)
    };
    // a confirm group holds whole blocks of r seeds where fused (`scheduler::cut::group_room`)
    let confirm_room = match sweep.confirm {
        Some(p) if p.seeds > 1 && fuse > 1 && p.seeds <= crate::train::runner::MAX_GROUP => {
            p.seeds * (fuse / p.seeds).max(1)
        }
        _ => fuse,
    };
    let mut first_total = 0;
    let mut confirm_beyond = 0;
    for (bi, &b) in cfg.batch_sizes.iter().enumerate() {
        let search_left = k.saturating_sub(have[bi][0]);
        count(Stage::Search, search_left, search_left);
        for m in groups(search_left, fuse) {
            side.push(job(Stage::Search, b, m, bi, sweep.early_stopping));
        }
        if let Some(p) = sweep.confirm {
            let first = p.configs.min(k) * p.seeds;
            first_total += first;
            let left = first.saturating_sub(have[bi][2]);
            confirm_beyond += have[bi][2].saturating_sub(first);
            count(Stage::Confirm, left, left);
            for m in groups(left, confirm_room) {
                side.push(job(Stage::Confirm, b, m, bi, false));
            }
        }
        if cfg.repeats > 1 {
            let left = (cfg.repeats - 1).saturating_sub(have[bi][3]);
            count(Stage::Repeats, left, left);
            for _ in 0..left {
                waved.push(job(Stage::Repeats, b, 1, bi, false));
            }
        }
        if cfg.widen > 0 {
            // at most `widen` re-centred groups each way (`core::widen`)
            let most = (2 * cfg.widen * crate::core::widen::group_size(k) as usize)
                .saturating_sub(have[bi][4]);
            count(Stage::Search, 0, most);
            for _ in 0..most {
                waved.push(Job {
                    optional: true,
                    ..job(Stage::Search, b, 1, bi, false)
                });
            }
        }
    }
    // `--until`: trials beyond the plan up to the trial budget (search and confirm trials
    // together), at whichever B its rounds choose
    if cfg.until.is_some() && n > 0 {
        let (stage, used) = match sweep.confirm {
            Some(_) => (Stage::Confirm, plan + first_total + confirm_beyond),
            None => (
                Stage::Search,
                plan + have.iter().map(|h| h[1]).sum::<usize>(),
            ),
        };
        let extra = cfg.search_budget().saturating_sub(used);
        count(stage, 0, extra);
        let b0 = cfg.batch_sizes[0];
        for _ in 0..extra {
            waved.push(Job {
                batch_size: None,
                optional: true,
                ..job(stage, b0, 1, 0, false)
            });
        }
    }
    side.extend(running_jobs(cfg, &bi_of, running));
    out.side = side;
    out.waved = waved;
    out.budgets = cfg
        .batch_sizes
        .iter()
        .map(|&b| (b, w.budget_for(b), evals_within(w, w.budget_for(b))))
        .collect();
    out
}

/// A job of `members` trials of `stage` at `b`, each to its full step budget with its
/// evaluations.
fn full_job(
    w: &Workload,
    stage: Stage,
    b: usize,
    members: usize,
    chain: usize,
    serial: bool,
) -> Job {
    Job {
        stage,
        batch_size: Some(b),
        members,
        steps: w.budget_for(b),
        evals: evals_within(w, w.budget_for(b)),
        chain: chain as u64,
        serial,
        optional: false,
        ran_s: 0.0,
    }
}

/// The running trials (trial, seconds it ran) as jobs of their own, less what they ran; a
/// search trial under early stopping in its batch size's chain (`bi_of`: B → its index).
fn running_jobs(
    cfg: &SweepConfig,
    bi_of: &HashMap<usize, usize>,
    running: &[(TrialSpec, f64)],
) -> Vec<Job> {
    let w = &cfg.preset.workload;
    let early = cfg.preset.sweep.early_stopping;
    running
        .iter()
        .map(|(spec, ran)| {
            let b = spec.batch_size;
            let stage = Stage::of(spec.trial_id);
            let bi = bi_of.get(&b).copied().unwrap_or(0);
            Job {
                ran_s: *ran,
                ..full_job(w, stage, b, 1, bi, stage == Stage::Search && early)
            }
        })
        .collect()
}

/// The calibration stage's work: what its current round still runs (`round`: its pilot trials,
/// the logged ones included), then the rounds its rules may still place, at most.
fn pilots(
    inp: &Inputs,
    round: &[TrialSpec],
    fuse: usize,
    done: &[TrialRecord],
    running: &[(TrialSpec, f64)],
) -> Pilots {
    let base = &inp.preset.workload;
    let logged: std::collections::HashSet<u64> = done.iter().map(|r| r.trial_id).collect();
    let ran: HashMap<u64, f64> = running.iter().map(|(s, t)| (s.trial_id, *t)).collect();
    let r = round
        .first()
        .and_then(|s| s.calibrate)
        .map_or(0, |m| m.round);
    let mut now = Vec::new();
    let mut left = 0;
    // the pilots of this round in groups of `fuse` (`scheduler::cut::chunk_of`)
    let mut chunks: std::collections::BTreeMap<(u32, u32), Vec<&TrialSpec>> = Default::default();
    for s in round.iter().filter(|s| !logged.contains(&s.trial_id)) {
        let Some(m) = s.calibrate else { continue };
        left += 1;
        chunks
            .entry((m.point / 1000, (m.point % 1000) / fuse as u32))
            .or_default()
            .push(s);
    }
    for ((pilot, _), specs) in chunks {
        let m = specs[0].calibrate.expect("a pilot");
        let w = workload_for(base, &m);
        let ran_s = specs
            .iter()
            .filter_map(|s| ran.get(&s.trial_id))
            .fold(0.0f64, |a, &t| a.max(t));
        now.push(Job {
            stage: Stage::Calibrate,
            batch_size: Some(specs[0].batch_size),
            members: specs.len(),
            steps: m.budget,
            evals: evals_within(&w, m.budget),
            chain: pilot as u64,
            serial: m.target.is_some(),
            optional: false,
            ran_s,
        });
    }
    // what the later rounds start from: the reference B and the largest budget so far
    let pilot_marks = done
        .iter()
        .map(|r| (&r.spec, r.spec.calibrate))
        .chain(round.iter().map(|s| (s, s.calibrate)));
    let (mut b_ref, mut s0) = (None, 0u64);
    for (spec, m) in pilot_marks {
        let Some(m) = m else { continue };
        if m.round == 0 {
            b_ref = Some(spec.batch_size);
        }
        s0 = s0.max(m.budget);
    }
    let scan = (r == 0).then(|| {
        let m = round.first().and_then(|s| s.calibrate);
        (
            round.len(),
            m.map_or(0, |m| m.budget),
            round.first().map_or(0, |s| s.batch_size),
        )
    });
    let later = match b_ref {
        Some(b) => ladder(inp, b, s0, r == 0, fuse),
        None => Vec::new(),
    };
    let most = left + later.iter().flatten().map(|j| j.members).sum::<usize>();
    let mut rounds = vec![now];
    rounds.extend(later);
    Pilots {
        rounds,
        scan,
        now: left,
        most,
        sized_s: inp
            .calibrate
            .size
            .then_some(crate::analysis::calibrate::size::WALL_BUDGET_S),
    }
}

/// The rounds the calibration's rules may still place after the current one, every pilot
/// at its greatest budget: the reference scan's moves (`moves`: still to come), then the
/// batch ladder from `b_ref` both ways, each batch size's pilot moved as often as the rules
/// allow, each budget the most the rules give after a pilot that used its whole budget (up:
/// ×`UP_BUDGET`, down: ×`DOWN_BUDGET`/ratio, a move ×`UP_BUDGET`), starting from `s0`.
fn ladder(inp: &Inputs, b_ref: usize, s0: u64, moves: bool, fuse: usize) -> Vec<Vec<Job>> {
    let c = inp.calibrate;
    let w = &inp.preset.workload;
    let extra_moves = if c.search { rules::MAX_MOVES } else { 0 } as usize;
    let budget = |b: usize, steps: f64| -> u64 {
        let s = if c.budget {
            steps.ceil() as u64
        } else {
            w.budget_for(b)
        };
        s.max(8)
    };
    let mut cands: Vec<usize> = if c.batch_sizes {
        inp.facts.allowed.clone()
    } else {
        inp.batch_sizes.clone()
    };
    cands.sort_unstable();
    let pilot = |b: usize, steps: u64, chain: u64| -> Vec<Job> {
        let mark = CalibrateMark {
            round: 0,
            point: 0,
            budget: steps,
            eval_every: (steps / 40).max(1),
            target: Some(0.0),
        };
        let pw = workload_for(w, &mark);
        groups(rules::LADDER_GRID, fuse)
            .into_iter()
            .map(|m| Job {
                stage: Stage::Calibrate,
                batch_size: Some(b),
                members: m,
                steps,
                evals: evals_within(&pw, steps),
                chain,
                serial: true,
                optional: true,
                ran_s: 0.0,
            })
            .collect()
    };
    let mut rounds: Vec<Vec<Job>> = Vec::new();
    let mut prev = s0;
    if moves {
        for _ in 0..extra_moves {
            let s = budget(b_ref, rules::UP_BUDGET * s0 as f64);
            rounds.push(pilot(b_ref, s, 0));
            prev = prev.max(s);
        }
    }
    // each direction's pilots in order, then paired round by round
    let mut dirs: [Vec<(usize, u64)>; 2] = [Vec::new(), Vec::new()];
    for (d, up) in [(0, true), (1, false)] {
        let (mut b, mut last) = (b_ref, prev);
        loop {
            let next = if up {
                cands
                    .iter()
                    .copied()
                    .rfind(|&x| x > b && x <= b.saturating_mul(rules::LADDER_STEP))
            } else {
                cands
                    .iter()
                    .copied()
                    .find(|&x| x < b && x >= (b / rules::LADDER_STEP).max(1))
            };
            let Some(nb) = next else { break };
            let ratio = nb as f64 / b as f64;
            let first = if up {
                rules::UP_BUDGET * last as f64
            } else {
                rules::DOWN_BUDGET * last as f64 / ratio
            };
            last = budget(nb, first);
            dirs[d].push((nb, last));
            for _ in 0..extra_moves {
                last = budget(nb, rules::UP_BUDGET * last as f64);
                dirs[d].push((nb, last));
            }
            b = nb;
        }
    }
    let [up, down] = dirs;
    for i in 0..up.len().max(down.len()) {
        let mut jobs = Vec::new();
        for (chain, p) in [(0u64, up.get(i)), (1, down.get(i))] {
            if let Some(&(b, s)) = p {
                jobs.extend(pilot(b, s, chain));
            }
        }
        rounds.push(jobs);
    }
    rounds
}
