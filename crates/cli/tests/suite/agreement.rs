//! One decision path: for generated calls (servers of each kind, toolgate's own tools, a `wrap`ped server known
//! only by the `kind` a call file gives; paths spelled relative, absolute, through `..` and a symlink, onto a
//! denied `.env` and beneath directories that hold one), `policy explain` (the real binary, `--json`), the
//! runtime guard `serve` decides with, and `policy test` (the real binary) reach the same decision, reason, rule
//! and operation.

use crate::support::{fixture, toolgate, Setup};
use gateway::{Guard, Verdict};
use proptest::prelude::*;
use proptest::test_runner::{Config as Cases, TestRunner};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// The policy under test: a deny on `.env` files, reads allowed in `src`, git inspection allowed, edits of
/// `docs` asking, and a default of ask.
fn policy(ws: &Path) -> Value {
    json!({
        "workspace": ws,
        "stateDir": ws.parent().unwrap().join("state"),
        "policy": {"default": "ask", "rules": [
            {"id": "allow-git-inspection", "effect": "allow", "operations": ["git.read"], "paths": ["${workspace}/**", "${workspace}"]}
        ]},
        "permissions": {"deny": ["Read(**/.env)"], "allow": ["Read(./src/**)", "mcp__fx__echo"], "ask": ["Edit(./docs/**)"]}
    })
}

struct World {
    setup: Setup,
    /// The same policy with the wrapped server listed, as `wrap` lists it when it serves.
    wrapped: Setup,
    ws: std::path::PathBuf,
}

fn world() -> World {
    let build = |wrap: bool| {
        Setup::with(|dir| {
            let ws = dir.join("ws");
            for d in ["src", "docs", "sub"] {
                std::fs::create_dir_all(ws.join(d)).unwrap();
            }
            for f in [".env", "src/a.rs", "docs/guide.md", "sub/.env", "notes.txt"] {
                std::fs::write(ws.join(f), "x").unwrap();
            }
            let _ = std::os::unix::fs::symlink(ws.join("sub"), ws.join("src/link"));
            let mut config = policy(&ws);
            let servers = if wrap {
                json!({"server-filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", ws]}})
            } else {
                json!({
                    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", ws]},
                    "git": {"command": "uvx", "args": ["mcp-server-git"], "kind": "git"},
                    "fx": fixture(&[])
                })
            };
            config["mcpServers"] = servers;
            config
        })
    };
    let setup = build(false);
    let wrapped = build(true);
    let ws = std::fs::canonicalize(setup.dir.path()).unwrap().join("ws");
    World { setup, wrapped, ws }
}

fn guard(setup: &Setup) -> Guard {
    let config = config::load(
        &setup.config,
        &|k| std::env::var(k).ok(),
        &config::Overrides::default(),
    )
    .unwrap();
    let ws = std::fs::canonicalize(config.workspace.as_ref().unwrap().value.clone()).unwrap();
    Guard::load(&config, &ws).unwrap()
}

/// The decision a verdict carries, as JSON; a refusal made before any decision has none.
fn decided(v: Verdict) -> Value {
    let d = match v {
        Verdict::Allow(d) | Verdict::Ask(d) => Some(d),
        Verdict::Refuse(r) => r.decision,
    };
    serde_json::to_value(d).unwrap()
}

/// A generated call: `(server, tool, arguments, kind)`.
fn calls(ws: &Path) -> impl Strategy<Value = (String, String, Value, Option<&'static str>)> {
    let w = ws.to_string_lossy().into_owned();
    let paths = prop::sample::select(vec![
        ".env".to_owned(),
        "src/a.rs".to_owned(),
        "src/link/.env".to_owned(),
        "src/../.env".to_owned(),
        "docs/guide.md".to_owned(),
        "sub".to_owned(),
        ".".to_owned(),
        format!("{w}/.env"),
        format!("{w}/src"),
        format!("{w}/sub/.env"),
        format!("{w}/docs/new.md"),
        format!("{w}"),
        "/etc/passwd".to_owned(),
    ]);
    let absolute = |p: &str, w: &str| {
        if p.starts_with('/') {
            p.to_owned()
        } else {
            format!("{w}/{p}")
        }
    };
    (
        0..6usize,
        prop::sample::select(vec![0usize, 1, 2, 3, 4, 5, 6]),
        paths,
    )
        .prop_map(move |(server, tool, path)| {
            let abs = absolute(&path, &w);
            match server {
                0 | 1 => {
                    let tools = [
                        "read_file",
                        "read_text_file",
                        "list_directory",
                        "directory_tree",
                        "search_files",
                        "write_file",
                        "get_file_info",
                    ];
                    let args = json!({"path": abs, "content": "y", "pattern": "*.env"});
                    let (name, kind) = if server == 0 {
                        ("files", None)
                    } else {
                        ("server-filesystem", Some("filesystem"))
                    };
                    (name.to_owned(), tools[tool].to_owned(), args, kind)
                }
                2 => {
                    let tools = [
                        "git_status",
                        "git_diff_unstaged",
                        "git_log",
                        "git_show",
                        "git_add",
                        "git_diff",
                        "git_status",
                    ];
                    let args = json!({"repo_path": abs, "files": [path], "revision": "HEAD", "target": "HEAD"});
                    ("git".to_owned(), tools[tool].to_owned(), args, None)
                }
                3 => {
                    let tools = [
                        "read_file",
                        "list_dir",
                        "toolgate_status",
                        "search_text",
                        "git_status",
                        "write_file",
                        "toolgate_ping",
                    ];
                    // toolgate's own tools refuse a path outside the workspace before any decision.
                    let p = if path.starts_with("/etc") || path.contains("..") {
                        "notes.txt".to_owned()
                    } else {
                        path
                    };
                    let args = json!({"path": p, "content": "y", "query": "x"});
                    ("toolgate".to_owned(), tools[tool].to_owned(), args, None)
                }
                _ => {
                    let tools = ["echo", "reflect", "add", "echo", "reflect", "rich", "echo"];
                    let args = json!({"text": "hi", "path": path});
                    ("fx".to_owned(), tools[tool].to_owned(), args, None)
                }
            }
        })
}

fn explain_binary(dir: &Path, config: &Path, call: &Value) -> Value {
    let file = dir.join("call.json");
    std::fs::write(&file, call.to_string()).unwrap();
    let out = Command::new(toolgate())
        .args(["policy", "explain", "--json", "--config"])
        .arg(config)
        .arg("--call")
        .arg(&file)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let e: Value = serde_json::from_slice(&out.stdout).unwrap();
    e["decision"].clone()
}

#[test]
fn explain_the_runtime_guard_and_policy_test_decide_every_generated_call_alike() {
    let w = world();
    let (plain, wrapped) = (guard(&w.setup), guard(&w.wrapped));
    let dir = std::fs::canonicalize(w.setup.dir.path()).unwrap();
    let mut runner = TestRunner::new(Cases {
        cases: 40,
        failure_persistence: None,
        ..Cases::default()
    });
    let cases = std::cell::RefCell::new(Vec::new());
    runner
        .run(&calls(&w.ws), |(server, tool, arguments, kind)| {
            let mut call = json!({"server": server, "tool": tool, "arguments": arguments});
            if let Some(k) = kind {
                call["kind"] = json!(k);
            }
            let explained = explain_binary(&dir, &w.setup.config, &call);
            // At run time the wrapped server is listed in the config `wrap` builds.
            let runtime = if kind.is_some() { &wrapped } else { &plain };
            let (verdict, _) = runtime.check(&server, &tool, None, &arguments);
            let runtime = decided(verdict);
            prop_assert_eq!(&explained, &runtime, "call {}", call);
            let mut all = cases.borrow_mut();
            let n = all.len();
            all.push(json!({
                "name": format!("case {n}"),
                "call": call,
                "expect": runtime["effect"],
                "rule": runtime["rule_id"].as_str().unwrap_or(""),
                "reason": runtime["reason"],
            }));
            Ok(())
        })
        .unwrap();
    let cases = cases.into_inner();
    let file = dir.join("cases.json");
    std::fs::write(&file, json!({ "cases": cases }).to_string()).unwrap();
    let out = Command::new(toolgate())
        .args(["policy", "test", "--config"])
        .arg(&w.setup.config)
        .arg("--cases")
        .arg(&file)
        .env("HOME", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{} cases: {} passed, 0 failed",
            cases.len(),
            cases.len()
        )),
        "{stdout}"
    );
}
