//! Piped mode: a long-lived contained child the caller talks to over its standard input and output (the
//! code-mode worker), instead of a one-shot command whose output is captured.
//!
//! The child is started like a command of `run`, by the same code (`filesystem::prepare` for the private
//! temporary directory and the Landlock ruleset, the compiled socket filter, `child::setup` between fork and
//! exec): its own session and process group, exactly the environment given, its directory, and the layers
//! asked for — user + PID namespace with its own /proc, empty network namespace, Landlock, the socket filter,
//! rlimits (core dumps always off), no_new_privs. A child that must load its program before it is locked
//! (the code-mode worker) asks for no Landlock or filter here and locks itself once it is up (`lockdown`); an
//! upstream server is locked from its first instruction. The caller gets the child's standard input and output
//! as owned descriptors, its standard error as a pipe or a bounded tail, and the layer report; dropping the
//! [`Piped`] kills the whole tree, reaps it and removes its private temporary directory, so a caller that stops
//! caring (a cancelled run, an upstream's end) leaves nothing behind.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::error::{Error, Result};
use crate::filesystem;
use crate::launch::{ChildStdin, Started};
use crate::layers::{decode, LayerReport};
use crate::prelude::{merge, prelude, Prelude};
use crate::spec::LayerRequest;
use crate::watch::wait_readable;

/// How much of the child's standard error is kept (the end of it), for a message when it dies.
const STDERR_TAIL_BYTES: usize = 8 << 10;

/// What becomes of a piped child's standard error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PipedStderr {
    /// Kept as a bounded tail ([`Piped::stderr_tail`]).
    #[default]
    Tail,
    /// Handed to the caller as a pipe ([`Piped::take_stderr`]).
    Pipe,
}

/// One piped child to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipedSpec {
    /// Absolute path of the executable.
    pub program: PathBuf,
    /// Arguments after argv[0].
    pub args: Vec<String>,
    /// The complete environment of the child (with a private temporary directory, its `TMPDIR`, `TMP` and
    /// `TEMP` point there).
    pub env: BTreeMap<String, String>,
    /// Working directory (absolute); readable even when it lies in a hidden path.
    pub cwd: PathBuf,
    /// Its standard error.
    pub stderr: PipedStderr,
    /// Isolation layers, as for a command of `run`.
    pub layers: LayerRequest,
}

impl PipedSpec {
    /// A spec with default layers, an empty environment, `/` as its directory and a kept stderr tail.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: PathBuf::from("/"),
            stderr: PipedStderr::Tail,
            layers: LayerRequest::default(),
        }
    }
}

/// A running piped child. Dropping it kills the child's whole tree, reaps it, then removes its private
/// temporary directory.
#[derive(Debug)]
pub struct Piped {
    child: Child,
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr_pipe: Option<OwnedFd>,
    stderr: Arc<Mutex<Vec<u8>>>,
    layers: LayerReport,
    /// Held so the namespace's init can still write its exit record without a SIGPIPE.
    _report: OwnedFd,
    reaped: bool,
    /// Removed on drop, after the tree is gone (fields drop after `Drop::drop` has killed it).
    _private_tmp: Option<tempfile::TempDir>,
}

fn validate(spec: &PipedSpec) -> Result<()> {
    let bad = |m: &str| Err(Error::InvalidSpec(m.to_string()));
    if !spec.program.is_absolute() {
        return bad("program must be an absolute path");
    }
    if !spec.cwd.is_absolute() {
        return bad("cwd must be an absolute path");
    }
    if spec.layers.protected_paths.iter().any(|p| !p.is_absolute()) {
        return bad("protected paths must be absolute");
    }
    use std::os::unix::ffi::OsStrExt;
    let has_nul = |s: &[u8]| s.contains(&0);
    if has_nul(spec.program.as_os_str().as_bytes())
        || has_nul(spec.cwd.as_os_str().as_bytes())
        || spec.args.iter().any(|a| a.contains('\0'))
    {
        return bad("argument contains NUL");
    }
    for (k, v) in &spec.env {
        if k.is_empty() || k.contains('=') || has_nul(k.as_bytes()) || has_nul(v.as_bytes()) {
            return bad("invalid environment variable");
        }
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

/// Starts a piped child. `Err` means it did not start (a bad spec, a writable path that would expose a
/// protected one, a required layer that could not be set up, or the program could not be executed).
///
/// The child dies with the thread that called this (`PR_SET_PDEATHSIG`): call it from a thread that lives as
/// long as the child should ([`crate::keeper`] is one).
pub fn spawn_piped(spec: &PipedSpec) -> Result<Piped> {
    validate(spec)?;
    let request = &filesystem::effective(&spec.layers);
    let Prelude {
        mut layers,
        prepared,
        report_read,
        report_write,
        starter,
    } = prelude(request, &spec.program, &spec.args, &spec.env, &spec.cwd)?;
    let spawned = starter.start(ChildStdin::Piped);
    drop(report_write);
    // The child has its copy of the ruleset; the private directory lives as long as the `Piped`.
    let private_tmp = prepared.into_private_tmp();
    merge(&mut layers, &decode(&read_ready(&report_read)));
    let Started {
        child,
        stdin,
        stdout,
        stderr: mut stderr_pipe,
    } = match spawned {
        Ok(started) => started,
        Err(e) => {
            if let Some((layer, reason)) = layers.first_unmet(request) {
                return Err(Error::RequiredLayerNotActive { layer, reason });
            }
            return Err(Error::Setup(e));
        }
    };
    let stderr = Arc::new(Mutex::new(Vec::new()));
    if spec.stderr == PipedStderr::Tail {
        if let Some(fd) = stderr_pipe.take() {
            drain_stderr(fd, Arc::clone(&stderr));
        }
    }
    let piped = Piped {
        stdin,
        stdout,
        stderr_pipe,
        child,
        stderr,
        layers,
        _report: report_read,
        reaped: false,
        _private_tmp: private_tmp,
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

    /// The child's standard error (once), when the spec asked for [`PipedStderr::Pipe`].
    pub fn take_stderr(&mut self) -> Option<OwnedFd> {
        self.stderr_pipe.take()
    }

    /// Whether the tree's handle has exited (reaping it if so). The tree is gone by then: with a PID
    /// namespace the handle exits only after its init, whose end kills the rest.
    pub fn has_exited(&mut self) -> bool {
        if self.reaped {
            return true;
        }
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: waitid writes one siginfo we own; WNOWAIT leaves the leader unreaped, so its group id stays ours.
        let exited = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            ) == 0
                && info.si_pid() == pid
        };
        if exited {
            // Anything left in the group (possible without a PID namespace) is an orphan of ours.
            self.kill();
        }
        self.reaped
    }

    /// Sends `signal` to the whole tree's process group, unless it is already reaped. (With a PID namespace,
    /// the tree's init ignores what it has no handler for; the command gets it.)
    pub fn signal_group(&self, signal: Signal) {
        if self.reaped {
            return;
        }
        let group = Pid::from_raw(self.child.id() as libc::pid_t);
        let _ = killpg(group, signal);
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
        // The leader is not reaped yet, so the group id cannot have been reused.
        self.signal_group(Signal::SIGKILL);
    }

    /// Kills the whole tree and reaps the leader. Idempotent.
    pub fn kill(&mut self) {
        if self.reaped {
            return;
        }
        self.signal_kill();
        let _ = self.child.wait();
        crate::reaper::waited(self.child.id() as libc::pid_t);
        self.reaped = true;
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        self.kill();
    }
}
