//! What a `Gateway` is started with, and how a validated config becomes it: naming, limits, timeouts, approvals,
//! pins and code mode. It reads no file and starts nothing.

use crate::aggregate::Naming;
use config::Config;
use std::time::Duration;

/// How long the first list waits for upstreams still starting before it lists what is ready; the rest arrive
/// with `list_changed`. Long enough for a server launched through a package runner on a busy machine, short
/// enough that a silent upstream does not stall a client that has work to do (the start-up timeout is 30 s).
const FIRST_LIST_WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct Options {
    pub naming: Naming,
    pub limits: jsonrpc::Limits,
    pub page_size: usize,
    /// How long `ready` (doctor, preview) waits for every upstream's first start.
    pub startup_timeout: Duration,
    /// How long the first list or call waits for upstreams still starting (at most `startup_timeout`).
    pub first_list_wait: Duration,
    pub upstream: upstream::Options,
    /// `wrap`: one server that must look exactly like itself (its identity, no extra tools).
    pub wrap: bool,
    pub approvals: config::Approvals,
    /// `"pins": {"onChange": "ask"}`: quarantined tools stay listed and every call of one asks.
    pub quarantine_asks: bool,
    /// `"pins": {"newTools": "hold"}` (the default): a tool or prompt new to an already-listed server is held.
    pub hold_new_tools: bool,
    /// Direct or code mode, and how programs run.
    pub code: crate::codemode::options::CodeOptions,
    /// How long a call bridged for a modern client waits for the client's retry with its answers (`bridge`).
    pub bridge_wait: Duration,
    /// The names toolgate's own tools are listed under: its own, or ToolHub's (`mcp-toolhub`).
    pub surface: crate::own::Surface,
    /// Spans and metrics of the pipeline (`telemetry`); off unless the caller started them.
    pub telemetry: telemetry::Telemetry,
    /// The token buckets a call must find a token in before it runs (`rate`).
    pub rate_limits: config::RateLimits,
    /// Upstream credentials and whom they are granted to (`credentials`); a reload replaces them.
    pub credentials: Vec<config::Credential>,
}

impl Options {
    pub fn from_config(config: &Config, wrap: bool) -> Self {
        let limits = jsonrpc::Limits {
            max_message_bytes: config.limits.max_message_bytes.value,
            max_depth: config.limits.max_depth.value,
        };
        Self {
            naming: Naming {
                separator: config.separator.value.clone(),
                prefix: config.prefix_tools.value && !wrap,
            },
            limits,
            page_size: config.limits.page_size.value,
            startup_timeout: config.limits.startup_timeout.value,
            first_list_wait: config.limits.startup_timeout.value.min(FIRST_LIST_WAIT),
            upstream: upstream::Options {
                limits,
                request_timeout: config.limits.request_timeout.value,
                ..upstream::Options::default()
            },
            wrap,
            approvals: config.approvals.clone(),
            quarantine_asks: config.pins_on_change_ask,
            hold_new_tools: !config.pins_accept_new_tools,
            code: crate::codemode::options::CodeOptions::from_config(config),
            // The upstream call cannot outlive its request timeout, so a longer wait would gain nothing.
            bridge_wait: config.limits.request_timeout.value,
            surface: crate::own::Surface::Toolgate,
            telemetry: telemetry::Telemetry::off(),
            rate_limits: config.rate_limits,
            credentials: config.credentials.clone(),
        }
    }
}
