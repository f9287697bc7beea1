//! MCP Unified users switch by name only: the sheet's CLI examples, run as written through the
//! `mcp-unified-gateway` link in a project holding the sheet's `gateway.json`: the quick check, both ways to a
//! stored profile (duplicate a preset, create one from JSON) and their previews, the policy explanation (which
//! never shows the arguments), config validation, and the tool-use report under the reporting config.

use crate::support::product_links;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The sheet's "Minimal Gateway Config", verbatim.
pub(crate) const MINIMAL: &str = r#"{
  "store": {
    "kind": "sqlite",
    "sqlite_path": "./mcp-gateway.db"
  },
  "default_preset_id": "project-researcher"
}
"#;

/// The sheet's reporting config, verbatim.
const REPORTING: &str = r#"{
  "store": {
    "kind": "sqlite",
    "sqlite_path": "./mcp-gateway.db"
  },
  "default_preset_id": "project-researcher",
  "tool_use_reporting": {
    "enabled": true,
    "store": {
      "kind": "sqlite",
      "sqlite_path": "./mcp-tool-events.db"
    },
    "retention_max_age_days": 30,
    "retention_max_events": 100000
  }
}
"#;

pub(crate) struct Unified {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    bin: PathBuf,
    /// The project, and the current directory of every command.
    pub(crate) ws: PathBuf,
}

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) out: String,
    pub(crate) err: String,
}

impl Unified {
    pub(crate) fn new(gateway_json: &str) -> Unified {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let bin = product_links(&root);
        let ws = root.join("project");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/app.py"), "print('hi')\n").unwrap();
        std::fs::write(ws.join("gateway.json"), gateway_json).unwrap();
        Unified {
            _dir: dir,
            root,
            bin,
            ws,
        }
    }

    /// One command line of the sheet, split as the shell splits it (no quoting in them but `"$VAR"`).
    pub(crate) fn sh(&self, line: &str, stdin: Option<&str>) -> Run {
        self.sh_env(line, stdin, &[])
    }

    /// `sh` with `env` added, as exported before the line.
    pub(crate) fn sh_env(&self, line: &str, stdin: Option<&str>, env: &[(&str, &str)]) -> Run {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], "mcp-unified-gateway");
        let mut child = Command::new(self.bin.join(words[0]))
            .args(&words[1..])
            .envs(env.iter().copied())
            .current_dir(&self.ws)
            .env("HOME", self.root.join("home"))
            .env("TOOLGATE_STATE_DIR", self.root.join("state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run mcp-unified-gateway");
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            // A command refused on its flags exits before it reads stdin: its answer is what the test checks.
            if let Err(e) = input.write_all(text.as_bytes()) {
                assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
            }
        }
        drop(input);
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            out: String::from_utf8_lossy(&out.stdout).into_owned(),
            err: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub(crate) fn ok(&self, line: &str) -> String {
        let r = self.sh(line, None);
        assert_eq!(r.code, 0, "{line}:\n{}{}", r.out, r.err);
        r.out
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> &Path {
        std::fs::write(self.ws.join(name), text).unwrap();
        &self.ws
    }
}

#[test]
fn the_sheets_quick_cli_check_runs_as_written() {
    let u = Unified::new(MINIMAL);
    let info = u.ok("mcp-unified-gateway package-info");
    assert!(info.contains("license expression: "), "{info}");
    let presets = u.ok("mcp-unified-gateway list-presets");
    assert!(
        presets
            .lines()
            .any(|l| l.starts_with("project-researcher ")),
        "{presets}"
    );
    let valid = u.ok("mcp-unified-gateway validate-config ./gateway.json");
    assert!(valid.starts_with("valid: ./gateway.json"), "{valid}");
    assert!(
        valid.contains("default profile: project-researcher"),
        "{valid}"
    );
    assert!(valid.contains("tool-use reporting: disabled"), "{valid}");
}

#[test]
fn option_a_a_duplicated_preset_is_stored_and_previewed() {
    let u = Unified::new(MINIMAL);
    let line = "mcp-unified-gateway duplicate-preset project-researcher \
                --profile-id team-researcher --config ./gateway.json";
    let stored = u.ok(line);
    assert!(
        stored.contains("stored profile team-researcher"),
        "{stored}"
    );
    assert!(u.ws.join("mcp-gateway.db.profiles.json").is_file());
    let again = u.sh(line, None);
    assert_ne!(again.code, 0, "an id already taken is never replaced");
    assert!(again.err.contains("exists already"), "{}", again.err);
    let preview =
        u.ok("mcp-unified-gateway preview-profile-tools --profile team-researcher --config ./gateway.json");
    assert!(preview.starts_with("profile team-researcher"), "{preview}");
    let row = |name: &str| {
        preview
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().nth(1).unwrap().to_owned())
    };
    assert_eq!(row("filesystem_read_file").as_deref(), Some("visible"));
    // The preset defers the shell until it is asked for: progressive disclosure.
    assert_eq!(row("shell_run").as_deref(), Some("deferred"));
}

#[test]
fn option_b_a_profile_created_from_json_is_stored_and_previewed_by_category() {
    let u = Unified::new(MINIMAL);
    u.write(
        "profile.json",
        r#"{"id": "reviewer", "description": "reads, never runs", "default": "deny",
            "rules": [{"id": "reviewer.read", "effect": "allow", "operations": ["fs.read"]}],
            "tools": {"blocked": ["toolgate__shell_run"]}}"#,
    );
    u.ok(
        "mcp-unified-gateway create-profile --profile-file ./profile.json --config ./gateway.json",
    );
    let all = u
        .ok("mcp-unified-gateway preview-profile-tools --profile reviewer --config ./gateway.json");
    assert!(
        all.lines()
            .any(|l| l.starts_with("shell_run ") && l.contains("blocked")),
        "{all}"
    );
    let fs = u.ok(
        "mcp-unified-gateway preview-profile-tools --profile reviewer --category filesystem --config ./gateway.json",
    );
    let names: Vec<&str> = fs
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.contains(&"filesystem_apply_patch"), "{fs}");
    assert!(names.iter().all(|n| n.starts_with("filesystem_")), "{fs}");
    let shown = u.ok(
        "mcp-unified-gateway preview-profile-tools --profile reviewer --exclude-denied --config ./gateway.json",
    );
    assert!(!shown.contains("shell_run"), "{shown}");
    // A profile that does not compile is not stored.
    u.write("bad.json", r#"{"id": "bad", "default": "sometimes"}"#);
    let r = u.sh(
        "mcp-unified-gateway create-profile --profile-file ./bad.json --config ./gateway.json",
        None,
    );
    assert_ne!(r.code, 0);
    let stored = std::fs::read_to_string(u.ws.join("mcp-gateway.db.profiles.json")).unwrap();
    assert!(!stored.contains("\"bad\""), "{stored}");
}

#[test]
fn explain_policy_never_echoes_a_secret_argument_on_any_channel() {
    let u = Unified::new(MINIMAL);
    let secret = "hunter2-do-not-show";
    u.write(
        "patch-args.json",
        &format!(r#"{{"path": "src/app.py", "patch": "{secret}"}}"#),
    );
    let line = "mcp-unified-gateway explain-policy --profile project-researcher --tool fs.patch \
                --args-json-file ./patch-args.json --config ./gateway.json";
    let r = u.sh(line, None);
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(r.out.contains("decision   "), "{}", r.out);
    assert!(
        !r.out.contains(secret) && !r.err.contains(secret),
        "{}{}",
        r.out,
        r.err
    );
    // The remote example's call, answered locally: the preset allows reading the project.
    let r = u.sh(
        "mcp-unified-gateway explain-policy --profile project-researcher --tool fs.read --args-stdin",
        Some("{\"path\":\"src/app.py\"}\n"),
    );
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(r.out.contains("decision   allow"), "{}", r.out);
    assert!(r.out.contains("project-researcher.read"), "{}", r.out);
    assert!(!r.out.contains("src/app.py\""), "{}", r.out);
    let inline = format!("{{\"path\":\"x\",\"k\":\"{secret}\"");
    let r = Command::new(u.bin.join("mcp-unified-gateway"))
        .args([
            "explain-policy",
            "--profile",
            "project-researcher",
            "--tool",
            "fs.read",
        ])
        .args(["--args-json", &inline])
        .current_dir(&u.ws)
        .env("TOOLGATE_STATE_DIR", u.root.join("state"))
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr),
    );
    assert!(!r.status.success(), "broken JSON is refused");
    assert!(!out.contains(secret) && !err.contains(secret), "{out}{err}");
}

#[test]
fn tool_use_reporting_decides_whether_a_report_is_made() {
    let u = Unified::new(MINIMAL);
    // toolgate's own report says it counts nothing, rather than showing an empty table as if no call was made.
    let own = Command::new(crate::support::toolgate())
        .args(["report", "--config", "./gateway.json"])
        .current_dir(&u.ws)
        .env("TOOLGATE_STATE_DIR", u.root.join("state"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&own.stderr);
    assert!(said.contains("reporting is off"), "{said}");
    let line = "mcp-unified-gateway tool-events report --group-by profile --config ./gateway.json";
    let off = u.sh(line, None);
    assert_eq!(off.code, 2, "{}{}", off.out, off.err);
    assert!(
        off.err.contains("tool-use reporting is disabled"),
        "{}",
        off.err
    );
    // The sheet's reporting config keeps its store beside it: inside the project, where the project's tools
    // could reach it, so it is refused with the way out.
    u.write("gateway.json", REPORTING);
    let inside = u.sh(line, None);
    assert_eq!(inside.code, 2, "{}{}", inside.out, inside.err);
    assert!(
        inside.err.contains("lies inside the workspace"),
        "{}",
        inside.err
    );
    // The same file with its store outside the project: the report is made from toolgate's reporting events.
    let outside = reporting_outside(&u);
    let report = u.ok(line);
    assert!(report.starts_with("profile "), "{report}");
    assert!(outside.join("mcp-gateway.db.d").is_dir());
    let cleanup = u.ok("mcp-unified-gateway tool-events cleanup --config ./gateway.json");
    assert!(cleanup.contains("removed 0"), "{cleanup}");
}

/// The sheet's reporting config with its stores moved out of the project, where toolgate keeps state.
pub(crate) fn reporting_outside(u: &Unified) -> PathBuf {
    let outside = u.root.join("gateway-state");
    std::fs::create_dir_all(&outside).unwrap();
    let moved = REPORTING.replace("./mcp-", &format!("{}/mcp-", outside.display()));
    u.write("gateway.json", &moved);
    outside
}

/// `serve`, initialized as a 2025-11-25 client.
pub(crate) async fn serve_initialized(u: &Unified) -> test_support::StdioClient {
    let client = serve(u);
    client
        .initialize("2025-11-25", serde_json::json!({}))
        .await
        .unwrap();
    client
}

/// `toolgate serve` on the project's `gateway.json` over stdio, as a client entry starts it.
fn serve(u: &Unified) -> test_support::StdioClient {
    let config = u.ws.join("gateway.json");
    test_support::StdioClient::spawn(
        &crate::support::toolgate(),
        &[
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--workspace",
            u.ws.to_str().unwrap(),
        ],
        &[],
        std::collections::HashMap::new(),
    )
    .unwrap()
}

#[tokio::test]
async fn tool_events_export_holds_no_arguments_results_or_secrets() {
    let u = Unified::new(MINIMAL);
    reporting_outside(&u);
    let content = "SECRET-CONTENT-0123456789";
    let secret_arg = "SECRET-ARGUMENT-9876543210";
    u.write("src/notes.txt", content);
    let mut client = serve_initialized(&u).await;
    let read = crate::support::call(
        &client,
        "filesystem_read_file",
        serde_json::json!({"path": "src/notes.txt"}),
    )
    .await
    .unwrap();
    assert!(
        read.to_string().contains(content),
        "the call itself works: {read}"
    );
    let refused = crate::support::call(
        &client,
        "filesystem_read_file",
        serde_json::json!({"path": format!("../{secret_arg}")}),
    )
    .await;
    assert!(!format!("{refused:?}").is_empty());
    client.close(std::time::Duration::from_secs(10)).await;

    let lines = u.ok(
        "mcp-unified-gateway tool-events export --format jsonl --since 7d --config ./gateway.json",
    );
    assert!(
        !lines.contains(content) && !lines.contains(secret_arg),
        "{lines}"
    );
    let events: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reads: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["tool"] == "filesystem_read_file")
        .collect();
    assert_eq!(reads.len(), 2, "{lines}");
    let keys: Vec<&str> = reads[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "time",
            "time_ms",
            "trace_id",
            "profile",
            "principal",
            "server",
            "tool",
            "operation",
            "decision",
            "reason_code",
            "outcome",
            "duration_ms",
            "error_class"
        ],
        "metadata only: nowhere to put arguments or results"
    );
    assert_eq!(reads[0]["profile"], "project-researcher");
    assert_eq!(reads[0]["outcome"], "SUCCEEDED");
    assert_ne!(reads[1]["outcome"], "SUCCEEDED", "{}", reads[1]);
    let array = u.ok(
        "mcp-unified-gateway tool-events export --format json --limit 1 --config ./gateway.json",
    );
    let array: Vec<serde_json::Value> = serde_json::from_str(&array).unwrap();
    assert_eq!(array, [events.last().unwrap().clone()], "the newest one");
    let kept =
        u.ok("mcp-unified-gateway tool-events cleanup --max-events 1 --config ./gateway.json");
    assert!(
        kept.contains(&format!("removed {}", events.len() - 1)),
        "{kept}"
    );
    let left = u.ok("mcp-unified-gateway tool-events export --config ./gateway.json");
    assert_eq!(left.lines().count(), 1, "{left}");
    // Reporting off: nothing is exported, and the user is told why.
    u.write("gateway.json", MINIMAL);
    let off = u.sh(
        "mcp-unified-gateway tool-events export --config ./gateway.json",
        None,
    );
    assert_eq!(off.code, 2, "{}{}", off.out, off.err);
    assert!(
        off.err.contains("tool-use reporting is disabled"),
        "{}",
        off.err
    );
}

pub(crate) const ADMIN_KEY: &str = "replace-with-admin-key";

/// A `gateway.json` for serving over HTTP: the store outside the project, the sheet's admin key configured by
/// digest. Returns where the state is.
pub(crate) fn http_gateway_json(u: &Unified) -> PathBuf {
    let outside = u.root.join("gateway-state");
    std::fs::create_dir_all(&outside).unwrap();
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(ADMIN_KEY.as_bytes()));
    let config = serde_json::json!({
        "store": {"kind": "sqlite", "sqlite_path": outside.join("mcp-gateway.db")},
        "default_preset_id": "project-researcher",
        "http": {"admin": {"keySha256": digest}},
    });
    u.write("gateway.json", &config.to_string());
    outside
}

/// `toolgate serve --http` on the project's `gateway.json`.
pub(crate) fn serve_http(u: &Unified) -> crate::support::ServedHttp {
    let mut cmd = Command::new(crate::support::toolgate());
    cmd.args(["serve", "--http", "127.0.0.1:0", "--config"])
        .arg(u.ws.join("gateway.json"))
        .arg("--workspace")
        .arg(&u.ws);
    crate::support::ServedHttp::spawn(cmd)
}

#[test]
fn the_official_typescript_client_calls_tools_over_the_websocket_entry_point() {
    let u = Unified::new(MINIMAL);
    http_gateway_json(&u);
    let served = serve_http(&u);
    let ws = format!("{}/ws", served.url.replacen("http://", "ws://", 1));
    let script = crate::support::peers().join("ts_ws_client.mjs");
    let out = Command::new(crate::support::node22())
        .arg(&script)
        .args([&ws, "filesystem_read_file", r#"{"path": "src/app.py"}"#])
        .current_dir(crate::support::peers())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["serverInfo"]["name"], "toolgate");
    let tools = summary["tools"].as_array().unwrap();
    assert!(
        tools.contains(&serde_json::json!("filesystem_read_file")),
        "{summary}"
    );
    let call = &summary["call"];
    assert_eq!(call["isError"], false, "{call}");
    assert!(call.to_string().contains("print('hi')"), "{call}");
}

/// The structured result of a tool call.
fn structured(result: &Result<serde_json::Value, serde_json::Value>) -> serde_json::Value {
    match result {
        Ok(r) => r["structuredContent"].clone(),
        Err(e) => panic!("a result, not {e}"),
    }
}

#[tokio::test]
async fn two_gateways_on_one_store_share_read_before_mutate_locks() {
    let u = Unified::new(MINIMAL);
    reporting_outside(&u);
    u.write("editor.json", r#"{"id": "editor", "default": "allow"}"#);
    u.ok("mcp-unified-gateway create-profile --profile-file ./editor.json --config ./gateway.json");
    let config = std::fs::read_to_string(u.ws.join("gateway.json")).unwrap();
    u.write(
        "gateway.json",
        &config.replace("project-researcher", "editor"),
    );
    let (a, b) = (serve(&u), serve(&u));
    for client in [&a, &b] {
        client
            .initialize("2025-11-25", serde_json::json!({}))
            .await
            .unwrap();
    }
    let call = |client, name: &str, args: serde_json::Value| {
        let (client, name): (&test_support::StdioClient, String) = (client, name.to_owned());
        async move { structured(&crate::support::call(client, &name, args).await) }
    };
    let lock = call(
        &a,
        "filesystem_lock_acquire",
        serde_json::json!({"path": "src/app.py", "owner": "agent-a"}),
    )
    .await;
    assert_eq!(lock["outcome"], "SUCCEEDED", "{lock}");
    let lease = lock["lease_id"].as_str().unwrap().to_owned();
    // The other gateway, another process on the same store, is refused the file and told who holds it.
    let refused = call(
        &b,
        "filesystem_write_file",
        serde_json::json!({"path": "src/app.py", "content": "b"}),
    )
    .await;
    assert_eq!(refused["error"]["code"], "LOCK_CONFLICT", "{refused}");
    assert!(
        refused.to_string().contains("agent-a") && !refused.to_string().contains(&lease),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(u.ws.join("src/app.py")).unwrap(),
        "print('hi')\n"
    );
    let wrote = call(
        &a,
        "filesystem_write_file",
        serde_json::json!({"path": "src/app.py", "content": "print('a')\n", "lock_lease_id": lease}),
    )
    .await;
    assert_eq!(wrote["outcome"], "SUCCEEDED", "{wrote}");
    let released = call(
        &a,
        "filesystem_lock_release",
        serde_json::json!({"path": "src/app.py", "lease_id": lease}),
    )
    .await;
    assert_eq!(released["released"], true);
    let after = call(
        &b,
        "filesystem_write_file",
        serde_json::json!({"path": "src/app.py", "content": "b"}),
    )
    .await;
    assert_eq!(after["outcome"], "SUCCEEDED", "{after}");
    // The explanation knows the lock tools by MCP Unified's names: taking a lock is a write.
    let r = u.sh(
        "mcp-unified-gateway explain-policy --profile project-researcher --tool fs.lock_acquire --args-stdin",
        Some("{\"path\":\"src/app.py\"}"),
    );
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(r.out.contains("operation  fs.write"), "{}", r.out);
}

#[test]
fn validate_config_refuses_a_gateway_json_key_toolgate_does_not_support() {
    let u = Unified::new(
        r#"{"store": {"kind": "sqlite", "sqlite_path": "./mcp-gateway.db"},
            "default_preset_id": "project-researcher", "external_servers": [{"id": "x"}]}"#,
    );
    let r = u.sh("mcp-unified-gateway validate-config ./gateway.json", None);
    assert_eq!(r.code, 1, "{}{}", r.out, r.err);
    assert!(r.out.starts_with("invalid: ./gateway.json"), "{}", r.out);
    assert!(
        r.err.contains("external_servers") && r.err.contains("not supported"),
        "{}",
        r.err
    );
    u.write("gateway.json", r#"{"store": {"kind": "memory"}}"#);
    let r = u.sh("mcp-unified-gateway validate-config ./gateway.json", None);
    assert_eq!(r.code, 1);
    assert!(r.err.contains("\"memory\" is not supported"), "{}", r.err);
    u.write("gateway.json", r#"{"default_preset_id": "no-such-preset"}"#);
    let r = u.sh("mcp-unified-gateway validate-config ./gateway.json", None);
    assert_eq!(r.code, 1);
    assert!(
        r.err.contains("no-such-preset") && r.err.contains("project-researcher"),
        "{}",
        r.err
    );
}
