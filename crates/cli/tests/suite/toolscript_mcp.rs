//! toolscript-mcp users switch by name only: the README's config (a `policy` list, no `mode`) found through
//! `TOOLSCRIPT_CONFIG`, served as code mode by the `toolscript-mcp` link, driven by the official TypeScript client,
//! runs the README's example program against a real issue-tracker server; a config whose entry would start
//! toolscript-mcp again is refused before anything starts.

use crate::support::{peers, product_links};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The README's example program, verbatim.
const EXAMPLE: &str = r#"const issues = await call("mcp__jira__search_issues", {
jql: "assignee = currentUser() AND statusCategory != Done",
})
const cutoff = Date.now() - 14 * 24 * 3600 * 1000
return issues.issues
.filter(i => Date.parse(i.fields.updated) < cutoff)
.map(i => ({ key: i.key, title: i.fields.summary }))"#;

/// The README's config shape: servers under `mcpServers`, `${NOTES_DIR}` in args, the first-match `policy` list.
fn write_config(dir: &Path) -> std::path::PathBuf {
    let modules = peers().join("node_modules/@modelcontextprotocol");
    let config = json!({
        "mcpServers": {
            "files": {"command": "node", "args": [modules.join("server-filesystem/dist/index.js"), "${NOTES_DIR}"]},
            "jira": {"command": "node", "args": [peers().join("jira_server.mjs")]}
        },
        "policy": [
            {"match": "mcp__jira__delete_*", "action": "deny"},
            {"match": "mcp__jira__*", "action": "allow"},
            {"match": "mcp__files__read_*", "action": "allow"}
        ]
    });
    let path = dir.join("config.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    path
}

#[tokio::test]
async fn the_readme_example_program_runs_through_toolscript_mcp_with_the_typescript_client() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let bin = product_links(&root);
    let notes = root.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let config = write_config(&root);
    let steps = json!([
        test_support::search_params("search issues"),
        test_support::run_params(EXAMPLE),
    ]);
    // No --config: toolscript-mcp finds its file through TOOLSCRIPT_CONFIG.
    let mut node = tokio::process::Command::new("node")
        .arg(peers().join("ts_codemode.mjs"))
        .arg(bin.join("toolscript-mcp"))
        .arg("(unused)")
        .arg(steps.to_string())
        .env("TOOLGATE_ARGS", "[]")
        .env("TOOLSCRIPT_CONFIG", &config)
        .env("NOTES_DIR", &notes)
        .env("TOOLGATE_STATE_DIR", root.join("state"))
        .current_dir(peers())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut report = None;
    while let Some(line) = lines.next_line().await.unwrap() {
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            report = Some(v);
        }
    }
    assert!(node.wait().await.unwrap().success(), "the client failed");
    let report = report.expect("the client's report");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"search_tools") && tools.contains(&"run_code"),
        "{tools:?}"
    );
    assert!(
        !tools
            .iter()
            .any(|t| t.contains("search_issues") || t.contains("read_")),
        "code mode without a \"mode\" key: no upstream tool is listed: {tools:?}"
    );
    let found = report["results"][0].to_string();
    assert!(found.contains("search_issues"), "{found}");
    let returned = test_support::returned(&report["results"][1]["result"])
        .unwrap_or_else(|| panic!("the program returned nothing: {}", report["results"][1]));
    assert_eq!(
        returned,
        &json!([
            {"key": "OPS-1", "title": "Rotate the signing key"},
            {"key": "OPS-3", "title": "Document the runbook"}
        ])
    );
}

#[test]
fn toolscript_mcp_refuses_a_config_that_would_start_toolscript_mcp_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let bin = product_links(&root);
    let config = root.join("config.json");
    for entry in [
        json!({"command": "node", "args": ["/opt/toolscript-mcp/dist/host/main.js", "--config", &config]}),
        json!({"command": bin.join("toolscript-mcp"), "args": ["--config", &config]}),
    ] {
        std::fs::write(
            &config,
            json!({"mcpServers": {"toolscript": entry}, "policy": []}).to_string(),
        )
        .unwrap();
        let out = std::process::Command::new(bin.join("toolscript-mcp"))
            .arg("--config")
            .arg(&config)
            .env("TOOLGATE_STATE_DIR", root.join("state"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{entry}: {err}");
        assert!(
            err.contains("each copy would start the next"),
            "{entry}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn toolscript_mcp_without_any_config_names_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let bin = product_links(&root);
    let out = std::process::Command::new(bin.join("toolscript-mcp"))
        .env_remove("TOOLSCRIPT_CONFIG")
        .env("XDG_CONFIG_HOME", root.join("xdg"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("TOOLSCRIPT_CONFIG") && err.contains("xdg/toolscript-mcp/config.json"),
        "{err}"
    );
}
