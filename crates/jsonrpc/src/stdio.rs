//! The process's stdin and stdout as async streams for newline-delimited JSON-RPC.
//!
//! When they are pipes — the normal case under an MCP client — they become non-blocking tokio pipes: tokio's own
//! std streams hand every read and write to a blocking thread, which costs tens of microseconds a message.
//! Anything else (a terminal, a file) falls back to those std streams.

use std::os::fd::AsFd;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

pub type Input = Box<dyn AsyncRead + Unpin + Send>;
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// Must be called inside a tokio runtime.
pub fn stdio_streams() -> (Input, Output) {
    let input: Input = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(pipe::Receiver::from_owned_fd)
    {
        Ok(Ok(rx)) => Box::new(rx),
        _ => Box::new(tokio::io::stdin()),
    };
    let output: Output = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(pipe::Sender::from_owned_fd)
    {
        Ok(Ok(tx)) => Box::new(tx),
        _ => Box::new(tokio::io::stdout()),
    };
    (input, output)
}
