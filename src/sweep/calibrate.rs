//! The calibration stage of a sweep (`analysis::calibrate`, docs/calibration.md): what a study's
//! workload allows, measured when the sweep starts and recorded in the run log's header
//! ([`facts`]). The rounds' inputs are re-derived from the header by every reader
//! (`analysis::calibrate::inputs_of_header`); the scheduler runs the rounds like any other trials.

use crate::core::calibrate::Facts;
use crate::workload::spec::CALIBRATED_TRIALS_PER_BATCH;
use crate::workload::spec::{Calibrate, Workload};

/// Largest batch size a calibration tries where no training set bounds it (the noisy quadratic
/// model).
pub const MAX_UNBOUNDED_BATCH: usize = 1 << 20;

/// What `w` allows on `workers` data-parallel workers: the powers of two it can train at (its
/// training set, its model's own limits), the training set's size and a training example's
/// FLOPs. Loads the dataset (cached) to count its examples.
pub fn facts(w: &Workload, workers: usize) -> anyhow::Result<Facts> {
    let (n_train, shape) = match &w.dataset {
        Some(d) => {
            let data = crate::data::load_cached(d).map_err(|e| anyhow::anyhow!("{e}"))?;
            let n = match data.as_ref() {
                crate::data::Dataset::Images(i) => i.n_train(),
                crate::data::Dataset::Text(t) => (t.train.len() / t.seq_len.max(1)).max(1),
            };
            (Some(n), Some(crate::train::trainer::input_shape(&data)))
        }
        None => (None, None),
    };
    let cap = n_train.unwrap_or(MAX_UNBOUNDED_BATCH);
    let mut allowed = Vec::new();
    let mut first_problem: Option<String> = None;
    let mut b = 1usize;
    while b <= cap {
        match crate::workload::check::batch_size_problem(w, b, workers) {
            None => allowed.push(b),
            Some(why) if allowed.is_empty() => {
                first_problem.get_or_insert(why);
            }
            Some(_) => {}
        }
        b *= 2;
    }
    anyhow::ensure!(
        !allowed.is_empty(),
        "no batch size (a power of two up to {cap}) can train this workload: {}",
        first_problem.unwrap_or_else(|| "the training set is empty".into())
    );
    let low_limit = match first_problem {
        Some(why) => format!("the smallest batch size the workload trains at ({why})"),
        None => "B = 1".into(),
    };
    let high_limit = match (&w.dataset, n_train) {
        (Some(_), Some(n))
            if w.dataset
                .as_ref()
                .is_some_and(|d| d.is_images() != Some(false)) =>
        {
            format!("the {n} training examples")
        }
        (Some(_), Some(n)) => format!("the training text's {n} windows"),
        _ => format!("the largest batch size the lab tries without a training set ({cap})"),
    };
    let train_flops = match shape {
        Some(s) => w.model.train_flops(s).ok().flatten(),
        None => None,
    };
    Ok(Facts {
        allowed,
        low_limit,
        high_limit,
        n_train,
        train_flops,
    })
}

/// The batch sizes a study whose calibration stage chooses them is measured at before it starts
/// (the thread layout, fused groups): B_ref/4, B_ref and 4·B_ref, those the workload allows.
pub fn stand_in_batches(w: &Workload, workers: usize) -> Vec<usize> {
    let r = crate::analysis::calibrate::REF_BATCH;
    let v: Vec<usize> = [r / 4, r, r * 4]
        .into_iter()
        .filter(|&b| crate::workload::check::batch_size_problem(w, b, workers).is_none())
        .collect();
    if v.is_empty() {
        vec![r]
    } else {
        v
    }
}

/// Trials per batch size of a study whose preset does not say.
pub fn default_trials(c: &Calibrate) -> Option<usize> {
    c.any().then_some(CALIBRATED_TRIALS_PER_BATCH)
}
