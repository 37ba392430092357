//! Every malformed preset in tests/fixtures/invalid gives one error that names the file and the
//! line stated in the fixture's `# expect-line:` header (and contains `# expect-message:`).
//! Also: truncating a valid preset anywhere never panics and always yields a located error.

use std::path::{Path, PathBuf};

use scaling_lab::workload::load::{load_preset, parse_preset, PresetError};

fn fixtures(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(kind)
}

fn header(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("# {key}: ")))
        .unwrap_or_else(|| panic!("fixture lacks a `# {key}:` line"))
        .trim()
        .to_string()
}

#[test]
fn each_invalid_fixture_gives_one_located_error() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures("invalid"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "only {} fixtures", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let line: usize = header(&text, "expect-line").parse().unwrap();
        let message = header(&text, "expect-message");
        match load_preset(path) {
            Ok(_) => failures.push(format!("{}: loaded without error", path.display())),
            Err(e) => {
                let shown = e.to_string();
                let prefix = format!("{}:{}:", path.display(), line);
                if e.path != *path || e.line != line || !shown.starts_with(&prefix) {
                    failures.push(format!(
                        "{}: expected line {line}, got `{shown}`",
                        path.display()
                    ));
                }
                if e.col == 0 {
                    failures.push(format!("{}: no column in `{shown}`", path.display()));
                }
                if !e.message.contains(&message) {
                    failures.push(format!(
                        "{}: message `{}` lacks `{message}`",
                        path.display(),
                        e.message
                    ));
                }
                if e.message.contains('\n') {
                    failures.push(format!(
                        "{}: multi-line message `{}`",
                        path.display(),
                        e.message
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn valid_fixture_loads() {
    let p = fixtures("valid").join("digits-small.toml");
    let preset = load_preset(&p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(preset.name, "digits-small");
    assert_eq!(preset.sweep.batch_sizes, vec![8, 16, 32]);
    assert_eq!(preset.workload.defaults.learning_rate, 0.05);
}

#[test]
fn truncated_presets_never_panic_and_errors_are_located() {
    let p = fixtures("valid").join("digits-small.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let lines = text.lines().count();
    for cut in 0..text.len() {
        if !text.is_char_boundary(cut) {
            continue;
        }
        let part = &text[..cut];
        let r = std::panic::catch_unwind(|| parse_preset(Path::new("cut.toml"), part));
        let r = r.unwrap_or_else(|_| panic!("panicked on a preset cut at byte {cut}"));
        if let Err(PresetError { line, col, .. }) = r {
            assert!(
                (1..=lines + 1).contains(&line) && col >= 1,
                "cut at {cut}: line {line} col {col}"
            );
        }
    }
}

#[test]
fn unreadable_file_error_names_it() {
    let e = load_preset(Path::new("/nonexistent/preset.toml")).unwrap_err();
    assert_eq!(e.line, 0);
    let s = e.to_string();
    assert!(
        s.starts_with("/nonexistent/preset.toml: cannot read preset"),
        "{s}"
    );
}

#[test]
fn a_wrong_value_on_any_line_is_reported_on_that_line() {
    // Replace the value of each `key = value` line of the valid fixture by a non-ASCII string,
    // a negative number and a table: the preset is either still valid (a string field) or
    // rejected at exactly that line.
    let p = fixtures("valid").join("digits-small.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some((key, _)) = line.split_once(" = ") else {
            continue;
        };
        for bad in ["\"é\"", "-7", "{ a = 1 }"] {
            let mut changed = lines.clone();
            let replaced = format!("{key} = {bad}");
            changed[i] = &replaced;
            let doc = changed.join("\n");
            match parse_preset(Path::new("m.toml"), &doc) {
                Ok(_) => {}
                Err(e) if e.line == i + 1 => {}
                Err(e) => failures.push(format!("line {} `{replaced}`: got {e}", i + 1)),
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
