//! ToolFence users switch by name only: the sheet's commands and client entry, run through the `toolfence` link
//! with the policy `toolfence policy init` writes and the real server-filesystem behind `toolfence wrap`. The
//! sheet's ALLOW / ASK / DENY lines come out as it shows them (reading `./src/index.ts` is allowed, `~/.ssh/id_rsa`
//! denied, `npm install` asks and `sudo rm -rf` is denied), an ask waits in the approval store until the operator
//! decides, and the audit log is where ToolFence keeps it.

use crate::support::{call, peers, product_links, toolgate};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use test_support::StdioClient;

/// A temporary home (with `~/.ssh/id_rsa`), a workspace with `src/index.ts` and `.env`, the product links, and a
/// state root; the policy is the one `toolfence policy init` writes in the workspace, as the sheet's quick start.
struct Fence {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
    ws: PathBuf,
    home: PathBuf,
}

impl Fence {
    fn new() -> Fence {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let bin = product_links(&root);
        let ws = root.join("project");
        let home = root.join("home");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(ws.join("src/index.ts"), "export const answer = 42;\n").unwrap();
        std::fs::write(ws.join(".env"), "TOKEN=secret-token\n").unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
        let fence = Fence {
            _dir: dir,
            root,
            bin,
            ws,
            home,
        };
        let out = fence.run(&["policy", "init"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        fence
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("HOME", self.home.display().to_string()),
            (
                "TOOLGATE_STATE_DIR",
                self.root.join("state").display().to_string(),
            ),
        ]
    }

    /// `toolfence ARGS…` in the workspace.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(self.bin.join("toolfence"))
            .args(args)
            .envs(self.env())
            .current_dir(&self.ws)
            .output()
            .unwrap()
    }

    /// `toolgate ARGS… --workspace WS`, the operator's side.
    fn toolgate(&self, args: &[&str]) -> Output {
        Command::new(toolgate())
            .args(args)
            .arg("--workspace")
            .arg(&self.ws)
            .envs(self.env())
            .current_dir(&self.root)
            .output()
            .unwrap()
    }

    fn policy(&self) -> PathBuf {
        self.ws.join("toolfence.yaml")
    }

    /// The sheet's client entry: `toolfence wrap --policy … --server filesystem --workspace … -- <server-filesystem>`.
    fn wrap(&self, extra: &[&str]) -> StdioClient {
        let server =
            peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
        let (policy, ws, server) = (s(&self.policy()), s(&self.ws), s(&server));
        let mut args = vec![
            "wrap",
            "--policy",
            &policy,
            "--server",
            "filesystem",
            "--workspace",
            &ws,
        ];
        args.extend_from_slice(extra);
        args.extend(["--", "node", &server, &ws]);
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        StdioClient::spawn(&self.bin.join("toolfence"), &args, &env, HashMap::new()).unwrap()
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `(reason, rule)` of toolgate's decision on a refused call.
fn refused(result: &Value) -> (String, String) {
    assert_eq!(result["isError"], true, "{result}");
    let d = &result["_meta"]["toolgate/contract"]["decision"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (text(&d["reason"]), text(&d["rule_id"]))
}

async fn initialized(client: &StdioClient) {
    client
        .initialize("2025-11-25", json!({}))
        .await
        .expect("initialize");
}

#[tokio::test]
async fn the_sheets_allow_and_deny_lines_through_toolfence_wrap_and_server_filesystem() {
    let fence = Fence::new();
    let mut client = fence.wrap(&[]);
    initialized(&client).await;
    // ALLOW  Read ./src/index.ts
    let read = call(
        &client,
        "read_text_file",
        json!({"path": fence.ws.join("src/index.ts")}),
    )
    .await
    .unwrap();
    assert!(
        read.to_string().contains("export const answer = 42"),
        "{read}"
    );
    // DENY   Read ~/.ssh/id_rsa
    let key = call(
        &client,
        "read_text_file",
        json!({"path": fence.home.join(".ssh/id_rsa")}),
    )
    .await
    .unwrap();
    assert_eq!(refused(&key), ("DENY_RULE".into(), "deny-secrets".into()));
    assert!(!key.to_string().contains("PRIVATE KEY"));
    // The policy in the workspace governs this wrap and cannot be changed through it; `.env` is a secret.
    let denied = [
        (
            "write_file",
            json!({"path": fence.policy(), "content": "version: 1\ndefault: allow\nrules: []\n"}),
            "toolfence-policy-file",
        ),
        (
            "read_text_file",
            json!({"path": fence.ws.join(".env")}),
            "deny-secrets",
        ),
    ];
    for (tool, arguments, rule) in denied {
        let answer = call(&client, tool, arguments).await.unwrap();
        assert_eq!(
            refused(&answer),
            ("DENY_RULE".into(), rule.into()),
            "{tool}"
        );
    }
    // A multi-file read cannot carry a denied file along with an allowed one.
    let both = call(
        &client,
        "read_multiple_files",
        json!({"paths": [fence.ws.join("src/index.ts"), fence.ws.join(".env")]}),
    )
    .await
    .unwrap();
    assert_eq!(refused(&both).0, "DENY_RULE");
    assert!(client
        .close(std::time::Duration::from_secs(10))
        .await
        .is_some());

    // The audit log is where ToolFence keeps it, and it is toolgate's chained log: it verifies.
    let audit = fence.ws.join(".toolfence/audit.jsonl");
    let records = std::fs::read_to_string(&audit).unwrap();
    assert!(records.lines().count() >= 4, "{records}");
    assert!(records.contains("deny-secrets"), "{records}");
    assert!(!records.contains("secret-token") && !records.contains("PRIVATE KEY"));
    let verify = fence.toolgate(&["audit", "verify"]);
    assert!(
        verify.status.success(),
        "{}{}",
        stdout(&verify),
        String::from_utf8_lossy(&verify.stderr)
    );
}

#[tokio::test]
async fn an_ask_waits_for_the_approval_terminal_and_runs_once_approved() {
    let fence = Fence::new();
    let mut client = fence.wrap(&[]);
    initialized(&client).await;
    let target = fence.ws.join("notes.txt");
    let write = call(
        &client,
        "write_file",
        json!({"path": target, "content": "hello"}),
    );
    let approve = async {
        // The held call shows in the store the approval terminal reads; the operator approves it with the key.
        for _ in 0..200 {
            let list = stdout(&fence.toolgate(&["approvals", "list", "--status", "pending"]));
            if let Some(id) = list.split_whitespace().find(|w| w.starts_with("apr_")) {
                let key = s(&fence.root.join("state/operator.key"));
                let out = fence.toolgate(&["approvals", "approve", id, "--operator-key", &key]);
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("no pending approval appeared");
    };
    let (written, ()) = tokio::join!(write, approve);
    let written = written.unwrap();
    assert_ne!(written["isError"], true, "{written}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello");
    assert!(client
        .close(std::time::Duration::from_secs(10))
        .await
        .is_some());
}

#[tokio::test]
async fn approval_tty_without_a_terminal_denies_every_ask() {
    let fence = Fence::new();
    // The test runs without a controlling terminal, as a client that starts servers does.
    let mut client = fence.wrap(&["--approval", "tty"]);
    initialized(&client).await;
    let target = fence.ws.join("notes.txt");
    let write = call(
        &client,
        "write_file",
        json!({"path": target, "content": "hello"}),
    )
    .await
    .unwrap();
    assert_eq!(refused(&write).0, "DEFAULT_DENY", "{write}");
    assert!(!target.exists());
    let read = call(
        &client,
        "read_text_file",
        json!({"path": fence.ws.join("src/index.ts")}),
    )
    .await
    .unwrap();
    assert_ne!(read["isError"], true, "{read}");
    assert!(client
        .close(std::time::Duration::from_secs(10))
        .await
        .is_some());
}

#[test]
fn policy_test_runs_the_sheets_lines_as_cases_and_labels_a_mismatch() {
    let fence = Fence::new();
    let cases = fence.ws.join("policy-cases.yaml");
    std::fs::write(
        &cases,
        "- name: ALLOW Read ./src/index.ts\n  action: {operation: fs.read, resources: [\"${workspace}/src/index.ts\"]}\n  expect: allow\n\
         - name: DENY Read ~/.ssh/id_rsa\n  action: {operation: fs.read, resources: [\"~/.ssh/id_rsa\"]}\n  expect: deny\n  rule: deny-secrets\n\
         - name: ASK Run npm install\n  action: {operation: shell.exec, command: [npm, install]}\n  expect: ask\n\
         - name: DENY Run sudo rm -rf\n  action: {operation: shell.exec, command: [sudo, rm, -rf, /]}\n  expect: deny\n\
         - name: ALLOW Run npm test\n  action: {operation: shell.exec, command: [npm, test]}\n  expect: allow\n",
    )
    .unwrap();
    let policy = s(&fence.policy());
    let out = fence.run(&["policy", "test", "--policy", &policy, "--cases", &s(&cases)]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("5 cases: 5 passed, 0 failed"),
        "{}",
        stdout(&out)
    );

    std::fs::write(
        &cases,
        "cases:\n  - name: wrong on purpose\n    action: {operation: shell.exec, command: [npm, install]}\n    expect: allow\n",
    )
    .unwrap();
    let out = fence.run(&["policy", "test", "--policy", &policy, "--cases", &s(&cases)]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("FAIL  wrong on purpose"), "{text}");
    assert!(
        text.contains("expected: allow") && text.contains("actual:   ask"),
        "{text}"
    );
}

#[test]
fn policy_explain_states_toolfences_precedence_and_the_deciding_rule() {
    let fence = Fence::new();
    let action = fence.ws.join("action.json");
    std::fs::write(
        &action,
        r#"{"operation": "fs.read", "resources": ["~/.ssh/id_rsa"]}"#,
    )
    .unwrap();
    let out = fence.run(&[
        "policy",
        "explain",
        "--policy",
        &s(&fence.policy()),
        "--action",
        &s(&action),
    ]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("first matching rule"), "{text}");
    assert!(text.contains("DECIDES  deny   deny-secrets"), "{text}");
    assert!(
        text.contains("decision   DENY (DENY_RULE, rule deny-secrets)"),
        "{text}"
    );
    // A call as the wrapped server receives it is explained too.
    std::fs::write(
        &action,
        json!({"server": "filesystem", "tool": "read_text_file", "kind": "filesystem",
               "arguments": {"path": fence.ws.join("src/index.ts")}})
        .to_string(),
    )
    .unwrap();
    let out = fence.run(&[
        "policy",
        "explain",
        "--policy",
        &s(&fence.policy()),
        "--action",
        &s(&action),
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["decision"]["effect"], "allow");
    assert_eq!(v["precedence"], "first_match");
}

#[test]
fn policy_init_never_replaces_and_check_names_the_line_of_a_slip() {
    let fence = Fence::new();
    let before = std::fs::read_to_string(fence.policy()).unwrap();
    let out = fence.run(&["policy", "init"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(fence.policy()).unwrap(), before);
    let out = fence.run(&["policy", "check", "--policy", "./toolfence.yaml"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let bad = fence.ws.join("bad.yaml");
    std::fs::write(&bad, "version: 1\ndefault: ask\nrules:\n  - id: a\n    effect: allow\n   operations: [fs.read]\n").unwrap();
    let out = fence.run(&["policy", "check", "--policy", &s(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("line 6"), "{}", stdout(&out));
    std::fs::write(&bad, "version: 1\ndefault: ask\nrules:\n  - id: a\n    effect: allow\n    operations: [fs.read]\n    tools: [x]\n").unwrap();
    let out = fence.run(&["policy", "check", "--policy", &s(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("unknown key `tools`"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn broker_and_status_report_the_store_and_its_permissions() {
    let fence = Fence::new();
    let out = fence.run(&["status"]);
    let text = stdout(&out);
    assert!(
        text.contains("protocol versions") && text.contains("2025-11-25"),
        "{text}"
    );
    assert!(text.contains("state root"), "{text}");
    let out = fence.run(&["broker"]);
    assert!(
        stdout(&out).contains("no broker process is needed"),
        "{}",
        stdout(&out)
    );
}

/// Waits until the terminal has shown `text` (at most 60 s).
fn wait_for(seen: &std::sync::Mutex<Vec<u8>>, text: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !String::from_utf8_lossy(&seen.lock().unwrap()).contains(text) {
        assert!(
            std::time::Instant::now() < deadline,
            "the terminal never showed {text:?}: {}",
            String::from_utf8_lossy(&seen.lock().unwrap())
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn approval_tty_asks_on_the_terminal_and_the_approved_call_runs() {
    use std::io::{BufRead, Read, Write};
    let fence = Fence::new();
    let server = peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let (master, slave) = crate::support::open_terminal();
    let mut cmd = Command::new(fence.bin.join("toolfence"));
    cmd.args([
        "wrap",
        "--policy",
        &s(&fence.policy()),
        "--server",
        "filesystem",
        "--workspace",
        &s(&fence.ws),
    ])
    .args([
        "--approval",
        "tty",
        "--",
        "node",
        &s(&server),
        &s(&fence.ws),
    ])
    .envs(fence.env())
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped());
    crate::support::on_terminal(&mut cmd, &slave);
    let mut child = cmd.spawn().unwrap();
    drop(slave);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let (sink, mut reader) = (std::sync::Arc::clone(&seen), master.try_clone().unwrap());
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let target = fence.ws.join("notes.txt");
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "write_file", "arguments": {"path": target, "content": "approved on the terminal"}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut master = master;
    wait_for(&seen, "[a]pprove, [r]eject");
    master.write_all(b"a\n").unwrap();
    wait_for(&seen, "Type APPROVE");
    master.write_all(b"APPROVE\n").unwrap();
    let answer = lines
        .by_ref()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap())
        .find(|v| v["id"] == 2)
        .expect("the call's answer");
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "approved on the terminal"
    );
    // Nothing of the terminal reached the client's stream, and the client's end closes everything.
    drop(stdin);
    let _ = child.wait();
}

#[test]
fn toolgate_reads_the_toolfence_policy_as_its_config_with_the_files_precedence() {
    let fence = Fence::new();
    let call = fence.root.join("call.json");
    std::fs::write(
        &call,
        json!({"server": "toolgate", "tool": "read_file", "arguments": {"path": "src/index.ts"}})
            .to_string(),
    )
    .unwrap();
    let out = fence.toolgate(&[
        "policy",
        "explain",
        "--config",
        &s(&fence.policy()),
        "--call",
        &s(&call),
    ]);
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("order     any matching deny wins; otherwise the first matching rule"),
        "{text}"
    );
    assert!(text.contains("allow-workspace-read"), "{text}");
}
