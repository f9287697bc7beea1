//! Which server keys toolgate knows: the ones clients document that it accepts without acting on (with what that
//! means for the user), the ones it reads, and how a misspelling of one is told from another client's setting.
//! Pure data and string comparison; nothing here reads a config.

/// Keys clients document that toolgate accepts without acting on them, and what that means for the user.
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

/// Same letters ignoring case, `_` and `-`, or one or two edits apart (for keys of four letters or more).
pub(crate) fn near_miss(known: &str, key: &str) -> bool {
    let squash = |s: &str| s.to_ascii_lowercase().replace(['_', '-'], "");
    let (a, b) = (squash(known), squash(key));
    a == b || (a.len() >= 4 && edit_distance(&a, &b) <= 2)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}
