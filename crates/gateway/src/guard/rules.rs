//! What the policy is compiled from: the user's structured policy and permissions, with toolgate's own rules in
//! front (the `.git` directory, the state root and the config file protected; the workspace readable when no
//! policy is given), in the context of the canonical workspace and HOME. It builds rule sources; the `policy`
//! crate compiles and decides them.

use super::OWN_SERVER;
use config::Config;
use serde_json::{json, Value};
use std::path::Path;

/// The context rules are compiled in: the canonical workspace, and HOME when it resolves.
pub(super) fn context(workspace: &Path) -> policy::Context {
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    policy::Context {
        workspace: workspace.to_string_lossy().into_owned(),
        home: home.map(|h| h.to_string_lossy().into_owned()),
    }
}

/// The structured policy and the permissions that are compiled: with no policy section at all, every call
/// asks (toolgate is deny-by-default, and a human may still say yes).
pub(super) fn sources(config: &Config) -> (Value, Option<Value>) {
    let permissions = match (&config.policy.permissions, &config.policy.policy) {
        (None, None) => Some(json!({"default": "ask"})),
        // Permission strings alone mean what they mean in Claude Code: a call no rule matches asks. A
        // structured `policy` without `default` is a firewall's, and denies.
        (Some(p), None) if p.get("default").is_none() => {
            let mut p = p.clone();
            if let Value::Object(m) = &mut p {
                m.insert("default".into(), json!("ask"));
            }
            Some(p)
        }
        (p, _) => p.clone(),
    };
    (with_builtin_rules(config), permissions)
}

/// The user's structured policy with toolgate's own rules in front. Always: writes and deletes are denied in
/// `.git/` (hooks and config there run code); every operation, reads included, is denied in the state root
/// (approvals, pins and the audit trail live there: reading them shows what was approved and what runs) and on
/// the config file (the policy must not rewrite itself, and upstream credentials may sit in it), for every tool,
/// proxied ones included. With no policy of the user's at all, toolgate's
/// own tools also behave as a workspace server should by default: reading, listing and git inspection inside
/// the workspace are allowed, and everything else asks.
fn with_builtin_rules(config: &Config) -> Value {
    let mut structured = config.policy.policy.clone().unwrap_or_else(|| json!({}));
    let writes = json!(["fs.write", "fs.delete"]);
    let mut rules = vec![
        json!({"id": "builtin.protect-git", "effect": "deny", "operations": writes,
                                "paths": ["${workspace}/.git/**"]}),
    ];
    let state_root = config
        .state_dir
        .as_ref()
        .map(|s| s.value.clone())
        .or_else(|| crate::state::state_root().ok());
    if let Some(root) = state_root.and_then(|r| std::fs::canonicalize(&r).ok().or(Some(r))) {
        rules.push(json!({"id": "builtin.protect-state", "effect": "deny",
                          "paths": [format!("{}/**", escape_glob(&root.to_string_lossy()))]}));
    }
    if let Some(file) = config
        .source
        .as_ref()
        .and_then(|f| std::fs::canonicalize(f).ok())
    {
        rules.push(json!({"id": "builtin.protect-config", "effect": "deny",
                          "paths": [escape_glob(&file.to_string_lossy())]}));
    }
    if config.policy.is_empty() {
        rules.push(json!({"id": "builtin.workspace-read", "effect": "allow", "operations": ["fs.read", "git.read"],
                          "tools": [format!("{OWN_SERVER}__*")], "paths": ["${workspace}/**"]}));
    }
    let user: Vec<Value> = structured
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    rules.extend(user);
    if let Value::Object(m) = &mut structured {
        m.insert("rules".into(), Value::Array(rules));
    }
    structured
}

fn escape_glob(path: &str) -> String {
    path.chars().fold(String::new(), |mut out, c| {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

/// Rules located in the config file, so they are named with where they were written (`toolgate.toml:12`).
pub(super) fn with_origins(policy: policy::Policy, config: &Config) -> policy::Policy {
    let Some(file) = config.source.as_deref() else {
        return policy;
    };
    match std::fs::read_to_string(file) {
        Ok(text) => {
            let name = file.file_name().unwrap_or(file.as_os_str());
            policy.with_origins(&name.to_string_lossy(), &text)
        }
        Err(_) => policy,
    }
}
