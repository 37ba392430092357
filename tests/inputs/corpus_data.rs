//! The hostile-file corpus: bad data named by a preset, each run through the commands a user
//! types — `scaling-lab sweep my.toml --dry-run` and `scaling-lab train --preset my.toml` — in
//! the style of tests/inputs/corpus_inputs.rs. Every case must end within a time bound with exit
//! 1 (a data file at fault: a runtime error) or 2 (the preset at fault: `file:line:col` at the
//! key), never 0 or 101, and exactly one line on stderr that names the file or key and says what
//! is wrong.
//!
//! The corpus names no format: it iterates over the registry (`Format::ALL`). For each format
//! it writes the format's valid sample (which must pass `sweep --dry-run`), then
//! - the damage any format's files can suffer, applied to the first file its sample names: the
//!   file missing (the error names it and its key), a FIFO, a symlink loop, and for formats that
//!   read files rather than a folder an empty file, a folder where the file is expected, a `.gz`
//!   that is not gzip and a `.gz` that inflates past the memory limit (run under an
//!   address-space limit);
//! - the preset's faults: a key of another format, each key the format needs left out, `train`
//!   of another shape;
//! - the hostile inputs the format brings (`FormatDef::hostile`: wrong magic numbers, header
//!   counts past the file's end, labels outside the classes, NaN/∞, images of another size, …).
//!
//! A registered format that brings no hostile inputs fails the corpus. The test prints each
//! failing case with its command and output, then fails.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use scaling_lab::data::formats::{write_files, Blame, FormatDef, PartShape};
use scaling_lab::data::{DatasetSpec, Format};

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");
const TIME_BOUND: Duration = Duration::from_secs(20);
/// The address-space limit the `.gz` bomb cases run under (`ulimit -v`), and how far the bomb
/// inflates: past it.
const MEMORY_LIMIT: u64 = 1 << 30;
const BOMB_BYTES: u64 = 2 << 30;

/// A small image-classifier preset around a `[workload.dataset]` table.
fn image_preset(dataset: &str) -> String {
    format!(
        r#"name = "mine"
description = "corpus data case"

[workload]
optimizer = "sgd"
eval_every = 5
step_budget = 10

[workload.dataset]
{dataset}

[workload.model]
kind = "mlp"
hidden = [4]

[workload.target]
metric = "val_error"
value = 0.5

[workload.defaults]
learning_rate = 0.05

[search]
learning_rate = [0.01, 0.1]

[sweep]
batch_sizes = [4]
trials_per_batch = 1
workers = 1
concurrency = 1
"#
    )
}

/// A small byte-level LM preset around a `[workload.dataset]` table.
fn text_preset(dataset: &str) -> String {
    image_preset(dataset)
        .replace(
            "kind = \"mlp\"\nhidden = [4]",
            "kind = \"char-lstm\"\nembed = 4\nhidden = 4",
        )
        .replace(
            "metric = \"val_error\"\nvalue = 0.5",
            "metric = \"val_bpc\"\nvalue = 3.0",
        )
}

/// The preset around `table`: a language model's for a text source, else an image classifier's.
fn preset_for(table: &str) -> String {
    let spec: DatasetSpec = toml::from_str(table).unwrap_or_else(|e| panic!("{table}: {e}"));
    match spec.is_images() {
        Some(false) => text_preset(table),
        _ => image_preset(table),
    }
}

/// What a case's error line must be.
#[derive(Clone, Debug)]
enum Want {
    /// Exit 0 (a valid sample; `sweep --dry-run` only).
    Success,
    /// Exit 1, naming this file.
    File(PathBuf),
    /// Exit 2, `my.toml:LINE:` at the line that sets this key of `[workload.dataset]` (or at
    /// the table's header when the key is not set).
    Key(String),
}

struct Case {
    name: String,
    /// Its own folder: the preset `my.toml` and the files it names.
    dir: PathBuf,
    preset: String,
    want: Want,
    says: Vec<String>,
    env: Vec<(&'static str, String)>,
    /// Run under [`MEMORY_LIMIT`].
    limit_memory: bool,
}

/// Builds the cases, each in a folder of its own under `root`.
struct Corpus {
    root: PathBuf,
    cases: Vec<Case>,
}

impl Corpus {
    /// A new case folder holding `files` and the preset around `table`.
    fn case(
        &mut self,
        name: String,
        files: &[(String, Vec<u8>)],
        table: &str,
        want: impl FnOnce(&Path) -> Want,
        says: &[&str],
    ) -> &mut Case {
        let dir = self.root.join(format!("case{:03}", self.cases.len()));
        std::fs::create_dir_all(&dir).unwrap();
        write_files(&dir, files).unwrap();
        let want = want(&dir);
        self.cases.push(Case {
            name,
            preset: preset_for(table),
            dir,
            want,
            says: says.iter().map(|s| s.to_string()).collect(),
            env: vec![],
            limit_memory: false,
        });
        self.cases.last_mut().unwrap()
    }
}

/// `table` with the first occurrence of the path `from` (quoted) named `to` instead.
fn renamed(table: &str, from: &str, to: &str) -> String {
    table.replacen(&format!("\"{from}\""), &format!("\"{to}\""), 1)
}

/// A gzip stream (concatenated members) that inflates to `bytes` zero bytes.
fn gzip_bomb(bytes: u64) -> Vec<u8> {
    use std::io::Write;
    let mib = vec![0u8; 1 << 20];
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&mib).unwrap();
    let member = e.finish().unwrap();
    member.repeat((bytes >> 20) as usize)
}

/// The damage any format's files can suffer, to the first file (or folder) its sample reads.
fn damage(c: &mut Corpus, def: &FormatDef) {
    let sample = (def.sample)();
    let spec: DatasetSpec = toml::from_str(&sample.table).unwrap();
    let keyed = spec.train.as_ref().unwrap().keyed("train");
    let (key, first) = (keyed[0].0.clone(), keyed[0].1.clone());
    let f = def.name;
    let name = |what: &str| format!("{f}: {what}");
    let others: Vec<(String, Vec<u8>)> = sample
        .files
        .iter()
        .filter(|(n, _)| *n != first && !n.starts_with(&format!("{first}/")))
        .cloned()
        .collect();
    let at = |d: &Path| Want::File(d.join(&first));
    c.case(
        name("the first file missing"),
        &others,
        &sample.table,
        at,
        &["missing", &format!("`{key}` under [workload.dataset]")],
    );
    #[cfg(unix)]
    {
        let case = c.case(name("a FIFO"), &others, &sample.table, at, &["FIFO"]);
        let p = case.dir.join(&first);
        let cs = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(cs.as_ptr(), 0o644) }, 0);
        let case = c.case(
            name("a symlink loop"),
            &others,
            &sample.table,
            at,
            &["symbolic links"],
        );
        let p = case.dir.join(&first);
        let loop2 = case.dir.join("loop2");
        std::os::unix::fs::symlink(&loop2, &p).unwrap();
        std::os::unix::fs::symlink(&p, &loop2).unwrap();
    }
    if def.part == PartShape::Folder {
        return;
    }
    let with_first = |bytes: Vec<u8>| {
        let mut files = others.clone();
        files.push((first.clone(), bytes));
        files
    };
    c.case(
        name("an empty file"),
        &with_first(vec![]),
        &sample.table,
        at,
        &["empty"],
    );
    c.case(
        name("a folder where a file is expected"),
        &with_first(vec![]),
        &sample.table,
        at,
        &["directory"],
    );
    let last = c.cases.last().unwrap().dir.join(&first);
    std::fs::remove_file(&last).unwrap();
    std::fs::create_dir(&last).unwrap();
    let gz = if first.ends_with(".gz") {
        first.clone()
    } else {
        format!("{first}.gz")
    };
    let table = renamed(&sample.table, &first, &gz);
    let mut files = others.clone();
    files.push((gz.clone(), b"not gzip at all".to_vec()));
    c.case(
        name("a .gz that is not gzip"),
        &files,
        &table,
        |d| Want::File(d.join(&gz)),
        &["gzip"],
    );
    files.pop();
    files.push((gz.clone(), gzip_bomb(BOMB_BYTES)));
    c.case(
        name("a .gz that inflates past the memory limit"),
        &files,
        &table,
        |d| Want::File(d.join(&gz)),
        &["too large when decompressed", "the limit is", "ulimit -v"],
    )
    .limit_memory = true;
}

/// The preset's faults with a format's keys: exit 2 at the key.
fn preset_faults(c: &mut Corpus, def: &FormatDef) {
    let sample = (def.sample)();
    let f = def.name;
    // a key another format takes (a value of its type)
    let values = [
        ("classes", "10"),
        ("label", "\"fine\""),
        ("layout", "\"nhw\""),
        ("image_size", "[2, 2]"),
        ("channels", "1"),
        ("dtype", "\"u16\""),
        ("vocab", "10"),
    ];
    if let Some((key, value)) = values.iter().find(|(k, _)| !def.keys.contains(k)) {
        c.case(
            format!("{f}: a key of another format"),
            &sample.files,
            &format!("{}\n{key} = {value}", sample.table),
            |_| Want::Key(key.to_string()),
            &[&format!("{key} has no effect on format = \"{f}\"")],
        );
    }
    // each key the sample sets that the format needs
    for key in def.keys {
        let without: Vec<&str> = sample
            .table
            .lines()
            .filter(|l| !l.starts_with(&format!("{key} =")))
            .collect();
        let without = without.join("\n");
        if without == sample.table {
            continue;
        }
        let spec: DatasetSpec = toml::from_str(&without).unwrap();
        if spec.source().is_ok() {
            continue; // an optional key
        }
        c.case(
            format!("{f}: {key} left out"),
            &sample.files,
            &without,
            |_| Want::Key(key.to_string()),
            &[&format!("format = \"{f}\" needs {key}")],
        );
    }
    // `train` of another shape
    let other = match def.part {
        PartShape::Pair | PartShape::Archive => "train = \"x.bin\"",
        PartShape::Folder | PartShape::Files => "train = { images = \"x\", labels = \"y\" }",
    };
    let table: Vec<&str> = sample
        .table
        .lines()
        .map(|l| if l.starts_with("train =") { other } else { l })
        .collect();
    c.case(
        format!("{f}: train of another shape"),
        &sample.files,
        &table.join("\n"),
        |_| Want::Key("train".into()),
        &[&format!("format = \"{f}\" takes train = {}", def.train)],
    );
}

/// The corpus: for every registered format its sample, the damage any format can suffer, the
/// preset's faults and the hostile inputs it brings; then the cases that are no format's.
fn cases(root: &Path) -> Vec<Case> {
    let mut c = Corpus {
        root: root.to_path_buf(),
        cases: vec![],
    };
    for format in Format::ALL {
        let def = format.def();
        let sample = (def.sample)();
        c.case(
            format!("{}: its sample", def.name),
            &sample.files,
            &sample.table,
            |_| Want::Success,
            &[],
        );
        damage(&mut c, def);
        preset_faults(&mut c, def);
        let hostile = (def.hostile)();
        assert!(
            !hostile.is_empty(),
            "format `{}` brings no hostile inputs: its FormatDef::hostile must give some",
            def.name
        );
        for h in hostile {
            let mut files = sample.files.clone();
            files.extend(h.files.iter().cloned());
            let table = h.table.clone().unwrap_or_else(|| sample.table.clone());
            let says: Vec<&str> = h.says.to_vec();
            c.case(
                format!("{}: {}", def.name, h.name),
                &files,
                &table,
                |d| match &h.blames {
                    Blame::File(rel) => Want::File(d.join(rel)),
                    Blame::Key(k) => Want::Key(k.to_string()),
                },
                &says,
            );
        }
    }
    // A named dataset whose files are absent: which files and where they come from.
    let empty = root.join("nothing-here");
    std::fs::create_dir_all(&empty).unwrap();
    c.case(
        "cifar10 absent".into(),
        &[],
        "name = \"cifar10\"",
        |_| Want::File(empty.clone()),
        &[
            "data_batch_1.bin",
            "test_batch.bin",
            "cifar-10-binary.tar.gz",
        ],
    )
    .env = vec![("SCALING_LAB_DATA_DIR", empty.display().to_string())];
    // A named dataset with some of its files: the one missing, and where the files come from.
    let mut record = vec![3u8];
    record.extend([9u8; 3072]);
    c.case(
        "cifar10 with a batch missing".into(),
        &[("partial/data_batch_1.bin".into(), record)],
        "name = \"cifar10\"\ndir = \"partial\"",
        |d| Want::File(d.join("partial/data_batch_2.bin")),
        &["dataset cifar10", "is missing", "cifar-10-binary.tar.gz"],
    );
    c.case(
        "an unset variable".into(),
        &[],
        "format = \"cifar10\"\ntrain = \"$SCALING_LAB_CORPUS_UNSET/x.bin\"",
        |_| Want::Key("train".into()),
        &["SCALING_LAB_CORPUS_UNSET is not set"],
    );
    c.cases
}

/// (exit code, stderr) of `args` within the time bound (None: killed, a hang).
fn run(args: &[&str], case: &Case) -> (Option<i32>, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("SCALING_LAB_DATA_DIR")
        .env_remove("SCALING_LAB_CORPUS_UNSET")
        .env("NO_COLOR", "1");
    for (k, v) in &case.env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    if case.limit_memory {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let l = libc::rlimit {
                    rlim_cur: MEMORY_LIMIT as libc::rlim_t,
                    rlim_max: MEMORY_LIMIT as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &l) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("start scaling-lab");
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
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
    (
        status.and_then(|s| s.code()),
        reader.join().unwrap_or_default(),
    )
}

/// What the one error line must start with or contain, and the exit code.
fn expected(case: &Case, preset: &Path) -> (i32, String) {
    match &case.want {
        Want::Success => (0, String::new()),
        Want::File(p) => (1, p.display().to_string()),
        Want::Key(key) => {
            let line = |prefix: &str| {
                case.preset
                    .lines()
                    .position(|l| l.starts_with(prefix))
                    .map(|i| i + 1)
            };
            let at = line(&format!("{key} ="))
                .or_else(|| line("[workload.dataset]"))
                .unwrap();
            (2, format!("{}:{at}:", preset.display()))
        }
    }
}

#[test]
fn every_bad_data_file_is_one_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let all = cases(dir.path());
    let mut failures = vec![];
    for c in &all {
        let preset = c.dir.join("my.toml");
        std::fs::write(&preset, &c.preset).unwrap();
        let p = preset.to_str().unwrap();
        let r = runs.to_str().unwrap();
        let mut commands: Vec<Vec<&str>> = vec![vec!["sweep", p, "--dry-run", "--runs-dir", r]];
        if !matches!(c.want, Want::Success) {
            commands.push(vec![
                "train",
                "--preset",
                p,
                "--batch-size",
                "4",
                "--runs-dir",
                r,
            ]);
        }
        let (code, names) = expected(c, &preset);
        for args in commands {
            let (got, stderr) = run(&args, c);
            let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            let line = lines.first().copied().unwrap_or("");
            let problem = if got.is_none() {
                Some("hang or killed by a signal")
            } else if code == 0 {
                (got != Some(0)).then_some("a valid sample fails")
            } else if got == Some(0) {
                Some("silent success")
            } else if got == Some(101) {
                Some("panic")
            } else if lines.len() != 1 {
                Some("not one line")
            } else if got != Some(code) {
                Some("wrong exit code")
            } else if !line.contains(&names) {
                Some("does not name the file or key")
            } else if !c.says.iter().all(|w| line.contains(w.as_str())) {
                Some("does not say what is wrong")
            } else {
                None
            };
            if let Some(why) = problem {
                failures.push(format!(
                    "{}: {why}: {args:?} -> {got:?} (want {code}, naming {names}, saying {:?}):\n{}",
                    c.name,
                    c.says,
                    stderr.trim()
                ));
            }
        }
    }
    println!(
        "{} cases ({} formats), {} failures",
        all.len(),
        Format::ALL.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
