//! ToolHub's users switching by renaming the binary: `mcp-toolhub serve` and `mcp-toolhub-admin`, run through the
//! links `install-links` makes, configured only by `TOOLHUB_WORKSPACE_ROOT` and `TOOLHUB_STATE_ROOT` as the sheet
//! says. Its 14 tools exactly, its six-step client state machine end to end with the official TypeScript client
//! while the administrator approves on a terminal, request status that is read-only and tells nothing of a
//! request that is not the caller's, the environment errors of its troubleshooting list, the state root bound to
//! one workspace, and the administrator's prunes.

use crate::support::{peers, product_links, run_on_terminal};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use test_support::StdioClient;
use tokio::io::{AsyncBufReadExt, BufReader};

/// ToolHub's tool inventory, in its order.
const TOOLS: [&str; 14] = [
    "toolhub.ping",
    "toolhub.audit_recent",
    "toolhub.capabilities",
    "toolhub.request_status",
    "filesystem.list_directory",
    "filesystem.read_file",
    "filesystem.write_file",
    "filesystem.write_file_approved",
    "filesystem.apply_patch",
    "filesystem.apply_patch_approved",
    "git.status",
    "git.diff",
    "shell.run",
    "shell.run_approved",
];

/// A workspace, a state root beside it, and the product links, in one temporary directory.
struct Hub {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
    workspace: PathBuf,
    state: PathBuf,
}

impl Hub {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let bin = product_links(&root);
        let workspace = root.join("project");
        std::fs::create_dir(&workspace).unwrap();
        Self {
            _dir: dir,
            bin,
            workspace,
            state: root.join("toolhub-state"),
            root,
        }
    }

    /// The environment of the sheet's client entry.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "TOOLHUB_WORKSPACE_ROOT",
                self.workspace.display().to_string(),
            ),
            ("TOOLHUB_STATE_ROOT", self.state.display().to_string()),
        ]
    }

    fn command(&self, name: &str, args: &[&str], env: &[(&str, String)]) -> Command {
        let mut cmd = Command::new(self.bin.join(name));
        cmd.args(args)
            .env_remove("TOOLHUB_WORKSPACE_ROOT")
            .env_remove("TOOLHUB_STATE_ROOT")
            // Never the user's own state, whatever a test leaves unset.
            .env("TOOLGATE_STATE_DIR", self.root.join("toolgate-state"))
            .envs(env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs `name args` with `env`: its exit code, stdout and stderr.
    fn run(&self, name: &str, args: &[&str], env: &[(&str, String)]) -> (i32, String, String) {
        let out = self
            .command(name, args, env)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn admin(&self, args: &[&str]) -> (i32, String, String) {
        self.run("mcp-toolhub-admin", args, &self.env())
    }

    /// `mcp-toolhub-admin approve ID` with APPROVE typed on its controlling terminal, as the operator does.
    fn approve(&self, id: &str) {
        let cmd = self.command("mcp-toolhub-admin", &["approve", id], &self.env());
        let run = run_on_terminal(cmd, "Type APPROVE", b"APPROVE\n");
        assert_eq!(run.code, 0, "{}{}{}", run.stdout, run.stderr, run.terminal);
        assert!(
            run.stdout.contains(&format!("APPROVED {id}")),
            "{}",
            run.stdout
        );
    }

    /// `mcp-toolhub serve` as an MCP client starts it, initialized.
    async fn serve(&self) -> StdioClient {
        let env = self.env();
        let toolgate_state = self.root.join("toolgate-state").display().to_string();
        let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        all.push(("TOOLGATE_STATE_DIR", &toolgate_state));
        let client = StdioClient::spawn(
            &self.bin.join("mcp-toolhub"),
            &["serve"],
            &all,
            HashMap::new(),
        )
        .unwrap();
        client.initialize("2025-11-25", json!({})).await.unwrap();
        client
    }
}

async fn call(client: &StdioClient, name: &str, args: Value) -> Value {
    let result = client
        .request("tools/call", json!({"name": name, "arguments": args}))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    result["structuredContent"].clone()
}

#[tokio::test]
async fn mcp_toolhub_serves_exactly_toolhubs_fourteen_tools() {
    let hub = Hub::new();
    let client = hub.serve().await;
    let listed = client.request("tools/list", json!({})).await.unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, TOOLS);
    // Only the listed names are callable: toolgate's own names are not part of this surface.
    for hidden in [
        "toolgate_status",
        "toolgate_resume",
        "filesystem_write_file",
    ] {
        let refused = client
            .request("tools/call", json!({"name": hidden, "arguments": {}}))
            .await;
        assert!(refused.is_err(), "{hidden} answered: {refused:?}");
    }
    let pong = call(&client, "toolhub.ping", json!({"message": "hi"})).await;
    assert_eq!(pong, json!({"status": "ok", "echo": "hi"}));
    closed(client).await;
}

/// Ends the server as a client does, closing its stdin.
async fn closed(mut client: StdioClient) {
    let status = client.close(std::time::Duration::from_secs(10)).await;
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

/// Runs ToolHub's six steps with the TypeScript client for `tool`, approving on a terminal at step 3; returns
/// each step's line.
async fn state_machine(hub: &Hub, tool: &str, args: Value) -> Vec<Value> {
    let mut node = tokio::process::Command::new("node")
        .arg(peers().join("ts_toolhub.mjs"))
        .arg(hub.bin.join("mcp-toolhub"))
        .arg(tool)
        .arg(args.to_string())
        .current_dir(peers())
        .envs(hub.env())
        .env("TOOLGATE_STATE_DIR", hub.root.join("toolgate-state"))
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut steps = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        let step: Value = serde_json::from_str(&line).unwrap();
        if step["step"] == 3 {
            // The operator, out of band, while the client polls (blocking here only delays reading its lines).
            hub.approve(step["approval"]["request_id"].as_str().unwrap());
        }
        steps.push(step);
    }
    assert!(
        node.wait().await.unwrap().success(),
        "the client failed: {steps:#?}"
    );
    steps
}

#[tokio::test]
async fn toolhubs_six_step_client_state_machine_runs_with_the_typescript_client() {
    let hub = Hub::new();
    for (tool, args, resume) in [
        (
            "filesystem.write_file",
            json!({"path": "notes.txt", "content": "approved\n"}),
            "filesystem.write_file_approved",
        ),
        (
            "shell.run",
            json!({"program": "echo", "args": ["every", "command asks"]}),
            "shell.run_approved",
        ),
    ] {
        let steps = state_machine(&hub, tool, args).await;
        assert_eq!(steps.len(), 6, "{steps:#?}");
        assert_eq!(steps[0]["contract_version"], "1.0");
        assert_eq!(
            steps[0]["operation"],
            json!({"initial_tool": tool, "resume_tool": resume})
        );
        assert_eq!(steps[1]["outcome"], "APPROVAL_REQUIRED");
        let trace = steps[1]["trace_id"].clone();
        assert_eq!(steps[2]["approval"]["resume_tool"], resume);
        assert_eq!(steps[2]["approval"]["status"], "PENDING");
        let status = &steps[3]["status"];
        assert_eq!(status["outcome"], "APPROVAL_APPROVED", "{status}");
        assert_eq!(
            status["trace_id"], trace,
            "one trace from submission to status"
        );
        assert_eq!(status["request_id"], steps[2]["approval"]["request_id"]);
        let resumed = &steps[4]["result"];
        assert_eq!(resumed["outcome"], "SUCCEEDED", "{resumed}");
        assert_eq!(
            resumed["trace_id"], trace,
            "and through the approved execution"
        );
        let replay = &steps[5]["replay"];
        assert_eq!(
            replay["outcome"], "APPROVAL_CONSUMED",
            "single use: {replay}"
        );
        if tool == "shell.run" {
            assert_eq!(resumed["stdout"], "every command asks\n");
        }
    }
    assert_eq!(
        std::fs::read_to_string(hub.workspace.join("notes.txt")).unwrap(),
        "approved\n"
    );
}

#[tokio::test]
async fn request_status_is_read_only_and_an_unknown_or_foreign_id_gets_the_same_refusal() {
    let hub = Hub::new();
    let client = hub.serve().await;
    let held = call(
        &client,
        "filesystem.write_file",
        json!({"path": "a.txt", "content": "x"}),
    )
    .await;
    let id = held["approval"]["request_id"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let status = call(&client, "toolhub.request_status", json!({"request_id": id})).await;
        assert_eq!(status["outcome"], "APPROVAL_PENDING");
        assert_eq!(status["error"]["retryable"], true);
    }
    let (code, listed, _) = hub.admin(&["list"]);
    assert_eq!(code, 0);
    assert!(
        listed.contains(&id) && listed.contains("PENDING"),
        "{listed}"
    );
    // Another workspace's request, in its own state root, through its own server.
    let other = Hub::new();
    let other_client = other.serve().await;
    let foreign = call(
        &other_client,
        "filesystem.apply_patch",
        json!({"patch": "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+n\n"}),
    )
    .await["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shape = |v: &Value| {
        json!({"outcome": v["outcome"], "code": v["error"]["code"], "retryable": v["error"]["retryable"],
               "approval": v.get("approval").is_some(), "has_trace": v["trace_id"].is_string()})
    };
    let unknown = call(
        &client,
        "toolhub.request_status",
        json!({"request_id": "apr_00000000000000000000000000000000"}),
    )
    .await;
    let expected = json!({"outcome": "REFUSED", "code": "REQUEST_NOT_FOUND", "retryable": false,
                          "approval": false, "has_trace": true});
    assert_eq!(shape(&unknown), expected);
    let foreign_status = call(
        &client,
        "toolhub.request_status",
        json!({"request_id": foreign}),
    )
    .await;
    assert_eq!(shape(&foreign_status), expected);
    // A resume tool finds only its own tool's requests.
    let wrong_tool = call(&client, "shell.run_approved", json!({"request_id": id})).await;
    assert_eq!(shape(&wrong_tool), expected);
    // The operator rejects; the agent sees it and cannot run it.
    let (code, out, err) = hub.admin(&["reject", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let status = call(&client, "toolhub.request_status", json!({"request_id": id})).await;
    assert_eq!(status["outcome"], "APPROVAL_REJECTED");
    let resumed = call(
        &client,
        "filesystem.write_file_approved",
        json!({"request_id": id}),
    )
    .await;
    assert_eq!(resumed["outcome"], "APPROVAL_REJECTED");
    assert!(!hub.workspace.join("a.txt").exists());
    closed(client).await;
    closed(other_client).await;
}

#[test]
fn each_environment_error_of_the_sheet_goes_to_stderr_with_nothing_on_stdout() {
    let hub = Hub::new();
    let file = hub.root.join("a-file");
    std::fs::write(&file, "").unwrap();
    let ws = hub.workspace.display().to_string();
    let cases: [(Vec<(&str, String)>, &str); 5] = [
        (vec![], "TOOLHUB_WORKSPACE_ROOT is required"),
        (
            vec![("TOOLHUB_WORKSPACE_ROOT", "project".to_owned())],
            "TOOLHUB_WORKSPACE_ROOT must be an absolute path",
        ),
        (
            vec![("TOOLHUB_WORKSPACE_ROOT", file.display().to_string())],
            "Workspace is not a directory",
        ),
        (
            vec![
                ("TOOLHUB_WORKSPACE_ROOT", ws.clone()),
                ("TOOLHUB_STATE_ROOT", format!("{ws}/.toolhub")),
            ],
            "State root must be outside the workspace",
        ),
        (
            vec![
                ("TOOLHUB_WORKSPACE_ROOT", ws.clone()),
                ("TOOLHUB_STATE_ROOT", "state".to_owned()),
            ],
            "TOOLHUB_STATE_ROOT must be an absolute path",
        ),
    ];
    for (env, said) in &cases {
        for (name, args) in [
            ("mcp-toolhub", &["serve"][..]),
            ("mcp-toolhub-admin", &["list"][..]),
        ] {
            let (code, out, err) = hub.run(name, args, env);
            assert_ne!(code, 0, "{name} {env:?}");
            assert_eq!(out, "", "{name} {env:?}: stdout is the protocol's");
            assert!(
                err.starts_with(&format!("{name}: {said}")),
                "{name} {env:?}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "concise: {err}");
        }
    }
    assert!(
        !hub.workspace.join(".toolhub").exists(),
        "a refused state root is not created"
    );
    for name in ["mcp-toolhub", "mcp-toolhub-admin"] {
        let (code, out, _) = hub.run(name, &["--version"], &[]);
        assert_eq!((code, out.split_whitespace().next()), (0, Some(name)));
        let (code, out, _) = hub.run(name, &["--help"], &[]);
        assert!(
            code == 0 && out.contains("TOOLHUB_WORKSPACE_ROOT"),
            "{name}: {out}"
        );
    }
}

#[test]
fn a_state_root_is_bound_to_the_first_workspace_forever_and_unset_means_a_namespace_per_workspace()
{
    let hub = Hub::new();
    let (code, _, err) = hub.admin(&["list"]);
    assert_eq!(code, 0, "{err}");
    let other = hub.root.join("other-project");
    std::fs::create_dir(&other).unwrap();
    let reused = [
        ("TOOLHUB_WORKSPACE_ROOT", other.display().to_string()),
        ("TOOLHUB_STATE_ROOT", hub.state.display().to_string()),
    ];
    for (name, args) in [
        ("mcp-toolhub", &["serve"][..]),
        ("mcp-toolhub-admin", &["list"][..]),
    ] {
        let (code, out, err) = hub.run(name, args, &reused);
        assert_ne!(code, 0);
        assert_eq!(out, "");
        assert!(
            err.starts_with(&format!(
                "{name}: State namespace belongs to a different workspace"
            )),
            "{err}"
        );
    }
    assert_eq!(
        hub.admin(&["list"]).0,
        0,
        "the first workspace keeps its state root"
    );
    // Unset: toolgate's usual state base, one namespace per canonical workspace path.
    let unset = [("TOOLHUB_WORKSPACE_ROOT", other.display().to_string())];
    let (code, _, err) = hub.run("mcp-toolhub-admin", &["list"], &unset);
    assert_eq!(code, 0, "{err}");
    let id = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
        other.as_os_str().as_encoded_bytes(),
    ));
    let namespace = hub.root.join("toolgate-state/workspaces").join(id);
    assert!(
        namespace.join("workspace-binding.json").is_file(),
        "{}",
        namespace.display()
    );
}

#[tokio::test]
async fn the_administrators_prunes_are_dry_runs_unless_applied() {
    let hub = Hub::new();
    let client = hub.serve().await;
    let held = call(&client, "shell.run", json!({"program": "true"})).await;
    assert_eq!(
        held["outcome"], "APPROVAL_REQUIRED",
        "every external command asks"
    );
    let id = held["approval"]["request_id"].as_str().unwrap().to_owned();
    assert_eq!(hub.admin(&["reject", &id]).0, 0);
    let listed = |hub: &Hub| hub.admin(&["list"]).1;
    let (code, out, _) = hub.admin(&["prune", "approvals", "--older-than-days", "0"]);
    assert!(code == 0 && out.contains("would delete 1"), "{out}");
    assert!(listed(&hub).contains(&id));
    let (code, out, _) = hub.admin(&["prune", "approvals", "--older-than-days", "0", "--apply"]);
    assert!(code == 0 && out.contains("deleted 1"), "{out}");
    assert!(!listed(&hub).contains(&id));
    closed(client).await;
    let (code, out, _) = hub.admin(&["prune", "audit", "--keep-last", "0"]);
    assert!(code == 0 && out.contains("would remove"), "{out}");
    let (code, out, _) = hub.admin(&["prune", "audit", "--keep-last", "0", "--apply"]);
    assert!(code == 0 && out.contains("removed"), "{out}");
    let (_, out, _) = hub.admin(&["prune", "audit", "--keep-last", "0"]);
    assert!(out.contains("nothing to prune"), "{out}");
}
