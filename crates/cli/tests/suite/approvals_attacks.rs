//! Attacks on the approval flow through a running gateway: a forged approval row, a session grant stretched to
//! other arguments, a flood of asks, a cancelled call whose request is approved later, and prompts and resource
//! reads under `"default": "ask"`.

use crate::support::{call, fixture, text, toolgate, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use store::{ApprovalStatus, Namespace, Store, Timestamp};
use test_support::StdioClient;

/// A fixture upstream under `permissions`, with its own state root, served with elicitation `answer` if any.
struct Gate {
    setup: Setup,
}

impl Gate {
    fn new(permissions: Value, approvals: Value) -> Self {
        let setup = Setup::with(|dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            json!({
                "workspace": dir.join("ws"),
                "mcpServers": {"fx": fixture(&[])},
                "permissions": permissions,
                "approvals": approvals,
            })
        });
        Self { setup }
    }

    async fn client(&self, answer: Option<Value>) -> StdioClient {
        let answers = answer
            .map(|a| HashMap::from([("elicitation/create".to_owned(), a)]))
            .unwrap_or_default();
        let client = self.setup.serve_with(answers, &[]);
        client
            .initialize("2025-11-25", json!({"elicitation": {}}))
            .await
            .unwrap();
        client
    }

    fn namespace(&self) -> Namespace {
        Namespace::open(&self.setup.state_dir(), &self.setup.workspace()).unwrap()
    }

    fn store(&self) -> Store {
        Store::open(&self.namespace()).unwrap()
    }

    fn status(&self, id: &str) -> ApprovalStatus {
        self.store()
            .get_request(id, Timestamp::now())
            .unwrap()
            .status
    }

    async fn wait_for_pending(&self) -> String {
        for _ in 0..200 {
            let pending = self
                .store()
                .list_requests(Some(ApprovalStatus::Pending), Timestamp::now())
                .unwrap();
            if let Some(a) = pending.first() {
                return a.id.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no approval request appeared");
    }

    fn admin(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new(toolgate())
            .args(args)
            .arg("--config")
            .arg(&self.setup.config)
            .env("TOOLGATE_STATE_DIR", self.setup.state_dir())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }
}

fn ask_echo() -> Value {
    json!({"default": "allow", "ask": ["mcp__fx__echo"]})
}

fn code(result: &Value) -> &str {
    result["structuredContent"]["error"]["code"]
        .as_str()
        .or_else(|| result["structuredContent"]["outcome"].as_str())
        .unwrap_or("")
}

fn request_id(result: &Value) -> String {
    result["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn agent_rewrites_its_approval_row_to_approved_and_resume_refuses() {
    let gate = Gate::new(ask_echo(), json!({"wait_seconds": 0, "elicitation": false}));
    let client = gate.client(None).await;
    let asked = call(&client, "fx__echo", json!({"text": "forged"}))
        .await
        .unwrap();
    let id = request_id(&asked);
    let db = rusqlite::Connection::open(gate.namespace().db_path()).unwrap();
    db.execute(
        "UPDATE approvals SET status = 'APPROVED', decided_at = created_at, decided_by = 'alice' WHERE id = ?1",
        [&id],
    )
    .unwrap();
    let resumed = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(code(&resumed), "REQUEST_TAMPERED", "{resumed}");
    assert_ne!(text(&resumed), "forged");
    let status = call(
        &client,
        "toolgate_request_status",
        json!({"request_id": id}),
    )
    .await
    .unwrap();
    assert_eq!(code(&status), "REQUEST_TAMPERED", "{status}");
    let shown = gate.admin(&["approvals", "show", &id]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("TAMPERED"), "{shown}");
    let listed = gate.admin(&["approvals", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("APPROVED TAMPERED"), "{listed}");
    let key = crate::support::operator_key(&gate.setup.state_dir());
    let approve = gate.admin(&[
        "approvals",
        "approve",
        &id,
        "--operator-key",
        key.to_str().unwrap(),
    ]);
    assert_eq!(approve.status.code(), Some(1));
    let refused = String::from_utf8_lossy(&approve.stderr);
    assert!(refused.contains("failed its integrity check"), "{refused}");
}

#[tokio::test]
async fn elicitation_session_grant_covers_only_the_exact_arguments_it_was_given_for() {
    let gate = Gate::new(ask_echo(), json!({"wait_seconds": 20}));
    let answer = json!({"action": "accept", "content": {"decision": "allow_session"}});
    let client = gate.client(Some(answer)).await;
    let first = call(&client, "fx__echo", json!({"text": "ls"}))
        .await
        .unwrap();
    assert_eq!(text(&first), "ls", "{first}");
    let asks = client.requests_of("elicitation/create");
    assert_eq!(asks.len(), 1, "the first call asked");
    let question = asks[0]["params"]["message"].as_str().unwrap();
    assert!(question.contains(r#"{"text":"ls"}"#), "{question}");
    let same = call(&client, "fx__echo", json!({"text": "ls"}))
        .await
        .unwrap();
    assert_eq!(text(&same), "ls");
    assert_eq!(
        client.requests_of("elicitation/create").len(),
        1,
        "the grant answered the identical call without asking"
    );
    let other = call(&client, "fx__echo", json!({"text": "rm -rf \u{202e}/"}))
        .await
        .unwrap();
    assert_eq!(text(&other), "rm -rf \u{202e}/");
    let asks = client.requests_of("elicitation/create");
    assert_eq!(asks.len(), 2, "other arguments are a new question");
    let question = asks[1]["params"]["message"].as_str().unwrap();
    assert!(
        question.contains(r"rm -rf \u202e/"),
        "shown escaped: {question}"
    );
    let mut client = client;
    client.close(Duration::from_secs(10)).await;
    let db = rusqlite::Connection::open(gate.namespace().db_path()).unwrap();
    let grants: i64 = db
        .query_row("SELECT COUNT(*) FROM session_grants", [], |r| r.get(0))
        .unwrap();
    assert_eq!(grants, 0, "the session's grants end with it");
}

#[tokio::test]
async fn elicitation_allow_once_runs_one_call_and_the_next_asks_again() {
    let gate = Gate::new(ask_echo(), json!({"wait_seconds": 20}));
    let answer = json!({"action": "accept", "content": {"decision": "allow_once"}});
    let client = gate.client(Some(answer)).await;
    for _ in 0..2 {
        let r = call(&client, "fx__echo", json!({"text": "same"}))
            .await
            .unwrap();
        assert_eq!(text(&r), "same", "{r}");
    }
    assert_eq!(client.requests_of("elicitation/create").len(), 2);
}

#[tokio::test]
async fn elicitation_is_not_offered_for_commands_by_default() {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({"workspace": dir.join("ws"), "approvals": {"wait_seconds": 1}})
    });
    let answer = json!({"action": "accept", "content": {"decision": "allow_session"}});
    let client = setup.serve_with(
        HashMap::from([("elicitation/create".to_owned(), answer)]),
        &[],
    );
    client
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await
        .unwrap();
    let asked = call(
        &client,
        "shell_run",
        json!({"program": "echo", "args": ["x"]}),
    )
    .await
    .unwrap();
    assert_eq!(code(&asked), "APPROVAL_REQUIRED", "{asked}");
    assert_eq!(
        client.requests_of("elicitation/create"),
        Vec::<Value>::new()
    );
}

#[tokio::test]
async fn flood_of_asks_from_one_session_is_refused_naming_the_cap() {
    let gate = Gate::new(ask_echo(), json!({"wait_seconds": 0, "elicitation": false}));
    let client = gate.client(None).await;
    for i in 0..16 {
        let r = call(&client, "fx__echo", json!({"text": format!("ask {i}")}))
            .await
            .unwrap();
        assert_eq!(code(&r), "APPROVAL_REQUIRED", "{r}");
    }
    let refused = call(&client, "fx__echo", json!({"text": "one more"}))
        .await
        .unwrap();
    assert_eq!(code(&refused), "APPROVAL_STORE_REFUSED", "{refused}");
    assert!(
        text(&refused).contains("16 approval requests")
            && text(&refused).contains("per-session cap"),
        "{refused}"
    );
    // Another session is not locked out by this one's flood.
    let other = gate.client(None).await;
    let r = call(&other, "fx__echo", json!({"text": "other"}))
        .await
        .unwrap();
    assert_eq!(code(&r), "APPROVAL_REQUIRED", "{r}");
}

#[tokio::test]
async fn cancelled_call_leaves_a_cancelled_request_that_cannot_be_approved_or_resumed() {
    let gate = Gate::new(
        ask_echo(),
        json!({"wait_seconds": 30, "elicitation": false}),
    );
    let client = Arc::new(gate.client(None).await);
    let held_id = client.peek_next_id();
    let held = {
        let c = Arc::clone(&client);
        tokio::spawn(async move { call(&c, "fx__echo", json!({"text": "abandoned"})).await })
    };
    let id = gate.wait_for_pending().await;
    client
        .notify(
            "notifications/cancelled",
            json!({"requestId": held_id.to_value()}),
        )
        .await;
    for _ in 0..100 {
        if gate.status(&id) == ApprovalStatus::Cancelled {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(gate.status(&id), ApprovalStatus::Cancelled);
    held.abort();
    let approve = gate
        .store()
        .approve(&id, "operator", Timestamp::now())
        .unwrap_err();
    assert!(matches!(
        approve,
        store::Error::InvalidTransition(ApprovalStatus::Cancelled)
    ));
    let resumed = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(code(&resumed), "APPROVAL_CANCELLED", "{resumed}");
}

#[tokio::test]
async fn ended_session_cancels_its_held_request() {
    let gate = Gate::new(
        ask_echo(),
        json!({"wait_seconds": 30, "elicitation": false}),
    );
    let mut client = gate.client(None).await;
    let id = {
        let pending = gate.wait_for_pending();
        let calling = call(&client, "fx__echo", json!({"text": "gone"}));
        tokio::select! {
            id = pending => id,
            r = calling => panic!("the call was not held: {r:?}"),
        }
    };
    client.close(Duration::from_secs(10)).await;
    assert_eq!(gate.status(&id), ApprovalStatus::Cancelled);
}

#[tokio::test]
async fn prompt_under_default_ask_is_held_and_runs_once_approved() {
    let gate = Gate::new(
        json!({"default": "ask"}),
        json!({"wait_seconds": 30, "elicitation": false}),
    );
    let client = Arc::new(gate.client(None).await);
    let held = {
        let c = Arc::clone(&client);
        tokio::spawn(async move {
            c.request(
                "prompts/get",
                json!({"name": "fx__greet", "arguments": {"name": "Ada"}}),
            )
            .await
        })
    };
    let id = gate.wait_for_pending().await;
    let shown = gate.admin(&["approvals", "show", &id]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("prompts/get") && shown.contains("Ada"),
        "{shown}"
    );
    gate.store()
        .approve(&id, "operator", Timestamp::now())
        .unwrap();
    let got = held.await.unwrap().unwrap();
    assert_eq!(
        got["messages"][0]["content"]["text"], "Hello, Ada!",
        "{got}"
    );
}

#[tokio::test]
async fn resource_read_under_default_ask_names_its_request_and_runs_when_repeated_after_approval() {
    let gate = Gate::new(
        json!({"default": "ask"}),
        json!({"wait_seconds": 0, "elicitation": false}),
    );
    let client = gate.client(None).await;
    let params = json!({"uri": "fixture://static/2"});
    let err = client
        .request("resources/read", params.clone())
        .await
        .unwrap_err();
    assert_eq!(err["data"]["outcome"], "APPROVAL_REQUIRED", "{err}");
    assert!(!err.to_string().contains("no approval channel"), "{err}");
    let id = err["data"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Resuming it as a tool call is refused and does not use the approval up.
    gate.store()
        .approve(&id, "operator", Timestamp::now())
        .unwrap();
    let resumed = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(code(&resumed), "NOT_A_TOOL_CALL", "{resumed}");
    let read = client
        .request("resources/read", params.clone())
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "content of fixture://static/2");
    assert_eq!(gate.status(&id), ApprovalStatus::Consumed);
    let again = client.request("resources/read", params).await.unwrap_err();
    assert_eq!(
        err["data"]["outcome"], again["data"]["outcome"],
        "asks anew: {again}"
    );
}

#[tokio::test]
async fn command_grant_for_a_chosen_prefix_covers_only_that_program_and_prefix() {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({"workspace": dir.join("ws"),
               "approvals": {"wait_seconds": 20, "elicitation_for_writes": true}})
    });
    // The human allows `echo granted …` for the session: the program and the first argument.
    let answer =
        json!({"action": "accept", "content": {"decision": "allow_session", "prefix_args": 1}});
    let client = setup.serve_with(
        HashMap::from([("elicitation/create".to_owned(), answer)]),
        &[],
    );
    client
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await
        .unwrap();
    let run = |args: Value| {
        let client = &client;
        async move {
            call(
                client,
                "shell_run",
                json!({"program": "echo", "args": args}),
            )
            .await
            .unwrap()
        }
    };
    let first = run(json!(["granted", "one"])).await;
    assert!(text(&first).contains("granted one"), "{first}");
    let asks = client.requests_of("elicitation/create");
    assert_eq!(asks.len(), 1);
    let schema = &asks[0]["params"]["requestedSchema"]["properties"]["prefix_args"];
    assert_eq!(schema["maximum"], 2, "{schema}");
    let covered = run(json!(["granted", "two"])).await;
    assert!(text(&covered).contains("granted two"), "{covered}");
    assert_eq!(client.requests_of("elicitation/create").len(), 1);
    let other = run(json!(["other"])).await;
    assert!(text(&other).contains("other"), "{other}");
    assert_eq!(
        client.requests_of("elicitation/create").len(),
        2,
        "args outside the granted prefix ask again"
    );
}
