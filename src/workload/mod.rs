//! Presets: serde types (`spec`), loading with file:line validation errors (`load`) and what each
//! optimizer and runner uses (`applied`), a study from a model and a dataset alone (`study`). (The one override/validation path for flags and Setup
//! fields is `sweep::overrides`: it edits a sweep.)
//!
//! Layering: imports `data` and `model` (a preset's `[workload.model]` is a `model::ModelSpec`: each
//! family validates its own fields).
pub mod applied;
pub mod check;
mod check_transfer;
pub mod load;
pub mod presets;
pub mod spec;
pub mod study;
