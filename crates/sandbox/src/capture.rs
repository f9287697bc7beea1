//! Bounded capture of one output stream.
//!
//! Each stream has its own reader thread that drains the pipe continuously until EOF (so a child that floods
//! both streams can never block on a full pipe), keeps the first [`MAX_CAPTURE_BYTES_PER_STREAM`] bytes and only
//! counts the rest. Memory is O(1) in output volume: one fixed read chunk plus at most the retained prefix.
//! It does not decide how long to wait for EOF once the command is gone; the runner passes that grace period.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// Bytes of each stream kept for the caller; the rest is drained and counted, not stored.
pub const MAX_CAPTURE_BYTES_PER_STREAM: usize = 256 * 1024;

/// Size of the transient read buffer: large reads keep the drain cheap on floods.
const READ_CHUNK: usize = 64 * 1024;

/// How often a reader with no data looks at its stop flag.
const POLL_INTERVAL_MS: libc::c_int = 50;

/// What was captured from one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Capture {
    /// The retained prefix as lossy UTF-8, followed by a `[toolgate discarded N output bytes]` marker when
    /// anything was dropped.
    pub text: String,
    /// Bytes the stream produced.
    pub total_bytes: u64,
    /// Bytes kept (at most [`MAX_CAPTURE_BYTES_PER_STREAM`]).
    pub retained_bytes: u64,
    /// Bytes drained and discarded.
    pub dropped_bytes: u64,
    /// Whether the retained bytes were not valid UTF-8, so `text` replaced some: a caller that parses the
    /// output (a hook's answer) must then refuse it rather than read what the replacement made of it.
    #[serde(default)]
    pub lossy: bool,
}

impl Capture {
    /// Whether output was discarded.
    pub fn truncated(&self) -> bool {
        self.dropped_bytes > 0
    }

    pub(crate) fn from_parts(retained: &[u8], total: u64) -> Self {
        let retained_bytes = retained.len() as u64;
        let dropped_bytes = total.saturating_sub(retained_bytes);
        let decoded = String::from_utf8_lossy(retained);
        let lossy = matches!(decoded, std::borrow::Cow::Owned(_));
        let mut text = decoded.into_owned();
        if dropped_bytes > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[toolgate discarded {dropped_bytes} output bytes]"
            ));
        }
        Self {
            text,
            total_bytes: total,
            retained_bytes,
            dropped_bytes,
            lossy,
        }
    }
}

/// The two reader threads of one run.
pub(crate) struct Readers {
    stdout: Option<JoinHandle<Capture>>,
    stderr: Option<JoinHandle<Capture>>,
    stop: Arc<AtomicBool>,
    /// Disconnects when every reader has returned (each holds a sender), so finishing needs no polling.
    all_done: mpsc::Receiver<()>,
}

impl Readers {
    /// Starts one reader per pipe; a pipe whose thread cannot start is dropped (the child then gets EPIPE).
    pub(crate) fn start(stdout: Option<OwnedFd>, stderr: Option<OwnedFd>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (done_tx, all_done) = mpsc::channel::<()>();
        let spawn = |fd: Option<OwnedFd>| {
            let (stop, done) = (Arc::clone(&stop), done_tx.clone());
            fd.and_then(|fd| {
                std::thread::Builder::new()
                    .name("sandbox-capture".into())
                    .spawn(move || {
                        let capture = drain(File::from(fd), &stop, MAX_CAPTURE_BYTES_PER_STREAM);
                        drop(done);
                        capture
                    })
                    .ok()
            })
        };
        let (stdout, stderr) = (spawn(stdout), spawn(stderr));
        Self {
            stdout,
            stderr,
            stop,
            all_done,
        }
    }

    /// Waits up to `grace` for both streams to reach EOF, then tells the readers to stop and collects them.
    pub(crate) fn finish(self, grace: Duration) -> (Capture, Capture) {
        let _ = self.all_done.recv_timeout(grace);
        self.stop.store(true, Ordering::Release);
        let join =
            |h: Option<JoinHandle<Capture>>| h.and_then(|h| h.join().ok()).unwrap_or_default();
        (join(self.stdout), join(self.stderr))
    }
}

fn drain(mut file: File, stop: &AtomicBool, cap: usize) -> Capture {
    let mut retained: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut total: u64 = 0;
    loop {
        let mut pfd = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let ready = unsafe { libc::poll(&mut pfd, 1, POLL_INTERVAL_MS) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        if ready == 0 {
            if stop.load(Ordering::Acquire) {
                break;
            }
            continue;
        }
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                let room = cap - retained.len();
                if room > 0 {
                    if retained.capacity() == 0 {
                        // One exact allocation instead of doubling past the cap.
                        retained.reserve_exact(cap);
                    }
                    retained.extend_from_slice(&chunk[..n.min(room)]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Capture::from_parts(&retained, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_reports_dropped_bytes() {
        let c = Capture::from_parts(b"abc", 10);
        assert_eq!(c.text, "abc\n[toolgate discarded 7 output bytes]");
        assert_eq!(
            (c.total_bytes, c.retained_bytes, c.dropped_bytes),
            (10, 3, 7)
        );
        assert!(c.truncated());
    }

    #[test]
    fn no_marker_without_drops() {
        let c = Capture::from_parts(b"ok\n", 3);
        assert_eq!(c.text, "ok\n");
        assert!(!c.truncated() && !c.lossy);
    }

    #[test]
    fn invalid_utf8_is_marked_lossy() {
        let c = Capture::from_parts(b"{\"a\": \"\xff\"}", 10);
        assert!(c.lossy);
        assert!(c.text.contains('\u{FFFD}'));
    }

    #[test]
    fn drain_keeps_prefix_and_counts_rest() {
        let mut tmp = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut tmp, &vec![b'x'; 5000]).unwrap();
        std::io::Seek::seek(&mut tmp, std::io::SeekFrom::Start(0)).unwrap();
        let c = drain(tmp, &AtomicBool::new(false), 1000);
        assert_eq!(
            (c.total_bytes, c.retained_bytes, c.dropped_bytes),
            (5000, 1000, 4000)
        );
    }
}
