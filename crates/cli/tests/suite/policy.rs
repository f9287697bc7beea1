//! Every call is decided before it is forwarded: denials and fail-closed asks are explained results that never
//! reach the upstream; profiles hide tools; arguments must fit the schema; paths are judged canonical.

use crate::support::{call, fixture, legacy, peers, text, Setup};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use test_support::list_all;

fn refusal(result: &Value) -> (&Value, &Value, &Value) {
    assert_eq!(result["isError"], true, "{result}");
    // Always here; also in structuredContent only where the tool's outputSchema admits the V1 fields.
    let s = &result["_meta"]["toolgate/contract"];
    assert_eq!(s["outcome"], "REFUSED", "{result}");
    (
        &s["error"]["code"],
        &s["decision"]["reason"],
        &s["decision"]["rule_id"],
    )
}

#[tokio::test]
async fn denied_call_is_explained_and_never_reaches_the_upstream() {
    let setup = Setup::fixture(
        &[],
        // New tools are listed as they come, so "absent from the list" means "never added".
        json!({"permissions": {"default": "allow", "deny": ["mcp__fx__add_tool"]}, "pins": {"newTools": "accept"}}),
    );
    let client = legacy(&setup).await;
    let result = call(&client, "fx__add_tool", json!({"name": "smuggled"}))
        .await
        .unwrap();
    assert_eq!(
        refusal(&result),
        (
            &json!("DENY_RULE"),
            &json!("DENY_RULE"),
            &json!("mcp__fx__add_tool")
        )
    );
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(
        tools.iter().all(|t| t["name"] != "fx__smuggled"),
        "the upstream never ran the call"
    );
    assert_eq!(
        text(
            &call(&client, "fx__echo", json!({"text": "ok"}))
                .await
                .unwrap()
        ),
        "ok"
    );
}

/// Without a usable state directory there is no approval channel; toolgate refuses to start rather than serve
/// with every `ask` quietly refused.
#[test]
fn unusable_state_stops_startup_instead_of_dropping_the_approval_channel() {
    let setup = Setup::fixture(&[], json!({"permissions": {"default": "ask"}}));
    let out = std::process::Command::new(crate::support::toolgate())
        .args(["serve", "--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", "relative/state")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--workspace") && err.contains("absolute"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn no_policy_at_all_asks_but_status_still_works() {
    let setup =
        Setup::new(json!({"mcpServers": {"fx": fixture(&[])}, "approvals": {"wait_seconds": 0}}));
    let client = legacy(&setup).await;
    let result = call(&client, "fx__echo", json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(
        result["structuredContent"]["outcome"], "APPROVAL_REQUIRED",
        "{result}"
    );
    let status = call(&client, "toolgate_status", json!({})).await.unwrap();
    assert!(status.get("isError").is_none(), "{status}");
}

#[tokio::test]
async fn blocked_tool_is_hidden_from_the_list_and_refused_when_called_anyway() {
    let profiles = json!({"review": {"tools": {"blocked": ["fx__echo"]}}});
    let setup = Setup::fixture(&[], json!({"profiles": profiles, "profile": "review"}));
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    assert!(tools.iter().all(|t| t["name"] != "fx__echo"));
    assert!(tools.iter().any(|t| t["name"] == "fx__add"));
    let result = call(&client, "fx__echo", json!({"text": "x"}))
        .await
        .unwrap();
    assert_eq!(refusal(&result).1, "TOOL_HIDDEN");
}

#[tokio::test]
async fn arguments_outside_the_input_schema_are_refused_before_any_adapter_guesses() {
    let setup = Setup::fixture(&[], json!({}));
    let client = legacy(&setup).await;
    let result = call(
        &client,
        "fx__echo",
        json!({"text": {"path": "/etc/passwd"}}),
    )
    .await
    .unwrap();
    assert_eq!(refusal(&result).0, "INVALID_ARGUMENTS");
    let result = call(&client, "fx__add", json!({"a": 1})).await.unwrap();
    assert_eq!(refusal(&result).0, "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn mapped_path_argument_is_judged_after_symlinks_resolve() {
    let setup = Setup::with(|dir| {
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join("pub")).unwrap();
        std::os::unix::fs::symlink("/etc", ws.join("pub/escape")).unwrap();
        json!({
            "workspace": ws,
            "mcpServers": {"fx": fixture(&[])},
            "policy": {"mappings": [{"tool": "fx__reflect", "operation": "fs.read", "paths": ["path"]}]},
            "permissions": {"default": "deny", "allow": ["Read(./pub/**)", "mcp__fx__echo"]}
        })
    });
    let client = legacy(&setup).await;
    let ok = call(&client, "fx__reflect", json!({"path": "pub/notes.txt"}))
        .await
        .unwrap();
    assert!(ok.get("isError").is_none(), "{ok}");
    let escape = call(&client, "fx__reflect", json!({"path": "pub/escape/passwd"}))
        .await
        .unwrap();
    assert_eq!(
        refusal(&escape).1,
        "DEFAULT_DENY",
        "a symlink out of pub/ is judged where it leads"
    );
    let sibling = call(&client, "fx__reflect", json!({"path": "../ws-evil/x"}))
        .await
        .unwrap();
    assert_eq!(refusal(&sibling).1, "DEFAULT_DENY");
}

#[tokio::test]
async fn resource_reads_and_prompts_are_governed_too() {
    let permissions =
        json!({"default": "allow", "deny": ["mcp__fx__resources_read", "mcp__fx__prompts_get_*"]});
    let setup = Setup::fixture(&[], json!({"permissions": permissions}));
    let client = legacy(&setup).await;
    let err = client
        .request("resources/read", json!({"uri": "fixture://static/1"}))
        .await
        .unwrap_err();
    assert_eq!(
        err["data"]["decision"]["rule_id"], "mcp__fx__resources_read",
        "{err}"
    );
    let err = client
        .request(
            "prompts/get",
            json!({"name": "fx__greet", "arguments": {"name": "A"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err["data"]["decision"]["rule_id"], "mcp__fx__prompts_get_*",
        "{err}"
    );
}

#[tokio::test]
async fn real_filesystem_server_is_confined_by_canonical_path_rules() {
    let modules = peers().join("node_modules/@modelcontextprotocol");
    let setup = Setup::with(|dir| {
        let ws = dir.join("ws");
        std::fs::create_dir_all(ws.join("pub")).unwrap();
        std::fs::write(ws.join("pub/a.txt"), "public").unwrap();
        std::fs::write(ws.join("secret.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(ws.join("secret.txt"), ws.join("pub/link.txt")).unwrap();
        json!({
            "workspace": ws,
            "mcpServers": {"files": {"command": "node",
                                     "args": [modules.join("server-filesystem/dist/index.js"), ws]}},
            "permissions": {"default": "deny", "allow": ["Read(./pub/**)"], "deny": ["Read(**/.env)"]}
        })
    });
    let ws = setup.workspace();
    let client = legacy(&setup).await;
    let read = |p: std::path::PathBuf| json!({"path": p});
    let ok = call(&client, "files__read_text_file", read(ws.join("pub/a.txt")))
        .await
        .unwrap();
    assert_eq!(text(&ok), "public");
    let secret = call(
        &client,
        "files__read_text_file",
        read(ws.join("secret.txt")),
    )
    .await
    .unwrap();
    assert_eq!(refusal(&secret).1, "DEFAULT_DENY");
    let link = call(
        &client,
        "files__read_text_file",
        read(ws.join("pub/link.txt")),
    )
    .await
    .unwrap();
    assert_eq!(
        refusal(&link).1,
        "DEFAULT_DENY",
        "the symlink is judged by its target"
    );
    let write = call(
        &client,
        "files__write_file",
        json!({"path": ws.join("pub/new.txt"), "content": "x"}),
    )
    .await;
    assert_eq!(refusal(&write.unwrap()).1, "DEFAULT_DENY");
    assert!(!ws.join("pub/new.txt").exists());
    // server-filesystem does not exit when its stdin closes: toolgate ends its process group after a grace period.
    let mut client = client;
    assert!(
        client
            .close(std::time::Duration::from_secs(10))
            .await
            .is_some(),
        "toolgate exits"
    );
}
