//! Loading presets from TOML with errors that name the file, line and column.
//!
//! Two passes: (1) the TOML is parsed and deserialised into [`Preset`] (syntax errors, unknown
//! keys, wrong types and missing fields come from `toml`, located with its byte spans);
//! (2) [`check`] validates the values (ranges, model/dataset/metric compatibility) and each
//! problem is located at the line of the offending key, found in the span-carrying parse tree
//! (`toml::de::DeTable`). A missing key that has a bad default is located at its table.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::spec::{
    DatasetKind, DatasetSpec, Decay, Metric, ModelSpec, Preset, SearchSpace, SweepDefaults,
    Workload,
};

/// A preset that could not be loaded: `path:line:col: message` (line and col 1-based; 0 when
/// the problem has no position, e.g. an unreadable file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresetError {
    pub path: PathBuf,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for PresetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.path.display(),
                self.line,
                self.col,
                self.message
            )
        }
    }
}

impl std::error::Error for PresetError {}

impl PresetError {
    fn at(path: &Path, text: &str, offset: Option<usize>, message: impl Into<String>) -> Self {
        let (line, col) = match offset {
            Some(o) => line_col(text, o),
            None => (0, 0),
        };
        PresetError {
            path: path.to_path_buf(),
            line,
            col,
            message: message.into(),
        }
    }
}

/// 1-based (line, column) of a byte offset; the column counts characters.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = text[line_start..offset].chars().count() + 1;
    (line, col)
}

/// Environment variable naming a presets directory (when set, only it is used).
pub const PRESETS_DIR_ENV: &str = "SCALING_LAB_PRESETS_DIR";

/// The bundled presets, embedded at build time so that an installed binary lists and runs them
/// from anywhere: (name, TOML text). A test checks that every `presets/*.toml` is here.
pub const EMBEDDED_PRESETS: &[(&str, &str)] = &[
    (
        "digits-mlp-adam",
        include_str!("../../presets/digits-mlp-adam.toml"),
    ),
    (
        "digits-mlp-momentum",
        include_str!("../../presets/digits-mlp-momentum.toml"),
    ),
    (
        "digits-mlp-nesterov",
        include_str!("../../presets/digits-mlp-nesterov.toml"),
    ),
    (
        "digits-mlp-sgd",
        include_str!("../../presets/digits-mlp-sgd.toml"),
    ),
    (
        "fashion-cnn-adam",
        include_str!("../../presets/fashion-cnn-adam.toml"),
    ),
    (
        "fashion-cnn-momentum",
        include_str!("../../presets/fashion-cnn-momentum.toml"),
    ),
    (
        "fashion-cnn-paper-adam",
        include_str!("../../presets/fashion-cnn-paper-adam.toml"),
    ),
    (
        "fashion-cnn-paper-momentum",
        include_str!("../../presets/fashion-cnn-paper-momentum.toml"),
    ),
    (
        "fashion-cnn-paper-sgd",
        include_str!("../../presets/fashion-cnn-paper-sgd.toml"),
    ),
    (
        "fashion-cnn-sgd",
        include_str!("../../presets/fashion-cnn-sgd.toml"),
    ),
    (
        "mnist-cnn-adam",
        include_str!("../../presets/mnist-cnn-adam.toml"),
    ),
    (
        "mnist-cnn-momentum",
        include_str!("../../presets/mnist-cnn-momentum.toml"),
    ),
    (
        "mnist-cnn-paper-adam",
        include_str!("../../presets/mnist-cnn-paper-adam.toml"),
    ),
    (
        "mnist-cnn-paper-momentum",
        include_str!("../../presets/mnist-cnn-paper-momentum.toml"),
    ),
    (
        "mnist-cnn-paper-sgd",
        include_str!("../../presets/mnist-cnn-paper-sgd.toml"),
    ),
    (
        "mnist-cnn-sgd",
        include_str!("../../presets/mnist-cnn-sgd.toml"),
    ),
    ("nqm-adam", include_str!("../../presets/nqm-adam.toml")),
    (
        "nqm-momentum",
        include_str!("../../presets/nqm-momentum.toml"),
    ),
    ("nqm-sgd", include_str!("../../presets/nqm-sgd.toml")),
    (
        "shakespeare-lstm-adam",
        include_str!("../../presets/shakespeare-lstm-adam.toml"),
    ),
    (
        "shakespeare-mlstm-adam",
        include_str!("../../presets/shakespeare-mlstm-adam.toml"),
    ),
    (
        "shakespeare-mlstm-paper-adam",
        include_str!("../../presets/shakespeare-mlstm-paper-adam.toml"),
    ),
    (
        "shakespeare-transformer-adam",
        include_str!("../../presets/shakespeare-transformer-adam.toml"),
    ),
];

/// The name under which embedded presets are shown (`<bundled>/NAME.toml`).
pub const EMBEDDED_PREFIX: &str = "<bundled>";

/// The presets directory: `SCALING_LAB_PRESETS_DIR`, else `<crate>/presets` if it exists, else
/// `./presets`. When no such directory exists the embedded presets are used ([`list_presets`],
/// [`find_preset`]).
pub fn presets_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(PRESETS_DIR_ENV) {
        if !d.is_empty() {
            return PathBuf::from(d);
        }
    }
    let bundled = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/presets"));
    if bundled.is_dir() {
        return bundled;
    }
    PathBuf::from("./presets")
}

/// Whether `dir` is missing and not explicitly chosen, so the embedded presets stand in for it.
fn use_embedded(dir: &Path) -> bool {
    let explicit = std::env::var_os(PRESETS_DIR_ENV).is_some_and(|d| !d.is_empty());
    !explicit && dir.symlink_metadata().is_err()
}

/// The embedded presets, parsed (each must be valid: a test checks it).
pub fn embedded_presets() -> Vec<(PathBuf, Result<Preset, PresetError>)> {
    EMBEDDED_PRESETS
        .iter()
        .map(|(name, text)| {
            let path = PathBuf::from(format!("{EMBEDDED_PREFIX}/{name}.toml"));
            let r = parse_preset(&path, text);
            (path, r)
        })
        .collect()
}

/// Largest preset file read (a preset is a few kB; anything bigger is not one).
const MAX_PRESET_BYTES: u64 = 1 << 20;

/// Read and validate one preset file. Only a regular file is opened (a FIFO, directory or device
/// is one error, never a hang).
pub fn load_preset(path: &Path) -> Result<Preset, PresetError> {
    let fail = |message: String| PresetError {
        path: path.to_path_buf(),
        line: 0,
        col: 0,
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read preset: {e}")))?;
    if meta.is_file() && meta.len() > MAX_PRESET_BYTES {
        return Err(fail(format!(
            "cannot read preset: {} bytes is too large for a preset (at most {MAX_PRESET_BYTES})",
            meta.len()
        )));
    }
    let bytes = crate::data::files::read_regular(path)
        .map_err(|e| fail(format!("cannot read preset: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let prefix = String::from_utf8_lossy(&e.as_bytes()[..at]).into_owned();
        let (line, col) = line_col(&prefix, at);
        PresetError {
            path: path.to_path_buf(),
            line,
            col,
            message: "not UTF-8 text: a preset is a TOML text file".into(),
        }
    })?;
    parse_preset(path, &text)
}

/// Parse and validate preset `text` (`path` only names it in errors).
pub fn parse_preset(path: &Path, text: &str) -> Result<Preset, PresetError> {
    // Pass 1a: TOML syntax, with the span tree kept for locating keys later.
    let tree = DeTable::parse(text).map_err(|e| {
        // An error without a span (the parser's nesting limit) is placed where the nesting
        // is deepest.
        let offset = e
            .span()
            .map(|s| s.start)
            .unwrap_or_else(|| deepest_nesting(text).0);
        let mut message = format!("TOML syntax error: {}", tidy_serde_message(e.message()));
        if e.span().is_none() {
            message.push_str(&format!(
                " (keys, arrays or tables nested about {} deep here)",
                deepest_nesting(text).1
            ));
        }
        PresetError::at(path, text, Some(offset), message)
    })?;
    // Pass 1b: the shape of a preset.
    let preset: Preset = toml::from_str(text).map_err(|e| {
        let span = e.span();
        let offset = refine_serde_span(text, span.clone(), e.message());
        let mut message = tidy_serde_message(e.message());
        if message.starts_with("missing field") {
            message.push_str(&match offset.and_then(|o| table_header_at(text, o)) {
                Some(h) => format!(" in {h}"),
                None => " at the top level".to_string(),
            });
        }
        PresetError::at(path, text, offset, message)
    })?;
    // Pass 1c: fixed-length arrays ([lo, hi]) with extra elements (serde drops them silently).
    for keys in [
        ["search", "learning_rate"],
        ["search", "one_minus_momentum"],
        ["search", "decay_alpha"],
        ["search", "decay_fraction"],
    ] {
        if let Some((n, offset)) = array_len_and_third(tree.get_ref(), &keys) {
            return Err(PresetError::at(
                path,
                text,
                Some(offset),
                format!(
                    "{} has {n} elements: give exactly two, [lo, hi]",
                    keys.join(".")
                ),
            ));
        }
    }
    // Pass 1d: `[sweep] concurrency` left out → the scheduler chooses it (sweep::layout).
    let mut preset = preset;
    if let Some(offset) = key_offset(tree.get_ref(), &["sweep", "auto_concurrency"]) {
        return Err(PresetError::at(
            path,
            text,
            Some(offset),
            "auto_concurrency is not a preset key: leave `concurrency` out to let the scheduler choose",
        ));
    }
    preset.sweep.auto_concurrency = key_offset(tree.get_ref(), &["sweep", "concurrency"]).is_none();
    // Pass 2: values.
    if let Some(problem) = check(&preset).into_iter().next() {
        let offset = locate(tree.get_ref(), &problem.key);
        let message = problem.message + &default_note(tree.get_ref(), &preset, &problem.key);
        return Err(PresetError::at(path, text, Some(offset), message));
    }
    // Pass 3: keys given that this workload does not use (a setting must take effect).
    if let Some((offset, message)) = unused_key(tree.get_ref(), &preset) {
        return Err(PresetError::at(path, text, Some(offset), message));
    }
    Ok(preset)
}

/// The offset where arrays/tables are nested deepest (outside strings and comments), and the
/// depth there: open brackets plus the dots of dotted keys on the line so far.
fn deepest_nesting(text: &str) -> (usize, usize) {
    let (mut depth, mut dots, mut best) = (0usize, 0usize, (0usize, 0usize));
    let mut in_str: Option<char> = None;
    let mut comment = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if c == '\n' {
            dots = 0;
        }
        if comment {
            comment = c != '\n';
            continue;
        }
        if let Some(q) = in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q || c == '\n' {
                in_str = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => in_str = Some(c),
            '#' => comment = true,
            '[' | '{' => depth += 1,
            ']' | '}' => depth = depth.saturating_sub(1),
            '.' => dots += 1,
            _ => {}
        }
        if depth + dots > best.1 {
            best = (i, depth + dots);
        }
    }
    best
}

/// For a problem about a key the file does not set: says that its default is what is wrong
/// (the value in the message is not in the file).
fn default_note(root: &DeTable<'_>, preset: &Preset, path: &[KeySeg]) -> String {
    let keys: Vec<&str> = path
        .iter()
        .filter_map(|k| match k {
            KeySeg::Key(k) => Some(*k),
            KeySeg::Index(_) => None,
        })
        .collect();
    if keys.is_empty() || key_offset(root, &keys).is_some() {
        return String::new();
    }
    let dotted = keys.join(".");
    let value = serde_json::to_value(preset).ok().and_then(|v| {
        keys.iter()
            .try_fold(v, |v, k| v.get(k).cloned())
            .map(|v| v.to_string().replace(',', ", "))
    });
    let table = &keys[..keys.len() - 1];
    let table_missing = !table.is_empty() && key_offset(root, table).is_none();
    format!(
        " ({dotted} is not set in this file{}, so its default{} applies: set it{})",
        if table_missing {
            format!(" (no [{}] table)", table.join("."))
        } else {
            String::new()
        },
        value.map_or(String::new(), |v| format!(" {v}")),
        if table.is_empty() {
            String::new()
        } else {
            format!(" under [{}]", table.join("."))
        }
    )
}

/// The first key in the file that the workload does not use (its optimizer, model or dataset
/// has no such setting): (offset of the key, message naming it and why).
fn unused_key(root: &DeTable<'_>, p: &Preset) -> Option<(usize, String)> {
    use super::applied::{unused, Setting};
    let w = &p.workload;
    let keyed: [(&[&str], Setting, bool); 9] = [
        (
            &["workload", "precision"],
            Setting::LowPrecision,
            w.precision != super::spec::Precision::Fp32,
        ),
        (&["workload", "grad_clip"], Setting::GradClip, true),
        (
            &["workload", "dataset", "max_bytes"],
            Setting::MaxBytes,
            true,
        ),
        (&["workload", "dataset", "seq_len"], Setting::SeqLen, true),
        (
            &["workload", "model", "precondition_power"],
            Setting::PreconditionPower,
            true,
        ),
        (
            &["workload", "defaults", "momentum"],
            Setting::Momentum,
            true,
        ),
        (&["workload", "defaults", "beta2"], Setting::Beta2, true),
        (&["workload", "defaults", "epsilon"], Setting::Epsilon, true),
        (
            &["search", "one_minus_momentum"],
            Setting::OneMinusMomentum,
            true,
        ),
    ];
    for (keys, setting, given) in keyed {
        let Some(offset) = key_offset(root, keys).filter(|_| given) else {
            continue;
        };
        if let Some(why) = unused(w, setting) {
            let name = keys[keys.len() - 1];
            return Some((
                offset,
                format!("{name} has no effect here: {why}; remove it"),
            ));
        }
    }
    let fraction = key_offset(root, &["search", "decay_fraction"]);
    if let (Some(offset), None) = (fraction, p.search.decay_alpha) {
        return Some((
            offset,
            "decay_fraction has no effect without decay_alpha (the decay's length is drawn only              when its factor is): add decay_alpha or remove it"
                .into(),
        ));
    }
    None
}

/// A problem with a loaded preset found later (against its data, or by a sweep's checks),
/// located at `keys` in the preset's text as a load error would be: `path:line:col: message`.
/// The text is re-read from `path` (or the embedded preset for `<bundled>/NAME.toml`); without
/// it the error names the file alone.
pub fn preset_error_at(path: &Path, keys: &[KeySeg], message: impl Into<String>) -> PresetError {
    let message = message.into();
    let embedded = path
        .strip_prefix(EMBEDDED_PREFIX)
        .ok()
        .and_then(|rest| rest.file_stem())
        .and_then(|stem| {
            EMBEDDED_PRESETS
                .iter()
                .find(|(n, _)| std::ffi::OsStr::new(n) == stem)
                .map(|(_, t)| t.to_string())
        });
    let text = embedded.or_else(|| {
        crate::data::files::read_regular(path)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
    });
    let located = text.as_deref().and_then(|t| {
        let tree = DeTable::parse(t).ok()?;
        let preset: Preset = toml::from_str(t).ok()?;
        let note = default_note(tree.get_ref(), &preset, keys);
        Some((locate(tree.get_ref(), keys), note))
    });
    match (located, text) {
        (Some((offset, note)), Some(t)) => {
            PresetError::at(path, &t, Some(offset), format!("{message}{note}"))
        }
        _ => PresetError::at(path, "", None, message),
    }
}

/// The key path `sweep.batch_sizes[i]`-style keys of a preset, from a dotted name.
pub fn key_path(dotted: &[&'static str]) -> Vec<KeySeg> {
    key(dotted)
}

/// Offset of the key at `keys` (table path), when it is present.
fn key_offset(root: &DeTable<'_>, keys: &[&str]) -> Option<usize> {
    let mut table = root;
    let (last, parents) = keys.split_last()?;
    for k in parents {
        let (_, v) = table.iter().find(|(key, _)| key.get_ref().as_ref() == *k)?;
        table = v.get_ref().as_table()?;
    }
    let (key, _) = table
        .iter()
        .find(|(key, _)| key.get_ref().as_ref() == *last)?;
    let start: usize = key.span().start;
    Some(start)
}

/// (length, offset of the third element) of the array at `keys`, when it has more than two.
fn array_len_and_third(root: &DeTable<'_>, keys: &[&str]) -> Option<(usize, usize)> {
    let mut table = root;
    let (last, parents) = keys.split_last()?;
    for k in parents {
        let (_, v) = table.iter().find(|(key, _)| key.get_ref().as_ref() == *k)?;
        table = v.get_ref().as_table()?;
    }
    let (_, v) = table
        .iter()
        .find(|(key, _)| key.get_ref().as_ref() == *last)?;
    let a = v.get_ref().as_array()?;
    (a.len() > 2).then(|| (a.len(), a[2].span().start))
}

/// `toml` reports errors inside an internally tagged enum (the model, the decay) with the span
/// of the whole table; point at the named key instead when the message names one.
fn refine_serde_span(text: &str, span: Option<Range<usize>>, message: &str) -> Option<usize> {
    let span = span?;
    let start = span.start.min(text.len());
    // Only errors reported at a table header need refining.
    if !text.is_char_boundary(start) || !text[start..].starts_with('[') {
        return Some(start);
    }
    // The span may cover only the table header: search on to the next table header.
    let after_first = text[start..]
        .find('\n')
        .map_or(text.len(), |i| start + i + 1);
    let table_end = lines_from(text, after_first)
        .find(|(_, l)| l.trim_start().starts_with('['))
        .map_or(text.len(), |(here, _)| here)
        .max(span.end.min(text.len()));
    // What the message names: the text after one of `prefixes`, up to `end`.
    let named = |prefixes: &[&str], end: &str| {
        prefixes
            .iter()
            .find_map(|p| message.strip_prefix(p))
            .and_then(|rest| rest.split(end).next())
    };
    let by_key = named(&["unknown field `", "duplicate field `"], "`")
        .and_then(|key| find_key_in(text, start..table_end, key));
    // "invalid type: string \"16\", expected ...": find the assignment with that value.
    let by_value = || {
        named(&["invalid type: ", "invalid value: "], ", expected")
            .and_then(|u| find_value_in(text, start..table_end, u))
    };
    Some(by_key.or_else(by_value).unwrap_or(start))
}

/// (offset, line) pairs of the lines of `text` from `from`.
fn lines_from(text: &str, from: usize) -> impl Iterator<Item = (usize, &str)> {
    text[from..].split_inclusive('\n').scan(from, |pos, l| {
        let here = *pos;
        *pos += l.len();
        Some((here, l))
    })
}

/// Offset of the first `key = value` line in `range` whose value is what serde's "unexpected"
/// description names (`string "x"`, `integer `5``, `floating point `1.5``, `boolean `true``,
/// `sequence`, `map`).
fn find_value_in(text: &str, range: Range<usize>, unexpected: &str) -> Option<usize> {
    let quoted = |s: &str| s.split('`').nth(1).map(str::to_string);
    let matches: Box<dyn Fn(&str) -> bool> = if let Some(s) = unexpected.strip_prefix("string ") {
        let inner = s.trim_matches('"').to_string();
        Box::new(move |v: &str| v == format!("\"{inner}\"") || v == format!("'{inner}'"))
    } else if unexpected == "sequence" {
        Box::new(|v: &str| v.starts_with('['))
    } else if unexpected == "map" {
        Box::new(|v: &str| v.starts_with('{'))
    } else if let Some(tok) = quoted(unexpected) {
        let num: Option<f64> = tok.parse().ok();
        Box::new(move |v: &str| v == tok || (num.is_some() && v.parse::<f64>().ok() == num))
    } else {
        return None;
    };
    let end = range.end.min(text.len());
    let start = range.start.min(end);
    if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return None;
    }
    lines_from(&text[..end], start).find_map(|(off, line)| {
        let (k, v) = line.split_once('=')?;
        let v = v.split(" #").next().unwrap_or(v).trim();
        let indent = line.len() - line.trim_start().len();
        (!k.trim().is_empty() && !k.contains('[') && matches(v)).then_some(off + indent)
    })
}

/// Offset of the first line in `range` that assigns `key` (`key =` or `key=`), if any.
fn find_key_in(text: &str, range: Range<usize>, key: &str) -> Option<usize> {
    let end = range.end.min(text.len());
    let start = range.start.min(end);
    if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return None;
    }
    let mut offset = start;
    for line in text[start..end].split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let k = trimmed
            .strip_prefix(key)
            .or_else(|| trimmed.strip_prefix(&format!("\"{key}\"")));
        if let Some(rest) = k {
            if rest.trim_start().starts_with('=') {
                return Some(offset + indent);
            }
        }
        offset += line.len();
    }
    None
}

/// The `[table]` header that starts at `offset`, if one does.
fn table_header_at(text: &str, offset: usize) -> Option<String> {
    let rest = text.get(offset..)?;
    let line = rest.lines().next()?.trim();
    let header = line.split(" #").next()?.trim();
    (header.starts_with('[') && header.ends_with(']')).then(|| header.to_string())
}

fn tidy_serde_message(m: &str) -> String {
    m.trim().trim_end_matches('\n').replace('\n', " ")
}

/// One key path segment: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySeg {
    Key(&'static str),
    Index(usize),
}

/// A semantic problem and the key it is about.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub key: Vec<KeySeg>,
    pub message: String,
}

/// Byte offset of the deepest existing part of `path` in the tree: the key itself when present,
/// else the key of the deepest table on the path (or 0).
fn locate(root: &DeTable<'_>, path: &[KeySeg]) -> usize {
    let mut best = 0usize;
    let mut table: Option<&DeTable<'_>> = Some(root);
    let mut array: Option<&[Spanned<DeValue<'_>>]> = None;
    for seg in path {
        let value: &Spanned<DeValue<'_>> = match (seg, table, array) {
            (KeySeg::Key(k), Some(t), _) => {
                let Some((key, v)) = t.iter().find(|(key, _)| key.get_ref().as_ref() == *k) else {
                    return best;
                };
                best = key.span().start;
                v
            }
            (KeySeg::Index(i), _, Some(a)) => {
                let Some(v) = a.get(*i) else { return best };
                best = v.span().start;
                v
            }
            _ => return best,
        };
        table = value.get_ref().as_table();
        array = value.get_ref().as_array().map(|a| &a[..]);
    }
    best
}

fn key(path: &[&'static str]) -> Vec<KeySeg> {
    path.iter().map(|k| KeySeg::Key(k)).collect()
}

/// The key of element `i` of `sweep.batch_sizes`.
fn batch_size_key(i: usize) -> Vec<KeySeg> {
    vec![
        KeySeg::Key("sweep"),
        KeySeg::Key("batch_sizes"),
        KeySeg::Index(i),
    ]
}

/// Pushes a problem about the key at `path`.
fn bad(out: &mut Vec<Problem>, path: &[&'static str], message: String) {
    out.push(Problem {
        key: key(path),
        message,
    });
}

fn in_open_unit(v: f64) -> bool {
    v > 0.0 && v < 1.0
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// Longest preset name: it becomes part of the run log's file name (at most 255 bytes).
pub const MAX_NAME_CHARS: usize = 100;

/// Semantic validation of a deserialised preset; problems in document order of importance.
pub fn check(p: &Preset) -> Vec<Problem> {
    let mut out = Vec::new();
    check_names(p, &mut out);
    check_model_and_target(&p.workload, &mut out);
    check_model_sizes(&p.workload, &mut out);
    check_dataset(&p.workload, &mut out);
    check_measurement(&p.workload, &mut out);
    check_defaults(&p.workload, &mut out);
    check_search(&p.search, &mut out);
    check_sweep(&p.sweep, &mut out);
    out.extend(check_sizes(p, available_memory()));
    out
}

/// `name` (it names run logs: not empty, not too long for a file name) and `description`.
fn check_names(p: &Preset, out: &mut Vec<Problem>) {
    if p.name.trim().is_empty() {
        bad(out, &["name"], "name must not be empty".into());
    } else if p.name.chars().count() > MAX_NAME_CHARS {
        bad(
            out,
            &["name"],
            format!(
                "name is {} characters long: at most {MAX_NAME_CHARS} (it becomes part of the run log's file name)",
                p.name.chars().count()
            ),
        );
    }
    if p.description.trim().is_empty() {
        bad(
            out,
            &["description"],
            "description must not be empty".into(),
        );
    }
}

/// Model ↔ dataset ↔ metric, and the target value in the metric's range.
fn check_model_and_target(w: &Workload, out: &mut Vec<Problem>) {
    let (needs, metric) = match &w.model {
        ModelSpec::Mlp { .. } | ModelSpec::Cnn { .. } => (Some(true), Metric::ValError),
        ModelSpec::CharLstm { .. } | ModelSpec::Mlstm { .. } | ModelSpec::Transformer { .. } => {
            (Some(false), Metric::ValBpc)
        }
        ModelSpec::Nqm { .. } => (None, Metric::NqmLoss),
    };
    let model = w.model.short_name();
    match (&w.dataset, needs) {
        (None, Some(images)) => bad(
            out,
            &["workload", "model", "kind"],
            format!(
                "model `{model}` needs a dataset: add a [workload.dataset] table with an {} dataset",
                if images { "image (digits, mnist, fashion)" } else { "text (shakespeare, reviews)" }
            ),
        ),
        (Some(_), None) => bad(
            out,
            &["workload", "dataset"],
            "the noisy quadratic model (`nqm`) has no dataset: remove [workload.dataset]".into(),
        ),
        (Some(d), Some(images)) => {
            let is_img = image_geometry(d.name).is_some();
            if is_img != images {
                bad(
                    out,
                    &["workload", "dataset", "name"],
                    format!(
                        "model `{model}` is {} but dataset `{}` is {}",
                        if images { "an image classifier" } else { "a language model" },
                        dataset_name(d.name),
                        if is_img { "images: use shakespeare or reviews" } else { "text: use digits, mnist or fashion" }
                    ),
                );
            }
        }
        (None, None) => {}
    }
    if w.target.metric != metric {
        bad(
            out,
            &["workload", "target", "metric"],
            format!(
                "model `{model}` reports `{}`, not `{}`",
                metric.name(),
                w.target.metric.name()
            ),
        );
    }
    let v = w.target.value;
    let range = match w.target.metric {
        Metric::ValError if !in_open_unit(v) => Some("val_error must be in (0, 1)"),
        Metric::ValBpc if !(v > 0.0 && v < 8.0) => Some("val_bpc must be in (0, 8) bits per byte"),
        Metric::NqmLoss if !positive(v) => Some("nqm_loss must be > 0"),
        _ => None,
    };
    if let Some(range) = range {
        bad(
            out,
            &["workload", "target", "value"],
            format!("target value {v} for {range}"),
        );
    }
}

/// Layer sizes > 0, heads dividing d_model, the NQM's preconditioning power.
fn check_model_sizes(w: &Workload, out: &mut Vec<Problem>) {
    let positive = |k: &'static str, zero: bool| -> (&'static str, bool, String) {
        (k, zero, format!("{k} must be > 0"))
    };
    let model_checks: Vec<(&'static str, bool, String)> = match &w.model {
        ModelSpec::Mlp { hidden } => vec![(
            "hidden",
            hidden.contains(&0),
            "hidden layer widths must be > 0".into(),
        )],
        ModelSpec::Cnn { channels, dense } => vec![
            (
                "channels",
                channels.contains(&0),
                "conv channels must be > 0".into(),
            ),
            ("dense", *dense == 0, "dense width must be > 0".into()),
        ],
        ModelSpec::CharLstm { embed, hidden } | ModelSpec::Mlstm { embed, hidden } => {
            vec![
                positive("embed", *embed == 0),
                positive("hidden", *hidden == 0),
            ]
        }
        ModelSpec::Transformer {
            d_model,
            heads,
            layers,
            ff,
        } => vec![
            positive("d_model", *d_model == 0),
            (
                "heads",
                *heads == 0 || !d_model.is_multiple_of(*heads.max(&1)),
                format!("heads {heads} must be > 0 and divide d_model {d_model}"),
            ),
            positive("layers", *layers == 0),
            positive("ff", *ff == 0),
        ],
        ModelSpec::Nqm {
            dim,
            precondition_power,
        } => vec![
            positive("dim", *dim == 0),
            (
                "precondition_power",
                !(0.0..=1.0).contains(precondition_power),
                format!("precondition_power {precondition_power} must be in [0, 1]"),
            ),
        ],
    };
    for (k, wrong, message) in model_checks {
        if wrong {
            bad(out, &["workload", "model", k], message);
        }
    }
}

/// The dataset's own settings (ranges; which dataset they apply to is `unused_keys`).
fn check_dataset(w: &Workload, out: &mut Vec<Problem>) {
    let Some(d) = &w.dataset else { return };
    let positive = |k: &'static str, zero: bool| -> (&'static str, bool, String) {
        (k, zero, format!("{k} must be > 0"))
    };
    let dataset_checks = [
        (
            "val_fraction",
            !in_open_unit(d.val_fraction),
            format!("val_fraction {} must be in (0, 1)", d.val_fraction),
        ),
        positive("seq_len", d.seq_len == 0),
        positive("max_bytes", d.max_bytes == Some(0)),
        (
            "downsample",
            d.downsample == Some(0),
            "downsample must be ≥ 1 (2 = average-pool 2×2 blocks)".into(),
        ),
        positive("max_val", d.max_val == Some(0)),
    ];
    for (k, wrong, message) in dataset_checks {
        if wrong {
            bad(out, &["workload", "dataset", k], message);
        }
    }
}

/// Evaluation grid, budgets, clipping, divergence.
fn check_measurement(w: &Workload, out: &mut Vec<Problem>) {
    if w.eval_every == 0 {
        bad(
            out,
            &["workload", "eval_every"],
            "eval_every must be > 0".into(),
        );
    }
    if !(w.eval_growth.is_finite() && (0.0..=1.0).contains(&w.eval_growth)) {
        bad(
            out,
            &["workload", "eval_growth"],
            format!(
                "eval_growth {} must be in [0, 1] (0.05 = evaluate every 5% of the steps so far)",
                w.eval_growth
            ),
        );
    }
    if w.max_examples == Some(0) {
        bad(
            out,
            &["workload", "max_examples"],
            "max_examples must be > 0 (omit it for no example budget)".into(),
        );
    }
    if w.step_budget == 0 || w.step_budget < w.eval_every {
        bad(
            out,
            &["workload", "step_budget"],
            format!(
                "step_budget {} must be at least eval_every {} (and > 0)",
                w.step_budget, w.eval_every
            ),
        );
    }
    if let Some(c) = w.grad_clip.filter(|c| !positive(*c)) {
        bad(
            out,
            &["workload", "grad_clip"],
            format!("grad_clip {c} must be > 0"),
        );
    }
    if !(w.divergence_factor.is_finite() && w.divergence_factor > 1.0) {
        bad(
            out,
            &["workload", "divergence_factor"],
            format!("divergence_factor {} must be > 1", w.divergence_factor),
        );
    }
}

/// The default metaparameters of a single `train` run.
fn check_defaults(w: &Workload, out: &mut Vec<Problem>) {
    let m = &w.defaults;
    let k = |name: &'static str| -> [&'static str; 3] { ["workload", "defaults", name] };
    if !positive(m.learning_rate) {
        bad(
            out,
            &k("learning_rate"),
            format!("learning_rate {} must be > 0", m.learning_rate),
        );
    }
    for (name, v) in [("momentum", m.momentum), ("beta2", m.beta2)] {
        if !(0.0..1.0).contains(&v) {
            bad(out, &k(name), format!("{name} {v} must be in [0, 1)"));
        }
    }
    if !positive(m.epsilon) {
        bad(
            out,
            &k("epsilon"),
            format!("epsilon {} must be > 0", m.epsilon),
        );
    }
    if m.schedule.warmup_steps > w.step_budget {
        bad(
            out,
            &["workload", "defaults", "schedule", "warmup_steps"],
            format!(
                "warmup_steps {} exceeds step_budget {}",
                m.schedule.warmup_steps, w.step_budget
            ),
        );
    }
    if let Decay::Linear { alpha, steps } = m.schedule.decay {
        let d = |name: &'static str| -> [&'static str; 5] {
            ["workload", "defaults", "schedule", "decay", name]
        };
        if !(0.0..=1.0).contains(&alpha) {
            bad(
                out,
                &d("alpha"),
                format!("decay alpha {alpha} must be in [0, 1]"),
            );
        }
        if steps == 0 {
            bad(out, &d("steps"), "decay steps must be > 0".into());
        }
    }
}

/// The search space, with the same bounds the plan samples within (`sweep::plan`).
fn check_search(s: &SearchSpace, out: &mut Vec<Problem>) {
    let range = |r: [f64; 2]| positive(r[0]) && positive(r[1]) && r[0] <= r[1];
    if !range(s.learning_rate) {
        bad(
            out,
            &["search", "learning_rate"],
            format!(
                "learning_rate range [{}, {}] must have 0 < lo <= hi",
                s.learning_rate[0], s.learning_rate[1]
            ),
        );
    }
    if let Some(r) = s.one_minus_momentum.filter(|r| !(range(*r) && r[1] < 1.0)) {
        bad(
            out,
            &["search", "one_minus_momentum"],
            format!(
                "one_minus_momentum range [{}, {}] must have 0 < lo <= hi < 1 (1−γ = 1 is plain SGD: use an sgd preset)",
                r[0], r[1]
            ),
        );
    }
    if let Some(r) = s.decay_alpha.filter(|r| !(range(*r) && r[1] <= 1.0)) {
        bad(
            out,
            &["search", "decay_alpha"],
            format!(
                "decay_alpha range [{}, {}] must have 0 < lo <= hi <= 1",
                r[0], r[1]
            ),
        );
    }
    let unit = |v: f64| (0.0..=1.0).contains(&v);
    if let Some(r) = s
        .decay_fraction
        .filter(|r| !(unit(r[0]) && unit(r[1]) && r[0] <= r[1]))
    {
        bad(
            out,
            &["search", "decay_fraction"],
            format!(
                "decay_fraction range [{}, {}] must have 0 <= lo <= hi <= 1",
                r[0], r[1]
            ),
        );
    }
    if !(0.0..1.0).contains(&s.warmup_fraction) {
        bad(
            out,
            &["search", "warmup_fraction"],
            format!("warmup_fraction {} must be in [0, 1)", s.warmup_fraction),
        );
    }
    if s.base_batch == 0 {
        bad(
            out,
            &["search", "base_batch"],
            "base_batch must be > 0".into(),
        );
    }
}

/// Sweep defaults: counts > 0, batch sizes > 0, distinct and divisible by the workers.
fn check_sweep(sw: &SweepDefaults, out: &mut Vec<Problem>) {
    if sw.batch_sizes.is_empty() {
        bad(
            out,
            &["sweep", "batch_sizes"],
            "batch_sizes must not be empty".into(),
        );
    }
    for (k, v) in [
        ("workers", sw.workers),
        ("concurrency", sw.concurrency),
        ("trials_per_batch", sw.trials_per_batch),
    ] {
        if v == 0 {
            bad(out, &["sweep", k], format!("{k} must be > 0"));
        }
    }
    if sw.trials_per_device > 64 {
        bad(
            out,
            &["sweep", "trials_per_device"],
            format!(
                "trials_per_device {} is absurd (at most 64)",
                sw.trials_per_device
            ),
        );
    }
    for (i, &b) in sw.batch_sizes.iter().enumerate() {
        let msg = if b == 0 {
            Some("batch sizes must be > 0".to_string())
        } else if let Some(first) = sw.batch_sizes[..i].iter().position(|&x| x == b) {
            Some(format!(
                "batch size {b} is listed twice (also element {} of batch_sizes): each B is measured once",
                first + 1
            ))
        } else if sw.workers > 0 && !b.is_multiple_of(sw.workers) {
            Some(format!(
                "batch size {b} is not divisible by workers {} (each worker gets B/G examples)",
                sw.workers
            ))
        } else {
            None
        };
        if let Some(message) = msg {
            out.push(Problem {
                key: batch_size_key(i),
                message,
            });
        }
    }
}

/// Upper bounds on counts that allocate per item (trials, threads): far above any real use,
/// low enough that an absurd value is an error instead of an allocation crash.
pub const MAX_TRIALS_PER_BATCH: usize = 100_000;
pub const MAX_BATCH_SIZES: usize = 4_096;
pub const MAX_WORKERS: usize = 1_024;
/// (the same cap as `--concurrency`: a preset cannot ask for what the flag refuses)
pub const MAX_CONCURRENCY: usize = 256;
pub const MAX_BATCH_SIZE: usize = 1 << 30;
/// Smallest validation set whose error rate is worth a target (one image = 0 % or 100 %).
pub const MIN_VAL_EXAMPLES: usize = 10;

/// (examples, height, width) of an image dataset as bundled.
pub fn image_geometry(kind: DatasetKind) -> Option<(usize, usize, usize)> {
    match kind {
        DatasetKind::Digits => Some((1797, 8, 8)),
        DatasetKind::Mnist | DatasetKind::Fashion => Some((10_000, 28, 28)),
        DatasetKind::Shakespeare | DatasetKind::Reviews => None,
    }
}

/// (training examples, validation examples used) of an image workload, computed exactly as the
/// split does; `None` for text and the NQM.
pub fn image_split_sizes(w: &super::spec::Workload) -> Option<(usize, usize)> {
    let d = w.dataset.as_ref()?;
    let (n, _, _) = image_geometry(d.name)?;
    if !(d.val_fraction > 0.0 && d.val_fraction < 1.0) {
        return None;
    }
    let n_val = crate::data::split::val_count(n, d.val_fraction).min(n);
    let used = d.max_val.map_or(n_val, |m| m.min(n_val));
    Some((n - n_val, used))
}

/// Why batch size `b` cannot be used with workload `w` on `workers` workers, if it cannot:
/// zero, absurdly large, not divisible by the workers, or larger than the training set. For the
/// CLI's `--batch-sizes`/`--batch-size` as well as the preset's.
pub fn batch_size_problem(w: &super::spec::Workload, b: usize, workers: usize) -> Option<String> {
    if b == 0 {
        return Some("batch sizes must be > 0".into());
    }
    if b > MAX_BATCH_SIZE {
        return Some(format!(
            "batch size {b} is absurd (at most {MAX_BATCH_SIZE})"
        ));
    }
    if workers > 0 && !b.is_multiple_of(workers) {
        return Some(format!(
            "batch size {b} is not divisible by workers {workers} (each worker gets B/G examples)"
        ));
    }
    if let Some((n_train, _)) = image_split_sizes(w) {
        if b > n_train {
            return Some(format!(
                "batch size {b} is larger than the {n_train} training examples"
            ));
        }
    }
    None
}

/// Memory this machine has available for a new process (bytes), from /proc/meminfo; `None` when
/// it cannot be read.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// Approximate trainable parameter count of the model (f64: absurd sizes must not overflow).
pub fn approx_params(w: &super::spec::Workload) -> f64 {
    let (c_in, h, wd) = w
        .dataset
        .as_ref()
        .and_then(|d| {
            let (_, h, wd) = image_geometry(d.name)?;
            let f = d.downsample.unwrap_or(1).max(1);
            Some((1.0, (h / f).max(1) as f64, (wd / f).max(1) as f64))
        })
        .unwrap_or((1.0, 1.0, 1.0));
    let classes = 10.0;
    let vocab = 256.0;
    match &w.model {
        ModelSpec::Mlp { hidden } => {
            let mut prev = c_in * h * wd;
            let mut p = 0.0;
            for &x in hidden {
                p += (prev + 1.0) * x as f64;
                prev = x as f64;
            }
            p + (prev + 1.0) * classes
        }
        ModelSpec::Cnn { channels, dense } => {
            let mut prev = c_in;
            let mut p = 0.0;
            for &c in channels {
                p += 25.0 * prev * c as f64 + c as f64;
                prev = c as f64;
            }
            p + (prev * h * wd + 1.0) * *dense as f64 + (*dense as f64 + 1.0) * classes
        }
        ModelSpec::CharLstm { embed, hidden } | ModelSpec::Mlstm { embed, hidden } => {
            let (e, hd) = (*embed as f64, *hidden as f64);
            vocab * e + 8.0 * (e + hd + 1.0) * hd + (hd + 1.0) * vocab
        }
        ModelSpec::Transformer {
            d_model,
            layers,
            ff,
            ..
        } => {
            let (d, f, l) = (*d_model as f64, *ff as f64, *layers as f64);
            let seq = w.dataset.as_ref().map_or(1.0, |d| d.seq_len as f64);
            vocab * d + seq * d + l * (4.0 * d * d + 2.0 * d * f + 8.0 * d) + (d + 1.0) * vocab
        }
        ModelSpec::Nqm { dim, .. } => 4.0 * *dim as f64,
    }
}

/// Sizes that would crash on allocation or make no sense: trial/thread counts, batch sizes
/// against the training set, degenerate validation sets, `downsample` that crops, models too big
/// for `memory` (bytes available; `None` = unknown, only absolute caps apply).
pub fn check_sizes(p: &Preset, memory: Option<u64>) -> Vec<Problem> {
    let mut out = Vec::new();
    check_counts(p, &mut out);
    if let Some(d) = &p.workload.dataset {
        check_data_sizes(&p.workload, d, &mut out);
    }
    let sw = &p.sweep;
    for (i, &b) in sw.batch_sizes.iter().enumerate() {
        if b == 0 || (sw.workers > 0 && !b.is_multiple_of(sw.workers)) {
            continue; // reported by `check`
        }
        if let Some(message) = batch_size_problem(&p.workload, b, sw.workers) {
            out.push(Problem {
                key: batch_size_key(i),
                message,
            });
        }
    }
    check_model_memory(p, memory, &mut out);
    out
}

/// Counts that allocate per item: trials, batch sizes, workers, trials at once, base batch.
fn check_counts(p: &Preset, out: &mut Vec<Problem>) {
    let sw = &p.sweep;
    let caps: [(&'static str, &'static str, usize, usize); 5] = [
        (
            "sweep",
            "trials_per_batch",
            sw.trials_per_batch,
            MAX_TRIALS_PER_BATCH,
        ),
        ("sweep", "workers", sw.workers, MAX_WORKERS),
        ("sweep", "concurrency", sw.concurrency, MAX_CONCURRENCY),
        ("search", "base_batch", p.search.base_batch, MAX_BATCH_SIZE),
        (
            "sweep",
            "batch_sizes",
            sw.batch_sizes.len(),
            MAX_BATCH_SIZES,
        ),
    ];
    for (table, k, v, max) in caps {
        if v > max {
            let what = if k == "batch_sizes" {
                format!("{v} batch sizes")
            } else {
                format!("{k} {v}")
            };
            bad(
                out,
                &[table, k],
                format!("{what} is absurd (at most {max})"),
            );
        }
    }
}

/// Image geometry and split sizes (`downsample`, the validation and training sets), `seq_len`.
fn check_data_sizes(w: &Workload, d: &DatasetSpec, out: &mut Vec<Problem>) {
    let k = |name: &'static str| -> [&'static str; 3] { ["workload", "dataset", name] };
    if let Some((_, h, wd)) = image_geometry(d.name) {
        if let Some(f) = d.downsample.filter(|&f| f > 0) {
            if !h.is_multiple_of(f) || !wd.is_multiple_of(f) {
                bad(
                    out,
                    &k("downsample"),
                    format!(
                        "downsample {f} does not divide the {h}×{wd} images (it would crop them): use a divisor of {h}"
                    ),
                );
            }
        }
        if let Some((n_train, n_val)) = image_split_sizes(w) {
            if n_val < MIN_VAL_EXAMPLES {
                let key = if d.max_val.is_some_and(|m| m < MIN_VAL_EXAMPLES) {
                    "max_val"
                } else {
                    "val_fraction"
                };
                bad(
                    out,
                    &k(key),
                    format!(
                        "the validation set would hold {n_val} examples: at least {MIN_VAL_EXAMPLES} are needed for a meaningful error rate"
                    ),
                );
            }
            if n_train < MIN_VAL_EXAMPLES {
                bad(
                    out,
                    &k("val_fraction"),
                    format!(
                        "val_fraction {} leaves {n_train} training examples",
                        d.val_fraction
                    ),
                );
            }
        }
    } else if d.downsample.is_some_and(|f| f > 1) {
        bad(
            out,
            &k("downsample"),
            "downsample applies to image datasets only".into(),
        );
    }
    if d.seq_len > 1 << 16 {
        bad(
            out,
            &k("seq_len"),
            format!("seq_len {} is absurd (at most 65536)", d.seq_len),
        );
    }
}

/// Model size against memory: weights, gradients and two optimizer slots (f32) per replica,
/// times the replicas of the trials running at once.
fn check_model_memory(p: &Preset, memory: Option<u64>, out: &mut Vec<Problem>) {
    let (w, sw) = (&p.workload, &p.sweep);
    let params = approx_params(w);
    let replicas =
        (sw.workers.clamp(1, MAX_WORKERS) * sw.concurrency.clamp(1, MAX_CONCURRENCY)) as f64;
    let need = params * 16.0 * replicas;
    let limit = memory.map_or(f64::INFINITY, |m| m as f64);
    let model_key: &'static str = match &w.model {
        ModelSpec::Mlp { .. } | ModelSpec::CharLstm { .. } | ModelSpec::Mlstm { .. } => "hidden",
        ModelSpec::Cnn { .. } => "channels",
        ModelSpec::Transformer { .. } => "d_model",
        ModelSpec::Nqm { .. } => "dim",
    };
    let gib = |b: f64| b / (1u64 << 30) as f64;
    if params > 2e10 || need > limit {
        bad(
            out,
            &["workload", "model", model_key],
            format!(
                "the model has about {params:.2e} parameters: {:.1} GiB for weights, gradients and \
                 optimizer state ({replicas} replica(s)), {}",
                gib(need),
                memory.map_or("far more than is reasonable".to_string(), |m| format!(
                    "more than the {:.1} GiB of memory available",
                    gib(m as f64)
                ))
            ),
        );
    }
}

fn dataset_name(k: DatasetKind) -> &'static str {
    match k {
        DatasetKind::Digits => "digits",
        DatasetKind::Mnist => "mnist",
        DatasetKind::Fashion => "fashion",
        DatasetKind::Shakespeare => "shakespeare",
        DatasetKind::Reviews => "reviews",
    }
}

/// Every `*.toml` in `dir`, loaded, sorted by file name. An unreadable directory gives one
/// entry with its error; a missing default directory (no `SCALING_LAB_PRESETS_DIR`) gives the
/// embedded presets.
pub fn list_presets(dir: &Path) -> Vec<(PathBuf, Result<Preset, PresetError>)> {
    if use_embedded(dir) {
        return embedded_presets();
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            return vec![(
                dir.to_path_buf(),
                Err(PresetError {
                    path: dir.to_path_buf(),
                    line: 0,
                    col: 0,
                    message: format!("cannot read presets directory: {e}"),
                }),
            )]
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    paths
        .into_iter()
        .map(|p| {
            let r = load_preset(&p);
            (p, r)
        })
        .collect()
}

/// Find a preset by name (`mnist-cnn-momentum`, looked up in [`presets_dir`], else among the
/// embedded presets) or by path (`presets/mnist-cnn-momentum.toml`, anything ending in `.toml` or
/// containing a `/`). A path is only ever that file: a missing path is an error, never the
/// bundled preset of the same name.
pub fn find_preset(name_or_path: &str) -> Result<(PathBuf, Preset), PresetError> {
    find_preset_in(&presets_dir(), name_or_path)
}

/// [`find_preset`] with an explicit presets directory.
pub fn find_preset_in(dir: &Path, name_or_path: &str) -> Result<(PathBuf, Preset), PresetError> {
    let as_path = Path::new(name_or_path);
    let looks_like_path = name_or_path.ends_with(".toml")
        || name_or_path.contains('/')
        || name_or_path.contains(std::path::MAIN_SEPARATOR);
    if looks_like_path {
        // Exactly this file (load_preset names a missing one, a FIFO, a directory…).
        return load_preset(as_path).map(|p| (as_path.to_path_buf(), p));
    }
    if use_embedded(dir) {
        if let Some((_, text)) = EMBEDDED_PRESETS.iter().find(|(n, _)| *n == name_or_path) {
            let path = PathBuf::from(format!("{EMBEDDED_PREFIX}/{name_or_path}.toml"));
            return parse_preset(&path, text).map(|p| (path, p));
        }
        return Err(not_found(dir, name_or_path));
    }
    let candidate = dir.join(format!("{name_or_path}.toml"));
    if candidate.symlink_metadata().is_ok() {
        return load_preset(&candidate).map(|p| (candidate, p));
    }
    Err(not_found(dir, name_or_path))
}

fn not_found(dir: &Path, name: &str) -> PresetError {
    let mut known: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let p = e.path();
                    (p.extension()? == "toml")
                        .then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                        .flatten()
                })
                .collect()
        })
        .unwrap_or_default();
    if use_embedded(dir) {
        known = EMBEDDED_PRESETS
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
    }
    known.sort();
    let hint = if known.is_empty() {
        format!("no presets in {}", dir.display())
    } else {
        format!("known presets: {}", known.join(", "))
    };
    PresetError {
        path: PathBuf::from(name),
        line: 0,
        col: 0,
        message: format!("no such preset ({hint})"),
    }
}

#[cfg(test)]
mod tests {
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
}
