//! `toolgate demo`: a self-contained tour. It starts `toolgate serve` over the bundled fixture server, drives it
//! through the real stdio path with a scripted client in both protocol eras, and prints what happened.

use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;
use test_support::{list_all, modern_meta, StdioClient};

/// Run a short scripted session through toolgate and print the transcript.
#[derive(clap::Args)]
pub struct Args {}

fn step(call: &str, answer: impl std::fmt::Display) {
    println!("  → {call:<34} ← {answer}");
}

fn text_of(result: &Value) -> String {
    result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the toolgate executable")?;
    let config_path =
        std::env::temp_dir().join(format!("toolgate-demo-{}.json", std::process::id()));
    let config = json!({
        "mcpServers": {"demo": {"command": exe, "args": ["fixture-server", "--tools", "4", "--page-size", "5"]}},
        "limits": {"pageSize": 8},
        "permissions": {
            "default": "ask",
            "allow": ["mcp__demo__echo", "mcp__demo__add", "mcp__demo__slow", "mcp__demo__rich", "mcp__demo__tool_*"],
            "deny": ["mcp__demo__crash"]
        }
    });
    std::fs::write(&config_path, config.to_string()).context("cannot write the demo config")?;
    let result = crate::runtime::tokio()?.block_on(tour(&exe, &config_path));
    let _ = std::fs::remove_file(&config_path);
    result.map(|()| ExitCode::SUCCESS)
}

async fn tour(exe: &std::path::Path, config: &std::path::Path) -> anyhow::Result<()> {
    let config = config.to_str().context("temporary path is not UTF-8")?;
    let args = ["serve", "--config", config];
    println!("toolgate demo: a scripted MCP client talks to `toolgate serve`, which fronts a bundled fixture server.\n");

    println!("[a 2025-11-25 client: initialize first]");
    let mut client = StdioClient::spawn(exe, &args, &[], HashMap::new())?;
    let init = client
        .initialize("2025-11-25", json!({}))
        .await
        .map_err(rpc)?;
    let caps: Vec<&str> = init["capabilities"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    step(
        "initialize",
        format!(
            "{} speaks {}; offers {}",
            init["serverInfo"]["name"].as_str().unwrap_or("?"),
            init["protocolVersion"].as_str().unwrap_or("?"),
            caps.join(", ")
        ),
    );
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .map_err(rpc)?;
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .take(4)
        .collect();
    step(
        "tools/list (every page)",
        format!("{} tools: {}, …", tools.len(), names.join(", ")),
    );
    let echo = client
        .request(
            "tools/call",
            json!({"name": "demo__echo", "arguments": {"text": "hello through toolgate"}}),
        )
        .await
        .map_err(rpc)?;
    step("tools/call demo__echo", format!("{:?}", text_of(&echo)));
    let add = client
        .request(
            "tools/call",
            json!({"name": "demo__add", "arguments": {"a": 2, "b": 3}}),
        )
        .await
        .map_err(rpc)?;
    step(
        "tools/call demo__add {a:2,b:3}",
        format!("structuredContent {}", add["structuredContent"]),
    );
    let slow = client
        .request("tools/call", json!({"name": "demo__slow", "arguments": {"steps": 3, "delay_ms": 20}, "_meta": {"progressToken": "p1"}}))
        .await
        .map_err(rpc)?;
    let progress = client
        .notifications()
        .iter()
        .filter(|n| n["params"]["progressToken"] == "p1")
        .count();
    step(
        "tools/call demo__slow (progress)",
        format!(
            "{progress} progress notifications, then {:?}",
            text_of(&slow)
        ),
    );
    let rich = client
        .request("tools/call", json!({"name": "demo__rich", "arguments": {}}))
        .await
        .map_err(rpc)?;
    let intact = rich["x-extra"] == 7
        && rich["_meta"]["com.example/trace"] == "abc"
        && rich["structuredContent"]["answer"] == 42;
    step(
        "tools/call demo__rich",
        if intact {
            "structuredContent, _meta and unknown fields arrived intact"
        } else {
            "FIELDS WERE LOST"
        },
    );
    let status = client
        .request(
            "tools/call",
            json!({"name": "toolgate_status", "arguments": {}}),
        )
        .await
        .map_err(rpc)?;
    step("tools/call toolgate_status", text_of(&status));
    println!("\n[the policy decides every call: allow echo, add, slow, rich; deny crash; anything else asks]");
    let allowed = call(&client, "demo__echo", json!({"text": "ok"})).await?;
    verdict("ALLOW", "demo__echo", &allowed);
    let denied = call(&client, "demo__crash", json!({})).await?;
    verdict("DENY", "demo__crash", &denied);
    let asked = call(&client, "demo__fail", json!({})).await?;
    verdict("ASK", "demo__fail", &asked);
    let alive = call(&client, "demo__echo", json!({"text": "still up"})).await?;
    if text_of(&alive) != "still up" || denied["isError"] != true || asked["isError"] != true {
        bail!("the policy did not decide as configured");
    }
    println!("  the denied call never reached the upstream (it would have crashed it); no approval channel\n  exists yet, so the ASK failed closed");
    if client.close(Duration::from_secs(10)).await.is_none() {
        bail!("toolgate did not exit after its client closed stdin");
    }
    println!("  stdin closed → toolgate ended its upstream's process group and exited\n");

    println!("[a 2026-07-28 client: no handshake, _meta on every request]");
    let mut client = StdioClient::spawn(exe, &args, &[], HashMap::new())?;
    let found = client
        .request("server/discover", json!({"_meta": modern_meta()}))
        .await
        .map_err(rpc)?;
    step(
        "server/discover",
        format!("supportedVersions {}", found["supportedVersions"]),
    );
    let echo = client
        .request("tools/call", json!({"name": "demo__echo", "arguments": {"text": "hello, stateless era"}, "_meta": modern_meta()}))
        .await
        .map_err(rpc)?;
    step(
        "tools/call demo__echo",
        format!("resultType {}: {:?}", echo["resultType"], text_of(&echo)),
    );
    if !intact || client.close(Duration::from_secs(10)).await.is_none() {
        bail!("the demo did not go as expected");
    }
    println!("\nEverything above went through toolgate's real stdio path.");
    Ok(())
}

/// One policy line: the effect toolgate applied and what the client saw.
fn verdict(effect: &str, tool: &str, result: &Value) {
    let refused = result["isError"] == true;
    let said = if refused {
        let d = &result["structuredContent"]["decision"];
        let rule = d["rule_id"]
            .as_str()
            .map(|r| format!("rule {r}, "))
            .unwrap_or_default();
        format!(
            "refused ({rule}{}): {}",
            d["reason"].as_str().unwrap_or("?"),
            result["structuredContent"]["error"]["code"]
                .as_str()
                .unwrap_or("?")
        )
    } else {
        format!("forwarded: {:?}", text_of(result))
    };
    println!("  {effect:<6} {tool:<28} ← {said}");
}

fn rpc(e: Value) -> anyhow::Error {
    anyhow::anyhow!("request failed: {e}")
}

async fn call(client: &StdioClient, name: &str, arguments: Value) -> anyhow::Result<Value> {
    client
        .request("tools/call", json!({"name": name, "arguments": arguments}))
        .await
        .map_err(rpc)
}
