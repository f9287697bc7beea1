//! Raw serde shapes of toolgate's own config sections. Unknown keys inside them are errors that name the key.

use serde::Deserialize;
use std::collections::BTreeMap;

/// One entry of `mcpServers` (or VS Code's `servers`, or Codex's `[mcp_servers.NAME]`) with every key those
/// clients document, plus toolgate's per-server settings. Keys outside this shape land in `other`, where the
/// validator tells a client's own setting (accepted, reported) from a misspelling (refused).
#[derive(Debug, Deserialize)]
pub(crate) struct RawServer {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Codex: names of variables passed through from toolgate's environment.
    #[serde(default)]
    pub env_vars: Vec<String>,
    /// Cursor, VS Code: a `KEY=VALUE` file, relative to the config file.
    #[serde(rename = "envFile", alias = "env_file")]
    pub env_file: Option<String>,
    pub cwd: Option<String>,
    #[serde(rename = "type", alias = "transport")]
    pub kind: Option<String>,
    pub url: Option<String>,
    /// Claude Code, Cursor, VS Code `headers`; Codex `http_headers`.
    #[serde(default, alias = "http_headers")]
    pub headers: BTreeMap<String, String>,
    /// Codex: header name to the variable holding its value.
    #[serde(default)]
    pub env_http_headers: BTreeMap<String, String>,
    /// Codex: the variable holding a bearer token for an HTTP server.
    pub bearer_token_env_var: Option<String>,
    #[serde(default)]
    pub disabled: bool,
    /// Codex: `enabled = false` keeps the entry but does not start it.
    pub enabled: Option<bool>,
    #[serde(alias = "enabledTools")]
    pub enabled_tools: Option<Vec<String>>,
    #[serde(default, alias = "disabledTools")]
    pub disabled_tools: Vec<String>,
    /// Codex: seconds for the handshake and first catalog (float in Codex's docs).
    pub startup_timeout_sec: Option<f64>,
    pub startup_timeout_ms: Option<u64>,
    /// Codex: seconds one tool call may take.
    pub tool_timeout_sec: Option<f64>,
    pub protocol: Option<String>,
    /// The server's kind for the policy's built-in adapters; `"type"` is already the transport's.
    #[serde(rename = "kind")]
    pub kind_of_server: Option<String>,
    #[serde(alias = "request_timeout_seconds", rename = "requestTimeoutSeconds")]
    pub request_timeout_seconds: Option<u64>,
    /// toolgate's containment of this stdio server.
    pub sandbox: Option<serde_json::Value>,
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// A server's `"sandbox"` section.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServerSandbox {
    pub enabled: Option<bool>,
    pub network: Option<bool>,
    #[serde(rename = "unixSockets", alias = "unix_sockets")]
    pub unix_sockets: Option<bool>,
    #[serde(default)]
    pub writable: Vec<String>,
    #[serde(default)]
    pub require: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPins {
    #[serde(alias = "on_change", rename = "onChange")]
    pub on_change: Option<String>,
    #[serde(alias = "new_tools", rename = "newTools")]
    pub new_tools: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSandbox {
    #[serde(default)]
    pub require: Vec<String>,
    #[serde(default)]
    pub network: bool,
    pub limits: Option<RawSandboxLimits>,
    /// Code mode's wall clock per run (toolscript-mcp's key).
    #[serde(alias = "timeoutSeconds")]
    pub timeout_seconds: Option<u64>,
    /// toolscript-mcp's Node binary: accepted with a warning, it does not apply.
    pub node: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSandboxLimits {
    #[serde(alias = "cpuSeconds")]
    pub cpu_seconds: Option<u64>,
    #[serde(alias = "addressSpaceBytes")]
    pub address_space_bytes: Option<u64>,
    #[serde(alias = "fileSizeBytes")]
    pub file_size_bytes: Option<u64>,
    pub processes: Option<u64>,
    #[serde(alias = "openFiles")]
    pub open_files: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawApprovals {
    #[serde(alias = "waitSeconds")]
    pub wait_seconds: Option<u64>,
    #[serde(alias = "expireSeconds")]
    pub expire_seconds: Option<u64>,
    pub elicitation: Option<bool>,
    #[serde(alias = "elicitationForWrites")]
    pub elicitation_for_writes: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    #[serde(alias = "max_message_bytes", rename = "maxMessageBytes")]
    pub max_message_bytes: Option<usize>,
    #[serde(alias = "max_depth", rename = "maxDepth")]
    pub max_depth: Option<usize>,
    #[serde(alias = "request_timeout_seconds", rename = "requestTimeoutSeconds")]
    pub request_timeout_seconds: Option<u64>,
    #[serde(alias = "startup_timeout_seconds", rename = "startupTimeoutSeconds")]
    pub startup_timeout_seconds: Option<u64>,
    #[serde(alias = "page_size", rename = "pageSize")]
    pub page_size: Option<usize>,
}

/// `"hooks": {"pre": [...], "post": [...]}`. Entries stay JSON until each is read on its own, so an error
/// names the entry (`hooks.pre[1].timeout`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHooks {
    #[serde(default)]
    pub pre: Vec<serde_json::Value>,
    #[serde(default)]
    pub post: Vec<serde_json::Value>,
}

/// One external command hook.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHook {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(alias = "timeoutSeconds")]
    pub timeout_seconds: Option<u64>,
    /// Globs over `server__tool`; absent means every tool.
    pub tools: Option<Vec<String>>,
    /// Whether the hook is shown the call's arguments (redacted); off by default.
    #[serde(default)]
    pub arguments: bool,
    /// Directories the hook may write beneath, besides its private temporary directory.
    #[serde(default)]
    pub writable: Vec<String>,
    /// Whether the hook may reach the network; on by default (a hook may ask a policy service).
    pub network: Option<bool>,
}
