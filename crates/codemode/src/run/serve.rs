//! One run from the worker's start to its end: start it through the sandbox's piped mode, hand it the limits
//! and the syscall allowlist, check the layers it reports against the required ones, send the program, and
//! answer its requests until it is done.
//!
//! Calls go to the [`ToolHost`] and may overlap (a program's `Promise.all`): each is a future polled here, at
//! most `max_calls` in a run; `recall`, `saveFile` and `readFile` are answered from the [`CodeSession`]. The
//! wall clock is not enforced here but around this future (`Runner::run`), so it also covers a worker stuck in a
//! native loop and a host that does not answer. This module does not decide whether a call may run.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::Poll;

use serde_json::Value;

use super::channel::{encode, Channel, Incoming};
use super::{CallNote, LimitKind, RunEnd, RunLimits, RunReport, WorkerCommand};
use crate::host::{result_value, CallFailure, NestedCall, ToolHost};
use crate::session::{CodeSession, Recalled};
use crate::worker::protocol::{
    state_text, FromWorker, Reply, ToWorker, WorkerEnd, WorkerLimits, MAX_PROGRAM_LINE,
};

/// The smallest engine heap a run gets, whatever its limits say.
const MIN_MEMORY_BYTES: usize = 1 << 20;
/// The engine's stack: deep enough for ordinary recursion, far below the worker thread's own.
const STACK_BYTES: usize = 1 << 20;
/// Address space the worker may map beyond the engine's heap: the binary, its libraries, the C library's
/// arenas and the copies of lines in flight.
const ADDRESS_SPACE_SLACK: u64 = 768 << 20;
/// `recall`, `saveFile` and `readFile` requests one run may make.
const MAX_OTHER_REQUESTS: u32 = 10_000;
/// Room on top of the largest payload for the rest of a line.
const LINE_SLACK: usize = 64 << 10;

/// The syscall allowlist, compiled once per process (it is the same for every worker).
fn filter_words() -> &'static Result<Vec<Vec<u64>>, String> {
    static FILTER: OnceLock<Result<Vec<Vec<u64>>, String>> = OnceLock::new();
    FILTER.get_or_init(|| sandbox::worker_filter().map(|f| f.to_words()))
}

fn failed(message: impl Into<String>) -> RunEnd {
    RunEnd::WorkerFailed {
        message: message.into(),
    }
}

fn limit(kind: LimitKind, message: impl Into<String>) -> RunEnd {
    RunEnd::Limit {
        kind,
        message: message.into(),
    }
}

/// The limits the worker applies to itself, and the largest line it may send or receive.
pub(super) fn worker_limits(limits: &RunLimits) -> WorkerLimits {
    // The engine stops itself a little before the parent would kill it, so a run over time usually ends
    // with the worker's own clear answer and the log it sent.
    let margin = (limits.wall / 10).min(std::time::Duration::from_millis(250));
    WorkerLimits {
        // The engine reads a limit of 0 as none at all; no configuration may mean that.
        memory_bytes: limits.memory_bytes.max(MIN_MEMORY_BYTES),
        stack_bytes: STACK_BYTES,
        budget_ms: u64::try_from(limits.wall.saturating_sub(margin).as_millis())
            .unwrap_or(u64::MAX),
        log_bytes: limits.log_bytes,
        result_bytes: limits.result_bytes,
        line_bytes: (limits.memory_bytes / 4).max(1 << 20),
    }
}

fn mode(limits: &RunLimits, layer: sandbox::Layer) -> sandbox::LayerMode {
    if limits.require.iter().any(|r| r == layer.as_str()) {
        sandbox::LayerMode::Required
    } else {
        sandbox::LayerMode::BestEffort
    }
}

fn spec(command: &WorkerCommand, limits: &RunLimits) -> sandbox::PipedSpec {
    use sandbox::{Layer, LayerMode};
    sandbox::PipedSpec {
        program: command.program.clone(),
        args: command.args.clone(),
        env: Default::default(),
        cwd: "/".into(),
        stderr: sandbox::PipedStderr::Tail,
        layers: sandbox::LayerRequest {
            pid_namespace: mode(limits, Layer::PidNamespace),
            no_network: mode(limits, Layer::NoNetwork),
            landlock: LayerMode::Off,
            writable_paths: Vec::new(),
            protected_paths: Vec::new(),
            private_tmp: false,
            shared_tmp_readable: false,
            socket_filter: LayerMode::Off,
            rlimits: mode(limits, Layer::Rlimits),
            limits: sandbox::Rlimits {
                cpu_seconds: Some(limits.wall.as_secs() + 1),
                address_space_bytes: Some(limits.memory_bytes as u64 + ADDRESS_SPACE_SLACK),
                file_size_bytes: Some(0),
                open_files: None,
                processes: None,
            },
            no_new_privs: mode(limits, Layer::NoNewPrivs),
        },
    }
}

/// The parent's layers as the sandbox set them up (the worker reports Landlock itself), and the environment.
fn parent_layers(worker: &sandbox::Piped) -> Vec<(String, String)> {
    let mut layers = vec![("empty_env".to_owned(), "active".to_owned())];
    for entry in &worker.layers().entries {
        if matches!(
            entry.layer,
            sandbox::Layer::Landlock | sandbox::Layer::SocketFilter
        ) {
            continue;
        }
        layers.push((entry.layer.as_str().to_owned(), state_text(&entry.state)));
    }
    layers
}

/// The first required layer that is not active, as the reason the run does not start.
fn unmet(required: &[String], layers: &[(String, String)]) -> Option<String> {
    required
        .iter()
        .find_map(|name| match layers.iter().find(|(n, _)| n == name) {
            Some((_, state)) if state == "active" => None,
            Some((_, state)) => Some(format!("the required sandbox layer {name} is {state}")),
            None => Some(format!(
                "the required sandbox layer {name} is not a layer of the worker"
            )),
        })
}

/// A worker that was sent `start` and answered `ready`, waiting for its program; the layers are the parent's and
/// the worker's, as a run reports them.
pub(super) struct Started {
    pub(super) channel: Channel,
    pub(super) layers: Vec<(String, String)>,
}

/// Starts a worker and has it lock itself down; on failure, the end of the run and the layers known by then.
pub(super) async fn start(
    command: &WorkerCommand,
    limits: &RunLimits,
) -> Result<Started, (RunEnd, Vec<(String, String)>)> {
    let spec = spec(command, limits);
    let worker = match super::spawner::spawn(spec).await {
        Ok(worker) => worker,
        Err(e) => return Err((failed(not_started(command, &e)), Vec::new())),
    };
    let mut layers = parent_layers(&worker);
    let wl = worker_limits(limits);
    let line_bytes = wl
        .line_bytes
        .max(wl.result_bytes)
        .max(wl.log_bytes)
        .saturating_add(LINE_SLACK);
    let mut channel = match Channel::open(worker, line_bytes) {
        Ok(c) => c,
        Err(e) => return Err((failed(e), layers)),
    };
    let filter = match filter_words() {
        Ok(words) => Some(words.clone()),
        Err(why) => {
            tracing::warn!(%why, "code mode runs without a syscall allowlist");
            None
        }
    };
    channel.send(&ToWorker::Start { limits: wl, filter });
    match channel.next().await {
        Incoming::Message(FromWorker::Ready { layers: own }) => layers.extend(own),
        other => return Err((unexpected(&channel, other), layers)),
    }
    Ok(Started { channel, layers })
}

/// Why a worker did not start; when its executable is missing, where it was looked for and how to get it.
fn not_started(command: &WorkerCommand, why: &str) -> String {
    if command.program.is_file() {
        return format!("the worker did not start: {why}");
    }
    format!(
        "the code-mode worker {} is missing: it is installed beside toolgate, built with it (`cargo build -p \
         toolgate`, `cargo install --path crates/cli`); copy it there with toolgate ({why})",
        command.program.display()
    )
}

/// The first required layer a started worker lacks, as the reason the run does not start.
pub(super) fn lacking(limits: &RunLimits, started: &Started) -> Option<String> {
    unmet(&limits.require, &started.layers)
}

/// Runs the program to its end in `spare` when given (started under these limits, its layers met), else in a
/// worker started now, filling `report` as it goes.
pub(super) async fn run(
    command: &WorkerCommand,
    limits: &RunLimits,
    program: &str,
    spare: Option<Started>,
    host: &dyn ToolHost,
    session: &CodeSession,
    report: &mut RunReport,
) -> RunEnd {
    let run_line = encode(&ToWorker::Run {
        program: program.to_owned(),
    });
    if run_line.len() > MAX_PROGRAM_LINE {
        return failed(format!(
            "the program is {} bytes, over the limit of {MAX_PROGRAM_LINE}",
            program.len()
        ));
    }
    let started = match spare {
        Some(started) => started,
        None => match start(command, limits).await {
            Ok(started) => started,
            Err((end, layers)) => {
                report.layers = layers;
                return end;
            }
        },
    };
    let Started {
        mut channel,
        layers,
    } = started;
    report.layers = layers;
    if let Some(why) = unmet(&limits.require, &report.layers) {
        return failed(why);
    }
    channel.send_line(run_line);
    let reply_bytes = worker_limits(limits).line_bytes;
    let end = serve(&mut channel, limits, reply_bytes, host, session, report).await;
    super::spawner::dispose(channel.worker);
    end
}

type CallFuture<'a> =
    Pin<Box<dyn Future<Output = (u64, u32, Result<Value, CallFailure>)> + Send + 'a>>;

/// The calls in flight, polled together.
struct InFlight<'a>(Vec<CallFuture<'a>>);

impl<'a> InFlight<'a> {
    /// The next call to finish; pending forever while none is in flight.
    async fn next(&mut self) -> (u64, u32, Result<Value, CallFailure>) {
        std::future::poll_fn(|cx| {
            for i in 0..self.0.len() {
                if let Poll::Ready(done) = self.0[i].as_mut().poll(cx) {
                    drop(self.0.swap_remove(i));
                    return Poll::Ready(done);
                }
            }
            Poll::Pending
        })
        .await
    }
}

async fn serve(
    channel: &mut Channel,
    limits: &RunLimits,
    reply_bytes: usize,
    host: &dyn ToolHost,
    session: &CodeSession,
    report: &mut RunReport,
) -> RunEnd {
    let mut in_flight = InFlight(Vec::new());
    let mut made = 0u32;
    // recall, saveFile and readFile requests, bounded too: each reply waits in memory until the worker reads it.
    let mut other_requests = 0u32;
    // Calls asked for and not answered yet, by number.
    let mut open: Vec<u32> = Vec::new();
    loop {
        // What the worker said first: a `done` already read ends the run before a call it never awaited starts.
        let incoming = tokio::select! {
            biased;
            incoming = channel.next() => incoming,
            (id, seq, outcome) = in_flight.next() => {
                open.retain(|&n| n != seq);
                let reply = match outcome.and_then(|result| result_value(&result)) {
                    Ok(value) => {
                        session.record(seq, &value);
                        Reply::Value { value }
                    }
                    Err(failure) => {
                        let (code, message) = match failure {
                            CallFailure::Refused { code, message } => (code, message),
                            CallFailure::Failed { message } => ("CALL_FAILED".to_owned(), message),
                        };
                        if let Some(note) = report.calls.iter_mut().find(|n| n.seq == seq) {
                            note.error = Some(format!("{code}: {message}"));
                        }
                        Reply::Error { code, message }
                    }
                };
                reply_to(channel, id, reply, reply_bytes);
                continue;
            }
        };
        let message = match incoming {
            Incoming::Message(m) => m,
            other => return unexpected(channel, other),
        };
        match message {
            FromWorker::Call {
                id,
                name,
                arguments,
            } => {
                if made >= limits.max_calls {
                    return limit(
                        LimitKind::Calls,
                        format!("the program made more than {} calls", limits.max_calls),
                    );
                }
                made += 1;
                let seq = session.reserve();
                open.push(seq);
                report.calls.push(CallNote {
                    seq,
                    name: name.clone(),
                    error: None,
                });
                let call = NestedCall {
                    seq,
                    name,
                    arguments,
                };
                in_flight
                    .0
                    .push(Box::pin(async move { (id, seq, host.call(call).await) }));
            }
            FromWorker::Recall { .. } | FromWorker::Save { .. } | FromWorker::Read { .. }
                if other_requests >= MAX_OTHER_REQUESTS =>
            {
                return limit(
                    LimitKind::Calls,
                    format!(
                        "the program made more than {MAX_OTHER_REQUESTS} recall, saveFile and readFile requests"
                    ),
                );
            }
            FromWorker::Recall { id, n } => {
                other_requests += 1;
                let found = session.lookup(n);
                let reply = match (found.message(n), found) {
                    (_, Recalled::Kept(value)) => Reply::Value { value },
                    (message, _) => Reply::Error {
                        code: "NO_SUCH_CALL".to_owned(),
                        message: message.unwrap_or_default(),
                    },
                };
                reply_to(channel, id, reply, reply_bytes);
            }
            FromWorker::Save { id, name, data } => {
                other_requests += 1;
                let reply = match session.save_file(&name, &data) {
                    Ok(path) => Reply::Value {
                        value: Value::String(path.display().to_string()),
                    },
                    Err(message) => Reply::Error {
                        code: "FILE_REFUSED".to_owned(),
                        message,
                    },
                };
                reply_to(channel, id, reply, reply_bytes);
            }
            FromWorker::Read { id, path } => {
                other_requests += 1;
                let reply = match session.read_file(std::path::Path::new(&path)) {
                    Ok(text) => Reply::Value {
                        value: Value::String(text),
                    },
                    Err(message) => Reply::Error {
                        code: "FILE_REFUSED".to_owned(),
                        message,
                    },
                };
                reply_to(channel, id, reply, reply_bytes);
            }
            FromWorker::Log { text, truncated } => keep_log(report, limits, &text, truncated),
            FromWorker::Done { end } => {
                // Calls the program never awaited are dropped with the run, whether or not they had started.
                in_flight.0.clear();
                for note in report.calls.iter_mut().filter(|n| open.contains(&n.seq)) {
                    note.error = Some("cancelled: the program ended before its answer".to_owned());
                }
                return from_worker(end);
            }
            FromWorker::Ready { .. } => {
                return failed("the worker broke the protocol: a second ready")
            }
        }
    }
}

/// Queues a reply, or, when the value is too large for the worker to read, an error in its place.
fn reply_to(channel: &mut Channel, id: u64, reply: Reply, reply_bytes: usize) {
    let line = encode(&ToWorker::Reply { id, reply });
    if line.len() <= reply_bytes {
        return channel.send_line(line);
    }
    let reply = Reply::Error {
        code: "RESULT_TOO_LARGE".to_owned(),
        message: format!(
            "the result is {} bytes, over the {reply_bytes} a program can receive",
            line.len()
        ),
    };
    channel.send(&ToWorker::Reply { id, reply });
}

/// Keeps `console` output up to the log limit (the worker cuts too; this does not rely on it).
fn keep_log(report: &mut RunReport, limits: &RunLimits, text: &str, truncated: bool) {
    if report.log_truncated {
        return;
    }
    let left = limits.log_bytes.saturating_sub(report.log.len());
    if text.len() + 1 > left {
        let mut cut = left;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        report.log.push_str(&text[..cut]);
        report.log_truncated = true;
        return;
    }
    report.log.push_str(text);
    report.log.push('\n');
    report.log_truncated = truncated;
}

fn from_worker(end: WorkerEnd) -> RunEnd {
    match end {
        WorkerEnd::Returned { value } => RunEnd::Returned(value),
        WorkerEnd::Threw { message } => RunEnd::Threw { message },
        WorkerEnd::Limit {
            limit: kind,
            message,
        } => {
            let kind = match kind.as_str() {
                "wall_clock" => LimitKind::WallClock,
                "memory" => LimitKind::Memory,
                "output" => LimitKind::Output,
                other => {
                    return failed(format!(
                        "the worker named an unknown limit {other}: {message}"
                    ))
                }
            };
            limit(kind, message)
        }
        WorkerEnd::Failed { message } => failed(format!("the worker failed: {message}")),
    }
}

/// What to make of anything but a protocol message: a worker gone without an answer, or one breaking the
/// protocol.
fn unexpected(channel: &Channel, incoming: Incoming) -> RunEnd {
    match incoming {
        Incoming::Message(m) => failed(format!("the worker broke the protocol: {m:?}")),
        Incoming::Garbage(why) => failed(format!("the worker broke the protocol: {why}")),
        Incoming::Oversized(len) => limit(
            LimitKind::Output,
            format!("the worker sent a line of {len} bytes, over the output limit"),
        ),
        Incoming::Closed => {
            let stderr = channel.worker.stderr_tail();
            // The Rust allocator reports a failed allocation (the address-space limit) this way.
            if stderr.contains("memory allocation") {
                return limit(
                    LimitKind::Memory,
                    "the program ran out of memory and its worker stopped",
                );
            }
            let detail = stderr.trim();
            if detail.is_empty() {
                failed("the worker exited without an answer")
            } else {
                failed(format!("the worker exited without an answer: {detail}"))
            }
        }
    }
}

#[cfg(test)]
#[path = "serve_tests.rs"]
mod tests;
