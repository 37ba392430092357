//! The Burn trainer: data-parallel workers, mixed precision (`dtype`), loss scaling, noise scale,
//! the bucketed gradient exchange, what a multi-node trial needs (`multinode`: the collective
//! configuration and the group's loss), throughput benchmarks; the measurement loop it drives is
//! `core::meter` (re-exported here).
//!
//! Layering: imports `data`, `workload`, `core`, `model` and `transfer` (never `nqm`: the factory that picks
//! Burn or the NQM is `sweep::runners`).

pub mod allreduce_bench;
pub mod bench;
pub mod bench_fused;
pub mod bench_peer;
pub mod bench_plan;
pub mod device_check;
pub mod dtype;
pub mod exchange;
pub mod fit_probe;
pub mod grads;
pub mod kernel_cache;
pub mod multinode;
pub mod noise;
pub mod oom;
pub mod optim;
mod options;
pub mod runner;
mod sampler;
pub mod scaler;
mod stages;
pub mod trainer;
mod transfer;
pub mod wgpu;
mod worker;

pub use runner::BurnRunner;
pub use trainer::{run_trial, TrainOptions};
