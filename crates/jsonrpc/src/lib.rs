//! The JSON-RPC 2.0 envelope as MCP uses it: strict decoding of one message, newline-delimited framing with
//! size limits, error codes, and builders for responses.
//!
//! This crate knows nothing of MCP methods or eras; it only guarantees that what it hands on is one well-formed
//! message within the configured limits, and that payloads stay raw `serde_json::Value` (never typed and
//! re-serialised, which would drop fields nobody here knows).

#![deny(clippy::print_stdout)]

mod canonical;
mod codes;
mod decode;
mod framing;
mod message;
#[cfg(feature = "io")]
mod stdio;
mod strict;

pub use canonical::{canonical_json, sha256_hex, to_hex};
pub use codes::{
    HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY, PARSE_ERROR, REQUEST_CANCELLED, REQUEST_TIMEOUT,
    RESOURCE_NOT_FOUND_LEGACY, UNSUPPORTED_PROTOCOL_VERSION, UPSTREAM_UNAVAILABLE,
};
pub use decode::{decode, DecodeError, Limits};
#[cfg(feature = "io")]
pub use framing::FrameReader;
pub use framing::{encode_line, recover_id, Frame, Gathered};
pub use message::{
    error_object, error_response, meta_field, notification, object, request, result_response, Id,
    Message,
};
#[cfg(feature = "io")]
pub use stdio::{stdio_streams, Input, Output};
pub use strict::parse_strict;
