//! A worker's lockdown of itself: what a process started with [`crate::spawn_piped`] does to its own process
//! once it has loaded what it needs (an engine) and before it runs anything it was sent.
//!
//! In order: its own user and IPC namespaces (no System V or POSIX IPC objects shared with the host), every
//! descriptor but standard input, output and error closed, Landlock allowing nothing, no new descriptors
//! (`RLIMIT_NOFILE` at three), and last the syscall allowlist (`allowlist`), so nothing above runs under it.
//! Each layer is reported as active, unavailable or failed; whether a missing layer stops the run is the
//! caller's decision (the parent refuses to send work to a worker that lacks a required one). This module
//! neither starts processes nor knows what the worker runs.

use crate::allowlist::WorkerFilter;
use crate::landlock;
use crate::layers::LayerState;

/// The layers a worker sets on itself, in the order it sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerLayer {
    /// A new user namespace holding a new IPC namespace.
    IpcNamespace,
    /// Landlock handling every right with no rule: no path can be reached.
    Landlock,
    /// Descriptors beyond standard input, output and error closed, and none can be opened.
    OpenFiles,
    /// The seccomp allowlist ([`WorkerFilter`]).
    SyscallAllowlist,
}

impl WorkerLayer {
    /// Every worker layer, in order.
    pub const ALL: [WorkerLayer; 4] = [
        WorkerLayer::IpcNamespace,
        WorkerLayer::Landlock,
        WorkerLayer::OpenFiles,
        WorkerLayer::SyscallAllowlist,
    ];

    /// Stable name used in reports and in a run's required layers.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerLayer::IpcNamespace => "ipc_namespace",
            WorkerLayer::Landlock => "landlock",
            WorkerLayer::OpenFiles => "open_files",
            WorkerLayer::SyscallAllowlist => "syscall_allowlist",
        }
    }
}

fn last_error() -> String {
    std::io::Error::last_os_error().to_string()
}

fn ipc_namespace() -> LayerState {
    // SAFETY: unshare only changes this process's namespaces; the caller is single-threaded, as unsharing a
    // user namespace requires.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWIPC) } == 0 {
        LayerState::Active
    } else {
        LayerState::Unavailable(format!("unshare: {}", last_error()))
    }
}

fn open_files() -> LayerState {
    // SAFETY: closes descriptors of this process; nothing in it uses one above 2 once the engine is up.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) } == 0;
    if !closed {
        return LayerState::Failed(format!("close_range: {}", last_error()));
    }
    let limit = libc::rlimit {
        rlim_cur: 3,
        rlim_max: 3,
    };
    // SAFETY: setrlimit reads one struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return LayerState::Failed(format!("setrlimit: {}", last_error()));
    }
    LayerState::Active
}

fn filesystem() -> LayerState {
    match landlock::restrict_to_nothing() {
        Ok(()) => LayerState::Active,
        Err((true, why)) => LayerState::Unavailable(why),
        Err((false, why)) => LayerState::Failed(why),
    }
}

fn syscalls(filter: Option<&WorkerFilter>) -> LayerState {
    let Some(filter) = filter else {
        return LayerState::Unavailable("no filter was compiled for this worker".into());
    };
    match filter.install() {
        Ok(()) => LayerState::Active,
        Err(e) if e == libc::EINVAL => {
            LayerState::Unavailable(std::io::Error::from_raw_os_error(e).to_string())
        }
        Err(e) => LayerState::Failed(std::io::Error::from_raw_os_error(e).to_string()),
    }
}

/// Locks the calling process down and reports every layer. Must be called from the process's only thread.
/// When `filter` is given the process can afterwards only compute, use the memory it maps, read and write the
/// descriptors it holds, and exit.
pub fn lock_down_worker(filter: Option<&WorkerFilter>) -> Vec<(WorkerLayer, LayerState)> {
    vec![
        (WorkerLayer::IpcNamespace, ipc_namespace()),
        (WorkerLayer::Landlock, filesystem()),
        (WorkerLayer::OpenFiles, open_files()),
        (WorkerLayer::SyscallAllowlist, syscalls(filter)),
    ]
}
