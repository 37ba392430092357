//! The bad-input corpus (issue 10): generated bad presets (every field × bad value class),
//! damaged run logs and bad files, each run through the real binary. Every case must end within a
//! time bound (the child is killed after it) with an exit code other than 0 and 101 (a panic) and
//! exactly one line on stderr that locates the problem: `file:line:col: ` for presets,
//! `file:line: ` for run-log content, the file's path for file-level problems.
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
beta2 = 0.999
epsilon = 1e-8

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
}

struct Case {
    group: &'static str,
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    locate: Locate,
    /// Files that must be byte-identical afterwards (never overwritten).
    unchanged: Vec<PathBuf>,
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
        ("workload.dataset", "max_bytes", vec!["0"]),
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
        ("workload.defaults", "beta2", vec!["1.0", "nan"]),
        ("workload.defaults", "epsilon", vec!["0.0", "nan", "inf"]),
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
            vec!["[0.0, 0.5]", "[0.5, 2.0]", "[0.1, 0.2, 0.3]"],
        ),
        ("search", "warmup_fraction", vec!["1.0", "-0.1", "nan"]),
        ("search", "base_batch", vec!["0", "-1"]),
        ("search", "lr_rule", vec!["\"cubic\""]),
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
            ],
        ),
        ("sweep", "trials_per_batch", vec!["0", "1000000000"]),
        ("sweep", "workers", vec!["0", "1000000"]),
        ("sweep", "concurrency", vec!["0", "1000000"]),
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
    ];
    for (n, bytes) in extra {
        let path = dir.join(format!("doc-{n}.toml"));
        std::fs::write(&path, bytes).unwrap();
        let mut c = preset_case(&format!("doc-{n}"), &path);
        if n == "empty" || n == "not-utf8" {
            // No position inside the file for these: the path is enough.
            c.locate = Locate::Path(path.display().to_string());
        }
        cases.push(c);
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

/// Damaged logs, each run through `report` and `sweep --resume`.
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
        for (cmd, args) in log_commands(&p, &dir.join("runs").display().to_string()) {
            cases.push(Case {
                group: "log",
                name: format!("{n}/{cmd}"),
                args,
                env: vec![],
                locate: locate.clone(),
                unchanged: if cmd == "report" {
                    vec![path.clone()]
                } else {
                    vec![]
                },
            });
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
            });
        }
    }
    // A data directory whose digits file is a FIFO, a directory, or missing.
    for (n, make) in [("fifo", 0), ("dir", 1), ("missing", 2)] {
        let d = dir.join(format!("data-{n}"));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("digits.csv.gz");
        match make {
            0 => assert!(Command::new("mkfifo").arg(&f).status().unwrap().success()),
            1 => std::fs::create_dir_all(&f).unwrap(),
            _ => {}
        }
        cases.push(Case {
            group: "file",
            name: format!("data-{n}/train"),
            args: vec![
                s("train"),
                s("--preset"),
                s("digits-mlp-sgd"),
                s("--batch-size"),
                s("8"),
                s("--steps"),
                s("5"),
            ],
            env: vec![(s("SCALING_LAB_DATA_DIR"), d.display().to_string())],
            locate: Locate::Path(f.display().to_string()),
            unchanged: vec![],
        });
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
    };
    if !located {
        return (Class::Unlocated, detail);
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
        ("files", file_cases),
    ] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        cases.extend(gen(&d));
    }
    assert!(cases.len() >= 150, "only {} cases", cases.len());
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
