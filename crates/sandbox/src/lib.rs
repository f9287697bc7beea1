//! Process containment and bounded output capture for commands, git runs and command hooks.
//!
//! The caller hands over an already-approved [`CommandSpec`]; this crate starts it in its own session (and,
//! where the kernel allows, its own PID namespace), applies the requested isolation layers, hands it its
//! standard input (nothing, or given bytes then end of file), drains both output streams into fixed-size
//! buffers, and ends the whole process tree on timeout. It does not decide whether a command may run (policy
//! and approval happen before), resolve programs on a PATH, or print anything.
//!
//! It also starts long-lived children talked to over their standard streams ([`spawn_piped`], from the one
//! thread that outlives them, [`spawn_kept`]): code mode's workers and upstream servers. It gives such a
//! worker the means to lock itself down once it is loaded ([`lock_down_worker`]: Landlock allowing nothing, no
//! new descriptors, and a syscall allowlist, [`WorkerFilter`], compiled by the parent).
//!
//! A gateway, a child subreaper, adopts the orphans of every tree below it; [`reap_adopted`] reaps the ones
//! that exited without touching a child this crate started, which its owner waits for.

#![deny(clippy::print_stdout)]

mod allowlist;
mod capture;
mod child;
mod error;
mod filesystem;
mod grants;
mod keeper;
mod landlock;
mod launch;
mod layers;
mod lockdown;
mod piped;
mod prelude;
mod reaper;
mod run;
mod seccomp;
mod spec;
mod stdin;
mod watch;

pub use allowlist::{worker_filter, WorkerFilter};
pub use capture::{Capture, MAX_CAPTURE_BYTES_PER_STREAM};
pub use error::{Error, Result};
pub use keeper::{dispose, spawn_kept, Reply};
pub use launch::{launcher, launcher_main, LAUNCHER_EXE, LAUNCHER_VAR};
pub use layers::{probe, Layer, LayerEntry, LayerReport, LayerState};
pub use lockdown::{lock_down_worker, WorkerLayer};
pub use nix::sys::signal::Signal;
pub use piped::{spawn_piped, Piped, PipedSpec, PipedStderr};
pub use reaper::{children, reap_adopted};
pub use run::{run, ExitInfo, Outcome, RunResult};
pub use spec::{CommandSpec, LayerMode, LayerRequest, Rlimits, Stdin};
