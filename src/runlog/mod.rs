//! Run logs: one JSONL file per sweep (schema in docs/runlog-schema.json): the writer (locked,
//! append-only), the reader (tolerant of a torn tail), the batch_science import, writing export
//! files (`export`; what they contain is `report::export`) and the saved `bench --allreduce`
//! table next to a log (`link_table`).
//!
//! Layering: imports `data`, `workload`, `core` and `analysis` (a log's analysis is
//! `analysis::analyze` of its records).
//!
//! Line 1 is a `header`, then one `trial` line per finished trial (written, flushed and fsynced
//! before the scheduler starts the next trial in that slot), then a `summary` when the sweep ends or
//! is interrupted cleanly. A resumed sweep appends to the same file (possibly after a summary).

pub mod batch_science;
pub mod export;
pub mod link_table;
pub mod reader;
pub mod validate;
mod validate_transfer;
pub mod writer;

pub use reader::{read_run_log, LogStatus, RunLog, RunLogError, RunLogTail};
pub use writer::{resolve_runs_dir, RunLogWriter, RUNS_DIR_ENV};
