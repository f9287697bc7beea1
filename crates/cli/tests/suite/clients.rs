//! What the official clients show when toolgate answers a call itself — a hold for approval, a policy denial, a
//! quarantined definition — on a tool that declares an `outputSchema` (every server-filesystem tool does). The
//! TypeScript SDK 1.32.2, the Python SDK 2.3.0 and the MCP Inspector 2.12.0 CLI list the tools first (so they know
//! the schemas and validate results against them), then call; each must surface toolgate's message and request
//! id instead of throwing "structured content does not match the tool's output schema".

use crate::support::{node22, peers, toolgate, Setup};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const META: &str = "toolgate/contract";

/// server-filesystem behind toolgate as `files`; reads under `held/` ask a human (nobody answers: the hold ends
/// at once with an approval handle), reads under `secret/` are denied, other reads are allowed.
fn setup(pins: Value) -> Setup {
    let filesystem =
        peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    Setup::with(|dir| {
        let ws = dir.join("ws");
        for sub in ["held", "secret"] {
            std::fs::create_dir_all(ws.join(sub)).unwrap();
            std::fs::write(ws.join(sub).join("note.txt"), "private").unwrap();
        }
        std::fs::write(ws.join("open.txt"), "open to all").unwrap();
        json!({
            "workspace": ws,
            "mcpServers": {"files": {"command": "node", "args": [filesystem, ws]}},
            "permissions": {"default": "allow", "ask": ["Read(./held/**)"], "deny": ["Read(./secret/**)"]},
            "approvals": {"wait_seconds": 0, "elicitation": false},
            "pins": pins,
            "stateDir": dir.join("state")
        })
    })
}

/// A setup whose pins hold an older definition of `files__read_text_file`, so server-filesystem's is quarantined.
fn quarantined(on_change: &str) -> Setup {
    let setup = setup(json!({"onChange": on_change}));
    let mut config: Value = serde_json::from_slice(&std::fs::read(&setup.config).unwrap()).unwrap();
    let real = config["mcpServers"]["files"].clone();
    config["mcpServers"]["files"] =
        json!({"command": "node", "args": [peers().join("files_before_upgrade.mjs")]});
    std::fs::write(&setup.config, config.to_string()).unwrap();
    let seeded = ts(&setup, &[]);
    assert_eq!(
        seeded,
        json!([]),
        "the older definition was served and pinned"
    );
    config["mcpServers"]["files"] = real;
    std::fs::write(&setup.config, config.to_string()).unwrap();
    setup
}

fn read(setup: &Setup, path: &str) -> Value {
    json!({"name": "files__read_text_file", "arguments": {"path": setup.workspace().join(path)}})
}

fn run(program: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .current_dir(peers())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

/// Runs one of the per-call client scripts; its last stdout line is a JSON array with one entry per call.
fn script(program: &Path, name: &str, setup: &Setup, calls: &[Value]) -> Value {
    let calls = Value::Array(calls.to_vec()).to_string();
    let script = peers().join(name);
    let tg = toolgate();
    let args = [
        script.as_os_str(),
        tg.as_os_str(),
        setup.config.as_os_str(),
        calls.as_ref(),
    ];
    let out = run(program, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap()
}

fn ts(setup: &Setup, calls: &[Value]) -> Value {
    script(Path::new("node"), "ts_calls.mjs", setup, calls)
}

fn py(setup: &Setup, calls: &[Value]) -> Value {
    script(
        &peers().join(".venv/bin/python"),
        "py_calls.py",
        setup,
        calls,
    )
}

/// One `tools/call` through `inspector --cli`: it exits 0 on a result, 5 on an `isError` result (printing it
/// either way), and with other codes when it fails — for instance on structured content its schema rejects.
fn inspector(setup: &Setup, call: &Value) -> (Option<i32>, Value) {
    let cli = peers()
        .join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let tg = toolgate();
    let tool = call["name"].as_str().unwrap();
    let arguments = call["arguments"].to_string();
    // Everything after `--` is the server's command line, so its `--config` stays toolgate's.
    let args: Vec<&std::ffi::OsStr> = vec![
        cli.as_os_str(),
        "--cli".as_ref(),
        "--method".as_ref(),
        "tools/call".as_ref(),
        "--tool-name".as_ref(),
        tool.as_ref(),
        "--tool-args-json".as_ref(),
        arguments.as_ref(),
        "--".as_ref(),
        tg.as_os_str(),
        "serve".as_ref(),
        "--config".as_ref(),
        setup.config.as_os_str(),
    ];
    let out = run(&node22(), &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let parsed = serde_json::from_str(&stdout)
        .unwrap_or_else(|_| json!({"printed": stdout, "stderr": stderr}));
    (out.status.code(), parsed)
}

fn text(result: &Value) -> &str {
    result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A result the client accepted (did not throw on), which says what toolgate did in its text and carries the V1
/// fields in `_meta`.
fn surfaced<'a>(entry: &'a Value, outcome: &str, says: &str) -> &'a Value {
    assert!(entry.get("threw").is_none(), "the client threw: {entry}");
    let result = &entry["result"];
    assert!(text(result).contains(says), "{says:?} not in {result}");
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["_meta"][META]["outcome"], outcome, "{result}");
    result
}

fn held_request_id(result: &Value) -> String {
    let id = result["_meta"][META]["approval"]["request_id"]
        .as_str()
        .unwrap();
    assert!(
        text(result).contains(id),
        "the text names request {id}: {result}"
    );
    id.to_owned()
}

/// Checks the answers to [held, denied, allowed] calls, whatever client made them.
fn check_hold_deny_allow(client: &str, out: &Value) {
    let held = surfaced(&out[0], "APPROVAL_REQUIRED", "needs a human's approval");
    held_request_id(held);
    let denied = surfaced(&out[1], "REFUSED", "toolgate denied this call");
    assert_eq!(
        denied["_meta"][META]["decision"]["effect"], "deny",
        "{client}: {denied}"
    );
    let allowed = &out[2]["result"];
    assert_eq!(
        allowed["structuredContent"]["content"], "open to all",
        "{client}: {}",
        out[2]
    );
}

#[test]
fn ts_client_surfaces_hold_and_denial_on_tool_with_output_schema() {
    let setup = setup(json!({}));
    let calls = [
        read(&setup, "held/note.txt"),
        read(&setup, "secret/note.txt"),
        read(&setup, "open.txt"),
    ];
    check_hold_deny_allow("typescript", &ts(&setup, &calls));
}

#[test]
fn python_client_surfaces_hold_and_denial_on_tool_with_output_schema() {
    let setup = setup(json!({}));
    let calls = [
        read(&setup, "held/note.txt"),
        read(&setup, "secret/note.txt"),
        read(&setup, "open.txt"),
    ];
    let out = py(&setup, &calls);
    check_hold_deny_allow("python", &out);
}

#[test]
fn inspector_cli_surfaces_hold_and_denial_on_tool_with_output_schema() {
    let setup = setup(json!({}));
    let calls = [
        read(&setup, "held/note.txt"),
        read(&setup, "secret/note.txt"),
        read(&setup, "open.txt"),
    ];
    let out: Vec<Value> = calls
        .iter()
        .map(|call| {
            let (code, result) = inspector(&setup, call);
            let expected = if result["isError"] == true { 5 } else { 0 };
            assert_eq!(
                code,
                Some(expected),
                "the Inspector's exit code for {result}"
            );
            json!({"result": result})
        })
        .collect();
    check_hold_deny_allow("inspector", &Value::Array(out));
}

/// Quarantined and shown (`onChange: ask`): the client lists the new definition with its outputSchema, and each
/// call is held. Quarantined and hidden (the default): the call is refused.
fn check_quarantine(client: &str, ask: &Value, refused: &Value) {
    let held = surfaced(&ask[0], "APPROVAL_REQUIRED", "needs a human's approval");
    held_request_id(held);
    assert_eq!(
        held["_meta"][META]["approval"]["status"], "PENDING",
        "{client}"
    );
    let refused = surfaced(&refused[0], "REFUSED", "quarantined");
    assert_eq!(
        refused["_meta"][META]["error"]["code"], "TOOL_QUARANTINED",
        "{client}"
    );
}

#[test]
fn ts_client_surfaces_quarantine_on_tool_with_output_schema() {
    let (ask, hide) = (quarantined("ask"), quarantined("hide"));
    let out = (
        ts(&ask, &[read(&ask, "open.txt")]),
        ts(&hide, &[read(&hide, "open.txt")]),
    );
    check_quarantine("typescript", &out.0, &out.1);
}

#[test]
fn python_client_surfaces_quarantine_on_tool_with_output_schema() {
    let (ask, hide) = (quarantined("ask"), quarantined("hide"));
    let out = (
        py(&ask, &[read(&ask, "open.txt")]),
        py(&hide, &[read(&hide, "open.txt")]),
    );
    check_quarantine("python", &out.0, &out.1);
}

#[test]
fn inspector_cli_surfaces_quarantine_on_tool_with_output_schema() {
    let ask = quarantined("ask");
    let (code, result) = inspector(&ask, &read(&ask, "open.txt"));
    assert_eq!(code, Some(5), "an isError result: {result}");
    let entry = json!({"result": result});
    let held = surfaced(&entry, "APPROVAL_REQUIRED", "needs a human's approval");
    held_request_id(held);
    // Hidden (the default), the tool is not listed, and the Inspector will not call a tool it was not shown.
    let hide = quarantined("hide");
    let (code, result) = inspector(&hide, &read(&hide, "open.txt"));
    assert_ne!(code, Some(0));
    assert!(
        result["stderr"]
            .as_str()
            .unwrap_or_default()
            .contains("not found"),
        "{result}"
    );
}
