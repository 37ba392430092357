//! Presets: serde types (`spec`) and loading with file:line validation errors (`load`).
pub mod load;
pub mod spec;
