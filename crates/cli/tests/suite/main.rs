//! End-to-end tests of the `toolgate` binary over its real stdio path: framing, eras, forwarding, failure
//! isolation, configuration errors, and interop with the official SDK clients. One binary, one link step.

// Tests fail by panicking; unwrap and expect are the clearest way to say what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod adapters;
mod admin;
mod agent_view;
mod agreement;
mod approvals;
mod approvals_attacks;
mod approvals_exit;
mod audit_health;
mod audit_trail;
mod bridging;
mod client_configs;
mod clients;
mod codemode;
mod codemode_approvals;
mod codemode_bounds;
mod codemode_clients;
mod codemode_escape;
mod codemode_tasks;
mod config_errors;
mod conformance;
mod conformance_client;
mod conformance_dual;
mod containment;
mod demo;
mod eras;
mod first_hour;
mod flood;
mod forwarding;
mod framing;
mod governed_table;
mod hooks;
mod host_resolution;
mod http;
mod http_isolation;
mod http_upstreams;
mod interop;
mod isolation;
mod matrix;
mod mcp_unified;
mod operator_trust;
mod path_resolution;
mod pins;
mod policy;
mod policy_cli;
mod support;
mod switch_links;
mod tool_spellings;
mod toolfence;
mod toolhub;
mod toolscript_mcp;
mod workspace_tools;
