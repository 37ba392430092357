//! A family's size knobs: what Setup's Model field and the command line offer to change in a
//! spec without writing its TOML table. Each knob is one key of `[workload.model]` with a
//! one-line description and its value as text; a family parses a knob's text with the readers
//! here, and [`super::ModelSpec::set_knob`] then checks the whole spec with the family's own
//! problems (the checks a preset's table gets), so a knob never takes a value a preset could
//! not.
//!
//! Text forms (what [`Knob::value`] shows, and what the readers accept back): a count as
//! `16`; a list of widths as `64, 32` (brackets and spaces accepted, `none` for no entries); a
//! choice by its TOML name (`ghost`, quotes accepted); a real number as Rust prints it.

/// One size knob of a family's spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knob {
    /// The spec's key under `[workload.model]`.
    pub key: &'static str,
    /// What it sets, in one line.
    pub about: &'static str,
    /// Its current value as text ([`super::ModelSpec::set_knob`] takes it back unchanged).
    pub value: String,
}

impl Knob {
    pub fn new(key: &'static str, about: &'static str, value: impl Into<String>) -> Self {
        Knob {
            key,
            about,
            value: value.into(),
        }
    }
}

/// `text` without surrounding blanks and one pair of surrounding quotes.
fn bare(text: &str) -> &str {
    let t = text.trim();
    t.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(t)
        .trim()
}

/// A whole number (0 included: the family's problems say which counts must be positive).
pub fn count(key: &str, text: &str) -> Result<usize, String> {
    let t = bare(text);
    t.parse::<usize>().map_err(|_| {
        if t.is_empty() {
            format!("{key}: give a whole number")
        } else {
            format!("{key}: `{t}` is not a whole number")
        }
    })
}

/// A count or `none` (an optional field left out of the table).
pub fn optional_count(key: &str, text: &str) -> Result<Option<usize>, String> {
    match bare(text) {
        "none" | "" => Ok(None),
        _ => count(key, text).map(Some),
    }
}

/// The text of an optional count.
pub fn optional_text(v: Option<usize>) -> String {
    v.map_or_else(|| "none".into(), |n| n.to_string())
}

/// A list of counts: `64, 32`, `[64, 32]` or `64 32`; `none`, `[]` or nothing for no entries.
pub fn counts(key: &str, text: &str) -> Result<Vec<usize>, String> {
    let t = bare(text);
    let t = t
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(t);
    if t.trim() == "none" {
        return Ok(Vec::new());
    }
    t.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("{key}: `{s}` is not a whole number (give widths as 64, 32)"))
        })
        .collect()
}

/// The text of a list of counts (`none` for no entries).
pub fn counts_text(v: &[usize]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Exactly `N` counts (a fixed-length list such as the CNN's two convolutions).
pub fn counts_exactly<const N: usize>(key: &str, text: &str) -> Result<[usize; N], String> {
    let v = counts(key, text)?;
    <[usize; N]>::try_from(v.as_slice())
        .map_err(|_| format!("{key}: give {N} whole numbers, not {}", v.len()))
}

/// A real number.
pub fn real(key: &str, text: &str) -> Result<f64, String> {
    let t = bare(text);
    t.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("{key}: `{t}` is not a number"))
}

/// One of `names` (a choice's TOML names), as its index.
pub fn choice(key: &str, text: &str, names: &[&str]) -> Result<usize, String> {
    let t = bare(text);
    names
        .iter()
        .position(|n| *n == t)
        .ok_or_else(|| format!("{key}: `{t}` is not one of {}", names.join(", ")))
}

/// The error for a key a family does not have (its knobs listed).
pub fn unknown(kind: &str, key: &str, knobs: &[Knob]) -> String {
    let keys: Vec<&str> = knobs.iter().map(|k| k.key).collect();
    format!(
        "model `{kind}` has no knob `{key}` (its knobs: {})",
        keys.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readers_take_back_what_the_writers_show_and_say_what_is_wrong() {
        assert_eq!(count("width", " 16 "), Ok(16));
        assert_eq!(count("width", "\"16\""), Ok(16));
        assert_eq!(
            count("width", "-3"),
            Err("width: `-3` is not a whole number".into())
        );
        assert_eq!(
            count("width", "  "),
            Err("width: give a whole number".into())
        );
        for v in [vec![], vec![64], vec![64, 32]] {
            assert_eq!(counts("hidden", &counts_text(&v)), Ok(v));
        }
        assert_eq!(counts("hidden", "[64, 32]"), Ok(vec![64, 32]));
        assert_eq!(counts("hidden", "64 32"), Ok(vec![64, 32]));
        assert_eq!(counts("hidden", "[]"), Ok(vec![]));
        assert!(counts("hidden", "64, x")
            .unwrap_err()
            .contains("`x` is not a whole number"));
        assert_eq!(counts_exactly::<2>("channels", "8, 16"), Ok([8, 16]));
        assert_eq!(
            counts_exactly::<2>("channels", "8"),
            Err("channels: give 2 whole numbers, not 1".into())
        );
        assert_eq!(optional_count("ghost_batch", "none"), Ok(None));
        assert_eq!(optional_count("ghost_batch", "16"), Ok(Some(16)));
        assert_eq!(optional_text(Some(16)), "16");
        assert_eq!(real("p", "0.5"), Ok(0.5));
        assert!(real("p", "NaN").is_err());
        assert_eq!(
            choice("batch_norm", "\"batch\"", &["ghost", "batch"]),
            Ok(1)
        );
        assert_eq!(
            choice("batch_norm", "plain", &["ghost", "batch"]),
            Err("batch_norm: `plain` is not one of ghost, batch".into())
        );
    }
}
