//! The worker's protocol: JSON lines on the worker's standard input (from the parent) and standard output (to
//! the parent), nothing else, every line bounded by its reader.
//!
//! ```text
//! parent                                   worker
//!   start {limits, filter}          ──►      builds the engine, locks itself down
//!                                   ◄──    ready {layers}
//!   run {program}                   ──►    (only when every required layer is active)
//!                                   ◄──    call {id, name, arguments} | recall {id, n}
//!                                          | save {id, name, data} | read {id, path}   (any number, any order)
//!                                   ◄──    log {text, truncated}
//!   reply {id, reply: value | error} ──►   settles the promise of request `id`
//!                                   ◄──    done {end: returned | threw | limit | failed}, then it exits
//! ```
//!
//! Values cross as JSON text only: the worker stringifies what a program passes and parses what the parent
//! answers, so nothing a program does to an object or a prototype reaches the parent, and nothing the parent
//! sends is more than data to the program. Neither side trusts the other's lines beyond their type: a line
//! that does not parse, is too long, or names an unknown request ends the run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the parent sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum ToWorker {
    /// The first line: how to build the engine and lock down.
    Start {
        limits: WorkerLimits,
        /// The syscall allowlist's programs ([`sandbox::WorkerFilter::to_words`]), or `None` when the parent
        /// could not compile one (the layer is then reported unavailable).
        filter: Option<Vec<Vec<u64>>>,
    },
    /// The program, the body of an async function.
    Run { program: String },
    /// The answer to request `id`.
    Reply { id: u64, reply: Reply },
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Reply {
    /// The promise resolves to this value.
    Value { value: Value },
    /// The promise rejects with an `Error` whose `code` and `message` are these.
    Error { code: String, message: String },
}

/// The engine's limits, as the worker applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkerLimits {
    /// The engine's heap.
    pub memory_bytes: usize,
    /// The engine's stack.
    pub stack_bytes: usize,
    /// The engine's own budget from `run` on, after which its interrupt handler stops the program.
    pub budget_ms: u64,
    /// `console` output sent, before it is cut with a note.
    pub log_bytes: usize,
    /// The returned value, serialised; past it the run ends at its output limit.
    pub result_bytes: usize,
    /// The longest line either side sends (a request's arguments, a reply's value).
    pub line_bytes: usize,
}

/// What the worker sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum FromWorker {
    /// Locked down; each layer it set on itself with its state (`active`, `unavailable: why`, `failed: why`).
    Ready { layers: Vec<(String, String)> },
    /// `call(name, arguments)`.
    Call {
        id: u64,
        name: String,
        arguments: Value,
    },
    /// `recall(n)`.
    Recall { id: u64, n: u32 },
    /// `saveFile(name, data)`.
    Save { id: u64, name: String, data: String },
    /// `readFile(path)`.
    Read { id: u64, path: String },
    /// One `console` line; `truncated` when it was cut at the log limit (nothing more follows).
    Log { text: String, truncated: bool },
    /// The program's end; the worker exits right after.
    Done { end: WorkerEnd },
}

/// How the program ended, as the worker saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum WorkerEnd {
    Returned {
        value: Value,
    },
    Threw {
        message: String,
    },
    /// A limit of the engine's: `wall_clock`, `memory` or `output`.
    Limit {
        limit: String,
        message: String,
    },
    /// The worker could not do its part (a broken start message, an engine that did not build).
    Failed {
        message: String,
    },
}

/// The longest `start` or `run` line a worker reads: the program and the filter, with room to spare.
pub(crate) const MAX_PROGRAM_LINE: usize = 4 << 20;

/// A layer's state as it is reported: `active`, `not requested`, `unavailable: why`, `failed: why`.
pub(crate) fn state_text(state: &sandbox::LayerState) -> String {
    match state {
        sandbox::LayerState::Active => "active".to_owned(),
        sandbox::LayerState::NotRequested => "not requested".to_owned(),
        sandbox::LayerState::Unavailable(why) => format!("unavailable: {why}"),
        sandbox::LayerState::Failed(why) => format!("failed: {why}"),
    }
}
