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

use super::check::{check, key, KeySeg};
use super::presets::{EMBEDDED_PREFIX, EMBEDDED_PRESETS};
use super::spec::Preset;

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
    // NUL bytes are valid UTF-8 but never text: say so (TOML would report a syntax error past
    // them, e.g. `key with no value` after 1,000 NULs).
    if let Some(at) = text.find('\0') {
        return Err(PresetError::at(
            path,
            text,
            Some(at),
            "not a text file: it holds NUL bytes (a preset is a TOML text file)",
        ));
    }
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
            // The table the field is missing from: the header the error points at, or the table
            // whose key it points at (a key inside a longer header, `[a.b.decay.x.y]`, or a
            // dotted key): never "the top level" for a nested table.
            let table = offset.and_then(|o| {
                table_header_at(text, o).or_else(|| {
                    table_key_path_at(tree.get_ref(), o).map(|keys| format!("[{}]", keys.join(".")))
                })
            });
            message.push_str(&match table {
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
    // Pass 1d': the settings a study leaves out, which the calibration stage chooses.
    if let Some(offset) = key_offset(tree.get_ref(), &["calibrate"]) {
        return Err(PresetError::at(
            path,
            text,
            Some(offset),
            "calibrate is not a preset key: leave a setting out (the target, [search], \
             batch_sizes, step_budget, eval_every, [workload.defaults]) to let the lab choose it",
        ));
    }
    fill_left_out(path, tree.get_ref(), &mut preset);
    // `[sweep] confirm` left out → the default confirm stage; "off" turns it off.
    if key_offset(tree.get_ref(), &["sweep", "confirm"]).is_none() {
        preset.sweep.confirm = Some(crate::workload::spec::ConfirmPlan::DEFAULT);
    }
    // Pass 1e: a dataset's paths are relative to the preset file, with `~` and `$VAR` expanded.
    if let Some(d) = preset.workload.dataset.as_mut() {
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let base = std::path::absolute(&base).unwrap_or(base);
        if let Err(p) = d.resolve_paths(&base) {
            let mut keys = key(&["workload", "dataset"]);
            keys.extend(p.key.iter().map(|k| KeySeg::Key(k)));
            let offset = locate(tree.get_ref(), &keys);
            return Err(PresetError::at(path, text, Some(offset), p.message));
        }
    }
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

/// A study's settings left out of its file: what the calibration stage chooses
/// (`Preset::calibrate`, docs/calibration.md), the target's metric from the model family, 8
/// trials per batch size, and a name and description where the file gives none.
fn fill_left_out(path: &Path, root: &DeTable<'_>, p: &mut Preset) {
    use super::spec::Calibrate;
    let absent = |keys: &[&str]| key_offset(root, keys).is_none();
    let c = Calibrate {
        target: absent(&["workload", "target"]),
        search: absent(&["search"]),
        batch_sizes: absent(&["sweep", "batch_sizes"]),
        budget: absent(&["workload", "step_budget"]),
        eval: absent(&["workload", "eval_every"]),
        defaults: absent(&["workload", "defaults"]),
        size: absent(&["sweep", "trials_per_batch"]) && absent(&["sweep", "confirm"]),
    };
    if c.any() {
        p.calibrate = Some(c);
    }
    if c.batch_sizes {
        p.sweep.batch_sizes = Vec::new();
    }
    if c.target {
        p.workload.target.metric = super::check::family_metric(&p.workload);
    }
    if absent(&["sweep", "trials_per_batch"]) {
        p.sweep.trials_per_batch = crate::workload::spec::CALIBRATED_TRIALS_PER_BATCH;
    }
    if absent(&["name"]) {
        p.name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "study".into());
    }
    if absent(&["description"]) {
        p.description = super::check::study_words(p);
    }
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
    // a key without a default (the message says what to set): nothing to add
    let Some(value) = value.filter(|v| v != "null") else {
        return String::new();
    };
    let table = &keys[..keys.len() - 1];
    let table_missing = !table.is_empty() && key_offset(root, table).is_none();
    format!(
        " ({dotted} is not set in this file{}, so its default {value} applies: set it{})",
        if table_missing {
            format!(" (no [{}] table)", table.join("."))
        } else {
            String::new()
        },
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
    unused_settings(p)
        .into_iter()
        .find_map(|(keys, message)| key_offset(root, &keys).map(|offset| (offset, message)))
}

/// Every key this preset's workload does not use (its optimizer, model or dataset has no such
/// setting), with the message a file that sets it gets: what `unused_key` looks for in a file,
/// and what a preset written from a study leaves out (`presets::preset_file_text`).
pub fn unused_settings(p: &Preset) -> Vec<(Vec<&'static str>, String)> {
    use super::applied::{unused, Setting};
    let w = &p.workload;
    let keyed: [(&[&'static str], Setting, bool); 9] = [
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
    let mut out = Vec::new();
    for (keys, setting, given) in keyed {
        if !given {
            continue;
        }
        if let Some(why) = unused(w, setting) {
            let name = keys[keys.len() - 1];
            out.push((
                keys.to_vec(),
                format!("{name} has no effect here: {why}; remove it"),
            ));
        }
    }
    if let Some(d) = &w.dataset {
        for (name, why) in d.unused_keys() {
            out.push((
                vec!["workload", "dataset", name],
                format!("{name} has no effect here: {why}; remove it"),
            ));
        }
    }
    if p.search.decay_alpha.is_none() {
        out.push((
            vec!["search", "decay_fraction"],
            "decay_fraction has no effect without decay_alpha (the decay's length is drawn only \
             when its factor is): add decay_alpha or remove it"
                .into(),
        ));
    }
    out
}

/// A problem with a loaded preset found later (against its data, or by a sweep's checks),
/// located at `keys` in the preset's text as a load error would be: `path:line:col: message`.
/// The text is re-read from `path` (or the embedded preset for `<bundled>/NAME.toml`); without
/// it the error names the file alone.
pub fn preset_error_at(path: &Path, keys: &[KeySeg], message: impl Into<String>) -> PresetError {
    let message = message.into();
    let text = preset_text(path);
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

/// The text of the preset at `path`: an embedded preset's (`<bundled>/NAME.toml`), else the
/// file's, if it reads as UTF-8.
fn preset_text(path: &Path) -> Option<String> {
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
    embedded.or_else(|| {
        crate::data::files::read_regular(path)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
    })
}

/// Whether the preset file at `path` (an embedded preset too) sets the key at `keys` (table
/// path): a value that is not in the file is a default nobody chose.
pub fn sets_key(path: &Path, keys: &[&str]) -> bool {
    let text = preset_text(path);
    text.and_then(|t| {
        let tree = DeTable::parse(&t).ok()?;
        key_offset(tree.get_ref(), keys)
    })
    .is_some()
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

/// The key path of the table whose key starts at `offset` (the deepest such), e.g. the `decay`
/// of `[workload.defaults.schedule.decay.x]`: `workload.defaults.schedule.decay`.
fn table_key_path_at(root: &DeTable<'_>, offset: usize) -> Option<Vec<String>> {
    fn walk(t: &DeTable<'_>, offset: usize, path: &mut Vec<String>) -> Option<Vec<String>> {
        for (key, v) in t.iter() {
            let Some(sub) = v.get_ref().as_table() else {
                continue;
            };
            path.push(key.get_ref().to_string());
            // deeper first: a key at this offset inside the table is the more specific one
            if let Some(found) = walk(sub, offset, path) {
                return Some(found);
            }
            if key.span().start == offset {
                return Some(path.clone());
            }
            path.pop();
        }
        None
    }
    walk(root, offset, &mut Vec::new())
}

fn tidy_serde_message(m: &str) -> String {
    m.trim().trim_end_matches('\n').replace('\n', " ")
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

#[cfg(test)]
mod tests;
