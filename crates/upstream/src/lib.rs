//! Upstream MCP servers as toolgate sees them: a supervised transport per server (a stdio child process,
//! Streamable HTTP or HTTP+SSE as the config says; any `Connector`, such as the in-process `memory` link, through
//! `Upstream::start_linked`), its protocol era found by probing (`server/discover`, else `initialize`), its whole catalog (every page of tools,
//! resources, resource templates and prompts), refreshed on `list_changed`, and restarted with backoff when it
//! dies.
//!
//! `connection` is the JSON-RPC peer; how its messages travel is a `link` (`stdio`, `http`, `memory`), so another
//! transport is a new link and connector, not a change to the peer or the supervisor.
//!
//! This crate speaks to upstreams only. It does not know clients, names exposed to them, or policy: the gateway
//! does. Payloads stay raw JSON; only `_meta` protocol keys are adapted to the upstream's era, and `_meta` keys in
//! toolgate's own namespace (`toolgate/…`) are removed from whatever an upstream sends (`own_meta`). What an upstream
//! writes to stderr, and errors that quote it, are redacted before they are kept.

#![deny(clippy::print_stdout)]

mod call_headers;
mod catalog;
mod connection;
mod era;
mod error;
mod handshake;
mod http;
mod link;
pub mod memory;
mod own_meta;
mod process;
mod stdio;
mod supervisor;
mod trace_context;

pub use call_headers::{current_call_headers, with_call_headers, CallHeaders};
pub use catalog::Catalog;
pub use connection::{Connection, Event, ProgressRoutes, Sinks};
pub use era::{
    Era, CLIENT_CAPABILITIES_META, CLIENT_INFO_META, LEGACY_VERSIONS, MODERN_VERSION,
    PROTOCOL_META_PREFIX, PROTOCOL_VERSION_META, SERVER_INFO_META,
};
pub use error::{CallError, Result};
pub use http::HttpConnector;
pub use link::{BoxFuture, Connector, Incoming, Link, Opened, SendError};
pub use own_meta::{is_own_meta_key, strip_own_meta, OWN_META_PREFIX};
pub use process::Containment;
pub use stdio::{StdioConnector, StdioLink};
pub use supervisor::{Options, State, Status, Upstream};
pub use trace_context::{current_traceparent, with_traceparent};
