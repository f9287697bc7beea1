//! ToolFence's policy read as toolgate's: the sheet's policy, its precedence, and its strict schema.

use super::*;
use crate::action::normalise;
use crate::load::{Policy, PolicySources};
use crate::path::Lexical;
use crate::Precedence;

fn ctx() -> Context {
    Context {
        workspace: "/ws".into(),
        home: Some("/home/u".into()),
    }
}

fn load(file: Value) -> Policy {
    let structured = translate_toolfence(&file).unwrap();
    Policy::load(
        PolicySources {
            policy: Some(&structured),
            ..Default::default()
        },
        &ctx(),
    )
    .unwrap()
}

fn decide(p: &Policy, action: Value) -> (Effect, Option<String>) {
    let FenceAction::Raw(raw) = parse_action(&action, &ctx()).unwrap() else {
        panic!("an operation")
    };
    let d = p.decide(&normalise(&raw, &ctx(), &Lexical));
    (d.effect, d.rule_id)
}

/// The policy of the sheet, as its YAML reads.
fn sheet() -> Value {
    json!({
        "version": 1,
        "default": "ask",
        "rules": [
            {"id": "deny-dotenv", "effect": "deny", "operations": ["fs.read", "fs.write"], "resources": ["**/.env", "**/.env.*"]},
            {"id": "allow-workspace-read", "effect": "allow", "operations": ["fs.read"], "resources": ["${workspace}/**"]},
            {"id": "allow-tests", "effect": "allow", "operations": ["shell.exec"], "commands": [["npm", "test"]]},
            {"id": "allow-git-inspection", "effect": "allow", "operations": ["git.read"]},
            {"id": "allow-read-api", "effect": "allow", "operations": ["net.request"],
             "hosts": ["api.example.com", "*.internal.example.com"], "methods": ["GET", "HEAD"]},
        ]
    })
}

#[test]
fn the_sheets_policy_decides_as_the_sheet_says() {
    let p = load(sheet());
    assert_eq!(p.precedence(), Precedence::FirstMatch);
    let read = |path: &str| json!({"operation": "fs.read", "resources": [path]});
    assert_eq!(
        decide(&p, read("${workspace}/src/index.ts")).0,
        Effect::Allow
    );
    assert_eq!(
        decide(&p, read("/ws/app/.env")),
        (Effect::Deny, Some("deny-dotenv".into()))
    );
    assert_eq!(decide(&p, read("~/.ssh/id_rsa")).0, Effect::Ask);
    let run = |argv: &[&str]| json!({"operation": "shell.exec", "command": argv});
    assert_eq!(decide(&p, run(&["npm", "test"])).0, Effect::Allow);
    assert_eq!(decide(&p, run(&["npm", "install"])).0, Effect::Ask);
    let net =
        |url: &str, method: &str| json!({"operation": "net.request", "url": url, "method": method});
    assert_eq!(
        decide(&p, net("https://api.example.com/v1", "GET")).0,
        Effect::Allow
    );
    assert_eq!(
        decide(&p, net("https://a.internal.example.com/", "HEAD")).0,
        Effect::Allow
    );
    assert_eq!(
        decide(&p, net("https://api.example.com/v1", "POST")).0,
        Effect::Ask
    );
}

#[test]
fn first_matching_rule_wins_between_allow_and_ask_in_file_order() {
    let rules = |first: &str, second: &str| {
        json!({"version": 1, "default": "deny", "rules": [
            {"id": "one", "effect": first, "operations": ["fs.read"], "resources": ["/ws/**"]},
            {"id": "two", "effect": second, "operations": ["fs.read"], "resources": ["/ws/src/**"]},
        ]})
    };
    let action = json!({"operation": "fs.read", "resources": ["/ws/src/a.ts"]});
    assert_eq!(
        decide(&load(rules("allow", "ask")), action.clone()),
        (Effect::Allow, Some("one".into()))
    );
    assert_eq!(
        decide(&load(rules("ask", "allow")), action.clone()),
        (Effect::Ask, Some("one".into()))
    );
    // toolgate's own files keep strictest-wins: the same rules without the precedence ask either way.
    let mut own = translate_toolfence(&rules("allow", "ask")).unwrap();
    own.as_object_mut().unwrap().remove("precedence");
    let own = Policy::load(
        PolicySources {
            policy: Some(&own),
            ..Default::default()
        },
        &ctx(),
    )
    .unwrap();
    assert_eq!(decide(&own, action).0, Effect::Ask);
}

#[test]
fn a_later_deny_overrides_an_earlier_allow() {
    let p = load(json!({"version": 1, "default": "allow", "rules": [
        {"id": "all", "effect": "allow", "operations": ["fs.read"], "resources": ["/ws/**"]},
        {"id": "no-keys", "effect": "deny", "operations": ["fs.read"], "resources": ["**/*.pem"]},
    ]}));
    let action = json!({"operation": "fs.read", "resources": ["/ws/a.txt", "/ws/k.pem"]});
    assert_eq!(decide(&p, action), (Effect::Deny, Some("no-keys".into())));
}

#[test]
fn one_allowed_path_cannot_carry_an_unallowed_one() {
    let p = load(sheet());
    let action = json!({"operation": "fs.read", "resources": ["/ws/a.txt", "/etc/passwd"]});
    assert_eq!(decide(&p, action), (Effect::Ask, None));
}

#[test]
fn a_deny_command_denies_every_invocation_it_begins() {
    let p = load(json!({"version": 1, "default": "ask", "rules": [
        {"id": "no-sudo", "effect": "deny", "operations": ["shell.exec"], "commands": [["sudo"]]},
        {"id": "tests", "effect": "allow", "operations": ["shell.exec"], "commands": [["npm", "test"]]},
    ]}));
    let run = |argv: &[&str]| json!({"operation": "shell.exec", "command": argv});
    assert_eq!(decide(&p, run(&["sudo", "rm", "-rf", "/"])).0, Effect::Deny);
    // Allowed commands are exact argv: more arguments fall to the default.
    assert_eq!(decide(&p, run(&["npm", "test", "--", "-u"])).0, Effect::Ask);
    // A shell string is never safe argv, and a deny still reaches into it.
    assert_eq!(
        decide(
            &p,
            json!({"operation": "shell.exec", "command": "npm test && sudo reboot"})
        )
        .0,
        Effect::Deny
    );
    assert_eq!(
        decide(
            &p,
            json!({"operation": "shell.exec", "command": "npm test | tee x"})
        )
        .0,
        Effect::Ask
    );
}

#[test]
fn unknown_operations_never_pass_even_when_the_default_allows() {
    let p = load(json!({"version": 1, "default": "allow", "rules": []}));
    assert_eq!(decide(&p, json!({"operation": "unknown"})).0, Effect::Deny);
}

#[test]
fn the_schema_is_toolfences_and_strict() {
    let bad = [
        (
            json!({"version": 2, "default": "ask", "rules": []}),
            "version",
        ),
        (json!({"version": 1, "rules": []}), "default"),
        (
            json!({"version": 1, "default": "maybe", "rules": []}),
            "default",
        ),
        (
            json!({"version": 1, "default": "ask", "rules": [], "profiles": {}}),
            "profiles",
        ),
        (
            json!({"version": 1, "default": "ask", "rules": [{"effect": "allow"}]}),
            "rules[0].id",
        ),
        (
            json!({"version": 1, "default": "ask", "rules": [{"id": "x", "effect": "allow", "tools": ["a"]}]}),
            "unknown key `tools`",
        ),
        (
            json!({"version": 1, "default": "ask", "rules": [{"id": "x", "effect": "allow", "operations": ["mcp.call"]}]}),
            "mcp.call",
        ),
        (
            json!({"version": 1, "default": "ask", "rules": [{"id": "x", "effect": "permit"}]}),
            "effect",
        ),
        (
            json!({"version": 1, "default": "ask", "rules": [{"id": "x", "effect": "deny", "commands": [[]]}]}),
            "empty",
        ),
    ];
    for (file, want) in bad {
        let e = translate_toolfence(&file).unwrap_err().to_string();
        assert!(e.contains(want), "{file}: {e}");
    }
}

#[test]
fn the_engine_checks_variables_duplicate_ids_and_network_fields_of_a_toolfence_file() {
    let fails = |rules: Value| {
        let structured =
            translate_toolfence(&json!({"version": 1, "default": "ask", "rules": rules})).unwrap();
        Policy::load(
            PolicySources {
                policy: Some(&structured),
                ..Default::default()
            },
            &ctx(),
        )
        .is_err()
    };
    assert!(fails(
        json!([{"id": "v", "effect": "allow", "operations": ["fs.read"], "resources": ["${project}/**"]}])
    ));
    assert!(fails(
        json!([{"id": "d", "effect": "allow", "operations": ["git.read"]}, {"id": "d", "effect": "deny", "operations": ["git.write"]}])
    ));
    assert!(fails(
        json!([{"id": "n", "effect": "allow", "operations": ["fs.read"], "hosts": ["a.example"]}])
    ));
}

#[test]
fn a_toolfence_file_is_told_from_a_toolgate_config() {
    assert!(is_toolfence_policy(&sheet()));
    assert!(!is_toolfence_policy(
        &json!({"version": 1, "rules": [], "mcpServers": {}})
    ));
    assert!(!is_toolfence_policy(
        &json!({"default": "ask", "rules": []})
    ));
}

#[test]
fn cases_name_their_action_and_expected_decision() {
    let cases = parse_fence_cases(
        &json!({"cases": [{"name": "read src", "action": {"operation": "fs.read", "resources": ["${workspace}/a"]}, "expect": "allow"}]}),
        &ctx(),
    )
    .unwrap();
    assert_eq!(
        (cases[0].name.as_str(), cases[0].expect),
        ("read src", Effect::Allow)
    );
    assert!(parse_fence_cases(
        &json!([{"name": "x", "action": {"operation": "fs.read"}, "expected": "allow"}]),
        &ctx()
    )
    .is_err());
}
