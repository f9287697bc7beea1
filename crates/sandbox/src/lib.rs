//! Process containment and bounded output capture for commands, git runs and command hooks.
//!
//! The caller hands over an already-approved [`CommandSpec`]; this crate starts it in its own session (and,
//! where the kernel allows, its own PID namespace), applies the requested isolation layers, hands it its
//! standard input (nothing, or given bytes then end of file), drains both output streams into fixed-size
//! buffers, and ends the whole process tree on timeout. It does not decide whether a command may run (policy
//! and approval happen before), resolve programs on a PATH, or print anything.

#![deny(clippy::print_stdout)]

mod capture;
mod child;
mod error;
mod filesystem;
mod grants;
mod landlock;
mod layers;
mod run;
mod seccomp;
mod spec;
mod stdin;
mod watch;

pub use capture::{Capture, MAX_CAPTURE_BYTES_PER_STREAM};
pub use error::{Error, Result};
pub use layers::{probe, Layer, LayerEntry, LayerReport, LayerState};
pub use run::{run, ExitInfo, Outcome, RunResult};
pub use spec::{CommandSpec, LayerMode, LayerRequest, Rlimits, Stdin};
