//! Bridging between the protocol eras end to end, with real processes: the official Python SDK client, which
//! speaks 2026-07-28 on stdio, answers a legacy upstream's elicitation and sampling through `input_required`;
//! a legacy client answers a 2026-07-28 upstream's `input_required` as the requests it knows.

use crate::support::{call, fixture, peers, text, toolgate, Setup};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// The peer script beside the pinned peers, in this repository (the interpreter comes from the installed peers).
fn script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/peers")
        .join(name)
}

#[test]
fn python_sdk_client_answers_a_legacy_upstreams_questions_through_input_required() {
    // The client starts toolgate with a clean environment, so the state directory is named in the config.
    let setup = Setup::with(|dir| {
        json!({"mcpServers": {"fx": fixture(&["--era", "legacy", "--bridging"])},
               "permissions": {"default": "allow"}, "stateDir": dir.join("state")})
    });
    let out = Command::new(peers().join(".venv/bin/python"))
        .arg(script("py_bridge.py"))
        .arg(toolgate())
        .arg(&setup.config)
        .current_dir(peers())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "py_bridge.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(out["protocolVersion"], "2026-07-28", "{out}");
    // Every question reached the client's own callbacks, labelled with the server that asks, and every answer
    // reached the upstream's tool.
    let relayed = |q: &str| crate::support::relayed("fx", q);
    assert_eq!(
        out["elicited"],
        json!([
            relayed("proceed from python?"),
            relayed("both from python"),
            relayed("twice from python")
        ]),
        "{out}"
    );
    assert_eq!(out["sampled"], json!([1, 1]), "{out}");
    let accepted = json!({"action": "accept", "content": {"ok": true}});
    assert_eq!(out["elicit"]["structuredContent"], accepted, "{out}");
    for call in ["both", "twice"] {
        let result = &out[call]["structuredContent"];
        assert_eq!(result["elicited"], accepted, "{call}: {out}");
        assert_eq!(
            result["sampled"]["content"]["text"], "sampled by python",
            "{call}: {out}"
        );
    }
}

#[tokio::test]
async fn legacy_client_answers_a_modern_upstreams_input_required_as_elicitation() {
    let setup = Setup::fixture(&["--era", "modern", "--bridging"], json!({}));
    let accepted = json!({"action": "accept", "content": {"ok": true}});
    let answers = HashMap::from([("elicitation/create".to_owned(), accepted.clone())]);
    let client = setup.serve_with(answers, &[]);
    client
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await
        .unwrap();
    let result = call(
        &client,
        "fx__confirm",
        json!({"message": "from a legacy client?", "rounds": 2}),
    )
    .await
    .unwrap();
    assert_eq!(text(&result), "accept", "{result}");
    assert_eq!(result["structuredContent"]["answer"], accepted, "{result}");
    assert_eq!(result["structuredContent"]["rounds"], 2, "{result}");
    assert!(
        result.get("resultType").is_none(),
        "a legacy result: {result}"
    );
    let asked = client.requests_of("elicitation/create");
    assert_eq!(asked.len(), 2, "one question per round: {asked:#?}");
    for q in &asked {
        assert_eq!(
            q["params"]["message"],
            crate::support::relayed("fx", "from a legacy client?"),
            "{q}"
        );
    }
}

/// 2025-11-25 tasks through a real process: the client sees only toolgate's task ids, in the created task, its
/// status, its result and the merged list.
#[tokio::test]
async fn legacy_client_task_ids_are_toolgates_end_to_end() {
    let setup = Setup::fixture(&["--era", "legacy", "--bridging"], json!({}));
    let client = setup.serve();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let params =
        json!({"name": "fx__task_work", "arguments": {"delay_ms": 30}, "task": {"ttl": 60000}});
    let created = client.request("tools/call", params).await.unwrap();
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("tgtask-"), "{created}");
    let result = client
        .request("tasks/result", json!({"taskId": id}))
        .await
        .unwrap();
    assert_eq!(text(&result), "worked", "{result}");
    let listed = client.request("tasks/list", json!({})).await.unwrap();
    assert_eq!(listed["tasks"][0]["taskId"], id.as_str(), "{listed}");
    assert!(!listed.to_string().contains("fx-task-"), "{listed}");
    let foreign = client
        .request("tasks/get", json!({"taskId": "fx-task-1"}))
        .await
        .unwrap_err();
    assert!(foreign.to_string().contains("unknown task"), "{foreign}");
}

/// A 2026-07-28 server (the dual-era Python SDK server, reached modern over Streamable HTTP): a legacy
/// client's `resources/subscribe`, an RPC that era removed, is bridged to a `subscriptions/listen` stream
/// naming the URI, so the client hears of updates; its `resources/unsubscribe` closes the stream, and it
/// hears of none after.
#[tokio::test]
async fn legacy_clients_subscription_to_a_modern_upstream_is_bridged_to_a_listen_stream() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(peers().join(".venv-servers/bin/python"))
        .arg(script("conformance_server.py"))
        .args(["http", &port.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    let setup = Setup::new(json!({
        "mcpServers": {"py": {"type": "http", "url": url, "protocol": "modern"}},
        "permissions": {"default": "allow"},
    }));
    let client = crate::support::legacy(&setup).await;
    let uri = "test://watched-resource";
    let updated =
        |v: &Value| v["method"] == "notifications/resources/updated" && v["params"]["uri"] == uri;
    let within = std::time::Duration::from_secs(10);
    let subscribed = client
        .request("resources/subscribe", json!({"uri": uri}))
        .await;
    assert_eq!(subscribed, Ok(json!({})), "bridged, not refused");
    let touched = call(&client, "py__test_touch_watched", json!({}))
        .await
        .unwrap();
    assert_eq!(text(&touched), "touched");
    assert!(
        client.wait_notification(within, updated).await.is_some(),
        "the update reached the subscribed client: {:?}",
        client.notifications()
    );
    let unsubscribed = client
        .request("resources/unsubscribe", json!({"uri": uri}))
        .await;
    assert_eq!(unsubscribed, Ok(json!({})));
    let before = client.notifications().iter().filter(|v| updated(v)).count();
    call(&client, "py__test_touch_watched", json!({}))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let after = client.notifications().iter().filter(|v| updated(v)).count();
    assert_eq!(before, after, "no update after the unsubscribe");
    let _ = server.kill();
    let _ = server.wait();
}
