//! Which keys toolgate knows, level by level, and how any other key is judged: a key toolgate reads, another
//! client's documented setting (accepted, with what it means for the user), a misspelling of a toolgate key
//! (refused with the fix), or nobody's key (ignored with a warning). The two levels that share a file with other
//! programs, the top level and each server entry, are judged here; every other section of toolgate's own refuses
//! any key it does not read (`deny_unknown_fields`), and [`did_you_mean`] turns that refusal into the fix.
//! Pure data and string comparison; nothing here reads a config.

/// Keys one level reads, and the keys other clients document there.
pub(crate) struct Level {
    pub read: &'static [&'static str],
    pub foreign: &'static [(&'static str, &'static str)],
    /// Whether a slip in another client's key is refused too. Only where the clients' keys are all listed: at
    /// the top level a client's key toolgate never heard of may sit one slip from one it has.
    pub foreign_slips: bool,
}

/// How one key of a [`Level`] is taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Read,
    /// Another client's setting; the text says what it means under toolgate. `near` is the toolgate key it is
    /// one slip away from, so its value can be checked for what the user may have meant.
    Foreign {
        why: &'static str,
        near: Option<&'static str>,
    },
    /// A misspelling of this toolgate key.
    Misspelt(&'static str),
    Unknown,
}

impl Level {
    pub(crate) fn judge(&self, key: &str) -> Verdict {
        if self.read.contains(&key) {
            return Verdict::Read;
        }
        let near = self.read.iter().copied().find(|k| near_miss(k, key));
        if let Some((_, why)) = self.foreign.iter().find(|(k, _)| *k == key) {
            return Verdict::Foreign { why, near };
        }
        let foreign_slip = || {
            self.foreign
                .iter()
                .map(|(k, _)| *k)
                .find(|k| self.foreign_slips && near_miss(k, key))
        };
        match near.or_else(foreign_slip) {
            Some(k) => Verdict::Misspelt(k),
            None => Verdict::Unknown,
        }
    }
}

/// The top level of a config file: toolgate's sections, and what Claude Desktop, Claude Code, Codex, VS Code
/// and toolscript-mcp put beside them in the files toolgate is pointed at.
pub(crate) const TOP_LEVEL: Level = Level {
    read: &[
        "http",
        "telemetry",
        "pins",
        "sandbox",
        "stateDir",
        "state_dir",
        "auditWitness",
        "audit_witness",
        "approvals",
        "permissions",
        "policy",
        "profiles",
        "profile",
        "mcpServers",
        "mcp_servers",
        "servers",
        "inputs",
        "separator",
        "prefixTools",
        "prefix_tools",
        "limits",
        "workspace",
        "hooks",
        "rateLimits",
        "rate_limits",
        "credentials",
        "mode",
    ],
    foreign: &[
        // Codex's config.toml.
        ("model", "Codex's model: not used by toolgate"),
        ("model_provider", "Codex's setting: not used by toolgate"),
        ("model_providers", "Codex's setting: not used by toolgate"),
        ("model_reasoning_effort", "Codex's setting: not used by toolgate"),
        ("approval_policy", "Codex's approval policy is NOT applied: toolgate's policy decides every call"),
        ("sandbox_mode", "Codex's sandbox is NOT applied: the servers run with the rights toolgate gives them"),
        ("notify", "Codex's setting: not used by toolgate"),
        ("history", "Codex's setting: not used by toolgate"),
        ("tui", "Codex's setting: not used by toolgate"),
        ("projects", "the client's per-project settings: not used by toolgate"),
        // Claude Desktop and Claude Code.
        ("globalShortcut", "Claude Desktop's setting: not used by toolgate"),
        ("env", "Claude Code's environment for its own tools: not passed to servers (give each server's env)"),
        ("theme", "Claude Code's setting: not used by toolgate"),
    ],
    foreign_slips: false,
};

/// The top level of MCP Unified's `gateway.json`, read beside toolgate's own keys when a file holds one of these.
/// Only in that shape: elsewhere `store` and the rest are nobody's keys.
pub(crate) const UNIFIED: Level = Level {
    read: &["store", "default_preset_id", "tool_use_reporting"],
    foreign: &[],
    foreign_slips: false,
};

/// A server entry: the keys `RawServer` reads and the ones clients document.
pub(crate) const SERVER: Level = Level {
    read: READ,
    foreign: CLIENT_ONLY,
    foreign_slips: true,
};

/// The top level of a policy file: ToolFence's, and the inside of toolgate's own `policy` section.
pub(crate) const POLICY_FILE: &[&str] = &[
    "version",
    "default",
    "path_case",
    "precedence",
    "names",
    "rules",
    "mappings",
];

/// Claude Code's permission lists, the inside of `permissions`.
pub(crate) const PERMISSION_LISTS: &[&str] = &["allow", "ask", "deny"];

/// toolgate's own sections by the keys inside them, so a section under a name no slip explains is still
/// recognised. A unit test holds each list to its serde shape.
pub(crate) const SECTIONS: &[(&str, &[&str])] = &[
    ("permissions", &["default", "allow", "ask", "deny"]),
    ("policy", POLICY_FILE),
    (
        "sandbox",
        &[
            "require",
            "network",
            "limits",
            "timeout_seconds",
            "timeoutSeconds",
            "node",
        ],
    ),
    (
        "approvals",
        &[
            "wait_seconds",
            "waitSeconds",
            "expire_seconds",
            "expireSeconds",
            "elicitation",
            "elicitation_for_writes",
            "elicitationForWrites",
        ],
    ),
    ("hooks", &["pre", "post"]),
    ("pins", &["onChange", "on_change", "newTools", "new_tools"]),
    (
        "rateLimits",
        &[
            "perIdentity",
            "per_identity",
            "perTool",
            "per_tool",
            "perServer",
            "per_server",
        ],
    ),
    (
        "limits",
        &[
            "maxMessageBytes",
            "max_message_bytes",
            "maxDepth",
            "max_depth",
            "requestTimeoutSeconds",
            "request_timeout_seconds",
            "startupTimeoutSeconds",
            "startup_timeout_seconds",
            "pageSize",
            "page_size",
        ],
    ),
];

/// Keys clients document in a server entry that toolgate accepts without acting on them, and what that means.
pub(crate) const CLIENT_ONLY: &[(&str, &str)] = &[
    (
        "autoApprove",
        "the client's auto-approval list is not used: toolgate's policy decides every call",
    ),
    (
        "alwaysAllow",
        "the client's auto-approval list is not used: toolgate's policy decides every call",
    ),
    (
        "timeout",
        "not used: give tool_timeout_sec or requestTimeoutSeconds for a per-call timeout",
    ),
    (
        "transportType",
        "not used: \"type\" (or command/url) decides the transport",
    ),
    (
        "oauth",
        "OAuth for HTTP servers is not supported by this version",
    ),
    (
        "headersHelper",
        "not run: give the headers in headers, env_http_headers or bearer_token_env_var",
    ),
    (
        "dev",
        "VS Code's development mode (watch, debug) does not apply",
    ),
    (
        "sandboxEnabled",
        "VS Code's switch is not read: toolgate contains every stdio server (see the entry's \"sandbox\")",
    ),
    ("description", "informational"),
    ("gallery", "informational"),
    ("version", "informational"),
];

/// Every key `RawServer` reads, for telling a misspelling from another client's setting.
pub(crate) const READ: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "envFile",
    "env_file",
    "cwd",
    "type",
    "transport",
    "url",
    "headers",
    "http_headers",
    "env_http_headers",
    "bearer_token_env_var",
    "disabled",
    "enabled",
    "enabled_tools",
    "enabledTools",
    "disabled_tools",
    "disabledTools",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "protocol",
    "kind",
    "requestTimeoutSeconds",
    "request_timeout_seconds",
    "sandbox",
];

/// Same letters ignoring case, `_` and `-`, or one slip apart (a letter missing, added, changed or two swapped),
/// or two for keys of four letters or more.
pub(crate) fn near_miss(known: &str, key: &str) -> bool {
    let squash = |s: &str| s.to_ascii_lowercase().replace(['_', '-'], "");
    let (a, b) = (squash(known), squash(key));
    let distance = edit_distance(&a, &b);
    a == b || (a.len() >= 2 && distance <= 1) || (a.len() >= 4 && distance <= 2)
}

/// Edits between `a` and `b`, a swap of neighbours counting as one (optimal string alignment).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The fix for a key a section of toolgate's own refused: the expected key it is a slip of, if any.
pub(crate) fn did_you_mean<'a>(
    key: &str,
    expected: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    expected.into_iter().find(|k| near_miss(k, key))
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
