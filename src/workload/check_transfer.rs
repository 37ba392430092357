//! The checks of a transfer probe's settings (`[workload.transfer]`, `[workload.dataset] probe`,
//! the `transfer_acc` metric): each problem located at its key, like every other preset check.

use super::check::{key, Problem};
use super::spec::{Metric, Workload};

fn bad(out: &mut Vec<Problem>, path: &[&'static str], message: String) {
    out.push(Problem {
        key: key(path),
        message,
    });
}

/// The most labelled sentences a probe may hold out of the reviews' text.
pub const MAX_PROBE_SENTENCES: usize = 6000;

/// A probe's sentences on a labelled text, the probe on a language model, a `transfer_acc`
/// target with a probe that runs at every evaluation and no ladder.
pub(super) fn check_transfer(w: &Workload, out: &mut Vec<Problem>) {
    let probe = w.dataset.as_ref().and_then(|d| d.probe.map(|p| (d, p)));
    if let Some((d, p)) = probe {
        // only the bundled reviews entry has labelled sentences (a format's files have none)
        if d.format.is_some() || d.name.as_deref() != Some("reviews") {
            bad(
                out,
                &["workload", "dataset", "probe"],
                "probe sentences are labelled movie reviews: set name = \"reviews\"".into(),
            );
        }
        if p.total() > MAX_PROBE_SENTENCES {
            bad(
                out,
                &["workload", "dataset", "probe"],
                format!(
                    "probe = {{ train = {}, val = {}, test = {} }}: {} sentences — at most {MAX_PROBE_SENTENCES} of the 10,568 review sentences (the rest is the language model's text)",
                    p.train, p.val, p.test, p.total()
                ),
            );
        }
        if p.train < 2 || p.val < 1 || p.test < 1 {
            bad(
                out,
                &["workload", "dataset", "probe"],
                format!(
                    "probe = {{ train = {}, val = {}, test = {} }}: the probe needs at least 2 / 1 / 1 sentences",
                    p.train, p.val, p.test
                ),
            );
        }
    }
    let maximised = w.target.metric == Metric::TransferAcc;
    match w.transfer {
        None if maximised => bad(
            out,
            &["workload", "target", "metric"],
            "transfer_acc is a probe's accuracy: add a [workload.transfer] table (and probe = { train, val, test } under [workload.dataset])".into(),
        ),
        None => {}
        Some(_) if !w.model.is_language_model() => bad(
            out,
            &["workload", "transfer"],
            format!(
                "a transfer probe reads a language model's states; model `{}` is not one",
                w.model.short_name()
            ),
        ),
        Some(_) if probe.is_none() => bad(
            out,
            &["workload", "transfer"],
            "a transfer probe needs its labelled sentences: add probe = { train = 2000, val = 500, test = 1000 } under [workload.dataset]".into(),
        ),
        Some(t) if maximised && t.every > 1 => bad(
            out,
            &["workload", "transfer", "every"],
            format!(
                "every = {}: a transfer_acc target probes at every evaluation (thin the evaluations with eval_every / eval_growth)",
                t.every
            ),
        ),
        Some(_) => {}
    }
    if maximised && !w.targets.is_empty() {
        bad(
            out,
            &["workload", "targets"],
            "a ladder of targets is read for minimised metrics (error, bits per byte); transfer_acc has its goal only".into(),
        );
    }
}
