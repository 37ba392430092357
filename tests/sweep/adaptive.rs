//! `--repeats` and `--until` end to end on the NQM (fast): what they add to the log, that S(B)
//! keeps its definition, and that a resumed sweep reproduces them.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use scaling_lab::core::analysis::SearchEdge;
use scaling_lab::core::record::TrialRecord;
use scaling_lab::core::trial::{Outcome, TrialSpec};
use scaling_lab::core::widen::REPEAT_ID_BASE;
use scaling_lab::nqm::NqmRunner;
use scaling_lab::runlog::read_run_log;
use scaling_lab::sweep::{plan, SweepConfig, SweepResult};
use scaling_lab::workload::spec::*;

fn config(dir: &Path) -> SweepConfig {
    let preset = Preset {
        name: "nqm-adaptive".into(),
        ..common::nqm_preset(OptimizerKind::Sgd)
    };
    SweepConfig {
        batch_sizes: vec![1, 4, 16, 64, 256],
        trials_per_batch: 4,
        seed: 5,
        ..common::sweep_config(preset, dir)
    }
}

fn run(cfg: SweepConfig, resume: Option<PathBuf>) -> SweepResult {
    common::run_sweep(cfg, Arc::new(NqmRunner), resume).0
}

#[test]
fn repeats_rerun_the_best_metaparameters_without_changing_s() {
    let dir = tempfile::tempdir().unwrap();
    let plain = run(config(dir.path()), None);
    let mut cfg = config(dir.path());
    cfg.repeats = 3;
    let res = run(cfg, None);
    assert!(!res.cancelled);
    let log = read_run_log(&res.log_path).unwrap();
    assert_eq!(log.header.adaptive.as_ref().map(|a| a.repeats), Some(3));
    assert!(log.summary.as_ref().unwrap().complete);
    let measured = res.analysis.per_batch.iter().filter(|p| p.steps.is_some());
    let mut n_measured = 0;
    for p in measured {
        n_measured += 1;
        let best = p.best_trial.unwrap();
        let base = log.trials.iter().find(|t| t.trial_id == best).unwrap();
        let reps: Vec<&TrialRecord> = log
            .trials
            .iter()
            .filter(|t| t.spec.repeat_of == Some(best))
            .collect();
        assert_eq!(reps.len(), 2, "B = {}", p.batch_size);
        for r in &reps {
            assert!(r.trial_id >= REPEAT_ID_BASE);
            assert_eq!(r.spec.batch_size, p.batch_size);
            assert_eq!(r.spec.metaparams, base.spec.metaparams);
            assert_ne!(r.spec.seed, base.spec.seed);
            // A repeat runs its full budget: never early-stopped.
            assert!(!matches!(
                r.outcome.outcome,
                Outcome::NotReached {
                    early_stopped: true,
                    ..
                }
            ));
        }
        let rs = p.repeat_steps.as_ref().unwrap();
        assert_eq!(rs.runs + rs.not_reached, 3);
        assert!(rs.min as f64 <= rs.median && rs.median <= rs.max as f64);
        let [lo, hi] = p.steps_ci.unwrap();
        assert!(lo <= p.steps.unwrap() && p.steps.unwrap() <= hi);
    }
    assert!(n_measured >= 3);
    // S(B), the best trial and the counts are those of the same sweep without repeats.
    for (a, b) in plain.analysis.per_batch.iter().zip(&res.analysis.per_batch) {
        assert_eq!(
            (a.steps, a.best_trial, a.counts.trials, a.counts.reached),
            (b.steps, b.best_trial, b.counts.trials, b.counts.reached)
        );
    }
    assert_eq!(res.trials_done, plain.trials_done + 2 * n_measured);
}

#[test]
fn until_adds_trials_where_the_interval_is_widest_and_resume_reproduces_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.until = Some(0.02);
    cfg.max_trials = Some(32);
    cfg.repeats = 2;
    let res = run(cfg.clone(), None);
    let log = read_run_log(&res.log_path).unwrap();
    let search: Vec<&TrialRecord> = log
        .trials
        .iter()
        .filter(|t| t.spec.repeat_of.is_none())
        .collect();
    // Trials beyond the plan of 20, within the budget of 32 search trials.
    assert!(search.len() > 20 && search.len() <= 32, "{}", search.len());
    let p = plan(&cfg);
    for t in &search {
        // Every search trial is the Halton continuation of the plan: the spec a plan with more
        // trials per B would give it.
        let n = cfg.batch_sizes.len();
        let want = scaling_lab::core::plan::trial_at(
            &cfg.preset,
            &cfg.batch_sizes,
            t.trial_id as usize / n,
            t.trial_id as usize % n,
            &cfg.devices,
            cfg.precision,
            cfg.seed,
        );
        assert_eq!(t.spec, want);
        if (t.trial_id as usize) < p.len() {
            assert_eq!(t.spec, p[t.trial_id as usize]);
        }
    }
    assert_eq!(log.header.adaptive.as_ref().unwrap().until, Some(0.02));
    // The report says per B what --until did: met within ±2 %, stalled (more trials
    // did not narrow it, with a reason) or budget; it stopped because every B is met or
    // stalled, or the budget is spent.
    let report =
        scaling_lab::report::build(&scaling_lab::report::Run::of_log(&log), &Default::default());
    use scaling_lab::core::analysis::UntilStatus;
    for p in &report.analysis.per_batch {
        let st = p
            .until
            .unwrap_or_else(|| panic!("no until status at B = {}", p.batch_size));
        let w = p.rel_half_width();
        assert_eq!(
            st == UntilStatus::Met,
            w.is_some_and(|w| w <= 0.02),
            "{p:?}"
        );
        if st == UntilStatus::Stalled {
            assert!(
                p.until_reason.as_ref().is_some_and(|r| !r.is_empty()),
                "{p:?}"
            );
        }
        if search.len() < 32 && st == UntilStatus::Budget {
            // Stopped before the budget: a B left at "budget" is one the trials left could not
            // take to ±REL, and the report says so with the numbers.
            let why = p.until_reason.as_deref().unwrap_or_default();
            assert!(
                why.contains("more trials") && why.contains("were left"),
                "stopped early with B = {} still narrowing: {why:?}",
                p.batch_size
            );
        }
    }
    // the JSON report carries it
    let v = serde_json::to_value(&report).unwrap();
    assert!(
        v["analysis"]["per_batch"][0]["until"].is_string(),
        "{}",
        v["analysis"]["per_batch"][0]
    );

    // Cut the log after 23 trials (the first --until trials ran) and resume: same records.
    let text = std::fs::read_to_string(&res.log_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, lines[..1 + 23].join("\n") + "\n").unwrap();
    let cut_log = read_run_log(&cut).unwrap();
    let resumed_cfg = SweepConfig::from_header(&cut_log.header, dir.path().to_path_buf());
    assert_eq!((resumed_cfg.until, resumed_cfg.repeats), (Some(0.02), 2));
    let again = run(resumed_cfg, Some(cut.clone()));
    assert!(!again.cancelled);
    let relog = read_run_log(&cut).unwrap();
    assert_eq!(by_trial_id(&relog), by_trial_id(&log));
    assert_eq!(again.analysis.regimes, res.analysis.regimes);
}

/// The NQM config with an η range far below the best η: the best trials sit at its top edge.
fn too_low_range(dir: &Path) -> SweepConfig {
    let mut cfg = config(dir);
    cfg.preset.search.learning_rate = [5e-3, 5e-2];
    cfg.trials_per_batch = 16;
    cfg
}

#[test]
fn widen_recentres_the_range_where_the_best_trial_is_at_its_edge_and_resume_reproduces_it() {
    use scaling_lab::core::widen::{group_size, shift_range, RangeShift, WidenId, WIDEN_ID_BASE};
    let dir = tempfile::tempdir().unwrap();
    let plain = run(too_low_range(dir.path()), None);
    let edge_before: Vec<usize> = plain
        .analysis
        .per_batch
        .iter()
        .filter(|p| p.search_edges.contains(&SearchEdge::LrHigh))
        .map(|p| p.batch_size)
        .collect();
    assert!(
        edge_before.len() >= 2,
        "the test needs edge cases: {edge_before:?} {:?}",
        plain
            .analysis
            .per_batch
            .iter()
            .map(|p| (p.batch_size, p.steps, p.best_lr))
            .collect::<Vec<_>>()
    );

    let mut cfg = too_low_range(dir.path());
    cfg.widen = 3;
    let res = run(cfg.clone(), None);
    assert!(!res.cancelled);
    let log = read_run_log(&res.log_path).unwrap();
    assert_eq!(log.header.adaptive.as_ref().unwrap().widen, Some(3));
    let widened: Vec<&TrialRecord> = log
        .trials
        .iter()
        .filter(|t| t.trial_id >= WIDEN_ID_BASE && t.spec.repeat_of.is_none())
        .collect();
    assert!(!widened.is_empty());
    let per_group = group_size(cfg.trials_per_batch) as usize;
    let mut groups = std::collections::BTreeMap::<(usize, RangeShift), usize>::new();
    for t in &widened {
        let w = WidenId::decode(t.trial_id).unwrap();
        // Only batch sizes that were at the top η edge move, and only upwards in η.
        assert_eq!(cfg.batch_sizes[w.batch_index], t.spec.batch_size);
        assert!(
            edge_before.contains(&t.spec.batch_size),
            "{}",
            t.spec.batch_size
        );
        assert!(
            w.shift.lr >= 1 && w.shift.lr <= 3 && w.shift.omm == 0,
            "{:?}",
            w.shift
        );
        // Its η was drawn from the moved range (rule "none": the preset's range itself).
        let r = shift_range(cfg.preset.search.learning_rate, w.shift.lr);
        let lr = t.spec.metaparams.learning_rate;
        assert!(
            lr >= r[0] * (1.0 - 1e-12) && lr <= r[1] * (1.0 + 1e-12),
            "{lr} {r:?}"
        );
        *groups.entry((t.spec.batch_size, w.shift)).or_default() += 1;
    }
    // Groups are full, and at each B they move one half-width at a time.
    for (&(b, s), &n) in &groups {
        assert_eq!(n, per_group, "B = {b} {s:?}");
        for lower in 1..s.lr {
            assert!(groups.contains_key(&(b, RangeShift { lr: lower, omm: 0 })));
        }
    }
    // The plan's trials are the same; S(B) can only improve; fewer B stay at the edge, and a B
    // still at it has used every move.
    for (a, b) in plain.analysis.per_batch.iter().zip(&res.analysis.per_batch) {
        assert_eq!(a.batch_size, b.batch_size);
        if let Some(s) = a.steps {
            assert!(b.steps.unwrap() <= s, "B = {}", a.batch_size);
        }
        if b.search_edges.contains(&SearchEdge::LrHigh) {
            assert!(groups.contains_key(&(b.batch_size, RangeShift { lr: 3, omm: 0 })));
        }
    }
    let edge_after = res
        .analysis
        .per_batch
        .iter()
        .filter(|p| p.at_search_edge)
        .count();
    assert!(
        edge_after < edge_before.len(),
        "{edge_after} vs {edge_before:?}"
    );
    assert!(res
        .analysis
        .notes
        .iter()
        .any(|n| matches!(n, scaling_lab::core::analysis::Note::RangeRecentred { .. })));

    // Cut the log inside the widening and resume: the same records.
    let text = std::fs::read_to_string(&res.log_path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let first_widen = lines
        .iter()
        .position(|l| l.contains(&format!("\"trial_id\":{}", widened[0].trial_id)))
        .unwrap();
    let cut = dir.path().join("cut-widen.jsonl");
    std::fs::write(&cut, lines[..first_widen + 2].join("\n") + "\n").unwrap();
    let cut_log = read_run_log(&cut).unwrap();
    let resumed_cfg = SweepConfig::from_header(&cut_log.header, dir.path().to_path_buf());
    assert_eq!(resumed_cfg.widen, 3);
    let again = run(resumed_cfg, Some(cut.clone()));
    assert!(!again.cancelled);
    let relog = read_run_log(&cut).unwrap();
    assert_eq!(by_trial_id(&relog), by_trial_id(&log));
}

/// A log's trials as (id, spec, outcome), sorted by trial id: what a resume must reproduce.
fn by_trial_id(l: &scaling_lab::runlog::reader::RunLog) -> Vec<(u64, TrialSpec, Outcome)> {
    let mut v: Vec<(u64, TrialSpec, Outcome)> = l
        .trials
        .iter()
        .map(|t| (t.trial_id, t.spec.clone(), t.outcome.outcome.clone()))
        .collect();
    v.sort_by_key(|x| x.0);
    v
}
