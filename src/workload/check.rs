//! The second pass of loading a preset: [`check`] validates the values (ranges, model/dataset/metric
//! compatibility, sizes against the data and memory) and returns each problem with the key it is
//! about; `load` locates the key in the file.

use crate::data::spec::DatasetSpec;
use crate::model::{Input, InputShape};
use crate::workload::spec::{Decay, Metric, Preset, SearchSpace, SweepDefaults, Workload};

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

pub(super) fn key(path: &[&'static str]) -> Vec<KeySeg> {
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
    check_targets(&p.workload, &mut out);
    check_model_sizes(&p.workload, &mut out);
    check_dataset(&p.workload, &mut out);
    super::check_transfer::check_transfer(&p.workload, &mut out);
    check_measurement(&p.workload, &mut out);
    check_defaults(&p.workload, &mut out);
    check_search(&p.search, &mut out);
    check_sweep(
        &p.sweep,
        p.calibrate.is_some_and(|c| c.batch_sizes),
        &mut out,
    );
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

/// The metric a workload's model family is measured by: validation error for an image model,
/// bits per byte for a language model, the expected loss for the noisy quadratic model.
pub fn family_metric(w: &Workload) -> Metric {
    match w.model.family().input() {
        Input::Images => Metric::ValError,
        Input::Text => Metric::ValBpc,
        Input::None => Metric::ExpectedLoss,
    }
}

/// "ResNet-8 w4 on mnist, momentum": a study's model, dataset and optimizer in words (the
/// description of a study whose file gives none).
pub fn study_words(p: &super::spec::Preset) -> String {
    let w = &p.workload;
    let data = w
        .dataset
        .as_ref()
        .map(|d| format!(" on {}", d.label()))
        .unwrap_or_default();
    format!("{}{data}, {}", w.model.family().label(), w.optimizer.name())
}

/// Model ↔ dataset ↔ metric, and the target value in the metric's range.
fn check_model_and_target(w: &Workload, out: &mut Vec<Problem>) {
    let (needs, metric) = match w.model.family().input() {
        Input::Images => (Some(true), Metric::ValError),
        Input::Text => (Some(false), Metric::ValBpc),
        Input::None => (None, Metric::ExpectedLoss),
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
            // (a dataset that names no valid source is `check_dataset`'s)
            if let Some(is_img) = d.is_images().filter(|&i| i != images) {
                bad(
                    out,
                    &["workload", "dataset", if d.format.is_some() { "format" } else { "name" }],
                    format!(
                        "model `{model}` is {} but dataset `{}` is {}",
                        if images { "an image classifier" } else { "a language model" },
                        d.label(),
                        if is_img {
                            "images: use shakespeare, reviews or format = \"bytes\" / \"tokens\""
                        } else {
                            "text: use digits, mnist, fashion, cifar10 or an image format"
                        }
                    ),
                );
            }
        }
        (None, None) => {}
    }
    // a language model's other metric: its transfer probe's accuracy (`check_transfer`)
    let transfer = w.target.metric == Metric::TransferAcc && metric == Metric::ValBpc;
    if w.target.metric != metric && !transfer {
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
    let bits = max_bits(w);
    let bpc_range = if bits == 8.0 {
        "val_bpc must be in (0, 8) bits per byte".to_string()
    } else {
        format!("val_bpc must be in (0, {bits:.3}) bits per token (log2 of the vocabulary)")
    };
    let range = match w.target.metric {
        Metric::ValError if !in_open_unit(v) => Some("val_error must be in (0, 1)".to_string()),
        Metric::ValBpc if !(v > 0.0 && v < bits) => Some(bpc_range),
        Metric::ExpectedLoss if !positive(v) => Some("nqm_loss must be > 0".to_string()),
        Metric::TransferAcc if !in_open_unit(v) => {
            Some("transfer_acc must be in (0, 1)".to_string())
        }
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

/// The bits of a uniform guess over the workload's vocabulary: the largest val_bpc target
/// (8 for byte-level text).
fn max_bits(w: &Workload) -> f64 {
    let vocab = w
        .dataset
        .as_ref()
        .and_then(|d| d.vocab_size())
        .unwrap_or(256);
    (vocab as f64).log2()
}

/// The ladder: looser rungs read from the same trials; the goal is the strictest.
fn check_targets(w: &Workload, out: &mut Vec<Problem>) {
    if w.target.metric.maximised() {
        return; // no ladder for a maximised metric (`check_transfer` says so)
    }
    let v = w.target.value;
    if w.targets.len() > MAX_TARGETS {
        bad(
            out,
            &["workload", "targets"],
            format!("{} targets: at most {MAX_TARGETS}", w.targets.len()),
        );
    }
    for (i, &t) in w.targets.iter().enumerate() {
        let in_range = match w.target.metric {
            Metric::ValError => in_open_unit(t),
            Metric::ValBpc => t > 0.0 && t < max_bits(w),
            Metric::ExpectedLoss => positive(t),
            Metric::TransferAcc => in_open_unit(t),
        };
        if !in_range {
            bad(
                out,
                &["workload", "targets"],
                format!(
                    "targets: {t} is out of range for {}",
                    w.target.metric.name()
                ),
            );
        } else if t <= v {
            bad(
                out,
                &["workload", "targets"],
                format!(
                    "targets: {t} is not looser than the goal {v}: target.value is the strictest \
                     rung (trials run until they meet it), so set it to the strictest value and list \
                     the looser ones in targets"
                ),
            );
        } else if w.targets[..i].contains(&t) {
            bad(
                out,
                &["workload", "targets"],
                format!("targets: {t} is listed twice"),
            );
        }
    }
}

/// The model family's own fields (`Family::problems`: sizes > 0, heads dividing d_model, the
/// NQM's preconditioning power, …).
fn check_model_sizes(w: &Workload, out: &mut Vec<Problem>) {
    for (k, message) in w.model.family().problems() {
        bad(out, &["workload", "model", k], message);
    }
}

/// The dataset's own settings: its source (a named dataset, or a format with the keys it
/// takes: `data::spec`), ranges, augmentation (which keys apply to it is `unused_key`).
fn check_dataset(w: &Workload, out: &mut Vec<Problem>) {
    let Some(d) = &w.dataset else { return };
    if let Err(p) = d.source() {
        let mut key = vec![KeySeg::Key("workload"), KeySeg::Key("dataset")];
        key.extend(p.key.iter().map(|k| KeySeg::Key(k)));
        out.push(Problem {
            key,
            message: p.message,
        });
    }
    if let Some(a) = d.augment {
        let side = d
            .geometry()
            .map(|g| g.height.min(g.width) / d.downsample.unwrap_or(1).max(1));
        if a.crop > 64 || side.is_some_and(|s| a.crop >= s) {
            bad(
                out,
                &["workload", "dataset", "augment", "crop"],
                format!(
                    "augment crop = {}: the padding must be smaller than the images{}",
                    a.crop,
                    side.map_or(" (at most 64)".to_string(), |s| format!(" ({s} pixels)"))
                ),
            );
        }
    }
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

/// The search space, with the same bounds the plan samples within (`core::plan`).
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

/// Sweep defaults: counts > 0, batch sizes > 0, distinct and divisible by the workers (none
/// where the calibration chooses them).
fn check_sweep(sw: &SweepDefaults, calibrated_sizes: bool, out: &mut Vec<Problem>) {
    if sw.batch_sizes.is_empty() && !calibrated_sizes {
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
    if let Some(rel) = sw.confirm_until {
        if !(rel.is_finite() && rel > 0.0 && rel < 1.0) {
            bad(
                out,
                &["sweep", "confirm_until"],
                format!(
                    "confirm_until = {rel}: give the confirmed S(B)'s relative half-width to \
                     reach, in (0, 1), e.g. 0.15 for ±15 %"
                ),
            );
        } else if sw.confirm.is_none() {
            bad(
                out,
                &["sweep", "confirm_until"],
                "confirm_until has no effect without a confirm stage (confirm = \"off\"): set \
                 confirm = \"KxR\" or remove it"
                    .into(),
            );
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
/// Largest number of rungs in a ladder of targets (`workload.targets`).
pub const MAX_TARGETS: usize = 32;
/// Smallest validation set whose error rate is worth a target (one image = 0 % or 100 %).
pub const MIN_VAL_EXAMPLES: usize = 10;

/// (training examples, validation examples used) of an image workload whose dataset's size is
/// known before reading it (a named dataset), computed exactly as the split does; `None` for
/// files on disk (checked when they are read), text and the NQM.
pub fn image_split_sizes(w: &super::spec::Workload) -> Option<(usize, usize)> {
    let d = w.dataset.as_ref()?;
    let g = d.geometry()?;
    let (n_train, n_val) = match g.val {
        Some(v) => (g.train, v),
        None => {
            if !(d.val_fraction > 0.0 && d.val_fraction < 1.0) {
                return None;
            }
            let n_val = crate::data::split::val_count(g.train, d.val_fraction).min(g.train);
            (g.train - n_val, n_val)
        }
    };
    let used = d.max_val.map_or(n_val, |m| m.min(n_val));
    Some((n_train, used))
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
    if let Some(why) = w.model.family().batch_problem(b / workers.max(1)) {
        return Some(format!("batch size {b}: {why}"));
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
    crate::data::read::available_memory()
}

/// The input shape a preset's model is built for, as far as the preset says (a named image
/// dataset's geometry after `downsample`; files: 1 channel, 10 classes; text: its vocabulary and
/// `seq_len`): what the memory check counts parameters on.
pub fn nominal_shape(w: &Workload) -> InputShape {
    let d = w.dataset.as_ref();
    let g = d.and_then(|d| d.geometry());
    let (c, h, wd) = d
        .and_then(|d| {
            let g = d.geometry()?;
            let f = d.downsample.unwrap_or(1).max(1);
            Some((g.channels, (g.height / f).max(1), (g.width / f).max(1)))
        })
        .unwrap_or((1, 1, 1));
    InputShape {
        channels: c,
        height: h,
        width: wd,
        classes: g.map_or(10, |g| g.classes),
        vocab: d.and_then(|d| d.vocab_size()).unwrap_or(256),
        seq_len: d.map_or(1, |d| d.seq_len.clamp(1, 1 << 16)),
    }
}

/// Trained parameters of one member, counted on the network the family builds for
/// [`nominal_shape`] (f64: absurd sizes must not overflow); `None` while the family reports
/// problems with its fields (they are reported instead) or the network cannot be built.
pub fn model_params(w: &Workload) -> Option<f64> {
    if !w.model.family().problems().is_empty() {
        return None;
    }
    w.model.param_count(nominal_shape(w)).ok()
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
    if let Some(k) = sw
        .fuse
        .members()
        .filter(|&k| k > crate::workload::spec::MAX_FUSE)
    {
        bad(
            out,
            &["sweep", "fuse"],
            format!(
                "fuse = {k}: at most {} trials in one group (or \"off\", \"auto\")",
                crate::workload::spec::MAX_FUSE
            ),
        );
    }
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
    if let Some(g) = d.geometry() {
        let (h, wd) = (g.height, g.width);
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
    } else if d.is_images() == Some(false) && d.downsample.is_some_and(|f| f > 1) {
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
    let Some(params) = model_params(w) else {
        return;
    };
    let replicas =
        (sw.workers.clamp(1, MAX_WORKERS) * sw.concurrency.clamp(1, MAX_CONCURRENCY)) as f64;
    let need = params * 16.0 * replicas;
    let limit = memory.map_or(f64::INFINITY, |m| m as f64);
    let model_key = w.model.family().size_key();
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
