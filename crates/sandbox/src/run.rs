//! Runs one [`CommandSpec`]: spawn, drain, enforce the deadline, reap, and assemble the [`RunResult`].
//!
//! The deadline is enforced from the parent by signalling the child's process group (SIGTERM, grace, SIGKILL);
//! with a PID namespace, the namespace's init then takes every remaining descendant down. Exit is observed
//! through a pidfd without reaping, so leftover group members are killed while the group id is still ours.
//! Standard input, when given, is written by its own thread (`stdin`) that stops once the tree is gone. This
//! module does not build the child-side setup (see `child`) or parse output.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::capture::{Capture, Readers};
use crate::error::{Error, Result};
use crate::filesystem;
use crate::launch::{ChildStdin, Started};
use crate::layers::{decode, LayerReport};
use crate::prelude::{merge, pipe, prelude, prepare_filter, starter, Prelude, Target};
use crate::spec::{CommandSpec, LayerMode, LayerRequest, Stdin};
use crate::stdin::Feeder;
use crate::watch::{wait_readable, ExitWatch};

/// How long readers may keep draining after the tree is gone before they are told to stop. Only matters when
/// something outside the tree (possible without a PID namespace) still holds a pipe open.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// How the command ended, in Contract V1 words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Outcome {
    /// Exit code 0 (discarded output does not change this).
    Succeeded,
    /// Non-zero exit code or killed by a signal, within the deadline.
    CommandFailed,
    /// The deadline passed and the tree was ended.
    TimedOut,
    /// The command could not be started (see `failure`).
    Failed,
}

/// Exit code or terminating signal of the command itself (not of the sandbox's helper processes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExitInfo {
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal number, if a signal ended it.
    pub signal: Option<i32>,
}

/// Everything known about one run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    /// Contract outcome.
    pub outcome: Outcome,
    /// Exit code / signal.
    pub exit: ExitInfo,
    /// Captured standard output.
    pub stdout: Capture,
    /// Captured standard error.
    pub stderr: Capture,
    /// Wall-clock time from spawn to reap, in milliseconds.
    pub duration_ms: u64,
    /// State of each isolation layer.
    pub layers: LayerReport,
    /// Why the command could not start, when `outcome` is `Failed`.
    pub failure: Option<String>,
}

fn validate(spec: &CommandSpec) -> Result<()> {
    let bad = |m: &str| Err(Error::InvalidSpec(m.to_string()));
    if !spec.program.is_absolute() {
        return bad("program must be an absolute path");
    }
    if !spec.cwd.is_absolute() {
        return bad("cwd must be an absolute path");
    }
    if spec.timeout.is_zero() {
        return bad("timeout must be positive");
    }
    if spec.layers.protected_paths.iter().any(|p| !p.is_absolute()) {
        return bad("protected paths must be absolute");
    }
    let has_nul = |s: &[u8]| s.contains(&0);
    use std::os::unix::ffi::OsStrExt;
    if has_nul(spec.program.as_os_str().as_bytes()) || has_nul(spec.cwd.as_os_str().as_bytes()) {
        return bad("path contains NUL");
    }
    if spec.args.iter().any(|a| has_nul(a.as_bytes())) {
        return bad("argument contains NUL");
    }
    for (k, v) in &spec.env {
        if k.is_empty() || k.contains('=') || has_nul(k.as_bytes()) || has_nul(v.as_bytes()) {
            return bad("invalid environment variable");
        }
    }
    Ok(())
}

/// Reads the child's report until EOF or a short deadline (the writers are gone by the time this is called).
fn read_report(fd: OwnedFd) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !wait_readable(fd.as_raw_fd(), Some(left)) {
            break;
        }
        // SAFETY: reads into a stack buffer of the stated length from an fd we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
    out
}

fn exit_info(raw_status: Option<i32>, std_status: std::process::ExitStatus) -> ExitInfo {
    match raw_status {
        Some(s) if libc::WIFEXITED(s) => ExitInfo {
            code: Some(libc::WEXITSTATUS(s)),
            signal: None,
        },
        Some(s) if libc::WIFSIGNALED(s) => ExitInfo {
            code: None,
            signal: Some(libc::WTERMSIG(s)),
        },
        _ => ExitInfo {
            code: std_status.code(),
            signal: std_status.signal(),
        },
    }
}

/// Runs the command to completion or deadline. `Err` means it was refused before running; a command that
/// could not start is `Ok` with [`Outcome::Failed`], so the layer report still reaches the audit log.
pub fn run(spec: &CommandSpec) -> Result<RunResult> {
    validate(spec)?;
    let start = Instant::now();
    let request = &filesystem::effective(&spec.layers);
    // The private directory it may create lives until the end of this function, after the command's tree is gone.
    let Prelude {
        mut layers,
        prepared,
        report_read,
        report_write,
        starter,
    } = prelude(request, &spec.program, &spec.args, &spec.env, &spec.cwd)?;
    let spawned = starter.start(match spec.stdin {
        Stdin::Null => ChildStdin::Null,
        Stdin::Bytes(_) => ChildStdin::Piped,
    });
    drop(report_write);
    // The child has its copy of the ruleset; the private directory stays until the end of the run.
    let _private_tmp = prepared.into_private_tmp();

    let Started {
        mut child,
        stdin,
        stdout,
        stderr,
    } = match spawned {
        Ok(started) => started,
        Err(e) => {
            let report = decode(&read_report(report_read));
            merge(&mut layers, &report);
            if let Some((layer, reason)) = layers.first_unmet(request) {
                return Err(Error::RequiredLayerNotActive { layer, reason });
            }
            return Ok(RunResult {
                outcome: Outcome::Failed,
                exit: ExitInfo::default(),
                stdout: Capture::default(),
                stderr: Capture::default(),
                duration_ms: elapsed_ms(start),
                layers,
                failure: Some(format!("could not start {}: {e}", spec.program.display())),
            });
        }
    };

    let feeder = match &spec.stdin {
        Stdin::Null => Feeder::start(None, Vec::new()),
        Stdin::Bytes(bytes) => Feeder::start(stdin, bytes.clone()),
    };
    let readers = Readers::start(stdout, stderr);
    let pid = child.id() as libc::pid_t;
    let group = Pid::from_raw(pid);
    let watch = ExitWatch::new(pid);

    let mut timed_out = false;
    let remaining = spec.timeout.saturating_sub(start.elapsed());
    if !watch.wait(Some(remaining)) {
        timed_out = true;
        let _ = killpg(group, Signal::SIGTERM);
        if !watch.wait(Some(spec.kill_grace)) {
            let _ = killpg(group, Signal::SIGKILL);
            watch.wait(None);
        }
    }
    // The leader has exited but is not reaped, so the group id cannot have been reused: end any stragglers.
    let _ = killpg(group, Signal::SIGKILL);
    let status = child.wait();
    crate::reaper::waited(pid);
    feeder.finish();
    let status = status?;
    let report = decode(&read_report(report_read));
    merge(&mut layers, &report);

    let (stdout, stderr) = readers.finish(DRAIN_GRACE);

    let exit = exit_info(report.wait_status, status);
    let outcome = if timed_out {
        Outcome::TimedOut
    } else if exit.code == Some(0) {
        Outcome::Succeeded
    } else {
        Outcome::CommandFailed
    };
    Ok(RunResult {
        outcome,
        exit,
        stdout,
        stderr,
        duration_ms: elapsed_ms(start),
        layers,
        failure: None,
    })
}

fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Sets every layer up in a throw-away child that exits instead of exec'ing (through the launcher when there is
/// one), and reports what worked.
pub(crate) fn probe_layers() -> LayerReport {
    let request = LayerRequest {
        pid_namespace: LayerMode::BestEffort,
        no_network: LayerMode::BestEffort,
        landlock: LayerMode::BestEffort,
        writable_paths: Vec::new(),
        protected_paths: Vec::new(),
        private_tmp: false,
        shared_tmp_readable: false,
        socket_filter: LayerMode::BestEffort,
        rlimits: LayerMode::BestEffort,
        limits: Default::default(),
        no_new_privs: LayerMode::BestEffort,
    };
    let mut layers = LayerReport::initial(&request);
    let Ok(prepared) = filesystem::prepare(&request, Path::new("/"), &mut layers) else {
        return layers;
    };
    let filter = prepare_filter(&request, &mut layers);
    let Ok((report_read, report_write)) = pipe() else {
        return layers;
    };
    let landlock_fd = prepared.landlock_fd.as_ref().map(AsRawFd::as_raw_fd);
    let report_fd = report_write.as_raw_fd();
    let started = starter(&request, Target::Probe, report_fd, landlock_fd, filter)
        .and_then(|starter| Ok(starter.start(ChildStdin::Null)?));
    // A probe that stopped early was reaped by `start`; one that ran is waited for here.
    if let Ok(Started { mut child, .. }) = started {
        let _ = child.wait();
        crate::reaper::waited(child.id() as libc::pid_t);
    }
    drop(report_write);
    drop(prepared);
    merge(&mut layers, &decode(&read_report(report_read)));
    layers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_program_is_refused() {
        let spec = CommandSpec::new("sh", "/");
        assert!(matches!(run(&spec), Err(Error::InvalidSpec(_))));
    }

    #[test]
    fn nul_in_argument_is_refused() {
        let spec = CommandSpec::new("/bin/echo", "/").args(["a\0b"]);
        assert!(matches!(run(&spec), Err(Error::InvalidSpec(_))));
    }

    #[test]
    fn missing_program_is_failed_not_error() {
        let spec = CommandSpec::new("/nonexistent/program", "/");
        let r = run(&spec).unwrap();
        assert_eq!(r.outcome, Outcome::Failed);
        assert!(r.failure.is_some());
    }
}
