//! The wgpu tier: the engine and the CLI on a wgpu adapter (Mesa's lavapipe in CI, where a missing
//! adapter is fatal with `SCALING_LAB_REQUIRE_WGPU=1`; elsewhere these tests print `SKIPPED` and pass).

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod engine;
mod tui_devices;
