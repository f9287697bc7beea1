//! Added latency, throughput and CPU time of `tools/call` through toolgate, against the same fixture server called
//! directly. Both arms use the same client and the same release binary, measured in one run with their blocks
//! alternating (`--block` calls each), so machine noise hits both alike. Beside the wall percentiles it reports
//! the CPU time (user + system, all threads) of the process each arm talks to, per call: toolgate's own for the
//! arm through it (its upstream is another process), the fixture's for the direct arm. On a shared VM wall latency
//! is dominated by how fast an idle vCPU wakes; the CPU time per call is the figure that follows the code.
//!
//! With `--telemetry` a third arm, toolgate with OpenTelemetry spans exported over OTLP/HTTP to a sink in this
//! process and metrics on, alternates with the other two: the cost of telemetry on against off, in one run.
//!
//! Run: `cargo bench -p toolgate --bench overhead` (optional: `-- --calls 20000 --block 500 --in-flight 32 --telemetry`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::StdioClient;

const WARMUP: usize = 1_000;
/// Calls in flight in the pipelined blocks unless `--in-flight` says otherwise: the figure the CPU goal names.
const IN_FLIGHT: usize = 32;

fn in_flight() -> usize {
    common::number("--in-flight", IN_FLIGHT).max(1)
}

fn toolgate() -> PathBuf {
    common::toolgate()
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

/// What the writer may still hold after a block, given time to write it.
const SETTLE: Duration = Duration::from_millis(100);

/// One arm: the client, the tool name it calls, and the meter on the process it talks to.
struct Arm {
    client: Arc<StdioClient>,
    name: &'static str,
    seq_cpu: common::CpuMeter,
    tp_cpu: common::CpuMeter,
    latencies: Vec<f64>,
    tp_calls: usize,
    tp_secs: f64,
}

impl Arm {
    fn new(client: StdioClient, name: &'static str) -> Self {
        let pid = client.pid().unwrap();
        Self {
            client: Arc::new(client),
            name,
            seq_cpu: common::CpuMeter::new(pid, false),
            tp_cpu: common::CpuMeter::new(pid, false),
            latencies: Vec::new(),
            tp_calls: 0,
            tp_secs: 0.0,
        }
    }

    /// One block of `calls` sequential calls.
    async fn sequential(&mut self, calls: usize) {
        self.seq_cpu.start();
        for _ in 0..calls {
            let t = Instant::now();
            echo(&self.client, self.name).await;
            self.latencies.push(t.elapsed().as_secs_f64() * 1e6);
        }
        self.seq_cpu.stop(calls, SETTLE);
    }

    /// One block of `calls` calls with `in_flight()` in flight.
    async fn pipelined(&mut self, calls: usize) {
        self.tp_cpu.start();
        let t = Instant::now();
        throughput(Arc::clone(&self.client), self.name, calls).await;
        self.tp_secs += t.elapsed().as_secs_f64();
        self.tp_calls += calls;
        self.tp_cpu.stop(calls, SETTLE);
    }

    fn calls_per_s(&self) -> f64 {
        self.tp_calls as f64 / self.tp_secs
    }
}

/// `calls` calls with `in_flight()` in flight.
async fn throughput(client: Arc<StdioClient>, name: &'static str, calls: usize) {
    let mut tasks = tokio::task::JoinSet::new();
    let in_flight = in_flight();
    for worker in 0..in_flight {
        let c = Arc::clone(&client);
        let share = calls / in_flight + usize::from(worker < calls % in_flight);
        tasks.spawn(async move {
            for _ in 0..share {
                echo(&c, name).await;
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// An OTLP/HTTP sink on loopback that accepts every export and keeps nothing; its base URL.
async fn otlp_sink() -> String {
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(|_: axum::body::Bytes| async { "" }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn main() {
    let calls: usize = common::number("--calls", 10_000);
    let telemetry = std::env::args().any(|a| a == "--telemetry");
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

        let mut direct = Arm::new(start(&["fixture-server"]).await, "echo");
        let mut gated = Arm::new(start(&["serve", "--config", &config]).await, "fx__echo");
        let mut traced = None;
        if telemetry {
            let mut body = body.clone();
            body["telemetry"] = json!({"otlp": {"endpoint": otlp_sink().await}, "metrics": true});
            body["http"] = json!({"admin": {"keySha256": "ab".repeat(32)}});
            let path = dir.path().join("traced.json");
            std::fs::write(&path, body.to_string()).unwrap();
            let path = path.to_str().unwrap().to_owned();
            traced = Some(Arm::new(start(&["serve", "--config", &path]).await, "fx__echo"));
        }
        for _ in 0..WARMUP {
            echo(&direct.client, direct.name).await;
            echo(&gated.client, gated.name).await;
            if let Some(t) = &traced {
                echo(&t.client, t.name).await;
            }
        }
        // Alternate blocks, so machine noise hits both arms alike.
        let block = common::number("--block", 500).max(1);
        for _ in 0..calls.div_ceil(block) {
            direct.sequential(block).await;
            gated.sequential(block).await;
            if let Some(t) = traced.as_mut() {
                t.sequential(block).await;
            }
        }
        let tp_block = (block * 4).max(in_flight());
        // `--pipelined N` calls per arm in the pipelined phase (default twice `--calls`; a profile of that phase
        // alone runs with `--calls 1`).
        let pipelined = common::number("--pipelined", calls * 2);
        for _ in 0..pipelined.div_ceil(tp_block) {
            direct.pipelined(tp_block).await;
            gated.pipelined(tp_block).await;
            if let Some(t) = traced.as_mut() {
                t.pipelined(tp_block).await;
            }
        }
        let rounds = calls.div_ceil(block);
        for arm in [&mut direct, &mut gated].into_iter().chain(traced.as_mut()) {
            arm.latencies.sort_by(f64::total_cmp);
        }
        let (d, g) = (&direct.latencies, &gated.latencies);

        println!(
            "tools/call echo, {} sequential calls per arm in {rounds} alternating blocks, after {WARMUP} warm-up \
             calls (µs; cpu: user + system of the process the arm talks to, per call):",
            d.len()
        );
        println!(
            "{:<10} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "arm", "p50", "p90", "p99", "max", "cpu"
        );
        for (arm, a) in [("direct", &direct), ("toolgate", &gated)] {
            let v = &a.latencies;
            println!(
                "{arm:<10} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                common::pct(v, 50.0),
                common::pct(v, 90.0),
                common::pct(v, 99.0),
                common::pct(v, 100.0),
                a.seq_cpu.per_call()
            );
        }
        println!(
            "added      {:>8.1} {:>8.1} {:>8.1}",
            common::pct(g, 50.0) - common::pct(d, 50.0),
            common::pct(g, 90.0) - common::pct(d, 90.0),
            common::pct(g, 99.0) - common::pct(d, 99.0)
        );
        println!(
            "pipelined, {} in flight, {} calls per arm in alternating blocks of {tp_block}:",
            in_flight(),
            gated.tp_calls
        );
        println!(
            "direct     {:>10.0} calls/s   cpu {:>6.1} µs/call (fixture)",
            direct.calls_per_s(),
            direct.tp_cpu.per_call()
        );
        println!(
            "toolgate   {:>10.0} calls/s   cpu {:>6.1} µs/call (toolgate alone)   (ratio {:.2})",
            gated.calls_per_s(),
            gated.tp_cpu.per_call(),
            gated.calls_per_s() / direct.calls_per_s()
        );
        println!(
            "toolgate's CPU per call by thread, µs: sequential {}; pipelined {}",
            gated.seq_cpu.per_call_by_thread(),
            gated.tp_cpu.per_call_by_thread()
        );
        if let Some(t) = &traced {
            println!(
                "telemetry on (OTLP spans to a local sink, metrics): sequential p50 {:.1} µs, cpu {:.1} µs/call \
                 ({:.2} of off); pipelined {:.0} calls/s, cpu {:.1} µs/call ({:.2} of off)",
                common::pct(&t.latencies, 50.0),
                t.seq_cpu.per_call(),
                t.seq_cpu.per_call() / gated.seq_cpu.per_call(),
                t.calls_per_s(),
                t.tp_cpu.per_call(),
                t.tp_cpu.per_call() / gated.tp_cpu.per_call()
            );
        }
        println!("Goal: toolgate's CPU per governed call ≤ 25 µs; pipelined ≥ 0.6 of direct.");
        let (direct, gated) = (direct.client, gated.client);
        // Let toolgate write what it queued for the audit log before the temporary directory goes.
        for client in [direct, gated].into_iter().chain(traced.map(|t| t.client)) {
            if let Ok(mut c) = Arc::try_unwrap(client) {
                c.close(Duration::from_secs(30)).await;
            }
        }
    });
}
