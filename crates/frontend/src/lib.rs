//! Front ends: the transports clients reach toolgate through. Each one frames messages on its transport and
//! drives `gateway` sessions through their public API (`Session::open`, `handle` with the message's
//! `RequestMeta`, the `Drain` of outgoing messages tagged by stream, `close`); none decides anything about a
//! message. Newline-delimited JSON-RPC on a reader and a writer (`stdio`), and Streamable HTTP with a WebSocket
//! entry point beside it (`http`).

#![deny(clippy::print_stdout)]

mod http;
mod stdio;

pub use http::auth_live::{AuthReload, NextAuth};
pub use http::{
    AdminVerb, AdminVerbs, HttpError, HttpServer, ProfileStore, VerbRefusal, DEFAULT_LISTEN,
};
pub use stdio::serve_stdio;
