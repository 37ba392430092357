//! scaling-lab: measure how batch size and data parallelism change steps-to-target.
//!
//! The engine (everything but `tui`) never imports a UI crate and never prints: it emits events.
//!
//! The top-level modules are layered; each imports only from those before it (bottom to top):
//!
//! ```text
//! data → model → workload → core → transfer → train, nqm → analysis → runlog → sweep → report → cluster → cli, tui
//! ```
//!
//! `tests/inputs/code_shape.rs` fails on an import cycle between them (and on a function over 150 lines
//! or a source file over 900 lines). Each folder's `mod.rs` says what lives there and what it may
//! import.

pub mod analysis;
pub mod cluster;
pub mod core;
pub mod data;
pub mod model;
pub mod nqm;
pub mod report;
pub mod runlog;
pub mod sweep;
pub mod train;
pub mod transfer;
pub mod tui;
pub mod workload;
