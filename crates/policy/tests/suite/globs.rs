//! Glob syntax at the decision level: every supported construct matches, every unsupported one is refused at load.

use policy::{check_policy, Effect, ReasonCode};
use serde_json::json;

use crate::common::{ctx, decide, fs_read, load, sources, try_load};

fn read_all_but(deny: &str) -> policy::Policy {
    load(&json!({"permissions": {"default": "deny", "allow": ["Read(./**)"], "deny": [deny]}}))
}

#[test]
fn brace_glob_deny_blocks_pem_files() {
    let p = read_all_but("Read(**/*.{pem,key})");
    for secret in ["/ws/server.pem", "/ws/tls/server.key", "/ws/a/b/c.pem"] {
        let d = decide(&p, &fs_read(secret));
        assert_eq!(
            (d.effect, d.reason),
            (Effect::Deny, ReasonCode::DenyRule),
            "{secret}"
        );
    }
    assert_eq!(decide(&p, &fs_read("/ws/server.pub")).effect, Effect::Allow);
}

#[test]
fn character_class_deny_blocks_every_member() {
    let p = read_all_but("Read(**/id_[rde]*)");
    for secret in ["/ws/.ssh/id_rsa", "/ws/id_dsa.pub", "/ws/k/id_ed25519"] {
        assert_eq!(
            decide(&p, &fs_read(secret)).effect,
            Effect::Deny,
            "{secret}"
        );
    }
    assert_eq!(decide(&p, &fs_read("/ws/id_x")).effect, Effect::Allow);
    let negated = read_all_but("Read(./[!p]*.txt)");
    assert_eq!(
        decide(&negated, &fs_read("/ws/secret.txt")).effect,
        Effect::Deny
    );
    assert_eq!(
        decide(&negated, &fs_read("/ws/public.txt")).effect,
        Effect::Allow
    );
}

#[test]
fn brace_alternatives_in_tool_names_match() {
    let p = load(
        &json!({"permissions": {"default": "allow", "deny": ["mcp__files__{read,write}_file"]}}),
    );
    assert_eq!(decide(&p, &fs_read("/ws/a")).effect, Effect::Deny);
}

#[test]
fn unsupported_glob_syntax_is_refused_at_load() {
    for deny in [
        "Read(**/*.@(pem|key))",
        "Read(**/!(public)*)",
        "Read(./!secret)",
        "Read(./[[:alpha:]]*)",
        "Read(./a**)",
        "Read(./{a,b)",
        "Read(./[ab)",
        "Read(./a//b)",
        "mcp__files__*(x)",
    ] {
        let doc = json!({"permissions": {"deny": [deny]}});
        let err = try_load(&doc)
            .err()
            .unwrap_or_else(|| panic!("{deny} loaded"));
        assert_eq!(err.code(), "INVALID_RULE", "{deny}: {err}");
        let findings = check_policy(sources(&doc), &ctx());
        assert!(findings.iter().any(|f| f.code == "INVALID_RULE"), "{deny}");
    }
}

#[test]
fn workspace_with_glob_characters_is_matched_literally() {
    let ctx = policy::Context {
        workspace: "/srv/{a,b}[1]!".into(),
        home: None,
    };
    let doc = json!({"permissions": {"default": "deny", "allow": ["Read(./**)"]}});
    let p = policy::Policy::load(sources(&doc), &ctx).unwrap();
    assert_eq!(
        decide(&p, &fs_read("/srv/{a,b}[1]!/x")).effect,
        Effect::Allow
    );
    assert_eq!(decide(&p, &fs_read("/srv/a1!/x")).effect, Effect::Deny);
}
