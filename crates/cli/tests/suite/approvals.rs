//! An `ask` reaches a human out of band: the call is held, approved through the store the admin CLI uses, and
//! returns the upstream's real result; or it returns a Contract V1 handle that resumes exactly once — also across
//! a `kill -9` of toolgate.

use crate::support::{call, fixture, peers, text, toolgate, Setup};
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
                "approvals": {"wait_seconds": wait_seconds, "elicitation": false},
                // In the file too, for clients that start toolgate with a scrubbed environment.
                "stateDir": dir.join("state")
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

/// Waits for the request that `client`, a process of its own, will make, for as long as that process lives. Its
/// start-up (node, the SDK, toolgate, the upstream) takes as long as the machine's load makes it, so no fixed
/// budget fits; the client's own request timeouts bound the wait.
async fn wait_for_pending_from(a: &Approvals, client: &mut tokio::process::Child) -> String {
    loop {
        if let Some(id) = a.pending().pop() {
            return id;
        }
        if let Some(status) = client.try_wait().unwrap() {
            panic!("the client ended ({status}) before its call was held");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
            "toolgate_capabilities",
            "toolgate_ping",
            "toolgate_audit_recent"
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

#[tokio::test]
async fn typescript_client_call_held_and_approved_through_the_admin_cli() {
    let a = Approvals::new(60);
    let mut node = tokio::process::Command::new("node")
        .arg(peers().join("ts_held_call.mjs"))
        .arg(toolgate())
        .arg(&a.setup.config)
        .args(["fx__echo", "approved through the CLI"])
        .current_dir(peers())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let id = wait_for_pending_from(&a, &mut node).await;
    let mut approve = std::process::Command::new(toolgate())
        .args([
            "approvals",
            "approve",
            &id,
            "--config",
            a.setup.config.to_str().unwrap(),
            "--operator-key",
            crate::support::operator_key(&a.state_dir).to_str().unwrap(),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    approve
        .stdin
        .take()
        .unwrap()
        .write_all(b"APPROVE\n")
        .unwrap(); // ignored: the key is the proof, stdin is never the confirmation
    let approved = approve.wait_with_output().unwrap();
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    let mut out = String::new();
    use tokio::io::AsyncReadExt as _;
    node.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    assert!(node.wait().await.unwrap().success());
    let got: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(text(&got["result"]), "approved through the CLI", "{got}");
}

#[tokio::test]
async fn elicitation_allow_session_answers_the_identical_call_without_asking_again() {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({
            "workspace": dir.join("ws"),
            "mcpServers": {"fx": fixture(&[])},
            "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
            "approvals": {"wait_seconds": 20}
        })
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
    let first = call(&client, "fx__echo", json!({"text": "asked once"}))
        .await
        .unwrap();
    assert_eq!(text(&first), "asked once", "{first}");
    assert_eq!(client.requests_of("elicitation/create").len(), 1);
    let second = call(&client, "fx__echo", json!({"text": "asked once"}))
        .await
        .unwrap();
    assert_eq!(text(&second), "asked once");
    assert_eq!(
        client.requests_of("elicitation/create").len(),
        1,
        "the session grant answered the identical second call without asking"
    );
}

/// `ask` latency in the report used to include the human's wait, so a call held while a human took a second and
/// a half read as a 1.5 s call. The report shows the wait apart: the call's own time in the latency columns, the
/// human's in the wait columns.
#[tokio::test]
async fn the_report_shows_a_humans_wait_apart_from_the_calls_latency() {
    const HUMAN: Duration = Duration::from_millis(1500);
    let a = Approvals::new(30);
    let client = Arc::new(a.client().await);
    let held = {
        let c = Arc::clone(&client);
        tokio::spawn(async move { call(&c, "fx__echo", json!({"text": "after a while"})).await })
    };
    let id = wait_for_pending(&a).await;
    tokio::time::sleep(HUMAN).await;
    a.approve(&id);
    let result = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(text(&result), "after a while");
    // Reading the recent audit waits for the writer, which writes the reporting events too.
    call(&client, "toolgate_audit_recent", json!({"limit": 5}))
        .await
        .unwrap();
    let report = std::process::Command::new(toolgate())
        .args(["report", "--format", "json", "--config"])
        .arg(&a.setup.config)
        .output()
        .unwrap();
    assert!(report.status.success(), "{report:?}");
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let row = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "fx/echo")
        .unwrap_or_else(|| panic!("{report}"));
    let ms = |k: &str| row[k].as_u64().unwrap_or_else(|| panic!("{k}: {row}"));
    let human = HUMAN.as_millis() as u64;
    assert_eq!(ms("waited"), 1, "{row}");
    assert!(ms("wait_p50_ms") >= human, "{row}");
    assert!(
        ms("p50_ms") < human,
        "the call's own time leaves the wait out: {row}"
    );
    // The audit log's execution record of the call carries the wait too, as part of its duration.
    let executed: Vec<Value> = crate::support::audit_records(&a.state_dir)
        .into_iter()
        .filter(|r| r["kind"] == "execution" && r["tool"] == "echo")
        .collect();
    assert_eq!(executed.len(), 1, "{executed:#?}");
    let (wait, took) = (&executed[0]["wait_ms"], &executed[0]["duration_ms"]);
    assert!(
        wait.as_u64()
            .is_some_and(|w| w >= human && w <= took.as_u64().unwrap_or(0)),
        "{executed:#?}"
    );
}

#[tokio::test]
async fn secrets_in_arguments_never_reach_audit_or_reports() {
    let a = Approvals::new(0);
    let secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let client = a.client().await;
    call(&client, "fx__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    call(&client, "fx__echo", json!({"text": secret}))
        .await
        .unwrap();
    call(
        &client,
        "fx__reflect",
        json!({"token": secret, "url": format!("https://x.test/?key={secret}")}),
    )
    .await
    .unwrap();
    // Audit and report are written behind the calls; reading the recent audit waits for the writer.
    let recent = call(&client, "toolgate_audit_recent", json!({"limit": 50}))
        .await
        .unwrap();
    assert!(!recent.to_string().contains(secret), "{recent}");
    let ns = store::Namespace::open(&a.state_dir, &a.setup.workspace()).unwrap();
    let audit = std::fs::read_to_string(ns.dir().join("audit.jsonl")).unwrap();
    assert!(
        audit.lines().count() >= 4,
        "decisions and executions are audited:\n{audit}"
    );
    assert!(!audit.contains(secret), "{audit}");
    for format in ["table", "json", "csv"] {
        let report = std::process::Command::new(toolgate())
            .args([
                "report",
                "--group-by",
                "tool",
                "--format",
                format,
                "--config",
                a.setup.config.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&report.stdout);
        assert!(report.status.success() && shown.contains("echo"), "{shown}");
        assert!(!shown.contains(secret), "{shown}");
    }
    // Only the protected approval snapshot holds the arguments: it is what a human approves and what runs.
}
