//! How a call's arguments become the resources the policy decides on, end to end: paths resolved as the real
//! server-filesystem resolves them, every operation a call performs (moves, dry-run edits, listings) carried in
//! its resources, every argument of every tool classified (toolgate's own tools walked through the gateway, the
//! live server-filesystem catalog checked against its table), file URIs read one way, the state root unreadable,
//! and calls that can never run refused before anyone is asked.

use crate::support::{call, legacy, peers, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use test_support::{list_all, StdioClient};

/// `(error code, decision reason, rule id)` of a refused call, from its Contract V1 fields (always in `_meta`;
/// in `structuredContent` only where the tool's output schema admits them).
fn refusal(result: &Value) -> (String, String, String) {
    assert_eq!(result["isError"], true, "{result}");
    let s = &result["_meta"]["toolgate/contract"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        text(&s["error"]["code"]),
        text(&s["decision"]["reason"]),
        text(&s["decision"]["rule_id"]),
    )
}

fn server_filesystem() -> PathBuf {
    peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
}

/// A temporary directory `root` holding the workspace `root/ws` with `ws/pub/a.txt` and `ws/secret/key.txt`,
/// and server-filesystem `files` started on `dirs(root)`.
fn with_files(dirs: impl FnOnce(&Path) -> Vec<PathBuf>, policy: Value) -> Setup {
    Setup::with(|root| {
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("pub")).unwrap();
        std::fs::create_dir_all(ws.join("secret")).unwrap();
        std::fs::write(ws.join("pub/a.txt"), "public").unwrap();
        std::fs::write(ws.join("secret/key.txt"), "SECRET-KEY").unwrap();
        let mut args = vec![server_filesystem()];
        args.extend(dirs(root));
        let mut config = json!({
            "workspace": ws,
            "mcpServers": {"files": {"command": "node", "args": args}},
            "approvals": {"wait_seconds": 0, "elicitation": false},
        });
        if let Value::Object(m) = policy {
            for (k, v) in m {
                config[k] = v;
            }
        }
        config
    })
}

fn secret_denied() -> Value {
    json!({"permissions": {"default": "deny", "allow": ["Read(./**)", "Edit(./**)"],
                           "deny": ["Read(./secret/**)"]}})
}

async fn close(mut client: StdioClient) {
    // server-filesystem does not exit when its stdin closes: toolgate ends its process group after a grace period.
    assert!(client
        .close(std::time::Duration::from_secs(10))
        .await
        .is_some());
}

fn leaked(result: &Value) -> bool {
    result.to_string().contains("SECRET-KEY") || result.to_string().contains("key.txt")
}

#[tokio::test]
async fn relative_path_resolves_in_the_servers_first_directory_not_the_workspace() {
    // The server was started on the workspace's parent: `ws/secret/key.txt` is the secret, relative to it.
    let setup = with_files(|root| vec![root.to_path_buf()], secret_denied());
    let client = legacy(&setup).await;
    let result = call(
        &client,
        "files__read_text_file",
        json!({"path": "ws/secret/key.txt"}),
    )
    .await
    .unwrap();
    assert!(!leaked(&result), "{result}");
    assert_eq!(refusal(&result).1, "DENY_RULE");
    let dotted = call(
        &client,
        "files__read_text_file",
        json!({"path": "ws/pub/../secret/./key.txt"}),
    )
    .await
    .unwrap();
    assert_eq!(refusal(&dotted).1, "DENY_RULE", "{dotted}");
    close(client).await;
}

#[tokio::test]
async fn move_file_of_a_denied_file_is_denied() {
    let setup = with_files(|root| vec![root.join("ws")], secret_denied());
    let ws = setup.workspace();
    let client = legacy(&setup).await;
    let moved = call(
        &client,
        "files__move_file",
        json!({"source": ws.join("secret/key.txt"), "destination": ws.join("pub/key.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(refusal(&moved).1, "DENY_RULE", "{moved}");
    assert!(ws.join("secret/key.txt").exists() && !ws.join("pub/key.txt").exists());
    // Moving the denied directory's parent would carry it out from under its pattern.
    let parent = call(
        &client,
        "files__move_file",
        json!({"source": ws.join("secret"), "destination": ws.join("pub/s")}),
    )
    .await
    .unwrap();
    assert!(refusal(&parent).1.starts_with("DEN"), "{parent}");
    close(client).await;
}

#[tokio::test]
async fn edit_file_dry_run_of_a_denied_file_is_denied() {
    let setup = with_files(|root| vec![root.join("ws")], secret_denied());
    let ws = setup.workspace();
    let client = legacy(&setup).await;
    let edit = json!({"path": ws.join("secret/key.txt"), "dryRun": true,
                      "edits": [{"oldText": "SECRET", "newText": "x"}]});
    let result = call(&client, "files__edit_file", edit).await.unwrap();
    assert!(!leaked(&result), "{result}");
    assert_eq!(refusal(&result).1, "DENY_RULE");
    close(client).await;
}

#[tokio::test]
async fn directory_tree_and_search_of_an_ancestor_of_denied_files_do_not_list_them() {
    let setup = with_files(|root| vec![root.join("ws")], secret_denied());
    let ws = setup.workspace();
    let client = legacy(&setup).await;
    // A recursive listing would show names the deny rule hides: a human decides, and nothing runs before.
    let tree = call(&client, "files__directory_tree", json!({"path": ws}))
        .await
        .unwrap();
    assert!(!leaked(&tree), "{tree}");
    assert_eq!(
        tree["_meta"]["toolgate/contract"]["outcome"], "APPROVAL_REQUIRED",
        "{tree}"
    );
    let search = call(
        &client,
        "files__search_files",
        json!({"path": ws, "pattern": "**/*.txt"}),
    )
    .await
    .unwrap();
    assert!(!leaked(&search), "{search}");
    assert_eq!(
        search["_meta"]["toolgate/contract"]["outcome"], "APPROVAL_REQUIRED",
        "{search}"
    );
    let inside = call(
        &client,
        "files__list_directory",
        json!({"path": ws.join("secret")}),
    )
    .await
    .unwrap();
    assert!(!leaked(&inside), "{inside}");
    assert!(refusal(&inside).1.starts_with("DEN"), "{inside}");
    // A one-level listing of the workspace shows only `secret`, a name the policy itself spells out.
    let top = call(&client, "files__list_directory", json!({"path": ws}))
        .await
        .unwrap();
    assert_ne!(top["isError"], true, "{top}");
    close(client).await;
}

#[tokio::test]
async fn every_server_filesystem_tool_argument_is_classified() {
    let setup = with_files(
        |root| vec![root.join("ws")],
        json!({"permissions": {"default": "allow"}}),
    );
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let live: Vec<&Value> = tools
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("files__")))
        .collect();
    assert!(live.len() >= 10, "{tools:?}");
    for tool in live {
        let name = tool["name"].as_str().unwrap().trim_start_matches("files__");
        let known = policy::FILESYSTEM_ARGUMENTS
            .iter()
            .find(|(t, _)| *t == name)
            .map(|(_, args)| *args);
        let declared: Vec<&String> = tool["inputSchema"]["properties"]
            .as_object()
            .map(|p| p.keys().collect())
            .unwrap_or_default();
        match known {
            Some(args) => {
                for a in &declared {
                    assert!(
                        args.contains(&a.as_str()),
                        "{name}: argument {a} is not classified"
                    );
                }
            }
            // A tool the table does not know is `unknown`, whatever it is called.
            None => {
                let result = call(&client, &format!("files__{name}"), json!({}))
                    .await
                    .unwrap();
                assert_eq!(refusal(&result).1, "UNKNOWN_OPERATION", "{name}");
            }
        }
    }
    close(client).await;
}

#[tokio::test]
async fn every_own_tool_path_argument_reaches_the_policy_through_the_gateway() {
    let setup = Setup::with(|root| {
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("secret.d")).unwrap();
        json!({"workspace": ws, "approvals": {"wait_seconds": 0, "elicitation": false},
               "policy": {"default": "allow", "rules": [
                   {"id": "deny-secret", "effect": "deny", "paths": ["**/secret.d", "**/secret.d/**"]}]}})
    });
    let client = legacy(&setup).await;
    let mut walked = 0;
    for tool in builtin::tools() {
        for (i, probe) in tool.args.iter().enumerate() {
            let value = match probe.role {
                builtin::Role::Path(_) | builtin::Role::Cwd => json!("secret.d"),
                builtin::Role::Paths(_) => json!(["secret.d"]),
                builtin::Role::Patch => {
                    json!("--- /dev/null\n+++ b/secret.d/new.txt\n@@ -0,0 +1 @@\n+x\n")
                }
                _ => continue,
            };
            let mut args = json!({});
            for (j, other) in tool.args.iter().enumerate() {
                if j == i {
                    args[other.name] = value.clone();
                } else if other.required {
                    args[other.name] = match other.role {
                        builtin::Role::Program => json!("true"),
                        _ => json!("x"),
                    };
                }
            }
            let result = call(&client, tool.name, args.clone()).await.unwrap();
            assert_eq!(
                refusal(&result).2,
                "deny-secret",
                "{} {args}: {result}",
                tool.name
            );
            walked += 1;
        }
    }
    assert!(walked >= 7, "walked {walked} path arguments");
}

#[tokio::test]
async fn outside_target_is_refused_before_anyone_is_asked() {
    // No policy at all: every call of the own tools outside a read asks, and reads inside are allowed.
    let setup = Setup::with(|root| {
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", ws.join("passwd")).unwrap();
        json!({"workspace": ws, "approvals": {"wait_seconds": 0, "elicitation": false}})
    });
    let client = legacy(&setup).await;
    for path in [
        "passwd",
        "../x",
        "/proc/self/root/etc/passwd",
        "/etc/passwd",
        "a/../../x",
    ] {
        for (tool, args) in [
            ("filesystem_read_file", json!({"path": path})),
            (
                "filesystem_write_file",
                json!({"path": path, "content": "x"}),
            ),
            ("filesystem_list_directory", json!({"path": path})),
            ("git_diff", json!({"paths": [path]})),
        ] {
            let result = call(&client, tool, args).await.unwrap();
            assert_eq!(
                refusal(&result).0,
                "PATH_OUTSIDE_WORKSPACE",
                "{tool} {path}: {result}"
            );
        }
    }
}

#[tokio::test]
async fn file_uri_spellings_are_read_one_way_or_refused() {
    let setup = Setup::with(|root| {
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        json!({"workspace": ws, "mcpServers": {"fx": crate::support::fixture(&[])},
               "permissions": {"default": "allow", "deny": ["Read(./secret.txt)"]}})
    });
    let ws = setup.workspace();
    let client = legacy(&setup).await;
    let ws = ws.to_str().unwrap();
    for (uri, reason) in [
        (format!("file://localhost{ws}/secret.txt"), "DENY_RULE"),
        (format!("FILE://{ws}/secret.txt"), "DENY_RULE"),
        (format!("file://{ws}/secre%74.txt"), "DENY_RULE"),
        (
            format!("file://{ws}/sub/%2e%2e/secret.txt"),
            "UNKNOWN_OPERATION",
        ),
        (format!("file://evil{ws}/secret.txt"), "UNKNOWN_OPERATION"),
    ] {
        let err = client
            .request("resources/read", json!({"uri": uri}))
            .await
            .unwrap_err();
        assert_eq!(err["data"]["decision"]["reason"], reason, "{uri}: {err}");
    }
}

#[tokio::test]
async fn state_root_is_unreadable_through_every_tool() {
    let setup = Setup::with(|root| {
        let ws = root.join("ws");
        let state = root.join("state");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(state.join("approvals.txt"), "APPROVED-SNAPSHOT").unwrap();
        json!({"workspace": ws, "state_dir": state,
               "mcpServers": {"files": {"command": "node", "args": [server_filesystem(), ws, state]}},
               "permissions": {"default": "allow"}})
    });
    let state = std::fs::canonicalize(setup.dir.path())
        .unwrap()
        .join("state");
    let client = legacy(&setup).await;
    let read = call(
        &client,
        "files__read_text_file",
        json!({"path": state.join("approvals.txt")}),
    )
    .await
    .unwrap();
    assert!(!read.to_string().contains("APPROVED-SNAPSHOT"), "{read}");
    assert_eq!(refusal(&read).2, "builtin.protect-state");
    let list = call(&client, "files__list_directory", json!({"path": state}))
        .await
        .unwrap();
    assert!(refusal(&list).1.starts_with("DEN"), "{list}");
    let config = call(
        &client,
        "files__read_text_file",
        json!({"path": setup.config}),
    )
    .await
    .unwrap();
    assert_eq!(refusal(&config).2, "builtin.protect-config", "{config}");
    close(client).await;
}

#[tokio::test]
async fn own_tool_schemas_use_single_types() {
    let setup = Setup::with(|root| {
        std::fs::create_dir_all(root.join("ws")).unwrap();
        json!({"workspace": root.join("ws"), "approvals": {"wait_seconds": 0}})
    });
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    /// Checks one schema and the schemas nested in it (`properties`, `items`).
    fn walk(schema: &Value, at: &str) {
        if let Some(t) = schema.get("type") {
            assert!(t.is_string(), "{at}: type {t}");
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (k, child) in props {
                walk(child, &format!("{at}/{k}"));
            }
        }
        if let Some(items) = schema.get("items") {
            walk(items, &format!("{at}/items"));
        }
    }
    assert!(tools.len() >= 7);
    for tool in &tools {
        walk(
            &tool["inputSchema"],
            tool["name"].as_str().unwrap_or_default(),
        );
        walk(
            &tool["outputSchema"],
            tool["name"].as_str().unwrap_or_default(),
        );
    }
}

#[tokio::test]
async fn git_diff_paths_meet_a_read_deny() {
    let setup = Setup::with(|root| {
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join(".env"), "TOKEN=1").unwrap();
        json!({"workspace": ws, "approvals": {"wait_seconds": 0, "elicitation": false},
               "permissions": {"default": "allow", "deny": ["Read(**/.env)"]}})
    });
    let client = legacy(&setup).await;
    let result = call(&client, "git_diff", json!({"paths": [".env"]}))
        .await
        .unwrap();
    assert_eq!(refusal(&result).1, "DENY_RULE", "{result}");
}

#[tokio::test]
async fn a_valid_patch_is_decided_on_its_files_not_refused_as_unknown() {
    let setup = Setup::with(|root| {
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("a.txt"), "old\n").unwrap();
        json!({"workspace": ws, "approvals": {"wait_seconds": 0, "elicitation": false},
               "permissions": {"default": "deny", "allow": ["Read(./**)", "Edit(./a.txt)"]}})
    });
    let ws = setup.workspace();
    let client = legacy(&setup).await;
    let patch = |file: &str| format!("--- a/{file}\n+++ b/{file}\n@@ -1 +1 @@\n-old\n+new\n");
    let applied = call(
        &client,
        "filesystem_apply_patch",
        json!({"patch": patch("a.txt")}),
    )
    .await
    .unwrap();
    assert_ne!(applied["isError"], true, "{applied}");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "new\n");
    std::fs::write(ws.join("b.txt"), "old\n").unwrap();
    let other = call(
        &client,
        "filesystem_apply_patch",
        json!({"patch": patch("b.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(refusal(&other).1, "DEFAULT_DENY", "{other}");
}

#[tokio::test]
async fn client_roots_do_not_replace_a_filesystem_servers_directories() {
    let setup = with_files(
        |root| vec![root.join("ws")],
        json!({"permissions": {"default": "allow"}}),
    );
    let root = std::fs::canonicalize(setup.dir.path()).unwrap();
    let roots = json!({"roots": [{"uri": format!("file://{}", root.display())}]});
    let answers = std::collections::HashMap::from([("roots/list".to_owned(), roots)]);
    let client = setup.serve_with(answers, &[]);
    client
        .initialize("2025-11-25", json!({"roots": {"listChanged": true}}))
        .await
        .unwrap();
    // The server asks for the client's roots when told they changed; toolgate must not hand them over.
    client
        .notify("notifications/roots/list_changed", json!({}))
        .await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let dirs = call(&client, "files__list_allowed_directories", json!({}))
        .await
        .unwrap();
    let listed = crate::support::text(&dirs);
    let parent = root.display().to_string();
    assert!(listed.lines().all(|l| l.trim_end() != parent), "{listed}");
    assert!(listed.contains(&format!("{parent}/ws")), "{listed}");
    close(client).await;
}
