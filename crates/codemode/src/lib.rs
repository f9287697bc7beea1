//! Code mode: a client sees `search_tools` and `run_code` instead of every tool, and sends one JavaScript
//! program that calls tools, filters and joins their results, and returns only the answer.
//!
//! This crate owns the search index over a catalog (`search`), the static scan of a program's tool names
//! (`scan`), the per-session state of programs — call numbers for `recall`, files for `saveFile` / `readFile`
//! (`session`), each charged to its identity's share (`quota`) —, fair admission of identities to workers and
//! to calls in flight (`fair`), the projection of large values into a compact result (`project`), the parent side of a run
//! (`run`: start the worker through the `sandbox` crate, answer its requests, enforce the wall clock and the
//! output caps) and the worker itself (`worker`: the embedded engine, run in a separate locked-down process).
//! It does not decide whether a call may run: every call a program makes goes to a [`ToolHost`], which the
//! gateway implements with its one governed-call pipeline.

#![deny(clippy::print_stdout)]

mod error;
pub mod fair;
mod host;
pub mod project;
pub mod quota;
pub mod run;
pub mod scan;
pub mod search;
pub mod session;
pub mod worker;

pub use error::{Error, Result};
pub use fair::{FairGate, Permit, TooManyWaiting};
pub use host::{result_value, CallFailure, HostFuture, NestedCall, ToolHost};
pub use quota::{Exceeded, Quota};
pub use run::{
    CallNote, LimitKind, RunEnd, RunLimits, RunReport, Runner, Spares, WorkerCommand, WORKER_EXE,
};
pub use scan::{scan, LiteralCall, Scan};
pub use search::{Hit, SearchIndex, ToolDoc};
pub use session::{CodeSession, Recalled, Shares};
