//! How long a held call takes to come back after a human approves it from another process (as the admin CLI
//! does): from the approval's commit to the call's result at the client, through `toolgate serve`.
//!
//! Each sample holds one `tools/call`, waits a different time (0–249 ms, spread evenly) once the request is
//! pending, so the approval lands at every phase of toolgate's wake-up timer, approves it through its own store
//! handle, and times the answer. Run: `cargo bench -p toolgate --bench approval_latency` (optional: `-- --samples
//! 80`, and `--toolgate PATH` to measure another build of the binary).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{ApprovalStatus, Namespace, Store, Timestamp};
use test_support::StdioClient;

async fn pending(store: &Store) -> String {
    loop {
        let list = store
            .list_requests(Some(ApprovalStatus::Pending), Timestamp::now())
            .unwrap();
        if let Some(a) = list.into_iter().next() {
            return a.id;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn main() {
    let samples: usize = common::number("--samples", 40);
    let toolgate = common::arg("--toolgate")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_toolgate")));
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let (ws, state) = (dir.path().join("ws"), dir.path().join("state"));
        std::fs::create_dir_all(&ws).unwrap();
        let config = dir.path().join("bench.json");
        let body = json!({
            "mcpServers": {"fx": {"command": &toolgate, "args": ["fixture-server"]}},
            "permissions": {"default": "allow", "ask": ["mcp__fx__echo"]},
            "approvals": {"wait_seconds": 60, "elicitation": false},
            "stateDir": &state,
            "workspace": &ws,
        });
        std::fs::write(&config, body.to_string()).unwrap();
        let args = ["serve", "--config", config.to_str().unwrap()];
        let client = Arc::new(StdioClient::spawn(&toolgate, &args, &[], HashMap::new()).unwrap());
        client.initialize("2025-11-25", json!({})).await.unwrap();
        // The approver: another connection to the database, as the admin CLI opens one.
        let mut admin = Store::open(&Namespace::open(&state, &ws).unwrap()).unwrap();
        let mut ms = Vec::with_capacity(samples);
        for i in 0..samples {
            let c = Arc::clone(&client);
            let call = tokio::spawn(async move {
                let params = json!({"name": "fx__echo", "arguments": {"text": "x"}});
                c.request("tools/call", params).await
            });
            let id = pending(&admin).await;
            tokio::time::sleep(Duration::from_millis((i as u64 * 61) % 250)).await;
            admin.approve(&id, "bench", Timestamp::now()).unwrap();
            let approved = Instant::now();
            let answer = call.await.unwrap().unwrap();
            ms.push(approved.elapsed().as_secs_f64() * 1e3);
            assert_eq!(answer["content"][0]["text"], "x", "{answer}");
        }
        ms.sort_by(f64::total_cmp);
        println!("approval-to-release latency, {samples} held calls (ms):");
        println!(
            "{:>8} {:>8} {:>8} {:>8} {:>8}",
            "p50", "p90", "p99", "max", "mean"
        );
        println!(
            "{:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            common::pct(&ms, 50.0),
            common::pct(&ms, 90.0),
            common::pct(&ms, 99.0),
            common::pct(&ms, 100.0),
            ms.iter().sum::<f64>() / ms.len() as f64
        );
        if let Ok(mut c) = Arc::try_unwrap(client) {
            c.close(Duration::from_secs(30)).await;
        }
    });
}
