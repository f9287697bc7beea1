//! What crosses the gateway: payloads loss-free both ways, names, pagination, progress, cancellation, list
//! changes, relayed server requests, and resources, prompts and completions routed to their owner.

use crate::support::{call, legacy, relayed, text, toolgate, Setup};
use jsonrpc::Id;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use test_support::{list_all, modern_meta, rich_definition, rich_result, StdioClient};

#[tokio::test]
async fn golden_tool_definition_survives_json_equal_in_both_eras() {
    let setup = Setup::fixture(&[], json!({}));
    let mut expected = rich_definition();
    expected["name"] = json!("fx__rich");
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let rich = tools.iter().find(|t| t["name"] == "fx__rich").unwrap();
    assert_eq!(rich, &expected);
    let modern = setup.serve();
    let tools = list_all(&modern, "tools/list", "tools", Some(&modern_meta()))
        .await
        .unwrap();
    assert_eq!(
        tools.iter().find(|t| t["name"] == "fx__rich").unwrap(),
        &expected
    );
}

#[tokio::test]
async fn golden_tool_result_survives_json_equal() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    assert_eq!(
        call(&client, "fx__rich", json!({})).await.unwrap(),
        rich_result()
    );
    let modern = setup.serve();
    let got = modern
        .request(
            "tools/call",
            json!({"name": "fx__rich", "arguments": {}, "_meta": modern_meta()}),
        )
        .await;
    let mut expected = rich_result();
    expected["resultType"] = json!("complete");
    assert_eq!(got.unwrap(), expected);
}

#[tokio::test]
async fn request_payload_reaches_upstream_unchanged_but_for_owned_fields() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let args = json!({"q": "x", "nested": {"list": [1, 2.5, null, {"k": "v"}]}, "x-unknown": true});
    let params = json!({"name": "fx__reflect", "arguments": args, "x-top": 1,
                        "_meta": {"com.example/trace": "t1", "progressToken": "mine"}});
    let seen = client.request("tools/call", params).await.unwrap()["structuredContent"].clone();
    assert_eq!(
        seen["name"], "reflect",
        "the exposed name is translated back"
    );
    assert_eq!(seen["arguments"], args);
    assert_eq!(seen["x-top"], 1);
    assert_eq!(seen["_meta"]["com.example/trace"], "t1");
    let token = seen["_meta"]["progressToken"].as_str().unwrap();
    assert!(
        token.starts_with("tg-progress-") && token != "mine",
        "progress tokens are remapped: {token}"
    );
}

#[tokio::test]
async fn progress_reaches_the_client_with_its_own_token() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let params = json!({"name": "fx__slow", "arguments": {"steps": 3, "delay_ms": 10}, "_meta": {"progressToken": 77}});
    let done = client.request("tools/call", params).await.unwrap();
    assert_eq!(text(&done), "done after 3 steps");
    let progress: Vec<Value> = client
        .notifications()
        .into_iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3);
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == 77));
    assert_eq!(progress[2]["params"]["progress"], 3);
}

#[tokio::test]
async fn cancellation_reaches_the_upstream_and_suppresses_the_answer() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let id = Id::Str("to-cancel".into());
    let slow = json!({"name": "fx__slow", "arguments": {"steps": 100, "delay_ms": 50}});
    client
        .send_value(&jsonrpc::request(&id, "tools/call", Some(slow)))
        .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": "to-cancel", "reason": "test"}),
        )
        .await;
    let mut cancelled = 0;
    for _ in 0..50 {
        cancelled = call(&client, "fx__cancelled", json!({})).await.unwrap()["structuredContent"]
            ["cancelled"]
            .as_u64()
            .unwrap();
        if cancelled == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cancelled, 1, "the upstream was told to cancel");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        client
            .notifications()
            .iter()
            .all(|m| m["id"] != "to-cancel"),
        "no answer to a cancelled request"
    );
}

#[tokio::test]
async fn list_changed_propagates_and_the_new_tool_is_callable() {
    // A tool new to a listed server is held by default (see the pins suite); here it is accepted as it comes.
    let setup = Setup::fixture(&[], json!({"pins": {"newTools": "accept"}}));
    let client = legacy(&setup).await;
    call(&client, "fx__add_tool", json!({"name": "fresh"}))
        .await
        .unwrap();
    let changed = client
        .wait_notification(Duration::from_secs(5), |n| {
            n["method"] == "notifications/tools/list_changed"
        })
        .await;
    assert!(changed.is_some(), "the client hears about the change");
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(tools.iter().any(|t| t["name"] == "fx__fresh"));
    assert_eq!(
        text(&call(&client, "fx__fresh", json!({})).await.unwrap()),
        "fresh"
    );
}

#[tokio::test]
async fn sampling_is_relayed_to_a_client_that_declared_it() {
    let setup = Setup::fixture(&[], json!({}));
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "sampled!"}, "model": "m"});
    let client = setup.serve_with(
        HashMap::from([("sampling/createMessage".to_owned(), answer.clone())]),
        &[],
    );
    client
        .initialize("2025-11-25", json!({"sampling": {}}))
        .await
        .unwrap();
    let r = call(&client, "fx__sample", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert_eq!(r["structuredContent"], answer);
}

/// Upstream requests go to the client whose call caused them. Calls of one client running side by side on the
/// upstream still attribute to it: the sampling request reaches it and its answer reaches the server.
#[tokio::test]
async fn sampling_is_relayed_while_other_calls_of_the_same_client_run() {
    let setup = Setup::fixture(&[], json!({}));
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "side by side"}, "model": "m"});
    let client = setup.serve_with(
        HashMap::from([("sampling/createMessage".to_owned(), answer.clone())]),
        &[],
    );
    client
        .initialize("2025-11-25", json!({"sampling": {}}))
        .await
        .unwrap();
    let slow = call(&client, "fx__slow", json!({"steps": 10, "delay_ms": 100}));
    let sample = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        call(&client, "fx__sample", json!({"prompt": "hi"})).await
    };
    let (slow, sample) = tokio::join!(slow, sample);
    assert_eq!(sample.unwrap()["structuredContent"], answer);
    assert_eq!(text(&slow.unwrap()), "done after 10 steps");
    assert_eq!(client.requests_of("sampling/createMessage").len(), 1);
}

#[tokio::test]
async fn elicitation_of_an_upstream_is_relayed_to_the_client_whose_call_caused_it() {
    let setup = Setup::fixture(&[], json!({}));
    let answer = json!({"action": "accept", "content": {}});
    let client = setup.serve_with(
        HashMap::from([("elicitation/create".to_owned(), answer.clone())]),
        &[],
    );
    client
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await
        .unwrap();
    let r = call(&client, "fx__elicit", json!({"message": "which one?"}))
        .await
        .unwrap();
    assert_eq!(r["structuredContent"], answer);
    let asked = client.requests_of("elicitation/create");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["params"]["message"], relayed("fx", "which one?"));
}

/// A client's `logging/setLevel` is its own: toolgate keeps it and filters the upstream's log messages by it.
#[tokio::test]
async fn log_messages_reach_the_client_only_at_its_own_level() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    client
        .request("logging/setLevel", json!({"level": "warning"}))
        .await
        .unwrap();
    call(
        &client,
        "fx__log",
        json!({"level": "info", "data": "quiet"}),
    )
    .await
    .unwrap();
    call(
        &client,
        "fx__log",
        json!({"level": "error", "data": "loud"}),
    )
    .await
    .unwrap();
    let loud = client
        .wait_notification(Duration::from_secs(5), |n| n["params"]["data"] == "loud")
        .await;
    assert!(loud.is_some(), "{:?}", client.notifications());
    let quiet = client
        .notifications()
        .into_iter()
        .filter(|n| n["params"]["data"] == "quiet")
        .count();
    assert_eq!(quiet, 0, "below the level the client set");
    let bad = client
        .request("logging/setLevel", json!({"level": "chatty"}))
        .await
        .unwrap_err();
    assert_eq!(bad["code"], jsonrpc::INVALID_PARAMS, "{bad}");
}

#[tokio::test]
async fn sampling_is_refused_clearly_when_the_client_did_not_declare_it() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let err = call(&client, "fx__sample", json!({"prompt": "hi"}))
        .await
        .unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("did not declare the \"sampling\" capability"),
        "{err}"
    );
}

#[tokio::test]
async fn every_page_of_a_large_catalog_arrives_once() {
    let setup = Setup::fixture(
        &["--tools", "40", "--page-size", "7"],
        json!({"limits": {"pageSize": 6}}),
    );
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let names: HashSet<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names.len(), tools.len(), "no duplicates");
    assert!((0..40).all(|i| names.contains(format!("fx__tool_{i}").as_str())));
    let err = client
        .request("tools/list", json!({"cursor": "forged"}))
        .await
        .unwrap_err();
    assert_eq!(err["code"], jsonrpc::INVALID_PARAMS);
}

#[tokio::test]
async fn resources_prompts_and_completions_reach_their_owner() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let resources = list_all(&client, "resources/list", "resources", None)
        .await
        .unwrap();
    assert_eq!(resources.len(), 3);
    let read = client
        .request("resources/read", json!({"uri": "fixture://static/2"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "content of fixture://static/2");
    let templated = client
        .request("resources/read", json!({"uri": "fixture://item/9"}))
        .await
        .unwrap();
    assert_eq!(
        templated["contents"][0]["text"],
        "content of fixture://item/9"
    );
    let prompt = client
        .request(
            "prompts/get",
            json!({"name": "fx__greet", "arguments": {"name": "Ada"}}),
        )
        .await
        .unwrap();
    assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, Ada!");
    let done = client
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "fx__greet"},
                                                "argument": {"name": "name", "value": "a"}}),
        )
        .await
        .unwrap();
    assert_eq!(done["completion"]["values"], json!(["alice", "bob"]));
}

#[tokio::test]
async fn names_outside_the_portable_set_are_mapped_and_callable() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.iter().all(|n| gateway::is_portable(n)), "{names:?}");
    let dotted = names
        .iter()
        .find(|n| n.starts_with("fx__weird_name_"))
        .unwrap();
    assert_eq!(
        text(&call(&client, dotted, json!({})).await.unwrap()),
        "weird.name"
    );
}

#[tokio::test]
async fn separator_and_unprefixed_names_are_configurable() {
    let dash = Setup::fixture(&[], json!({"separator": "-"}));
    let client = legacy(&dash).await;
    assert_eq!(
        text(
            &call(&client, "fx-echo", json!({"text": "a"}))
                .await
                .unwrap()
        ),
        "a"
    );
    let bare = Setup::fixture(&[], json!({"prefixTools": false}));
    let client = legacy(&bare).await;
    assert_eq!(
        text(&call(&client, "echo", json!({"text": "b"})).await.unwrap()),
        "b"
    );
}

#[tokio::test]
async fn wrap_looks_exactly_like_the_wrapped_server() {
    let tg = toolgate();
    let tg_str = tg.to_str().unwrap();
    let policy = Setup::new(json!({"permissions": {"default": "allow"}}));
    let policy_path = policy.config.to_str().unwrap();
    let client = StdioClient::spawn(
        &tg,
        &[
            "wrap",
            "--config",
            policy_path,
            "--",
            tg_str,
            "fixture-server",
        ],
        &[("TOOLGATE_STATE_DIR", policy.state_dir().to_str().unwrap())],
        HashMap::new(),
    )
    .unwrap();
    let init = client.initialize("2025-11-25", json!({})).await.unwrap();
    assert_eq!(init["serverInfo"]["name"], "toolgate-fixture");
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let upstream: Vec<&str> = tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| !n.starts_with("toolgate_"))
        .collect();
    assert_eq!(upstream[0], "echo", "upstream tools keep their own names");
    assert!(tools.iter().all(|t| t["name"] != "toolgate_status"));
    assert_eq!(
        text(
            &call(&client, "echo", json!({"text": "wrapped"}))
                .await
                .unwrap()
        ),
        "wrapped"
    );
}

/// 9.15: 200 tools with 50 KB descriptions made a merged page over the message limit, and the client got no
/// tools at all. Pages are sized in bytes too: here 100 such tools (5 MB) would be one page by count alone.
#[tokio::test]
async fn large_definitions_are_paged_under_the_message_limit() {
    let setup = Setup::fixture(
        &[
            "--tools",
            "100",
            "--description-bytes",
            "50000",
            "--page-size",
            "10",
        ],
        json!({}),
    );
    let client = legacy(&setup).await;
    // 5 MB of definitions take the fixture a while; the first list does not wait for it beyond a few seconds.
    wait_ready(&client, "fx").await;
    for _ in 0..100 {
        let mut pages = 0;
        let mut names = HashSet::new();
        let mut cursor: Option<Value> = None;
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            // An oversized page would have become an error response here.
            let page = client.request("tools/list", params).await.unwrap();
            pages += 1;
            for t in page["tools"].as_array().unwrap() {
                names.insert(t["name"].as_str().unwrap().to_owned());
            }
            match page.get("nextCursor") {
                Some(c) => cursor = Some(c.clone()),
                None => break,
            }
        }
        if (0..100).all(|i| names.contains(&format!("fx__tool_{i}"))) {
            assert!(pages >= 2, "{pages} pages");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the catalog never listed completely");
}

/// 9.15: a single definition larger than any page is held back with a reason, and the rest are listed.
#[tokio::test]
async fn oversized_single_definition_is_held_with_a_reason() {
    let setup = Setup::fixture(
        &["--huge-tool", "60000", "--page-size", "1"],
        json!({"limits": {"maxMessageBytes": 65536}}),
    );
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let names: HashSet<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(
        names.contains("fx__echo") && !names.contains("fx__huge"),
        "{names:?}"
    );
    let status = call(&client, "toolgate_status", json!({})).await.unwrap();
    let held = &status["structuredContent"]["held"];
    assert_eq!(held[0]["name"], "huge", "{held}");
    assert!(
        held[0]["reason"].as_str().unwrap().contains("bytes"),
        "{held}"
    );
}

/// Waits until `server` is ready (its catalog is merged by then: the status tool runs after the rebuild).
async fn wait_ready(client: &StdioClient, server: &str) {
    for _ in 0..600 {
        let s = call(client, "toolgate_status", json!({})).await.unwrap();
        let state = s["structuredContent"]["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["server"] == server)
            .map(|s| s["state"].clone());
        if state == Some(json!("ready")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{server} did not become ready");
}
