//! `toolgate demo`: a self-contained tour. It starts `toolgate serve` over the bundled fixture server, drives it
//! through the real stdio path with a scripted client in both protocol eras, shows the policy allowing, denying
//! and asking, and has a scripted operator approve the ask through the real admin command.
//!
//! Everything lives in a temporary directory (config, workspace, state) that is removed at the end.

use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
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

fn rpc(e: Value) -> anyhow::Error {
    anyhow::anyhow!("request failed: {e}")
}

async fn call(client: &StdioClient, name: &str, arguments: Value) -> anyhow::Result<Value> {
    client
        .request("tools/call", json!({"name": name, "arguments": arguments}))
        .await
        .map_err(rpc)
}

struct Demo {
    exe: PathBuf,
    dir: PathBuf,
    config: String,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the toolgate executable")?;
    let dir = std::env::temp_dir().join(format!("toolgate-demo-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("ws")).context("cannot create the demo directory")?;
    let config = json!({
        "mcpServers": {"demo": {"command": exe, "args": ["fixture-server", "--tools", "4", "--page-size", "5"]}},
        "limits": {"pageSize": 8},
        "workspace": dir.join("ws"),
        "stateDir": dir.join("state"),
        "approvals": {"wait_seconds": 30, "elicitation": false},
        "permissions": {
            "default": "ask",
            "allow": ["mcp__demo__echo", "mcp__demo__slow", "mcp__demo__rich", "mcp__demo__tool_*"],
            "deny": ["mcp__demo__crash"]
        }
    });
    let config_path = dir.join("toolgate.json");
    std::fs::write(&config_path, config.to_string()).context("cannot write the demo config")?;
    let demo = Demo {
        exe,
        config: config_path.to_string_lossy().into_owned(),
        dir: dir.clone(),
    };
    let result = crate::runtime::tokio()?.block_on(demo.tour());
    let _ = std::fs::remove_dir_all(&dir);
    result.map(|()| ExitCode::SUCCESS)
}

impl Demo {
    fn serve(&self) -> anyhow::Result<StdioClient> {
        Ok(StdioClient::spawn(
            &self.exe,
            &["serve", "--config", &self.config],
            &[],
            HashMap::new(),
        )?)
    }

    async fn tour(&self) -> anyhow::Result<()> {
        println!("toolgate demo: a scripted MCP client talks to `toolgate serve`, which fronts a bundled fixture server.");
        println!(
            "(config, workspace and state live in {} until the demo ends)\n",
            self.dir.display()
        );
        let mut client = self.gateway_tour().await?;
        self.policy_tour(&client).await?;
        if client.close(Duration::from_secs(10)).await.is_none() {
            bail!("toolgate did not exit after its client closed stdin");
        }
        println!("  stdin closed → toolgate ended its upstream's process group and exited\n");
        self.modern_tour().await?;
        println!("\nEverything above went through toolgate's real stdio path.");
        Ok(())
    }

    async fn gateway_tour(&self) -> anyhow::Result<StdioClient> {
        println!("[a 2025-11-25 client: initialize first]");
        let client = self.serve()?;
        let init = client
            .initialize("2025-11-25", json!({}))
            .await
            .map_err(rpc)?;
        let caps: Vec<&str> = init["capabilities"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let name = init["serverInfo"]["name"].as_str().unwrap_or("?");
        let version = init["protocolVersion"].as_str().unwrap_or("?");
        step(
            "initialize",
            format!("{name} speaks {version}; offers {}", caps.join(", ")),
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
        let echo = call(
            &client,
            "demo__echo",
            json!({"text": "hello through toolgate"}),
        )
        .await?;
        step("tools/call demo__echo", format!("{:?}", text_of(&echo)));
        let params = json!({"name": "demo__slow", "arguments": {"steps": 3, "delay_ms": 20}, "_meta": {"progressToken": "p1"}});
        let slow = client.request("tools/call", params).await.map_err(rpc)?;
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
        let rich = call(&client, "demo__rich", json!({})).await?;
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
        if !intact {
            bail!("the gateway lost fields");
        }
        let status = call(&client, "toolgate_status", json!({})).await?;
        step("tools/call toolgate_status", text_of(&status));
        Ok(client)
    }

    async fn policy_tour(&self, client: &StdioClient) -> anyhow::Result<()> {
        println!("\n[the policy decides every call: allow echo, slow, rich; deny crash; anything else asks a human]");
        let allowed = call(client, "demo__echo", json!({"text": "ok"})).await?;
        verdict("ALLOW", "demo__echo", &allowed);
        let denied = call(client, "demo__crash", json!({})).await?;
        verdict("DENY", "demo__crash", &denied);
        if denied["isError"] != true {
            bail!("the deny rule did not hold");
        }
        let held = call(client, "demo__add", json!({"a": 2, "b": 3}));
        let operator = self.operator();
        let (answer, approved) = tokio::join!(held, operator);
        let (answer, id) = (answer?, approved?);
        println!(
            "  ASK    {:<28} ← held; a scripted operator ran `toolgate approvals approve {id}`",
            "demo__add {a:2,b:3}"
        );
        println!(
            "         {:<28}   and approved it with the operator key → the call ran: structuredContent {}",
            "", answer["structuredContent"]
        );
        if answer["structuredContent"]["sum"] != 5.0 {
            bail!("the approved call did not return the upstream's result");
        }
        let alive = call(client, "demo__echo", json!({"text": "still up"})).await?;
        if text_of(&alive) != "still up" {
            bail!("the upstream did not survive");
        }
        println!("  the denied call never reached the upstream (it would have crashed it); the approval was single-use");
        Ok(())
    }

    /// Waits for the pending request, shows it, and approves it through `toolgate approvals approve`.
    async fn operator(&self) -> anyhow::Result<String> {
        for _ in 0..150 {
            let out = self.admin(&["approvals", "list", "--status", "pending"], None)?;
            if let Some(id) = out.split_whitespace().find(|w| w.starts_with("apr_")) {
                // The demo approves as the operator's script would: with the operator key, not a terminal.
                let key = store::operator_key_path(&self.dir.join("state"));
                let key = key.to_string_lossy();
                self.admin(&["approvals", "approve", id, "--operator-key", &key], None)?;
                return Ok(id.to_owned());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("no approval request appeared")
    }

    fn admin(&self, args: &[&str], input: Option<&str>) -> anyhow::Result<String> {
        let mut child = std::process::Command::new(&self.exe)
            .args(args)
            .args(["--config", &self.config])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let (Some(mut stdin), Some(text)) = (child.stdin.take(), input) {
            stdin.write_all(text.as_bytes())?;
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "toolgate {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    async fn modern_tour(&self) -> anyhow::Result<()> {
        println!("[a 2026-07-28 client: no handshake, _meta on every request]");
        let mut client = self.serve()?;
        let found = client
            .request("server/discover", json!({"_meta": modern_meta()}))
            .await
            .map_err(rpc)?;
        step(
            "server/discover",
            format!("supportedVersions {}", found["supportedVersions"]),
        );
        let params = json!({"name": "demo__echo", "arguments": {"text": "hello, stateless era"}, "_meta": modern_meta()});
        let echo = client.request("tools/call", params).await.map_err(rpc)?;
        step(
            "tools/call demo__echo",
            format!("resultType {}: {:?}", echo["resultType"], text_of(&echo)),
        );
        if client.close(Duration::from_secs(10)).await.is_none() {
            bail!("toolgate did not exit after its client closed stdin");
        }
        Ok(())
    }
}

/// One policy line: the effect toolgate applied and what the client saw.
fn verdict(effect: &str, tool: &str, result: &Value) {
    let said = if result["isError"] == true {
        let d = &result["structuredContent"]["decision"];
        let rule = d["rule_id"]
            .as_str()
            .map(|r| format!("rule {r}, "))
            .unwrap_or_default();
        format!("refused ({rule}{})", d["reason"].as_str().unwrap_or("?"))
    } else {
        format!("forwarded: {:?}", text_of(result))
    };
    println!("  {effect:<6} {tool:<28} ← {said}");
}
