//! The official SDK clients (TypeScript 1.32.2, Python mcp 2.3.0 in its default auto mode, rmcp 3.11) drive
//! toolgate over stdio with the real server-everything and server-filesystem packages as upstreams.

use crate::support::{fixture, peers, toolgate, Setup};
use serde_json::{json, Value};
use std::process::Command;

fn setup() -> Setup {
    let modules = peers().join("node_modules/@modelcontextprotocol");
    Setup::with(|dir| {
        let workspace = dir.join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        json!({
            "mcpServers": {
                "everything": {"command": "node", "args": [modules.join("server-everything/dist/index.js"), "stdio"]},
                "files": {"command": "node", "args": [modules.join("server-filesystem/dist/index.js"), workspace]},
                "fixture": fixture(&[]),
            },
                        "limits": {"pageSize": 7},
            "stateDir": dir.join("state"),
            "permissions": {"default": "allow"}
        })
    })
}

fn run_peer(program: &std::path::Path, script: &str, setup: &Setup) -> Value {
    let out = Command::new(program)
        .arg(peers().join(script))
        .arg(toolgate())
        .arg(&setup.config)
        .arg(setup.workspace())
        .current_dir(peers())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

fn text(v: &Value) -> &str {
    v.pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[test]
fn typescript_sdk_client() {
    let setup = setup();
    let out = run_peer(std::path::Path::new("node"), "ts_client.mjs", &setup);
    assert_eq!(out["serverInfo"]["name"], "toolgate");
    assert!(
        out["pages"].as_u64().unwrap() > 1,
        "the client walked several pages"
    );
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"everything__echo") && tools.contains(&"files__read_text_file"),
        "{tools:?}"
    );
    assert!(
        out["echoDefinition"].get("execution").is_some(),
        "execution survives: {}",
        out["echoDefinition"]
    );
    assert_eq!(text(&out["echo"]), "Echo: hello from ts");
    assert!(out["structured"]["structuredContent"]["temperature"].is_number());
    // server-everything itself sometimes lets its last progress notification trail its result (seen without
    // toolgate too, under load), so the TypeScript client may drop it; what arrives must be in order.
    let progress: Vec<u64> = out["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["progress"].as_u64())
        .collect();
    assert!(
        !progress.is_empty() && progress.windows(2).all(|w| w[0] < w[1]),
        "{progress:?}"
    );
    // A cancellation, not any error: the rejection carries the client's own abort reason, and the upstream was
    // told.
    assert_eq!(out["cancelled"], true, "{}", out["cancelError"]);
    assert!(
        out["cancelError"]
            .as_str()
            .is_some_and(|e| e.contains("the test cancels")),
        "the call failed for another reason than the cancellation: {}",
        out["cancelError"]
    );
    assert_eq!(
        out["upstreamCancelled"], 1,
        "an abandoned call is cancelled upstream"
    );
    assert_eq!(text(&out["afterCancel"]), "still alive");
    assert_eq!(text(&out["read"]), "written through toolgate");
}

#[test]
fn python_sdk_client_in_auto_mode() {
    let setup = setup();
    let out = run_peer(&peers().join(".venv/bin/python"), "py_client.py", &setup);
    assert_eq!(
        out["protocolVersion"], "2026-07-28",
        "auto mode discovers the modern era"
    );
    assert!(out["pages"].as_u64().unwrap() > 1);
    assert_eq!(text(&out["echo"]), "Echo: hello from python");
    assert!(out["structured"]["structuredContent"]["temperature"].is_number());
    assert_eq!(out["progress"].as_array().unwrap().len(), 3);
    assert_eq!(out["rich"]["structuredContent"]["answer"], 42);
    assert_eq!(
        out["upstreamCancelled"], 1,
        "an abandoned call is cancelled upstream"
    );
    assert_eq!(text(&out["read"]), "python was here");
}

#[tokio::test]
async fn rmcp_client() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;

    let setup = setup();
    let mut command = tokio::process::Command::new(toolgate());
    command.arg("serve").arg("--config").arg(&setup.config);
    let transport = TokioChildProcess::new(command).unwrap();
    let client = ().serve(transport).await.expect("rmcp initializes through toolgate");
    let info = client.peer_info().expect("server info");
    // rmcp asks for 2026-07-28 in `initialize`; toolgate counter-offers the newest legacy version.
    assert_eq!(info.protocol_version.to_string(), "2025-11-25");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("toolgate")
    );
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools
        .iter()
        .any(|t| t.name == "everything__get-structured-content"));
    assert!(tools
        .iter()
        .any(|t| t.name == "files__list_allowed_directories"));
    let args = json!({"message": "hello from rmcp"}).as_object().cloned();
    let mut params = CallToolRequestParams::new("everything__echo");
    params.arguments = args;
    let echo = client.call_tool(params).await.unwrap();
    assert_eq!(
        serde_json::to_value(&echo).unwrap()["content"][0]["text"],
        "Echo: hello from rmcp"
    );
    let mut params = CallToolRequestParams::new("everything__get-structured-content");
    params.arguments = json!({"location": "New York"}).as_object().cloned();
    let structured = client.call_tool(params).await.unwrap();
    assert!(structured
        .structured_content
        .as_ref()
        .is_some_and(|s| s["temperature"].is_number()));
    let mut params = CallToolRequestParams::new("fixture__rich");
    params.arguments = Some(serde_json::Map::new());
    let rich = client.call_tool(params).await.unwrap();
    assert_eq!(
        rich.structured_content.as_ref().map(|s| &s["answer"]),
        Some(&json!(42))
    );
    client.cancel().await.unwrap();
}
