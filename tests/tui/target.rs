//! Moving the target in the TUI: `[` `]` move the target of a finished Live screen (and of
//! Compare) along the ladder. The update function alone: messages in, state out — the requests it sends to the
//! analysis worker (one in flight per state, urgent), how key repeats coalesce, the per-target
//! cache that makes stepping back instant, and Compare reading every log at one target ("not
//! measured" past a log's goal).

use crate::support as tui_support;

use std::path::PathBuf;

use scaling_lab::core::record::TrialRecord;
use scaling_lab::core::trial::{Outcome, TrialOutcome};
use scaling_lab::runlog::reader::read_run_log;
use scaling_lab::tui::app::{update, update_settled, App, Command, CompareRun, Msg, Screen};
use scaling_lab::tui::key::Key;

use crate::support::app;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/nqm-sgd.jsonl")
}

/// Presses `k`; the analysis requests it sends (other commands must not be sent).
fn press(a: &mut App, k: char) -> Vec<scaling_lab::tui::app::AnalysisRequest> {
    update(a, Msg::Key(Key::Char(k)))
        .into_iter()
        .map(|c| match c {
            Command::Analyze(r) => *r,
            c => panic!("unexpected {c:?}"),
        })
        .collect()
}

/// The finished log open in Live, its goal's analysis landed.
fn opened() -> App {
    let mut a = app();
    let log = read_run_log(&fixture()).unwrap();
    update_settled(
        &mut a,
        Msg::LogOpened {
            log: Box::new(log),
            tailing: false,
        },
    );
    assert_eq!(a.screen, Screen::Live);
    assert!(!a.log.as_ref().unwrap().updating());
    a
}

#[test]
fn moving_the_target_asks_once_coalesces_repeats_and_steps_back_from_the_cache() {
    let mut a = opened();
    let goal = a.log.as_ref().unwrap().goal().unwrap();
    // at the goal `]` does not move: stricter was not measured
    assert!(press(&mut a, ']').is_empty());
    assert!(
        a.flash.as_deref().unwrap().contains("not measured"),
        "{:?}",
        a.flash
    );
    assert_eq!(a.log.as_ref().unwrap().target, None);

    // `[`: one urgent request at the next looser rung; the view says it is updating
    let r1 = press(&mut a, '[');
    let l = a.log.as_ref().unwrap();
    let ladder = l.ladder.clone();
    assert!(ladder.len() >= 4, "{ladder:?}");
    assert_eq!(*ladder.last().unwrap(), goal);
    let t1 = ladder[ladder.len() - 2];
    assert_eq!(r1.len(), 1);
    assert!(r1[0].urgent);
    assert_eq!(r1[0].for_.target.value, t1);
    assert!(l.updating());
    assert_eq!(
        l.chart().target.unwrap().value,
        t1,
        "the chart's points follow at once"
    );
    assert!(
        l.chart().fit.is_none(),
        "no fit of another target meanwhile"
    );

    // key repeats while it runs: no second request
    assert!(press(&mut a, '[').is_empty());
    assert!(press(&mut a, '[').is_empty());
    let t3 = ladder[ladder.len() - 4];
    assert_eq!(a.log.as_ref().unwrap().target, Some(t3));

    // the first result lands: kept for t1, not shown (the user moved on); the next request
    // reads the rung the user stopped at
    let cmds = update(&mut a, Msg::Analyzed(Box::new(r1[0].run())));
    let r3: Vec<_> = cmds
        .into_iter()
        .map(|c| match c {
            Command::Analyze(r) => *r,
            c => panic!("{c:?}"),
        })
        .collect();
    assert_eq!(r3.len(), 1);
    assert_eq!(r3[0].for_.target.value, t3);
    let l = a.log.as_ref().unwrap();
    assert_eq!(l.rungs.len(), 2, "the goal and t1 are kept");
    assert!(l.updating());
    update(&mut a, Msg::Analyzed(Box::new(r3[0].run())));
    let l = a.log.as_ref().unwrap();
    assert!(!l.updating());
    assert_eq!(l.report.analysis.target.unwrap().value, t3);
    let at_t3 = l.report.clone();

    // stepping back: a rung never read asks once, rungs already read show at once
    let t2 = ladder[ladder.len() - 3];
    let r2 = press(&mut a, ']');
    assert_eq!(r2.len(), 1);
    assert_eq!(r2[0].for_.target.value, t2);
    assert!(press(&mut a, ']').is_empty()); // t1: kept
    let l = a.log.as_ref().unwrap();
    assert_eq!(l.target, Some(t1));
    assert!(!l.updating(), "t1 is shown from the cache at once");
    assert_eq!(l.report.analysis.target.unwrap().value, t1);
    assert!(press(&mut a, ']').is_empty()); // the goal: kept
    let l = a.log.as_ref().unwrap();
    assert_eq!(l.target, None);
    assert!(!l.updating());
    assert_eq!(l.report.analysis.target.unwrap().value, goal);
    assert_eq!(l.report.analysis.goal, None, "the goal's own reading");
    // the t2 reading lands late: kept, not shown, nothing more asked
    let shown = l.report.clone();
    assert!(update(&mut a, Msg::Analyzed(Box::new(r2[0].run()))).is_empty());
    let l = a.log.as_ref().unwrap();
    assert_eq!(l.report, shown);
    assert_eq!(l.rungs.len(), 4);
    // up again: every rung from the cache, the same readings
    for t in [t1, t2, t3] {
        assert!(press(&mut a, '[').is_empty(), "{t}");
        let l = a.log.as_ref().unwrap();
        assert!(!l.updating());
        assert_eq!(l.report.analysis.target.unwrap().value, t);
    }
    assert_eq!(a.log.as_ref().unwrap().report, at_t3);
}

/// `n` trials of `log` as a sweep with the looser goal `goal` would have logged them: each stops
/// at its first evaluation meeting `goal` (Reached there), the rest of its curve unseen.
fn stopped_at(trials: &[TrialRecord], goal: f64) -> Vec<TrialRecord> {
    trials
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if let Some(i) = t.outcome.evals.iter().position(|e| e.metric <= goal) {
                t.outcome.evals.truncate(i + 1);
                let step = t.outcome.evals[i].step;
                t.outcome = TrialOutcome {
                    evals: t.outcome.evals.clone(),
                    ..TrialOutcome::bare(Outcome::Reached { step }, step)
                };
            }
            t
        })
        .collect()
}

#[test]
fn compare_reads_every_log_at_one_target_and_not_measured_past_a_goal() {
    let log = read_run_log(&fixture()).unwrap();
    let goal = log.header.preset.workload.target.value;
    let mut looser = log.header.preset.clone();
    looser.workload.target.value = 0.2;
    let runs = vec![
        CompareRun::new(
            "strict".into(),
            fixture(),
            &log.header.preset,
            log.trials.clone(),
        ),
        CompareRun::new(
            "loose".into(),
            PathBuf::from("loose.jsonl"),
            &looser,
            stopped_at(&log.trials, 0.2),
        ),
    ];
    let mut a = app();
    update(&mut a, Msg::Key(Key::Char('4')));
    update(&mut a, Msg::CompareLoaded(runs));
    assert!(
        a.compare.runs[1].analysis.fit.is_some(),
        "the loose run at its own goal"
    );
    assert_eq!(*a.compare.ladder.last().unwrap(), goal);
    assert!(a.compare.ladder.contains(&0.2));
    // `]`: every run at the strictest goal — one request on the worker
    let cmds = update(&mut a, Msg::Key(Key::Char(']')));
    let [Command::AnalyzeCompare(r)] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    assert_eq!(r.target, goal);
    assert!(!a.compare.current());
    // a repeat while it runs: coalesced (the rung the user stops at is read next)
    assert!(update(&mut a, Msg::Key(Key::Char('['))).is_empty());
    let t = a.compare.target.unwrap();
    assert!(t > goal);
    let cmds = update(&mut a, Msg::CompareAnalyzed(Box::new(r.run())));
    let [Command::AnalyzeCompare(r2)] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    assert_eq!(r2.target, t);
    update(&mut a, Msg::CompareAnalyzed(Box::new(r2.run())));
    assert!(a.compare.current());
    // back to the goal: from the cache; the loose run is not measured there, never a number
    assert!(update(&mut a, Msg::Key(Key::Char(']'))).is_empty());
    assert!(a.compare.current());
    let loose = &a.compare.runs[1].analysis;
    assert!(loose.fit.is_none());
    assert!(loose.per_batch.iter().any(|p| p.not_measured));
    assert!(loose
        .per_batch
        .iter()
        .all(|p| !p.not_measured || p.steps.is_none()));
    let strict = &a.compare.runs[0].analysis;
    assert_eq!(
        strict,
        &log.analysis(),
        "the strict run at its goal: today's reading"
    );
    let text = tui_support::render_text(&a, 120, 30);
    assert!(text.contains("not measured"), "{text}");
    assert!(text.contains(&format!("target {goal} of ladder")), "{text}");
}
