//! Property tests: monotonicity of deny, order independence of the outcome, and workspace containment after
//! normalisation (with `..` segments and a fake symlink-resolving canonicaliser).

use policy::{Effect, Lexical, Policy, ToolCall};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::common::{call, fetch, fs_read, load, shell, FakeFs};

/// Rule bodies mixing every kind of constraint; ids and effects are added by the strategy.
fn rule_bodies() -> Vec<Value> {
    vec![
        json!({"operations": ["fs.read"], "paths": ["${workspace}/**"]}),
        json!({"paths": ["**/.env"]}),
        json!({"operations": ["fs.read", "fs.write"], "paths": ["${workspace}/src/**"]}),
        json!({"paths": ["/etc/**", "~/.ssh/**"]}),
        json!({"operations": ["shell.exec"], "commands": [["npm", "test"]]}),
        json!({"command_prefixes": [["npm", "run"]]}),
        json!({"operations": ["git.read"]}),
        json!({"operations": ["net.request"], "hosts": ["*.example.com"], "methods": ["GET"]}),
        json!({"operations": ["net.request"], "hosts": ["api.example.com"]}),
        json!({"tools": ["mcp__files__*"]}),
        json!({"tools": ["misc__*"]}),
        json!({"operations": ["fs.read"], "paths": ["**/*.pem", "/*/key*"]}),
        json!({}),
    ]
}

fn calls() -> Vec<ToolCall> {
    vec![
        fs_read("/ws/src/a.rs"),
        fs_read("/ws/.env"),
        fs_read("/etc/passwd"),
        fs_read("/ws/certs/key.pem"),
        fs_read("/home/u/.ssh/id_rsa"),
        call(
            "files",
            "write_file",
            json!({"path": "/ws/src/a"}),
            Some(policy::ServerKind::Filesystem),
        ),
        shell("npm", &["test"]),
        shell("npm", &["run", "build"]),
        shell("sudo", &["-u", "x", "/usr/bin/npm", "test"]),
        fs_read("/WS/Src/.ENV"),
        shell("git", &["log"]),
        shell("git", &["-c", "x=y", "log"]),
        fetch("https://a.example.com/"),
        fetch("https://api.example.com/"),
        call("misc", "thing", json!({}), None),
        call("term", "run", json!({"command": "npm test; id"}), None),
    ]
}

fn effect_name(e: u8) -> &'static str {
    ["allow", "ask", "deny"][usize::from(e % 3)]
}

fn build(default: u8, rules: &[(usize, u8)], extra: Option<(usize, usize)>) -> Policy {
    let bodies = rule_bodies();
    let mut list: Vec<Value> = rules
        .iter()
        .enumerate()
        .map(|(i, (b, e))| {
            let mut r = bodies[*b % bodies.len()].clone();
            r["id"] = json!(format!("r{i}"));
            r["effect"] = json!(effect_name(*e));
            r
        })
        .collect();
    if let Some((b, pos)) = extra {
        let mut r = bodies[b % bodies.len()].clone();
        r["id"] = json!("extra-deny");
        r["effect"] = json!("deny");
        list.insert(pos % (list.len() + 1), r);
    }
    load(
        &json!({"policy": {"default": effect_name(default), "rules": list,
        "mappings": [{"tool": "term__run", "operation": "shell.exec", "command": "command"}]}}),
    )
}

fn rules_strategy() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((0usize..13, 0u8..3), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn adding_a_deny_never_makes_a_decision_more_permissive(
        default in 0u8..3, rules in rules_strategy(), body in 0usize..13, pos in 0usize..10,
    ) {
        let before = build(default, &rules, None);
        let after = build(default, &rules, Some((body, pos)));
        for c in calls() {
            let (b, a) = (before.decide_call(&c, &Lexical), after.decide_call(&c, &Lexical));
            prop_assert!(a.effect >= b.effect, "{:?} became {:?} for {}", b, a, c.arguments);
        }
    }

    #[test]
    fn reordering_rules_never_changes_a_deny_or_any_outcome(
        default in 0u8..3, rules in rules_strategy(), seed in any::<u64>(),
    ) {
        let original = build(default, &rules, None);
        // Deterministic shuffle from the seed, keeping each rule's original id.
        let mut keyed: Vec<(u64, usize)> = (0..rules.len()).map(|i| (seed.wrapping_mul(i as u64 + 1).rotate_left(17), i)).collect();
        keyed.sort();
        let bodies = rule_bodies();
        let list: Vec<Value> = keyed.iter().map(|(_, i)| {
            let (b, e) = rules[*i];
            let mut r = bodies[b % bodies.len()].clone();
            r["id"] = json!(format!("r{i}"));
            r["effect"] = json!(effect_name(e));
            r
        }).collect();
        let shuffled = load(&json!({"policy": {"default": effect_name(default), "rules": list,
            "mappings": [{"tool": "term__run", "operation": "shell.exec", "command": "command"}]}}));
        for c in calls() {
            let (a, b) = (original.decide_call(&c, &Lexical), shuffled.decide_call(&c, &Lexical));
            prop_assert_eq!(a.effect, b.effect);
            prop_assert_eq!(a.reason, b.reason);
        }
    }

    #[test]
    fn workspace_allow_admits_only_paths_inside_the_workspace(
        absolute in any::<bool>(),
        segs in prop::collection::vec(prop::sample::select(vec!["a", "src", "..", ".", "", "ws", "ws-evil", "link", ".env"]), 0..8),
    ) {
        let p = load(&json!({"policy": {"default": "deny", "rules": [
            {"id": "ws", "effect": "allow", "operations": ["fs.read"], "paths": ["${workspace}/**"]},
        ]}}));
        let joined = segs.join("/");
        let raw = if absolute { format!("/ws/{joined}") } else { joined };
        let fake = FakeFs { links: vec![("/ws/link".into(), "/outside".into())] };
        for canon in [&Lexical as &dyn policy::Canonicalise, &fake] {
            let action = p.action_for(&fs_read(&raw), canon);
            if p.decide(&action).effect == Effect::Allow {
                for path in &action.paths {
                    prop_assert!(path == "/ws" || path.starts_with("/ws/"), "{} admitted as {}", raw, path);
                    prop_assert!(!path.split('/').any(|s| s == ".." || s == "."), "{}", path);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `decide` uses the candidate index, `explain` walks every rule: they must never disagree.
    #[test]
    fn decide_and_explain_always_agree(default in 0u8..3, rules in prop::collection::vec((0usize..13, 0u8..3), 0..12)) {
        let p = build(default, &rules, None);
        for c in calls() {
            let a = p.action_for(&c, &Lexical);
            prop_assert_eq!(p.decide(&a), p.explain(&a).decision);
        }
    }
}
