//! The confirm stage end to end through the scheduler, with a synthetic runner whose
//! steps-to-target depend on the metaparameters (a configuration's quality) and on the seed (its
//! luck): what is placed, when, with which seeds, never cut; the same trials however the trials
//! finish; the confirmed S(B) feeds the fit; `--until` adds seed rounds where the confirmed
//! interval is wide, and resume reproduces it.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use scaling_lab::core::analysis::{Note, Readout, UntilStatus};
use scaling_lab::core::confirm::{ConfirmId, CONFIRM_ID_BASE};
use scaling_lab::core::events::{SweepEvent, TrialEvent};
use scaling_lab::core::record::TrialRecord;
use scaling_lab::core::runner::{Group, GroupCut, TrialRunner};
use scaling_lab::core::trial::{
    CancelToken, DeviceSpec, EvalPoint, Outcome, TrialOutcome, TrialSpec,
};
use scaling_lab::runlog::read_run_log;
use scaling_lab::sweep::SweepConfig;
use scaling_lab::workload::spec::*;

/// Steps to the target of a trial: a configuration's quality (η against an optimum that grows as
/// √B, steps falling as 1/B to a floor), times a seed's luck e^(0.15·z), on a grid of 5 steps;
/// more than the trial's budget is "not reached"; η above 8× the optimum diverges. Sleeps
/// `jitter(id)` ms first (to scramble the order in which trials finish).
struct Synthetic {
    jitter: u64,
}

fn unit(x: u64) -> f64 {
    ((scaling_lab::core::splitmix64(x) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

impl Synthetic {
    fn steps(spec: &TrialSpec) -> Option<u64> {
        let b = spec.batch_size as f64;
        let opt = 0.05 * (b / 16.0).sqrt();
        let lr = spec.metaparams.learning_rate;
        if lr > 8.0 * opt {
            return None;
        }
        let off = (lr / opt).ln();
        let quality = 400.0 * (16.0 / b + 0.25) * (1.0 + 0.5 * off * off);
        let (u, v) = (unit(spec.seed), unit(spec.seed ^ 0xabcd));
        let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        Some(((quality * (0.15 * z).exp() / 5.0).ceil() as u64).max(1) * 5)
    }
}

impl TrialRunner for Synthetic {
    fn run(
        &self,
        w: &Workload,
        spec: &TrialSpec,
        _emit: &mut dyn FnMut(TrialEvent),
        _cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        std::thread::sleep(Duration::from_millis((spec.trial_id * self.jitter) % 7));
        let budget = w.budget_for(spec.batch_size);
        let target = w.target.value;
        let eval = |step: u64, metric: f64| EvalPoint {
            step,
            metric,
            train_loss: metric,
        };
        Ok(match Self::steps(spec) {
            None => TrialOutcome::bare(Outcome::Diverged { step: 5 }, 5),
            Some(s) if s <= budget => {
                let mut o = TrialOutcome::bare(Outcome::Reached { step: s }, s);
                o.evals = vec![eval(s / 2, 2.0 * target), eval(s, 0.9 * target)];
                o
            }
            Some(_) => {
                let mut o = TrialOutcome::bare(
                    Outcome::NotReached {
                        budget,
                        early_stopped: false,
                    },
                    budget,
                );
                o.evals = vec![eval(budget, 2.0 * target)];
                o
            }
        })
    }
    fn backend(&self) -> String {
        "synthetic".into()
    }
}

/// 4 batch sizes × 8 search trials, confirm 3×5, 2 trials at once.
fn config(dir: &std::path::Path) -> SweepConfig {
    let mut preset = common::nqm_preset(OptimizerKind::Sgd);
    preset.search.learning_rate = [0.005, 2.0];
    preset.workload.step_budget = 4000;
    preset.sweep.confirm = Some(ConfirmPlan::DEFAULT);
    SweepConfig {
        batch_sizes: vec![16, 64, 256, 1024],
        trials_per_batch: 8,
        concurrency: 2,
        seed: 3,
        ..common::sweep_config(preset, dir)
    }
}

fn run(cfg: SweepConfig, jitter: u64) -> (SweepResult, Vec<SweepEvent>) {
    common::run_sweep(cfg, Arc::new(Synthetic { jitter }), None)
}

use scaling_lab::sweep::SweepResult;

#[test]
fn the_best_configurations_rerun_with_fresh_seeds_after_their_search_never_cut() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let (res, events) = run(cfg.clone(), 3);
    let log = read_run_log(&res.log_path).unwrap();
    let search: Vec<&TrialRecord> = log.trials.iter().filter(|t| t.spec.is_search()).collect();
    let confirm: Vec<&TrialRecord> = log.trials.iter().filter(|t| !t.spec.is_search()).collect();
    assert_eq!(search.len(), 32);
    let search_seeds: HashSet<u64> = search.iter().map(|t| t.spec.seed).collect();
    let mut cut_would_have = 0;
    for (bi, &b) in cfg.batch_sizes.iter().enumerate() {
        // the search's best ≤ 3 configurations that reached, best first, then those early
        // stopping cut before they could, by their metric at the cut
        let mut reached: Vec<(u64, u64)> = search
            .iter()
            .filter(|t| t.spec.batch_size == b)
            .filter_map(|t| Some((t.outcome.outcome.steps_to_target()?, t.trial_id)))
            .collect();
        reached.sort_unstable();
        let mut cut: Vec<(f64, u64)> = search
            .iter()
            .filter(|t| t.spec.batch_size == b)
            .filter(|t| {
                matches!(
                    t.outcome.outcome,
                    Outcome::NotReached {
                        early_stopped: true,
                        ..
                    }
                )
            })
            .filter_map(|t| Some((t.outcome.evals.last()?.metric, t.trial_id)))
            .collect();
        cut.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let top: Vec<u64> = reached
            .iter()
            .map(|x| x.1)
            .chain(cut.iter().map(|x| x.1))
            .take(3)
            .collect();
        let at_b: Vec<&&TrialRecord> = confirm.iter().filter(|t| t.spec.batch_size == b).collect();
        assert_eq!(at_b.len(), top.len() * 5, "B = {b}");
        for t in &at_b {
            let m = t.spec.confirm.expect("a confirm marker");
            let c = ConfirmId::decode(t.trial_id).unwrap();
            assert_eq!((c.batch_index, c.rank, c.seed), (bi, m.rank, m.seed));
            assert_eq!(top[m.rank as usize], m.of, "B = {b}: rank {}", m.rank);
            let base = search.iter().find(|s| s.trial_id == m.of).unwrap();
            assert_eq!(t.spec.metaparams, base.spec.metaparams);
            assert!(!search_seeds.contains(&t.spec.seed), "a search seed reused");
            // never cut by early stopping: it ran its full budget or reached, at any steps
            assert!(!matches!(
                t.outcome.outcome,
                Outcome::NotReached {
                    early_stopped: true,
                    ..
                }
            ));
            let best = reached[0].0;
            if t.outcome
                .outcome
                .steps_to_target()
                .is_some_and(|s| s > best)
            {
                cut_would_have += 1;
            }
        }
        // placed once the B's search had finished: after its last search trial in the log
        let pos = |id: u64| log.trials.iter().position(|t| t.trial_id == id).unwrap();
        let last_search = search
            .iter()
            .filter(|t| t.spec.batch_size == b)
            .map(|t| pos(t.trial_id))
            .max()
            .unwrap();
        assert!(at_b.iter().all(|t| pos(t.trial_id) > last_search));
        // all k×r of a B queued together (one run of Queued events, in id order)
        let queued: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                SweepEvent::Queued { trial_id, .. } if *trial_id >= CONFIRM_ID_BASE => {
                    Some(*trial_id)
                }
                _ => None,
            })
            .collect();
        let mine: Vec<usize> = queued
            .iter()
            .enumerate()
            .filter(|(_, id)| ConfirmId::decode(**id).unwrap().batch_index == bi)
            .map(|(i, _)| i)
            .collect();
        assert!(
            mine.windows(2).all(|w| w[1] == w[0] + 1),
            "B = {b}: {queued:?}"
        );
    }
    assert!(
        cut_would_have > 5,
        "only {cut_would_have} confirm trials ran past S(B): the test shows little"
    );
    // the analysis: confirmed at every B, read by the fit
    let a = &res.analysis;
    assert_eq!(a.readout, Readout::Confirmed);
    let pts: Vec<(f64, f64)> = a
        .per_batch
        .iter()
        .filter_map(|p| Some((p.batch_size as f64, p.confirmed.as_ref()?.steps? as f64)))
        .collect();
    assert_eq!(pts.len(), 4);
    let f = scaling_lab::analysis::fit_scaling(&pts).unwrap();
    let got = a.fit.as_ref().unwrap();
    assert_eq!((got.s_min, got.b_crit), (f.s_min, f.b_crit));
    for p in &a.per_batch {
        let c = p.confirmed.as_ref().unwrap();
        assert!(c.complete);
        let ci = c.steps_ci.expect("an interval");
        let s = c.steps.unwrap();
        assert!(ci.lo <= s && ci.hi.is_none_or(|h| h >= s), "{c:?}");
        // the seed spread of the synthetic runner is 0.15 in ln steps (5-step grid on top)
        let sd = c.seed_sd.unwrap();
        assert!((0.05..0.35).contains(&sd), "seed sd {sd}");
    }
}

/// Which confirm trials are placed, and their outcomes, do not depend on which trial finished
/// first nor on how many run at once.
#[test]
fn the_confirm_stage_is_the_same_however_the_trials_finish() {
    let by_id = |concurrency: usize, jitter: u64| {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.concurrency = concurrency;
        let (res, _) = run(cfg, jitter);
        let log = read_run_log(&res.log_path).unwrap();
        log.trials
            .iter()
            .map(|t| (t.trial_id, (t.spec.clone(), t.outcome.outcome.clone())))
            .collect::<BTreeMap<_, _>>()
    };
    let one = by_id(1, 0);
    assert!(one.keys().filter(|&&id| id >= CONFIRM_ID_BASE).count() >= 20);
    assert_eq!(one, by_id(2, 3));
    assert_eq!(one, by_id(3, 5));
}

/// `--until REL` with a confirm stage adds a seed to every confirmed configuration where the
/// confirmed interval is widest per trial, until each is within ±REL or the budget says it
/// cannot get there; a sweep resumed from its log cut in the middle places the same trials.
#[test]
fn until_adds_seed_rounds_where_the_confirmed_interval_is_wide_and_resume_reproduces_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.until = Some(0.2);
    // a budget that does not bind (where it binds: `a_resume_after_any_record_…`)
    cfg.max_trials = Some(1000);
    let (res, _) = run(cfg.clone(), 0);
    let log = read_run_log(&res.log_path).unwrap();
    let report = scaling_lab::report::of_sweep(&res, &Default::default());
    let mut rounds = 0;
    for p in &report.analysis.per_batch {
        let c = p.confirmed.as_ref().unwrap();
        let runs: Vec<usize> = c.configs.iter().map(|k| k.runs).collect();
        // every configuration at a B has the same seeds (whole rounds)
        assert!(runs.windows(2).all(|w| w[0] == w[1]), "{runs:?}");
        rounds += runs[0] - 5;
        match p.until {
            Some(UntilStatus::Met) => {
                assert!(c.rel_half_width().unwrap() <= 0.2, "{c:?}")
            }
            Some(_) => assert!(p.until_reason.is_some(), "{p:?}"),
            None => panic!("no --until status at B = {}", p.batch_size),
        }
    }
    assert!(rounds > 0, "--until added no seed:\n{}", report.text());
    let used = log.trials.len();
    assert!(used <= 1000, "{used} trials, budget 1000");
    // the text says which interval --until narrowed
    let met = report
        .analysis
        .per_batch
        .iter()
        .any(|p| p.until == Some(UntilStatus::Met));
    assert!(
        !met || report
            .text()
            .contains("--until met (the confirmed S(B)'s interval)")
    );

    // cut the log in the middle of the added rounds (they follow the search and the stage's
    // first 5 seeds in the log) and resume: the same trials
    let base = log
        .trials
        .iter()
        .filter(|t| t.spec.confirm.is_none_or(|m| m.seed < 5))
        .count();
    assert!(used > base);
    let text = std::fs::read_to_string(&res.log_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let keep = 1 + (base + used) / 2;
    let cut_dir = tempfile::tempdir().unwrap();
    let cut = cut_dir.path().join("cut.jsonl");
    std::fs::write(&cut, lines[..keep].join("\n") + "\n").unwrap();
    let mut cfg2 = cfg.clone();
    cfg2.runs_dir = cut_dir.path().to_path_buf();
    let (resumed, _) = common::run_sweep(cfg2, Arc::new(Synthetic { jitter: 2 }), Some(cut));
    let again = read_run_log(&resumed.log_path).unwrap();
    let ids = |l: &scaling_lab::runlog::reader::RunLog| {
        l.trials
            .iter()
            .map(|t| (t.trial_id, t.spec.clone()))
            .collect::<BTreeMap<u64, TrialSpec>>()
    };
    let (a, b) = (ids(&log), ids(&again));
    let only_a: Vec<&u64> = a.keys().filter(|k| !b.contains_key(k)).collect();
    let only_b: Vec<&u64> = b.keys().filter(|k| !a.contains_key(k)).collect();
    assert!(
        only_a.is_empty() && only_b.is_empty(),
        "only in the uninterrupted sweep: {only_a:?}; only in the resumed one: {only_b:?}"
    );
    assert_eq!(a, b);
}

/// Part of the confirm stage logged: the curve reads the best trials, with a note, until every B
/// is confirmed.
#[test]
fn an_unfinished_confirm_stage_leaves_the_curve_on_the_best_trials() {
    let dir = tempfile::tempdir().unwrap();
    let (res, _) = run(config(dir.path()), 0);
    let log = read_run_log(&res.log_path).unwrap();
    // drop the confirm trials of the largest B
    let keep: Vec<TrialRecord> = log
        .trials
        .iter()
        .filter(|t| !(t.spec.confirm.is_some() && t.spec.batch_size == 1024))
        .cloned()
        .collect();
    let a = scaling_lab::analysis::analyze_preset(&log.header.preset, &keep);
    assert_eq!(a.readout, Readout::BestTrial);
    assert!(a.notes.iter().any(|n| matches!(
        n,
        Note::ConfirmIncomplete {
            confirmed: 3,
            of: 4
        }
    )));
    // the fit is the best trials' then
    let pts: Vec<(f64, f64)> = a
        .per_batch
        .iter()
        .filter_map(|p| Some((p.batch_size as f64, p.steps? as f64)))
        .collect();
    let f = scaling_lab::analysis::fit_scaling(&pts).unwrap();
    assert_eq!(a.fit.as_ref().unwrap().b_crit, f.b_crit);
    // half of a B's seeds: that B is marked running
    let some: Vec<TrialRecord> = log
        .trials
        .iter()
        .filter(|t| !(t.spec.confirm.is_some_and(|m| m.seed >= 3) && t.spec.batch_size == 64))
        .cloned()
        .collect();
    let a = scaling_lab::analysis::analyze_preset(&log.header.preset, &some);
    let p = a.per_batch.iter().find(|p| p.batch_size == 64).unwrap();
    assert!(!p.confirmed.as_ref().unwrap().complete);
    assert_eq!(a.readout, Readout::BestTrial);
}

/// The synthetic runner fusing up to `k` trials a group (`TrialRunner::run_group`), recording
/// every group it trains (ids, its cut). It cuts as the fused engine does: a lockstep-cut group
/// stops every member at the first member's reach, a quorum cut a cohort at its `need`-th reach;
/// a member that would reach later reads as early-stopped there.
struct Fusing {
    inner: Synthetic,
    k: usize,
    groups: std::sync::Mutex<Vec<(Vec<u64>, GroupCut)>>,
}

impl TrialRunner for Fusing {
    fn run(
        &self,
        w: &Workload,
        spec: &TrialSpec,
        emit: &mut dyn FnMut(TrialEvent),
        cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        self.inner.run(w, spec, emit, cancel)
    }
    fn max_group(&self, _: &Workload, _: &DeviceSpec) -> usize {
        self.k
    }
    fn run_group(
        &self,
        w: &Workload,
        group: &Group<'_>,
        emit: &mut dyn FnMut(usize, TrialEvent),
        done: &mut dyn FnMut(usize, anyhow::Result<TrialOutcome>),
    ) {
        let ids = group.specs.iter().map(|s| s.trial_id).collect();
        self.groups.lock().unwrap().push((ids, group.cut.clone()));
        let budget = w.budget_for(group.specs[0].batch_size);
        let reach = |s: &TrialSpec| Synthetic::steps(s).filter(|&s| s <= budget);
        // where member i stops at the latest: the first reach, or its cohort's quorum reach
        let stop_at = |i: usize| -> Option<u64> {
            match &group.cut {
                GroupCut::FirstReach => group.specs.iter().filter_map(reach).min(),
                GroupCut::Quorum { cohort, need } => {
                    let c = cohort[i]?;
                    let mut r: Vec<u64> = (0..group.specs.len())
                        .filter(|&j| cohort[j] == Some(c))
                        .filter_map(|j| reach(&group.specs[j]))
                        .collect();
                    r.sort_unstable();
                    r.get(need[c] - 1).copied()
                }
                GroupCut::None => None,
            }
        };
        // every member's outcome, reported in the order the members end (as the trainer
        // reports them: a stopped sweep logged the earliest enders)
        let mut ended = Vec::new();
        for (i, spec) in group.specs.iter().enumerate() {
            let r = self
                .inner
                .run(w, spec, &mut |e| emit(i, e), &group.cancels[i]);
            let at = stop_at(i);
            let cut = match (&r, at) {
                (Ok(o), Some(at)) => match o.outcome {
                    Outcome::Reached { step } => step > at,
                    Outcome::NotReached { budget, .. } => budget > at,
                    _ => false,
                },
                _ => false,
            };
            let r = match (cut, at) {
                (true, Some(at)) => {
                    // what the member records when its budget is cut to `at`
                    let mut capped = w.clone();
                    capped.step_budget = at;
                    capped.max_examples = None;
                    self.inner
                        .run(&capped, spec, &mut |_| {}, &group.cancels[i])
                        .map(|mut o| {
                            if let Outcome::NotReached { early_stopped, .. } = &mut o.outcome {
                                *early_stopped = true;
                            }
                            o
                        })
                }
                _ => r,
            };
            let end = r.as_ref().map_or(0, |o| o.steps);
            // at one step, a member that reached ends before those its reach cut
            let reached = r
                .as_ref()
                .is_ok_and(|o| matches!(o.outcome, Outcome::Reached { .. }));
            ended.push(((end, !reached, i), i, r));
        }
        ended.sort_by_key(|e| e.0);
        for (_, i, r) in ended {
            done(i, r);
        }
    }
    fn backend(&self) -> String {
        "synthetic".into()
    }
}

/// With fused groups (`--fuse 5`), the confirm trials of a batch size train fused — in groups of
/// confirm trials of that B only, whole blocks of r = 5 seeds — and are never cut in lockstep:
/// each block is cut at its quorum (4 of 5 reached), every other seed runs to its own reach or
/// budget. Without early stopping (so that the search is the same too) the log is the one
/// `--fuse off` writes but for the seeds a quorum cut, and the analysis — the confirmed S(B),
/// its interval, the seeds censored — is the same; with it, each confirm trial's outcome is the
/// one it has alone or its block's cut, while the search's groups are cut in lockstep.
#[test]
fn confirm_trials_train_fused_never_cut_in_lockstep() {
    let sweep = |fuse: Fuse, early_stopping: bool| {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.preset.sweep.early_stopping = early_stopping;
        cfg.fuse = fuse;
        let runner = Arc::new(Fusing {
            inner: Synthetic { jitter: 3 },
            k: 5,
            groups: Default::default(),
        });
        let (res, _) = common::run_sweep(cfg, runner.clone(), None);
        let log = read_run_log(&res.log_path).unwrap();
        let by_id = log
            .trials
            .iter()
            .map(|t| (t.trial_id, (t.spec.clone(), t.outcome.outcome.clone())))
            .collect::<BTreeMap<_, _>>();
        let groups = runner.groups.lock().unwrap().clone();
        let a = scaling_lab::analysis::analyze_preset(&log.header.preset, &log.trials);
        let confirmed: Vec<_> = a.per_batch.iter().map(|p| p.confirmed.clone()).collect();
        (by_id, groups, confirmed)
    };
    // a cut seed: its block's quorum stopped it before its own end
    let cut = |o: &Outcome| {
        matches!(
            o,
            Outcome::NotReached {
                early_stopped: true,
                ..
            }
        )
    };
    let confirm_groups = |groups: &[(Vec<u64>, GroupCut)]| -> Vec<(Vec<u64>, GroupCut)> {
        groups
            .iter()
            .filter(|(ids, _)| ids.iter().any(|&id| id >= CONFIRM_ID_BASE))
            .cloned()
            .collect()
    };
    let check_confirm_groups = |groups: &[(Vec<u64>, GroupCut)]| {
        let cg = confirm_groups(groups);
        assert!(cg.iter().any(|(ids, _)| ids.len() > 1), "{cg:?}");
        assert!(
            cg.iter().any(|(_, c)| matches!(c, GroupCut::Quorum { .. })),
            "whole blocks are cut at their quorum: {cg:?}"
        );
        for (ids, cut) in &cg {
            assert!(
                !matches!(cut, GroupCut::FirstReach),
                "a confirm group cut in lockstep: {ids:?}"
            );
            assert!(ids.len() <= 5);
            let bi = ConfirmId::decode(ids[0]).unwrap().batch_index;
            assert!(
                ids.iter()
                    .all(|&id| ConfirmId::decode(id).is_some_and(|c| c.batch_index == bi)),
                "a confirm group mixes kinds or batch sizes: {ids:?}"
            );
        }
    };

    // without early stopping: the same log as --fuse off but for the seeds a quorum cut, and
    // the same confirmed readout
    let (off, off_groups, off_confirmed) = sweep(Fuse::Off, false);
    assert!(off_groups.iter().all(|(ids, _)| ids.len() == 1));
    let (fused, groups, fused_confirmed) = sweep(Fuse::Members(5), false);
    check_confirm_groups(&groups);
    assert!(off.keys().filter(|&&id| id >= CONFIRM_ID_BASE).count() >= 20);
    assert_eq!(
        off.keys().collect::<Vec<_>>(),
        fused.keys().collect::<Vec<_>>()
    );
    let mut cuts = 0;
    for (id, (spec, o)) in &fused {
        let (off_spec, off_o) = &off[id];
        assert_eq!(spec, off_spec, "trial {id}");
        if *id >= CONFIRM_ID_BASE && o != off_o {
            assert!(cut(o), "trial {id}: {o:?} fused, {off_o:?} alone");
            cuts += 1;
        } else {
            assert_eq!(o, off_o, "trial {id}");
        }
    }
    assert!(cuts >= 1, "a quorum cut a seed");
    assert!(fused_confirmed
        .iter()
        .flatten()
        .any(|c| c.configs.iter().any(|k| k.censored > 0)));
    assert_eq!(off_confirmed, fused_confirmed);

    // with early stopping: search groups are cut in lockstep, confirm groups never
    let (fused, groups, _) = sweep(Fuse::Members(5), true);
    check_confirm_groups(&groups);
    assert!(groups
        .iter()
        .any(|(ids, c)| matches!(c, GroupCut::FirstReach)
            && ids.len() > 1
            && ids[0] < CONFIRM_ID_BASE));
    let w = config(std::path::Path::new(".")).preset.workload;
    let mut n = 0;
    for (id, (spec, outcome)) in &fused {
        if *id < CONFIRM_ID_BASE {
            continue;
        }
        n += 1;
        let alone = Synthetic { jitter: 0 }
            .run(&w, spec, &mut |_| {}, &CancelToken::new())
            .unwrap();
        assert!(
            outcome == &alone.outcome || cut(outcome),
            "confirm trial {id}: {outcome:?}, alone {:?}",
            alone.outcome
        );
    }
    assert!(n >= 5);
}

/// A sweep stopped after any of its records and resumed logs what an uninterrupted one logs —
/// every trial, with the same outcome — with fused groups whose blocks are cut at their quorum
/// (a block a stop split is cut as it would have been whole) and `--until` rounds under a trial
/// budget that runs out (which B gets the last rounds is re-decided from the records before the
/// wave the stop fell in). The log is cut after record N for N over the confirm stage, each the
/// state a SIGKILL right after that record leaves.
#[test]
fn a_resume_after_any_record_logs_the_uninterrupted_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.batch_sizes = vec![16, 256, 1024];
    cfg.concurrency = 1;
    cfg.fuse = Fuse::Members(5);
    cfg.until = Some(0.5);
    let runner = || {
        Arc::new(Fusing {
            inner: Synthetic { jitter: 0 },
            k: 5,
            groups: Default::default(),
        })
    };
    // a budget that runs out after a few rounds (24 search trials, 3 B × 3 configurations × 5
    // first seeds, then rounds of 3 × 10 seeds)
    let used = 24 + 45 + 75;
    cfg.max_trials = Some(used);
    let (res, _) = common::run_sweep(cfg.clone(), runner(), None);
    let log = read_run_log(&res.log_path).unwrap();
    let outcomes = |l: &scaling_lab::runlog::reader::RunLog| {
        l.trials
            .iter()
            .map(|t| (t.trial_id, (t.spec.clone(), t.outcome.outcome.clone())))
            .collect::<BTreeMap<u64, _>>()
    };
    let want = outcomes(&log);
    assert!(
        log.trials.len() <= used,
        "{} trials of {used}",
        log.trials.len()
    );
    let report = scaling_lab::report::of_sweep(&res, &Default::default());
    // the budget ran out where a round would still narrow an interval
    assert!(
        report
            .analysis
            .per_batch
            .iter()
            .any(|p| p.until != Some(UntilStatus::Met)
                && p.until_reason
                    .as_deref()
                    .is_some_and(|r| r.contains("were left"))),
        "{}",
        report.text()
    );
    let cut_seeds = log
        .trials
        .iter()
        .filter(|t| t.spec.confirm.is_some())
        .filter(|t| {
            matches!(
                t.outcome.outcome,
                Outcome::NotReached {
                    early_stopped: true,
                    ..
                }
            )
        })
        .count();
    assert!(cut_seeds > 0, "no block cut at its quorum");
    let rounds = log
        .trials
        .iter()
        .filter(|t| t.spec.confirm.is_some_and(|m| m.seed >= 5))
        .count();
    assert!(rounds >= 10, "{rounds} seeds of --until rounds");

    let text = std::fs::read_to_string(&res.log_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let first_confirm = log
        .trials
        .iter()
        .position(|t| t.spec.confirm.is_some())
        .unwrap();
    let n = log.trials.len();
    let mut checked = 0;
    // (a stride prime to the block of 5: cuts land at every place in a block)
    for cut in (first_confirm.saturating_sub(3)..n).step_by(6) {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("cut.jsonl");
        std::fs::write(&path, lines[..=cut].join("\n") + "\n").unwrap();
        let mut c = cfg.clone();
        c.runs_dir = d.path().to_path_buf();
        let (again, _) = common::run_sweep(c, runner(), Some(path.clone()));
        let got = outcomes(&read_run_log(&again.log_path).unwrap());
        let only_want: Vec<&u64> = want.keys().filter(|k| !got.contains_key(k)).collect();
        let only_got: Vec<&u64> = got.keys().filter(|k| !want.contains_key(k)).collect();
        assert!(
            only_want.is_empty() && only_got.is_empty(),
            "cut after record {cut}: only uninterrupted {only_want:?}, only resumed {only_got:?}"
        );
        for (id, w) in &want {
            assert_eq!(&got[id], w, "cut after record {cut}: trial {id}");
        }
        checked += 1;
    }
    assert!(checked >= 15, "{checked} cut points");
}
