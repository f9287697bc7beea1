//! Standard input handed to the command: the bytes of [`crate::Stdin::Bytes`], written on a thread of their own
//! while the command runs.
//!
//! The write end is non-blocking and polled, so the writer never outlives the run: it stops at the end of the
//! data, when the command closes its end, or when the runner says the tree is gone (a descendant that escaped the
//! tree without a PID namespace may hold the pipe open and never read). Closing the write end is the command's end
//! of file. This module does not decide when the run ends (`run` does) and reads nothing.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};

/// How often a writer that cannot write looks at its stop flag.
const POLL_INTERVAL_MS: libc::c_int = 50;

/// The writer thread of one run, if it has data to write.
pub(crate) struct Feeder {
    handle: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl Feeder {
    /// Starts writing `bytes` to `pipe`; with no pipe (or no thread) the command reads end of file at once.
    pub(crate) fn start(pipe: Option<OwnedFd>, bytes: Vec<u8>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = pipe.and_then(|fd| {
            std::thread::Builder::new()
                .name("sandbox-stdin".into())
                .spawn(move || feed(File::from(fd), &bytes, &flag))
                .ok()
        });
        Self { handle, stop }
    }

    /// Tells the writer to give up and waits for it; it returns within one poll interval.
    pub(crate) fn finish(self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle {
            let _ = h.join();
        }
    }
}

fn feed(mut pipe: File, bytes: &[u8], stop: &AtomicBool) {
    // A command that exits without reading makes the write fail with EPIPE; blocked here, SIGPIPE cannot end
    // the embedding process, whatever its disposition of the signal.
    let mut pipe_signal = SigSet::empty();
    pipe_signal.add(Signal::SIGPIPE);
    if pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&pipe_signal), None).is_err() {
        return;
    }
    let fd = pipe.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on a descriptor this thread owns.
    let nonblocking = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if !nonblocking {
        return;
    }
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, POLL_INTERVAL_MS) };
        if ready < 0 && std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
            return;
        }
        if ready <= 0 {
            if stop.load(Ordering::Acquire) {
                return;
            }
            continue;
        }
        match pipe.write(rest) {
            Ok(n) => rest = &rest[n..],
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {}
            // EPIPE: the command closed its end; that is its choice, not a failure of the run.
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    fn pipe() -> (File, OwnedFd) {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        unsafe { (File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    #[test]
    fn every_byte_arrives_then_end_of_file() {
        let (mut read, write) = pipe();
        let data = vec![7u8; 300 * 1024];
        let feeder = Feeder::start(Some(write), data.clone());
        let mut got = Vec::new();
        read.read_to_end(&mut got).unwrap();
        feeder.finish();
        assert_eq!(got, data);
    }

    #[test]
    fn a_reader_that_never_reads_does_not_keep_the_writer() {
        let (read, write) = pipe();
        let feeder = Feeder::start(Some(write), vec![1u8; 1 << 20]);
        std::thread::sleep(std::time::Duration::from_millis(100));
        let started = std::time::Instant::now();
        feeder.finish();
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        drop(read);
    }

    #[test]
    fn a_closed_reader_ends_the_writer_without_a_signal() {
        let (read, write) = pipe();
        drop(read);
        let feeder = Feeder::start(Some(write), vec![1u8; 1024]);
        feeder.finish();
    }
}
