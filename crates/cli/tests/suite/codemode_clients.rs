//! Code mode end to end with the official TypeScript SDK client and real servers (server-filesystem,
//! server-everything) as upstreams: the client sees only `search_tools`, `run_code` and toolgate's control tools,
//! finds tools by search, runs programs that call the real servers and join their answers, and gets a held
//! `run_code` approved through `toolgate approvals approve` and resumed with `toolgate_resume`.

use crate::support::{peers, toolgate, Setup};
use serde_json::{json, Value};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// server-filesystem over the workspace and server-everything; the tools `ask` names ask a human, out of band
/// only.
fn setup(ask: &[&str]) -> Setup {
    let modules = peers().join("node_modules/@modelcontextprotocol");
    Setup::with(|dir| {
        let workspace = dir.join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(workspace.join("a.txt"), "alpha").unwrap();
        std::fs::write(workspace.join("b.txt"), "beta").unwrap();
        std::fs::write(workspace.join("notes.md"), "not a text file for this test").unwrap();
        json!({
            "mcpServers": {
                "everything": {"command": "node", "args": [modules.join("server-everything/dist/index.js"), "stdio"]},
                "files": {"command": "node", "args": [modules.join("server-filesystem/dist/index.js"), &workspace]},
            },
            "workspace": workspace,
            "stateDir": dir.join("state"),
            "permissions": {"default": "allow", "ask": ask},
            "approvals": {"wait_seconds": 0, "elicitation": false}
        })
    })
}

/// Runs the admin command `toolgate ARGS --config CONFIG` with `stdin`, and checks that it succeeded.
fn admin(setup: &Setup, args: &[&str], stdin: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new(toolgate())
        .args(args)
        .arg("--config")
        .arg(&setup.config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "toolgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `ts_codemode.mjs` with `steps`. When the script reports a held request, `held` runs (it approves), and
/// the script is told to resume. Returns the script's final report.
async fn run_client(setup: &Setup, steps: Value, held: impl Fn(&str)) -> Value {
    let mut node = tokio::process::Command::new("node")
        .arg(peers().join("ts_codemode.mjs"))
        .arg(toolgate())
        .arg(&setup.config)
        .arg(steps.to_string())
        .current_dir(peers())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut last = None;
    while let Some(line) = lines.next_line().await.unwrap() {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(id) = v["held"].as_str() {
            held(id);
            stdin.write_all(b"go\n").await.unwrap();
        } else {
            last = Some(v);
        }
    }
    assert!(node.wait().await.unwrap().success(), "the client failed");
    last.expect("the client printed its report")
}

/// What a program returned, from the `run_code` result of step `i` (or why there is none).
fn returned(report: &Value, i: usize) -> &Value {
    let step = &report["results"][i];
    test_support::returned(&step["result"])
        .unwrap_or_else(|| panic!("step {i} returned nothing: {step}"))
}

#[tokio::test]
async fn typescript_client_in_code_mode_finds_tools_and_joins_real_servers_in_one_program() {
    let setup = setup(&["mcp__files__write_file"]);
    let ws = setup.workspace();
    let ws = ws.to_str().unwrap();
    let read_files = format!(
        r#"const dir = {ws:?};
const {{ content }} = await call("files__list_directory", {{ path: dir }});
const names = content.split("\n").filter((l) => l.startsWith("[FILE] ") && l.endsWith(".txt")).map((l) => l.slice(7)).sort();
const parts = [];
for (const n of names) parts.push(n + "=" + (await call("files__read_text_file", {{ path: dir + "/" + n }})).content);
return parts.join(";");"#
    );
    let everything = r#"const sum = await call("everything__get-sum", { a: 2, b: 40 });
const echo = await call("everything__echo", { message: "from code mode" });
const alias = await call("mcp__everything__echo", { message: "by the toolscript name" });
const weather = await call("everything__get-structured-content", { location: "New York" });
return { sum, echo, alias, temperature: typeof weather.temperature };"#;
    let steps = json!([
        test_support::search_params("read text file"),
        test_support::run_params(&read_files),
        test_support::run_params(everything),
    ]);
    let report = run_client(&setup, steps, |id| {
        panic!("nothing here asks a human, yet {id} was held")
    })
    .await;

    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // Code mode's two tools and the control tools a client needs to see toolgate's state and resume a held run;
    // none of the upstreams' tools.
    assert_eq!(
        tools,
        [
            "toolgate_status",
            "toolgate_request_status",
            "toolgate_resume",
            "toolgate_capabilities",
            "search_tools",
            "run_code"
        ]
    );

    let search = report["results"][0]["result"].to_string();
    assert!(search.contains("files__read_text_file"), "{search}");
    assert_eq!(
        returned(&report, 1),
        "a.txt=alpha;b.txt=beta",
        "{}",
        report["results"][1]
    );
    let answer = returned(&report, 2);
    assert!(answer["sum"].to_string().contains("42"), "{answer}");
    assert_eq!(answer["echo"], "Echo: from code mode", "{answer}");
    assert_eq!(answer["alias"], "Echo: by the toolscript name", "{answer}");
    assert_eq!(answer["temperature"], "number", "{answer}");
}

#[tokio::test]
async fn typescript_client_held_run_code_approved_through_the_cli_then_resumed() {
    let setup = setup(&["mcp__files__write_file"]);
    let ws = setup.workspace();
    let target = ws.join("from-program.txt");
    let program = format!(
        r#"// written by a held program
await call("files__write_file", {{ path: {path:?}, content: "approved, then written" }});
return (await call("files__read_text_file", {{ path: {path:?} }})).content;"#,
        path = target.to_str().unwrap()
    );
    let steps = json!([
        test_support::run_params(&program),
        {"resume": true},
    ]);
    let report = run_client(&setup, steps, |id| {
        assert!(
            !target.exists(),
            "nothing of the program ran before the approval"
        );
        let shown = admin(&setup, &["approvals", "show", id], b"");
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.contains("// written by a held program"),
            "the human sees the program it approves:\n{shown}"
        );
        let key = crate::support::operator_key(&setup.state_dir());
        admin(
            &setup,
            &[
                "approvals",
                "approve",
                id,
                "--operator-key",
                key.to_str().unwrap(),
            ],
            b"",
        );
    })
    .await;
    let held = &report["results"][0]["result"];
    // The Contract V1 handle: the request waits for a human; nothing ran.
    assert_eq!(
        held["structuredContent"]["outcome"], "APPROVAL_REQUIRED",
        "{held}"
    );
    assert_eq!(
        held["structuredContent"]["approval"]["status"], "PENDING",
        "{held}"
    );
    assert_eq!(
        held["structuredContent"]["approval"]["resume_tool"], "toolgate_resume",
        "{held}"
    );
    assert_eq!(
        returned(&report, 1),
        "approved, then written",
        "{}",
        report["results"][1]
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "approved, then written"
    );
}

#[tokio::test]
async fn typescript_client_held_run_code_over_server_everything_approved_through_the_cli_then_resumed(
) {
    let setup = setup(&["mcp__everything__echo"]);
    let program = r#"// a held program that echoes
const echo = await call("everything__echo", { message: "approved run" });
const sum = await call("everything__get-sum", { a: 40, b: 2 });
return { echo, sum };"#;
    let steps = json!([test_support::run_params(program), {"resume": true}]);
    let report = run_client(&setup, steps, |id| {
        let shown = admin(&setup, &["approvals", "show", id], b"");
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(
            shown.contains("// a held program that echoes"),
            "the human sees the program it approves:\n{shown}"
        );
        let key = crate::support::operator_key(&setup.state_dir());
        admin(
            &setup,
            &[
                "approvals",
                "approve",
                id,
                "--operator-key",
                key.to_str().unwrap(),
            ],
            b"",
        );
    })
    .await;
    let held = &report["results"][0]["result"];
    // The Contract V1 handle: the request waits for a human; nothing ran.
    assert_eq!(
        held["structuredContent"]["outcome"], "APPROVAL_REQUIRED",
        "{held}"
    );
    assert_eq!(
        held["structuredContent"]["approval"]["status"], "PENDING",
        "{held}"
    );
    let answer = returned(&report, 1);
    assert_eq!(answer["echo"], "Echo: approved run", "{answer}");
    assert!(answer["sum"].to_string().contains("42"), "{answer}");

    // Each call of the approved run is audited under the held run's trace id, kept through approval and resume.
    let run_trace = held["structuredContent"]["trace_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut nested = Vec::new();
    for _ in 0..100 {
        let tail = admin(&setup, &["audit", "tail", "--json", "-n", "500"], b"");
        nested = String::from_utf8_lossy(&tail.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["kind"] == "execution" && r["parent_trace_id"] == run_trace.as_str())
            .map(|r| {
                (
                    r["tool"].as_str().unwrap_or_default().to_owned(),
                    r["outcome"].clone(),
                )
            })
            .collect();
        if nested.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        nested,
        [
            ("echo".to_owned(), json!("SUCCEEDED")),
            ("get-sum".to_owned(), json!("SUCCEEDED"))
        ],
        "the run's calls in the audit under trace {run_trace}"
    );
}
