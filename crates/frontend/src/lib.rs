//! Front ends: the transports clients reach toolgate through. Each one frames messages on its transport and
//! drives `gateway` sessions through their public API (`Session::open`, `handle` with the message's
//! `RequestMeta`, the `Drain` of outgoing messages tagged by stream, `close`); none decides anything about a
//! message. Today: newline-delimited JSON-RPC on a reader and a writer (`stdio`).

#![deny(clippy::print_stdout)]

#[allow(dead_code)]
mod http;
mod stdio;

pub use stdio::serve_stdio;
