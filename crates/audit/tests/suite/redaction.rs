//! Redaction: a corpus of real-shaped secrets in realistic contexts, none of which may
//! survive, and idempotence over arbitrary input.

use audit::{redact, redact_json, redact_map, REDACTED};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

/// (context with the secret, the secret itself). Every secret is fake but has the real shape.
fn corpus() -> Vec<(String, &'static str)> {
    let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9fakefakefake\nZmFrZWtleWRhdGE=\n-----END RSA PRIVATE KEY-----";
    let secrets: Vec<(&str, &'static str)> = vec![
        ("aws_access_key_id = {}", "AKIAIOSFODNN7EXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY={}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        ("token: {}", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
        ("git clone https://{}@github.com/o/r", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
        ("gh auth: {}", "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
        ("ANTHROPIC_API_KEY={}", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz-0123456789_ABCDEFG"),
        ("use key {} for openai", "sk-proj-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv"),
        ("legacy {}", "sk-1234567890abcdefghijklmnopqrstuvwxyzABCD"),
        ("maps?key={}", "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"),
        ("SLACK_BOT_TOKEN {}", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
        ("webhook user token {}", "xoxp-1234-5678-9012-abcdefabcdef"),
        ("Authorization: Bearer {}", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
        ("cookie jar: {}", "eyJhbGciOiJub25lIn0.eyJ1c2VyIjoiYWRtaW4ifQ."),
        ("curl -H 'Authorization: Bearer {}'", "opaque-token-0123456789"),
        ("x-api-key: {}", "k3y-without-any-known-shape"),
        ("{}", pem),
        (r#"{"type": "service_account", "private_key_id": "{}"}"#, "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0"),
        ("postgres://app:{}@db.internal:5432/prod", "s3cr3t-pa55"),
        ("https://example.com/cb?code=ok&access_token={}&x=1", "ya29.a0AfH6SMBx-abcdef"),
        ("DB_PASSWORD='{}'", "correct horse battery staple"),
        ("--client-secret={}", "GOCSPX-abcdefghijklmnop"),
        ("STRIPE={}", "sk_live_51H8abcdefghijklmnopqrstuv"),
        ("remote: https://oauth2:{}@gitlab.com/g/p.git", "glpat-abcdefghij1234567890"),
        ("//registry.npmjs.org/:_authToken={}", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("huggingface-cli login --token {}", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
        ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net", "bXlrZXliYXNlNjRzdHVmZg=="),
    ];
    secrets
        .into_iter()
        .map(|(ctx, s)| (ctx.replace("{}", s), s))
        .collect()
}

#[test]
fn no_secret_in_the_corpus_survives() {
    for (text, secret) in corpus() {
        let out = redact(&text);
        assert!(!out.contains(secret), "survived: {secret:?} in {out:?}");
        // Not even a long fragment of it.
        if secret.len() >= 16 {
            let middle = &secret[4..secret.len() - 4];
            assert!(!out.contains(middle), "fragment survived in {out:?}");
        }
    }
}

#[test]
fn gcp_service_account_json_is_redacted() {
    let sa = json!({
        "type": "service_account",
        "project_id": "demo",
        "private_key_id": "0123456789abcdef0123456789abcdef01234567",
        "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n",
        "client_email": "svc@demo.iam.gserviceaccount.com"
    });
    let as_text = redact(&sa.to_string());
    assert!(!as_text.contains("MIIEvQ"));
    assert!(!as_text.contains("0123456789abcdef0123"));
    let as_json = redact_json(&sa);
    assert_eq!(as_json["private_key"], REDACTED);
    assert_eq!(as_json["private_key_id"], REDACTED);
    assert_eq!(as_json["project_id"], "demo");
}

#[test]
fn every_env_and_header_value_is_redacted() {
    let headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("X-Custom-Auth".to_owned(), "plain-looking-value".to_owned()),
    ];
    let out = redact_map(headers);
    assert!(out.values().all(|v| v == REDACTED));
    assert!(out.contains_key("X-Custom-Auth"));
}

#[test]
fn corpus_redaction_is_idempotent() {
    for (text, _) in corpus() {
        let once = redact(&text);
        assert_eq!(redact(&once), once);
    }
}

/// Strings mixing ordinary text with secret-shaped fragments and delimiters, so the
/// property explores the rules' edges rather than only random noise.
fn tricky() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("ghp_".to_owned()),
        Just("sk-".to_owned()),
        Just("sk-ant-".to_owned()),
        Just("AKIA".to_owned()),
        Just("AIza".to_owned()),
        Just("xoxb-".to_owned()),
        Just("eyJ".to_owned()),
        Just("Bearer ".to_owned()),
        Just("Authorization: ".to_owned()),
        Just("password=".to_owned()),
        Just("\"token\": \"".to_owned()),
        Just("-----BEGIN KEY-----".to_owned()),
        Just("-----END KEY-----".to_owned()),
        Just("?a=".to_owned()),
        Just("&b=".to_owned()),
        Just("https://u:".to_owned()),
        Just("@h/".to_owned()),
        Just("[REDACTED]".to_owned()),
        Just(".".to_owned()),
        Just("\n".to_owned()),
        "[A-Za-z0-9_-]{1,24}",
        "[ -~]{0,8}",
    ];
    prop::collection::vec(atom, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn redact_is_idempotent(s in tricky()) {
        let once = redact(&s);
        prop_assert_eq!(redact(&once), once);
    }

    #[test]
    fn redact_is_idempotent_on_arbitrary_text(s in any::<String>()) {
        let once = redact(&s);
        prop_assert_eq!(redact(&once), once);
    }
}
