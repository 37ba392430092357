//! Tests of `load`.

use super::*;

const VALID: &str = r#"
name = "t"
description = "d"
[workload]
optimizer = "adam"
eval_every = 10
step_budget = 100
[workload.dataset]
name = "shakespeare"
max_bytes = 10000
[workload.model]
kind = "transformer"
d_model = 32
heads = 4
layers = 1
ff = 64
[workload.target]
metric = "val_bpc"
value = 3.0
[workload.defaults]
learning_rate = 0.001
"#;

/// `[sweep] confirm`: left out → the default stage; "off" → none; K×R in either
/// spelling; the JSON of a run-log header without it reads as off (older logs).
#[test]
fn the_confirm_stage_of_a_preset() {
    use crate::workload::spec::ConfirmPlan;
    let p = Path::new("t.toml");
    let with = |v: &str| {
        parse_preset(
            p,
            &format!("{VALID}[sweep]\nbatch_sizes = [8]\ntrials_per_batch = 2\n{v}\n"),
        )
    };
    assert_eq!(with("").unwrap().sweep.confirm, Some(ConfirmPlan::DEFAULT));
    assert_eq!(with("confirm = \"off\"").unwrap().sweep.confirm, None);
    let two_by_four = Some(ConfirmPlan {
        configs: 2,
        seeds: 4,
    });
    assert_eq!(
        with("confirm = \"2x4\"").unwrap().sweep.confirm,
        two_by_four
    );
    assert_eq!(
        with("confirm = \"2×4\"").unwrap().sweep.confirm,
        two_by_four
    );
    let e = with("confirm = \"2x\"").unwrap_err();
    assert!(e.message.contains("the seeds R is missing"), "{e}");
    // a header's preset (JSON) without the key: off; with it: the stage, written as "KxR"
    let mut preset = with("confirm = \"2x4\"").unwrap();
    let json = serde_json::to_value(&preset).unwrap();
    assert_eq!(json["sweep"]["confirm"], "2x4");
    preset.sweep.confirm = None;
    let json = serde_json::to_value(&preset).unwrap();
    assert!(json["sweep"].get("confirm").is_none());
    let back: crate::workload::spec::Preset = serde_json::from_value(json).unwrap();
    assert_eq!(back.sweep.confirm, None);
    // `confirm_until` (the stage's width target): only with a stage, in (0, 1), located
    let p = with("confirm = \"1x10\"\nconfirm_until = 0.15").unwrap();
    assert_eq!(p.sweep.confirm_until, Some(0.15));
    let e = with("confirm = \"off\"\nconfirm_until = 0.15").unwrap_err();
    assert!(
        e.message.contains("no effect without a confirm stage"),
        "{e}"
    );
    let line =
        format!("{VALID}[sweep]\nbatch_sizes = [8]\ntrials_per_batch = 2\nconfirm = \"off\"\n")
            .lines()
            .count()
            + 1;
    assert!(
        e.to_string().contains(&format!(":{line}:")),
        "located at the key: {e}"
    );
    let e = with("confirm_until = 1.5").unwrap_err();
    assert!(e.message.contains("in (0, 1)"), "{e}");
}

#[test]
fn line_col_counts_lines_and_characters() {
    let t = "ab\ncé=x\n";
    assert_eq!(line_col(t, 0), (1, 1));
    assert_eq!(line_col(t, 3), (2, 1));
    // 'é' is two bytes: '=' is at byte 6, the third character of line 2.
    assert_eq!(line_col(t, 6), (2, 3));
    assert_eq!(line_col(t, 5), (2, 2)); // inside 'é' → its start
    assert_eq!(line_col(t, 999), (3, 1));
}

#[test]
fn display_is_path_line_col_message() {
    let e = PresetError {
        path: PathBuf::from("presets/x.toml"),
        line: 3,
        col: 7,
        message: "bad".into(),
    };
    assert_eq!(e.to_string(), "presets/x.toml:3:7: bad");
}

#[test]
fn valid_document_passes_and_checks_catch_bad_heads() {
    let p = parse_preset(Path::new("t.toml"), VALID).unwrap();
    assert!(check(&p).is_empty());
    let bad = VALID.replace("heads = 4", "heads = 5");
    let e = parse_preset(Path::new("t.toml"), &bad).unwrap_err();
    assert_eq!((e.line, e.col), (14, 1));
    assert!(e.message.contains("divide d_model 32"), "{e}");
}

#[test]
fn semantic_errors_point_at_the_key_or_array_element() {
    // Workers = 3 does not divide B = 8: reported at the element of batch_sizes (line 23).
    let doc = format!("{VALID}[sweep]\nbatch_sizes = [8]\ntrials_per_batch = 1\nworkers = 3\n");
    let e = parse_preset(Path::new("t.toml"), &doc).unwrap_err();
    assert!(e.message.contains("not divisible by workers 3"), "{e}");
    assert_eq!((e.line, e.col), (23, 16));
    // A bad momentum inserted as line 21 (right below [workload.defaults]).
    let doc = VALID.replace("[workload.defaults]", "[workload.defaults]\nmomentum = 1.5");
    let e = parse_preset(Path::new("t.toml"), &doc).unwrap_err();
    assert_eq!((e.line, e.col), (21, 1));
    assert!(e.message.contains("momentum 1.5 must be in [0, 1)"), "{e}");
}
