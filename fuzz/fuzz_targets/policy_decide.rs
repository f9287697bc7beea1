//! Fuzzes adapter → normalisation → decision with arbitrary arguments against a fixed workspace policy.
//! Invariants: no panic; `decide` agrees with `explain`; an allowed filesystem read never leaves the workspace.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use policy::{Context, Effect, Lexical, Operation, Policy, PolicySources, ServerKind, ToolCall};
use serde_json::{json, Value};

fn policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| {
        let doc = json!({"default": "ask", "rules": [
            {"id": "no-env", "effect": "deny", "paths": ["**/.env"]},
            {"id": "ws-read", "effect": "allow", "operations": ["fs.read"], "paths": ["${workspace}/**"]},
            {"id": "tests", "effect": "allow", "command_prefixes": [["npm", "test"]]},
            {"id": "git", "effect": "allow", "operations": ["git.read"], "paths": ["${workspace}/**"]},
            {"id": "api", "effect": "allow", "operations": ["net.request"], "hosts": ["*.example.com"], "methods": ["GET"]},
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

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let (server, tool, kind) = TOOLS[usize::from(pick) % TOOLS.len()];
    let arguments = serde_json::from_slice::<Value>(rest).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(rest).into_owned();
        json!({"path": text, "paths": [text], "url": text, "command": text, "program": "git", "args": text.split(' ').collect::<Vec<_>>(), "repo_path": text})
    });
    let p = policy();
    let call = ToolCall::new(server, tool, arguments, kind);
    let action = p.action_for(&call, &Lexical);
    let decision = p.decide(&action);
    assert_eq!(decision, p.explain(&action).decision);
    if decision.effect == Effect::Allow && action.operation == Operation::FsRead {
        assert!(action.paths.iter().all(|x| x == "/ws" || x.starts_with("/ws/")), "{action:?}");
    }
});
