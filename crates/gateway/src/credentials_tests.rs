//! Which credential a caller's request carries, who is refused, and what is scrubbed from answers.

use super::*;
use config::{Grant, Secret, SecretSource};
use serde_json::json;

fn credential(
    name: &str,
    server: &str,
    target: CredentialTarget,
    value: &str,
    grant: Grant,
) -> Credential {
    Credential {
        name: name.into(),
        server: server.into(),
        target,
        secret: Secret::new(value.into()),
        grant,
        source: SecretSource::Value,
    }
}

fn to(identities: &[&str], profiles: &[&str]) -> Grant {
    Grant::To {
        identities: identities.iter().map(|s| s.to_string()).collect(),
        profiles: profiles.iter().map(|s| s.to_string()).collect(),
    }
}

fn auth() -> CredentialTarget {
    CredentialTarget::Header("authorization".into())
}

fn table() -> Credentials {
    Credentials::new(&[
        credential(
            "service",
            "gh",
            auth(),
            "Bearer service-token-0000",
            Grant::Everyone,
        ),
        credential(
            "dev",
            "gh",
            auth(),
            "Bearer dev-token-11111111",
            to(&[], &["dev"]),
        ),
        credential(
            "alice",
            "gh",
            auth(),
            "Bearer alice-token-222222",
            to(&["key:alice"], &[]),
        ),
        credential(
            "only-ops",
            "db",
            auth(),
            "Bearer ops-token-33333333",
            to(&[], &["ops"]),
        ),
        credential(
            "files-key",
            "files",
            CredentialTarget::Env("FILES_KEY".into()),
            "files-secret-4444",
            to(&["local"], &[]),
        ),
    ])
}

#[test]
fn an_identity_grant_beats_a_profile_grant_which_beats_everyone() {
    let t = table();
    let alice = t.for_call("gh", "key:alice", Some("dev")).unwrap();
    assert_eq!(
        alice.headers,
        vec![(
            "authorization".to_owned(),
            "Bearer alice-token-222222".to_owned()
        )]
    );
    assert_eq!(alice.names, vec!["alice"]);
    let dev = t.for_call("gh", "key:bob", Some("dev")).unwrap();
    assert_eq!(dev.names, vec!["dev"]);
    let anyone = t.for_call("gh", "key:carol", None).unwrap();
    assert_eq!(anyone.names, vec!["service"]);
    assert_eq!(anyone.headers[0].1, "Bearer service-token-0000");
}

#[test]
fn a_caller_without_a_grant_is_refused_naming_the_header_not_the_value() {
    let t = table();
    let refused = t.for_call("db", "key:alice", Some("dev")).unwrap_err();
    assert_eq!(refused.code, RefusalCode::CredentialNotGranted);
    assert!(
        refused.message.contains("authorization"),
        "{}",
        refused.message
    );
    assert!(
        !refused.message.contains("ops-token"),
        "{}",
        refused.message
    );
    assert_eq!(
        t.for_call("db", "key:x", Some("ops")).unwrap().names,
        vec!["only-ops"]
    );
}

#[test]
fn an_env_credential_is_named_but_adds_no_header_and_gates_its_server() {
    let t = table();
    let local = t.for_call("files", "local", None).unwrap();
    assert!(local.headers.is_empty());
    assert_eq!(local.names, vec!["files-key"]);
    let other = t.for_call("files", "key:alice", None).unwrap_err();
    assert_eq!(other.code, RefusalCode::CredentialNotGranted);
    assert!(other.message.contains("FILES_KEY"));
}

#[test]
fn a_server_without_credentials_goes_as_it_is() {
    assert_eq!(
        table().for_call("plain", "key:alice", None).unwrap(),
        Use::default()
    );
}

#[test]
fn an_upstream_echoing_its_token_is_scrubbed_in_values_keys_and_errors() {
    let t = table();
    let mut answer = json!({
        "content": [{"type": "text", "text": "your header was Bearer alice-token-222222, ok"}],
        "structuredContent": {"alice-token-222222": ["token=service-token-0000"]}
    });
    assert!(t.scrub("gh", &mut answer));
    let text = answer.to_string();
    assert!(
        !text.contains("token-222222") && !text.contains("service-token"),
        "{text}"
    );
    assert!(text.contains("your header was [credential], ok"), "{text}");
    let mut failed = CallOutcome::Failed(CallError::Upstream(upstream::CallError::Unavailable {
        server: "files".into(),
        why: "exited: FILES_KEY=files-secret-4444".into(),
    }));
    t.scrub_outcome("files", &mut failed);
    assert!(!format!("{failed:?}").contains("files-secret-4444"));
}

#[test]
fn another_servers_answer_and_short_secrets_are_left_alone() {
    let t = Credentials::new(&[credential("short", "s", auth(), "abc", Grant::Everyone)]);
    let mut answer = json!({"text": "abc abc"});
    assert!(!t.scrub("s", &mut answer));
    assert_eq!(answer, json!({"text": "abc abc"}));
    let t = table();
    let mut other = json!({"text": "Bearer alice-token-222222"});
    assert!(!t.scrub("plain", &mut other));
}

#[test]
fn a_server_printing_its_environment_to_stderr_shows_no_secret_in_status() {
    let t = table();
    let mut status = upstream::Status {
        server: "files".into(),
        last_error: Some("exited with FILES_KEY=files-secret-4444 set".into()),
        stderr_tail: vec!["env: FILES_KEY=files-secret-4444".into()],
        list_errors: vec![("tools".into(), "bad key files-secret-4444".into())],
        state: upstream::State::Backoff,
        protocol_version: None,
        pid: None,
        containment: Vec::new(),
        restarts: 1,
        tools: 0,
        resources: 0,
        prompts: 0,
        garbage_lines: 0,
    };
    t.scrub_status(&mut status);
    assert!(
        !format!("{status:?}").contains("files-secret-4444"),
        "{status:?}"
    );
    assert_eq!(
        status.stderr_tail,
        vec!["env: FILES_KEY=[credential]".to_owned()]
    );
}
