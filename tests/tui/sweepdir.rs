//! The TUI reads Slurm sweep directories: Runs lists one as a single run (its shards merged) with
//! a job-state column ("—" where Slurm is not there), the runtime's `DirTail` follows every shard
//! (including one that appears later) and `update` folds what it read into Live as `LogLines`
//! messages, until the merged summary arrives.

use std::path::Path;

use scaling_lab::cluster::sweepdir::{create_sweep_dir, read_sweep_dir, shard_file_name};
use scaling_lab::core::record::{LogLine, Summary, TrialRecord};
use scaling_lab::core::trial::Outcome;
use scaling_lab::runlog::RunLogWriter;
use scaling_lab::sweep::scheduler::make_header;
use scaling_lab::tui::app::{update, Command, Msg, RunStatus, Screen};
use scaling_lab::tui::key::Key;
use scaling_lab::tui::loader::{scan_runs, DirTail};

use crate::support::{app, config, render_text, scripted_records};

/// A new shard log `i` of the directory.
fn shard(dir: &Path, i: usize) -> RunLogWriter {
    let header = scaling_lab::cluster::sweepdir::read_header(dir).unwrap();
    RunLogWriter::create_at(&dir.join(shard_file_name(i)), &header).unwrap()
}

fn write(w: &mut RunLogWriter, trials: &[&TrialRecord], end: bool) {
    for t in trials {
        w.write_trial(t).unwrap();
    }
    if end {
        w.write_summary(&Summary {
            finished: "2026-01-01T10:00:00+00:00".into(),
            trials_done: 0,
            trials_planned: 0,
            complete: true,
            wall_s: 1.0,
            analysis: Default::default(),
        })
        .unwrap();
    }
}

#[test]
fn runs_lists_a_sweep_directory_as_one_run_and_live_follows_its_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path();
    let mut a = app();
    let mut cfg = config(&a);
    // the search stage alone: every planned trial is one of the scripted records
    cfg.preset.sweep.confirm = None;
    cfg.preset.sweep.confirm_until = None;
    // As a sweep logs them: the script lets a few late trials at small B "reach" past their
    // step budget, a line the run-log reader refuses; here they ran out of budget.
    let budget = cfg.preset.workload.step_budget;
    let records: Vec<TrialRecord> = scripted_records(&cfg)
        .into_iter()
        .map(|mut r| {
            if r.outcome.steps > budget {
                r.outcome.outcome = Outcome::NotReached {
                    budget,
                    early_stopped: false,
                };
                r.outcome.steps = budget;
                r.outcome.evals.retain(|e| e.step <= budget);
            }
            r
        })
        .collect();
    let planned = records.len();
    assert!(planned >= 8, "{planned}");
    let dir = create_sweep_dir(runs, &make_header(&cfg, "burn-flex (cpu)")).unwrap();
    // a plain log beside it stays a plain entry
    drop(
        RunLogWriter::create_at(&runs.join("2020-01-01T00-00-00-x.jsonl"), &cfg_header(&cfg))
            .unwrap(),
    );
    let (even, odd): (Vec<&TrialRecord>, Vec<&TrialRecord>) =
        records.iter().partition(|t| t.trial_id % 2 == 0);
    // shard 0 has logged 3 trials; shard 1 has not started yet
    let mut w0 = shard(&dir, 0);
    write(&mut w0, &even[..3], false);

    let entries = scan_runs(runs, None);
    assert_eq!(entries.len(), 2, "{entries:#?}");
    let e = entries
        .iter()
        .find(|e| e.path == dir)
        .expect("the directory");
    assert!(e.is_sweep_dir(), "{e:#?}");
    assert_eq!(
        e.job.as_deref(),
        Some("—"),
        "no job recorded: no Slurm state"
    );
    assert_eq!((e.done, e.planned), (3, planned));
    assert_eq!(e.status, RunStatus::Running, "a shard was written just now");
    assert!(entries.iter().any(|e| !e.is_sweep_dir() && e.job.is_none()));

    // Runs (through messages only): one row for the directory, with the job column
    update(&mut a, Msg::Key(Key::Char('3')));
    update(&mut a, Msg::Runs(entries.clone()));
    assert_eq!(a.screen, Screen::Runs);
    let text = render_text(&a, 140, 20);
    assert!(text.contains(" job "), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("running") && l.contains(&format!("3/{planned}")))
        .unwrap_or_else(|| panic!("the directory's row:\n{text}"));
    assert!(row.contains('—'), "{row}");
    // `r` on a directory does not resume it locally: it names the Slurm resume
    let sel = a.runs.entries.iter().position(|x| x.path == dir).unwrap();
    a.runs.selected = sel;
    let cmds = update(&mut a, Msg::Key(Key::Char('r')));
    assert!(cmds.is_empty(), "{cmds:?}");
    assert!(a.flash.as_deref().unwrap_or("").contains("--slurm"));
    // Enter opens it (the runtime reads the directory)
    assert_eq!(
        update(&mut a, Msg::Key(Key::Enter)),
        vec![Command::OpenLog(dir.clone())]
    );

    // what the runtime does for that command: the merged log, then tailed shards
    let merged = read_sweep_dir(&dir).unwrap();
    let mut tail = DirTail::new(&merged);
    update(
        &mut a,
        Msg::LogOpened {
            log: Box::new(merged),
            tailing: true,
        },
    );
    assert_eq!(a.screen, Screen::Live);
    assert_eq!(a.live().unwrap().saved, 3);
    assert!(tail.poll().unwrap().is_empty(), "nothing new yet");

    // shard 1 appears with two trials: both arrive, no summary yet
    let mut w1 = shard(&dir, 1);
    write(&mut w1, &odd[..2], false);
    let lines = tail.poll().unwrap();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| matches!(l, LogLine::Trial(_))));
    update(&mut a, Msg::LogLines(lines));
    assert_eq!(a.live().unwrap().saved, 5);
    assert!(!a.live().unwrap().done);

    // every shard finishes: the remaining trials, then the merged summary (complete)
    write(&mut w0, &even[3..], true);
    write(&mut w1, &odd[2..], true);
    let lines = tail.poll().unwrap();
    assert_eq!(lines.len(), planned - 5 + 1, "the rest and a summary");
    assert!(matches!(lines.last(), Some(LogLine::Summary(s)) if s.complete));
    update(&mut a, Msg::LogLines(lines));
    let live = a.live().unwrap();
    assert_eq!(live.saved, planned);
    assert!(live.done && !live.cancelled);
    assert_eq!(
        live.finished_text(),
        format!("trials finished: {planned}/{planned}")
    );
}

fn cfg_header(cfg: &scaling_lab::sweep::SweepConfig) -> scaling_lab::core::record::Header {
    make_header(cfg, "burn-flex (cpu)")
}
