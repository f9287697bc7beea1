//! The stdio front end: newline-delimited JSON-RPC on a reader and a writer (stdin and stdout in `serve`).
//!
//! One reader loop decodes frames and hands them to the session; one writer task owns the output and is the only
//! code that writes to it, from the session's `Drain`. stdio is one stream, so every message goes there whatever
//! stream it is tagged with, in the order the session queued it. Every refusal of the framing layer becomes a
//! JSON-RPC error (`Session::answer_framing_error`), never a crash or a hang. A client that stops reading is
//! closed when its outbox overflows (see `gateway`'s outbox). The transport declares no protocol version and
//! authenticates nobody, so every message carries the default `RequestMeta`.

use gateway::{Drain, FramingError, Gateway, RequestMeta, Session};
use jsonrpc::{decode, Frame, FrameReader};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// How long a session that ended waits for its queued output to be written: a client that stopped reading must
/// not keep toolgate from exiting.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// Serves one client until its input ends, or until it stops reading what toolgate sends it (its outbox
/// overflowed: the session is closed rather than waited on). Returns after pending output was flushed (bounded
/// wait).
pub async fn serve_stdio(
    gateway: Arc<Gateway>,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<()> {
    let (session, drain) = Session::open(&gateway);
    let writer = tokio::spawn(write_loop(drain, output));
    let limits = session.limits();
    let meta = RequestMeta::default();
    let mut frames = FrameReader::new(BufReader::new(input), limits.max_message_bytes);
    let result = loop {
        let frame = tokio::select! {
            biased;
            () = session.closed() => break Ok(()),
            f = frames.next() => match f {
                Ok(Some(f)) => f,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            },
        };
        match frame {
            Frame::Line(bytes) => match decode(&bytes, &limits) {
                Ok(msg) => session.handle(msg, &meta).await,
                Err(e) => {
                    session
                        .answer_framing_error(FramingError::Undecodable(e))
                        .await
                }
            },
            Frame::Oversized { len, head, tail } => {
                let id = jsonrpc::recover_id(&head, &tail);
                session
                    .answer_framing_error(FramingError::Oversized { len, id })
                    .await;
            }
        }
    };
    session.close();
    drop(session);
    // Running requests were cancelled; the writer ends once they are gone and what they queued is written.
    let _ = tokio::time::timeout(FLUSH_WAIT, writer).await;
    result
}

/// The only code that writes to the client. It stops at the first failed write, and at once when the session is
/// closed for not reading (a client that does not read would block the write forever). Answers already queued go
/// out with the one written (`jsonrpc::Gathered`). Each message's room in the session's bounds comes back when it
/// is dropped, after it was written.
async fn write_loop(mut drain: Drain, mut out: impl AsyncWrite + Unpin) {
    let mut gathered = jsonrpc::Gathered::default();
    let mut written = Vec::new();
    while let Some(message) = drain.next().await {
        let mut room = gathered.push(message.line());
        written.push(message);
        while room {
            let Some(more) = drain.try_next() else { break };
            room = gathered.push(more.line());
            written.push(more);
        }
        if out.write_all(gathered.bytes()).await.is_err() || out.flush().await.is_err() {
            break;
        }
        gathered.clear();
        written.clear();
    }
}
