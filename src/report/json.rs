//! The JSON renderer: `--json` of `report`, `sweep` and the cluster front end (shape:
//! `docs/report-schema.json`), and the analysis as the JSON outputs show it — the analysis's
//! numbers with its notes worded (`notes::note_text`), as a reader expects them.

use serde::Serialize;

use super::notes::note_text;
use super::Report;
use crate::core::analysis::{Analysis, Readout};

/// The analysis as the JSON outputs show it: its fields, the notes in words, and one meaning
/// per word in `per_batch` — `steps`/`steps_ci` are S(B) as the curve reads it (`readout`), the
/// best trial's are `best_trial_steps`/`best_trial_ci` beside them, `on_curve` says whether
/// enough trials are behind `steps` for the curve (`analysis::evidence`).
pub fn analysis_json(a: &Analysis) -> serde_json::Value {
    use serde_json::json;
    let mut v = serde_json::to_value(a).unwrap_or(serde_json::Value::Null);
    if let Some(o) = v.as_object_mut() {
        let notes: Vec<String> = a.notes.iter().map(note_text).collect();
        o.insert("notes".into(), json!(notes));
        if let Some(rows) = o.get_mut("per_batch").and_then(|p| p.as_array_mut()) {
            for (row, p) in rows.iter_mut().zip(&a.per_batch) {
                let Some(r) = row.as_object_mut() else {
                    continue;
                };
                let best = r.remove("steps").unwrap_or(serde_json::Value::Null);
                let best_ci = r.remove("steps_ci").unwrap_or(serde_json::Value::Null);
                let ci = match a.readout {
                    Readout::BestTrial => p.steps_ci.map(|[lo, hi]| [Some(lo), Some(hi)]),
                    Readout::Confirmed => p
                        .confirmed
                        .as_ref()
                        .and_then(|c| c.steps_ci)
                        .map(|ci| [Some(ci.lo), ci.hi]),
                };
                r.insert("steps".into(), json!(a.curve_steps(p)));
                r.insert("steps_ci".into(), json!(ci));
                r.insert("best_trial_steps".into(), best);
                r.insert("best_trial_ci".into(), best_ci);
                r.insert("on_curve".into(), json!(a.on_curve_steps(p).is_some()));
            }
        }
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
