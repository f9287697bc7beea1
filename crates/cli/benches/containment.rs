//! The cost of containing an stdio upstream: start-up (toolgate started until the upstream's tools are listed)
//! and per-call latency of `tools/call echo` on the bundled fixture server, contained (the default) against the
//! same server with `"sandbox": {"enabled": false}`, in one run with the arms interleaved.
//!
//! Run: `cargo bench -p toolgate --bench containment` (optional: `-- --starts 10 --calls 5000`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};
use test_support::StdioClient;

const WARMUP: usize = 500;
/// Calls per arm in one block; the blocks alternate between the arms.
const BLOCK: usize = 500;

fn config(dir: &Path, contained: bool) -> String {
    let arm = if contained { "contained" } else { "plain" };
    let mut entry = json!({"command": common::toolgate(), "args": ["fixture-server"]});
    if !contained {
        entry["sandbox"] = json!({"enabled": false});
    }
    let body = json!({
        "mcpServers": {"fx": entry},
        "permissions": {"default": "deny", "allow": ["mcp__fx__echo"]},
        "stateDir": dir.join(format!("state-{arm}")),
        "workspace": dir.join("ws"),
    });
    let path = dir.join(format!("{arm}.json"));
    std::fs::write(&path, body.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

async fn start(config: &str) -> StdioClient {
    let client = StdioClient::spawn(
        &common::toolgate(),
        &["serve", "--config", config],
        &[],
        HashMap::new(),
    )
    .unwrap();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    client
}

/// Milliseconds from spawning toolgate until its first `tools/list` shows the upstream's `echo`.
async fn startup(config: &str) -> f64 {
    let t = Instant::now();
    let mut client = start(config).await;
    let list = client.request("tools/list", json!({})).await.unwrap();
    let tools = list["tools"].as_array().cloned().unwrap_or_default();
    assert!(
        tools.iter().any(|t| t["name"] == "fx__echo"),
        "the upstream is up: {list}"
    );
    let ms = t.elapsed().as_secs_f64() * 1e3;
    client.close(Duration::from_secs(30)).await;
    ms
}

async fn echo(client: &StdioClient) {
    let r: Result<Value, Value> = client
        .request(
            "tools/call",
            json!({"name": "fx__echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert!(r.is_ok(), "{r:?}");
}

async fn block(client: &StdioClient, out: &mut Vec<f64>) {
    for _ in 0..BLOCK {
        let t = Instant::now();
        echo(client).await;
        out.push(t.elapsed().as_secs_f64() * 1e6);
    }
}

fn row(arm: &str, v: &mut [f64], unit: &str) {
    v.sort_by(f64::total_cmp);
    println!(
        "{arm:<12} {:>9.1} {:>9.1} {:>9.1} {:>9.1}  {unit}",
        common::pct(v, 50.0),
        common::pct(v, 90.0),
        common::pct(v, 99.0),
        common::pct(v, 100.0)
    );
}

fn main() {
    let starts = common::number("--starts", 10);
    let calls = common::number("--calls", 5_000).max(BLOCK);
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        let contained = config(dir.path(), true);
        let plain = config(dir.path(), false);

        let (mut start_c, mut start_p) = (Vec::new(), Vec::new());
        for _ in 0..starts {
            start_c.push(startup(&contained).await);
            start_p.push(startup(&plain).await);
        }

        let mut gated_c = start(&contained).await;
        let mut gated_p = start(&plain).await;
        for _ in 0..WARMUP {
            echo(&gated_c).await;
            echo(&gated_p).await;
        }
        let (mut call_c, mut call_p) = (Vec::new(), Vec::new());
        for _ in 0..calls / BLOCK {
            block(&gated_c, &mut call_c).await;
            block(&gated_p, &mut call_p).await;
        }

        println!("start-up, toolgate spawned until the upstream's tools are listed, {starts} starts per arm:");
        println!("{:<12} {:>9} {:>9} {:>9} {:>9}", "arm", "p50", "p90", "p99", "max");
        row("contained", &mut start_c, "ms");
        row("plain", &mut start_p, "ms");
        println!(
            "tools/call echo, {} sequential calls per arm in blocks of {BLOCK}, after {WARMUP} warm-up calls:",
            call_c.len()
        );
        row("contained", &mut call_c, "µs");
        row("plain", &mut call_p, "µs");
        println!(
            "added by containment: start-up p50 {:+.1} ms, call p50 {:+.1} µs, call p99 {:+.1} µs",
            common::pct(&start_c, 50.0) - common::pct(&start_p, 50.0),
            common::pct(&call_c, 50.0) - common::pct(&call_p, 50.0),
            common::pct(&call_c, 99.0) - common::pct(&call_p, 99.0)
        );
        gated_c.close(Duration::from_secs(30)).await;
        gated_p.close(Duration::from_secs(30)).await;
    });
}
