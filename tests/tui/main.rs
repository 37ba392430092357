//! The terminal UI: `update` driven by messages and keys, rendered screens (insta snapshots and SVG
//! screenshots), and the real binary in a pseudo-terminal.

#[path = "../common/mod.rs"]
mod common;
mod pty;
mod support;

mod e2e;
mod fit;
mod flags;
mod keys;
mod messages;
mod report;
mod responsive;
mod screens;
mod screenshots;
mod stage_counts;
mod state;
mod sweepdir;
mod target;
