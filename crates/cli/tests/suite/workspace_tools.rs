//! toolgate's own workspace tools through the whole pipeline: with no policy they behave as a workspace server
//! should (read and inspect freely, ask before writing or running anything), protected paths are denied
//! outright, and an approved command runs exactly as approved.

use crate::support::{call, text, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use test_support::{list_all, StdioClient};

struct Ws {
    setup: Setup,
}

impl Ws {
    /// A workspace with a file and a git repository, no upstreams, and `extra` merged into the config.
    fn new(extra: Value) -> Self {
        let setup = Setup::with(|dir| {
            let ws = dir.join("ws");
            std::fs::create_dir_all(ws.join(".git")).unwrap();
            std::fs::write(ws.join("notes.txt"), "hello\n").unwrap();
            let mut config =
                json!({"workspace": ws, "approvals": {"wait_seconds": 0, "elicitation": false}});
            if let Value::Object(m) = extra {
                for (k, v) in m {
                    config[k] = v;
                }
            }
            config
        });
        Self { setup }
    }

    fn ws(&self) -> PathBuf {
        self.setup.workspace()
    }

    async fn client(&self) -> StdioClient {
        let client = self.setup.serve_with(HashMap::new(), &[]);
        client.initialize("2025-11-25", json!({})).await.unwrap();
        client
    }

    fn approve(&self, id: &str) {
        let ns = store::Namespace::open(&self.setup.state_dir(), &self.ws()).unwrap();
        store::Store::open(&ns)
            .unwrap()
            .approve(id, "test operator", store::Timestamp::now())
            .unwrap();
    }
}

fn outcome(v: &Value) -> &str {
    v["structuredContent"]["outcome"]
        .as_str()
        .unwrap_or_default()
}

fn request_id(v: &Value) -> String {
    v["structuredContent"]["approval"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn workspace_tools_are_listed_and_reads_pass_while_writes_ask() {
    let w = Ws::new(json!({}));
    let client = w.client().await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for t in [
        "filesystem_read_file",
        "filesystem_write_file",
        "filesystem_apply_patch",
        "git_status",
        "shell_run",
        "toolgate_ping",
    ] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }
    let read = call(
        &client,
        "filesystem_read_file",
        json!({"path": "notes.txt"}),
    )
    .await
    .unwrap();
    assert_eq!(read["structuredContent"]["content"], "hello\n", "{read}");
    let write = call(
        &client,
        "filesystem_write_file",
        json!({"path": "new.txt", "content": "x"}),
    )
    .await
    .unwrap();
    assert_eq!(outcome(&write), "APPROVAL_REQUIRED", "{write}");
    assert!(!w.ws().join("new.txt").exists());
    w.approve(&request_id(&write));
    let done = call(
        &client,
        "toolgate_resume",
        json!({"request_id": request_id(&write)}),
    )
    .await
    .unwrap();
    assert!(done.get("isError") != Some(&json!(true)), "{done}");
    assert_eq!(
        std::fs::read_to_string(w.ws().join("new.txt")).unwrap(),
        "x"
    );
}

#[tokio::test]
async fn writes_into_git_internals_are_denied_outright() {
    let w = Ws::new(json!({"permissions": {"default": "allow"}}));
    let client = w.client().await;
    let write = call(
        &client,
        "filesystem_write_file",
        json!({"path": ".git/hooks/pre-commit", "content": "evil"}),
    )
    .await;
    let write = write.unwrap();
    assert_eq!(
        write["structuredContent"]["decision"]["rule_id"], "builtin.protect-git",
        "{write}"
    );
    assert!(!w.ws().join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn path_escape_through_a_symlink_is_refused_by_the_tool_itself() {
    let w = Ws::new(json!({"permissions": {"default": "allow"}}));
    std::os::unix::fs::symlink("/etc", w.ws().join("etc-link")).unwrap();
    let client = w.client().await;
    let read = call(
        &client,
        "filesystem_read_file",
        json!({"path": "etc-link/passwd"}),
    )
    .await
    .unwrap();
    assert_eq!(read["isError"], true, "{read}");
    assert!(!text(&read).contains("root:"), "{read}");
}

#[tokio::test]
async fn approved_command_runs_once_exactly_as_approved() {
    let w = Ws::new(json!({}));
    let client = w.client().await;
    let asked = call(
        &client,
        "shell_run",
        json!({"program": "echo", "args": ["approved", "run"]}),
    )
    .await
    .unwrap();
    assert_eq!(outcome(&asked), "APPROVAL_REQUIRED", "{asked}");
    let id = request_id(&asked);
    w.approve(&id);
    let ran = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(ran["structuredContent"]["outcome"], "SUCCEEDED", "{ran}");
    assert!(
        ran["structuredContent"]["stdout"]
            .to_string()
            .contains("approved run"),
        "{ran}"
    );
    let again = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(outcome(&again), "APPROVAL_CONSUMED");
}

#[tokio::test]
async fn executable_swapped_after_approval_is_refused() {
    let w = Ws::new(json!({}));
    let tool = w.ws().join("tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho original\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let client = w.client().await;
    let asked = call(&client, "shell_run", json!({"program": tool}))
        .await
        .unwrap();
    let id = request_id(&asked);
    w.approve(&id);
    std::fs::write(&tool, "#!/bin/sh\necho swapped\n").unwrap();
    let ran = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_eq!(ran["isError"], true, "{ran}");
    assert!(
        !ran.to_string().contains("swapped\\n"),
        "the swapped program never ran: {ran}"
    );
}

#[tokio::test]
async fn no_workspace_means_no_workspace_tools() {
    let setup = Setup::new(json!({"permissions": {"default": "allow"}}));
    let client = setup.serve_with(HashMap::new(), &[]);
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(tools
        .iter()
        .all(|t| t["name"] != "shell_run" && t["name"] != "filesystem_read_file"));
}

#[tokio::test]
async fn commands_run_without_network_unless_the_config_allows_it() {
    let w = Ws::new(
        json!({"permissions": {"default": "ask", "allow": ["Bash(cat /proc/net/dev)"]},
                           "sandbox": {"require": ["no_network"]}}),
    );
    let client = w.client().await;
    let ran = call(
        &client,
        "shell_run",
        json!({"program": "cat", "args": ["/proc/net/dev"]}),
    )
    .await
    .unwrap();
    assert_eq!(ran["structuredContent"]["outcome"], "SUCCEEDED", "{ran}");
    let stdout = ran["structuredContent"]["stdout"].to_string();
    let interfaces: Vec<&str> = stdout
        .split("\\n")
        .filter_map(|l| l.split_once(':').map(|(i, _)| i.trim()))
        .collect();
    assert!(
        interfaces
            .iter()
            .all(|i| *i == "lo" || i.contains('|') || i.contains("Inter")),
        "{stdout}"
    );
}

#[tokio::test]
async fn audit_records_the_resources_a_call_touched_but_agents_do_not_read_them_back() {
    let w = Ws::new(json!({}));
    let client = w.client().await;
    call(
        &client,
        "filesystem_read_file",
        json!({"path": "notes.txt"}),
    )
    .await
    .unwrap();
    let recent = call(&client, "toolgate_audit_recent", json!({"limit": 10}))
        .await
        .unwrap();
    let path = w.ws().join("notes.txt");
    assert!(
        !recent.to_string().contains(path.to_str().unwrap()),
        "agents do not see paths: {recent}"
    );
    let ns = store::Namespace::open(&w.setup.state_dir(), &w.ws()).unwrap();
    let log = std::fs::read_to_string(ns.dir().join("audit.jsonl")).unwrap();
    assert!(
        log.contains(&format!("\"{}\"", path.display())),
        "the audit log names the file read:\n{log}"
    );
}

/// Finds every SQLite file under the directory in argv[1] and approves every pending request in it.
const APPROVE_MYSELF: &str = r#"
import os, sqlite3, sys
tampered = 0
for base, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        try:
            db = sqlite3.connect(os.path.join(base, name))
            tampered += db.execute("UPDATE approvals SET status = 'APPROVED', decided_at = 0, "
                                   "decided_by = 'agent' WHERE status = 'PENDING'").rowcount
            db.commit()
        except Exception:
            pass
print('tampered', tampered)
"#;

#[tokio::test]
async fn allowed_command_cannot_approve_its_own_pending_request() {
    let w = Ws::new(json!({"permissions": {"default": "ask", "allow": ["Bash(python3:*)"]}}));
    std::fs::write(w.ws().join("approve.py"), APPROVE_MYSELF).unwrap();
    let state = w.setup.state_dir();
    let client = w.client().await;
    let asked = call(
        &client,
        "shell_run",
        json!({"program": "echo", "args": ["self-approved"]}),
    )
    .await
    .unwrap();
    assert_eq!(outcome(&asked), "APPROVAL_REQUIRED", "{asked}");
    let id = request_id(&asked);

    // Control: the same script, run outside the sandbox on a copy of the state root, does approve the request.
    let copy = tempfile::tempdir().unwrap();
    for entry in walk(&state) {
        let to = copy.path().join(entry.strip_prefix(&state).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    let control = std::process::Command::new("/usr/bin/python3")
        .arg(w.ws().join("approve.py"))
        .arg(copy.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&control.stdout), "tampered 1\n");

    let attack = call(
        &client,
        "shell_run",
        json!({"program": "python3", "args": ["approve.py", state]}),
    )
    .await
    .unwrap();
    assert_eq!(outcome(&attack), "SUCCEEDED", "{attack}");
    assert_eq!(attack["structuredContent"]["stdout"], "tampered 0\n");
    let resumed = call(&client, "toolgate_resume", json!({"request_id": id}))
        .await
        .unwrap();
    assert_ne!(outcome(&resumed), "SUCCEEDED", "{resumed}");
    assert!(!resumed.to_string().contains("self-approved"), "{resumed}");
}

#[tokio::test]
async fn allowed_command_cannot_read_the_config_nor_use_the_shared_tmp() {
    // A script file run by an allowed interpreter: a prefix allow admits no `sh -c` (it runs other commands).
    let w = Ws::new(json!({"permissions": {"default": "ask", "allow": ["Bash(python3:*)"]}}));
    let config = w.setup.config.clone();
    let shared = std::env::temp_dir();
    let probe = format!(
        "import os\n\
         try:\n    open({config:?}).read(); print('read-config')\nexcept OSError:\n    pass\n\
         try:\n    open({shared:?} + '/toolgate-shared-{pid}', 'w').close(); print('wrote-shared')\n\
         except OSError:\n    pass\n\
         open(os.environ['TMPDIR'] + '/mine', 'w').close(); print(os.environ['TMPDIR'])\n",
        config = config.display().to_string(),
        shared = shared.display().to_string(),
        pid = std::process::id()
    );
    std::fs::write(w.ws().join("probe.py"), probe).unwrap();
    let client = w.client().await;
    let ran = call(
        &client,
        "shell_run",
        json!({"program": "python3", "args": ["probe.py"]}),
    )
    .await
    .unwrap();
    assert_eq!(outcome(&ran), "SUCCEEDED", "{ran}");
    let stdout = ran["structuredContent"]["stdout"].as_str().unwrap();
    assert!(
        !stdout.contains("read-config") && !stdout.contains("workspace"),
        "{stdout}"
    );
    assert!(!stdout.contains("wrote-shared"), "{stdout}");
    let private = PathBuf::from(stdout.trim());
    assert!(
        private.starts_with(&shared) && private != shared,
        "{stdout}"
    );
    assert!(
        !private.exists(),
        "the private temporary directory outlived the run"
    );
}

#[tokio::test]
async fn sandbox_limits_from_the_config_reach_the_command() {
    let w = Ws::new(json!({
        "permissions": {"default": "ask", "allow": ["Bash(cat /proc/self/limits)"]},
        "sandbox": {"limits": {"cpuSeconds": 42, "openFiles": 321}}
    }));
    let client = w.client().await;
    let ran = call(
        &client,
        "shell_run",
        json!({"program": "cat", "args": ["/proc/self/limits"]}),
    )
    .await
    .unwrap();
    let stdout = ran["structuredContent"]["stdout"].as_str().unwrap();
    let soft = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l[name.len()..].split_whitespace().next())
            .map(str::to_owned)
    };
    assert_eq!(soft("Max cpu time").as_deref(), Some("42"), "{stdout}");
    assert_eq!(soft("Max open files").as_deref(), Some("321"), "{stdout}");
    assert_ne!(soft("Max address space").as_deref(), Some("unlimited"));
    assert_ne!(soft("Max file size").as_deref(), Some("unlimited"));
    assert_ne!(soft("Max processes").as_deref(), Some("unlimited"));
}

/// Every file beneath `dir`.
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn config_inside_the_workspace_refuses_commands_rather_than_exposing_it() {
    let setup = crate::support::Setup::with(|dir| {
        json!({"workspace": dir, "permissions": {"default": "ask", "allow": ["Bash(true)"]},
               "approvals": {"wait_seconds": 0, "elicitation": false}})
    });
    let state = tempfile::tempdir().unwrap();
    let client = setup.serve_with(
        HashMap::new(),
        &[("TOOLGATE_STATE_DIR", state.path().to_str().unwrap())],
    );
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let ran = call(&client, "shell_run", json!({"program": "true"}))
        .await
        .unwrap();
    assert_eq!(outcome(&ran), "REFUSED", "{ran}");
    assert_eq!(
        ran["structuredContent"]["error"]["code"], "SANDBOX_PROTECTED_PATH",
        "{ran}"
    );
}

/// A policy that lets git read the workspace except `secret/`, and a real repository with one commit.
fn git_reader() -> Ws {
    git_repository(json!({"policy": {"default": "deny", "rules": [
        {"id": "git-ws", "effect": "allow", "operations": ["git.read", "fs.read"], "paths": ["${workspace}/**"]},
        {"id": "deny-secret", "effect": "deny", "paths": ["${workspace}/secret/**"]}]}}))
}

/// A real repository with one commit of `notes.txt`, `pub/a.txt` and `secret/key.txt`, under `policy`.
fn git_repository(policy: Value) -> Ws {
    let w = Ws::new(policy);
    let ws = w.ws();
    std::fs::create_dir_all(ws.join("secret")).unwrap();
    std::fs::create_dir_all(ws.join("pub")).unwrap();
    std::fs::write(ws.join("secret/key.txt"), "hunter2\n").unwrap();
    std::fs::write(ws.join("pub/a.txt"), "public\n").unwrap();
    git_in(&ws, &["init", "-q", "."]);
    git_in(&ws, &["add", "."]);
    git_in(&ws, &["commit", "-qm", "start"]);
    w
}

/// Runs git in `ws` as the test's own tool (not through toolgate) and returns its output.
fn git_in(ws: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(ws)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test]
async fn git_diff_of_a_denied_path_is_denied_through_shell_run() {
    let w = git_reader();
    std::fs::write(w.ws().join("secret/key.txt"), "changed\n").unwrap();
    let client = w.client().await;
    for args in [
        json!(["diff", "--", "secret/key.txt"]),
        json!(["-C", "secret", "diff", "key.txt"]),
    ] {
        let denied = call(
            &client,
            "shell_run",
            json!({"program": "git", "args": args}),
        )
        .await
        .unwrap();
        assert_eq!(
            denied["structuredContent"]["decision"]["rule_id"], "deny-secret",
            "{denied}"
        );
        assert!(!denied.to_string().contains("changed"), "{denied}");
    }
    let magic = call(
        &client,
        "shell_run",
        json!({"program": "git", "args": ["show", "HEAD:secret/key.txt"]}),
    )
    .await
    .unwrap();
    assert_ne!(outcome(&magic), "SUCCEEDED", "{magic}");
    assert!(!magic.to_string().contains("hunter2"), "{magic}");
    let other = call(
        &client,
        "shell_run",
        json!({"program": "git", "args": ["diff", "--stat", "--", "notes.txt"]}),
    )
    .await
    .unwrap();
    assert_eq!(outcome(&other), "SUCCEEDED", "{other}");
}

#[tokio::test]
async fn git_show_of_a_blob_id_through_shell_run_does_not_return_a_read_denied_file() {
    let w = git_repository(json!({
        "policy": {"default": "deny", "rules": [
            {"id": "git-read", "effect": "allow", "operations": ["git.read"]}]},
        "permissions": {"allow": ["Read(./**)"], "deny": ["Read(./secret/**)"]}}));
    let blob = git_in(&w.ws(), &["rev-parse", "HEAD:secret/key.txt"]);
    let tree = git_in(&w.ws(), &["rev-parse", "HEAD^{tree}"]);
    let client = w.client().await;
    for (cwd, args) in [
        (".", json!(["show", blob])),
        (".", json!(["cat-file", "-p", blob])),
        (".", json!(["show", blob, "--", "notes.txt"])),
        (".", json!(["log", "-p"])),
        (".", json!(["grep", "hunter2"])),
        (".", json!(["ls-tree", "-r", tree])),
        // From a subdirectory nothing denied lies beneath, but git would climb to the repository above it.
        ("pub", json!(["show", blob])),
        ("pub", json!(["-C", "..", "--no-pager", "show", blob])),
        // The repository's own directory, read as a bare repository.
        (".", json!(["-C", ".git", "show", blob])),
    ] {
        let result = call(
            &client,
            "shell_run",
            json!({"program": "git", "args": args, "cwd": cwd}),
        )
        .await
        .unwrap();
        assert_ne!(outcome(&result), "SUCCEEDED", "{cwd} {args}: {result}");
        let text = result.to_string();
        assert!(
            !text.contains("hunter2") && !text.contains("key.txt"),
            "{cwd} {args}: {result}"
        );
    }
    // What lies outside the deny is still read.
    let other = call(
        &client,
        "shell_run",
        json!({"program": "git", "args": ["log", "-p", "--", "notes.txt"]}),
    )
    .await
    .unwrap();
    assert_eq!(outcome(&other), "SUCCEEDED", "{other}");
}

#[tokio::test]
async fn repository_config_cannot_make_a_read_only_git_run_programs() {
    // Nothing is denied beneath the workspace, so reading all of it is allowed and the git commands run.
    let w = git_repository(json!({"policy": {"default": "deny", "rules": [
        {"id": "git-ws", "effect": "allow", "operations": ["git.read", "fs.read"], "paths": ["${workspace}/**"]}]}}));
    let ws = w.ws();
    let marker = ws.join("marker");
    let script = ws.join("evil.sh");
    std::fs::write(&script, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    let evil = script.display();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = {evil}\n[diff \"evil\"]\n\ttextconv = {evil}\n\tcommand = {evil}\n\
         [filter \"evil\"]\n\tclean = {evil}\n\tprocess = {evil}\n"
    ));
    std::fs::write(ws.join(".git/config"), config).unwrap();
    std::fs::write(ws.join(".gitattributes"), "*.txt diff=evil filter=evil\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "edited\n").unwrap();
    let client = w.client().await;
    for args in [
        json!(["status"]),
        json!(["diff"]),
        json!(["log", "-p"]),
        json!(["-C", ".", "status", "--porcelain"]),
    ] {
        let ran = call(
            &client,
            "shell_run",
            json!({"program": "git", "args": args}),
        )
        .await
        .unwrap();
        // It ran (a diff driver switched off makes git stop with an error instead of running it).
        assert!(
            matches!(outcome(&ran), "SUCCEEDED" | "COMMAND_FAILED"),
            "{ran}"
        );
        assert!(
            !marker.exists(),
            "git {args} ran the repository's program: {ran}"
        );
    }
}
