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
