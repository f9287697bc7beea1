//! A program's approval is never cheaper than the calls it covers, end to end with the official TypeScript SDK
//! client acting as an agent's own client: it declares elicitation and approves whatever it is asked. Commands,
//! writes and destructive tools reached through `run_code` are held for the operator out of band, as the same
//! direct call is; a read-only program under a path-scoped allow starts without asking anyone; a session grant
//! of a program that computes its commands never covers a later run.

use crate::support::{peers, toolgate, Setup};
use serde_json::{json, Value};
use std::path::Path;

/// Builtin workspace tools (and `servers`) under `permissions`; elicitation on, held calls answered at once.
fn setup(permissions: Value, approvals: Value, servers: Value) -> Setup {
    Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        std::fs::write(dir.join("ws/a.txt"), "alpha").unwrap();
        let mut approvals = approvals;
        approvals["elicitation"] = json!(true);
        json!({
            "workspace": dir.join("ws"),
            "stateDir": dir.join("state"),
            "mcpServers": servers,
            "permissions": permissions,
            "approvals": approvals,
            "pins": {"newTools": "accept"},
        })
    })
}

/// Runs the agent's client in `mode` with `answer` to every question; returns its report.
async fn agent(setup: &Setup, mode: &str, answer: Value, steps: Value) -> Value {
    let out = tokio::process::Command::new("node")
        .arg(peers().join("ts_agent_elicits.mjs"))
        .arg(toolgate())
        .arg(&setup.config)
        .arg(mode)
        .arg(answer.to_string())
        .arg(steps.to_string())
        .current_dir(peers())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok());
    last.expect("the client printed its report")
}

fn allow_once() -> Value {
    json!({"action": "accept", "content": {"decision": "allow_once"}})
}

fn run(code: &str) -> Value {
    test_support::run_params(code)
}

/// The Contract V1 outcome of step `i`: in `structuredContent`, or in `_meta` for a tool with an output schema.
fn outcome(report: &Value, i: usize) -> &Value {
    let result = &report["results"][i]["result"];
    match &result["structuredContent"]["outcome"] {
        Value::Null => &result["_meta"]["toolgate/contract"]["outcome"],
        found => found,
    }
}

fn admin(setup: &Setup, args: &[&str]) -> String {
    let out = std::process::Command::new(toolgate())
        .args(args)
        .arg("--config")
        .arg(&setup.config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn request_id(report: &Value, i: usize) -> String {
    let result = &report["results"][i]["result"];
    let approval = match &result["structuredContent"]["approval"] {
        Value::Null => &result["_meta"]["toolgate/contract"]["approval"],
        found => found,
    };
    approval["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("step {i} was not held: {}", report["results"][i]))
        .to_owned()
}

#[tokio::test]
async fn agent_approves_its_own_shell_command_through_run_code() {
    let setup = setup(
        json!({"default": "ask"}),
        json!({"wait_seconds": 5}),
        json!({}),
    );
    let ws = setup.workspace();
    let literal = r#"await call("shell_run", {program: "/bin/sh", args: ["-c", "id -u > pwned.txt"]});
return "ran";"#;
    let computed = r#"const sh = ["/bin", "sh"].join("/");
await call("shell_run", {program: sh, args: ["-c", "id -u > pwned2.txt"]});
return "ran";"#;
    let report = agent(
        &setup,
        "code",
        allow_once(),
        json!([run(literal), run(computed)]),
    )
    .await;
    // Both runs are held for the operator at once; the agent's client is never asked.
    for i in 0..2 {
        assert_eq!(
            outcome(&report, i),
            "APPROVAL_REQUIRED",
            "{}",
            report["results"][i]
        );
    }
    assert_eq!(report["asked"], json!([]), "{report}");
    assert!(!ws.join("pwned.txt").exists() && !ws.join("pwned2.txt").exists());
    // The operator sees which call needs the approval and why.
    let shown = admin(&setup, &["approvals", "show", &request_id(&report, 0)]);
    assert!(
        shown.contains("shell_run {") && shown.contains("/bin/sh") && shown.contains("shell.exec"),
        "{shown}"
    );
    assert!(shown.contains("out of band"), "{shown}");
    let shown = admin(&setup, &["approvals", "show", &request_id(&report, 1)]);
    assert!(shown.contains("arguments computed at run time"), "{shown}");
    // The same call made directly is held the same way.
    let direct = json!({"name": "shell_run", "arguments": {"program": "/bin/sh", "args": ["-c", "id -u > pwned3.txt"]}});
    let report = agent(&setup, "direct", allow_once(), json!([direct])).await;
    assert_eq!(outcome(&report, 0), "APPROVAL_REQUIRED", "{report}");
    assert_eq!(report["asked"], json!([]), "{report}");
    assert!(!ws.join("pwned3.txt").exists());
}

#[tokio::test]
async fn read_only_program_under_path_scoped_allow_starts_without_asking() {
    let permissions = json!({"default": "ask", "allow": ["Read(./**)"]});
    let setup = setup(permissions, json!({"wait_seconds": 5}), json!({}));
    let reads = r#"return (await call("filesystem_read_file", {path: "a.txt"})).content;"#;
    // The same read with a path the scan cannot see may read anything: it asks (here, the agent's client).
    let computed = r#"const p = ["a", "txt"].join(".");
return (await call("filesystem_read_file", {path: p})).content;"#;
    let reject = json!({"action": "accept", "content": {"decision": "reject"}});
    let report = agent(&setup, "code", reject, json!([run(reads), run(computed)])).await;
    let first = &report["results"][0]["result"];
    assert_eq!(first["isError"], false, "{first}");
    assert!(first.to_string().contains("alpha"), "{first}");
    let asked = report["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "only the computed read asked: {report}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("arguments computed at run time"),
        "{report}"
    );
}

#[tokio::test]
async fn session_allow_of_a_program_does_not_cover_a_later_program_computing_other_commands() {
    let setup = setup(
        json!({"default": "ask"}),
        json!({"wait_seconds": 5, "elicitation_for_writes": true}),
        json!({}),
    );
    let ws = setup.workspace();
    std::fs::write(ws.join("cmd.txt"), "first").unwrap();
    // Which file it writes is read from the workspace at run time: the same text runs other commands later.
    let computes = r#"const name = (await call("filesystem_read_file", {path: "cmd.txt"})).content.trim();
await call("shell_run", {program: "touch", args: [name + ".out"]});
return name;"#;
    let literal = r#"await call("shell_run", {program: "touch", args: ["literal.out"]});
return "literal";"#;
    let session = json!({"action": "accept", "content": {"decision": "allow_session"}});
    let steps = json!([run(literal), run(literal), run(computes), run(computes)]);
    let report = agent(&setup, "code", session, steps).await;
    let asked = report["asked"].as_array().unwrap();
    // The literal program: granted for the session, so its second run is not asked again.
    assert!(ws.join("literal.out").exists(), "{report}");
    let offers = |a: &Value| a["requestedSchema"]["properties"]["decision"]["enum"].clone();
    assert_eq!(
        offers(&asked[0]),
        json!(["allow_once", "allow_session", "reject"])
    );
    // The program that computes its command: each run asks, and is never offered the session.
    assert_eq!(asked.len(), 3, "{report}");
    for a in &asked[1..] {
        assert_eq!(offers(a), json!(["allow_once", "reject"]), "{a}");
    }
    assert!(!ws.join("first.out").exists(), "{report}");
}

/// server-memory, whose deletions say `destructiveHint: true`, under `default: ask`.
fn memory(dir: &Path) -> Value {
    let server = peers().join("node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    json!({"memory": {"command": "node", "args": [server],
                      "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl")}}})
}

#[tokio::test]
async fn destructive_hint_tool_is_not_approved_in_band() {
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(
        json!({"default": "ask"}),
        json!({"wait_seconds": 5}),
        memory(dir.path()),
    );
    let delete = r#"return await call("memory__delete_entities", {entityNames: ["x"]});"#;
    // A read-only tool of the same server is still put to the client, and runs once approved there.
    let read = r#"return await call("memory__read_graph");"#;
    let report = agent(
        &setup,
        "code",
        allow_once(),
        json!([run(delete), run(read)]),
    )
    .await;
    assert_eq!(outcome(&report, 0), "APPROVAL_REQUIRED", "{report}");
    let asked = report["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{report}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("memory__read_graph"),
        "{report}"
    );
    assert_eq!(report["results"][1]["result"]["isError"], false, "{report}");
    // Directly, the same.
    let direct = json!({"name": "memory__delete_entities", "arguments": {"entityNames": ["x"]}});
    let report = agent(&setup, "direct", allow_once(), json!([direct])).await;
    assert_eq!(outcome(&report, 0), "APPROVAL_REQUIRED", "{report}");
    assert_eq!(report["asked"], json!([]), "{report}");
}
