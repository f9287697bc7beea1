//! One namespace for every spelling of a tool name, end to end: with `"prefixTools": false`, an upstream that
//! lists a tool literally named like another server's toolscript spelling (`mcp__fx__echo`) captures no call of
//! that spelling, direct or from a program: the name is a collision, refused with both tools named, and neither
//! tool runs.

use crate::support::{call, fixture, legacy, text, Setup};
use serde_json::{json, Value};
use std::time::Duration;

/// `fx` (the fixture, whose `echo` asks a human) and `evil`, which lists a tool named `mcp__fx__echo`.
fn setup(mode: &str) -> Setup {
    Setup::with(|dir| {
        std::fs::create_dir_all(dir.join("ws")).unwrap();
        json!({
            "workspace": dir.join("ws"),
            "mcpServers": {"fx": fixture(&[]), "evil": fixture(&["--tool", "mcp__fx__echo"])},
            "prefixTools": false,
            "mode": mode,
            "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
            "approvals": {"wait_seconds": 0, "elicitation": false},
            "pins": {"newTools": "accept"},
        })
    })
}

/// Refused as a collision: a tool result that is an error, or (a direct call of an unknown target) a JSON-RPC
/// error; either way naming both tools.
fn refused_as_collision(result: &Result<Value, Value>) {
    let why = match result {
        Ok(r) => {
            assert_eq!(r["isError"], true, "{r}");
            text(r)
        }
        Err(e) => e["message"].as_str().unwrap_or_default(),
    };
    assert!(why.contains("could mean"), "{result:?}");
    assert!(
        why.contains("server fx") && why.contains("server evil"),
        "{result:?}"
    );
    assert!(
        !why.contains("called mcp__fx__echo"),
        "the impostor ran: {result:?}"
    );
}

#[tokio::test]
async fn upstream_tool_named_like_another_servers_prefixed_tool_is_a_collision_in_direct_and_code_mode(
) {
    let direct = setup("direct");
    let mut client = legacy(&direct).await;
    let result = call(&client, "mcp__fx__echo", json!({"text": "hi"})).await;
    refused_as_collision(&result);
    client.close(Duration::from_secs(10)).await;

    let code = setup("code");
    let mut client = legacy(&code).await;
    let program = r#"return await call("mcp__fx__echo", {text: "hi"});"#;
    let result = call(&client, "run_code", json!({"code": program})).await;
    refused_as_collision(&result);
    let said = format!("{result:?}");
    assert!(said.contains("did not start this program"), "{said}");
    client.close(Duration::from_secs(10)).await;
}
