//! `tools/call` latency through toolgate's HTTP front end beside its stdio front end, in one run, against the
//! same fixture upstream; and, with `--load`, a bounded load test of many concurrent HTTP sessions.
//!
//! Latency: sequential calls of the fixture's `echo`, one legacy (2025-11-25) session over HTTP/1.1 with
//! keep-alive, interleaved call by call with the same calls over stdio, so machine noise hits both alike; beside
//! the wall percentiles, each toolgate's own CPU time (user + system, all threads) per call.
//! Load: `--sessions` concurrent legacy sessions on loopback, each calling `echo` `--per-session` times, all
//! stopped at `--seconds`; reports latency, errors, toolgate's CPU time per call and its peak resident memory
//! (`VmHWM`).
//!
//! Run: `cargo bench -p toolgate --bench http_latency` (options: `-- --calls 5000`; `-- --load --sessions 200
//! --per-session 50 --seconds 60`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;
use common::mcp_http::{client, Session};
use common::Front;

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

const WARMUP: usize = 500;

/// Wall percentiles of `us`, and toolgate's CPU µs per call.
fn row(name: &str, us: &mut [f64], cpu: f64) {
    us.sort_by(f64::total_cmp);
    println!(
        "{name:<8} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.1}",
        common::pct(us, 50.0),
        common::pct(us, 90.0),
        common::pct(us, 99.0),
        common::pct(us, 100.0),
        us.iter().sum::<f64>() / us.len() as f64,
        cpu
    );
}

async fn latency(config: &str, calls: usize) {
    let front = Front::start(config, &[]);
    let http = Session::open(client(), front.url.clone()).await.unwrap();
    let mut stdio = common::serve(config, &[]).await;
    let stdio_echo = || async {
        let params = json!({"name": "fx__echo", "arguments": {"text": "x"}});
        let r = stdio.request("tools/call", params).await;
        assert!(r.is_ok(), "{r:?}");
    };
    for _ in 0..WARMUP {
        http.echo().await.unwrap();
        stdio_echo().await;
    }
    let (mut h, mut s) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    let mut h_cpu = common::CpuMeter::new(front.child.id(), false);
    let mut s_cpu = common::CpuMeter::new(stdio.pid().unwrap(), false);
    h_cpu.start();
    s_cpu.start();
    for _ in 0..calls {
        let t = Instant::now();
        http.echo().await.unwrap();
        h.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        stdio_echo().await;
        s.push(t.elapsed().as_secs_f64() * 1e6);
    }
    h_cpu.stop(calls, Duration::from_millis(200));
    s_cpu.stop(calls, Duration::ZERO);
    println!("{calls} sequential tools/call per transport after {WARMUP} warm-up calls (µs):");
    println!(
        "{:<8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "p50", "p90", "p99", "max", "mean", "cpu"
    );
    row("http", &mut h, h_cpu.per_call());
    row("stdio", &mut s, s_cpu.per_call());
    println!(
        "http/stdio: p50 {:.2}×, p99 {:.2}×. Goal over HTTP: p50 ≤ 350 µs, p99 ≤ 1000 µs.",
        common::pct(&h, 50.0) / common::pct(&s, 50.0),
        common::pct(&h, 99.0) / common::pct(&s, 99.0)
    );
    // Both servers end before their state directory is removed.
    stdio.close(Duration::from_secs(30)).await;
    drop(front);
}

async fn load(config: &str, sessions: usize, per_session: usize, seconds: u64) {
    let front = Arc::new(Front::start(config, &[]));
    let rss_idle = front.memory_kb("VmRSS");
    let client = client();
    let mut cpu = common::CpuMeter::new(front.child.id(), false);
    cpu.start();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..sessions {
        let (client, url) = (client.clone(), front.url.clone());
        tasks.spawn(async move {
            let (mut us, mut errors) = (Vec::with_capacity(per_session), Vec::new());
            let session = match Session::open(client, url).await {
                Ok(s) => s,
                Err(e) => return (us, vec![format!("open: {e}")]),
            };
            for _ in 0..per_session {
                if Instant::now() >= deadline {
                    break;
                }
                let t = Instant::now();
                match session.echo().await {
                    Ok(()) => us.push(t.elapsed().as_secs_f64() * 1e6),
                    Err(e) => errors.push(e),
                }
            }
            (us, errors)
        });
    }
    let (mut all, mut errors) = (Vec::new(), Vec::new());
    while let Some(done) = tasks.join_next().await {
        let (us, errs) = done.unwrap();
        all.extend(us);
        errors.extend(errs);
    }
    let elapsed = started.elapsed().as_secs_f64();
    cpu.stop(all.len(), Duration::from_millis(200));
    println!(
        "{sessions} concurrent legacy sessions × up to {per_session} calls (stopped at {seconds} s): \
         {} calls in {elapsed:.1} s ({:.0} calls/s), {} errors",
        all.len(),
        all.len() as f64 / elapsed,
        errors.len()
    );
    if let Some(first) = errors.first() {
        println!("first error: {first}");
    }
    if !all.is_empty() {
        println!(
            "{:<8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "(µs)", "p50", "p90", "p99", "max", "mean", "cpu"
        );
        row("http", &mut all, cpu.per_call());
    }
    println!(
        "toolgate resident memory: {} kB idle, peak (VmHWM) {} kB",
        rss_idle,
        front.memory_kb("VmHWM")
    );
}

fn main() {
    let load_test = std::env::args().any(|a| a == "--load");
    // The latency client runs on one thread, as the SDK clients do (one event loop): on a multi-threaded client
    // runtime reqwest's connection task wakes on another worker than the request, a hop of the client's that
    // landed in the HTTP arm alone. The load test keeps two workers, so the clients keep up with toolgate.
    let rt = if load_test {
        common::runtime()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bench.json");
        // The whole pipeline on every call: deny by default with one allow rule, pins, audit, reporting.
        let body = json!({
            "mcpServers": {"fx": {"command": common::toolgate(), "args": ["fixture-server", "--era", "legacy"]}},
            "permissions": {"default": "deny", "allow": ["mcp__fx__echo"]},
            "stateDir": dir.path().join("state"),
        });
        std::fs::write(&config, body.to_string()).unwrap();
        let config = config.to_str().unwrap().to_owned();
        if load_test {
            let sessions = common::number("--sessions", 200);
            let per_session = common::number("--per-session", 50);
            let seconds = common::number("--seconds", 60) as u64;
            load(&config, sessions, per_session, seconds).await;
        } else {
            latency(&config, common::number("--calls", 5_000)).await;
        }
    });
}
