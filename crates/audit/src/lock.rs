//! A cross-process exclusive lock on a side file, with a deadline.
//!
//! Appends and pruning from different processes (gateway, admin CLI) must not interleave:
//! each append reads the chain head and writes after it. The lock lives on a separate file
//! because pruning replaces the log file by rename. Waiting is bounded so a stuck peer turns
//! into a counted audit failure instead of a blocked tool call. On non-Unix targets there
//! is no cross-process lock; the in-process mutex in `log` still serialises one process.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// Holds the lock until dropped (closing the descriptor releases it).
#[derive(Debug)]
pub(crate) struct FileLock {
    _file: File,
}

impl FileLock {
    /// Takes the exclusive lock on `path` (created 0600 if absent), waiting at most `wait`.
    pub(crate) fn exclusive(path: &Path, wait: Duration) -> io::Result<Self> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let file = opts.open(path)?;
        let deadline = Instant::now() + wait;
        loop {
            match try_lock(&file) {
                Ok(()) => return Ok(Self { _file: file }),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(unix)]
fn try_lock(file: &File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: `flock` only reads the descriptor number, which `file` keeps open for the
    // duration of the call; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn try_lock(_file: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn second_holder_times_out_then_succeeds_after_release() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        let first = FileLock::exclusive(&p, Duration::ZERO).unwrap();
        let err = FileLock::exclusive(&p, Duration::from_millis(30)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(first);
        FileLock::exclusive(&p, Duration::ZERO).unwrap();
    }
}
