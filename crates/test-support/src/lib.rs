//! Test support: a scripted stdio client, the code-mode benchmark's tasks, and a fixture MCP server that speaks both protocol eras and exercises what the gateway must carry
//! (pagination, progress, cancellation, list changes, server→client requests, rich payloads, misbehaviour).
//!
//! It is bundled into the `toolgate` binary as a hidden subcommand so `toolgate demo` and the benchmarks need
//! nothing else installed, and it runs in process over channels (`serve`) for tests that want no process. It is a test peer, not a product feature: it has no policy and no confinement.

#![deny(clippy::print_stdout)]

mod client;
mod conformance;
mod context;
mod fixture;
mod ports;
pub mod postgres;
mod tasks;

pub use client::{exited, list_all, modern_meta, StdioClient};
pub use context::{measure, returned, run_params, search_params, Measured};
pub use fixture::{rich_definition, rich_result, serve, serve_stdio, FixtureOptions};
pub use ports::free_port;
pub use tasks::{context_tasks, same_answer, ContextTask};
