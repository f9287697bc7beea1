//! Fairness between identities in code mode: a quiet caller's `run_code` latency while another identity
//! saturates toolgate, against the same caller's latency idle, in one run of `toolgate serve --http --mode code`
//! with two API keys.
//!
//! The flood: `--flood` concurrent 2026-07-28 requests (each its own session) of key `flood`, each a program of
//! `--calls` concurrent calls of the fixture's `echo` (`Promise.all`), sent again as soon as one ends. The quiet
//! caller: key `quiet`, one program with one call of `add`, sequential. The arms are interleaved in rounds (idle,
//! then loaded, `--rounds` times), so machine noise hits both alike; the flood is stopped and drained before
//! each idle window and given a second to saturate before each loaded one.
//!
//! Run: `cargo bench -p toolgate --bench fairness` (options: `-- --rounds 5 --per-round 20 --flood 32 --calls
//! 1000`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;
use common::Front;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FLOOD_KEY: &str = "flood-key-0123456789abcdef";
const QUIET_KEY: &str = "quiet-key-0123456789abcdef";
const VERSION: &str = "2026-07-28";

/// One 2026-07-28 `run_code` request with `key`: the program's returned value, or why there is none.
async fn run(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    program: &str,
) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "run_code", "arguments": {"code": program},
        "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION,
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "fairness-bench", "version": "1"}}}});
    let resp = client
        .post(url)
        .bearer_auth(key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "run_code")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {text}"));
    }
    let answer: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .ok_or_else(|| format!("no answer in {text:?}"))?;
    test_support::returned(&answer["result"])
        .cloned()
        .ok_or_else(|| format!("no returned value: {answer}"))
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .http1_only()
        .pool_max_idle_per_host(1024)
        .tcp_nodelay(true)
        .build()
        .unwrap()
}

fn row(name: &str, ms: &mut [f64]) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{name:<8} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
        common::pct(ms, 50.0),
        common::pct(ms, 90.0),
        common::pct(ms, 100.0),
        ms.iter().sum::<f64>() / ms.len() as f64
    );
}

fn main() {
    let rounds = common::number("--rounds", 5);
    let per_round = common::number("--per-round", 20);
    let flood = common::number("--flood", 32);
    let calls = common::number("--calls", 1000);
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let config = dir.path().join("bench.json");
        let digest = |k: &str| hex::encode(Sha256::digest(k.as_bytes()));
        let body = json!({
            "mcpServers": {"fx": {"command": common::toolgate(), "args": ["fixture-server"]}},
            "permissions": {"default": "deny", "allow": ["mcp__fx__echo", "mcp__fx__add"]},
            "http": {"auth": {"apiKeys": [
                {"name": "flood", "sha256": digest(FLOOD_KEY)},
                {"name": "quiet", "sha256": digest(QUIET_KEY)},
            ]}},
            "pins": {"newTools": "accept"},
            "stateDir": dir.path().join("state"),
            "workspace": ws,
        });
        std::fs::write(&config, body.to_string()).unwrap();
        let front = Front::start(config.to_str().unwrap(), &["--mode", "code"]);
        let http = client();
        let quiet = "return (await call(\"fx__add\", {a: 1, b: 2})).sum;";
        let flood_program = format!(
            "const r = await Promise.all(Array.from({{length: {calls}}}, (_, i) => \
             call(\"fx__echo\", {{text: String(i)}}))); return r.length;"
        );
        for _ in 0..5 {
            assert_eq!(run(&http, &front.url, QUIET_KEY, quiet).await, Ok(json!(3)));
        }
        let on = Arc::new(AtomicBool::new(false));
        let active = Arc::new(AtomicUsize::new(0));
        let flood_runs = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..flood {
            let (http, url, program) = (http.clone(), front.url.clone(), flood_program.clone());
            let (on, active, done) = (Arc::clone(&on), Arc::clone(&active), Arc::clone(&flood_runs));
            tasks.push(tokio::spawn(async move {
                loop {
                    if !on.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                    active.fetch_add(1, Ordering::SeqCst);
                    let r = run(&http, &url, FLOOD_KEY, &program).await;
                    active.fetch_sub(1, Ordering::SeqCst);
                    if r.is_ok() {
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }));
        }
        let (mut idle, mut loaded) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            on.store(false, Ordering::SeqCst);
            while active.load(Ordering::SeqCst) > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            for _ in 0..per_round {
                let t = Instant::now();
                assert_eq!(run(&http, &front.url, QUIET_KEY, quiet).await, Ok(json!(3)));
                idle.push(t.elapsed().as_secs_f64() * 1e3);
            }
            on.store(true, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(1)).await;
            for _ in 0..per_round {
                let t = Instant::now();
                assert_eq!(run(&http, &front.url, QUIET_KEY, quiet).await, Ok(json!(3)));
                loaded.push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        on.store(false, Ordering::SeqCst);
        let flooded = flood_runs.load(Ordering::SeqCst);
        for t in tasks {
            t.abort();
        }
        println!(
            "quiet identity's run_code (1 call), {} runs per arm in {rounds} interleaved rounds; the flood: {flood} \
             concurrent requests of another identity, each {calls} concurrent calls ({flooded} flood runs \
             finished) (ms):",
            idle.len()
        );
        println!("{:<8} {:>8} {:>8} {:>8} {:>8}", "", "p50", "p90", "max", "mean");
        row("idle", &mut idle);
        row("flooded", &mut loaded);
        println!(
            "flooded/idle: p50 {:.2}×, p90 {:.2}×",
            common::pct(&loaded, 50.0) / common::pct(&idle, 50.0),
            common::pct(&loaded, 90.0) / common::pct(&idle, 90.0)
        );
        drop(front);
    });
}
