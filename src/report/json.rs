//! The JSON renderer: `--json` of `report`, `sweep` and the cluster front end (shape:
//! `docs/report-schema.json`), and the analysis as the JSON outputs show it — the analysis's
//! numbers with its notes worded (`notes::note_text`), as a reader expects them.

use serde::Serialize;

use super::notes::note_text;
use super::Report;
use crate::core::analysis::Analysis;

/// The analysis as the JSON outputs show it: its fields, the notes in words.
pub fn analysis_json(a: &Analysis) -> serde_json::Value {
    let mut v = serde_json::to_value(a).unwrap_or(serde_json::Value::Null);
    if let Some(o) = v.as_object_mut() {
        let notes: Vec<String> = a.notes.iter().map(note_text).collect();
        o.insert("notes".into(), serde_json::json!(notes));
    }
    v
}

/// `serialize_with` of `Report::analysis`.
pub(crate) fn analysis_value<S: serde::Serializer>(a: &Analysis, s: S) -> Result<S::Ok, S::Error> {
    analysis_json(a).serialize(s)
}

impl Report {
    /// The JSON value of the report (shape: `docs/report-schema.json`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}
