//! Added latency and throughput of `tools/call` through toolgate, against the same fixture server called
//! directly. Both arms use the same client and the same release binary, measured in one run.
//!
//! Run: `cargo bench -p toolgate --bench overhead` (optional: `-- --calls 20000`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::StdioClient;

const WARMUP: usize = 1_000;
const CONCURRENCY: usize = 64;

fn toolgate() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

async fn start(args: &[&str]) -> StdioClient {
    let client = StdioClient::spawn(&toolgate(), args, &[], HashMap::new()).unwrap();
    client.initialize("2025-11-25", json!({})).await.unwrap();
    client
}

async fn echo(client: &StdioClient, name: &str) {
    let r = client
        .request(
            "tools/call",
            json!({"name": name, "arguments": {"text": "x"}}),
        )
        .await;
    assert!(r.is_ok(), "{r:?}");
}

/// Sequential calls; returns every latency in microseconds, sorted.
async fn latencies(client: &StdioClient, name: &str, calls: usize) -> Vec<f64> {
    for _ in 0..WARMUP {
        echo(client, name).await;
    }
    let mut out = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        echo(client, name).await;
        out.push(t.elapsed().as_secs_f64() * 1e6);
    }
    out.sort_by(f64::total_cmp);
    out
}

/// `calls` calls with `CONCURRENCY` in flight; returns calls per second.
async fn throughput(client: Arc<StdioClient>, name: &'static str, calls: usize) -> f64 {
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..CONCURRENCY {
        let c = Arc::clone(&client);
        let share = calls / CONCURRENCY + usize::from(worker < calls % CONCURRENCY);
        tasks.spawn(async move {
            for _ in 0..share {
                echo(&c, name).await;
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    calls as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let calls: usize = common::number("--calls", 10_000);
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bench.json");
        // The whole pipeline on every call: schema check, pins, policy, audit and reporting.
        let body = json!({
            "mcpServers": {"fx": {"command": toolgate(), "args": ["fixture-server"]}},
            "permissions": {"default": "deny", "allow": ["mcp__fx__echo"]},
            "stateDir": dir.path().join("state"),
            "workspace": dir.path().join("ws"),
        });
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::write(&config, body.to_string()).unwrap();
        let config = config.to_str().unwrap().to_owned();

        let direct = Arc::new(start(&["fixture-server"]).await);
        let gated = Arc::new(start(&["serve", "--config", &config]).await);
        // Interleave the arms so machine noise hits both alike.
        let d = latencies(&direct, "echo", calls).await;
        let g = latencies(&gated, "fx__echo", calls).await;
        let d_tp = throughput(Arc::clone(&direct), "echo", calls * 2).await;
        let g_tp = throughput(Arc::clone(&gated), "fx__echo", calls * 2).await;

        println!(
            "tools/call echo, {calls} sequential calls per arm after {WARMUP} warm-up calls (µs):"
        );
        println!(
            "{:<10} {:>8} {:>8} {:>8} {:>8}",
            "arm", "p50", "p90", "p99", "max"
        );
        for (arm, v) in [("direct", &d), ("toolgate", &g)] {
            println!(
                "{arm:<10} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                common::pct(v, 50.0),
                common::pct(v, 90.0),
                common::pct(v, 99.0),
                common::pct(v, 100.0)
            );
        }
        println!(
            "added      {:>8.1} {:>8.1} {:>8.1}",
            common::pct(&g, 50.0) - common::pct(&d, 50.0),
            common::pct(&g, 90.0) - common::pct(&d, 90.0),
            common::pct(&g, 99.0) - common::pct(&d, 99.0)
        );
        println!(
            "pipelined throughput, {CONCURRENCY} in flight, {} calls per arm:",
            calls * 2
        );
        println!("direct     {d_tp:>10.0} calls/s");
        println!(
            "toolgate   {g_tp:>10.0} calls/s   (ratio {:.2})",
            g_tp / d_tp
        );
        // Let toolgate write what it queued for the audit log before the temporary directory goes.
        for client in [direct, gated] {
            if let Ok(mut c) = Arc::try_unwrap(client) {
                c.close(Duration::from_secs(30)).await;
            }
        }
    });
}
