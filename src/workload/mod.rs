//! Presets: serde types (`spec`) and loading with file:line validation errors (`load`). (The one
//! override/validation path for flags and Setup fields is `sweep::overrides`: it edits a sweep.)
pub mod load;
pub mod spec;
