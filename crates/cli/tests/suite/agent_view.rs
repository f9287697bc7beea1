//! What the agent is shown of an upstream, and what toolgate keeps: a failed upstream's stderr reaches
//! `toolgate_status` and `search_tools` only redacted, and a credential in a resource URI reaches neither the audit
//! log nor the state database (nor its write-ahead log).

use crate::support::{fixture, legacy, Setup};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ";

async fn call(client: &test_support::StdioClient, name: &str, args: Value) -> String {
    crate::support::call(client, name, args)
        .await
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn upstream_stderr_token_never_reaches_the_agent() {
    let leaky = json!({"command": "sh", "args": ["-c",
        format!("echo 'login refused for {TOKEN}' >&2; sleep 0.2; exit 3")]});
    let setup = Setup::new(json!({
        "mcpServers": {"fx": fixture(&[]), "leaky": leaky},
        "permissions": {"default": "allow"},
        "mode": "code",
    }));
    let client = legacy(&setup).await;
    let mut status = String::new();
    for _ in 0..100 {
        status = call(&client, "toolgate_status", json!({})).await;
        if status.contains("login refused") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        status.contains("login refused for [REDACTED:github-token]"),
        "the failure is shown, its token is not: {status}"
    );
    let found = call(&client, "search_tools", json!({"query": "echo"})).await;
    assert!(
        found.contains("leaky") && found.contains("[REDACTED:github-token]"),
        "{found}"
    );
    for shown in [&status, &found] {
        assert!(!shown.contains(TOKEN), "{shown}");
    }
}

/// Every byte under `dir`, file by file.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path.display().to_string(), bytes));
        }
    }
    out
}

#[tokio::test]
async fn secret_in_a_resource_uri_never_reaches_the_records() {
    let setup = Setup::fixture(&[], json!({}));
    let mut client = legacy(&setup).await;
    let uri = "fixture://static/1?key=s3cr3t-in-query";
    let _ = client.request("resources/read", json!({"uri": uri})).await;
    let _ = client
        .request(
            "resources/read",
            json!({"uri": "https://me:s3cr3t-in-userinfo@example.test/x"}),
        )
        .await;
    // A clean end flushes what the gateway wrote behind the calls.
    assert!(client.close(Duration::from_secs(10)).await.is_some());
    let kept = files_under(&setup.state_dir());
    let audit = kept
        .iter()
        .find(|(p, _)| p.ends_with("audit.jsonl"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    assert!(
        audit.contains("key=[REDACTED]"),
        "the read is recorded: {audit}"
    );
    for (path, bytes) in &kept {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains("s3cr3t"), "{path} keeps the secret");
    }
}
