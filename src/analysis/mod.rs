//! Analysis of measured sweeps, on `core` types only (no view, no trainer): the steps-to-target
//! curve (best trial per batch size, bootstrap intervals, the S_min(1 + B_crit/B) fit, the ordered
//! regime partition, search-space edges, LR rules) in `curve`, and the time-to-target projection
//! over device counts and links in `projection`.

pub mod curve;
pub mod projection;

pub use curve::*;
