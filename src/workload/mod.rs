//! Presets: serde types (`spec`), loading with file:line validation errors (`load`) and the
//! one override/validation path for flags and Setup fields (`overrides`).
pub mod applied;
pub mod load;
pub mod overrides;
pub mod spec;
