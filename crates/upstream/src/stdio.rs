//! The stdio transport: a contained child process (`process`), newline-delimited JSON-RPC on its stdin and
//! stdout, the last lines of its stderr kept, and shutdown of its whole tree (stdin EOF, grace, TERM, KILL).
//!
//! It frames and decodes; it does not know ids, eras or events (the `Connection` over it does).

use crate::link::INCOMING_CAPACITY;
use crate::link::{incoming_from_bytes, BoxFuture, Connector, Incoming, Link, Opened, SendError};
use crate::process::{self, Containment};
use config::ServerConfig;
use jsonrpc::{encode_line, Frame, FrameReader, Limits};
use sandbox::Piped;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Bounded so a stalled upstream pushes back on its callers instead of growing toolgate's memory.
const OUTBOX_CAPACITY: usize = 256;
/// Lines of an upstream's stderr kept for `doctor` and the status tool.
const STDERR_TAIL_LINES: usize = 20;
const STDERR_LINE_CHARS: usize = 400;
/// How much of a line is read for redaction before it is cut to `STDERR_LINE_CHARS`.
const STDERR_REDACT_CHARS: usize = 4 * STDERR_LINE_CHARS;

/// Starts the configured command, contained, for every life.
#[derive(Debug, Default, Clone)]
pub struct StdioConnector {
    containment: Arc<Containment>,
}

impl StdioConnector {
    /// A connector whose children are kept from what `containment` protects.
    pub fn new(containment: Arc<Containment>) -> Self {
        Self { containment }
    }
}

impl Connector for StdioConnector {
    fn connect<'a>(
        &'a self,
        config: &'a ServerConfig,
        limits: Limits,
    ) -> BoxFuture<'a, Result<Opened, String>> {
        Box::pin(async move {
            let spec = process::spec(config, &self.containment)?;
            let mut child = process::spawn(spec)
                .await
                .map_err(|e| format!("cannot start {}: {e}", config.name))?;
            let layers = process::describe(config, &child);
            let pipes = (child.take_stdin(), child.take_stdout(), child.take_stderr());
            let (Some(stdin), Some(stdout), stderr) = pipes else {
                return Err("the process has no stdio pipes".to_owned());
            };
            let io = |e: std::io::Error| format!("the process's pipes: {e}");
            let stdin = pipe::Sender::from_owned_fd(stdin).map_err(io)?;
            let stdout = pipe::Receiver::from_owned_fd(stdout).map_err(io)?;
            let stderr = stderr
                .map(pipe::Receiver::from_owned_fd)
                .transpose()
                .map_err(io)?;
            let pid = Some(child.id());
            let (mut link, incoming) =
                StdioLink::start(&config.name, stdin, stdout, stderr, limits, Some(child));
            link.layers = layers;
            Ok(Opened {
                link: Box::new(link),
                incoming,
                pid,
            })
        })
    }
}

/// Newline framing over a pair of pipes, with the process behind them when there is one.
pub struct StdioLink {
    outbox: mpsc::Sender<Vec<u8>>,
    max_message_bytes: usize,
    /// Cancelled when writing failed or the link was shut down: the writer drops stdin and the reader stops.
    ended: CancellationToken,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    child: Mutex<Option<Piped>>,
    /// The containment layers of the process, for `doctor`.
    layers: Vec<String>,
}

impl StdioLink {
    /// Starts the writer, reader and stderr tasks over the pipes.
    pub fn start(
        server: &str,
        stdin: impl AsyncWrite + Unpin + Send + 'static,
        stdout: impl AsyncRead + Unpin + Send + 'static,
        stderr: Option<impl AsyncRead + Unpin + Send + 'static>,
        limits: Limits,
        child: Option<Piped>,
    ) -> (Self, mpsc::Receiver<Incoming>) {
        let (outbox, rx) = mpsc::channel(OUTBOX_CAPACITY);
        let (incoming_tx, incoming) = mpsc::channel(INCOMING_CAPACITY);
        let ended = CancellationToken::new();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        tokio::spawn(write_loop(rx, stdin, ended.clone()));
        tokio::spawn(read_loop(stdout, limits, incoming_tx, ended.clone()));
        if let Some(stderr) = stderr {
            let server = server.to_owned();
            tokio::spawn(stderr_loop(server, stderr, Arc::clone(&stderr_tail)));
        }
        let link = Self {
            outbox,
            max_message_bytes: limits.max_message_bytes,
            ended,
            stderr_tail,
            child: Mutex::new(child),
            layers: Vec::new(),
        };
        (link, incoming)
    }
}

impl Drop for StdioLink {
    /// A link dropped without a shutdown still ends its tree (reaped on the sandbox's keeper thread).
    fn drop(&mut self) {
        let child = self
            .child
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(child) = child {
            sandbox::dispose(child);
        }
    }
}

impl Link for StdioLink {
    fn send<'a>(&'a self, msg: &'a Value) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let max = self.max_message_bytes;
            let line = encode_line(msg, max).map_err(|len| SendError::TooLarge { len, max })?;
            if self.ended.is_cancelled() {
                return Err(SendError::Closed);
            }
            self.outbox.send(line).await.map_err(|_| SendError::Closed)
        })
    }

    fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn containment(&self) -> Vec<String> {
        self.layers.clone()
    }

    fn shutdown(&self, grace: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Ending the writer drops stdin: the upstream sees EOF, which is how stdio servers are asked to exit.
            self.ended.cancel();
            let child = self.child.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(child) = child {
                process::terminate(child, grace).await;
            }
        })
    }
}

async fn write_loop(
    mut rx: mpsc::Receiver<Vec<u8>>,
    mut stdin: impl AsyncWrite + Unpin,
    ended: CancellationToken,
) {
    // Lines already queued go out with the one written, in order (`jsonrpc::Gathered`).
    let mut gathered = jsonrpc::Gathered::default();
    loop {
        tokio::select! {
            line = rx.recv() => {
                let Some(line) = line else { break };
                let mut room = gathered.push(&line);
                while room {
                    let Ok(more) = rx.try_recv() else { break };
                    room = gathered.push(&more);
                }
                if stdin.write_all(gathered.bytes()).await.is_err() || stdin.flush().await.is_err() {
                    ended.cancel();
                    break;
                }
                gathered.clear();
            }
            () = ended.cancelled() => break,
        }
    }
    // Dropping stdin closes the pipe.
}

async fn read_loop(
    stdout: impl AsyncRead + Unpin,
    limits: Limits,
    incoming: mpsc::Sender<Incoming>,
    ended: CancellationToken,
) {
    let mut frames = FrameReader::new(BufReader::new(stdout), limits.max_message_bytes);
    loop {
        let frame = tokio::select! {
            frame = frames.next() => frame,
            () = ended.cancelled() => break,
        };
        let item = match frame {
            Ok(Some(Frame::Line(bytes))) => incoming_from_bytes(&bytes, &limits),
            Ok(Some(Frame::Oversized { len, head, tail })) => Incoming::Oversized {
                len,
                max: limits.max_message_bytes,
                id: jsonrpc::recover_id(&head, &tail),
            },
            Ok(None) | Err(_) => break,
        };
        if incoming.send(item).await.is_err() {
            break;
        }
    }
    // Dropping the sender is the end of the stream for the connection.
}

async fn stderr_loop(
    server: String,
    stderr: impl AsyncRead + Unpin,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stderr).split(b'\n');
    while let Ok(Some(line)) = lines.next_segment().await {
        // Redacted before it is cut, so a secret that straddles the cut is still recognised; from here on (the
        // log, `doctor`, the status tool, an error an agent reads) only the redacted line exists.
        let raw: String = String::from_utf8_lossy(&line)
            .chars()
            .take(STDERR_REDACT_CHARS)
            .collect();
        let text: String = audit::redact(&raw)
            .chars()
            .take(STDERR_LINE_CHARS)
            .collect();
        tracing::debug!(server = %server, "stderr: {text}");
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(text);
        }
    }
}
