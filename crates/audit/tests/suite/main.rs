//! Integration tests of the audit crate, one binary with a module per concern.

// Helpers outside `#[test]` functions panic on setup failure by design: a broken fixture
// should stop the test, and clippy's test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chain;
mod privacy;
mod redaction;
mod witness;
mod writer;
