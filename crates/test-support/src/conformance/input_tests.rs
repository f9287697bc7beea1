//! The multi-round answers of the conformance catalog, to a modern caller, through the fixture's loop in process.

use crate::{serve, FixtureOptions};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// A modern caller's `tools/call` of `name` with `extra` params, through the fixture's loop in process.
struct Fixture {
    tx: mpsc::Sender<Value>,
    rx: mpsc::Receiver<Value>,
    next: i64,
}

impl Fixture {
    fn start() -> Self {
        let (tx, incoming) = mpsc::channel(16);
        let (outgoing, rx) = mpsc::channel(16);
        let opts = FixtureOptions {
            conformance: true,
            ..FixtureOptions::default()
        };
        tokio::spawn(serve(opts, incoming, outgoing));
        Self { tx, rx, next: 0 }
    }

    async fn call(&mut self, name: &str, extra: Value) -> Value {
        self.next += 1;
        let mut params = json!({"name": name, "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}});
        if let Value::Object(m) = extra {
            params.as_object_mut().unwrap().extend(m);
        }
        let req =
            json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": params});
        self.tx.send(req).await.unwrap();
        self.rx.recv().await.unwrap()
    }
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn forged_request_state_is_refused_and_the_issued_one_is_honoured() {
    let mut fx = Fixture::start();
    let tool = "test_input_required_result_tampered_state";
    let first = fx.call(tool, json!({})).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"confirm": accept(json!({"ok": true}))});
    let forged = fx
        .call(
            tool,
            json!({"inputResponses": answers, "requestState": format!("{state}-x")}),
        )
        .await;
    assert_eq!(forged["error"]["code"], jsonrpc::INVALID_PARAMS, "{forged}");
    let stolen = fx
        .call(
            "test_input_required_result_request_state",
            json!({"inputResponses": answers, "requestState": state}),
        )
        .await;
    assert_eq!(stolen["error"]["code"], jsonrpc::INVALID_PARAMS, "{stolen}");
    let honest = fx
        .call(
            tool,
            json!({"inputResponses": answers, "requestState": state}),
        )
        .await;
    assert_eq!(honest["result"]["resultType"], "complete", "{honest}");
}

#[tokio::test]
async fn multi_round_asks_step_two_only_after_step_one() {
    let mut fx = Fixture::start();
    let tool = "test_input_required_result_multi_round";
    let r1 = fx.call(tool, json!({})).await;
    assert!(r1["result"]["inputRequests"]["step1"].is_object(), "{r1}");
    let s1 = r1["result"]["requestState"].clone();
    let r2 = fx
        .call(tool, json!({"inputResponses": {"step1": accept(json!({"name": "Ada"}))}, "requestState": s1}))
        .await;
    assert!(r2["result"]["inputRequests"]["step2"].is_object(), "{r2}");
    let s2 = r2["result"]["requestState"].clone();
    let r3 = fx
        .call(tool, json!({"inputResponses": {"step2": accept(json!({"color": "teal"}))}, "requestState": s2}))
        .await;
    assert_eq!(
        r3["result"]["content"][0]["text"], "Your favorite color is teal.",
        "{r3}"
    );
}

#[tokio::test]
async fn malformed_or_missing_input_responses_never_complete() {
    let mut fx = Fixture::start();
    let tool = "test_input_required_result_elicitation";
    let null = fx.call(tool, json!({"inputResponses": null})).await;
    assert_eq!(null["error"]["code"], jsonrpc::INVALID_PARAMS, "{null}");
    let number = fx
        .call(tool, json!({"inputResponses": {"user_name": 12345}}))
        .await;
    assert_eq!(number["error"]["code"], jsonrpc::INVALID_PARAMS, "{number}");
    let wrong = fx
        .call(
            tool,
            json!({"inputResponses": {"other": accept(json!({}))}}),
        )
        .await;
    assert_eq!(wrong["result"]["resultType"], "input_required", "{wrong}");
    let caps = fx
        .call("test_input_required_result_capabilities", json!({}))
        .await;
    let asked: Vec<&str> = caps["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|q| q["method"].as_str())
        .collect();
    assert_eq!(asked, ["sampling/createMessage"], "{caps}");
}
