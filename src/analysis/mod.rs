//! Analysis of measured sweeps that depends only on `core` types (never on `sweep`, `train` or a
//! view): the time-to-target projection over device counts and links.

pub mod projection;
