//! `toolgate serve --http` end to end: the official TypeScript and Python SDK clients over Streamable HTTP
//! (legacy sessions, and the Python client's auto mode reaching the 2026-07-28 era), with server-everything and
//! the fixture server as upstreams; the refusal to listen beyond loopback without authentication; shutdown on
//! SIGTERM with a GET stream open.

use crate::support::{fixture, peers, toolgate, ServedHttp, Setup};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;

fn setup() -> Setup {
    let modules = peers().join("node_modules/@modelcontextprotocol");
    Setup::with(|dir| {
        json!({
            "mcpServers": {
                "everything": {"command": "node", "args": [modules.join("server-everything/dist/index.js"), "stdio"]},
                "fixture": fixture(&[]),
            },
            "limits": {"pageSize": 7},
            "stateDir": dir.join("state"),
            "permissions": {"default": "allow"}
        })
    })
}

/// `toolgate serve --http` for `setup` on a free loopback port, killed when dropped.
struct Served;

impl Served {
    fn start(setup: &Setup) -> ServedHttp {
        Self::start_with(setup, &["--http", "127.0.0.1:0"])
    }

    fn start_with(setup: &Setup, http: &[&str]) -> ServedHttp {
        let mut cmd = Command::new(toolgate());
        cmd.args(["serve", "--config"])
            .arg(&setup.config)
            .arg("--workspace")
            .arg(setup.workspace())
            .args(http);
        ServedHttp::spawn(cmd)
    }
}

fn run_peer(program: &std::path::Path, args: &[&str]) -> Value {
    let out = Command::new(program)
        .args(args)
        .current_dir(peers())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?} failed:\n{stdout}\n{}",
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
fn typescript_sdk_client_over_http() {
    let setup = setup();
    let served = Served::start(&setup);
    let script = peers().join("ts_http_client.mjs");
    let out = run_peer(
        std::path::Path::new("node"),
        &[script.to_str().unwrap(), &served.url],
    );
    assert_eq!(out["serverInfo"]["name"], "toolgate");
    assert_eq!(out["protocolVersion"], "2025-11-25");
    let sid = out["sessionId"].as_str().unwrap();
    assert!(
        sid.len() >= 32 && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)),
        "{sid}"
    );
    assert!(
        out["pages"].as_u64().unwrap() > 1,
        "the client walked several pages"
    );
    assert_eq!(text(&out["echo"]), "Echo: hello over http");
    assert_eq!(text(&out["fixtureEcho"]), "fixture over http");
    let progress: Vec<u64> = out["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["progress"].as_u64())
        .collect();
    assert!(
        !progress.is_empty() && progress.windows(2).all(|w| w[0] < w[1]),
        "progress arrives on the SSE response, in order: {progress:?}"
    );
    assert_eq!(out["cancelled"], true);
    assert_eq!(
        out["upstreamCancelled"], 1,
        "an abandoned call is cancelled upstream"
    );
    assert_eq!(text(&out["afterCancel"]), "still alive");
    assert_eq!(
        out["afterDeleteStatus"], 404,
        "a deleted session is unknown"
    );
}

fn python_over_http(mode: &str) -> Value {
    let setup = setup();
    let served = Served::start(&setup);
    let script = peers().join("py_http_client.py");
    run_peer(
        &peers().join(".venv/bin/python"),
        &[script.to_str().unwrap(), &served.url, mode],
    )
}

fn assert_python_calls(out: &Value) {
    assert!(out["pages"].as_u64().unwrap() > 1);
    assert_eq!(text(&out["echo"]), "Echo: hello from python over http");
    assert_eq!(
        out["progress"].as_array().unwrap().len(),
        3,
        "{}",
        out["progress"]
    );
    assert_eq!(out["rich"]["structuredContent"]["answer"], 42);
}

#[test]
fn python_sdk_client_over_http_in_auto_mode_speaks_2026() {
    let out = python_over_http("auto");
    assert_eq!(
        out["protocolVersion"], "2026-07-28",
        "auto mode discovers the modern era"
    );
    assert_python_calls(&out);
}

#[test]
fn python_sdk_client_over_http_in_legacy_mode() {
    let out = python_over_http("legacy");
    assert_eq!(out["protocolVersion"], "2025-11-25");
    assert_python_calls(&out);
}

#[test]
fn non_loopback_bind_without_auth_is_refused() {
    let setup = Setup::new(json!({"mcpServers": {}}));
    let out = Command::new(toolgate())
        .args(["serve", "--config"])
        .arg(&setup.config)
        .arg("--workspace")
        .arg(setup.workspace())
        .args(["--http", "0.0.0.0:0"])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("not a loopback address") && stderr.contains("http.auth"),
        "the refusal says what to configure: {stderr}"
    );
}

#[test]
fn sigterm_ends_the_server_with_a_get_stream_open() {
    let setup = setup();
    let mut served = Served::start(&setup);
    let init = Command::new("curl")
        .args(["-sS", "-D", "-", "-H", "content-type: application/json"])
        .args(["-H", "accept: application/json, text/event-stream", "-d"])
        .arg(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .arg(&served.url)
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&init.stdout).to_lowercase();
    let sid = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_owned();
    let mut stream = Command::new("curl")
        .args(["-sSN", "-H", "accept: text/event-stream", "-H"])
        .arg(format!("mcp-session-id: {sid}"))
        .arg(&served.url)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = served.child.id() as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let mut ended = None;
    for _ in 0..200 {
        if let Some(status) = served.child.try_wait().unwrap() {
            ended = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = ended.expect("toolgate ends within 10 s of SIGTERM");
    assert!(status.success(), "{status:?}");
    let curl = stream.wait().unwrap();
    assert!(curl.code().is_some(), "the GET stream ended");
}

#[test]
fn http_flag_without_an_address_uses_the_configs_listen() {
    let setup = Setup::with(
        |dir| json!({"mcpServers": {}, "stateDir": dir.join("state"), "http": {"listen": "127.0.0.1:0"}}),
    );
    let served = Served::start_with(&setup, &["--http"]);
    assert!(
        served.url.starts_with("http://127.0.0.1:") && served.url.ends_with("/mcp"),
        "{}",
        served.url
    );
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            "DELETE",
        ])
        .arg(&served.url)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "400",
        "a DELETE without a session id"
    );
}
