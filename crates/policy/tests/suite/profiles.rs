//! Profiles: effective rules, tool visibility at call time, and the preview surface.

use policy::{Effect, ProfileMode, ReasonCode, SurfaceReason, ToolListing, Visibility};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{decide, fs_read, load, try_load};

fn doc() -> serde_json::Value {
    json!({
        "policy": {"default": "ask", "rules": [
            {"id": "no-shell-tool", "effect": "deny", "tools": ["term__*"]},
        ]},
        "profiles": {
            "reviewer": {
                "description": "Read-only review",
                "default": "deny",
                "permissions": {"allow": ["Read(./**)"]},
                "tools": {"visible": ["files__read_*"], "deferred": ["files__*"], "blocked": ["files__write_*"], "default": "deferred"}
            }
        }
    })
}

#[test]
fn profile_rules_and_default_apply() {
    let base = load(&doc());
    assert_eq!(decide(&base, &fs_read("/etc/x")).effect, Effect::Ask);
    let reviewer = base.with_profile("reviewer").unwrap();
    let d = decide(&reviewer, &fs_read("/ws/a"));
    assert_eq!(
        (d.effect, d.rule_id.as_deref()),
        (Effect::Allow, Some("reviewer.Read(./**)"))
    );
    assert_eq!(
        decide(&reviewer, &fs_read("/etc/x")).reason,
        ReasonCode::DefaultDeny
    );
    assert!(base.with_profile("nope").is_err());
    assert_eq!(
        base.profile_description("reviewer"),
        Some("Read-only review")
    );
}

#[test]
fn blocked_tools_are_hidden_at_call_time() {
    let reviewer = load(&doc()).with_profile("reviewer").unwrap();
    let write = crate::common::call(
        "files",
        "write_file",
        json!({"path": "/ws/a"}),
        Some(policy::ServerKind::Filesystem),
    );
    let d = decide(&reviewer, &write);
    assert_eq!((d.effect, d.reason), (Effect::Deny, ReasonCode::ToolHidden));
    assert!(
        reviewer
            .explain(&reviewer.action_for(&write, &policy::Lexical))
            .hidden
    );
}

#[test]
fn preview_shows_the_effective_surface() {
    let p = load(&doc());
    let mut tools: Vec<ToolListing> = [
        "files__read_file",
        "files__write_file",
        "files__list_directory",
        "term__run",
        "git__git_log",
        "files__read_media_file",
    ]
    .iter()
    .map(|n| ToolListing::new(n))
    .collect();
    tools[4].quarantined = true;
    tools[5].flagged = true;
    let rows: Vec<(String, Visibility, SurfaceReason)> = p
        .tool_surface(Some("reviewer"), &tools)
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.visibility, e.reason))
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                "files__read_file".into(),
                Visibility::Visible,
                SurfaceReason::ProfileVisible
            ),
            (
                "files__write_file".into(),
                Visibility::Blocked,
                SurfaceReason::ProfileBlocked
            ),
            (
                "files__list_directory".into(),
                Visibility::Deferred,
                SurfaceReason::ProfileDeferred
            ),
            (
                "term__run".into(),
                Visibility::Blocked,
                SurfaceReason::DenyRule
            ),
            (
                "git__git_log".into(),
                Visibility::Unavailable,
                SurfaceReason::Quarantined
            ),
            (
                "files__read_media_file".into(),
                Visibility::Blocked,
                SurfaceReason::Flagged
            ),
        ]
    );
    let base = p.tool_surface(None, &tools[..1]).unwrap();
    assert_eq!(
        (base[0].visibility, base[0].reason),
        (Visibility::Visible, SurfaceReason::ProfileDefault)
    );
}

#[test]
fn a_profile_may_set_its_mode() {
    let base = load(&json!({"profiles": {
        "review": {"mode": "code", "default": "ask"},
        "plain": {"mode": "direct"},
        "unset": {},
    }}));
    assert_eq!(base.profile_mode("review"), Some(ProfileMode::Code));
    assert_eq!(base.profile_mode("plain"), Some(ProfileMode::Direct));
    assert_eq!(base.profile_mode("unset"), None);
    assert_eq!(base.active_mode(), None);
    assert_eq!(
        base.with_profile("review").unwrap().active_mode(),
        Some(ProfileMode::Code)
    );
    assert_eq!(base.with_profile("unset").unwrap().active_mode(), None);
    let err = try_load(&json!({"profiles": {"x": {"mode": "javascript"}}})).unwrap_err();
    assert!(
        err.to_string().contains("unknown variant `javascript`"),
        "{err}"
    );
}
