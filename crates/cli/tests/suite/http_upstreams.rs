//! HTTP upstreams behind `toolgate serve` (a stdio client in front): the real server-everything in its Streamable
//! HTTP and HTTP+SSE modes and a Python FastMCP server on Streamable HTTP, listed and called through toolgate;
//! a server restarted under toolgate; `doctor` saying whether an HTTP server is reachable; and a dual-era server on
//! the Python SDK 2.x (`conformance_server.py`) that samples and elicits during a call, over Streamable HTTP and
//! HTTP+SSE, answered by the official TypeScript SDK client of the caller (and only that caller's).

use crate::support::{call, legacy, peers, text, toolgate, Setup};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::free_port;

/// A server process on a port of its own, killed when dropped.
pub(crate) struct Served {
    child: Child,
    pub(crate) port: u16,
}

impl Served {
    /// Ends the process as an operator would (SIGTERM), so that it shuts down cleanly, and waits for it.
    pub(crate) fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `toolgate serve --http` on a free port with `setup`, once it listens; killed when dropped.
pub(crate) fn serve_http(setup: &Setup, stderr: Stdio) -> Served {
    let port = free_port();
    let child = Command::new(toolgate())
        .args(["serve", "--config"])
        .arg(&setup.config)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    wait_listening(port);
    Served { child, port }
}

fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// server-everything in `mode` (`streamableHttp` or `sse`) on `port`.
fn everything(mode: &str, port: u16) -> Served {
    let script = peers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let child = Command::new("node")
        .arg(script)
        .arg(mode)
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(port);
    Served { child, port }
}

/// The FastMCP server of the matrix, run on Streamable HTTP.
fn fastmcp(port: u16) -> Served {
    let peers = peers();
    let script = format!(
        "import sys; sys.path.insert(0, {dir:?}); import fastmcp_server as s; \
         s.mcp.settings.host = '127.0.0.1'; s.mcp.settings.port = {port}; s.mcp.run(transport='streamable-http')",
        dir = peers.to_str().unwrap()
    );
    let child = Command::new(peers.join(".venv-servers-v1/bin/python"))
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(port);
    Served { child, port }
}

fn allow_all(servers: Value) -> Setup {
    Setup::new(json!({"mcpServers": servers, "permissions": {"default": "allow"}}))
}

async fn tool_names(client: &test_support::StdioClient) -> Vec<String> {
    let listed = client.request("tools/list", json!({})).await.unwrap();
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn server_everything_over_streamable_http_and_sse_is_listed_and_called() {
    let http = everything("streamableHttp", free_port());
    let sse = everything("sse", free_port());
    let setup = allow_all(json!({
        "remote": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", http.port)},
        "old": {"type": "sse", "url": format!("http://127.0.0.1:{}/sse", sse.port)},
    }));
    let mut client = legacy(&setup).await;
    let names = tool_names(&client).await;
    assert!(names.iter().any(|n| n == "remote__echo"), "{names:?}");
    assert!(names.iter().any(|n| n == "old__echo"), "{names:?}");
    for server in ["remote", "old"] {
        let result = call(
            &client,
            &format!("{server}__echo"),
            json!({"message": server}),
        )
        .await
        .unwrap();
        assert_eq!(text(&result), format!("Echo: {server}"));
    }
    let structured = call(
        &client,
        "remote__get-structured-content",
        json!({"location": "New York"}),
    )
    .await
    .unwrap();
    assert!(
        structured["structuredContent"]["temperature"].is_number(),
        "{structured}"
    );
    assert!(
        client.close(Duration::from_secs(10)).await.is_some(),
        "toolgate ends its HTTP upstreams and exits"
    );
}

#[tokio::test]
async fn python_fastmcp_server_over_streamable_http_is_called() {
    let server = fastmcp(free_port());
    let setup = allow_all(json!({
        "py": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", server.port)},
    }));
    let mut client = legacy(&setup).await;
    let names = tool_names(&client).await;
    assert!(names.iter().any(|n| n == "py__add"), "{names:?}");
    let result = call(&client, "py__shout", json!({"text": "over http"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "OVER HTTP");
    let sum = call(&client, "py__add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(sum["structuredContent"]["total"], 42, "{sum}");
    assert!(client.close(Duration::from_secs(10)).await.is_some());
}

/// The server is killed and started again on the same port: its sessions are gone. Every call after that is
/// either served in a new session or fails saying why; none is an empty success, and toolgate gets back to
/// serving on its own.
#[tokio::test]
async fn stale_upstream_session_after_a_server_restart_is_reestablished_not_an_empty_success() {
    let port = free_port();
    let server = everything("streamableHttp", port);
    let setup = allow_all(json!({
        "remote": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")},
    }));
    let client = legacy(&setup).await;
    let first = call(&client, "remote__echo", json!({"message": "before"}))
        .await
        .unwrap();
    assert_eq!(text(&first), "Echo: before");
    drop(server);
    let _restarted = everything("streamableHttp", port);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match call(&client, "remote__echo", json!({"message": "after"})).await {
            Ok(result) => {
                assert_eq!(
                    text(&result),
                    "Echo: after",
                    "never an empty success: {result}"
                );
                break;
            }
            Err(error) => {
                let said = error.to_string();
                assert!(
                    said.contains("session expired")
                        || said.contains("not running")
                        || said.contains("cannot reach")
                        || said.contains("unknown tool")
                        || said.contains("not found"),
                    "{said}"
                );
            }
        }
        assert!(Instant::now() < deadline, "never served again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn doctor_says_an_http_server_is_reachable() {
    let server = everything("streamableHttp", free_port());
    let setup = allow_all(json!({
        "remote": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", server.port)},
    }));
    let out = Command::new(toolgate())
        .args(["doctor", "--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("remote ") && l.contains("ready"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("2025-"), "{line}");
}

/// toolgate serving the bundled fixture in the 2026-07-28 era over its HTTP front end, and a second toolgate using
/// it as an HTTP upstream: the probe finds the modern era, and calls go through it.
#[tokio::test]
async fn modern_server_over_http_is_used_modern() {
    let front_setup = allow_all(json!({"fx": crate::support::fixture(&["--era", "modern"])}));
    let front = serve_http(&front_setup, Stdio::null());
    let port = front.port;
    let setup = allow_all(json!({
        "front": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")},
    }));
    let mut client = legacy(&setup).await;
    let names = tool_names(&client).await;
    assert!(names.iter().any(|n| n == "front__fx__rich"), "{names:?}");
    let rich = call(&client, "front__fx__rich", json!({})).await.unwrap();
    assert!(rich.get("content").is_some(), "{rich}");
    let status = call(&client, "toolgate_status", json!({})).await.unwrap();
    let servers = status["structuredContent"]["servers"].as_array().unwrap();
    let front = servers.iter().find(|s| s["server"] == "front").unwrap();
    assert_eq!(
        front["protocolVersion"], "2026-07-28",
        "used in the modern era: {front}"
    );
    assert!(client.close(Duration::from_secs(10)).await.is_some());
}

/// The dual-era Python SDK 2.x server of `conformance_server.py` on `transport` (`http` or `sse`).
pub(crate) fn dual_era(transport: &str, port: u16) -> Served {
    let peers = peers();
    let child = Command::new(peers.join(".venv-servers/bin/python"))
        .arg(peers.join("conformance_server.py"))
        .args([transport, &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(port);
    Served { child, port }
}

/// `ts_answers.mjs` against `target` (toolgate's HTTP front, or toolgate itself with `config`): answers sampling
/// with `sampled` and elicitation with a username and address, after `delay_ms`; returns what it printed.
fn ts_answers(target: &str, config: &str, sampled: &str, calls: Value, delay_ms: u64) -> Child {
    let peers = peers();
    Command::new(peers.join("node_modules/.bin/node"))
        .arg(peers.join("ts_answers.mjs"))
        .args([target, config, sampled])
        .arg(json!({"username": "ada", "email": "ada@example.com"}).to_string())
        .arg(calls.to_string())
        .arg(delay_ms.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn printed(child: Child) -> Value {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn result_text(v: &Value) -> String {
    v.pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no result text: {v}"))
        .to_owned()
}

/// A legacy-era server over Streamable HTTP and over HTTP+SSE asks during a call: the sampling request and the
/// elicitation reach the client that made the call, and its answers reach the server, as a stdio server's do.
#[tokio::test]
async fn http_upstream_sampling_reaches_the_calling_client() {
    let http = dual_era("http", free_port());
    let sse = dual_era("sse", free_port());
    let setup = allow_all(json!({
        // Reached in the legacy era, where a server asks with requests of its own during the call.
        "remote": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", http.port), "protocol": "legacy"},
        "old": {"type": "sse", "url": format!("http://127.0.0.1:{}/sse", sse.port)},
    }));
    for server in ["remote", "old"] {
        let calls = json!([
            {"name": format!("{server}__test_sampling"), "arguments": {"prompt": "capital of France?"}},
            {"name": format!("{server}__test_elicitation"), "arguments": {"message": "who are you?"}},
        ]);
        let config = setup.config.to_str().unwrap();
        let child = ts_answers(
            toolgate().to_str().unwrap(),
            config,
            "Paris, said ts",
            calls,
            0,
        );
        let out = printed(child);
        let results = out["results"].as_array().unwrap();
        assert_eq!(
            result_text(&results[0]),
            "LLM response: Paris, said ts",
            "{server}: {out}"
        );
        let elicited = result_text(&results[1]);
        assert!(elicited.contains("ada@example.com"), "{server}: {elicited}");
        assert_eq!(
            out["sampled"].as_array().unwrap().len(),
            1,
            "{server}: {out}"
        );
        let asked = out["elicited"][0]["message"].as_str().unwrap();
        assert_eq!(
            asked,
            crate::support::relayed(server, "who are you?"),
            "{server}"
        );
    }
}

/// Two clients of one toolgate call the same Streamable HTTP server at once, and it asks each to sample while
/// both calls are in flight. A request on a call's own answer stream belongs to that call: each client is asked
/// its own question and its answer reaches its own call, where a stdio server's request (naming no call)
/// would be refused as ambiguous.
#[tokio::test]
async fn http_upstream_sampling_during_two_clients_calls_reaches_each_calling_client() {
    let http = dual_era("http", free_port());
    let setup = allow_all(json!({
        "remote": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", http.port), "protocol": "legacy"},
    }));
    let front = serve_http(&setup, Stdio::inherit());
    let port = front.port;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let call = |who: &str| {
        let calls = json!([{"name": "remote__test_sampling", "arguments": {"prompt": format!("ask {who}")}}]);
        // Each answers only after a while, so both calls are in flight when the server asks.
        ts_answers(&url, "-", &format!("answered by {who}"), calls, 1500)
    };
    let (first, second) = (call("first"), call("second"));
    for (out, who) in [(printed(first), "first"), (printed(second), "second")] {
        assert_eq!(
            result_text(&out["results"][0]),
            format!("LLM response: answered by {who}"),
            "{out}"
        );
        let asked = &out["sampled"][0]["messages"][0]["content"]["text"];
        assert_eq!(asked, &json!(format!("ask {who}")), "{out}");
    }
}
