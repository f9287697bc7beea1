//! The real-server matrix: ten MCP servers as people install them — four from npm (server-everything,
//! server-filesystem, server-memory, server-sequential-thinking), three Python SDK 2.x servers from PyPI
//! (mcp-server-git, mcp-server-time, mcp-server-fetch), and three on the Python SDK 1.x (mcp-server-sqlite, a
//! FastMCP server and a low-level server without the optional list handlers) — each behind toolgate. Every tool
//! the server lists directly is listed through toolgate with the same schemas, and one harmless call succeeds.

use crate::support::{peers, Setup};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use test_support::{list_all, StdioClient};

/// How one server is started and which harmless call shows it works.
struct Upstream {
    command: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    tool: &'static str,
    arguments: Value,
    /// Text the call's result must contain.
    expect: String,
    /// A call that writes where the server keeps its data, and text its result must contain: it must work
    /// contained.
    write: Option<(&'static str, Value, &'static str)>,
}

fn npm(package: &str) -> PathBuf {
    peers()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
}

/// A console script or interpreter of one of the server venvs; missing means the peers are not installed.
fn venv(venv: &str, program: &str) -> PathBuf {
    let path = peers().join(venv).join("bin").join(program);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/test (it installs the test peers)",
        path.display()
    );
    path
}

fn node(script: PathBuf, args: &[&str]) -> (PathBuf, Vec<String>) {
    assert!(
        script.is_file(),
        "{} is missing: run scripts/test",
        script.display()
    );
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    (PathBuf::from("node"), all)
}

fn string(p: &Path) -> String {
    p.display().to_string()
}

/// Serves one plain-text page on 127.0.0.1 for mcp-server-fetch, in a thread for the rest of the test.
fn one_page(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    format!("http://127.0.0.1:{port}/page.txt")
}

fn upstream(name: &str, ws: &Path) -> Upstream {
    let plain = |command: PathBuf, args: Vec<String>, tool, arguments, expect: &str| Upstream {
        command,
        args,
        env: Vec::new(),
        tool,
        arguments,
        expect: expect.to_owned(),
        write: None,
    };
    match name {
        "everything" => {
            let (c, a) = node(npm("server-everything"), &["stdio"]);
            plain(c, a, "echo", json!({"message": "matrix"}), "Echo: matrix")
        }
        "filesystem" => {
            let (c, a) = node(npm("server-filesystem"), &[&string(ws)]);
            let mut up = plain(c, a, "list_allowed_directories", json!({}), &string(ws));
            let file = json!({"path": ws.join("written.txt"), "content": "contained"});
            up.write = Some(("write_file", file, "Successfully wrote"));
            up
        }
        "memory" => {
            let (c, a) = node(npm("server-memory"), &[]);
            let mut up = plain(c, a, "read_graph", json!({}), "entities");
            up.env = vec![("MEMORY_FILE_PATH".into(), string(&ws.join("memory.jsonl")))];
            let entity =
                json!({"entities": [{"name": "matrix", "entityType": "test", "observations": []}]});
            up.write = Some(("create_entities", entity, "matrix"));
            up
        }
        "thinking" => {
            let (c, a) = node(npm("server-sequential-thinking"), &[]);
            let arguments = json!({"thought": "one step", "nextThoughtNeeded": false, "thoughtNumber": 1,
                                   "totalThoughts": 1});
            plain(c, a, "sequentialthinking", arguments, "thoughtNumber")
        }
        "git" => {
            let repo = ws.join("repo");
            std::fs::create_dir_all(&repo).unwrap();
            let init = std::process::Command::new("git")
                .arg("init")
                .arg("-q")
                .arg(&repo)
                .status();
            assert!(init.is_ok_and(|s| s.success()), "git init");
            let args = vec!["--repository".to_owned(), string(&repo)];
            let arguments = json!({"repo_path": repo});
            plain(
                venv(".venv-servers", "mcp-server-git"),
                args,
                "git_status",
                arguments,
                "On branch",
            )
        }
        "time" => {
            let args = vec!["--local-timezone".to_owned(), "UTC".to_owned()];
            let arguments = json!({"timezone": "Europe/Paris"});
            plain(
                venv(".venv-servers", "mcp-server-time"),
                args,
                "get_current_time",
                arguments,
                "Europe/Paris",
            )
        }
        "fetch" => {
            // The page is on the loopback address, which the server refuses unless told otherwise.
            let args = vec![
                "--ignore-robots-txt".to_owned(),
                "--allow-private-ips".to_owned(),
            ];
            let arguments = json!({"url": one_page("hello from the matrix")});
            let program = venv(".venv-servers", "mcp-server-fetch");
            plain(program, args, "fetch", arguments, "hello from the matrix")
        }
        "sqlite" => {
            let args = vec!["--db-path".to_owned(), string(&ws.join("matrix.db"))];
            let mut up = plain(
                venv(".venv-servers-v1", "mcp-server-sqlite"),
                args,
                "list_tables",
                json!({}),
                "[]",
            );
            let table = json!({"query": "CREATE TABLE contained (x INTEGER)"});
            up.write = Some(("create_table", table, "Table created"));
            up
        }
        "fastmcp" => {
            let args = vec![string(&peers().join("fastmcp_server.py"))];
            let arguments = json!({"a": 2, "b": 40});
            plain(
                venv(".venv-servers-v1", "python"),
                args,
                "add",
                arguments,
                "42",
            )
        }
        "lowlevel" => {
            let args = vec![string(&peers().join("lowlevel_server.py"))];
            let arguments = json!({"text": "low and level"});
            plain(
                venv(".venv-servers-v1", "python"),
                args,
                "echo",
                arguments,
                "low and level",
            )
        }
        other => panic!("no matrix server {other}"),
    }
}

const WAIT: Duration = Duration::from_secs(60);

async fn tools(client: &StdioClient) -> Vec<Value> {
    tokio::time::timeout(WAIT, list_all(client, "tools/list", "tools", None))
        .await
        .expect("tools/list answers in time")
        .expect("tools/list succeeds")
}

/// What must survive the gateway unchanged: everything a client programs against, but the name.
fn surface(tool: &Value) -> Value {
    json!({"inputSchema": tool.get("inputSchema"), "outputSchema": tool.get("outputSchema"),
           "annotations": tool.get("annotations"), "description": tool.get("description")})
}

async fn check(name: &str) {
    check_started_after(name, None).await;
}

/// `check`, with the server started `delay` seconds late (as a loaded machine starts a Python server).
async fn check_started_after(name: &str, delay: Option<u32>) {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({"workspace": dir.join("ws"), "stateDir": dir.join("state"), "permissions": {"default": "allow"}})
    });
    let ws = setup.workspace();
    let up = upstream(name, &ws);
    let env: Vec<(&str, &str)> = up
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();

    let args: Vec<&str> = up.args.iter().map(String::as_str).collect();
    let mut direct = StdioClient::spawn(&up.command, &args, &env, HashMap::new())
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    // The capabilities toolgate declares to its upstreams: server-everything lists some tools only to clients
    // that can answer roots, sampling or elicitation requests.
    let capabilities = json!({"roots": {"listChanged": false}, "sampling": {}, "elicitation": {}});
    tokio::time::timeout(WAIT, direct.initialize("2025-11-25", capabilities))
        .await
        .expect("the server initializes in time")
        .expect("the server initializes");
    let direct_tools = tools(&direct).await;
    assert!(!direct_tools.is_empty(), "{name} lists tools");
    let _ = direct.child_mut().start_kill();

    let mut config: Value = serde_json::from_slice(&std::fs::read(&setup.config).unwrap()).unwrap();
    let env: HashMap<&str, &str> = env.into_iter().collect();
    let (command, args) = match delay {
        None => (up.command.clone(), up.args.clone()),
        Some(secs) => {
            let mut args = vec!["-c".to_owned(), format!("sleep {secs}; exec \"$0\" \"$@\"")];
            args.push(string(&up.command));
            args.extend(up.args.iter().cloned());
            (PathBuf::from("sh"), args)
        }
    };
    config["mcpServers"] = json!({name: {"command": command, "args": args, "env": env}});
    std::fs::write(&setup.config, config.to_string()).unwrap();
    let client = setup.serve();
    tokio::time::timeout(WAIT, client.initialize("2025-11-25", json!({})))
        .await
        .expect("toolgate initializes in time")
        .expect("toolgate initializes");
    let prefix = format!("{name}__");
    let through: HashMap<String, Value> = tools(&client)
        .await
        .into_iter()
        .filter_map(|t| {
            let exposed = t["name"].as_str()?.strip_prefix(&prefix)?.to_owned();
            Some((exposed, surface(&t)))
        })
        .collect();
    let direct_names: Vec<&str> = direct_tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        through.len(),
        direct_tools.len(),
        "{name}: the same tools, through toolgate: {:?}, directly: {direct_names:?}",
        through.keys()
    );
    for tool in &direct_tools {
        let tool_name = tool["name"].as_str().unwrap();
        assert_eq!(
            through.get(tool_name),
            Some(&surface(tool)),
            "{name}: {tool_name} through toolgate"
        );
    }

    let call = json!({"name": format!("{prefix}{}", up.tool), "arguments": up.arguments});
    let result = tokio::time::timeout(WAIT, client.request("tools/call", call))
        .await
        .expect("the call answers in time")
        .unwrap_or_else(|e| panic!("{name}: {} failed: {e}", up.tool));
    assert_ne!(result["isError"], true, "{name}: {result}");
    assert!(
        result.to_string().contains(&up.expect),
        "{name}: {:?} not in {result}",
        up.expect
    );
    if let Some((tool, arguments, expect)) = &up.write {
        let call = json!({"name": format!("{prefix}{tool}"), "arguments": arguments});
        let result = tokio::time::timeout(WAIT, client.request("tools/call", call))
            .await
            .expect("the write answers in time")
            .unwrap_or_else(|e| panic!("{name}: {tool} failed: {e}"));
        assert_ne!(result["isError"], true, "{name}: {result}");
        assert!(
            result.to_string().contains(expect),
            "{name}: {expect:?} not in {result}"
        );
    }
    // Served contained: every layer this machine offers is in force.
    let status = client
        .request(
            "tools/call",
            json!({"name": "toolgate_status", "arguments": {}}),
        )
        .await
        .expect("status");
    let server = status["structuredContent"]["servers"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["server"] == name))
        .cloned()
        .unwrap_or_default();
    for layer in [
        "pid_namespace: active",
        "own_proc: active",
        "landlock: active",
        "socket_filter: active",
    ] {
        assert!(
            server["sandbox"]
                .as_array()
                .is_some_and(|l| l.iter().any(|s| s == layer)),
            "{name}: {layer:?} not in {server}"
        );
    }
    let mut client = client;
    client.close(Duration::from_secs(10)).await;
}

#[tokio::test]
async fn matrix_server_everything() {
    check("everything").await;
}

#[tokio::test]
async fn matrix_server_filesystem() {
    check("filesystem").await;
}

#[tokio::test]
async fn matrix_server_memory() {
    check("memory").await;
}

#[tokio::test]
async fn matrix_server_sequential_thinking() {
    check("thinking").await;
}

#[tokio::test]
async fn matrix_mcp_server_git() {
    check("git").await;
}

#[tokio::test]
async fn matrix_mcp_server_time() {
    check("time").await;
}

#[tokio::test]
async fn matrix_mcp_server_fetch() {
    check("fetch").await;
}

#[tokio::test]
async fn matrix_mcp_server_sqlite_on_python_sdk_1() {
    check("sqlite").await;
}

#[tokio::test]
async fn matrix_fastmcp_server_on_python_sdk_1() {
    check("fastmcp").await;
}

#[tokio::test]
async fn matrix_lowlevel_server_without_optional_list_handlers() {
    check("lowlevel").await;
}

/// A Python SDK 2.x server serves the modern era on a connection once it has answered `server/discover`, and then
/// rejects `initialize` there. Started slower than the discover probe's timeout, it used to get `initialize` on the
/// same connection right after its late answer, fail, and be missing from toolgate's first catalog.
#[tokio::test]
async fn slow_starting_dual_era_server_is_not_lost_to_the_discover_probe() {
    check_started_after("time", Some(4)).await;
}
