//! The Burn trainer: data-parallel workers, mixed precision, loss scaling, noise scale, the
//! bucketed gradient exchange, and the measurement loop every runner (NQM included) drives.

pub mod allreduce_bench;
pub mod bench;
pub mod exchange;
pub mod grads;
pub mod meter;
pub mod noise;
pub mod oom;
pub mod optim;
pub mod runner;
pub mod scaler;
pub mod trainer;
pub mod wgpu;

pub use runner::{runner_for, BurnRunner};
pub use trainer::{run_trial, TrainOptions};
