//! The engine: real short trainings through the trainer (one trial, fused groups, data-parallel
//! workers, the gradient exchange, multi-node over loopback, every registered model family saved
//! and resumed) held against their references.

#[path = "../common/mod.rs"]
mod common;

mod exchange;
mod families;
mod group;
mod multinode;
mod semantics;
mod train;
mod transfer;
