//! Start-up and listing of a very large catalog through toolgate: how soon `initialize` is answered, how long
//! the first complete `tools/list` walk takes (it includes the upstream loading its catalog), and how long a
//! later walk takes once everything is loaded. A second run adds a silent upstream that never answers, to show
//! it delays neither `initialize` nor the other server's tools.
//!
//! Run: `cargo bench -p toolgate --bench catalog` (optional: `-- --tools 50000`). `serve` always has state (it
//! refuses to start without), so every run pins every definition in the store.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use test_support::StdioClient;

fn toolgate() -> PathBuf {
    common::toolgate()
}

/// Every tool name of one complete walk of `tools/list`.
async fn walk(client: &StdioClient) -> (usize, usize) {
    let mut tools = 0;
    let mut pages = 0;
    let mut cursor: Option<Value> = None;
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let page = client.request("tools/list", params).await.unwrap();
        pages += 1;
        tools += page["tools"].as_array().unwrap().len();
        match page.get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => return (tools, pages),
        }
    }
}

async fn run(dir: &Path, tools: usize, silent: bool) {
    let mut servers = json!({"big": {"command": toolgate(),
        "args": ["fixture-server", "--tools", tools.to_string(), "--page-size", "5000"]}});
    if silent {
        servers["mute"] = json!({"command": toolgate(), "args": ["fixture-server", "--silent"]});
    }
    let state = dir.join(if silent { "state-silent" } else { "state" });
    let body = json!({"mcpServers": servers, "permissions": {"default": "allow"},
        "stateDir": state, "workspace": dir.join("ws")});
    let config = dir.join("catalog.json");
    std::fs::write(&config, body.to_string()).unwrap();
    let config = config.to_str().unwrap().to_owned();

    let t = Instant::now();
    let mut client = StdioClient::spawn(
        &toolgate(),
        &["serve", "--config", &config],
        &[],
        HashMap::new(),
    )
    .unwrap();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    let init = t.elapsed();
    let (first_tools, _) = walk(&client).await;
    let first = t.elapsed();
    // Wait until the whole catalog is merged (the first walk may have stopped waiting for it).
    let mut listed = first_tools;
    while listed < tools {
        tokio::time::sleep(Duration::from_millis(200)).await;
        listed = walk(&client).await.0;
    }
    let ready = t.elapsed();
    let t2 = Instant::now();
    let (n, pages) = walk(&client).await;
    let later = t2.elapsed();
    let label = if silent {
        "with a silent upstream"
    } else {
        "alone"
    };
    println!("{tools} tools, {label}:");
    println!(
        "  initialize answered after      {:>8.3} s",
        init.as_secs_f64()
    );
    println!(
        "  first tools/list walk done at  {:>8.3} s ({first_tools} tools)",
        first.as_secs_f64()
    );
    println!(
        "  whole catalog listed at        {:>8.3} s",
        ready.as_secs_f64()
    );
    println!(
        "  later walk: {n} tools in {pages} pages, {:>8.3} s",
        later.as_secs_f64()
    );
    client.close(Duration::from_secs(30)).await;
}

fn main() {
    let tools: usize = common::number("--tools", 50_000);
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        run(dir.path(), tools, false).await;
        run(dir.path(), tools, true).await;
    });
}
