//! 2026-07-28 requests over HTTP: no session, each request answered on its own POST, its mirrored headers
//! checked against its body.

use super::Served;
use serde_json::{json, Value};

fn modern(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn modern_call_is_answered_without_a_session() {
    let s = Served::start().await;
    let req = modern(
        1,
        "tools/call",
        json!({"name": "fx__echo", "arguments": {"text": "hi"}}),
    );
    let a = s
        .post(
            &[
                "MCP-Protocol-Version: 2026-07-28",
                "Mcp-Method: tools/call",
                "Mcp-Name: fx__echo",
            ],
            &req,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text());
    assert!(a.header("mcp-session-id").is_none(), "no session is minted");
    assert_eq!(a.json()["result"]["content"][0]["text"], "hi");
}

#[tokio::test]
async fn server_discover_works_over_http() {
    let s = Served::start().await;
    let a = s
        .post(
            &[
                "MCP-Protocol-Version: 2026-07-28",
                "Mcp-Method: server/discover",
            ],
            &modern(1, "server/discover", json!({})),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text());
    let versions = a.json()["result"]["supportedVersions"].clone();
    assert!(
        versions
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "2026-07-28"),
        "{versions}"
    );
}

#[tokio::test]
async fn mcp_name_mismatch_is_header_mismatch_400() {
    let s = Served::start().await;
    let req = modern(
        1,
        "tools/call",
        json!({"name": "fx__echo", "arguments": {"text": "hi"}}),
    );
    let a = s
        .post(
            &[
                "MCP-Protocol-Version: 2026-07-28",
                "Mcp-Method: tools/call",
                "Mcp-Name: fx__add",
            ],
            &req,
        )
        .await;
    assert_eq!(a.status, 400);
    assert_eq!(a.error_code(), Some(-32020));
    assert_eq!(a.json()["id"], 1);
}

#[tokio::test]
async fn missing_mcp_name_or_method_is_header_mismatch_400() {
    let s = Served::start().await;
    let req = modern(
        1,
        "tools/call",
        json!({"name": "fx__echo", "arguments": {}}),
    );
    let a = s
        .post(
            &["MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call"],
            &req,
        )
        .await;
    assert_eq!((a.status, a.error_code()), (400, Some(-32020)));
    let b = s
        .post(
            &["MCP-Protocol-Version: 2026-07-28", "Mcp-Name: fx__echo"],
            &req,
        )
        .await;
    assert_eq!((b.status, b.error_code()), (400, Some(-32020)));
    let c = s
        .post(&["Mcp-Method: tools/call", "Mcp-Name: fx__echo"], &req)
        .await;
    assert_eq!(
        (c.status, c.error_code()),
        (400, Some(-32020)),
        "the version header is required"
    );
}

#[tokio::test]
async fn mcp_method_mismatch_is_header_mismatch_400() {
    let s = Served::start().await;
    let req = modern(
        1,
        "tools/call",
        json!({"name": "fx__echo", "arguments": {}}),
    );
    let a = s
        .post(
            &[
                "MCP-Protocol-Version: 2026-07-28",
                "Mcp-Method: tools/list",
                "Mcp-Name: fx__echo",
            ],
            &req,
        )
        .await;
    assert_eq!((a.status, a.error_code()), (400, Some(-32020)));
}

#[tokio::test]
async fn version_header_disagreeing_with_meta_is_header_mismatch_400() {
    let s = Served::start().await;
    let req = modern(1, "tools/list", json!({}));
    let a = s
        .post(
            &["MCP-Protocol-Version: 2025-11-25", "Mcp-Method: tools/list"],
            &req,
        )
        .await;
    assert_eq!((a.status, a.error_code()), (400, Some(-32020)));
}

#[tokio::test]
async fn unsupported_modern_version_is_32022_with_the_supported_list() {
    let s = Served::start().await;
    let mut req = modern(1, "tools/list", json!({}));
    req["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let a = s
        .post(
            &["MCP-Protocol-Version: 2099-01-01", "Mcp-Method: tools/list"],
            &req,
        )
        .await;
    assert_eq!(
        (a.status, a.error_code()),
        (400, Some(-32022)),
        "{}",
        a.text()
    );
    assert!(a.json()["error"]["data"]["supported"].is_array());
}

#[tokio::test]
async fn legacy_session_id_on_a_modern_request_is_400() {
    let s = Served::start().await;
    let sid = s.initialize().await;
    let req = modern(1, "tools/list", json!({}));
    let a = s
        .post(
            &[
                &format!("Mcp-Session-Id: {sid}"),
                "MCP-Protocol-Version: 2026-07-28",
                "Mcp-Method: tools/list",
            ],
            &req,
        )
        .await;
    assert_eq!(a.status, 400, "{}", a.text());
}

#[tokio::test]
async fn unknown_modern_method_is_404_with_a_json_rpc_error() {
    let s = Served::start().await;
    let a = s
        .post(
            &["MCP-Protocol-Version: 2026-07-28", "Mcp-Method: no/such"],
            &modern(1, "no/such", json!({})),
        )
        .await;
    assert_eq!((a.status, a.error_code()), (404, Some(-32601)));
}

/// The gateway decides what a request without `clientCapabilities` gets; the transport passes its answer on.
#[tokio::test]
async fn missing_client_capabilities_is_answered_as_the_gateway_decides() {
    let s = Served::start().await;
    let mut req = modern(1, "tools/list", json!({}));
    req["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let a = s
        .post(
            &["MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list"],
            &req,
        )
        .await;
    assert_eq!(a.error_code(), Some(-32602), "{}", a.text());
}

/// A listen request's response stream stays open and carries the list changes the client opted in to, caused
/// here by another client's request.
#[tokio::test]
async fn listen_stream_stays_open_and_carries_list_changes() {
    let s = Served::start().await;
    let listen = modern(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let body = listen.to_string();
    let mut conn = super::Conn::open(s.addr).await;
    let head = s.post_head(
        &[
            "MCP-Protocol-Version: 2026-07-28",
            "Mcp-Method: subscriptions/listen",
        ],
        body.len(),
    );
    conn.send(&head, body.as_bytes()).await;
    let (status, _) = conn.head().await;
    assert_eq!(status, 200);
    let first = String::from_utf8(conn.chunk().await.unwrap()).unwrap();
    assert!(
        first.contains("notifications/subscriptions/acknowledged"),
        "{first}"
    );
    let add = modern(
        2,
        "tools/call",
        json!({"name": "fx__add_tool", "arguments": {"name": "fresh"}}),
    );
    let a = s
        .post(
            &[
                "MCP-Protocol-Version: 2026-07-28",
                "Mcp-Method: tools/call",
                "Mcp-Name: fx__add_tool",
            ],
            &add,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text());
    let changed = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            let chunk =
                String::from_utf8(conn.chunk().await.expect("the stream stays open")).unwrap();
            if chunk.contains("notifications/tools/list_changed") {
                return chunk;
            }
        }
    })
    .await
    .expect("a list change within 20 s");
    assert!(
        changed.contains("io.modelcontextprotocol/subscriptionId"),
        "{changed}"
    );
}
