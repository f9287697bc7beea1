//! Integration tests of the store crate, one binary with a module per concern.
//!
//! They exercise the public API only, against real files in temporary directories; no test
//! depends on the host's state directory or environment.

mod approvals;
mod capacity;
mod concurrency;
mod crash;
mod grants_pins;
mod namespace;
mod reporting;
mod support;
