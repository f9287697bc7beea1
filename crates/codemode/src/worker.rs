//! The worker: an executable of its own (`toolgate-codemode-worker`, beside toolgate, whose `main` is
//! [`worker_main`]) that runs one program in an embedded JavaScript engine (QuickJS-ng, through rquickjs),
//! talking to its parent over JSON lines on standard input and output only (`protocol`).
//!
//! It starts with an empty environment in the namespaces and limits the parent's `sandbox` piped mode gave it,
//! builds the engine from its `start` line, then locks itself down (its own IPC namespace, Landlock allowing
//! nothing, no new descriptors, the syscall allowlist the parent compiled) before it reads the program, reports
//! its layers, and runs the program (`engine`) with only the bridge's globals added (`bridge`): no `require`,
//! `process`, `fetch`, module loader, timers or file system. It writes nothing to standard output but protocol
//! lines, and does not decide whether a call may run: the parent's host does.

mod bridge;
mod engine;
mod lines;
pub(crate) mod protocol;

use std::process::ExitCode;

use protocol::{ToWorker, MAX_PROGRAM_LINE};

/// The worker's entry point (`toolgate-codemode-worker`'s `main`; its arguments are a label and are not read).
/// Nothing but protocol reaches standard output.
pub fn worker_main() -> ExitCode {
    let mut input = lines::LineReader::new();
    match input.next(MAX_PROGRAM_LINE) {
        Ok(ToWorker::Start { limits, filter }) => engine::serve(limits, filter, &mut input),
        Ok(_) => {
            eprintln!("codemode-worker: the first line must be start");
            ExitCode::FAILURE
        }
        // A start line this worker cannot read most likely comes from another build of toolgate.
        Err(e @ lines::LineError::Bad(_)) => {
            eprintln!(
                "codemode-worker: {e}; is this worker from the same build as toolgate? `cargo build -p toolgate` \
                 builds both"
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("codemode-worker: {e}");
            ExitCode::FAILURE
        }
    }
}
