//! The parent's end of the channel to one worker: its standard output read as bounded JSON lines, and a queue of
//! lines written to its standard input while waiting for the next line, so the run's loop never stops reading
//! while it writes (a worker blocked on a full output pipe while the parent is blocked on its full input pipe
//! would wait for each other until the deadline). Everything is done in the run's own future with cancel-safe
//! readiness waits, without tasks of its own: each message costs no more than the two processes' wake-ups.
//!
//! Dropping a [`Channel`] kills the worker's whole process tree (`sandbox::Piped`), so a run that ends in any
//! way — answer, limit, error, or its future dropped — leaves no process behind. This module does not interpret
//! messages beyond their JSON type.

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::os::fd::OwnedFd;

use sandbox::Piped;
use tokio::net::unix::pipe;

use crate::worker::protocol::{FromWorker, ToWorker};

/// What arrived from the worker.
#[derive(Debug)]
pub(super) enum Incoming {
    Message(FromWorker),
    /// A line that is not a message of the protocol.
    Garbage(String),
    /// A line over the cap, of at least this many bytes.
    Oversized(usize),
    /// Its output ended: the worker is gone.
    Closed,
}

pub(super) struct Channel {
    input: pipe::Sender,
    output: pipe::Receiver,
    /// Bytes read and not yet returned as lines; never more than the line cap plus one read.
    buffer: Vec<u8>,
    /// How much of the buffer is known to hold no newline, so a long line is scanned once.
    scanned: usize,
    line_bytes: usize,
    /// Lines waiting to be written, and how much of the first one is written.
    queue: VecDeque<Vec<u8>>,
    written: usize,
    pub(super) worker: Piped,
}

/// A worker that has said all it had to say for now, its pipes taken off the runtime that opened them (a spare
/// waiting for its program may be used by a run on another runtime).
pub(super) struct Parked {
    pub(super) worker: Piped,
    stdin: OwnedFd,
    stdout: OwnedFd,
    line_bytes: usize,
}

impl Parked {
    /// Whether the worker still holds its end of the output open and has written nothing more: a worker that
    /// died (or was killed) has closed it, and one that spoke unasked broke the protocol.
    pub(super) fn quiet(&self) -> bool {
        let mut probe = [0u8; 1];
        // The descriptor is non-blocking: nothing to read is the only answer of a live, silent worker.
        matches!(
            nix::unistd::read(&self.stdout, &mut probe),
            Err(nix::errno::Errno::EAGAIN)
        )
    }
}

/// How much one read takes from the pipe.
const READ_CHUNK: usize = 64 << 10;

impl Channel {
    /// Wires up a started worker; `line_bytes` caps each line read.
    pub(super) fn open(mut worker: Piped, line_bytes: usize) -> Result<Self, String> {
        let (Some(stdin), Some(stdout)) = (worker.take_stdin(), worker.take_stdout()) else {
            return Err("the worker's standard streams are missing".into());
        };
        let (input, output) =
            pipes(stdin, stdout).map_err(|e| format!("the worker's pipes: {e}"))?;
        Ok(Self {
            input,
            output,
            buffer: Vec::new(),
            scanned: 0,
            line_bytes,
            queue: VecDeque::new(),
            written: 0,
            worker,
        })
    }

    /// Takes the pipes off this runtime, when nothing is buffered or waiting to be written.
    pub(super) fn park(self) -> Result<Parked, String> {
        if !self.buffer.is_empty() || !self.queue.is_empty() {
            return Err("the worker said more than the protocol allows before its program".into());
        }
        let stdin = self.input.into_nonblocking_fd();
        let stdout = self.output.into_nonblocking_fd();
        let (stdin, stdout) = stdin
            .and_then(|i| stdout.map(|o| (i, o)))
            .map_err(|e| format!("the worker's pipes: {e}"))?;
        Ok(Parked {
            worker: self.worker,
            stdin,
            stdout,
            line_bytes: self.line_bytes,
        })
    }

    /// Opens a parked worker's pipes on the current runtime.
    pub(super) fn unpark(parked: Parked) -> Result<Self, String> {
        let (input, output) =
            pipes(parked.stdin, parked.stdout).map_err(|e| format!("the worker's pipes: {e}"))?;
        Ok(Self {
            input,
            output,
            buffer: Vec::new(),
            scanned: 0,
            line_bytes: parked.line_bytes,
            queue: VecDeque::new(),
            written: 0,
            worker: parked.worker,
        })
    }

    /// Queues one message for the worker; it is written while the run waits for the worker's next line.
    pub(super) fn send(&mut self, message: &ToWorker) {
        self.send_line(encode(message));
    }

    /// Queues a line encoded beforehand (to check its size first).
    pub(super) fn send_line(&mut self, line: Vec<u8>) {
        self.queue.push_back(line);
    }

    /// The next thing the worker said, writing queued lines meanwhile. Cancel-safe: what was read stays in the
    /// buffer and what was written is accounted for.
    pub(super) async fn next(&mut self) -> Incoming {
        loop {
            if let Some(line) = self.take_line() {
                return line;
            }
            if self.queue.is_empty() {
                if let Err(closed) = self.fill().await {
                    return closed;
                }
                continue;
            }
            tokio::select! {
                ready = self.output.readable() => {
                    if ready.is_err() {
                        return Incoming::Closed;
                    }
                    if let Err(closed) = self.try_fill() {
                        return closed;
                    }
                }
                ready = self.input.writable() => {
                    if ready.is_err() {
                        // The worker closed its input; whatever it still says is read, then its end.
                        self.queue.clear();
                        continue;
                    }
                    self.try_flush();
                }
            }
        }
    }

    /// One complete line from the buffer, if there is one (or the verdict on one over the cap).
    fn take_line(&mut self) -> Option<Incoming> {
        let found = self.buffer[self.scanned..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|at| self.scanned + at);
        self.scanned = found.unwrap_or(self.buffer.len());
        match found {
            Some(end) if end > self.line_bytes => Some(Incoming::Oversized(end)),
            Some(end) => {
                let item = match serde_json::from_slice::<FromWorker>(&self.buffer[..end]) {
                    Ok(message) => Incoming::Message(message),
                    Err(e) => Incoming::Garbage(e.to_string()),
                };
                self.buffer.drain(..=end);
                self.scanned = 0;
                Some(item)
            }
            None if self.buffer.len() > self.line_bytes => {
                Some(Incoming::Oversized(self.buffer.len()))
            }
            None => None,
        }
    }

    async fn fill(&mut self) -> Result<(), Incoming> {
        loop {
            if self.output.readable().await.is_err() {
                return Err(Incoming::Closed);
            }
            match self.try_read() {
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                other => return other.map(|_| ()).map_err(|_| Incoming::Closed),
            }
        }
    }

    fn try_fill(&mut self) -> Result<(), Incoming> {
        match self.try_read() {
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
            other => other.map(|_| ()).map_err(|_| Incoming::Closed),
        }
    }

    /// One non-blocking read into the buffer; end of file is an error here (the worker is gone).
    fn try_read(&mut self) -> std::io::Result<usize> {
        let len = self.buffer.len();
        self.buffer.resize(len + READ_CHUNK, 0);
        let read = self.output.try_read(&mut self.buffer[len..]);
        self.buffer.truncate(len + *read.as_ref().unwrap_or(&0));
        match read {
            Ok(0) => Err(ErrorKind::UnexpectedEof.into()),
            other => other,
        }
    }

    /// Writes as much of the queue as the pipe takes now.
    fn try_flush(&mut self) {
        while let Some(line) = self.queue.front() {
            match self.input.try_write(&line[self.written..]) {
                Ok(n) => {
                    self.written += n;
                    if self.written == line.len() {
                        self.queue.pop_front();
                        self.written = 0;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.queue.clear();
                    self.written = 0;
                    return;
                }
            }
        }
    }
}

/// One message as a line, newline included.
pub(super) fn encode(message: &ToWorker) -> Vec<u8> {
    // Serialising these types cannot fail (string keys, finite values); an empty line would only be refused.
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    line
}

fn pipes(stdin: OwnedFd, stdout: OwnedFd) -> std::io::Result<(pipe::Sender, pipe::Receiver)> {
    Ok((
        pipe::Sender::from_owned_fd(stdin)?,
        pipe::Receiver::from_owned_fd(stdout)?,
    ))
}
