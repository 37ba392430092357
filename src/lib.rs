//! scaling-lab: measure how batch size and data parallelism change steps-to-target.
//!
//! The engine (everything but `tui`) never imports a UI crate and never prints: it emits events.

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
pub mod tui;
pub mod workload;
