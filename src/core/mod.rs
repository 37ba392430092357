//! Types shared by the engine, the sweep machinery, the run log and both views: trials and
//! outcomes (`trial`), the `TrialRunner` trait (`runner`), events (`events`), run-log lines
//! (`record`), the analysis's input and result types (`analysis`), the one measurement loop every
//! runner drives (`meter`), the sweep plan every reader re-derives (`plan`), trial-id layouts
//! (`widen`, `confirm`), trial counts per stage (`stages`), device rules (`devices`), the float
//! mode of computing threads (`float_mode`) and what a trial records of transfer (`transfer`).
//! Keep this module free of Burn and of any UI crate.
//!
//! Layering: imports `data`, `model` and `workload` only.

pub mod analysis;
pub mod calibrate;
pub mod confirm;
pub mod devices;
pub mod events;
pub mod float_mode;
pub mod meter;
pub mod plan;
pub mod record;
pub mod runner;
pub mod schedule;
pub mod stages;
pub mod transfer;
pub mod trial;
pub mod widen;

/// SplitMix64 (Steele et al.): a fixed, portable mixing function.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
