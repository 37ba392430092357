use std::io::Write;

use crate::runlog::reader::{read_run_log, RunLogError, RunLogTail};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/valid/nqm-sgd.jsonl"
);

#[test]
fn an_old_sgd_log_is_read_as_what_ran() {
    // Written before records stated only what ran: SGD trials record the preset's unused γ 0.9
    // and β2/ε.
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    assert!(text.lines().nth(1).unwrap().contains("\"momentum\":0.9"));
    let log = read_run_log(std::path::Path::new(FIXTURE)).unwrap();
    for t in &log.trials {
        let m = &t.spec.metaparams;
        assert_eq!((m.momentum, m.beta2, m.epsilon), (0.0, 0.0, 0.0));
    }
}

/// The fixture with trial line `line` (0-based) edited by `edit`, written to `dir/name`.
fn edited(
    dir: &std::path::Path,
    name: &str,
    line: usize,
    edit: impl Fn(&mut serde_json::Value),
) -> std::path::PathBuf {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut v: serde_json::Value = serde_json::from_str(&lines[line]).unwrap();
    edit(&mut v);
    lines[line] = v.to_string();
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn a_contradicted_outcome_is_read_as_its_curve_shows() {
    use crate::core::trial::Outcome;
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let original = read_run_log(std::path::Path::new(FIXTURE)).unwrap();
    assert!(original.warnings.is_empty() && original.off_plan.is_none());
    let of = |log: &crate::runlog::RunLog, id: u64| {
        log.trials
            .iter()
            .find(|t| t.trial_id == id)
            .unwrap()
            .outcome
            .clone()
    };
    // (line 5 = trial 5, reached at 1175 after 1175 steps; line 1 = trial 0, not reached in
    // its 2000-step budget)
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(usize, Edit, u64, Outcome, &str)> = vec![
        (
            5,
            Box::new(|t| t["outcome"]["outcome"]["step"] = json!(1)),
            5,
            Outcome::Reached { step: 1175 },
            "reached at step 1 (not one of its evaluation steps), but its eval curve first \
             meets it at step 1175: read as reached at step 1175",
        ),
        (
            5,
            Box::new(|t| {
                t["outcome"]["outcome"] = json!({"status": "not_reached", "budget": 2000})
            }),
            5,
            Outcome::Reached { step: 1175 },
            "says not reached, but its eval curve meets the target at step 1175",
        ),
        (
            5,
            Box::new(|t| t["outcome"]["outcome"] = json!({"status": "cancelled", "step": 1175})),
            5,
            Outcome::Reached { step: 1175 },
            "says cancelled at step 1175, but",
        ),
        (
            1,
            Box::new(|t| t["outcome"]["outcome"] = json!({"status": "reached", "step": 2000})),
            0,
            Outcome::NotReached {
                budget: 2000,
                early_stopped: false,
            },
            "read as not reached in its 2000 steps",
        ),
        (
            // stopped at 1175 of a 2000-step budget without meeting it: cut early
            5,
            Box::new(|t| t["outcome"]["evals"] = json!([])),
            5,
            Outcome::NotReached {
                budget: 1175,
                early_stopped: true,
            },
            "has no evaluations to show it: read as not reached in its 1175 steps",
        ),
    ];
    for (i, (line, edit, id, read, says)) in cases.into_iter().enumerate() {
        let path = edited(dir.path(), &format!("{i}.jsonl"), line, edit);
        let log = read_run_log(&path).unwrap();
        assert_eq!(of(&log, id).outcome, read, "case {i}");
        assert_eq!(log.warnings.len(), 1, "{:?}", log.warnings);
        let w = &log.warnings[0];
        assert!(
            w.starts_with(&format!(
                "{}:{}: trial {id}: stored outcome says ",
                path.display(),
                line + 1
            )) && w.contains(says),
            "case {i}: {w}"
        );
        // the rest is the original log
        for t in log.trials.iter().filter(|t| t.trial_id != id) {
            assert_eq!(t.outcome, of(&original, t.trial_id));
        }
        // A followed log (the TUI's tail) reads the line as the reader does.
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let tail_path = dir.path().join(format!("{i}-tail.jsonl"));
        std::fs::write(&tail_path, lines[..line].join("\n") + "\n").unwrap();
        let mut tail = RunLogTail::after(&read_run_log(&tail_path).unwrap());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&tail_path)
            .unwrap();
        writeln!(f, "{}", lines[line]).unwrap();
        let polled = tail.poll().unwrap();
        let [crate::core::record::LogLine::Trial(t)] = polled.as_slice() else {
            panic!("{polled:?}")
        };
        assert_eq!(t.outcome.outcome, read, "case {i} (tail)");
        assert!(tail.take_warnings()[0].contains(says));
    }
}

#[test]
fn an_edited_header_or_trial_is_off_plan_once_with_the_count() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    // the header's seed: every trial differs; one warning, with the count
    let path = edited(dir.path(), "seed.jsonl", 0, |h| h["seed"] = json!(2));
    let log = read_run_log(&path).unwrap();
    assert_eq!(log.warnings.len(), 1, "{:?}", log.warnings);
    let w = &log.warnings[0];
    assert!(
        w.starts_with(&format!(
            "{}:2: trial 0 is not the trial its header's plan derives (seed 2, batch sizes \
             [1, 4, 16, 64, 256], the recorded preset): ",
            path.display()
        )) && w.ends_with("(+19 more trial lines like it)")
            && w.contains("seed 13403749862096105541 here, "),
        "{w}"
    );
    assert_eq!(log.off_plan.as_deref(), Some(w.as_str()));
    // one trial's learning rate: that line, named
    let path = edited(dir.path(), "lr.jsonl", 3, |t| {
        t["spec"]["metaparams"]["learning_rate"] = json!(0.5)
    });
    let log = read_run_log(&path).unwrap();
    let w = log.off_plan.unwrap();
    assert!(
        w.contains(":4: trial 3 is not the trial")
            && w.contains("metaparams.learning_rate 0.5 here, ")
            && !w.contains("more trial lines"),
        "{w}"
    );
}

#[test]
fn a_followed_log_refuses_an_impossible_trial_as_the_reader_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The header and two trials are read; then the log grows.
    std::fs::write(&path, lines[..3].join("\n") + "\n").unwrap();
    let log = read_run_log(&path).unwrap();
    let mut tail = RunLogTail::after(&log);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    // A duplicate of trial 1 (line 3): refused, naming line 4 and the first copy.
    writeln!(f, "{}", lines[2]).unwrap();
    let e = tail.poll().unwrap_err();
    assert!(matches!(e, RunLogError::Malformed { line: 4, .. }), "{e}");
    assert!(e.to_string().contains("first on line 3"), "{e}");
    // A fresh tail after the good part: an impossible learning rate on line 4.
    std::fs::write(&path, lines[..3].join("\n") + "\n").unwrap();
    let mut tail = RunLogTail::after(&read_run_log(&path).unwrap());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let bad = lines[3].replacen("\"learning_rate\":", "\"learning_rate\":-", 1);
    writeln!(f, "{bad}").unwrap();
    let e = tail.poll().unwrap_err().to_string();
    assert!(
        e.contains("log.jsonl:4: ") && e.contains("learning rate -"),
        "{e}"
    );
    // The reader says the same about the same line.
    let e = read_run_log(&path).unwrap_err().to_string();
    assert!(
        e.contains("log.jsonl:4: ") && e.contains("learning rate -"),
        "{e}"
    );
}
