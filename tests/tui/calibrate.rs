//! A study from a model and a dataset alone, in the TUI: Setup's Model and Dataset fields (the
//! families and the dataset sources they cycle through, their text editors, a pair that cannot
//! work said under its field, the fields the calibration chooses shown "auto" until edited),
//! Save as preset (from Setup and, for the calibrated study, from Live), and Live while the
//! calibration stage runs and after it (a real, closed-form NQM sweep). The last test drives
//! the real binary in a pseudo-terminal and re-plans the preset it saved.

use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;
use std::sync::OnceLock;
use std::time::Duration;

use crate::pty::Pty;
use crate::support::*;
use scaling_lab::tui::app::{
    family_defaults, update, update_settled, App, Command, Field, Msg, PromptFor, Screen,
    SetupFocus, FAMILY_ORDER, FIELDS,
};
use scaling_lab::tui::key::Key;
use scaling_lab::workload::spec::OptimizerKind;
use scaling_lab::workload::study::{self, Choice, Part};

fn key(a: &mut App, k: Key) -> Vec<Command> {
    update(a, Msg::Key(k))
}

fn keys(a: &mut App, ks: &[Key]) {
    for k in ks {
        key(a, *k);
    }
}

fn typed(a: &mut App, s: &str) {
    for c in s.chars() {
        key(a, Key::Char(c));
    }
}

/// Moves Setup's field cursor to `f` (focus on the fields).
fn go_to(a: &mut App, f: Field) {
    if a.setup.focus != SetupFocus::Fields {
        key(a, Key::Tab);
    }
    while a.setup.field > 0 {
        key(a, Key::Up);
    }
    for _ in 0..FIELDS.iter().position(|x| *x == f).unwrap() {
        key(a, Key::Down);
    }
}

/// The Setup field `f`'s problems.
fn problems_at(a: &App, f: Field) -> Vec<scaling_lab::sweep::overrides::Problem> {
    a.setup
        .problems()
        .into_iter()
        .filter(|p| Field::of(p) == Some(f))
        .collect()
}

#[test]
fn the_model_field_cycles_the_families_at_their_bundled_sizes() {
    let mut a = app();
    assert_eq!(FIELDS[0], Field::Model);
    assert_eq!(FIELDS[1], Field::Dataset);
    // the preset's own model and dataset, its study (nothing calibrated)
    assert_eq!(a.setup.model, "mlp:hidden=[64]");
    assert_eq!(a.setup.dataset, "digits:val_fraction=0.2");
    assert!(a.setup.study.is_none() && a.setup.calibrates().is_none());
    // every family at the size of its first bundled preset
    let d = family_defaults();
    assert_eq!(
        d.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        FAMILY_ORDER
    );
    for (kind, text) in d {
        assert!(text.starts_with(kind.as_str()), "{kind}: {text}");
        if kind != "nqm" {
            assert!(text.contains('='), "{kind} has its knobs: {text}");
        }
    }
    go_to(&mut a, Field::Model);
    let mut seen = vec![study::Choice::parse(&a.setup.model).unwrap().head];
    for _ in 0..FAMILY_ORDER.len() {
        key(&mut a, Key::Right);
        seen.push(Choice::parse(&a.setup.model).unwrap().head);
    }
    assert_eq!(seen.first(), seen.last(), "{seen:?}");
    assert_eq!(&seen[..FAMILY_ORDER.len()], &FAMILY_ORDER);
    // back at the preset's own family: its own model, its own study again
    assert_eq!(a.setup.model, "mlp:hidden=[64]");
    assert!(a.setup.study.is_none());
    // a CNN on digits is a study of its own: calibrated, named after its parts
    key(&mut a, Key::Right);
    assert_eq!(a.setup.model, d[1].1);
    let s = a.setup.study.clone().unwrap().unwrap();
    assert_eq!(s.name, "cnn-digits-momentum");
    assert_eq!(a.setup.study_name(), "cnn-digits-momentum");
    let c = a.setup.calibrates().unwrap();
    assert!(c.target && c.search && c.batch_sizes && c.budget);
    // Left goes back; ←/→ on the first family wraps to the last
    key(&mut a, Key::Left);
    key(&mut a, Key::Left);
    assert_eq!(Choice::parse(&a.setup.model).unwrap().head, "nqm");
    // the noisy quadratic model reads no data: the field says so, the study has none
    assert!(a.setup.dataset_value().contains("reads no data"));
    let s = a.setup.study.clone().unwrap().unwrap();
    assert!(s.workload.dataset.is_none());
    assert_eq!(s.name, "nqm-momentum");
}

#[test]
fn the_dataset_field_cycles_every_source_then_a_path() {
    let mut a = app();
    let n = a.setup.sources.len();
    assert!(n >= study::NAMED_DATASETS.len());
    go_to(&mut a, Field::Dataset);
    let mut seen = Vec::new();
    for _ in 0..n {
        key(&mut a, Key::Right);
        seen.push(a.setup.dataset.clone());
    }
    // mnist, fashion, …, cifar100, then a path (empty), then digits with the preset's settings
    assert_eq!(seen[0], "mnist");
    assert_eq!(seen[n - 2], "cifar100");
    assert_eq!(seen[n - 1], "");
    assert!(a.setup.dataset_value().starts_with("a path"));
    let e = problems_at(&a, Field::Dataset);
    assert!(
        e.iter().any(|p| p.blocking && p.message.contains("PATH")),
        "{e:?}"
    );
    assert!(a.setup.config(Path::new("runs")).is_none());
    key(&mut a, Key::Right);
    assert_eq!(a.setup.dataset, "digits:val_fraction=0.2");
    assert!(a.setup.study.is_none(), "the preset's own again");
    // a datasets file's problem is said under the field, the named datasets stay
    let named = a.setup.sources.clone();
    a.setup.set_sources(
        named.clone(),
        vec!["datasets.toml: `x` is not a table".into()],
    );
    let p = problems_at(&a, Field::Dataset);
    assert!(
        p.iter()
            .any(|p| !p.blocking && p.message.contains("not a table")),
        "{p:?}"
    );
    assert_eq!(a.setup.sources, named);
}

#[test]
fn a_pair_that_cannot_work_says_why_under_its_field_and_blocks_the_launch() {
    let mut a = app();
    go_to(&mut a, Field::Model);
    // the char-LSTM on digits: a language model on images
    while Choice::parse(&a.setup.model).unwrap().head != "char-lstm" {
        key(&mut a, Key::Right);
    }
    let Some(Err(e)) = &a.setup.study else {
        panic!("{:?}", a.setup.study)
    };
    // said at the model, naming both and what would work
    assert_eq!(e.part, Part::Model);
    assert!(
        e.message.contains("char-lstm") && e.message.contains("language model"),
        "{e:?}"
    );
    assert!(e.message.contains("shakespeare"), "{e:?}");
    let p = problems_at(&a, Field::Model);
    assert!(p.iter().any(|p| p.blocking), "{p:?}");
    let text = render_text(&a, 120, 40);
    assert!(
        text.contains("✗ model `char-lstm` is a language model"),
        "{text}"
    );
    // Enter on a field edits it; from the presets it launches — not this study
    key(&mut a, Key::Tab);
    assert!(key(&mut a, Key::Enter).is_empty());
    assert!(a.flash.as_deref().unwrap().starts_with("cannot launch"));
    assert_eq!(a.screen, Screen::Setup);
    // Save as preset says why not, too
    key(&mut a, Key::Char('w'));
    assert!(a.flash.as_deref().unwrap().starts_with("cannot save"));
    assert!(a.prompt.is_none());
    // Shakespeare makes it a study
    go_to(&mut a, Field::Dataset);
    while a.setup.dataset != "shakespeare" {
        key(&mut a, Key::Right);
    }
    assert!(matches!(a.setup.study, Some(Ok(_))), "{:?}", a.setup.study);
    assert!(a.setup.problems().iter().all(|p| !p.blocking));
}

#[test]
fn the_text_editor_edits_the_model_and_the_dataset_knobs() {
    let mut a = app();
    go_to(&mut a, Field::Model);
    key(&mut a, Key::Enter);
    assert!(matches!(
        a.prompt.as_ref().map(|p| &p.for_),
        Some(PromptFor::Model)
    ));
    // letters that are vi keys elsewhere are text here; q does not quit
    keys(&mut a, &[Key::Backspace, Key::Backspace, Key::Backspace]);
    typed(&mut a, "32]");
    keys(&mut a, &[Key::Home, Key::Delete, Key::Delete, Key::Delete]);
    typed(&mut a, "mlp");
    assert_eq!(a.prompt.as_ref().unwrap().input.text, "mlp:hidden=[32]");
    assert!(!a.quit);
    let text = render_text(&a, 120, 40);
    assert!(text.contains("kind:key=value"), "{text}");
    key(&mut a, Key::Enter);
    assert!(a.prompt.is_none());
    assert_eq!(a.setup.model, "mlp:hidden=[32]");
    let s = a.setup.study.clone().unwrap().unwrap();
    assert_eq!(s.name, "mlp-digits-momentum");
    // a text that is no choice stays open, saying why
    key(&mut a, Key::Enter);
    keys(&mut a, &[Key::Home]);
    typed(&mut a, ":");
    key(&mut a, Key::Enter);
    let p = a.prompt.as_ref().expect("still open");
    assert!(p.error.as_deref().unwrap().contains("name"), "{p:?}");
    // Esc cancels: the model is what it was
    key(&mut a, Key::Esc);
    assert!(a.prompt.is_none());
    assert_eq!(a.setup.model, "mlp:hidden=[32]");
    // an unknown knob is the study's problem, under the field
    key(&mut a, Key::Enter);
    typed(&mut a, ",hiden=3");
    key(&mut a, Key::Enter);
    let p = problems_at(&a, Field::Model);
    assert!(
        p.iter().any(|p| p.blocking && p.message.contains("hiden")),
        "{p:?}"
    );
    // the dataset's settings
    a.setup.set_model("mlp:hidden=[32]").unwrap();
    go_to(&mut a, Field::Dataset);
    key(&mut a, Key::Enter);
    key(&mut a, Key::End);
    typed(&mut a, "5");
    key(&mut a, Key::Enter);
    assert_eq!(a.setup.dataset, "digits:val_fraction=0.25");
    let s = a.setup.study.clone().unwrap().unwrap();
    assert_eq!(s.workload.dataset.unwrap().val_fraction, 0.25);
    // a path: its format from the name, or given as a setting
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.dat");
    std::fs::write(&f, b"").unwrap();
    a.setup.set_dataset(f.to_str().unwrap()).unwrap();
    assert_eq!(a.setup.dataset_idx, a.setup.sources.len());
    let Some(Err(e)) = &a.setup.study else {
        panic!()
    };
    assert_eq!(e.part, Part::Dataset);
    assert!(e.message.contains("format"), "{e:?}");
    a.setup
        .set_dataset(&format!("{}:format=bytes", f.display()))
        .unwrap();
    match &a.setup.study {
        // the format was taken: what is wrong now is an image model on text
        Some(Err(e)) => assert!(!e.message.contains("--format"), "{e:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_fields_the_calibration_chooses_are_auto_until_edited() {
    let mut a = app();
    a.setup.set_model("mlp:hidden=[32]").unwrap();
    for f in [
        Field::Target,
        Field::BatchMin,
        Field::BatchMax,
        Field::Budget,
    ] {
        assert!(a.setup.auto(f), "{f:?}");
    }
    // the study's size too (trials per B and the confirm stage, fitted to the time budget)
    assert!(a.setup.auto(Field::Trials) && a.setup.auto(Field::Confirm));
    let o = a.setup.overrides();
    assert_eq!(
        (
            o.target,
            o.batch_sizes.clone(),
            o.steps,
            o.trials,
            o.confirm
        ),
        (None, None, None, None, None)
    );
    // untouched fields follow the study: 8 trials per B, the scheduler's concurrency
    assert_eq!(a.setup.trials, 8);
    assert!(a.setup.concurrency_auto);
    let text = render_text(&a, 120, 40);
    assert_eq!(text.matches("auto (calibrated)").count(), 6, "{text}");
    assert!(text.contains("pilot trials choose the target"), "{text}");
    let cfg = a.setup.config(Path::new("runs")).unwrap();
    let c = cfg.preset.calibrate.unwrap();
    assert!(c.target && c.batch_sizes && c.budget && c.size);
    assert!(cfg.batch_sizes.is_empty());
    // an edited trials count is the study's: it is no longer sized
    go_to(&mut a, Field::Trials);
    key(&mut a, Key::Right);
    assert!(!a.setup.auto(Field::Trials) && !a.setup.auto(Field::Confirm));
    let cfg = a.setup.config(Path::new("runs")).unwrap();
    assert!(!cfg.preset.calibrate.unwrap().size);
    assert_eq!(cfg.trials_per_batch, 9);
    // an edit gives the value: the calibration no longer chooses it
    go_to(&mut a, Field::Target);
    key(&mut a, Key::Left);
    assert!(!a.setup.auto(Field::Target));
    go_to(&mut a, Field::BatchMax);
    key(&mut a, Key::Left);
    assert!(!a.setup.auto(Field::BatchMin) && !a.setup.auto(Field::BatchMax));
    let cfg = a.setup.config(Path::new("runs")).unwrap();
    let c = cfg.preset.calibrate.unwrap();
    assert!(!c.target && !c.batch_sizes && c.budget && c.search);
    assert_eq!(cfg.preset.workload.target.value, a.setup.target);
    assert_eq!(cfg.batch_sizes, a.setup.batch_sizes());
    assert!(!cfg.batch_sizes.is_empty());
    // an edited field stays when the study changes again; `r` resets everything
    go_to(&mut a, Field::Optimizer);
    key(&mut a, Key::Right);
    assert!(!a.setup.auto(Field::Target) && a.setup.auto(Field::Budget));
    key(&mut a, Key::Char('r'));
    assert!(a.setup.study.is_none() && a.setup.touched.is_empty());
    assert!(!a.setup.auto(Field::Target));
    assert_eq!(a.setup.model, "mlp:hidden=[64]");
    // the preset's own study launches as before: its hand-picked values
    let cfg = a.setup.config(Path::new("runs")).unwrap();
    assert!(cfg.preset.calibrate.is_none());
    assert_eq!(cfg.preset.name, "digits-mlp-momentum");
}

#[test]
fn save_as_preset_from_setup_writes_the_minimal_study_that_plans_the_same_study() {
    let mut a = app();
    a.setup.set_model("mlp:hidden=[32]").unwrap();
    go_to(&mut a, Field::Trials);
    key(&mut a, Key::Left);
    key(&mut a, Key::Char('w'));
    let p = a.prompt.as_ref().expect("asks the name");
    assert_eq!(p.for_, PromptFor::SaveSetup);
    assert_eq!(p.input.text, "mlp-digits-momentum");
    let text = render_text(&a, 120, 40);
    assert!(
        text.contains("save as preset: mlp-digits-momentum"),
        "{text}"
    );
    for _ in 0..30 {
        key(&mut a, Key::Backspace);
    }
    typed(&mut a, "mine");
    let cmds = key(&mut a, Key::Enter);
    let [Command::SavePreset {
        name,
        preset,
        comment,
    }] = cmds.as_slice()
    else {
        panic!("{cmds:?}")
    };
    assert_eq!(name, "mine");
    assert!(comment.contains("minimal study"), "{comment}");
    // what the executor writes loads back to the study Setup launches
    let mut want = a.setup.config(Path::new("runs")).unwrap().preset;
    want.name = "mine".into();
    let mut p = (**preset).clone();
    p.name = "mine".into();
    let text = study::study_file_text(&p, comment).unwrap();
    assert!(text.contains("trials_per_batch = 7"), "{text}");
    assert!(!text.contains("batch_sizes ="), "{text}");
    let back = scaling_lab::workload::load::parse_preset(Path::new("mine.toml"), &text).unwrap();
    assert_eq!(back, want);
    // the executor's answer: Setup lists it as yours
    let entry = scaling_lab::tui::app::PresetEntry {
        preset: back,
        path: Some(PathBuf::from("/u/mine.toml")),
        user: true,
    };
    let n = a.setup.presets.len();
    update(&mut a, Msg::PresetSaved(Ok(Box::new(entry))));
    assert_eq!(a.setup.presets.len(), n + 1);
    assert!(a.flash.as_deref().unwrap().contains("/u/mine.toml"));
    update(&mut a, Msg::PresetSaved(Err("exists already".into())));
    assert!(a.flash.as_deref().unwrap().contains("exists already"));
}

/// A minimal NQM study (the noisy quadratic model and momentum: the calibration chooses
/// everything), launched from Setup with Enter and run on the real scheduler, folded into the
/// app as the runtime would: (a state while pilots run, the finished app).
fn calibrated_sweep(runs: &Path) -> (App, App) {
    let mut a = app();
    update(&mut a, Msg::Resize(120, 40));
    go_to(&mut a, Field::Model);
    key(&mut a, Key::Left);
    assert_eq!(Choice::parse(&a.setup.model).unwrap().head, "nqm");
    key(&mut a, Key::Tab);
    let cmds = key(&mut a, Key::Enter);
    let [Command::Launch(cfg)] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    let mut cfg = (**cfg).clone();
    assert!(cfg.preset.calibrate.is_some_and(|c| c.any()));
    cfg.runs_dir = runs.to_path_buf();
    let runner = scaling_lab::sweep::runner_for(&cfg.preset.workload, &Default::default()).unwrap();
    let (tx, rx) = sync_channel(4096);
    let handle = scaling_lab::sweep::start_sweep(cfg, runner, tx, None).unwrap();
    update(
        &mut a,
        Msg::SweepStarted {
            run_log: Some(handle.log_path().to_path_buf()),
        },
    );
    let mut mid: Option<App> = None;
    let mut t = 0.0;
    for ev in rx.iter() {
        t += 0.05;
        update(&mut a, Msg::Tick(t));
        update_settled(&mut a, Msg::Sweep(ev));
        let piloting = a.live().is_some_and(|l| {
            l.calibrating() && l.running.values().any(|r| r.spec.calibrate.is_some())
        });
        if mid.is_none() && piloting {
            mid = Some(a.clone());
        }
    }
    let result = handle.join().unwrap();
    assert!(result.calibrated.is_some());
    let report = scaling_lab::report::of_sweep(&result, &Default::default());
    update(
        &mut a,
        Msg::SweepEnded {
            error: None,
            report: Some(Box::new(report)),
        },
    );
    (mid.expect("a state with pilots running"), a)
}

/// The calibrated NQM sweep, run once: (pilots running, finished, its runs directory).
pub fn sweep_once() -> &'static (App, App, tempfile::TempDir) {
    static SWEEP: OnceLock<(App, App, tempfile::TempDir)> = OnceLock::new();
    SWEEP.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (mid, done) = calibrated_sweep(dir.path());
        (mid, done, dir)
    })
}

/// The finished calibrated sweep in Live (for the key table's `w`).
pub fn calibrated_live() -> App {
    sweep_once().1.clone()
}

#[test]
fn live_shows_the_calibration_stage_then_what_it_chose() {
    let (mid, done, runs) = sweep_once();
    let l = mid.live().unwrap();
    assert!(l.calibrating());
    let text = render_text(mid, 120, 40);
    // no points yet: what the pilots do instead
    assert!(
        text.contains("calibrating: choosing the target, ranges and batch sizes"),
        "{text}"
    );
    assert!(text.contains("calibrate "), "{text}");
    // a pilot by its batch size and learning rate, never its id
    assert!(text.contains(" pilot η "), "{text}");
    assert!(!text.contains("#10000"), "{text}");
    let r = l
        .running
        .values()
        .find(|r| r.spec.calibrate.is_some())
        .unwrap();
    assert!(scaling_lab::tui::app::trial_label(&r.spec).starts_with("B="));

    let l = done.live().unwrap();
    let c = l.calibrated.as_deref().expect("calibrated");
    assert!(!l.calibrating());
    let text = render_text(done, 120, 40);
    let summary = scaling_lab::report::calibration::summary_line(c);
    assert!(l.calibration_summary().as_deref() == Some(summary.as_str()));
    assert!(text.contains("calibrated from"), "{text}");
    // the report screen's text (the report's): the calibration's lines
    let first = &scaling_lab::report::calibration::lines(c)[0];
    assert!(
        l.rendered.text.contains(first.as_str()),
        "{first:?} missing"
    );

    // the same run opened from Runs: its log's calibration
    let log = crate::pty::find_log(runs.path()).expect("the sweep's log");
    let read = scaling_lab::runlog::reader::read_run_log(&log).unwrap();
    assert!(read.calibrated.is_some());
    let mut o = app();
    update_settled(
        &mut o,
        Msg::LogOpened {
            log: Box::new(read),
            tailing: false,
        },
    );
    assert!(o.live().unwrap().calibrated.is_some());
    assert!(o.live().unwrap().calibration_summary().is_some());
}

#[test]
fn save_as_preset_on_live_writes_the_calibrated_study() {
    let mut a = calibrated_live();
    let l = a.live().unwrap();
    let header = l.header.clone().unwrap();
    let batch_sizes = l.calibrated.as_ref().unwrap().batch_sizes.clone();
    key(&mut a, Key::Char('w'));
    let p = a.prompt.as_ref().expect("asks the name");
    assert!(matches!(p.for_, PromptFor::SaveCalibrated(Some(_))));
    assert_eq!(p.input.text, header.preset.name);
    typed(&mut a, "-chosen");
    let cmds = key(&mut a, Key::Enter);
    let [Command::SavePreset { name, preset, .. }] = cmds.as_slice() else {
        panic!("{cmds:?}")
    };
    assert_eq!(name, &format!("{}-chosen", header.preset.name));
    // every value explicit: a sweep of it runs the same search, without a calibration
    assert!(preset.calibrate.is_none());
    assert_eq!(preset.sweep.batch_sizes, batch_sizes);
    let text = scaling_lab::workload::presets::preset_file_text(preset, "").expect("a preset file");
    let back = scaling_lab::workload::load::parse_preset(Path::new("x.toml"), &text).unwrap();
    assert!(back.calibrate.is_none());
    assert_eq!(back.workload.target, header.preset.workload.target);
    assert_eq!(back.search, header.preset.search);
    // a run without a calibration stage has nothing calibrated to save
    let mut b = live_app(|_| false);
    key(&mut b, Key::Char('w'));
    assert!(b.prompt.is_none());
    assert!(b.flash.as_deref().unwrap().contains("no calibration stage"));
}

/// The real binary: Setup's Model and Dataset fields edited (typing letters that are vi keys
/// elsewhere), another optimizer, Save as preset into a fresh user presets directory, quit; the
/// saved preset loads as the study Setup showed and `sweep NAME --dry-run` plans what
/// `sweep --model … --dataset … --optimizer … --dry-run` plans.
#[cfg(unix)]
#[test]
fn setup_picks_a_model_and_a_dataset_and_saves_a_preset_that_plans_the_same_study() {
    let runs = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let datasets = user.path().join("no-datasets.toml");
    let env = [
        ("SCALING_LAB_USER_PRESETS_DIR", user.path().as_os_str()),
        ("SCALING_LAB_DATASETS_FILE", datasets.as_os_str()),
    ];
    let runs_s = runs.path().to_str().unwrap();
    let mut p = Pty::spawn_env(&["--runs-dir", runs_s], &env, 120, 40);
    let t = Duration::from_secs(60);
    p.wait_for("Setup", |s| s.contains("Study") && s.contains("launch"), t);
    const LEFT: &str = "\x1b[D";
    const RIGHT: &str = "\x1b[C";
    const DOWN: &str = "\x1b[B";
    const HOME: &str = "\x1b[H";
    const DEL: &str = "\x1b[3~";
    const BS: &str = "\x7f";
    // the Model field: the CNN, back to the MLP, then its hidden sizes typed
    p.send("\t");
    p.send(RIGHT);
    p.wait_for("the CNN", |s| s.contains("cnn:channels="), t);
    p.send(LEFT);
    p.wait_for("the MLP", |s| s.contains("mlp:hidden=[64]"), t);
    p.send("\r");
    p.wait_for("the model's editor", |s| s.contains("kind:key=value"), t);
    p.send(&BS.repeat(3));
    p.send("32]");
    p.send(HOME);
    p.send(&DEL.repeat(3));
    p.send("mlp");
    p.send("\r");
    p.wait_for(
        "the edited model, its study calibrated",
        |s| s.contains("mlp:hidden=[32]") && s.contains("auto (calibrated)"),
        t,
    );
    // the Dataset field: MNIST, back to digits, its split typed
    p.send(DOWN);
    p.send(RIGHT);
    p.wait_for("mnist", |s| s.contains("dataset         ◀ mnist"), t);
    p.send(LEFT);
    p.wait_for("digits", |s| s.contains("digits:val_fraction=0.2"), t);
    p.send("\r");
    p.wait_for("the dataset's editor", |s| s.contains("PATH[:format"), t);
    p.send("5\r");
    p.wait_for("the split", |s| s.contains("digits:val_fraction=0.25"), t);
    // another optimizer
    p.send(DOWN);
    p.send(RIGHT);
    let s = p.wait_for("nesterov", |s| s.contains("mlp-digits-nesterov"), t);
    assert!(s.contains("pilot trials choose"), "{s}");
    // Save as preset, under a name of our own
    p.send("w");
    p.wait_for(
        "the name",
        |s| s.contains("save as preset: mlp-digits-nesterov"),
        t,
    );
    p.send(&BS.repeat(40));
    p.send("my-mlp-digits\r");
    let s = p.wait_for("saved", |s| s.contains("saved as preset my-mlp-digits"), t);
    let file = user.path().join("my-mlp-digits.toml");
    assert!(s.contains("my-mlp-digits.toml"), "{s}");
    p.send("q");
    let st = p.wait_exit(t);
    assert!(
        matches!(st, expectrl::WaitStatus::Exited(_, 0)),
        "exit status {st:?}"
    );

    // the saved preset is the minimal study Setup showed
    let text = std::fs::read_to_string(&file).unwrap();
    let saved = scaling_lab::workload::load::parse_preset(&file, &text).unwrap();
    let sources = study::named_sources();
    let table = study::dataset_table(
        &Choice::parse("digits:val_fraction=0.25").unwrap(),
        None,
        &sources,
    )
    .unwrap();
    let mut want = study::study(
        &Choice::parse("mlp:hidden=[32]").unwrap(),
        &table,
        OptimizerKind::Nesterov,
    )
    .unwrap();
    want.name = "my-mlp-digits".into();
    assert_eq!(saved, want, "{text}");
    let c = saved.calibrate.unwrap();
    assert!(c.target && c.search && c.batch_sizes && c.budget && c.eval && c.defaults);
    // and plans the same study as the flags do
    let dry = |args: &[&str]| -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_scaling-lab"))
            .args(args)
            .args(["--dry-run", "--runs-dir", runs_s])
            .envs(env)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{args:?}: {all}");
        all
    };
    let by_name = dry(&["sweep", "my-mlp-digits"]);
    let by_flags = dry(&[
        "sweep",
        "--model",
        "mlp:hidden=[32]",
        "--dataset",
        "digits:val_fraction=0.25",
        "--optimizer",
        "nesterov",
    ]);
    // (the second dry run reads the layout measurement the first one cached)
    let norm = |s: &str| {
        s.replace("calibrated now", "calibrated (cached)")
            .replace(&file.display().to_string(), "PRESET")
            .replace("my-mlp-digits.toml", "PRESET")
            .replace("mlp-digits-nesterov.toml", "PRESET")
            .replace("my-mlp-digits", "NAME")
            .replace("mlp-digits-nesterov", "NAME")
    };
    assert_eq!(norm(&by_name), norm(&by_flags));
    assert!(by_name.contains("calibrat"), "{by_name}");
}

#[test]
fn setup_fits_with_its_new_fields() {
    // (the strict fit check lives in fit.rs; here: the states exist and read right at 80×24)
    let mut a = app();
    a.setup.set_model("mlp:hidden=[32]").unwrap();
    let text = render_text(&a, 80, 24);
    assert!(text.contains("auto (calibrated)"), "{text}");
    assert!(text.contains("Enter launch: calibrate, search"), "{text}");
}
