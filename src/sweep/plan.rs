//! The sweep plan: a pure function of the header's numbers, defined in `crate::core::plan` (the
//! run-log validator re-derives it to check every logged trial); re-exported here for the sweep.

pub use crate::core::plan::*;

#[cfg(test)]
pub(crate) use crate::core::plan::tests;
