//! The Burn trainer: data-parallel workers, mixed precision, loss scaling, noise scale.

pub mod grads;
pub mod noise;
pub mod optim;
pub mod scaler;
pub mod trainer;

pub use trainer::{run_trial, TrainOptions};
pub mod runner;
pub use runner::{runner_for, BurnRunner};
pub mod bench;
