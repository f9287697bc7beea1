//! The parent's end of the channel to one worker: a started, contained worker process with a reader task (its
//! standard output, as bounded JSON lines, into a small queue) and a writer task (a queue of lines into its
//! standard input), so the run's loop only waits on queues, which is cancel-safe, and never stops reading while
//! it writes (a worker blocked on a full output pipe while the parent is blocked on its full input pipe would
//! wait for each other until the deadline).
//!
//! Dropping a [`Channel`] stops both tasks and kills the worker's whole process tree (`sandbox::Piped`), so a
//! run that ends in any way — answer, limit, error, or its future dropped — leaves no process behind. This
//! module does not interpret messages beyond their JSON type.

use std::os::fd::OwnedFd;

use jsonrpc::{Frame, FrameReader};
use sandbox::Piped;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::worker::protocol::{FromWorker, ToWorker};

/// What arrived from the worker.
#[derive(Debug)]
pub(super) enum Incoming {
    Message(FromWorker),
    /// A line that is not a message of the protocol.
    Garbage(String),
    /// A line over the cap, of this many bytes.
    Oversized(usize),
    /// Its output ended: the worker is gone.
    Closed,
}

/// Aborts its task when dropped.
struct Task(JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(super) struct Channel {
    incoming: mpsc::Receiver<Incoming>,
    outgoing: mpsc::Sender<Vec<u8>>,
    // Field order is drop order: the tasks stop (closing the pipes), then the worker's tree is killed.
    _reader: Task,
    _writer: Task,
    pub(super) worker: Piped,
}

impl Channel {
    /// Wires up a started worker. `line_bytes` caps each line read; `queued` bounds the lines waiting to be
    /// written (a run has at most one reply per request it made, so its call limit bounds them).
    pub(super) fn open(
        mut worker: Piped,
        line_bytes: usize,
        queued: usize,
    ) -> Result<Self, String> {
        let (Some(stdin), Some(stdout)) = (worker.take_stdin(), worker.take_stdout()) else {
            return Err("the worker's standard streams are missing".into());
        };
        let (input, output) =
            pipes(stdin, stdout).map_err(|e| format!("the worker's pipes: {e}"))?;
        let (in_tx, in_rx) = mpsc::channel(16);
        let (out_tx, out_rx) = mpsc::channel(queued.max(1));
        let reader = tokio::spawn(read_lines(output, line_bytes, in_tx));
        let writer = tokio::spawn(write_lines(input, out_rx));
        Ok(Self {
            incoming: in_rx,
            outgoing: out_tx,
            _reader: Task(reader),
            _writer: Task(writer),
            worker,
        })
    }

    /// The next thing the worker said. Cancel-safe.
    pub(super) async fn next(&mut self) -> Incoming {
        self.incoming.recv().await.unwrap_or(Incoming::Closed)
    }

    /// Queues one message. A worker that is gone is noticed by the reader, so a failed send is not an error
    /// here.
    pub(super) async fn send(&self, message: &ToWorker) {
        let _ = self.outgoing.send(encode(message)).await;
    }

    /// Queues a line encoded beforehand (to check its size first).
    pub(super) async fn send_line(&self, line: Vec<u8>) {
        let _ = self.outgoing.send(line).await;
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

async fn read_lines(output: pipe::Receiver, line_bytes: usize, tx: mpsc::Sender<Incoming>) {
    let mut frames = FrameReader::new(BufReader::new(output), line_bytes);
    loop {
        let item = match frames.next().await {
            Ok(Some(Frame::Line(line))) => match serde_json::from_slice::<FromWorker>(&line) {
                Ok(message) => Incoming::Message(message),
                Err(e) => Incoming::Garbage(e.to_string()),
            },
            Ok(Some(Frame::Oversized { len, .. })) => Incoming::Oversized(len),
            Ok(None) | Err(_) => Incoming::Closed,
        };
        let last = matches!(item, Incoming::Closed);
        if tx.send(item).await.is_err() || last {
            return;
        }
    }
}

async fn write_lines(mut input: pipe::Sender, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = rx.recv().await {
        if input.write_all(&line).await.is_err() {
            return;
        }
    }
}
