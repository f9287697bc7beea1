//! JSON-RPC and MCP error codes used by toolgate, with the reason each toolgate-specific one exists.

/// Invalid JSON, invalid UTF-8, lone surrogates, duplicate keys, nesting too deep, or an oversized frame.
pub const PARSE_ERROR: i64 = -32700;
/// Well-formed JSON that is not a valid JSON-RPC message (null or fractional id, batch, wrong `jsonrpc`).
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// An upstream server is not running or its connection closed (the TypeScript SDK's `ConnectionClosed`).
pub const UPSTREAM_UNAVAILABLE: i64 = -32000;
/// An upstream did not answer in time (the TypeScript SDK's `RequestTimeout`).
pub const REQUEST_TIMEOUT: i64 = -32001;
/// Legacy-era "resource not found"; 2026-07-28 uses `INVALID_PARAMS` instead.
pub const RESOURCE_NOT_FOUND_LEGACY: i64 = -32002;
/// The request was cancelled before an answer arrived.
pub const REQUEST_CANCELLED: i64 = -32800;

/// 2026-07-28: the `_meta` protocol version differs from the HTTP header.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability the client did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the request names a protocol version this server does not speak.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
