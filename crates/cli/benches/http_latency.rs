//! `tools/call` latency through toolgate's HTTP front end beside its stdio front end, in one run, against the
//! same fixture upstream; and, with `--load`, a bounded load test of many concurrent HTTP sessions.
//!
//! Latency: sequential calls of the fixture's `echo`, one legacy (2025-11-25) session over HTTP/1.1 with
//! keep-alive, interleaved call by call with the same calls over stdio, so machine noise hits both alike; beside
//! the wall percentiles, each toolgate's own CPU time (user + system, all threads) per call. Then the same for
//! `ping`, which toolgate answers itself: what HTTP adds to a ping is the transport's own cost (the client,
//! loopback TCP, HTTP on both ends), the floor under what it adds to a call.
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
        "{name:<12} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.1}",
        common::pct(us, 50.0),
        common::pct(us, 90.0),
        common::pct(us, 99.0),
        common::pct(us, 100.0),
        us.iter().sum::<f64>() / us.len() as f64,
        cpu
    );
}

/// Each request, timed on both transports alternately, `calls` times: the wall times over HTTP and over stdio,
/// and each toolgate's CPU µs per request.
struct Timed {
    http: Vec<f64>,
    stdio: Vec<f64>,
    http_cpu: f64,
    stdio_cpu: f64,
}

async fn interleaved(
    http: &Session,
    stdio: &test_support::StdioClient,
    pids: (u32, u32),
    (method, params): (&str, serde_json::Value),
    calls: usize,
) -> Timed {
    let (mut h, mut s) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    let mut h_cpu = common::CpuMeter::new(pids.0, false);
    let mut s_cpu = common::CpuMeter::new(pids.1, false);
    h_cpu.start();
    s_cpu.start();
    for _ in 0..calls {
        let t = Instant::now();
        let r = http.request(method, params.clone()).await.unwrap();
        h.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(r.get("result").is_some(), "{r}");
        let t = Instant::now();
        let r = stdio.request(method, params.clone()).await;
        s.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(r.is_ok(), "{r:?}");
    }
    h_cpu.stop(calls, Duration::from_millis(200));
    s_cpu.stop(calls, Duration::ZERO);
    Timed {
        http: h,
        stdio: s,
        http_cpu: h_cpu.per_call(),
        stdio_cpu: s_cpu.per_call(),
    }
}

/// `configs`: the HTTP server's and the stdio server's, alike but for their state directories, so neither's
/// audit writer finds the database and the log changed by the other at every batch.
async fn latency(configs: (&str, &str), calls: usize) {
    let front = Front::start(configs.0, &[]);
    let http = Session::open(client(), front.url.clone()).await.unwrap();
    let mut stdio = common::serve(configs.1, &[]).await;
    let pids = (front.child.id(), stdio.pid().unwrap());
    let call = || {
        let params = json!({"name": "fx__echo", "arguments": {"text": "x"}});
        ("tools/call", params)
    };
    let ping = || ("ping", json!({}));
    interleaved(&http, &stdio, pids, call(), WARMUP).await;
    interleaved(&http, &stdio, pids, ping(), WARMUP).await;
    let mut calls_timed = interleaved(&http, &stdio, pids, call(), calls).await;
    let mut pings = interleaved(&http, &stdio, pids, ping(), calls).await;
    println!(
        "{calls} sequential requests per transport and method after {WARMUP} warm-up each (µs):"
    );
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "p50", "p90", "p99", "max", "mean", "cpu"
    );
    row("http call", &mut calls_timed.http, calls_timed.http_cpu);
    row("stdio call", &mut calls_timed.stdio, calls_timed.stdio_cpu);
    row("http ping", &mut pings.http, pings.http_cpu);
    row("stdio ping", &mut pings.stdio, pings.stdio_cpu);
    let p50 = |us: &[f64]| common::pct(us, 50.0);
    println!(
        "http/stdio: p50 {:.2}×, p99 {:.2}×. Goal over HTTP: p50 ≤ 350 µs, p99 ≤ 1000 µs.",
        p50(&calls_timed.http) / p50(&calls_timed.stdio),
        common::pct(&calls_timed.http, 99.0) / common::pct(&calls_timed.stdio, 99.0)
    );
    // `ping` is answered by toolgate itself with no pipeline behind it: what HTTP adds to it is what the
    // transport costs (client, loopback TCP, HTTP on both ends), the floor under what it adds to a call.
    println!(
        "HTTP adds at p50: {:.0} µs to a call, {:.0} µs to a ping (the transport's own); \
         a call with only the ping's addition: {:.2}× stdio.",
        p50(&calls_timed.http) - p50(&calls_timed.stdio),
        p50(&pings.http) - p50(&pings.stdio),
        (p50(&calls_timed.stdio) + p50(&pings.http) - p50(&pings.stdio)) / p50(&calls_timed.stdio)
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
        // The whole pipeline on every call: deny by default with one allow rule, pins, audit, reporting.
        let config = |name: &str| {
            let body = json!({
                "mcpServers": {"fx": {"command": common::toolgate(), "args": ["fixture-server", "--era", "legacy"]}},
                "permissions": {"default": "deny", "allow": ["mcp__fx__echo"]},
                "stateDir": dir.path().join(format!("state-{name}")),
            });
            let path = dir.path().join(format!("{name}.json"));
            std::fs::write(&path, body.to_string()).unwrap();
            path.to_str().unwrap().to_owned()
        };
        let http = config("http");
        if load_test {
            let sessions = common::number("--sessions", 200);
            let per_session = common::number("--per-session", 50);
            let seconds = common::number("--seconds", 60) as u64;
            load(&http, sessions, per_session, seconds).await;
        } else {
            let stdio = config("stdio");
            latency((&http, &stdio), common::number("--calls", 5_000)).await;
        }
    });
}
