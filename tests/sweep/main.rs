//! Sweeps end to end: the scheduler, the confirm stage and adaptive rounds, run logs and resume
//! after a kill, targets read exactly from logged curves, and Slurm job arrays on a local cluster.

#[path = "../common/mod.rs"]
mod common;

mod adaptive;
mod calibrate;
mod confirm;
mod data_sources;
mod kill_resume;
mod resume_exact;
mod runlog;
mod scheduler;
mod slurm;
mod targets_exact;
