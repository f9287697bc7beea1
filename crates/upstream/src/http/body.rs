//! Reading HTTP bodies within bounds: a JSON body up to the message limit (past it, reading stops and the
//! connection is dropped), an error body up to a few kilobytes, an event stream chunk by chunk. A body that stays
//! silent past the idle timeout is a failure, except an event stream, which idles by design.

use super::sse::{SseItem, SseParser};
use super::READ_IDLE_TIMEOUT;
use reqwest::Response;

/// Error bodies are only shown in messages; more is never read.
const ERROR_BODY_BYTES: usize = 8 * 1024;

pub(crate) enum Body {
    Complete(Vec<u8>),
    /// Over the limit: `len` is the declared length or what was read before stopping.
    Oversized {
        len: usize,
    },
    Failed(String),
}

/// Reads a whole body of at most `max` bytes.
pub(crate) async fn read_bounded(resp: &mut Response, max: usize) -> Body {
    if let Some(len) = resp.content_length() {
        if len > max as u64 {
            return Body::Oversized {
                len: usize::try_from(len).unwrap_or(usize::MAX),
            };
        }
    }
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(READ_IDLE_TIMEOUT, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                if body.len() + chunk.len() > max {
                    return Body::Oversized {
                        len: body.len() + chunk.len(),
                    };
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Ok(None)) => return Body::Complete(body),
            Ok(Err(e)) => return Body::Failed(super::describe(e)),
            Err(_) => {
                return Body::Failed(format!(
                    "the body stalled for {} s",
                    READ_IDLE_TIMEOUT.as_secs()
                ))
            }
        }
    }
}

/// The first few kilobytes of an error body, as text for a message.
pub(crate) async fn error_text(resp: &mut Response) -> String {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_BYTES {
        match tokio::time::timeout(READ_IDLE_TIMEOUT, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(ERROR_BODY_BYTES);
    String::from_utf8_lossy(&body).into_owned()
}

/// The next events of an event stream; `None` when it ended, `Err` when it broke.
pub(crate) async fn next_events(
    resp: &mut Response,
    parser: &mut SseParser,
) -> Result<Option<Vec<SseItem>>, String> {
    match resp.chunk().await {
        Ok(Some(chunk)) => Ok(Some(parser.feed(&chunk))),
        Ok(None) => Ok(None),
        Err(e) => Err(super::describe(e)),
    }
}

/// Whether a response is an event stream (`text/event-stream`, any parameters).
pub(crate) fn is_event_stream(resp: &Response) -> bool {
    content_type(resp).is_some_and(|t| t == "text/event-stream")
}

/// Whether a response is a JSON body (`application/json` or a `+json` type).
pub(crate) fn is_json(resp: &Response) -> bool {
    content_type(resp).is_some_and(|t| t == "application/json" || t.ends_with("+json"))
}

fn content_type(resp: &Response) -> Option<String> {
    let value = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)?
        .to_str()
        .ok()?;
    Some(
        value
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase(),
    )
}
