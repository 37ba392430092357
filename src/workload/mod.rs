//! Presets: serde types (`spec`) and loading with file:line validation errors (`load`). (The one
//! override/validation path for flags and Setup fields is `sweep::overrides`: it edits a sweep.)
//!
//! Layering: imports `data` only.
pub mod load;
pub mod spec;
