//! An `ask` reaches a human out of band: the call is held, approved through the store the admin CLI uses, and
//! returns the upstream's real result; or it returns a Contract V1 handle that resumes exactly once — also across
//! a `kill -9` of toolgate.

use crate::support::{call, fixture, text, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use test_support::StdioClient;

/// A workspace and a state root beside it, and a policy that asks for `fx__echo` and allows the rest.
struct Approvals {
    setup: Setup,
    state_dir: PathBuf,
}

impl Approvals {
    fn new(wait_seconds: u64) -> Self {
        let setup = Setup::with(|dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            json!({
                "workspace": dir.join("ws"),
                "mcpServers": {"fx": fixture(&[])},
                "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
                "approvals": {"wait_seconds": wait_seconds, "elicitation": false}
            })
        });
        let state_dir = std::fs::canonicalize(setup.dir.path())
            .unwrap()
            .join("state");
        Self { setup, state_dir }
    }

    async fn client(&self) -> StdioClient {
        let env = [("TOOLGATE_STATE_DIR", self.state_dir.to_str().unwrap())];
        let client = self.setup.serve_with(HashMap::new(), &env);
        client.initialize("2025-11-25", json!({})).await.unwrap();
        client
    }

    /// The store the admin commands open for this workspace.
    fn store(&self) -> store::Store {
        let ns = store::Namespace::open(&self.state_dir, &self.setup.workspace()).unwrap();
        store::Store::open(&ns).unwrap()
    }

    fn pending(&self) -> Vec<String> {
        let now = store::Timestamp::now();
        let list = self
            .store()
            .list_requests(Some(store::ApprovalStatus::Pending), now)
            .unwrap();
        list.into_iter().map(|a| a.id).collect()
    }

    fn approve(&self, id: &str) {
        self.store()
            .approve(id, "test operator", store::Timestamp::now())
            .unwrap();
    }
}

fn outcome(result: &Value) -> &str {
    result["structuredContent"]["outcome"]
        .as_str()
        .unwrap_or("")
}

async fn wait_for_pending(a: &Approvals) -> String {
    for _ in 0..100 {
        if let Some(id) = a.pending().pop() {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval request appeared");
}

#[tokio::test]
async fn held_call_approved_out_of_band_returns_the_real_result() {
    let a = Approvals::new(30);
    let client = Arc::new(a.client().await);
    let held = {
        let c = Arc::clone(&client);
        tokio::spawn(async move { call(&c, "fx__echo", json!({"text": "approved!"})).await })
    };
    let id = wait_for_pending(&a).await;
    a.approve(&id);
    let result = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(text(&result), "approved!");
    assert_eq!(
        result["structuredContent"],
        json!({"text": "approved!"}),
        "the upstream's own result, untouched"
    );
}

#[tokio::test]
async fn pending_call_gets_a_handle_then_resumes_exactly_once() {
    let a = Approvals::new(0);
    let client = a.client().await;
    let first = call(&client, "fx__echo", json!({"text": "later"}))
        .await
        .unwrap();
    assert_eq!(outcome(&first), "APPROVAL_REQUIRED", "{first}");
    let handle = &first["structuredContent"]["approval"];
    assert_eq!(handle["resume_tool"], "toolgate_resume");
    let id = handle["request_id"].as_str().unwrap().to_owned();
    let status = call(
        &client,
        "toolgate_request_status",
        json!({"request_id": id}),
    )
    .await
    .unwrap();
    assert_eq!(outcome(&status), "APPROVAL_PENDING");
    let early = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(
        outcome(&early),
        "APPROVAL_PENDING",
        "nothing runs before a human decides"
    );
    a.approve(&id);
    let ran = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(text(&ran), "later");
    let again = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(outcome(&again), "APPROVAL_CONSUMED");
}

#[tokio::test]
async fn rejected_and_unknown_requests_are_refused() {
    let a = Approvals::new(0);
    let client = a.client().await;
    let first = call(&client, "fx__echo", json!({"text": "no"}))
        .await
        .unwrap();
    let id = first["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    a.store()
        .reject(&id, "test operator", store::Timestamp::now())
        .unwrap();
    let resumed = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(outcome(&resumed), "APPROVAL_REJECTED");
    let unknown = call(
        &client,
        "toolgate_request_status",
        json!({"request_id": "nope"}),
    )
    .await
    .unwrap();
    assert_eq!(
        unknown["structuredContent"]["error"]["code"],
        "REQUEST_NOT_FOUND"
    );
}

#[tokio::test]
async fn hundred_concurrent_resumes_run_the_call_once() {
    let a = Approvals::new(0);
    let client = Arc::new(a.client().await);
    let first = call(&client, "fx__echo", json!({"text": "once"}))
        .await
        .unwrap();
    let id = first["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    a.approve(&id);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..100 {
        let (c, id) = (Arc::clone(&client), id.clone());
        tasks.spawn(async move {
            call(&c, "toolgate_resume", json!({"request_id": id}))
                .await
                .unwrap()
        });
    }
    let mut ran = 0;
    let mut consumed = 0;
    while let Some(r) = tasks.join_next().await {
        let r = r.unwrap();
        match outcome(&r) {
            "" if text(&r) == "once" => ran += 1,
            "APPROVAL_CONSUMED" => consumed += 1,
            other => panic!("unexpected outcome {other}: {r}"),
        }
    }
    assert_eq!((ran, consumed), (1, 99));
}

#[tokio::test]
async fn kill_9_between_approval_and_resume_loses_nothing_and_runs_once() {
    let a = Approvals::new(0);
    let mut client = a.client().await;
    let first = call(&client, "fx__echo", json!({"text": "survives"}))
        .await
        .unwrap();
    let id = first["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    a.approve(&id);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(client.pid().unwrap() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = client.child_mut().wait().await;
    let restarted = a.client().await;
    let ran = call(&restarted, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(text(&ran), "survives");
    let again = call(&restarted, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(outcome(&again), "APPROVAL_CONSUMED");
}

#[tokio::test]
async fn no_tool_can_approve_and_capabilities_reveal_no_paths() {
    let a = Approvals::new(0);
    let client = a.client().await;
    let tools = test_support::list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let own: Vec<&str> = tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("toolgate_"))
        .collect();
    assert_eq!(
        own,
        [
            "toolgate_status",
            "toolgate_request_status",
            "toolgate_resume",
            "toolgate_capabilities"
        ]
    );
    let caps = call(&client, "toolgate_capabilities", json!({}))
        .await
        .unwrap();
    let s = &caps["structuredContent"];
    assert_eq!(s["contract_version"], "1");
    assert_eq!(s["approval_model"]["agent_can_approve"], false);
    assert_eq!(s["approval_gated_tools"], json!(["fx__echo"]));
    let text = caps.to_string();
    let ws = a.setup.workspace();
    assert!(
        !text.contains(ws.to_str().unwrap()) && !text.contains(a.state_dir.to_str().unwrap()),
        "{text}"
    );
}
