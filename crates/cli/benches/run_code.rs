//! The latency of `run_code` end to end, through `toolgate serve --mode code`: one program that makes 6 calls to
//! the fixture's `echo`, from the client's request to its answer — worker spawn, lockdown, the 6 governed calls,
//! the result. For scale, the same 6 calls made one by one by the client in direct mode; and the runner alone
//! (`codemode::Runner`: worker spawn, lockdown, the 6 calls answered at once by a host with no pipeline behind it),
//! cold (a worker started for each run) and warm (each run on the runner's spare, started and locked down before
//! the run while the clock was stopped, as it is between a model's requests).
//!
//! Run: `cargo bench -p toolgate --bench run_code` (optional: `-- --runs 500`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod common;

use codemode::{
    CodeSession, HostFuture, NestedCall, RunEnd, RunLimits, Runner, ToolHost, WorkerCommand,
};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use test_support::{returned, run_params, StdioClient};

const WARMUP: usize = 20;
const CALLS: usize = 6;

/// The program: six calls in sequence, each depending on the one before, as a join does.
fn program() -> String {
    let mut p = String::from("let text = \"0\";\n");
    for _ in 0..CALLS {
        p.push_str("text = (await call(\"fx__echo\", { text: text + \"+\" })).text;\n");
    }
    p.push_str("return text;");
    p
}

async fn run_once(client: &StdioClient, program: &str) {
    let r = client
        .request("tools/call", run_params(program))
        .await
        .unwrap();
    let expected = format!("0{}", "+".repeat(CALLS));
    assert_eq!(returned(&r), Some(&Value::String(expected)), "{r}");
}

async fn direct_once(client: &StdioClient) {
    for i in 0..CALLS {
        let params = json!({"name": "fx__echo", "arguments": {"text": i.to_string()}});
        let r = client.request("tools/call", params).await.unwrap();
        assert_eq!(r["structuredContent"]["text"], i.to_string(), "{r}");
    }
}

/// Answers every call as the fixture's `echo` would, at once: what is left is the runner's own cost.
struct Echo;

impl ToolHost for Echo {
    fn call(&self, call: NestedCall) -> HostFuture<'_> {
        Box::pin(async move {
            let text = call.arguments["text"].clone();
            Ok(
                json!({"content": [{"type": "text", "text": text}], "structuredContent": {"text": text}}),
            )
        })
    }
}

async fn runner_once(runner: &Runner, program: &str) {
    let session = CodeSession::new(None);
    let report = runner.run(program, &Echo, &session).await;
    let expected = Value::String(format!("0{}", "+".repeat(CALLS)));
    assert_eq!(report.end, RunEnd::Returned(expected), "{report:?}");
}

fn row(name: &str, ms: &mut [f64]) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{name:<22} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
        common::pct(ms, 50.0),
        common::pct(ms, 90.0),
        common::pct(ms, 99.0),
        common::pct(ms, 100.0),
        ms.iter().sum::<f64>() / ms.len() as f64
    );
}

fn main() {
    let runs: usize = common::number("--runs", 200);
    let rt = common::runtime();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let config = dir.path().join("bench.json");
        // The whole pipeline on each nested call: policy (deny by default, one allow rule), audit, reporting.
        let body = json!({
            "mcpServers": {"fx": {"command": common::toolgate(), "args": ["fixture-server"]}},
            "permissions": {"default": "deny", "allow": ["mcp__fx__echo"]},
            "stateDir": dir.path().join("state"),
            "workspace": ws,
        });
        std::fs::write(&config, body.to_string()).unwrap();
        let config = config.to_str().unwrap().to_owned();
        let mut code = common::serve(&config, &["--mode", "code"]).await;
        let mut direct = common::serve(&config, &[]).await;
        let program = program();
        for _ in 0..WARMUP {
            run_once(&code, &program).await;
            direct_once(&direct).await;
        }
        let runner = Runner::new(
            WorkerCommand {
                program: common::toolgate(),
                args: vec!["codemode-worker".to_owned()],
            },
            RunLimits::default(),
        );
        let warm = runner.clone().with_spare(true);
        for _ in 0..WARMUP {
            runner_once(&runner, &program).await;
            warm.warm_up().await;
            runner_once(&warm, &program).await;
        }
        let (mut run_ms, mut direct_ms, mut runner_ms) = (Vec::new(), Vec::new(), Vec::new());
        let mut warm_ms = Vec::new();
        // Interleaved, so machine noise hits both alike.
        for _ in 0..runs {
            let t = Instant::now();
            run_once(&code, &program).await;
            run_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            direct_once(&direct).await;
            direct_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            runner_once(&runner, &program).await;
            runner_ms.push(t.elapsed().as_secs_f64() * 1e3);
            warm.warm_up().await;
            let t = Instant::now();
            runner_once(&warm, &program).await;
            warm_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!("{runs} runs after {WARMUP} warm-up runs, {CALLS} calls each (ms):");
        println!(
            "{:<22} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "", "p50", "p90", "p99", "max", "mean"
        );
        row("run_code, end to end", &mut run_ms);
        row("runner alone, cold", &mut runner_ms);
        row("runner alone, warm", &mut warm_ms);
        row("6 direct calls", &mut direct_ms);
        println!("Goal: run_code p50 ≤ 5 ms.");
        for client in [&mut code, &mut direct] {
            client.close(Duration::from_secs(30)).await;
        }
    });
}
