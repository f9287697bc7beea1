//! The stdio front end: newline-delimited JSON-RPC on a reader and a writer (stdin and stdout in `serve`).
//!
//! One reader loop decodes frames and hands them to the session; one writer task owns the output and is the only
//! code that writes to it, from the session's `Outbox`. Every refusal of the framing layer becomes a JSON-RPC error,
//! never a crash or a hang. A client that stops reading is closed when its outbox overflows (see `outbox`).

use crate::gateway::Gateway;
use crate::outbox::{Drain, Outbox};
use crate::session::Session;
use jsonrpc::{decode, error_object, error_response, Frame, FrameReader};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// Serves one client until its input ends, or until it stops reading what toolgate sends it (its outbox
/// overflowed: the session is closed rather than waited on). Returns after pending output was flushed (bounded
/// wait).
pub async fn serve_stdio(
    gateway: Arc<Gateway>,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<()> {
    let limits = gateway.opts.limits;
    let (outbox, drain) = Outbox::new(limits.max_message_bytes);
    let writer = tokio::spawn(write_loop(drain, output));
    let session = Session::new(Arc::clone(&gateway), outbox.clone());
    let closed = outbox.closed();
    let mut frames = FrameReader::new(BufReader::new(input), limits.max_message_bytes);
    let result = loop {
        let frame = tokio::select! {
            biased;
            () = closed.cancelled() => break Ok(()),
            f = frames.next() => match f {
                Ok(Some(f)) => f,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            },
        };
        match frame {
            Frame::Line(bytes) => match decode(&bytes, &limits) {
                Ok(msg) => session.handle(msg).await,
                Err(e) => {
                    outbox
                        .send(error_response(
                            e.id.as_ref(),
                            error_object(e.code, e.message, None),
                        ))
                        .await;
                }
            },
            Frame::Oversized { len, head, tail } => {
                let id = jsonrpc::recover_id(&head, &tail);
                let msg = format!(
                    "message of {len} bytes exceeds the limit of {} bytes",
                    limits.max_message_bytes
                );
                outbox
                    .send(error_response(
                        id.as_ref(),
                        error_object(jsonrpc::PARSE_ERROR, msg, None),
                    ))
                    .await;
            }
        }
    };
    session.close();
    drop(session);
    drop(outbox);
    // Running requests were cancelled; give the writer a moment to flush what is already queued.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    result
}

/// The only code that writes to the client. It stops at the first failed write, and at once when the outbox is
/// closed (a client that does not read would block the write forever).
async fn write_loop(mut drain: Drain, mut out: impl AsyncWrite + Unpin) {
    while let Some(line) = drain.next().await {
        if out.write_all(&line.bytes).await.is_err() || out.flush().await.is_err() {
            break;
        }
        drain.written(&line);
    }
}

#[cfg(test)]
#[path = "stdio_tests.rs"]
mod tests;
