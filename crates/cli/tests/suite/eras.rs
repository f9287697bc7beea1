//! Both protocol eras on one binary, chosen per connection; and both eras of upstream behind either.

use crate::support::{call, legacy, text, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use test_support::modern_meta;

fn with_meta(mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    params
}

#[tokio::test]
async fn initialize_echoes_known_versions_and_counter_offers_others() {
    let setup = Setup::fixture(&[], json!({}));
    for (asked, agreed) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let client = setup.serve();
        let init = client.initialize(asked, json!({})).await.unwrap();
        assert_eq!(init["protocolVersion"], agreed, "asked {asked}");
        assert_eq!(init["serverInfo"]["name"], "toolgate");
        assert!(init["capabilities"]["tools"]["listChanged"]
            .as_bool()
            .unwrap());
    }
}

#[tokio::test]
async fn second_initialize_is_refused() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let err = client
        .initialize("2025-11-25", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err["code"], jsonrpc::INVALID_REQUEST);
}

#[tokio::test]
async fn modern_client_needs_no_handshake() {
    let setup = Setup::fixture(&[], json!({}));
    let client = setup.serve();
    let found = client
        .request("server/discover", with_meta(json!({})))
        .await
        .unwrap();
    assert_eq!(found["supportedVersions"][0], "2026-07-28");
    assert_eq!(found["resultType"], "complete");
    assert_eq!(found["cacheScope"], "private");
    assert_eq!(
        found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "toolgate"
    );
    let list = client
        .request("tools/list", with_meta(json!({})))
        .await
        .unwrap();
    assert_eq!(
        (&list["resultType"], &list["ttlMs"], &list["cacheScope"]),
        (&json!("complete"), &json!(0), &json!("private"))
    );
    let echo = client
        .request(
            "tools/call",
            with_meta(json!({"name": "fx__echo", "arguments": {"text": "hi"}})),
        )
        .await
        .unwrap();
    assert_eq!(echo["resultType"], "complete");
    assert_eq!(text(&echo), "hi");
}

#[tokio::test]
async fn modern_request_without_client_capabilities_is_invalid() {
    let setup = Setup::fixture(&[], json!({}));
    let client = setup.serve();
    let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let err = client.request("tools/list", params).await.unwrap_err();
    assert_eq!(err["code"], jsonrpc::INVALID_PARAMS);
}

#[tokio::test]
async fn unknown_modern_version_is_unsupported_protocol_version() {
    let setup = Setup::fixture(&[], json!({}));
    let client = setup.serve();
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let err = client
        .request("tools/list", json!({"_meta": meta}))
        .await
        .unwrap_err();
    assert_eq!(err["code"], jsonrpc::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(
        err["data"],
        json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})
    );
}

#[tokio::test]
async fn probe_with_discover_then_initialize_is_a_legacy_connection() {
    let setup = Setup::fixture(&[], json!({}));
    let client = setup.serve();
    client
        .request("server/discover", with_meta(json!({})))
        .await
        .unwrap();
    client.initialize("2025-06-18", json!({})).await.unwrap();
    let list = client.request("tools/list", json!({})).await.unwrap();
    assert!(
        list.get("resultType").is_none(),
        "legacy results carry no resultType"
    );
    let err = client
        .request("tools/list", with_meta(json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        err["code"],
        jsonrpc::INVALID_REQUEST,
        "a legacy connection does not switch eras"
    );
}

#[tokio::test]
async fn modern_client_reaches_legacy_only_upstream() {
    let setup = Setup::fixture(&["--era", "legacy"], json!({}));
    let client = setup.serve();
    let echo = client
        .request(
            "tools/call",
            with_meta(json!({"name": "fx__echo", "arguments": {"text": "across eras"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        (text(&echo), &echo["resultType"]),
        ("across eras", &json!("complete"))
    );
    let status = client
        .request(
            "tools/call",
            with_meta(json!({"name": "toolgate_status", "arguments": {}})),
        )
        .await
        .unwrap();
    assert_eq!(
        status["structuredContent"]["servers"][0]["protocolVersion"],
        "2025-11-25"
    );
}

#[tokio::test]
async fn legacy_client_reaches_modern_only_upstream() {
    let setup = Setup::fixture(&["--era", "modern"], json!({}));
    let client = legacy(&setup).await;
    let status = call(&client, "toolgate_status", json!({})).await.unwrap();
    assert_eq!(
        status["structuredContent"]["servers"][0]["protocolVersion"],
        "2026-07-28"
    );
    let list = client.request("tools/list", json!({})).await.unwrap();
    assert!(
        list.get("ttlMs").is_none() && list.get("resultType").is_none(),
        "{list}"
    );
    let add = call(&client, "fx__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(add["structuredContent"], json!({"sum": 3.0}));
    assert!(add.get("resultType").is_none());
}

#[tokio::test]
async fn modern_client_hears_list_changes_on_its_listen_stream() {
    let setup = Setup::fixture(&[], json!({}));
    let client = setup.serve();
    let listen = jsonrpc::request(
        &jsonrpc::Id::Str("listen-1".into()),
        "subscriptions/listen",
        Some(with_meta(
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": false}}),
        )),
    );
    client.send_value(&listen).await;
    let ack = client
        .wait_notification(std::time::Duration::from_secs(5), |n| {
            n["method"] == "notifications/subscriptions/acknowledged"
        })
        .await
        .expect("the subscription is acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    client
        .request(
            "tools/call",
            with_meta(json!({"name": "fx__add_tool", "arguments": {"name": "later"}})),
        )
        .await
        .unwrap();
    let changed = client
        .wait_notification(std::time::Duration::from_secs(5), |n| {
            n["method"] == "notifications/tools/list_changed"
        })
        .await
        .expect("list_changed on the listen stream");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
}
