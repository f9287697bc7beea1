//! The front ends' one integration test binary, a module per front end, each driving a real gateway with no
//! upstream through the transport a client would use.

// Tests fail by panicking; unwrap and expect are the clearest way to say what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http;
mod http_admin;
mod http_auth;
mod stdio;
mod ws;
