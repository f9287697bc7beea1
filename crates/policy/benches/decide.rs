//! Decision latency against 1,000 rules mixing tool globs, path globs and argv prefixes.
//!
//! Measures `Policy::decide` on an already normalised action (the policy stage's own cost) and, for reference,
//! `decide_call` (adapter + lexical normalisation + decision). It does not measure loading or canonicalisation.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use policy::{Context, Lexical, Policy, PolicySources, ServerKind, ToolCall};
use serde_json::{json, Value};

fn thousand_rules() -> Policy {
    let rules: Vec<Value> = (0..1000)
        .map(|i| {
            let effect = match i % 10 {
                0 => "deny",
                1 => "ask",
                _ => "allow",
            };
            match i % 3 {
                0 => json!({"id": format!("t{i}"), "effect": effect, "tools": [format!("srv{i}__tool_*")]}),
                1 => json!({"id": format!("p{i}"), "effect": effect, "operations": ["fs.read", "fs.write"],
                    "paths": [format!("${{workspace}}/dir{i}/**/*.rs"), format!("**/secret{i}/**")]}),
                _ => json!({"id": format!("c{i}"), "effect": effect, "operations": ["shell.exec"],
                    "command_prefixes": [[format!("prog{i}"), "run"]]}),
            }
        })
        .collect();
    let doc = json!({"default": "ask", "rules": rules});
    let ctx = Context {
        workspace: "/home/dev/project".into(),
        home: Some("/home/dev".into()),
    };
    match Policy::load(
        PolicySources {
            policy: Some(&doc),
            ..Default::default()
        },
        &ctx,
    ) {
        Ok(p) => p,
        Err(e) => panic!("bench policy must load: {e}"),
    }
}

/// 1,000 path-only rules of one shape: `**/*.extN` (filed by suffix) or `**/xN?y/**` (no usable key: the worst
/// case, every rule is matched).
fn path_rules(indexable: bool) -> Policy {
    let rules: Vec<Value> = (0..1000)
        .map(|i| {
            let pattern = if indexable {
                format!("**/*.ext{i}")
            } else {
                format!("**/x{i}?y/**")
            };
            let effect = if i % 10 == 0 { "deny" } else { "allow" };
            json!({"id": format!("u{i}"), "effect": effect, "paths": [pattern]})
        })
        .collect();
    let doc = json!({"default": "ask", "rules": rules});
    let ctx = Context {
        workspace: "/home/dev/project".into(),
        home: None,
    };
    match Policy::load(
        PolicySources {
            policy: Some(&doc),
            ..Default::default()
        },
        &ctx,
    ) {
        Ok(p) => p,
        Err(e) => panic!("bench policy must load: {e}"),
    }
}

fn bench(c: &mut Criterion) {
    let call = ToolCall::new(
        "files",
        "read_file",
        json!({"path": "/home/dev/project/a/b/c.rs"}),
        Some(ServerKind::Filesystem),
    );
    for (name, indexable) in [
        ("suffix_1000_path_globs", true),
        ("full_scan_1000_path_globs", false),
    ] {
        let p = path_rules(indexable);
        let action = p.action_for(&call, &Lexical);
        c.bench_function(&format!("decide/{name}"), |b| {
            b.iter(|| p.decide(black_box(&action)))
        });
    }

    let policy = thousand_rules();
    let calls = [
        (
            "fs_read_late_rule",
            ToolCall::new(
                "files",
                "read_file",
                json!({"path": "/home/dev/project/dir997/a/b/c.rs"}),
                Some(ServerKind::Filesystem),
            ),
        ),
        (
            "fs_read_no_match",
            ToolCall::new(
                "files",
                "read_file",
                json!({"path": "/home/dev/project/src/main.rs"}),
                Some(ServerKind::Filesystem),
            ),
        ),
        (
            "shell_argv",
            ToolCall::new(
                "tg",
                "shell_run",
                json!({"program": "prog998", "args": ["run", "x"]}),
                Some(ServerKind::Toolgate),
            ),
        ),
        (
            "mcp_tool_glob",
            ToolCall::new("srv999", "tool_x", json!({}), None),
        ),
    ];
    for (name, call) in &calls {
        let action = policy.action_for(call, &Lexical);
        c.bench_function(&format!("decide/{name}"), |b| {
            b.iter(|| policy.decide(black_box(&action)))
        });
    }
    let (_, call) = &calls[0];
    c.bench_function("decide_call/fs_read_late_rule", |b| {
        b.iter(|| policy.decide_call(black_box(call), &Lexical))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
