//! The worker: toolgate re-executed to run one program in an embedded JavaScript engine, talking to its parent
//! over JSON lines on standard input and output only.

use std::process::ExitCode;

/// The worker's entry point (`toolgate codemode-worker`).
pub fn worker_main() -> ExitCode {
    ExitCode::FAILURE
}
