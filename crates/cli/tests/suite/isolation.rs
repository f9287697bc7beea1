//! An upstream that crashes, hangs, floods, or writes garbage harms only its own calls; toolgate restarts it,
//! and when toolgate ends, every upstream process group ends with it.

use crate::support::{call, fixture, gone, legacy, text, Setup};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use test_support::StdioClient;

async fn status(client: &StdioClient, server: &str) -> Value {
    let s = call(client, "toolgate_status", json!({})).await.unwrap();
    s["structuredContent"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == server)
        .unwrap()
        .clone()
}

/// Waits until `server` is ready again after at least one restart.
async fn wait_restarted(client: &StdioClient, server: &str) -> Value {
    for _ in 0..100 {
        let s = status(client, server).await;
        if s["state"] == "ready" && s["restarts"].as_u64().unwrap_or(0) >= 1 {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{server} did not become ready again");
}

#[tokio::test]
async fn crashed_upstream_fails_its_call_and_restarts() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let err = call(&client, "fx__crash", json!({})).await.unwrap_err();
    assert_eq!(err["code"], jsonrpc::UPSTREAM_UNAVAILABLE, "{err}");
    wait_restarted(&client, "fx").await;
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "back"}))
                .await
                .unwrap()
        ),
        "back"
    );
}

#[tokio::test]
async fn garbage_on_upstream_stdout_is_ignored_and_counted() {
    let setup = Setup::fixture(&["--garbage"], json!({}));
    let client = legacy(&setup).await;
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "fine"}))
                .await
                .unwrap()
        ),
        "fine"
    );
    assert!(
        status(&client, "fx").await["ignoredStdoutLines"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[tokio::test]
async fn hanging_upstream_times_out_and_is_told_to_cancel() {
    let setup = Setup::fixture(&[], json!({"limits": {"requestTimeoutSeconds": 1}}));
    let client = legacy(&setup).await;
    let err = call(&client, "fx__hang", json!({})).await.unwrap_err();
    assert_eq!(err["code"], jsonrpc::REQUEST_TIMEOUT, "{err}");
    let n = call(&client, "fx__cancelled", json!({})).await.unwrap();
    assert_eq!(n["structuredContent"]["cancelled"], 1);
}

#[tokio::test]
async fn failing_upstream_does_not_take_down_the_others() {
    let setup = Setup::new(json!({"permissions": {"default": "allow"}, "mcpServers": {
        "fx": fixture(&[]),
        "broken": {"command": "/nonexistent/mcp-server"}
    }}));
    let client = legacy(&setup).await;
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "ok"}))
                .await
                .unwrap()
        ),
        "ok"
    );
    let broken = status(&client, "broken").await;
    assert_eq!(broken["state"], "backoff");
    assert!(
        broken["lastError"].as_str().unwrap().contains("not found"),
        "{broken}"
    );
}

#[tokio::test]
async fn oversized_upstream_response_is_an_error_not_a_truncated_line() {
    let setup = Setup::fixture(&[], json!({"limits": {"maxMessageBytes": 4096}}));
    let client = legacy(&setup).await;
    let err = call(&client, "fx__big", json!({"bytes": 100_000}))
        .await
        .unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("over the limit of 4096 bytes"),
        "{err}"
    );
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "next"}))
                .await
                .unwrap()
        ),
        "next"
    );
}

async fn upstream_pids(client: &StdioClient) -> (i32, i32) {
    let pids = call(client, "fx__pids", json!({})).await.unwrap()["structuredContent"].clone();
    (
        pids["pid"].as_i64().unwrap() as i32,
        pids["grandchild"].as_i64().unwrap() as i32,
    )
}

#[tokio::test]
async fn no_orphans_after_stdin_eof() {
    let setup = Setup::fixture(&["--grandchild"], json!({}));
    let mut client = legacy(&setup).await;
    let (server, grandchild) = upstream_pids(&client).await;
    let exit = client
        .close(Duration::from_secs(10))
        .await
        .expect("toolgate exits on EOF");
    assert!(exit.success());
    assert!(
        gone(server, 5).await && gone(grandchild, 5).await,
        "upstream {server} or grandchild {grandchild} survived"
    );
}

async fn no_orphans_after(signal: Signal) {
    let setup = Setup::fixture(&["--grandchild"], json!({}));
    let mut client = legacy(&setup).await;
    let (server, grandchild) = upstream_pids(&client).await;
    kill(Pid::from_raw(client.pid().unwrap() as i32), signal).unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(10), client.child_mut().wait()).await;
    assert!(exit
        .expect("toolgate exits on the signal")
        .unwrap()
        .success());
    assert!(
        gone(server, 5).await && gone(grandchild, 5).await,
        "upstream {server} or grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn no_orphans_after_sigterm() {
    no_orphans_after(Signal::SIGTERM).await;
}

#[tokio::test]
async fn no_orphans_after_sigint() {
    no_orphans_after(Signal::SIGINT).await;
}

#[tokio::test]
async fn throwaway_probe_copy_exits_cleanly() {
    let setup = Setup::fixture(&["--grandchild"], json!({}));
    let mut client = setup.serve();
    let exit = client
        .close(Duration::from_secs(10))
        .await
        .expect("a copy closed at once exits");
    assert!(exit.success());
}

#[tokio::test]
async fn secrets_in_toolgate_environment_do_not_reach_upstreams() {
    let mut entry = fixture(&[]);
    entry["env"] = json!({"GIVEN": "${GIVEN_SOURCE}"});
    let setup =
        Setup::new(json!({"permissions": {"default": "allow"}, "mcpServers": {"fx": entry}}));
    let env = [
        ("AWS_SECRET_ACCESS_KEY", "leak-me"),
        ("GITHUB_TOKEN", "leak-me-too"),
        ("GIVEN_SOURCE", "value"),
    ];
    let client = setup.serve_with(HashMap::new(), &env);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let keys = call(&client, "fx__env_keys", json!({})).await.unwrap()["structuredContent"]["keys"]
        .clone();
    let keys: Vec<&str> = keys
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        keys.contains(&"PATH") && keys.contains(&"GIVEN"),
        "{keys:?}"
    );
    assert!(
        !keys.contains(&"AWS_SECRET_ACCESS_KEY") && !keys.contains(&"GITHUB_TOKEN"),
        "{keys:?}"
    );
}
