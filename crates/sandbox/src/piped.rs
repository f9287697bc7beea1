//! Piped mode: a long-lived contained child the caller talks to over its standard input and output (the
//! code-mode worker), instead of a one-shot command whose output is captured.
//!
//! The child is started like a command of `run` (the same `child::setup` between fork and exec): its own
//! session and process group, an empty environment, `/` as its directory, and the process layers asked for —
//! user + PID namespace, empty network namespace, rlimits (core dumps always off), no_new_privs. Landlock and
//! seccomp are not applied here, since the program must still be loaded: a piped child locks its filesystem and
//! syscalls itself once it is up (`lockdown`). The caller gets the child's standard input and output as owned
//! descriptors, a bounded tail of its standard error, and the layer report; dropping the [`Piped`] kills the
//! whole tree and reaps it, so a caller that stops caring (a cancelled run) leaves nothing behind.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::child;
use crate::error::{Error, Result};
use crate::layers::{decode, LayerReport};
use crate::run::{merge, pipe, plan};
use crate::seccomp;
use crate::spec::{LayerMode, LayerRequest};
use crate::watch::wait_readable;

/// How much of the child's standard error is kept (the end of it), for a message when it dies.
const STDERR_TAIL_BYTES: usize = 8 << 10;

/// One piped child to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipedSpec {
    /// Absolute path of the executable.
    pub program: PathBuf,
    /// Arguments after argv[0].
    pub args: Vec<String>,
    /// Process layers. Landlock, the socket filter, writable and protected paths and a private temporary
    /// directory are refused here: the child must load its program first, then lock itself down.
    pub layers: LayerRequest,
}

/// A running piped child. Dropping it kills the child's whole tree and reaps it.
#[derive(Debug)]
pub struct Piped {
    child: Child,
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Arc<Mutex<Vec<u8>>>,
    layers: LayerReport,
    /// Held so the namespace's init can still write its exit record without a SIGPIPE.
    _report: OwnedFd,
    reaped: bool,
}

fn validate(spec: &PipedSpec) -> Result<()> {
    let bad = |m: &str| Err(Error::InvalidSpec(m.to_string()));
    if !spec.program.is_absolute() {
        return bad("program must be an absolute path");
    }
    let l = &spec.layers;
    if l.landlock != LayerMode::Off
        || l.socket_filter != LayerMode::Off
        || !l.writable_paths.is_empty()
        || !l.protected_paths.is_empty()
        || l.private_tmp
    {
        return bad("a piped child locks its own filesystem and syscalls once it is loaded");
    }
    use std::os::unix::ffi::OsStrExt;
    if spec.program.as_os_str().as_bytes().contains(&0)
        || spec.args.iter().any(|a| a.contains('\0'))
    {
        return bad("argument contains NUL");
    }
    Ok(())
}

/// The layer records the child wrote before it exec'd. `spawn` returns only once the program was exec'd, so
/// they are all in the pipe; the namespace's init keeps the write end open, so this does not wait for EOF.
fn read_ready(fd: &OwnedFd) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    while wait_readable(fd.as_raw_fd(), Some(Duration::ZERO)) {
        // SAFETY: reads into a stack buffer of the stated length from an fd we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
    out
}

/// Keeps the last [`STDERR_TAIL_BYTES`] of the child's standard error, on a thread that ends at EOF (when the
/// tree is gone).
fn drain_stderr(stderr: OwnedFd, tail: Arc<Mutex<Vec<u8>>>) {
    let spawned = std::thread::Builder::new()
        .name("piped-stderr".into())
        .spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                // SAFETY: reads into a stack buffer of the stated length from an fd this thread owns.
                let n =
                    unsafe { libc::read(stderr.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                }
                if n <= 0 {
                    return;
                }
                let mut kept = tail.lock().unwrap_or_else(|p| p.into_inner());
                kept.extend_from_slice(&buf[..n as usize]);
                let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
                kept.drain(..excess);
            }
        });
    // Without the thread the pipe is simply closed: the child's writes to stderr then fail, which is harmless.
    drop(spawned);
}

/// Starts a piped child. `Err` means it did not start (a bad spec, a required layer that could not be set up,
/// or the program could not be executed).
pub fn spawn_piped(spec: &PipedSpec) -> Result<Piped> {
    validate(spec)?;
    let request = &spec.layers;
    let mut layers = LayerReport::initial(request);
    let (report_read, report_write) = pipe()?;
    let child_plan = plan(
        request,
        report_write.as_raw_fd(),
        None,
        seccomp::Programs::default(),
    );
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: `child::setup` only performs async-signal-safe syscalls on data prepared in `child_plan`.
    unsafe {
        cmd.pre_exec(move || child::setup(&child_plan));
    }
    let spawned = cmd.spawn();
    drop(report_write);
    merge(&mut layers, &decode(&read_ready(&report_read)));
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            if let Some((layer, reason)) = layers.first_unmet(request) {
                return Err(Error::RequiredLayerNotActive { layer, reason });
            }
            return Err(Error::Setup(e));
        }
    };
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if let Some(fd) = child.stderr.take() {
        drain_stderr(OwnedFd::from(fd), Arc::clone(&stderr));
    }
    let piped = Piped {
        stdin: child.stdin.take().map(OwnedFd::from),
        stdout: child.stdout.take().map(OwnedFd::from),
        child,
        stderr,
        layers,
        _report: report_read,
        reaped: false,
    };
    // A required layer the child could not set up stopped it before exec; one that is missing here was never
    // reported, which is just as unmet.
    if let Some((layer, reason)) = piped.layers.first_unmet(request) {
        return Err(Error::RequiredLayerNotActive { layer, reason });
    }
    Ok(piped)
}

impl Piped {
    /// The child's standard input (once).
    pub fn take_stdin(&mut self) -> Option<OwnedFd> {
        self.stdin.take()
    }

    /// The child's standard output (once).
    pub fn take_stdout(&mut self) -> Option<OwnedFd> {
        self.stdout.take()
    }

    /// The process layers as the child set them up.
    pub fn layers(&self) -> &LayerReport {
        &self.layers
    }

    /// The process id of the child's process group leader (the tree's handle, not necessarily the program).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The end of what the child wrote to standard error, lossily decoded.
    pub fn stderr_tail(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept).into_owned()
    }

    /// Sends SIGKILL to the whole tree (its process group; with a PID namespace, its init takes every other
    /// process in it along) without waiting for it; [`Piped::kill`] or dropping reaps it.
    pub fn signal_kill(&self) {
        if self.reaped {
            return;
        }
        // The leader is not reaped yet, so the group id cannot have been reused.
        let group = Pid::from_raw(self.child.id() as libc::pid_t);
        let _ = killpg(group, Signal::SIGKILL);
    }

    /// Kills the whole tree and reaps the leader. Idempotent.
    pub fn kill(&mut self) {
        if self.reaped {
            return;
        }
        self.signal_kill();
        let _ = self.child.wait();
        self.reaped = true;
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        self.kill();
    }
}
