//! The bodies of the policy fuzz targets, shared with the policy crate's test suite (`tests/suite/fuzz_corpus.rs`),
//! which feeds every file of `fuzz/corpus/policy_*` through these same functions on each test run.
//!
//! - `decide`: adapter → normalisation → decision with arbitrary arguments against a fixed workspace policy. No
//!   panic; `decide` agrees with `explain`; an allowed filesystem read never leaves the workspace.
//! - `load`: policy loading and linting with arbitrary JSON. No panic; `load` succeeds exactly when `check_policy`
//!   reports no error.
//! - `definition`: tool-definition checks and the canonical hash. No panic; canonical JSON parses back to the same
//!   value (for float-free values: serde_json's default float parser is not exactly round-trip, so floats are
//!   skipped).

// Each fuzz target uses one of these entries.
#![allow(dead_code)]

use std::sync::OnceLock;

use policy::{
    canonical_json, check_policy, definition_hash, inspect_definition, lookalike_flags, Context,
    Effect, Lexical, Operation, Policy, PolicySources, ServerKind, Severity, ToolCall,
};
use serde_json::{json, Value};

fn workspace_policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| {
        let doc = json!({"default": "ask", "rules": [
            {"id": "no-env", "effect": "deny", "paths": ["**/.env"]},
            {"id": "no-keys", "effect": "deny", "paths": ["**/*.{pem,key}", "**/id_[rde]*"]},
            {"id": "no-rm", "effect": "deny", "command_prefixes": [["rm"]]},
            {"id": "ws-read", "effect": "allow", "operations": ["fs.read"], "paths": ["${workspace}/**"]},
            {"id": "tests", "effect": "allow", "command_prefixes": [["npm", "test"]]},
            {"id": "git", "effect": "allow", "operations": ["git.read"], "paths": ["${workspace}/**"]},
            {"id": "api", "effect": "allow", "operations": ["net.request"], "hosts": ["*.example.com"], "methods": ["GET"]},
            {"id": "no-evil", "effect": "deny", "hosts": ["evil.example.com"]},
        ], "mappings": [{"tool": "term__run", "operation": "shell.exec", "command": "command"}]});
        let ctx = Context { workspace: "/ws".into(), home: Some("/home/u".into()) };
        match Policy::load(PolicySources { policy: Some(&doc), ..Default::default() }, &ctx) {
            Ok(p) => p,
            Err(e) => panic!("fuzz policy must load: {e}"),
        }
    })
}

const TOOLS: [(&str, &str, Option<ServerKind>); 8] = [
    ("files", "read_file", Some(ServerKind::Filesystem)),
    ("files", "read_multiple_files", Some(ServerKind::Filesystem)),
    ("files", "move_file", Some(ServerKind::Filesystem)),
    ("git", "git_diff", Some(ServerKind::Git)),
    ("web", "fetch", Some(ServerKind::Fetch)),
    ("tg", "shell_run", Some(ServerKind::Toolgate)),
    ("term", "run", None),
    ("misc", "thing", None),
];

/// The `policy_decide` target.
pub fn decide(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (server, tool, kind) = TOOLS[usize::from(pick) % TOOLS.len()];
    let arguments = serde_json::from_slice::<Value>(rest).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(rest).into_owned();
        let words: Vec<&str> = text.split(' ').collect();
        json!({"path": text, "paths": [text], "url": text, "command": text, "program": words[0], "args": &words[1..], "repo_path": text})
    });
    let p = workspace_policy();
    let call = ToolCall::new(server, tool, arguments, kind);
    let action = p.action_for(&call, &Lexical);
    let decision = p.decide(&action);
    assert_eq!(decision, p.explain(&action).decision);
    if decision.effect == Effect::Allow && action.operation == Operation::FsRead {
        assert!(
            action
                .paths
                .iter()
                .all(|x| x == "/ws" || x.starts_with("/ws/")),
            "{action:?}"
        );
    }
}

/// The `policy_load` target.
pub fn load(data: &[u8]) {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let sources = PolicySources {
        policy: doc.get("policy"),
        permissions: doc.get("permissions"),
        profiles: doc.get("profiles"),
    };
    let ctx = Context {
        workspace: "/ws".into(),
        home: Some("/home/u".into()),
    };
    let loaded = Policy::load(sources, &ctx);
    let errors = check_policy(sources, &ctx)
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    assert_eq!(loaded.is_ok(), errors == 0);
}

/// The `policy_definition` target.
pub fn definition(data: &[u8]) {
    let Ok(def) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = inspect_definition(&def);
    assert_eq!(definition_hash(&def).len(), 64);
    let canonical = canonical_json(&def);
    let back: Value = match serde_json::from_str(&canonical) {
        Ok(v) => v,
        Err(e) => panic!("canonical JSON must parse: {e}"),
    };
    if !has_float(&def) {
        assert_eq!(back, def);
    }
    if let Some(name) = def.get("name").and_then(Value::as_str) {
        let tools = vec![
            ("a".to_owned(), name.to_owned()),
            ("b".to_owned(), "read_file".to_owned()),
        ];
        let _ = lookalike_flags(&tools);
    }
}

fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        _ => false,
    }
}
