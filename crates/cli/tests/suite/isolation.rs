//! An upstream that crashes, hangs, floods, or writes garbage harms only its own calls; toolgate restarts it,
//! and when toolgate ends, every upstream process group ends with it.

use crate::support::{call, contained_tree, fixture, gone, legacy, text, Setup};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use test_support::StdioClient;

async fn status(client: &StdioClient, server: &str) -> Value {
    let s = call(client, "toolgate_status", json!({})).await.unwrap();
    s["structuredContent"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == server)
        .unwrap()
        .clone()
}

/// Waits until `server` is ready again after at least one restart.
async fn wait_restarted(client: &StdioClient, server: &str) -> Value {
    for _ in 0..100 {
        let s = status(client, server).await;
        if s["state"] == "ready" && s["restarts"].as_u64().unwrap_or(0) >= 1 {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{server} did not become ready again");
}

#[tokio::test]
async fn crashed_upstream_fails_its_call_and_restarts() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let err = call(&client, "fx__crash", json!({})).await.unwrap_err();
    assert_eq!(err["code"], jsonrpc::UPSTREAM_UNAVAILABLE, "{err}");
    wait_restarted(&client, "fx").await;
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "back"}))
                .await
                .unwrap()
        ),
        "back"
    );
}

#[tokio::test]
async fn garbage_on_upstream_stdout_is_ignored_and_counted() {
    let setup = Setup::fixture(&["--garbage"], json!({}));
    let client = legacy(&setup).await;
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "fine"}))
                .await
                .unwrap()
        ),
        "fine"
    );
    assert!(
        status(&client, "fx").await["ignoredStdoutLines"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[tokio::test]
async fn hanging_upstream_times_out_and_is_told_to_cancel() {
    let setup = Setup::fixture(&[], json!({"limits": {"requestTimeoutSeconds": 1}}));
    let client = legacy(&setup).await;
    let err = call(&client, "fx__hang", json!({})).await.unwrap_err();
    assert_eq!(err["code"], jsonrpc::REQUEST_TIMEOUT, "{err}");
    let n = call(&client, "fx__cancelled", json!({})).await.unwrap();
    assert_eq!(n["structuredContent"]["cancelled"], 1);
}

#[tokio::test]
async fn failing_upstream_does_not_take_down_the_others() {
    let setup = Setup::new(json!({"permissions": {"default": "allow"}, "mcpServers": {
        "fx": fixture(&[]),
        "broken": {"command": "/nonexistent/mcp-server"}
    }}));
    let client = legacy(&setup).await;
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "ok"}))
                .await
                .unwrap()
        ),
        "ok"
    );
    let broken = status(&client, "broken").await;
    assert_eq!(broken["state"], "backoff");
    assert!(
        broken["lastError"].as_str().unwrap().contains("not found"),
        "{broken}"
    );
}

#[tokio::test]
async fn oversized_upstream_response_is_an_error_not_a_truncated_line() {
    let setup = Setup::fixture(&[], json!({"limits": {"maxMessageBytes": 4096}}));
    let client = legacy(&setup).await;
    let err = call(&client, "fx__big", json!({"bytes": 100_000}))
        .await
        .unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("over the limit of 4096 bytes"),
        "{err}"
    );
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "next"}))
                .await
                .unwrap()
        ),
        "next"
    );
}

/// The host pids of the upstream's tree: its handle, the init of its PID namespace, the server and its
/// grandchild (the pids the fixture reports are its namespace's own).
async fn upstream_pids(client: &StdioClient) -> Vec<i32> {
    call(client, "fx__pids", json!({})).await.unwrap();
    let leader = status(client, "fx").await["pid"].as_i64().unwrap() as i32;
    let mut tree = contained_tree(leader);
    assert!(tree.len() >= 3, "init, server and grandchild: {tree:?}");
    tree.push(leader);
    tree
}

async fn all_gone(pids: &[i32]) -> bool {
    for &pid in pids {
        if !gone(pid, 5).await {
            return false;
        }
    }
    true
}

#[tokio::test]
async fn no_orphans_after_stdin_eof() {
    let setup = Setup::fixture(&["--grandchild"], json!({}));
    let mut client = legacy(&setup).await;
    let tree = upstream_pids(&client).await;
    let exit = client
        .close(Duration::from_secs(10))
        .await
        .expect("toolgate exits on EOF");
    assert!(exit.success());
    assert!(
        all_gone(&tree).await,
        "part of the upstream's tree {tree:?} survived"
    );
}

async fn no_orphans_after(signal: Signal) {
    let setup = Setup::fixture(&["--grandchild"], json!({}));
    let mut client = legacy(&setup).await;
    let tree = upstream_pids(&client).await;
    kill(Pid::from_raw(client.pid().unwrap() as i32), signal).unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(10), client.child_mut().wait()).await;
    assert!(exit
        .expect("toolgate exits on the signal")
        .unwrap()
        .success());
    assert!(
        all_gone(&tree).await,
        "part of the upstream's tree {tree:?} survived"
    );
}

#[tokio::test]
async fn no_orphans_after_sigterm() {
    no_orphans_after(Signal::SIGTERM).await;
}

#[tokio::test]
async fn no_orphans_after_sigint() {
    no_orphans_after(Signal::SIGINT).await;
}

#[tokio::test]
async fn throwaway_probe_copy_exits_cleanly() {
    let setup = Setup::fixture(&["--grandchild"], json!({}));
    let mut client = setup.serve();
    let exit = client
        .close(Duration::from_secs(10))
        .await
        .expect("a copy closed at once exits");
    assert!(exit.success());
}

#[tokio::test]
async fn secrets_in_toolgate_environment_do_not_reach_upstreams() {
    let mut entry = fixture(&[]);
    entry["env"] = json!({"GIVEN": "${GIVEN_SOURCE}"});
    let setup =
        Setup::new(json!({"permissions": {"default": "allow"}, "mcpServers": {"fx": entry}}));
    let env = [
        ("AWS_SECRET_ACCESS_KEY", "leak-me"),
        ("GITHUB_TOKEN", "leak-me-too"),
        ("GIVEN_SOURCE", "value"),
    ];
    let client = setup.serve_with(HashMap::new(), &env);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let keys = call(&client, "fx__env_keys", json!({})).await.unwrap()["structuredContent"]["keys"]
        .clone();
    let keys: Vec<&str> = keys
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        keys.contains(&"PATH") && keys.contains(&"GIVEN"),
        "{keys:?}"
    );
    assert!(
        !keys.contains(&"AWS_SECRET_ACCESS_KEY") && !keys.contains(&"GITHUB_TOKEN"),
        "{keys:?}"
    );
}

async fn held(client: &StdioClient) -> Vec<Value> {
    let s = call(client, "toolgate_status", json!({})).await.unwrap();
    s["structuredContent"]["held"].as_array().unwrap().clone()
}

async fn tool_names(client: &StdioClient) -> Vec<String> {
    test_support::list_all(client, "tools/list", "tools", None)
        .await
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// 8.1: SDK servers answer −32601 for every list handler they were not given (`mcp-server-sqlite` does for
/// resource templates); such a server used to be restarted forever and never served.
#[tokio::test]
async fn missing_resource_templates_list_is_empty_not_a_dead_server() {
    let setup = Setup::fixture(&["--fail-list", "resources/templates/list"], json!({}));
    let client = legacy(&setup).await;
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "served"}))
                .await
                .unwrap()
        ),
        "served"
    );
    let fx = status(&client, "fx").await;
    assert_eq!(
        (fx["state"].as_str(), fx["restarts"].as_u64()),
        (Some("ready"), Some(0))
    );
    assert_eq!(
        fx["listErrors"][0]["list"], "resources/templates/list",
        "{fx}"
    );
    let templates = client
        .request("resources/templates/list", json!({}))
        .await
        .unwrap();
    assert_eq!(templates["resourceTemplates"], json!([]));
    // The lists the server does give are still served.
    let resources = client.request("resources/list", json!({})).await.unwrap();
    assert!(!resources["resources"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn failing_prompts_and_resources_lists_leave_the_tools_served() {
    let setup = Setup::fixture(
        &[
            "--fail-list",
            "prompts/list",
            "--fail-list",
            "resources/list",
        ],
        json!({}),
    );
    let client = legacy(&setup).await;
    assert!(tool_names(&client).await.contains(&"fx__echo".to_owned()));
    let fx = status(&client, "fx").await;
    let failed: Vec<&str> = fx["listErrors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["list"].as_str())
        .collect();
    assert_eq!(failed, ["prompts/list", "resources/list"], "{fx}");
    assert_eq!(fx["state"], "ready");
}

/// 9.16: an upstream listing one name twice made the whole gateway exit at start-up.
#[tokio::test]
async fn duplicate_tool_name_at_start_holds_that_name_and_the_others_serve() {
    let setup = Setup::new(json!({"permissions": {"default": "allow"}, "mcpServers": {
        "fx": fixture(&["--duplicate-tool"]),
        "fy": fixture(&[]),
    }}));
    let client = legacy(&setup).await;
    let names = tool_names(&client).await;
    assert!(!names.contains(&"fx__echo".to_owned()), "{names:?}");
    assert!(names.contains(&"fx__add".to_owned()) && names.contains(&"fy__echo".to_owned()));
    let err = call(&client, "fx__echo", json!({"text": "which one?"}))
        .await
        .unwrap_err();
    assert!(err.get("code").is_some(), "{err}");
    let held = held(&client).await;
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(held
        .iter()
        .all(|h| h["server"] == "fx" && h["name"] == "echo"));
    assert!(held[0]["reason"]
        .as_str()
        .unwrap()
        .contains("lists 2 tools"));
}

/// 9.16: unprefixed names that two upstreams share are held (both of them, whichever started first) and reported.
#[tokio::test]
async fn colliding_exposed_names_between_upstreams_are_held_not_fatal() {
    let setup = Setup::new(
        json!({"permissions": {"default": "allow"}, "prefixTools": false, "mcpServers": {
            "fx": fixture(&[]),
            "fy": fixture(&["--tools", "1"]),
        }}),
    );
    let client = legacy(&setup).await;
    let names = tool_names(&client).await;
    assert!(names.contains(&"tool_0".to_owned()), "{names:?}");
    assert!(!names.contains(&"echo".to_owned()), "{names:?}");
    let held = held(&client).await;
    let echo: Vec<&Value> = held.iter().filter(|h| h["name"] == "echo").collect();
    assert_eq!(echo.len(), 2, "{held:?}");
    let reason = echo[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("of server fx") && reason.contains("of server fy"),
        "{reason}"
    );
}

/// 9.17: a silent upstream delayed `initialize` by the whole start-up timeout.
#[tokio::test]
async fn silent_upstream_delays_neither_initialize_nor_the_others_tools() {
    let setup = Setup::new(json!({"permissions": {"default": "allow"}, "mcpServers": {
        "fx": fixture(&[]),
        "mute": fixture(&["--silent"]),
    }}));
    let client = setup.serve();
    let started = std::time::Instant::now();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    // Far below the 30 s start-up timeout the silent server has; generous for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "initialize took {:?}",
        started.elapsed()
    );
    let names = tool_names(&client).await;
    assert!(names.contains(&"fx__echo".to_owned()), "{names:?}");
    assert_eq!(status(&client, "mute").await["state"], "starting");
}

/// 9.17: the first list stops waiting for a slow upstream; its tools arrive later with `list_changed`.
#[tokio::test]
async fn slow_upstream_arrives_after_the_first_list_with_list_changed() {
    let slow = json!({"command": "sh",
        "args": ["-c", "sleep 5 && exec \"$0\" fixture-server", crate::support::toolgate()]});
    // The first list waits at most the start-up timeout (here 2 s, below the 10 s default wait).
    let setup = Setup::new(json!({"permissions": {"default": "allow"},
        "limits": {"startupTimeoutSeconds": 2},
        "mcpServers": {"fx": fixture(&[]), "slow": slow},
    }));
    let client = legacy(&setup).await;
    client.notify("notifications/initialized", json!({})).await;
    let first = tool_names(&client).await;
    assert!(first.contains(&"fx__echo".to_owned()), "{first:?}");
    assert!(!first.contains(&"slow__echo".to_owned()), "{first:?}");
    let changed = client
        .wait_notification(Duration::from_secs(30), |n| {
            n["method"] == "notifications/tools/list_changed"
        })
        .await;
    assert!(
        changed.is_some(),
        "no list_changed when the slow server arrived"
    );
    assert!(tool_names(&client).await.contains(&"slow__echo".to_owned()));
}

/// The Python SDK's low-level server, given tools and resources but no resource-template handler, declares
/// `resources` and answers −32601 to `resources/templates/list` (8.1): it must be served, not restarted forever.
const PYTHON_LOW_LEVEL_SERVER: &str = r#"
import anyio, mcp_types as types, mcp.server.stdio
from mcp.server.lowlevel import Server
async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="hello", description="Says hello.", input_schema={"type": "object"})])
async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text="hello")])
async def list_resources(ctx, params):
    return types.ListResourcesResult(resources=[])
server = Server("lowlevel-peer", on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources)
async def main():
    async with mcp.server.stdio.stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())
anyio.run(main)
"#;

#[tokio::test]
async fn python_low_level_server_without_templates_handler_is_served() {
    let python = crate::support::peers().join(".venv/bin/python");
    let setup = Setup::new(json!({"permissions": {"default": "allow"}, "mcpServers": {
        "py": {"command": python, "args": ["-c", PYTHON_LOW_LEVEL_SERVER]},
    }}));
    let client = legacy(&setup).await;
    let mut py = status(&client, "py").await;
    for _ in 0..1200 {
        if py["state"] != "starting" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        py = status(&client, "py").await;
    }
    assert_eq!(py["state"], "ready", "{py}");
    assert_eq!(
        py["listErrors"][0]["list"], "resources/templates/list",
        "{py}"
    );
    assert_eq!(
        text(&call(&client, "py__hello", json!({})).await.unwrap()),
        "hello"
    );
}
