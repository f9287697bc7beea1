//! Integration tests of the store crate, one binary with a module per concern.
//!
//! They exercise the public API only, against real files in temporary directories; no test
//! depends on the host's state directory or environment.

// Helpers outside `#[test]` functions panic on setup failure by design: a broken fixture
// should stop the test, and clippy's test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approvals;
mod capacity;
mod concurrency;
mod contract;
mod crash;
mod grants_pins;
mod model;
mod namespace;
mod pg;
mod reporting;
mod sealed;
mod support;
