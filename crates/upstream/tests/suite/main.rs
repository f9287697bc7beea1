//! The upstream crate's one integration test binary: HTTP links against servers the tests start, through
//! `Upstream::start` as the gateway uses it.

// Tests fail by panicking; unwrap and expect are the clearest way to say what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_asks;
mod http_links;
mod peer;
