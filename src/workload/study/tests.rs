use super::*;

fn named() -> Vec<Source> {
    NAMED_DATASETS
        .iter()
        .map(|n| Source {
            name: n.to_string(),
            origin: Origin::Named,
            table: format!("name = \"{n}\"\n"),
        })
        .collect()
}

#[test]
fn a_choice_is_a_name_and_its_settings() {
    let c = Choice::parse("resnet:width=4,batch_norm=ghost,ghost_batch=16").unwrap();
    assert_eq!(c.head, "resnet");
    assert_eq!(c.settings.len(), 3);
    assert_eq!(
        c.toml_lines(),
        "width = 4\nbatch_norm = \"ghost\"\nghost_batch = 16\n"
    );
    let c = Choice::parse("cnn:channels=[8,16],dense=32").unwrap();
    assert_eq!(c.settings[0], ("channels".into(), "[8,16]".into()));
    assert!(Choice::parse(":width=4").is_err());
    assert!(Choice::parse("cnn:width")
        .unwrap_err()
        .contains("key=value"));
}

#[test]
fn a_model_and_a_named_dataset_make_a_calibrated_study() {
    let d = dataset_table(
        &Choice::parse("mnist:downsample=2").unwrap(),
        None,
        &named(),
    )
    .unwrap();
    let p = study(
        &Choice::parse("cnn:channels=[8,16],dense=32").unwrap(),
        &d,
        OptimizerKind::Sgd,
    )
    .unwrap();
    assert_eq!(p.name, "cnn-mnist-sgd");
    let c = p.calibrate.expect("everything left to the calibration");
    assert!(c.target && c.search && c.batch_sizes && c.budget && c.eval && c.defaults);
    assert_eq!(p.workload.dataset.unwrap().downsample, Some(2));
}

#[test]
fn a_pair_that_cannot_work_says_why_at_the_model() {
    let d = dataset_table(&Choice::parse("mnist").unwrap(), None, &named()).unwrap();
    let e = study(
        &Choice::parse("char-lstm:embed=8,hidden=16").unwrap(),
        &d,
        OptimizerKind::Adam,
    )
    .unwrap_err();
    assert_eq!(e.part, Part::Model, "{e}");
    assert!(e.to_string().starts_with("--model: "), "{e}");
}

#[test]
fn an_unknown_dataset_lists_the_sources() {
    let e = dataset_table(&Choice::parse("mnsit").unwrap(), None, &named()).unwrap_err();
    assert_eq!(e.part, Part::Dataset);
    assert!(e.message.contains("mnist, fashion"), "{e}");
}

#[test]
fn a_path_gets_its_format_from_its_name_or_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.npz");
    std::fs::write(&f, b"").unwrap();
    let t = dataset_table(&Choice::parse(f.to_str().unwrap()).unwrap(), None, &named()).unwrap();
    assert!(t.contains("format = \"npz\""), "{t}");
    let g = dir.path().join("x.dat");
    std::fs::write(&g, b"").unwrap();
    let e =
        dataset_table(&Choice::parse(g.to_str().unwrap()).unwrap(), None, &named()).unwrap_err();
    assert!(e.message.contains("--format"), "{e}");
    let t = dataset_table(
        &Choice::parse(g.to_str().unwrap()).unwrap(),
        Some("bytes"),
        &named(),
    )
    .unwrap();
    assert!(t.contains("format = \"bytes\""), "{t}");
}

#[test]
fn every_bundled_model_and_dataset_is_a_choice_that_makes_it_again() {
    for (path, p) in crate::workload::presets::embedded_presets() {
        let p = p.unwrap();
        let w = &p.workload;
        let model = preset_model_choice(&p);
        assert_eq!(Choice::parse(&model.text()).unwrap(), model, "{path:?}");
        let table = match &w.dataset {
            None => String::new(),
            Some(d) => {
                let c = dataset_choice(d, &named()).expect("a named dataset");
                assert_eq!(Choice::parse(&c.text()).unwrap(), c, "{path:?}");
                dataset_table(&c, None, &named()).unwrap()
            }
        };
        let s = study(&model, &table, w.optimizer).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        assert_eq!(s.workload.model, w.model, "{path:?}");
        assert_eq!(s.workload.dataset, w.dataset, "{path:?}");
    }
    // a ResNet's words stay words, an inline table stays one setting
    let c = Choice::parse("resnet:depth=8,width=4,batch_norm=ghost,ghost_batch=16").unwrap();
    let p = study(
        &c,
        "name = \"mnist\"\ndownsample = 2\n",
        OptimizerKind::Momentum,
    )
    .unwrap();
    // (its keys in the order the TOML table holds them)
    assert_eq!(
        model_choice(&p.workload.model).text(),
        "resnet:batch_norm=ghost,depth=8,ghost_batch=16,width=4"
    );
    let c = Choice::parse("cifar10:augment={ crop = 4, flip = true },max_val=100").unwrap();
    assert_eq!(c.settings.len(), 2, "{c:?}");
}

#[test]
fn a_saved_study_is_the_minimal_study_and_loads_back_to_it() {
    let d = dataset_table(
        &Choice::parse("digits:val_fraction=0.2").unwrap(),
        None,
        &named(),
    )
    .unwrap();
    let mut p = study(
        &Choice::parse("mlp:hidden=[32]").unwrap(),
        &d,
        OptimizerKind::Momentum,
    )
    .unwrap();
    p.name = "mine".into();
    let text = study_file_text(&p, "mine: a test").unwrap();
    assert!(text.starts_with("# mine: a test\n"), "{text}");
    for left_out in [
        "target",
        "search",
        "batch_sizes",
        "step_budget",
        "eval_every",
        "name = \"mine\"",
    ] {
        assert!(!text.contains(left_out), "{left_out} in:\n{text}");
    }
    for kept in [
        "optimizer = \"momentum\"",
        "hidden = [32]",
        "val_fraction = 0.2",
    ] {
        assert!(text.contains(kept), "{kept} missing:\n{text}");
    }
    let back = parse_preset(Path::new("mine.toml"), &text).unwrap();
    assert_eq!(back, p);
    // a setting given is kept (and no longer calibrated): 12 trials per B, a 500-step budget
    p.sweep.trials_per_batch = 12;
    p.workload.step_budget = 500;
    p.calibrate.as_mut().unwrap().budget = false;
    p.calibrate.as_mut().unwrap().size = false;
    let text = study_file_text(&p, "").unwrap();
    assert!(text.contains("trials_per_batch = 12"), "{text}");
    assert!(text.contains("step_budget = 500"), "{text}");
    assert_eq!(parse_preset(Path::new("mine.toml"), &text).unwrap(), p);
    // a study without a calibration stage is written whole
    let (_, bundled) = crate::workload::presets::find_preset("digits-mlp-sgd").unwrap();
    let text = study_file_text(&bundled, "").unwrap();
    assert!(text.contains("batch_sizes"), "{text}");
}

/// `--model KIND` alone gives the family's registered default, for every family, on a dataset
/// of what it reads (none for the noisy quadratic model).
#[test]
fn a_family_named_by_its_kind_alone_starts_from_its_registered_default() {
    use crate::model::{Input, FAMILIES};
    for family in FAMILIES {
        let table = match family.input {
            Input::Images => dataset_table(&Choice::parse("digits").unwrap(), None, &named()),
            Input::Text => dataset_table(&Choice::parse("shakespeare").unwrap(), None, &named()),
            Input::None => Ok(String::new()),
        }
        .unwrap();
        let p = study(
            &Choice::parse(family.kind).unwrap(),
            &table,
            OptimizerKind::Adam,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", family.kind));
        assert_eq!(p.workload.model, family.default_spec(), "{}", family.kind);
        assert_eq!(
            p.workload.dataset.is_none(),
            family.input == Input::None,
            "{}",
            family.kind
        );
    }
}
