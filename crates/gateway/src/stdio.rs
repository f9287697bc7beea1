//! The stdio front end: newline-delimited JSON-RPC on a reader and a writer (stdin and stdout in `serve`).
//!
//! One reader loop decodes frames and hands them to the session; one writer task owns the output and is the only
//! code that writes to it. Every refusal of the framing layer becomes a JSON-RPC error, never a crash or a hang.

use crate::gateway::Gateway;
use crate::session::Session;
use jsonrpc::{decode, encode_line, error_object, error_response, Frame, FrameReader};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Bounded so a client that stops reading slows the gateway down instead of growing its memory. With the
/// requests in flight (`session::MAX_IN_FLIGHT`) this bounds what a client that never reads can make toolgate
/// hold: this many queued messages plus one answer per request slot.
const OUTBOX_CAPACITY: usize = 256;

/// Serves one client until its input ends. Returns after pending output was flushed (bounded wait).
pub async fn serve_stdio(
    gateway: Arc<Gateway>,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<()> {
    let limits = gateway.opts.limits;
    let (tx, rx) = mpsc::channel(OUTBOX_CAPACITY);
    let writer = tokio::spawn(write_loop(rx, output, limits.max_message_bytes));
    let session = Session::new(Arc::clone(&gateway), tx.clone());
    let mut frames = FrameReader::new(BufReader::new(input), limits.max_message_bytes);
    let result = loop {
        let frame = match frames.next().await {
            Ok(Some(f)) => f,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        match frame {
            Frame::Line(bytes) => match decode(&bytes, &limits) {
                Ok(msg) => session.handle(msg).await,
                Err(e) => {
                    let _ = tx
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
                let _ = tx
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
    drop(tx);
    // Running requests were cancelled; give the writer a moment to flush what is already queued.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    result
}

async fn write_loop(mut rx: mpsc::Receiver<Value>, mut out: impl AsyncWrite + Unpin, max: usize) {
    while let Some(msg) = rx.recv().await {
        let line = match encode_line(&msg, max) {
            Ok(line) => line,
            Err(len) => match oversized_replacement(&msg, len, max) {
                Some(line) => line,
                None => continue,
            },
        };
        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
            break;
        }
    }
}

/// A response too large to send becomes an error response for the same id; a notification is dropped.
fn oversized_replacement(msg: &Value, len: usize, max: usize) -> Option<Vec<u8>> {
    let id = msg.get("id").and_then(jsonrpc::Id::from_value);
    let is_response = msg.get("result").is_some() || msg.get("error").is_some();
    if !is_response {
        tracing::warn!("dropped a {len}-byte message to the client, over the {max}-byte limit");
        return None;
    }
    let err = error_object(
        jsonrpc::INTERNAL_ERROR,
        format!(
            "the response of {len} bytes exceeds the limit of {max} bytes (limits.maxMessageBytes)"
        ),
        None,
    );
    encode_line(&error_response(id.as_ref(), err), max).ok()
}

#[cfg(test)]
#[path = "stdio_tests.rs"]
mod tests;
