//! Inputs and commands as a user types them: the CLI (piped and in a pseudo-terminal), the presets, the
//! generated corpora of bad inputs, the reports and their golden files, the run log's lock, the
//! stop grace, and the source's shape rules.

#[path = "../common/mod.rs"]
mod common;

mod claims;
mod cli_report;
mod cli_report_json;
mod cli_report_truth;
mod cli_schedule;
mod cli_targets;
mod cli_transfer;
mod code_shape;
mod corpus_anywhere;
mod corpus_data;
mod corpus_flags;
mod corpus_inputs;
mod golden_reports;
mod presets_bundled;
mod presets_cifar;
mod presets_invalid;
mod presets_user;
mod pty_headless;
mod record_states_what_ran;
mod runlog_lock;
mod stop_grace;
