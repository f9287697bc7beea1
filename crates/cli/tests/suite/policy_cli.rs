//! The policy command line: `policy init | check | explain | test` and `preview`, run as the real binary.
//! User-visible text is compared with insta snapshots (`snapshots/`, temporary paths replaced by `[TMP]`); the
//! cases files the tests read are in `tests/fixtures/policy_cli/`.

use crate::support::{fixture, toolgate, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use test_support::{list_all, StdioClient};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs toolgate in `dir` (also its HOME, so no test reads the real home) and replaces `dir` in the output.
fn run_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = Command::new(toolgate())
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("TOOLGATE_STATE_DIR", dir.join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    let clean = |b: &[u8]| String::from_utf8_lossy(b).replace(&*dir.to_string_lossy(), "[TMP]");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: clean(&out.stdout),
        stderr: clean(&out.stderr),
    }
}

fn run(setup: &Setup, args: &[&str]) -> Run {
    let root = std::fs::canonicalize(setup.dir.path()).unwrap();
    let config = setup.config.to_str().unwrap();
    let mut all = args.to_vec();
    all.extend(["--config", config]);
    run_in(&root, &all, None)
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/policy_cli")
}

/// A fixture upstream whose `reflect` tool reads `path` (by mapping), a workspace with `pub/escape` linking to
/// `/etc`, reads of `pub` allowed and reads of `/etc` denied.
fn reads_setup() -> Setup {
    Setup::with(|dir| {
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join("pub")).unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("pub/escape")).unwrap();
        json!({
            "workspace": ws,
            "mcpServers": {"fx": fixture(&[])},
            "policy": {"mappings": [{"tool": "fx__reflect", "operation": "fs.read", "paths": ["path"]}]},
            "permissions": {"default": "deny", "allow": ["Read(./pub)"], "deny": ["Read(//etc)"]}
        })
    })
}

#[test]
fn init_writes_the_starter_policy_and_never_overwrites_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let first = run_in(&root, &["policy", "init"], None);
    assert_eq!((first.code, first.stderr.as_str()), (0, ""));
    insta::assert_snapshot!("init", &first.stdout);
    let written = std::fs::read_to_string(root.join("toolgate.toml")).unwrap();
    assert_eq!(written, policy::STARTER_POLICY);

    std::fs::write(root.join("mine.toml"), "# my own\n").unwrap();
    for args in [
        &["policy", "init"][..],
        &["policy", "init", "--path", "mine.toml"],
    ] {
        let again = run_in(&root, args, None);
        assert_ne!(again.code, 0, "{}", again.stdout);
        assert!(
            again.stderr.contains("already exists; not overwriting it"),
            "{}",
            again.stderr
        );
    }
    assert_eq!(
        std::fs::read_to_string(root.join("toolgate.toml")).unwrap(),
        written
    );
    assert_eq!(
        std::fs::read_to_string(root.join("mine.toml")).unwrap(),
        "# my own\n"
    );
}

#[tokio::test]
async fn the_starter_policy_passes_check_and_serve_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(run_in(&root, &["policy", "init"], None).code, 0);
    let check = run_in(
        &root,
        &["policy", "check", "--config", "toolgate.toml"],
        None,
    );
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    insta::assert_snapshot!("check_starter", &check.stdout);

    // The file is a whole config: served as written, and with an upstream table added below the policy.
    let path = root.join("toolgate.toml");
    let ws = root.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let state = root.join("state");
    let exe = toolgate();
    let serve = || {
        let args = [
            "serve",
            "--config",
            path.to_str().unwrap(),
            "--workspace",
            ws.to_str().unwrap(),
        ];
        let env = [("TOOLGATE_STATE_DIR", state.to_str().unwrap())];
        StdioClient::spawn(&exe, &args, &env, Default::default()).unwrap()
    };
    let names = |tools: Vec<Value>| -> Vec<String> {
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let client = serve();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let tools = names(
        list_all(&client, "tools/list", "tools", None)
            .await
            .unwrap(),
    );
    assert!(tools.iter().any(|t| t == "toolgate_status"), "{tools:?}");

    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "\n[mcp_servers.fx]\ncommand = {:?}\nargs = [\"fixture-server\"]\n",
        exe.to_str().unwrap()
    ));
    std::fs::write(&path, text).unwrap();
    let client = serve();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let tools = names(
        list_all(&client, "tools/list", "tools", None)
            .await
            .unwrap(),
    );
    assert!(tools.iter().any(|t| t == "fx__echo"), "{tools:?}");
}

#[test]
fn check_reports_shadowed_rules_even_by_built_in_ones_and_a_duplicate_id() {
    let setup = Setup::new(json!({
        "policy": {"rules": [
            {"id": "dup", "effect": "allow", "operations": ["git.read"]},
            {"id": "dup", "effect": "ask", "operations": ["git.remote"]}
        ]},
        "permissions": {
            "default": "ask",
            "deny": ["Read(./src)"],
            "allow": ["Read(./src/generated)", "Edit(./.git/hooks)"]
        }
    }));
    let out = run(&setup, &["policy", "check"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    insta::assert_snapshot!("check_problems", &out.stdout);
}

#[test]
fn check_says_when_there_is_no_policy_at_all() {
    let setup = Setup::new(json!({"mcpServers": {}}));
    let out = run(&setup, &["policy", "check"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("check_no_policy", &out.stdout);
}

#[test]
fn explain_shows_the_deciding_rule_of_an_allowed_call() {
    let setup = reads_setup();
    let root = std::fs::canonicalize(setup.dir.path()).unwrap();
    let call = r#"{"server": "fx", "tool": "reflect", "arguments": {"path": "pub/notes.txt"}}"#;
    let config = setup.config.to_str().unwrap();
    let out = run_in(
        &root,
        &["policy", "explain", "--config", config, "--call", "-"],
        Some(call),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("explain_allowed", &out.stdout);
}

#[test]
fn explain_judges_a_symlink_out_of_an_allowed_directory_by_its_target() {
    let setup = reads_setup();
    let call = setup.dir.path().join("call.json");
    std::fs::write(
        &call,
        r#"{"server": "fx", "tool": "reflect", "arguments": {"path": "pub/escape/passwd"}}"#,
    )
    .unwrap();
    let call = call.to_str().unwrap();
    let out = run(&setup, &["policy", "explain", "--call", call]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("explain_denied", &out.stdout);

    let json = run(&setup, &["policy", "explain", "--json", "--call", call]);
    let e: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        (&e["decision"], &e["action"]["paths"]),
        (
            &json!({"effect": "deny", "reason": "DENY_RULE", "rule_id": "Read(//etc)", "rule_at": "toolgate.json:28",
                    "operation": "fs.read", "unknown": null}),
            &json!(["/etc/passwd"])
        )
    );
}

#[test]
fn explain_refuses_a_kind_that_contradicts_the_config() {
    let setup = reads_setup();
    let root = std::fs::canonicalize(setup.dir.path()).unwrap();
    let call = r#"{"server": "fx", "tool": "read_file", "kind": "filesystem", "arguments": {}}"#;
    let config = setup.config.to_str().unwrap();
    let out = run_in(
        &root,
        &["policy", "explain", "--config", config, "--call", "-"],
        Some(call),
    );
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains(
            "the call says server \"fx\" is of kind filesystem, but the config makes it generic"
        ),
        "{}",
        out.stderr
    );
}

/// A `wrap` setup: the config lists no server, the call names the wrapped one and says its kind, and explain
/// reaches the decision `serve` reaches for it (the starter's `deny-dotenv`), not the default.
#[test]
fn explain_of_a_wrapped_server_uses_the_kind_the_call_gives() {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({
            "workspace": dir.join("ws"),
            "policy": {"default": "ask", "rules": [
                {"id": "deny-dotenv", "effect": "deny", "operations": ["fs.read"], "paths": ["**/.env"]}
            ]}
        })
    });
    let root = std::fs::canonicalize(setup.dir.path()).unwrap();
    let config = setup.config.to_str().unwrap();
    let explain = |call: &str| {
        run_in(
            &root,
            &["policy", "explain", "--config", config, "--call", "-"],
            Some(call),
        )
    };
    let env = root.join("ws/.env");
    let call = |kind: &str| {
        json!({"server": "server-filesystem", "tool": "read_file", "arguments": {"path": env}})
            .as_object()
            .cloned()
            .map(|mut m| {
                if !kind.is_empty() {
                    m.insert("kind".into(), json!(kind));
                }
                Value::Object(m).to_string()
            })
            .unwrap()
    };
    let with_kind = explain(&call("filesystem"));
    assert_eq!(with_kind.code, 0, "{}", with_kind.stderr);
    insta::assert_snapshot!("explain_wrapped", &with_kind.stdout);
    let without = explain(&call(""));
    assert!(
        without.stdout.contains("give `kind` in the call")
            && without.stdout.contains("DEFAULT_ASK"),
        "{}",
        without.stdout
    );
}

#[test]
fn test_passes_correct_cases_and_shows_a_diff_for_a_wrong_expectation() {
    let setup = reads_setup();
    let cases = fixtures().join("cases.json");
    let ok = run(
        &setup,
        &["policy", "test", "--cases", cases.to_str().unwrap()],
    );
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    insta::assert_snapshot!("test_pass", &ok.stdout);

    let wrong = fixtures().join("cases_wrong.toml");
    let bad = run(
        &setup,
        &["policy", "test", "--cases", wrong.to_str().unwrap()],
    );
    assert_eq!(bad.code, 1, "{}{}", bad.stdout, bad.stderr);
    insta::assert_snapshot!("test_fail", &bad.stdout);
}

fn surface_row<'a>(surface: &'a Value, name: &str) -> &'a Value {
    surface["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {surface}"))
}

#[test]
fn preview_shows_a_profile_s_blocked_deferred_visible_and_unavailable_tools() {
    let setup = Setup::fixture(
        &[],
        json!({
            "mcpServers": {"fx": fixture(&[]), "gone": {"command": "/nonexistent/toolgate-test-server"}},
            "permissions": {"default": "ask", "deny": ["mcp__fx__add"]},
            "profiles": {"review": {"tools": {"blocked": ["fx__echo"], "deferred": ["fx__rich"]}}}
        }),
    );
    let out = run(&setup, &["preview", "--profile", "review", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let surface: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(surface["profile"], "review");
    let row = |name: &str| {
        let r = surface_row(&surface, name);
        (
            r["visibility"].clone(),
            r["reason"].clone(),
            r["rule_id"].clone(),
        )
    };
    assert_eq!(
        row("fx__echo"),
        (json!("blocked"), json!("PROFILE_BLOCKED"), json!(null))
    );
    assert_eq!(
        row("fx__add"),
        (json!("blocked"), json!("DENY_RULE"), json!("mcp__fx__add"))
    );
    // Where the deny was written, as refusals name it.
    let at = surface_row(&surface, "fx__add")["rule_at"].clone();
    assert!(
        at.as_str().is_some_and(|a| a.starts_with("toolgate.json:")),
        "{at}"
    );
    assert_eq!(
        row("fx__rich"),
        (json!("deferred"), json!("PROFILE_DEFERRED"), json!(null))
    );
    assert_eq!(
        row("fx__reflect"),
        (json!("visible"), json!("PROFILE_DEFAULT"), json!(null))
    );
    assert_eq!(
        row("gone__*"),
        (
            json!("unavailable"),
            json!("SERVER_UNAVAILABLE"),
            json!(null)
        )
    );

    let table = run(&setup, &["preview", "--profile", "review"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let line = |name: &str| {
        let found = table
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")));
        found
            .unwrap_or_else(|| panic!("no {name} in\n{}", table.stdout))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(table.stdout.lines().next(), Some("profile: review"));
    assert_eq!(
        line("fx__echo"),
        ["fx__echo", "blocked", "PROFILE_BLOCKED", "-"]
    );
    assert_eq!(
        line("fx__reflect"),
        ["fx__reflect", "visible", "PROFILE_DEFAULT", "-"]
    );
}

#[test]
fn check_reports_a_toolscript_list_whose_meaning_changes_under_deny_overrides() {
    let setup = Setup::new(json!({
        "mcpServers": {"x": {"command": "x-mcp"}},
        "policy": [
            {"match": "mcp__x__*", "action": "allow"},
            {"match": "mcp__x__delete", "action": "deny"},
            {"match": "mcp__y__*", "action": "allow"}
        ]
    }));
    let out = run(&setup, &["policy", "check"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    insta::assert_snapshot!("check_toolscript_order", &out.stdout);
}

/// `preview` shows visible exactly what a client's `tools/list` gives, for each profile and mode: toolgate's own
/// tools included, code mode listing only its own, and a profile that blocks by default warned that it hides the
/// tools an agent follows an approval with.
#[tokio::test]
async fn preview_equals_the_client_s_tools_list_for_each_profile_and_mode() {
    let profiles = json!({
        "review": {"tools": {"blocked": ["fx__echo"], "deferred": ["fx__rich"]}},
        "locked": {"tools": {"default": "blocked", "visible": ["fx__echo"]}},
        "coder": {"mode": "code"}
    });
    for profile in [None, Some("review"), Some("locked"), Some("coder")] {
        let setup = Setup::with(|dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            let mut config = json!({"workspace": dir.join("ws"), "mcpServers": {"fx": fixture(&[])},
                                    "permissions": {"default": "allow"}, "profiles": profiles});
            if let Some(p) = profile {
                config["profile"] = json!(p);
            }
            config
        });
        let out = run(&setup, &["preview", "--json"]);
        assert_eq!(out.code, 0, "{profile:?}: {}", out.stderr);
        let surface: Value = serde_json::from_str(&out.stdout).unwrap();
        let mut previewed: Vec<String> = surface["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["visibility"] == "visible")
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        let client = setup.serve();
        client.initialize("2025-11-25", json!({})).await.unwrap();
        let mut listed: Vec<String> = list_all(&client, "tools/list", "tools", None)
            .await
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        previewed.sort();
        listed.sort();
        assert_eq!(previewed, listed, "profile {profile:?}: {}", out.stderr);
        // A profile that blocks by default hides toolgate's own tools too, and is warned of it.
        assert_eq!(
            listed.iter().any(|t| t == "toolgate_resume"),
            profile != Some("locked"),
            "{profile:?}: {listed:?}"
        );
        let warned = out
            .stderr
            .contains("warning: this profile hides toolgate_request_status");
        assert_eq!(
            warned,
            profile == Some("locked"),
            "{profile:?}: {}",
            out.stderr
        );
        if warned {
            let warnings: Vec<&str> = out
                .stderr
                .lines()
                .filter(|l| l.starts_with("warning:"))
                .collect();
            insta::assert_snapshot!("preview_hides_approval_tools", warnings.join("\n"));
        }
        if profile == Some("coder") {
            assert!(!listed.iter().any(|t| t.starts_with("fx__")), "{listed:?}");
            assert_eq!(surface_row(&surface, "fx__echo")["reason"], "CODE_MODE");
        }
    }
}

/// What omitting `default` means: no policy at all asks, permission strings alone ask as Claude Code does when no
/// rule matches, and a structured `policy` section without `default` denies.
#[test]
fn omitting_default_asks_for_permission_strings_and_denies_for_a_structured_policy() {
    let decide = |policy: Value| {
        let setup = Setup::with(|dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            let mut config =
                json!({"workspace": dir.join("ws"), "mcpServers": {"fx": fixture(&[])}});
            if let Value::Object(m) = policy {
                config.as_object_mut().unwrap().extend(m);
            }
            config
        });
        let root = std::fs::canonicalize(setup.dir.path()).unwrap();
        let config = setup.config.to_str().unwrap();
        let out = run_in(
            &root,
            &[
                "policy", "explain", "--json", "--config", config, "--call", "-",
            ],
            Some(r#"{"server": "fx", "tool": "echo", "arguments": {"text": "hi"}}"#),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let e: Value = serde_json::from_str(&out.stdout).unwrap();
        e["decision"]["reason"].as_str().unwrap().to_owned()
    };
    assert_eq!(decide(json!({})), "DEFAULT_ASK");
    assert_eq!(
        decide(json!({"permissions": {"deny": ["Read(**/.env)"]}})),
        "DEFAULT_ASK"
    );
    assert_eq!(
        decide(json!({"policy": {"rules": [{"id": "r", "effect": "deny", "paths": ["**/.env"]}]}})),
        "DEFAULT_DENY"
    );
    assert_eq!(
        decide(json!({"policy": {"default": "ask"}, "permissions": {"deny": ["Read(**/.env)"]}})),
        "DEFAULT_ASK"
    );
}

/// `--config` (like `--workspace` and `--profile`) works before or after a subcommand of every command, and
/// `report` groups by tool unless told otherwise.
#[test]
fn global_flags_work_before_and_after_the_subcommand_and_report_has_a_default_grouping() {
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({"workspace": dir.join("ws"), "permissions": {"default": "ask"}})
    });
    let root = std::fs::canonicalize(setup.dir.path()).unwrap();
    let config = setup.config.to_str().unwrap();
    for args in [
        vec!["approvals", "--config", config, "list"],
        vec!["approvals", "list", "--config", config],
        vec!["audit", "--config", config, "verify"],
        vec!["audit", "tail", "--config", config],
        vec!["pins", "--config", config, "list"],
        vec!["pins", "list", "--config", config],
        vec!["report", "--config", config],
    ] {
        let out = run_in(&root, &args, None);
        assert_eq!(out.code, 0, "{args:?}: {}{}", out.stdout, out.stderr);
    }
}

/// A server that starts and never answers the handshake is shown with why, and a long name keeps the columns.
#[test]
fn doctor_says_why_a_hung_server_is_still_starting() {
    let name = "a-server-with-a-name-longer-than-the-column";
    let setup = Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({"workspace": dir.join("ws"),
               "mcpServers": {name: {"command": "sleep", "args": ["30"], "startup_timeout_sec": 1}}})
    });
    let out = run(&setup, &["doctor"]);
    assert_ne!(out.code, 0, "a hung server is a problem");
    let line = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("upstreams:"))
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    insta::assert_snapshot!("doctor_hung_server", line);
}
