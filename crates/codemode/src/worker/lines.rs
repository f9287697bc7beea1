//! The worker's side of the channel: bounded JSON lines read from standard input and written to standard
//! output with plain `read` / `write` calls on descriptors 0 and 1 (the only calls its syscall allowlist leaves
//! for them). Nothing else in the worker touches either descriptor. This module does not interpret messages.

use super::protocol::{FromWorker, ToWorker};

/// Why the channel cannot go on; the worker exits on any of these.
#[derive(Debug)]
pub(crate) enum LineError {
    /// The parent closed its end.
    Closed,
    /// A line over the cap, or one that is not a message.
    Bad(String),
    Io(std::io::Error),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Closed => f.write_str("the parent closed the channel"),
            LineError::Bad(why) => write!(f, "bad line from the parent: {why}"),
            LineError::Io(e) => write!(f, "channel: {e}"),
        }
    }
}

/// Reads newline-terminated messages from descriptor 0, never holding more than the cap of one line.
pub(crate) struct LineReader {
    buf: Vec<u8>,
    start: usize,
}

impl LineReader {
    pub(crate) fn new() -> Self {
        Self {
            buf: Vec::with_capacity(64 << 10),
            start: 0,
        }
    }

    /// The next message, whose line may be at most `max` bytes.
    pub(crate) fn next(&mut self, max: usize) -> Result<ToWorker, LineError> {
        loop {
            if let Some(pos) = self.buf[self.start..].iter().position(|&b| b == b'\n') {
                let line = &self.buf[self.start..self.start + pos];
                if line.len() > max {
                    return Err(LineError::Bad(format!("a line of {} bytes", line.len())));
                }
                let message =
                    serde_json::from_slice(line).map_err(|e| LineError::Bad(e.to_string()));
                self.start += pos + 1;
                return message;
            }
            if self.buf.len() - self.start > max {
                return Err(LineError::Bad(format!("a line over {max} bytes")));
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let len = self.buf.len();
            self.buf.resize(len + (64 << 10), 0);
            // SAFETY: reads into the spare part of a buffer we own, of the stated length.
            let n = unsafe { libc::read(0, self.buf[len..].as_mut_ptr().cast(), 64 << 10) };
            if n < 0 {
                self.buf.truncate(len);
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(LineError::Io(e));
            }
            self.buf.truncate(len + n as usize);
            if n == 0 {
                return Err(LineError::Closed);
            }
        }
    }
}

/// One message as a line, newline included.
pub(crate) fn encode(message: &FromWorker) -> Vec<u8> {
    // Serialising these types cannot fail (string keys, finite values); an empty line would only be refused.
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Writes one message as a line on descriptor 1.
pub(crate) fn send(message: &FromWorker) -> Result<(), LineError> {
    write_line(&encode(message))
}

/// Writes one encoded line on descriptor 1.
pub(crate) fn write_line(line: &[u8]) -> Result<(), LineError> {
    let mut rest = line;
    while !rest.is_empty() {
        // SAFETY: writes from a buffer we own, of the stated length.
        let n = unsafe { libc::write(1, rest.as_ptr().cast(), rest.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(LineError::Io(e));
        }
        rest = &rest[n as usize..];
    }
    Ok(())
}
