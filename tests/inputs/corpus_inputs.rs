//! The bad-input corpus: generated bad presets (every field × bad value class),
//! keys and values that would not take effect or that a later stage refused (`effect`), damaged
//! run logs and trial lines with impossible values or self-contradicting outcomes (`values`,
//! through every log reader: report, compare, export, resume) and bad files, each run through
//! the real binary. Every case must end within a time bound (the child is killed after it) with
//! an exit code other than 0 and 101 (a panic) and exactly one line on stderr that locates the
//! problem: `file:line:col: ` for presets, `file:line: ` for run-log content, the file's path for
//! file-level problems — or, for a readable log that contradicts itself, exit 0 after a located
//! `warning: file:line: ` line. Where a case fixes them, the exit code (2 usage, 1 runtime) and
//! what the line must (not) say are checked too. `CORPUS_BIN=/path/to/old/scaling-lab` runs the
//! corpus against another build (the before counts).
//!
//! The test prints the count of each failure class (hang, panic, silent success, unlocated or
//! multi-line error) per case group, then fails listing the failing cases.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");
const TIME_BOUND: Duration = Duration::from_secs(20);

/// A small, fast, valid digits preset; each case edits one field.
const BASE: &str = r#"name = "corpus"
description = "corpus base preset"

[workload]
optimizer = "momentum"
eval_every = 5
step_budget = 20
precision = "fp32"

[workload.dataset]
name = "digits"
val_fraction = 0.2
split_seed = 1

[workload.model]
kind = "mlp"
hidden = [8]

[workload.target]
metric = "val_error"
value = 0.5

[workload.defaults]
learning_rate = 0.05
momentum = 0.9

[workload.defaults.schedule]
warmup_steps = 0

[search]
learning_rate = [0.001, 1.0]
one_minus_momentum = [0.01, 0.5]
warmup_fraction = 0.0
base_batch = 8

[sweep]
batch_sizes = [8, 16]
trials_per_batch = 1
workers = 1
concurrency = 1
"#;

/// How the single stderr line must locate the problem.
#[derive(Clone, Debug)]
enum Locate {
    /// `path:line:col: `
    LineCol(String),
    /// `path:line: `
    Line(String),
    /// mentions the path
    Path(String),
    /// Not an error: the input is readable but contradicts itself, so the command goes on
    /// (exit 0) after a `warning: path:line: ` line on stderr.
    Warn(String),
}

struct Case {
    group: &'static str,
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    locate: Locate,
    /// Files that must be byte-identical afterwards (never overwritten).
    unchanged: Vec<PathBuf>,
    /// The exit code the README's rule gives (2 usage, 1 runtime), where the case fixes it.
    code: Option<i32>,
    /// Words the error line must contain (what is wrong), and must not (a wrong culprit).
    says: Vec<String>,
    not_says: Vec<String>,
}

/// A case with no expectations beyond the corpus's rule (for struct-update syntax).
fn blank() -> Case {
    Case::new("", String::new(), vec![], Locate::Path(String::new()))
}

impl Case {
    fn new(group: &'static str, name: String, args: Vec<String>, locate: Locate) -> Self {
        Case {
            group,
            name,
            args,
            env: vec![],
            locate,
            unchanged: vec![],
            code: None,
            says: vec![],
            not_says: vec![],
        }
    }
    fn code(mut self, code: i32) -> Self {
        self.code = Some(code);
        self
    }
    fn says(mut self, words: &[&str]) -> Self {
        self.says.extend(words.iter().map(|w| w.to_string()));
        self
    }
    fn not_says(mut self, words: &[&str]) -> Self {
        self.not_says.extend(words.iter().map(|w| w.to_string()));
        self
    }
}

/// Replace the line `key = …` inside `[table]` of BASE with `key = value` (or add it there).
fn with_field(table: &str, key: &str, value: &str) -> String {
    let mut out = String::new();
    let mut in_table = table.is_empty();
    let mut done = false;
    for line in BASE.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            if in_table && !done {
                out.push_str(&format!("{key} = {value}\n"));
                done = true;
            }
            in_table = t == format!("[{table}]");
        }
        if in_table && !done && t.starts_with(&format!("{key} =")) {
            out.push_str(&format!("{key} = {value}\n"));
            done = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !done {
        if !in_table {
            out.push_str(&format!("[{table}]\n"));
        }
        out.push_str(&format!("{key} = {value}\n"));
    }
    out
}

fn s(v: &str) -> String {
    v.to_string()
}

fn preset_cases(dir: &Path) -> Vec<Case> {
    // (table, key, bad values)
    let fields: Vec<(&str, &str, Vec<&str>)> = vec![
        ("", "name", vec!["\"\"", "1"]),
        ("", "description", vec!["\"  \""]),
        ("workload", "optimizer", vec!["\"bogus\"", "3"]),
        (
            "workload",
            "eval_every",
            vec!["0", "-1", "1.5", "\"5\"", "18446744073709551616"],
        ),
        ("workload", "eval_growth", vec!["-1.0", "2.0", "nan", "inf"]),
        ("workload", "step_budget", vec!["0", "-5", "3"]),
        ("workload", "max_examples", vec!["0", "-1"]),
        ("workload", "grad_clip", vec!["0.0", "-1.0", "nan", "inf"]),
        (
            "workload",
            "divergence_factor",
            vec!["1.0", "0.0", "nan", "inf"],
        ),
        ("workload", "precision", vec!["\"fp8\""]),
        (
            "workload.dataset",
            "name",
            vec!["\"imagenet\"", "\"shakespeare\""],
        ),
        (
            "workload.dataset",
            "val_fraction",
            vec!["0.0", "1.0", "0.9999", "0.0001", "nan", "inf", "-0.5"],
        ),
        ("workload.dataset", "max_val", vec!["0", "1", "-3"]),
        ("workload.dataset", "downsample", vec!["0", "3", "100"]),
        ("workload.dataset", "split_seed", vec!["-1", "\"a\""]),
        ("workload.dataset", "max_bytes", vec!["0", "1", "100000"]),
        ("workload.dataset", "seq_len", vec!["32"]),
        ("workload.model", "kind", vec!["\"resnet\"", "\"nqm\""]),
        (
            "workload.model",
            "hidden",
            vec![
                "[0]",
                "[1000000000]",
                "[100000, 100000, 100000]",
                "\"x\"",
                "[1.5]",
                "8",
            ],
        ),
        (
            "workload.target",
            "metric",
            vec!["\"accuracy\"", "\"val_bpc\""],
        ),
        (
            "workload.target",
            "value",
            vec!["0.0", "1.0", "2.0", "-0.1", "nan", "inf", "\"x\""],
        ),
        (
            "workload.defaults",
            "learning_rate",
            vec!["0.0", "-1.0", "nan", "inf", "-inf"],
        ),
        ("workload.defaults", "momentum", vec!["1.0", "-0.1", "nan"]),
        ("workload.defaults", "beta2", vec!["1.0", "nan", "0.99"]),
        (
            "workload.defaults",
            "epsilon",
            vec!["0.0", "nan", "inf", "1e-8"],
        ),
        (
            "workload.defaults.schedule",
            "warmup_steps",
            vec!["1000000", "-1"],
        ),
        (
            "search",
            "learning_rate",
            vec![
                "[1.0, 0.1]",
                "[0.0, 1.0]",
                "[nan, 1.0]",
                "[0.1, 1.0, 3.0]",
                "[0.1]",
                "[0.1, inf]",
            ],
        ),
        (
            "search",
            "one_minus_momentum",
            vec!["[0.0, 0.5]", "[0.5, 2.0]", "[0.1, 0.2, 0.3]", "[0.01, 1.0]"],
        ),
        ("search", "warmup_fraction", vec!["1.0", "-0.1", "nan"]),
        ("search", "base_batch", vec!["0", "-1"]),
        ("search", "lr_rule", vec!["\"cubic\""]),
        ("search", "decay_fraction", vec!["[0.5, 1.0]"]),
        (
            "sweep",
            "batch_sizes",
            vec![
                "[]",
                "[0]",
                "[3000]",
                "[1000000000]",
                "[-1]",
                "[8, 18446744073709551615]",
                "[8, 8]",
                "[16, 8, 16]",
            ],
        ),
        ("sweep", "trials_per_batch", vec!["0", "1000000000"]),
        ("sweep", "workers", vec!["0", "1000000"]),
        ("sweep", "concurrency", vec!["0", "1000000", "500"]),
        ("sweep", "fuse", vec!["65", "1000000"]),
        ("sweep", "seed", vec!["-1"]),
        ("sweep", "bogus_key", vec!["1"]),
    ];
    let mut cases = Vec::new();
    for (table, key, values) in fields {
        for (i, v) in values.iter().enumerate() {
            let text = with_field(table, key, v);
            let tname = if table.is_empty() { "top" } else { table };
            let name = format!("{tname}.{key}-{i}");
            let path = dir.join(format!("{name}.toml"));
            std::fs::write(&path, &text).unwrap();
            cases.push(preset_case(&name, &path));
        }
    }
    // Whole-document damage.
    let extra: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("syntax", b"name = \"x\nworkload = [".to_vec()),
        ("nul-bytes", {
            let mut b = BASE.as_bytes().to_vec();
            b.splice(40..40, [0u8, 0, 0]);
            b
        }),
        ("not-utf8", {
            let mut b = BASE.as_bytes().to_vec();
            b.splice(10..10, [0xff, 0xfe]);
            b
        }),
        (
            "duplicate-key",
            format!("{BASE}\n[sweep]\nworkers = 1\n").into_bytes(),
        ),
        ("truncated", BASE.as_bytes()[..BASE.len() / 2].to_vec()),
        ("binary", (0..=255u8).cycle().take(3000).collect()),
        // 1,000 NUL bytes are UTF-8, but not text (was: 1:1001: TOML syntax error)
        ("1000-nul", vec![0u8; 1000]),
        // an unknown table nested under the decay (was: "at the top level")
        (
            "nested-unknown-table",
            format!("{BASE}\n[workload.defaults.schedule.decay.x.y.z]\n").into_bytes(),
        ),
    ];
    for (n, bytes) in extra {
        let path = dir.join(format!("doc-{n}.toml"));
        std::fs::write(&path, bytes).unwrap();
        let mut c = preset_case(&format!("doc-{n}"), &path);
        if n == "empty" || n == "not-utf8" {
            // No position inside the file for these: the path is enough.
            c.locate = Locate::Path(path.display().to_string());
        }
        match n {
            "nul-bytes" | "1000-nul" => {
                c = c
                    .says(&["not a text file", "NUL"])
                    .not_says(&["TOML syntax error"]);
            }
            "binary" | "not-utf8" => c = c.says(&["not UTF-8 text"]),
            "nested-unknown-table" => {
                c = c
                    .says(&["missing field `kind` in [workload.defaults.schedule.decay]"])
                    .not_says(&["top level"]);
            }
            _ => {}
        }
        if n == "1000-nul" {
            // located at the first NUL, not past the last one
            c.says
                .push(format!("{}:1:1: not a text file", path.display()));
        }
        cases.push(c);
    }
    cases
}

/// A small NQM preset (no dataset) with `extra` lines added under `[workload]` / `[workload.model]`.
fn nqm_preset(optimizer: &str, workload_extra: &str, model_extra: &str) -> String {
    format!(
        "name = \"nqm-corpus\"\ndescription = \"d\"\n\n[workload]\noptimizer = \"{optimizer}\"\n\
         eval_every = 5\nstep_budget = 20\n{workload_extra}\n[workload.model]\nkind = \"nqm\"\n\
         dim = 10\n{model_extra}\n[workload.target]\nmetric = \"nqm_loss\"\nvalue = 0.1\n\n\
         [workload.defaults]\nlearning_rate = 0.1\n\n[sweep]\nbatch_sizes = [4]\n\
         trials_per_batch = 1\n"
    )
}

/// A small Shakespeare LSTM preset: `max_bytes` and the sweep's batch sizes given.
fn text_preset(max_bytes: usize, batch_sizes: &str) -> String {
    format!(
        "name = \"text-corpus\"\ndescription = \"d\"\n\n[workload]\noptimizer = \"adam\"\n\
         eval_every = 5\nstep_budget = 20\n\n[workload.dataset]\nname = \"shakespeare\"\n\
         max_bytes = {max_bytes}\nseq_len = 64\n\n[workload.model]\nkind = \"char-lstm\"\n\
         embed = 8\nhidden = 8\n\n[workload.target]\nmetric = \"val_bpc\"\nvalue = 3.0\n\n\
         [workload.defaults]\nlearning_rate = 0.01\n\n[sweep]\nbatch_sizes = {batch_sizes}\n\
         trials_per_batch = 1\n"
    )
}

/// A small reviews LSTM preset with a transfer probe: `dataset_extra` lines under
/// [workload.dataset], the target's metric and value, `tail` appended (a [workload.transfer]
/// table, say).
fn reviews_preset(dataset_extra: &str, metric: &str, value: &str, tail: &str) -> String {
    format!(
        "name = \"reviews-corpus\"\ndescription = \"d\"\n\n[workload]\noptimizer = \"adam\"\n\
         eval_every = 5\nstep_budget = 20\n\n[workload.dataset]\nname = \"reviews\"\n\
         max_bytes = 60000\nseq_len = 32\n{dataset_extra}\n\n[workload.model]\nkind = \"char-lstm\"\n\
         embed = 8\nhidden = 8\n\n[workload.target]\nmetric = \"{metric}\"\nvalue = {value}\n\n\
         [workload.defaults]\nlearning_rate = 0.01\n\n{tail}\n[sweep]\nbatch_sizes = [4]\n\
         trials_per_batch = 1\n"
    )
}

/// The transfer probe's settings: each wrong combination one located error.
fn transfer_docs() -> Vec<(&'static str, String, &'static [&'static str])> {
    let probe = "probe = { train = 40, val = 20, test = 20 }";
    let table = "[workload.transfer]\nfeature = \"cell\"\n";
    vec![
        (
            "transfer-probe-on-shakespeare",
            reviews_preset(probe, "val_bpc", "3.0", table)
                .replace("name = \"reviews\"", "name = \"shakespeare\""),
            &["labelled movie reviews"],
        ),
        (
            "transfer-without-probe-sentences",
            reviews_preset("", "val_bpc", "3.0", table),
            &["needs its labelled sentences"],
        ),
        (
            "transfer-on-an-image-model",
            format!("{BASE}\n[workload.transfer]\n"),
            &["not one"],
        ),
        (
            "transfer-acc-without-a-probe",
            reviews_preset(probe, "transfer_acc", "0.6", ""),
            &["add a [workload.transfer] table"],
        ),
        (
            "transfer-acc-thinned",
            reviews_preset(probe, "transfer_acc", "0.6", &format!("{table}every = 2\n")),
            &["probes at every evaluation"],
        ),
        (
            "transfer-acc-out-of-range",
            reviews_preset(probe, "transfer_acc", "1.5", table),
            &["transfer_acc must be in (0, 1)"],
        ),
        (
            "transfer-acc-ladder",
            reviews_preset(probe, "transfer_acc", "0.6", table)
                .replace("step_budget = 20\n", "step_budget = 20\ntargets = [0.55]\n"),
            &["goal only"],
        ),
        (
            "transfer-probe-too-small",
            reviews_preset(
                "probe = { train = 1, val = 0, test = 5 }",
                "val_bpc",
                "3.0",
                table,
            ),
            &["at least 2 / 1 / 1"],
        ),
        (
            "transfer-probe-too-large",
            reviews_preset(
                "probe = { train = 9000, val = 500, test = 1000 }",
                "val_bpc",
                "3.0",
                table,
            ),
            &["at most 6000"],
        ),
        (
            "transfer-feature-unknown",
            reviews_preset(
                probe,
                "val_bpc",
                "3.0",
                "[workload.transfer]\nfeature = \"gate\"\n",
            ),
            &["unknown variant"],
        ),
    ]
}

/// Settings that must take effect: keys that would not take effect, values a later stage refused
/// without a location, numbers that are not in the file, names too long for a log file, nesting too deep
/// — each through `train` and `sweep` (which must not blame a flag nobody gave).
fn preset_effect_cases(dir: &Path) -> Vec<Case> {
    let long = format!("name = \"{}\"", "n".repeat(300));
    let docs: Vec<(&str, String, &[&str])> = vec![
        (
            "sgd-with-momentum",
            BASE.replace("optimizer = \"momentum\"", "optimizer = \"sgd\""),
            &["momentum has no effect", "sgd"],
        ),
        (
            "sgd-with-omm",
            BASE.replace("optimizer = \"momentum\"", "optimizer = \"sgd\"")
                .replace("momentum = 0.9\n", ""),
            &["one_minus_momentum has no effect"],
        ),
        (
            "momentum-with-beta2",
            BASE.replace("momentum = 0.9\n", "momentum = 0.9\nbeta2 = 0.99\n"),
            &["beta2 has no effect"],
        ),
        // (a preset without [sweep] is a study whose batch sizes the lab calibrates:
        // tests/sweep/calibrate.rs)
        (
            "long-name",
            BASE.replace("name = \"corpus\"", &long),
            &["300 characters"],
        ),
        (
            "nested-dotted-300",
            format!("{BASE}\n[{}]\nx = 1\n", vec!["a"; 300].join(".")),
            &["TOML syntax error"],
        ),
        (
            "nested-arrays-300",
            format!("v = {}{}\n{BASE}", "[".repeat(300), "]".repeat(300)),
            &["TOML syntax error"],
        ),
        (
            "nqm-grad-clip",
            nqm_preset("sgd", "grad_clip = 1.0", ""),
            &["grad_clip has no effect"],
        ),
        (
            "nqm-bf16",
            nqm_preset("sgd", "precision = \"bf16\"", ""),
            &["precision has no effect"],
        ),
        (
            "nqm-sgd-precondition",
            nqm_preset("sgd", "", "precondition_power = 0.5"),
            &["precondition_power has no effect"],
        ),
        (
            "nqm-adam-beta2",
            nqm_preset("adam", "", "")
                .replace("learning_rate = 0.1", "learning_rate = 0.1\nbeta2 = 0.999"),
            &["beta2 has no effect"],
        ),
        (
            "text-max-bytes-too-small",
            text_preset(100, "[4]"),
            &["max_bytes"],
        ),
    ];
    let docs: Vec<(&str, String, &[&str])> = docs.into_iter().chain(transfer_docs()).collect();
    let runs = dir.join("runs").display().to_string();
    let mut cases = Vec::new();
    for (n, text, says) in docs {
        let path = dir.join(format!("{n}.toml"));
        std::fs::write(&path, text).unwrap();
        let p = path.display().to_string();
        let train = vec![
            s("train"),
            s("--preset"),
            p.clone(),
            s("--batch-size"),
            s("4"),
        ];
        let sweep = vec![s("sweep"), p.clone(), s("--runs-dir"), runs.clone()];
        for (cmd, args) in [("train", train), ("sweep", sweep)] {
            cases.push(
                Case::new(
                    "effect",
                    format!("{n}/{cmd}"),
                    args,
                    Locate::LineCol(p.clone()),
                )
                .code(2)
                .says(says)
                .not_says(&["--batch-sizes", "--concurrency", "--preset: dataset"]),
            );
        }
    }
    // Values the preset gives that a sweep checks against the data or its caps: located in the
    // preset, never blamed on a flag that was not given.
    let sweep_only: Vec<(&str, String, &str)> = vec![
        (
            "text-batch-larger-than-windows",
            text_preset(10_000, "[4, 1000]"),
            "batch size 1000",
        ),
        (
            "duplicate-batch-sizes",
            with_field("sweep", "batch_sizes", "[8, 16, 8]"),
            "listed twice",
        ),
        (
            "concurrency-past-the-flag-cap",
            with_field("sweep", "concurrency", "300"),
            "concurrency 300",
        ),
        (
            "fuse-past-the-group-cap",
            with_field("sweep", "fuse", "65"),
            "fuse = 65: at most 64",
        ),
    ];
    for (n, text, says) in sweep_only {
        let path = dir.join(format!("{n}.toml"));
        std::fs::write(&path, text).unwrap();
        let p = path.display().to_string();
        cases.push(
            Case::new(
                "effect",
                format!("{n}/sweep"),
                vec![s("sweep"), p.clone(), s("--runs-dir"), runs.clone()],
                Locate::LineCol(p.clone()),
            )
            .code(2)
            .says(&[says])
            .not_says(&["--batch-sizes", "--concurrency", "--fuse"]),
        );
    }
    cases
}

fn preset_case(name: &str, path: &Path) -> Case {
    Case {
        group: "preset",
        name: name.to_string(),
        args: vec![
            s("train"),
            s("--preset"),
            path.display().to_string(),
            s("--batch-size"),
            s("8"),
        ],
        env: vec![],
        locate: Locate::LineCol(path.display().to_string()),
        unchanged: vec![],
        ..blank()
    }
}

fn valid_log() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/nqm-sgd.jsonl"),
    )
    .unwrap()
}

/// The commands that read a run log: `report LOG` and `sweep --resume LOG --runs-dir RUNS`.
fn log_commands(log: &str, runs: &str) -> [(&'static str, Vec<String>); 2] {
    [
        ("report", vec![s("report"), s(log)]),
        (
            "resume",
            vec![s("sweep"), s("--resume"), s(log), s("--runs-dir"), s(runs)],
        ),
    ]
}

/// Every command that reads a run log (one validator, the same verdict everywhere):
/// `report`, `compare` (against the valid fixture), `export` and `sweep --resume`.
fn log_readers(log: &str, runs: &str) -> [(&'static str, Vec<String>); 4] {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/valid/nqm-sgd.jsonl")
        .display()
        .to_string();
    let [report, resume] = log_commands(log, runs);
    [
        report,
        ("compare", vec![s("compare"), s(log), fixture]),
        (
            "export",
            vec![s("export"), s(log), s("--json"), format!("{log}.out.json")],
        ),
        resume,
    ]
}

/// Trial lines with values no run can produce (refused with `file:line`), and stored outcomes
/// their own curves contradict (read with a located warning), through every log reader.
fn value_log_cases(dir: &Path) -> Vec<Case> {
    use serde_json::{json, Value};
    let good = valid_log();
    let lines: Vec<String> = good.lines().map(str::to_string).collect();
    // (name, line index to edit: 1 = trial 0 (not reached, 400 evals), 5 = trial 5 (reached at
    // 1175), the edit, whether it is only a warning, words the message must contain)
    type Edit = fn(&mut Value);
    let edits: Vec<(&str, usize, Edit, bool, &[&str])> =
        vec![
        (
            "lr-negative",
            1,
            |t| t["spec"]["metaparams"]["learning_rate"] = json!(-1.0),
            false,
            &["learning rate -1"],
        ),
        (
            "lr-zero",
            1,
            |t| t["spec"]["metaparams"]["learning_rate"] = json!(0.0),
            false,
            &["learning rate 0"],
        ),
        (
            "momentum-above-one",
            1,
            |t| t["spec"]["metaparams"]["momentum"] = json!(1.5),
            false,
            &["momentum 1.5"],
        ),
        (
            "beta2-negative",
            1,
            |t| t["spec"]["metaparams"]["beta2"] = json!(-0.5),
            false,
            &["beta2"],
        ),
        (
            "epsilon-negative",
            1,
            |t| t["spec"]["metaparams"]["epsilon"] = json!(-1e-8),
            false,
            &["epsilon"],
        ),
        (
            "decay-alpha-2",
            1,
            |t| t["spec"]["metaparams"]["schedule"]["decay"]["alpha"] = json!(2.0),
            false,
            &["decay alpha 2"],
        ),
        (
            "steps-u64-max",
            1,
            |t| t["outcome"]["steps"] = json!(u64::MAX),
            false,
            &["18446744073709551615 steps"],
        ),
        (
            "steps-past-budget",
            1,
            |t| t["outcome"]["steps"] = json!(1_000_000),
            false,
            &["step_budget 2000"],
        ),
        (
            "budget-past-budget",
            1,
            |t| t["outcome"]["outcome"]["budget"] = json!(1_000_000),
            false,
            &["1000000"],
        ),
        (
            "reached-past-steps",
            5,
            |t| t["outcome"]["outcome"]["step"] = json!(1900),
            false,
            &["past the 1175 steps"],
        ),
        (
            "wall-negative",
            1,
            |t| t["outcome"]["wall_s"] = json!(-1.0),
            false,
            &["wall_s -1"],
        ),
        (
            "wall-1e308",
            1,
            |t| t["outcome"]["wall_s"] = json!(1e308),
            false,
            &["wall_s 1e308"],
        ),
        (
            "step-s-negative",
            1,
            |t| t["outcome"]["throughput"]["step_s"] = json!(-0.5),
            false,
            &["step_s"],
        ),
        (
            "examples-per-s-negative",
            1,
            |t| t["outcome"]["throughput"]["examples_per_s"] = json!(-5.0),
            false,
            &["examples_per_s"],
        ),
        (
            "loss-scale-zero",
            1,
            |t| t["outcome"]["final_loss_scale"] = json!(0.0),
            false,
            &["final_loss_scale 0"],
        ),
        (
            "metric-1e308",
            1,
            |t| t["outcome"]["evals"][3]["metric"] = json!(1e308),
            false,
            &["nqm_loss 1e308 at step 20"],
        ),
        (
            "metric-negative",
            1,
            |t| t["outcome"]["evals"][0]["metric"] = json!(-2.0),
            false,
            &["nqm_loss -2"],
        ),
        (
            "train-loss-negative",
            1,
            |t| t["outcome"]["evals"][0]["train_loss"] = json!(-2.0),
            false,
            &["training loss -2"],
        ),
        (
            "evals-out-of-order",
            1,
            |t| t["outcome"]["evals"][2]["step"] = json!(1),
            false,
            &["evaluation step 1"],
        ),
        (
            "eval-past-budget",
            5,
            |t| t["outcome"]["evals"][0]["step"] = json!(9_999_999),
            false,
            &["evaluation step 9999999"],
        ),
        (
            "oom-other-batch",
            1,
            |t| t["outcome"]["outcome"] = json!({"status": "oom", "batch_size": 7, "step": 3}),
            false,
            &["batch size 7"],
        ),
        (
            "reached-without-evals",
            5,
            |t| t["outcome"]["evals"] = json!([]),
            true,
            &["no evaluations to show it", "read as not reached in its 1175 steps"],
        ),
        (
            "reached-curve-never-meets",
            1,
            |t| t["outcome"]["outcome"] = json!({"status": "reached", "step": 2000}),
            true,
            &[
                "trial 0: stored outcome says the target was reached at step 2000",
                "no evaluation in its curve meets",
                "read as not reached in its 2000 steps",
            ],
        ),
        (
            "not-reached-curve-meets",
            5,
            |t| t["outcome"]["outcome"] = json!({"status": "not_reached", "budget": 2000}),
            true,
            &[
                "trial 5: stored outcome says not reached",
                "meets the target at step 1175",
                "read as reached at step 1175",
            ],
        ),
        (
            "reached-earlier-than-curve",
            5,
            |t| t["outcome"]["outcome"]["step"] = json!(100),
            true,
            &[
                "trial 5: stored outcome says the target was reached at step 100,",
                "first meets it at step 1175",
                "read as reached at step 1175",
            ],
        ),
        (
            // not even an evaluation step; the curve first meets the target at 1175
            "reached-at-a-non-evaluation-step",
            5,
            |t| t["outcome"]["outcome"]["step"] = json!(1),
            true,
            &[
                "trial 5: stored outcome says the target was reached at step 1 (not one of its \
                 evaluation steps)",
                "first meets it at step 1175",
                "read as reached at step 1175",
            ],
        ),
        (
            "diverged-after-the-curve-meets",
            5,
            |t| t["outcome"]["outcome"] = json!({"status": "diverged", "step": 1175}),
            true,
            &[
                "trial 5: stored outcome says diverged at step 1175",
                "read as reached at step 1175",
            ],
        ),
        (
            // the readers say what resume refuses (one validator, one verdict)
            "trial-seed-edited",
            3,
            |t| t["spec"]["seed"] = json!(7),
            true,
            &[
                "trial 3 is not the trial its header's plan derives",
                "seed 7 here",
            ],
        ),
        (
            // `report` read this silently; `sweep --resume` refused it
            "header-seed-edited",
            0,
            |h| h["seed"] = json!(2),
            true,
            &[
                "trial 0 is not the trial its header's plan derives (seed 2, ",
                "more trial lines like it",
            ],
        ),
        (
            "trial-learning-rate-edited",
            5,
            |t| t["spec"]["metaparams"]["learning_rate"] = json!(0.5),
            true,
            &[
                "trial 5 is not the trial its header's plan derives",
                "metaparams.learning_rate 0.5 here",
            ],
        ),
    ];
    let mut cases = Vec::new();
    for (n, line, edit, warn, says) in edits {
        let mut l = lines.clone();
        let mut v: Value = serde_json::from_str(&l[line]).unwrap();
        edit(&mut v);
        l[line] = v.to_string();
        let path = dir.join(format!("{n}.jsonl"));
        std::fs::write(&path, l.join("\n") + "\n").unwrap();
        let p = path.display().to_string();
        // A trial its header's plan does not derive: readers warn, resume refuses (one verdict).
        let off_plan = n.ends_with("-edited");
        for (cmd, args) in log_readers(&p, &dir.join("runs").display().to_string()) {
            let refused = !warn || (off_plan && cmd == "resume");
            let locate = if refused {
                Locate::Line(p.clone())
            } else {
                Locate::Warn(p.clone())
            };
            let mut c = Case::new("values", format!("{n}/{cmd}"), args, locate).says(says);
            if cmd != "resume" || off_plan {
                c.unchanged = vec![path.clone()];
            }
            if refused && (cmd != "resume" || off_plan) {
                c = c.code(1);
            }
            cases.push(c);
        }
    }
    cases
}

/// The confirm stage's marks, in the log of an NQM sweep with `--confirm 2x4 --until off` (run
/// here, a second), edited as resume refuses them: a confirm trial that re-runs another search
/// trial than its rank names (its metaparameters copied, so that it is otherwise the trial the
/// plan derives), or a trial that does not exist; the header's `confirm` edited from 2x4 to 1x4.
/// Every reader warns at the line, `sweep --resume` refuses the log (one validator, one verdict).
fn confirm_log_cases(dir: &Path) -> Vec<Case> {
    use serde_json::{json, Value};
    let made = dir.join("made");
    let status = Command::new(BIN)
        .args(["sweep", "nqm-sgd", "--confirm", "2x4", "--until", "off"])
        .args(["--batch-sizes", "1024,4096", "--trials", "4", "--seed", "5"])
        .args(["--concurrency", "1", "--runs-dir"])
        .arg(&made)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let log = std::fs::read_dir(&made)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(log).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (ci, c) = parsed
        .iter()
        .enumerate()
        .find(|(_, v)| v["spec"]["confirm"]["rank"] == json!(0))
        .expect("a confirm trial of the best configuration");
    let b = c["spec"]["batch_size"].clone();
    let of = c["spec"]["confirm"]["of"].clone();
    let other = parsed
        .iter()
        .find(|v| {
            v["type"] == "trial"
                && v["spec"]["batch_size"] == b
                && v["spec"].get("confirm").is_none_or(Value::is_null)
                && v["trial_id"] != of
        })
        .expect("another search trial at its B");
    let other_id = other["trial_id"].as_u64().unwrap();
    let other_mp = other["spec"]["metaparams"].clone();
    let another = format!("re-runs trial {other_id} as configuration #1 at B = {b}");
    // (case name, the line it edits, the edit, what every reader says)
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, usize, Edit, Vec<String>)> = vec![
        (
            "confirm-of-another-search-trial-edited",
            ci,
            Box::new(move |t: &mut Value| {
                t["spec"]["confirm"]["of"] = json!(other_id);
                t["spec"]["metaparams"] = other_mp.clone();
            }),
            vec![another],
        ),
        (
            "confirm-of-a-missing-trial-edited",
            ci,
            Box::new(|t: &mut Value| t["spec"]["confirm"]["of"] = json!(999)),
            vec!["re-runs trial 999, which is not a search trial".into()],
        ),
        (
            "header-confirm-edited",
            0,
            Box::new(|h: &mut Value| h["preset"]["sweep"]["confirm"] = json!("1x4")),
            vec![
                "is not one the header's confirm stage places (confirm 1x4".into(),
                "more trial lines like it".into(),
            ],
        ),
    ];
    let mut cases = Vec::new();
    for (n, line, edit, says) in edits {
        let mut l = lines.clone();
        let mut v: Value = serde_json::from_str(&l[line]).unwrap();
        edit(&mut v);
        l[line] = v.to_string();
        let path = dir.join(format!("{n}.jsonl"));
        std::fs::write(&path, l.join("\n") + "\n").unwrap();
        let p = path.display().to_string();
        let says: Vec<&str> = says.iter().map(String::as_str).collect();
        for (cmd, args) in log_readers(&p, &dir.join("runs").display().to_string()) {
            let locate = if cmd == "resume" {
                Locate::Line(p.clone())
            } else {
                Locate::Warn(p.clone())
            };
            let mut c = Case::new("values", format!("{n}/{cmd}"), args, locate).says(&says);
            c.unchanged = vec![path.clone()];
            if cmd == "resume" {
                c = c.code(1);
            }
            cases.push(c);
        }
    }
    cases
}

/// Damaged logs, each run through every log reader (`log_readers`).
fn log_cases(dir: &Path) -> Vec<Case> {
    let good = valid_log();
    let lines: Vec<&str> = good.lines().collect();
    let header = lines[0];
    let join = |ls: &[String]| ls.join("\n") + "\n";
    let owned: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let mut logs: Vec<(&str, Vec<u8>)> = Vec::new();
    logs.push(("empty", Vec::new()));
    logs.push(("only-newlines", b"\n\n\n".to_vec()));
    // Truncated in the middle of line 3 and then appended to (a torn middle line).
    {
        let mut l = owned.clone();
        l[2] = l[2][..l[2].len() / 2].to_string();
        logs.push(("torn-middle", join(&l).into_bytes()));
    }
    {
        let mut l = owned.clone();
        l.insert(4, "garbage here".into());
        logs.push(("garbage-line", join(&l).into_bytes()));
    }
    {
        let mut l = owned.clone();
        l.insert(3, "{\"type\":\"trial\"}".into());
        logs.push(("trial-missing-fields", join(&l).into_bytes()));
    }
    {
        let mut l = owned.clone();
        l[0] = header.replace("\"schema\":1", "\"schema\":99");
        logs.push(("wrong-schema", join(&l).into_bytes()));
    }
    {
        let mut l = owned.clone();
        l[0] = header.replace("\"schema\":1", "\"schema\":\"1\"");
        logs.push(("schema-string", join(&l).into_bytes()));
    }
    {
        let mut l = owned.clone();
        l[0] = header.replace("\"type\":\"header\"", "\"type\":\"banner\"");
        logs.push(("unknown-type", join(&l).into_bytes()));
    }
    logs.push(("no-header", join(&owned[1..]).into_bytes()));
    {
        let mut l = owned.clone();
        l.insert(5, header.to_string());
        logs.push(("second-header", join(&l).into_bytes()));
    }
    // Header values replaced: (the fixture's text with `{}` for the value, its value, the cases'
    // names and values).
    type Cases = &'static [(&'static str, &'static str)];
    let header_edits: [(&str, &str, Cases); 8] = [
        (
            "\"trials_per_batch\":{},\"devices\"",
            "4",
            &[
                ("trials-per-batch-1e9", "1000000000"),
                ("trials-per-batch-0", "0"),
            ],
        ),
        (
            "\"batch_sizes\":{}",
            "[1,4,16,64,256]",
            &[
                ("batch-sizes-empty", "[]"),
                ("batch-size-zero", "[0,4]"),
                ("batch-size-huge", "[1,4,1000000000000]"),
                ("batch-size-float", "[1e30]"),
            ],
        ),
        (
            "\"value\":{}}",
            "0.1",
            &[
                ("target-nan", "null"),
                ("target-negative", "-1.0"),
                ("target-huge", "1e400"),
            ],
        ),
        ("\"step_budget\":{}", "2000", &[("step-budget-zero", "0")]),
        (
            "\"dim\":{}",
            "50",
            &[("dim-zero", "0"), ("dim-huge", "100000000000")],
        ),
        (
            "\"concurrency\":{}",
            "2",
            &[
                ("concurrency-zero", "0"),
                ("concurrency-huge", "1000000000"),
            ],
        ),
        (
            "\"workers\":{}},\"concurrency\":2",
            "1",
            &[("workers-zero", "0")],
        ),
        ("\"learning_rate\":{},", "0.1", &[("lr-negative", "-0.1")]),
    ];
    for (pattern, good_value, cases) in header_edits {
        let from = pattern.replace("{}", good_value);
        assert!(owned[0].contains(&from), "fixture lacks {from}");
        for &(n, value) in cases {
            let mut l = owned.clone();
            l[0] = l[0].replacen(&from, &pattern.replace("{}", value), 1);
            logs.push((n, join(&l).into_bytes()));
        }
    }
    {
        let mut l = owned.clone();
        let dup = l[2].clone();
        l.insert(3, dup);
        logs.push(("duplicated-trial", join(&l).into_bytes()));
    }
    {
        let mut l = owned.clone();
        l[3] = l[3].replacen("\"trial_id\":", "\"trial_id\":9999999,\"x\":", 1);
        logs.push(("trial-id-out-of-plan", join(&l).into_bytes()));
    }
    {
        let mut b = good.clone().into_bytes();
        let at = good.find('\n').unwrap() + 1;
        b.splice(at..at, std::iter::repeat_n(0u8, 300));
        logs.push(("nul-padding", b));
    }
    logs.push(("all-nul", vec![0u8; 4096]));
    // a byte-order mark is read before the header only; elsewhere it is named
    {
        let mut l = owned.clone();
        l[2] = format!("\u{feff}{}", l[2]);
        logs.push(("bom-on-line-3", join(&l).into_bytes()));
    }
    logs.push(("binary", (0..=255u8).cycle().take(5000).collect()));
    {
        let mut l = owned.clone();
        l[1] = l[1].replacen("\"steps\":", "\"steps\":-5,\"y\":", 1);
        logs.push(("negative-steps", join(&l).into_bytes()));
    }
    {
        let mut l = owned.clone();
        l[1] = l[1].replacen("\"batch_size\":1,", "\"batch_size\":\"one\",", 1);
        logs.push(("trial-wrong-type", join(&l).into_bytes()));
    }
    let mut cases = Vec::new();
    for (n, bytes) in logs {
        let path = dir.join(format!("{n}.jsonl"));
        std::fs::write(&path, &bytes).unwrap();
        let p = path.display().to_string();
        let locate = if n == "empty" || n == "only-newlines" {
            Locate::Path(p.clone())
        } else {
            Locate::Line(p.clone())
        };
        // what the line must say, where the culprit is not the obvious JSON error
        let says: &[&str] = match n {
            "nul-padding" => &[":2: NUL bytes, not a JSON line"],
            "bom-on-line-3" => &[":3: a UTF-8 byte-order mark (U+FEFF) starts this line"],
            _ => &[],
        };
        for (cmd, args) in log_readers(&p, &dir.join("runs").display().to_string()) {
            cases.push(
                Case {
                    group: "log",
                    name: format!("{n}/{cmd}"),
                    args,
                    env: vec![],
                    locate: locate.clone(),
                    unchanged: if cmd != "resume" {
                        vec![path.clone()]
                    } else {
                        vec![]
                    },
                    ..blank()
                }
                .says(says),
            );
        }
    }
    cases
}

/// Files that are not regular files, missing or unsafe outputs.
fn file_cases(dir: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let fifo = dir.join("fifo.jsonl");
    let fifo_toml = dir.join("fifo.toml");
    for f in [&fifo, &fifo_toml] {
        let st = Command::new("mkfifo").arg(f).status().unwrap();
        assert!(st.success());
    }
    let sub = dir.join("a-directory.jsonl");
    std::fs::create_dir_all(&sub).unwrap();
    let subt = dir.join("a-directory.toml");
    std::fs::create_dir_all(&subt).unwrap();
    let dangling = dir.join("dangling.jsonl");
    std::os::unix::fs::symlink(dir.join("nowhere.jsonl"), &dangling).unwrap();
    let dangling_t = dir.join("dangling.toml");
    std::os::unix::fs::symlink(dir.join("nowhere.toml"), &dangling_t).unwrap();
    let loop_a = dir.join("loop.jsonl");
    std::os::unix::fs::symlink(&loop_a, &loop_a).unwrap();
    let missing = dir.join("missing.jsonl");
    let missing_t = dir.join("missing-dir/digits-mlp-sgd.toml");
    let dev = PathBuf::from("/dev/zero");
    let dev_null = PathBuf::from("/dev/null");
    let runs = dir.join("runs").display().to_string();
    let logs = [&fifo, &sub, &dangling, &loop_a, &missing, &dev, &dev_null];
    for l in logs {
        let p = l.display().to_string();
        let short = l.file_name().unwrap().to_string_lossy().to_string();
        let export = vec![
            s("export"),
            p.clone(),
            s("--json"),
            dir.join(format!("out-{short}.json")).display().to_string(),
        ];
        for (cmd, args) in log_commands(&p, &runs)
            .into_iter()
            .chain([("export", export)])
        {
            cases.push(Case {
                group: "file",
                name: format!("{short}/{cmd}"),
                args,
                env: vec![],
                locate: Locate::Path(p.clone()),
                unchanged: vec![],
                ..blank()
            });
        }
    }
    for t in [&fifo_toml, &subt, &dangling_t, &missing_t, &dev] {
        let p = t.display().to_string();
        let short = t.file_name().unwrap().to_string_lossy().to_string();
        for (cmd, args) in [
            (
                "train",
                vec![
                    s("train"),
                    s("--preset"),
                    p.clone(),
                    s("--batch-size"),
                    s("8"),
                ],
            ),
            (
                "sweep",
                vec![s("sweep"), p.clone(), s("--runs-dir"), runs.clone()],
            ),
        ] {
            cases.push(Case {
                group: "file",
                name: format!("preset-{short}/{cmd}"),
                args,
                env: vec![],
                locate: Locate::Path(p.clone()),
                unchanged: vec![],
                ..blank()
            });
        }
    }
    // A data directory whose digits file is a FIFO, a directory, missing or corrupt: a runtime
    // error naming the file (exit 1) from `train` and `sweep` alike, not blamed on the preset.
    for (n, make) in [("fifo", 0), ("dir", 1), ("missing", 2), ("corrupt", 3)] {
        let d = dir.join(format!("data-{n}"));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("digits.csv.gz");
        match make {
            0 => assert!(Command::new("mkfifo").arg(&f).status().unwrap().success()),
            1 => std::fs::create_dir_all(&f).unwrap(),
            3 => std::fs::write(&f, b"not the digits").unwrap(),
            _ => {}
        }
        let train = vec![
            s("train"),
            s("--preset"),
            s("digits-mlp-sgd"),
            s("--batch-size"),
            s("8"),
            s("--steps"),
            s("5"),
        ];
        let sweep = vec![
            s("sweep"),
            s("digits-mlp-sgd"),
            s("--runs-dir"),
            runs.clone(),
        ];
        for (cmd, args) in [("train", train), ("sweep", sweep)] {
            cases.push(Case {
                group: "file",
                name: format!("data-{n}/{cmd}"),
                args,
                env: vec![(s("SCALING_LAB_DATA_DIR"), d.display().to_string())],
                locate: Locate::Path(f.display().to_string()),
                unchanged: vec![],
                code: Some(1),
                not_says: vec![s("--preset")],
                ..blank()
            });
        }
    }
    // Outputs that would overwrite a run log or follow a symlink.
    for flag in ["--json", "--csv", "--svg", "--trials-csv"] {
        // Each case its own log, so one overwrite cannot spoil the next case.
        let log = dir.join(format!("keep{flag}.jsonl"));
        std::fs::write(&log, valid_log()).unwrap();
        let lp = log.display().to_string();
        cases.push(Case {
            group: "file",
            name: format!("export-onto-itself{flag}"),
            args: vec![s("export"), lp.clone(), s(flag), lp.clone()],
            env: vec![],
            locate: Locate::Path(lp.clone()),
            unchanged: vec![log.clone()],
            ..blank()
        });
    }
    let log = dir.join("keep.jsonl");
    std::fs::write(&log, valid_log()).unwrap();
    let lp = log.display().to_string();
    let other = dir.join("other.jsonl");
    std::fs::write(&other, valid_log()).unwrap();
    let op = other.display().to_string();
    cases.push(Case {
        group: "file",
        name: "export-onto-another-log".into(),
        args: vec![s("export"), lp.clone(), s("--csv"), op.clone()],
        env: vec![],
        locate: Locate::Path(op.clone()),
        unchanged: vec![log.clone(), other.clone()],
        ..blank()
    });
    let link = dir.join("link-out.json");
    std::os::unix::fs::symlink(&other, &link).unwrap();
    cases.push(Case {
        group: "file",
        name: "export-through-symlink".into(),
        args: vec![
            s("export"),
            lp.clone(),
            s("--json"),
            link.display().to_string(),
        ],
        env: vec![],
        locate: Locate::Path(link.display().to_string()),
        unchanged: vec![other.clone()],
        ..blank()
    });
    let bs = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/batch_science/mnist/simple_cnn_base/momentum")
        .display()
        .to_string();
    let import_link = dir.join("import-link.jsonl");
    std::os::unix::fs::symlink(&other, &import_link).unwrap();
    for (n, out) in [("existing-log", &other), ("symlink", &import_link)] {
        cases.push(Case {
            group: "file",
            name: format!("import-onto-{n}"),
            args: vec![
                s("import-batch-science"),
                bs.clone(),
                s("--target"),
                s("0.5"),
                s("--out"),
                out.display().to_string(),
            ],
            env: vec![],
            locate: Locate::Path(out.display().to_string()),
            unchanged: vec![other.clone()],
            ..blank()
        });
    }
    cases
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Ok,
    Hang,
    Panic,
    SilentSuccess,
    NotOneLine,
    Unlocated,
    Overwrote,
    /// Not the exit code of the README's rule (2 usage, 1 runtime).
    WrongCode,
    /// Located, but does not say what is wrong (or names a wrong culprit).
    Vague,
}

fn run_case(c: &Case) -> (Class, String) {
    let before: Vec<Option<Vec<u8>>> = c.unchanged.iter().map(|p| std::fs::read(p).ok()).collect();
    // CORPUS_BIN runs the corpus against another build (e.g. the original, for before counts).
    let bin = std::env::var("CORPUS_BIN").unwrap_or_else(|_| BIN.to_string());
    let mut cmd = Command::new(bin);
    cmd.args(&c.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("SCALING_LAB_DATA_DIR")
        .env("NO_COLOR", "1");
    for (k, v) in &c.env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start scaling-lab");
    let mut err_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed() > TIME_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stderr = reader.join().unwrap_or_default();
    let after: Vec<Option<Vec<u8>>> = c.unchanged.iter().map(|p| std::fs::read(p).ok()).collect();
    let detail = format!(
        "{:?} -> {:?}: {}",
        c.args,
        status.map(|s| s.code()),
        stderr.trim()
    );
    let Some(status) = status else {
        return (Class::Hang, detail);
    };
    if before != after {
        return (Class::Overwrote, detail);
    }
    if let Locate::Warn(p) = &c.locate {
        // Read with a warning: exit 0, and the warning is located.
        return match status.code() {
            Some(101) | None => (Class::Panic, detail),
            Some(0) => {
                let warned = stderr
                    .lines()
                    .filter_map(|l| l.strip_prefix("warning: "))
                    .find(|l| find_located(l, p, 1));
                match warned {
                    Some(l) if !c.says.iter().all(|w| l.contains(w.as_str())) => {
                        (Class::Vague, detail)
                    }
                    Some(_) => (Class::Ok, detail),
                    None => (Class::SilentSuccess, detail),
                }
            }
            Some(_) => (Class::WrongCode, detail),
        };
    }
    match status.code() {
        Some(0) => return (Class::SilentSuccess, detail),
        Some(101) => return (Class::Panic, detail),
        None => return (Class::Panic, detail), // killed by a signal (abort, SIGSEGV)
        _ => {}
    }
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() != 1 {
        return (Class::NotOneLine, detail);
    }
    let line = lines[0];
    let located = match &c.locate {
        Locate::LineCol(p) => find_located(line, p, 2),
        Locate::Line(p) => find_located(line, p, 1),
        Locate::Path(p) => line.contains(p.as_str()),
        Locate::Warn(_) => unreachable!("handled above"),
    };
    if !located {
        return (Class::Unlocated, detail);
    }
    if c.code.is_some_and(|code| status.code() != Some(code)) {
        return (Class::WrongCode, detail);
    }
    if !c.says.iter().all(|w| line.contains(w.as_str()))
        || c.not_says.iter().any(|w| line.contains(w.as_str()))
    {
        return (Class::Vague, detail);
    }
    (Class::Ok, detail)
}

/// `path:N: ` (numbers = 1) or `path:N:M: ` (numbers = 2) somewhere in `line`.
fn find_located(line: &str, path: &str, numbers: usize) -> bool {
    line.match_indices(path).any(|(i, _)| {
        let mut rest = &line[i + path.len()..];
        for _ in 0..numbers {
            let Some(r) = rest.strip_prefix(':') else {
                return false;
            };
            let digits = r.chars().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return false;
            }
            rest = &r[digits..];
        }
        rest.starts_with(": ")
    })
}

#[test]
fn every_bad_input_is_one_located_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut cases = Vec::new();
    for (sub, gen) in [
        ("presets", preset_cases as fn(&Path) -> Vec<Case>),
        ("logs", log_cases),
        ("values", value_log_cases),
        ("confirm", confirm_log_cases),
        ("effect", preset_effect_cases),
        ("files", file_cases),
    ] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        cases.extend(gen(&d));
    }
    // the README says "400+ such cases": the claim is this floor
    assert!(
        cases.len() >= 400,
        "only {} cases (README.md says 400+)",
        cases.len()
    );
    let filter = std::env::var("CORPUS_FILTER").unwrap_or_default();
    let mut counts: BTreeMap<(&str, Class), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    for c in cases.iter().filter(|c| c.name.contains(&filter)) {
        ran += 1;
        let (class, detail) = run_case(c);
        *counts.entry((c.group, class)).or_default() += 1;
        if class != Class::Ok {
            failures.push(format!("[{:?}] {}/{}: {detail}", class, c.group, c.name));
        }
    }
    eprintln!("corpus: {ran} cases");
    for ((g, class), n) in &counts {
        eprintln!("  {g:<7} {class:?}: {n}");
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn locator_matches_only_numbered_positions() {
    assert!(find_located("error: a/b.toml:3:7: bad", "a/b.toml", 2));
    assert!(!find_located("error: a/b.toml:3: bad", "a/b.toml", 2));
    assert!(find_located("error: a/b.jsonl:3: bad", "a/b.jsonl", 1));
    assert!(!find_located("error: a/b.jsonl: bad", "a/b.jsonl", 1));
}

/// Runs the binary to the end: (exit code, stdout, stderr).
fn run_bin(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .env("NO_COLOR", "1")
        .output()
        .expect("start scaling-lab");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The measurement in a `report --json` (what a contradicted outcome must not change).
fn measured(json: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(json).expect("report --json");
    let keys = ["per_batch", "regimes", "perfect_up_to", "fit", "kept"];
    keys.iter().map(|k| (k.to_string(), v[k].clone())).collect()
}

/// A stored outcome its own curve contradicts ("reached" at step 1, not even an
/// evaluation step; the curve first meets the target at 1175) is read as the curve shows it by
/// every reader — report, compare, export and resume see exactly the unedited log's numbers —
/// with one warning naming the trial and both steps.
#[test]
fn a_contradicted_outcome_is_read_as_its_curve_shows() {
    use serde_json::{json, Value};
    let tmp = tempfile::tempdir().unwrap();
    let good = valid_log();
    let mut lines: Vec<String> = good.lines().map(str::to_string).collect();
    let mut t: Value = serde_json::from_str(&lines[5]).unwrap();
    assert_eq!(t["outcome"]["outcome"]["step"], json!(1175));
    t["outcome"]["outcome"]["step"] = json!(1);
    lines[5] = t.to_string();
    // the same file name in two directories: compare's table names them alike
    for d in ["edited", "original"] {
        std::fs::create_dir_all(tmp.path().join(d)).unwrap();
    }
    let edited = tmp.path().join("edited/run.jsonl");
    std::fs::write(&edited, lines.join("\n") + "\n").unwrap();
    let original = tmp.path().join("original/run.jsonl");
    std::fs::write(&original, &good).unwrap();
    let (e, o) = (edited.display().to_string(), original.display().to_string());
    let warning = format!(
        "warning: {e}:6: trial 5: stored outcome says the target was reached at step 1 (not one \
         of its evaluation steps), but its eval curve first meets it at step 1175: read as \
         reached at step 1175, as the curve shows (edited log?)"
    );
    // report (text and JSON)
    let (code, out_e, err) = run_bin(&["report", &e, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.trim(), warning);
    let (_, out_o, _) = run_bin(&["report", &o, "--json"]);
    assert_eq!(measured(&out_e), measured(&out_o));
    let (_, text_e, _) = run_bin(&["report", &e]);
    let (_, text_o, _) = run_bin(&["report", &o]);
    assert_eq!(text_e.replace(&e, &o), text_o);
    // compare: the same table as the unedited log's
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/valid/nqm-sgd.jsonl")
        .display()
        .to_string();
    let (code, cmp_e, err) = run_bin(&["compare", &e, &fixture]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("read as reached at step 1175"), "{err}");
    let (_, cmp_o, _) = run_bin(&["compare", &o, &fixture]);
    assert_eq!(cmp_e, cmp_o);
    // export: the same points and trials
    for (flag, ext) in [("--csv", "csv"), ("--trials-csv", "trials.csv")] {
        let (oe, oo) = (
            tmp.path().join(format!("e.{ext}")),
            tmp.path().join(format!("o.{ext}")),
        );
        let (code, _, err) = run_bin(&["export", &e, flag, &oe.display().to_string()]);
        assert_eq!(code, Some(0), "{err}");
        run_bin(&["export", &o, flag, &oo.display().to_string()]);
        assert_eq!(
            std::fs::read_to_string(&oe).unwrap(),
            std::fs::read_to_string(&oo).unwrap(),
            "{flag}"
        );
    }
    // resume: reads it as the curve shows (the sweep is complete: its report, nothing run)
    let runs = tmp.path().join("runs").display().to_string();
    let (code, res_e, err) = run_bin(&["sweep", "--resume", &e, "--runs-dir", &runs, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(&warning), "{err}");
    let (_, res_o, _) = run_bin(&["sweep", "--resume", &o, "--runs-dir", &runs, "--json"]);
    assert_eq!(measured(&res_e), measured(&res_o));
}

/// A run log saved with a UTF-8 byte-order mark (as presets already are) is read as
/// the same log without it, by every reader, silently.
#[test]
fn a_log_with_a_byte_order_mark_is_read_as_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let good = valid_log();
    let plain = tmp.path().join("plain.jsonl");
    let bom = tmp.path().join("bom.jsonl");
    std::fs::write(&plain, &good).unwrap();
    std::fs::write(&bom, format!("\u{feff}{good}")).unwrap();
    let (b, p) = (bom.display().to_string(), plain.display().to_string());
    let (code, out_b, err) = run_bin(&["report", &b]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    let (_, out_p, _) = run_bin(&["report", &p]);
    assert_eq!(out_b.replace(&b, &p), out_p);
    let json = tmp.path().join("bom.json").display().to_string();
    let runs = tmp.path().join("runs").display().to_string();
    for args in [
        vec!["compare", &b, &p],
        vec!["export", &b, "--json", &json],
        vec!["sweep", "--resume", &b, "--runs-dir", &runs],
    ] {
        let (code, _, err) = run_bin(&args);
        assert_eq!((code, err.as_str()), (Some(0), ""), "{args:?}");
    }
}
