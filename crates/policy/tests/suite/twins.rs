//! Two spellings, one meaning: each Claude Code permission string decides exactly as its structured twin over a
//! shared corpus of calls (same effect, same reason), and translates to exactly that twin.

use policy::{translate_permission, Effect, RuleSpec, ToolCall};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::common::{call, decide, fetch, fs_read, load, shell};

fn corpus() -> Vec<ToolCall> {
    use policy::ServerKind::*;
    let mut calls = vec![
        fs_read("/ws/src/a.rs"),
        fs_read("/ws/src/deep/b.rs"),
        fs_read("/ws/.env"),
        fs_read("/ws/src/.env"),
        fs_read("/ws/README.md"),
        fs_read("/etc/hosts"),
        fs_read("/home/u/.ssh/id_rsa"),
        fs_read("/ws/x.env"),
        fs_read("/ws/sub/y.env"),
        fs_read("/ws/secrets"),
        fs_read("/ws/secrets/deep/key"),
        fs_read("/ws/secrets-other/key"),
        call(
            "files",
            "write_file",
            json!({"path": "/ws/src/a.rs", "content": ""}),
            Some(Filesystem),
        ),
        call(
            "files",
            "move_file",
            json!({"source": "/ws/src/a.rs", "destination": "/ws/src/b.rs"}),
            Some(Filesystem),
        ),
        call(
            "files",
            "write_file",
            json!({"path": "/etc/x", "content": ""}),
            Some(Filesystem),
        ),
        shell("npm", &["test"]),
        shell("npm", &["test", "--watch"]),
        shell("npm", &["run", "test"]),
        shell("npm", &["run", "test", "--watch"]),
        shell("npm", &["run", "test-evil"]),
        shell("npm", &["run", "test:unit"]),
        shell("git", &["status"]),
        shell("rm", &["-rf", "/"]),
        fetch("https://example.com/"),
        fetch("https://a.example.com/"),
        fetch("https://evilexample.com/"),
        call(
            "files",
            "read_text_file",
            json!({"path": "/ws/src/a.rs"}),
            None,
        ),
        call("files", "write_file", json!({"path": "/ws/src/a.rs"}), None),
        call("other", "read_file", json!({}), None),
    ];
    calls.push(call(
        "term",
        "run",
        json!({"command": "npm test && id"}),
        None,
    ));
    calls
}

fn structured(spec: Value, effect: &str) -> Value {
    let mut rule = spec;
    rule["id"] = json!("twin");
    rule["effect"] = json!(effect);
    json!({"policy": {"default": "ask", "rules": [rule],
        "mappings": [{"tool": "term__run", "operation": "shell.exec", "command": "command"}]}})
}

fn string_form(text: &str, effect: &str) -> Value {
    json!({"policy": {"default": "ask", "mappings": [{"tool": "term__run", "operation": "shell.exec", "command": "command"}]},
        "permissions": {effect: [text]}})
}

fn twins() -> Vec<(&'static str, Value)> {
    vec![
        (
            "Read(./src/**)",
            json!({"operations": ["fs.read"], "paths": ["${workspace}/src/**"]}),
        ),
        (
            "Read(**/.env)",
            json!({"operations": ["fs.read"], "paths": ["**/.env"]}),
        ),
        (
            "Read(*.env)",
            json!({"operations": ["fs.read"], "paths": ["${workspace}/**/*.env/**"]}),
        ),
        (
            "Read(~/.ssh/**)",
            json!({"operations": ["fs.read"], "paths": ["~/.ssh/**"]}),
        ),
        (
            "Read(//etc/**)",
            json!({"operations": ["fs.read"], "paths": ["/etc/**"]}),
        ),
        ("Read", json!({"operations": ["fs.read"]})),
        (
            "Edit(./src/**)",
            json!({"operations": ["fs.write", "fs.delete"], "paths": ["${workspace}/src/**"]}),
        ),
        (
            "Write(//etc/hosts)",
            json!({"operations": ["fs.write", "fs.delete"], "paths": ["/etc/hosts/**"]}),
        ),
        (
            "Bash(npm test)",
            json!({"operations": ["shell.exec"], "commands": [["npm", "test"]]}),
        ),
        (
            "Bash(npm run test:*)",
            json!({"operations": ["shell.exec"], "command_prefixes": [["npm", "run", "test"]]}),
        ),
        (
            "Bash(npm run test *)",
            json!({"operations": ["shell.exec"], "command_prefixes": [["npm", "run", "test"]]}),
        ),
        ("Bash", json!({"operations": ["shell.exec"]})),
        (
            "mcp__files__read_*",
            json!({"tools": ["mcp__files__read_*"]}),
        ),
        ("mcp__other", json!({"tools": ["mcp__other__*"]})),
    ]
}

#[test]
fn each_string_form_decides_exactly_as_its_structured_twin() {
    for effect in ["allow", "ask", "deny"] {
        for (text, spec) in twins() {
            let s = load(&string_form(text, effect));
            let t = load(&structured(spec.clone(), effect));
            for c in corpus() {
                let (a, b) = (decide(&s, &c), decide(&t, &c));
                assert_eq!(
                    (a.effect, a.reason),
                    (b.effect, b.reason),
                    "{effect} {text} on {}/{} {}",
                    c.server,
                    c.tool,
                    c.arguments
                );
            }
        }
    }
}

#[test]
fn webfetch_twins_differ_by_effect_as_documented() {
    let allow = json!({"operations": ["net.request"], "hosts": ["example.com"], "methods": ["GET", "HEAD"]});
    let deny = json!({"operations": ["net.request"], "hosts": ["example.com"]});
    for (effect, spec) in [("allow", allow.clone()), ("ask", allow), ("deny", deny)] {
        let s = load(&string_form("WebFetch(domain:example.com)", effect));
        let t = load(&structured(spec, effect));
        for c in corpus() {
            assert_eq!(
                decide(&s, &c).effect,
                decide(&t, &c).effect,
                "{effect} on {}",
                c.arguments
            );
        }
    }
    let s = load(&string_form("WebFetch(domain:*.example.com)", "allow"));
    assert_eq!(
        decide(&s, &fetch("https://a.example.com/")).effect,
        Effect::Allow
    );
    assert_eq!(
        decide(&s, &fetch("https://evilexample.com/")).effect,
        Effect::Ask
    );
}

#[test]
fn translation_produces_the_twin_with_a_generated_id() {
    let spec = translate_permission("Bash(npm run test:*)", Effect::Allow, "allow[2]").unwrap();
    let mut want = RuleSpec::new("allow[2]", Effect::Allow);
    want.description = Some("Bash(npm run test:*)".into());
    want.operations = vec![policy::Operation::ShellExec];
    want.command_prefixes = vec![vec!["npm".into(), "run".into(), "test".into()]];
    assert_eq!(spec, want);
}

#[test]
fn generated_ids_are_the_permission_text_in_list_order() {
    let p = load(
        &json!({"permissions": {"allow": ["Read", "Bash(npm test)"], "ask": ["Bash"], "deny": ["Read(**/.env)"]}}),
    );
    assert_eq!(
        p.rule_ids(),
        vec!["Read(**/.env)", "Bash", "Read", "Bash(npm test)"]
    );
}
