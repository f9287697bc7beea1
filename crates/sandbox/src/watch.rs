//! Waiting without reaping: readability of one descriptor, and the exit of the command's leader observed
//! through its pidfd (or by polling `waitid(WNOWAIT)` on kernels without pidfds), so that its process group id
//! stays ours until the stragglers are killed. This module does not signal anything; `run` does.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Polls one descriptor for readability; `None` waits forever.
pub(crate) fn wait_readable(fd: RawFd, timeout: Option<Duration>) -> bool {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                libc::c_int::try_from(left.as_millis().max(u128::from(!left.is_zero())))
                    .unwrap_or(libc::c_int::MAX)
            }
        };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r > 0 {
            return true;
        }
        if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Observes (without reaping) the exit of `pid`, through its pidfd when the kernel has them.
pub(crate) struct ExitWatch {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
}

impl ExitWatch {
    pub(crate) fn new(pid: libc::pid_t) -> Self {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let pidfd = i32::try_from(raw).ok().filter(|fd| *fd >= 0).map(|fd| {
            // SAFETY: the kernel just returned this descriptor; nothing else owns it.
            unsafe { OwnedFd::from_raw_fd(fd) }
        });
        Self { pid, pidfd }
    }

    /// Whether the leader exited. A leader that is no longer our child (reaped by someone else) is gone too:
    /// waiting for it could never end.
    fn exited(&self) -> bool {
        // SAFETY: zeroed siginfo is a valid out-parameter; WNOWAIT leaves the child reapable by std.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            (r == 0 && info.si_pid() != 0)
                || (r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
        }
    }

    /// Waits up to `timeout` (`None`: forever) for the exit; true if it happened.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> bool {
        if let Some(fd) = &self.pidfd {
            return wait_readable(fd.as_raw_fd(), timeout) || self.exited();
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if self.exited() {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_reaped_elsewhere_counts_as_exited_not_waited_on_forever() {
        // SAFETY: the child only calls `_exit`, which is async-signal-safe.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        assert!(pid > 0);
        let mut status = 0;
        // SAFETY: reaps the child just forked, as another owner would.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        let started = Instant::now();
        assert!(ExitWatch::new(pid).wait(Some(Duration::from_secs(5))));
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
