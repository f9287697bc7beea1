//! The parent side of one run: start the worker (the `toolgate-codemode-worker` executable beside toolgate,
//! through the `sandbox` crate's piped mode), send it the program, answer its requests — tool calls through the [`ToolHost`], `recall`, `saveFile`,
//! `readFile` through the [`CodeSession`] — and end it: on its answer, at the wall-clock deadline (the worker's
//! process group is killed, since the engine's own interrupt misses some native loops), or when it breaks a cap.
//!
//! `serve` is one run from start to end (spawn, layers, program, requests), `channel` the worker's pipes as
//! queues, `spawner` the thread workers are started from, `warm` the spare workers a runner keeps ready; the protocol itself is documented in `worker::protocol`.

use crate::host::ToolHost;
use crate::session::CodeSession;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod channel;
mod serve;
mod spawner;
mod warm;

/// The worker's executable, installed beside `toolgate` (a binary of the same package, so `cargo build`, `cargo
/// install` and the tests build both).
pub const WORKER_EXE: &str = "toolgate-codemode-worker";

/// How to start a worker: its executable, and arguments it ignores (a label for a process list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl WorkerCommand {
    /// The worker installed beside `exe` (the running `toolgate`), without arguments. Whether it is there is
    /// found out when a worker starts, which then says where it was looked for.
    pub fn beside(exe: &std::path::Path) -> Self {
        Self {
            program: exe.with_file_name(WORKER_EXE),
            args: Vec::new(),
        }
    }
}

/// The limits of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLimits {
    /// Wall clock from start to answer (`sandbox.timeoutSeconds`, 5 s … 86,400 s, default 120 s).
    pub wall: Duration,
    /// The engine's memory limit.
    pub memory_bytes: usize,
    /// Calls one run may make.
    pub max_calls: u32,
    /// The returned value, serialised, before it is cut with a note.
    pub result_bytes: usize,
    /// `console.log` output kept, before it is cut with a note.
    pub log_bytes: usize,
    /// Sandbox layers that must be active, else the run does not start (names as `sandbox::Layer::as_str`).
    pub require: Vec<String>,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            wall: Duration::from_secs(120),
            memory_bytes: 64 << 20,
            max_calls: 1000,
            result_bytes: 1 << 20,
            log_bytes: 64 << 10,
            require: Vec::new(),
        }
    }
}

/// A limit a run broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    WallClock,
    Memory,
    Output,
    Calls,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// The program returned this value (`undefined` is `null`).
    Returned(Value),
    /// The program threw (or its promise rejected) and nothing caught it.
    Threw { message: String },
    /// A limit ended it; the worker is gone.
    Limit { kind: LimitKind, message: String },
    /// The worker could not start, lock itself down as required, or broke the protocol.
    WorkerFailed { message: String },
}

/// One call of the run, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct CallNote {
    pub seq: u32,
    pub name: String,
    /// `None` when the call gave a result, else why not.
    pub error: Option<String>,
}

/// Everything a run leaves for its answer to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub end: RunEnd,
    pub calls: Vec<CallNote>,
    /// Captured `console.log` lines, cut at the limit.
    pub log: String,
    pub log_truncated: bool,
    /// The worker's sandbox layers as it reported them (`name` → `active` | `unavailable: why` | `failed: why`).
    pub layers: Vec<(String, String)>,
    pub elapsed: Duration,
}

/// A runner's spare workers at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spares {
    /// Started, locked down and waiting for a program.
    pub waiting: usize,
    /// On their way.
    pub starting: usize,
}

/// Starts workers and runs programs in them. Clones share the spare workers (when it keeps some), so one runner
/// cloned where it is needed serves every run; the spares are killed with the last clone.
#[derive(Debug, Clone)]
pub struct Runner {
    pub command: WorkerCommand,
    /// A spare started under other limits than these is not used.
    pub limits: RunLimits,
    spare: Option<Arc<warm::Slot>>,
}

impl Runner {
    /// A runner that starts a worker for each run (no spare).
    pub fn new(command: WorkerCommand, limits: RunLimits) -> Self {
        Self {
            command,
            limits,
            spare: None,
        }
    }

    /// Keeps up to `spares` workers started and locked down, waiting for the next programs (none when 0): a run
    /// then skips the spawn and the lockdown. Spares are started by `prepare`, `warm_up`, or after a run, so a
    /// runner never asked for one starts nothing; each costs one idle process (its engine's heap is what the
    /// program allocates, under the run's memory limit).
    pub fn with_spares(mut self, spares: usize) -> Self {
        self.spare = (spares > 0).then(|| Arc::new(warm::Slot::new(spares)));
        self
    }

    /// Starts the spares in the background, without waiting for them (a no-op without spares, or when they are
    /// waiting or starting already): a gateway calls it when a client that may run programs arrives, so its
    /// first run finds one. Needs a tokio runtime.
    pub fn prepare(&self) {
        if let Some(slot) = &self.spare {
            slot.refill(self.command.clone(), self.limits.clone());
        }
    }

    /// How many spares wait and how many are starting (`None` for a runner that keeps none): for status and
    /// tests.
    pub fn spares(&self) -> Option<Spares> {
        self.spare.as_ref().map(|slot| slot.counts())
    }

    /// Has the spares ready (a no-op without them): for a measurement between runs, and tests, so that each run
    /// finds one.
    pub async fn warm_up(&self) {
        if let Some(slot) = &self.spare {
            slot.warm_up(self.command.clone(), self.limits.clone())
                .await;
        }
    }

    /// Runs `program` (the body of an async function) to its end. Never panics and never leaves the worker
    /// running: at the wall-clock deadline, and when this future is dropped (a client cancelling), the worker's
    /// whole process tree is killed.
    pub async fn run(
        &self,
        program: &str,
        host: &dyn ToolHost,
        session: &CodeSession,
    ) -> RunReport {
        let started = Instant::now();
        let mut report = RunReport {
            end: RunEnd::Returned(Value::Null),
            calls: Vec::new(),
            log: String::new(),
            log_truncated: false,
            layers: Vec::new(),
            elapsed: Duration::ZERO,
        };
        // The pool is topped up once this run is over, however it ends: a spare started during the run would
        // take the CPU from it.
        let _refill = Refill(self);
        let spare = match &self.spare {
            Some(slot) => slot.take_or_wait(&self.command, &self.limits).await,
            None => None,
        };
        let on_spare = spare.is_some();
        let work = async {
            let end = serve::run(
                &self.command,
                &self.limits,
                program,
                spare,
                host,
                session,
                &mut report,
            )
            .await;
            // A spare that died after it was checked closes its output before saying anything: the program never
            // ran (no call, no log), so it runs once more in a worker started for it.
            let silent = report.calls.is_empty() && report.log.is_empty();
            match end {
                RunEnd::WorkerFailed { message }
                    if on_spare && silent && message == "the worker exited without an answer" =>
                {
                    serve::run(
                        &self.command,
                        &self.limits,
                        program,
                        None,
                        host,
                        session,
                        &mut report,
                    )
                    .await
                }
                end => end,
            }
        };
        // The worker lives inside `work`: when the deadline drops it, the worker's tree is killed with it.
        let end = match tokio::time::timeout(self.limits.wall, work).await {
            Ok(end) => end,
            Err(_) => RunEnd::Limit {
                kind: LimitKind::WallClock,
                message: format!(
                    "the program ran past its wall clock of {} s; its worker was killed",
                    self.limits.wall.as_secs_f64()
                ),
            },
        };
        report.end = end;
        report.elapsed = started.elapsed();
        report
    }
}

/// Tops up a runner's spares when dropped.
struct Refill<'a>(&'a Runner);

impl Drop for Refill<'_> {
    fn drop(&mut self) {
        self.0.prepare();
    }
}
