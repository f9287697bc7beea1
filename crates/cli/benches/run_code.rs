//! The latency of `run_code` end to end, through `toolgate serve --mode code`: one program that makes 6 calls to
//! the fixture's `echo`, from the client's request to its answer — worker spawn, lockdown, the 6 governed calls,
//! the result. For scale, the same 6 calls made one by one by the client in direct mode; and the runner alone
//! (`codemode::Runner`: worker spawn, lockdown, the 6 calls answered at once by a host with no pipeline behind it),
//! cold (a worker started for each run) and warm (each run on the runner's spare, started and locked down before
//! the run while the clock was stopped, as it is between a model's requests), both starting workers through the
//! measured build's launcher when it has one beside it, as the gateway does. All four alternate run by run, and
//! no arm's background work (a spare starting) runs beside the next arm's clock, except toolgate's own. Then
//! `--consecutive` runs (default `--runs`) one after another with nothing between, each beside the start of the
//! spare that replaces the one it took.
//! Then runs spaced apart (`--gap` ms between them, as a model's thinking spaces them), and the first run of fresh
//! sessions (`--fresh` new `toolgate serve --mode code`, each timed on the run right after `initialize`, beside as
//! many new direct sessions timed on their first 6 calls; and as many of each timed after their first
//! `tools/list`, as a client lists before its model calls).
//! Beside the wall percentiles: toolgate's CPU time per run (user + system, all threads, plus the workers it
//! reaped) for the code arm, and the same for the toolgate serving the direct calls.
//!
//! Run: `cargo bench -p toolgate --bench run_code` (optional: `-- --runs 500 --consecutive 500 --spaced 40 --gap 200 --fresh 20`).

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

/// The worker of the toolgate measured: the executable beside it, or, for a build from before there was one,
/// that toolgate re-executed as `codemode-worker`.
fn worker() -> WorkerCommand {
    let toolgate = common::toolgate();
    let beside = WorkerCommand::beside(&toolgate);
    if beside.program.is_file() {
        return beside;
    }
    WorkerCommand {
        program: toolgate,
        args: vec!["codemode-worker".to_owned()],
    }
}

/// Wall percentiles of `ms`, and the CPU ms per run where it was measured.
fn row(name: &str, ms: &mut [f64], cpu_ms: Option<f64>) {
    ms.sort_by(f64::total_cmp);
    let cpu = cpu_ms.map_or_else(|| "-".to_owned(), |c| format!("{c:.2}"));
    println!(
        "{name:<26} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {cpu:>8}",
        common::pct(ms, 50.0),
        common::pct(ms, 90.0),
        common::pct(ms, 99.0),
        common::pct(ms, 100.0),
        ms.iter().sum::<f64>() / ms.len() as f64
    );
}

fn main() {
    let runs: usize = common::number("--runs", 200);
    // The runner arms start workers from this process: through the measured build's launcher, as the gateway
    // does, when it has one beside it (set before any thread starts; the sandbox reads it once).
    let launcher = common::toolgate().with_file_name(sandbox::LAUNCHER_EXE);
    if launcher.is_file() && std::env::var_os(sandbox::LAUNCHER_VAR).is_none() {
        std::env::set_var(sandbox::LAUNCHER_VAR, &launcher);
    }
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
        let runner = Runner::new(worker(), RunLimits::default());
        let warm = runner.clone().with_spares(1);
        for _ in 0..WARMUP {
            runner_once(&runner, &program).await;
            warm.warm_up().await;
            runner_once(&warm, &program).await;
        }
        let (mut run_ms, mut direct_ms, mut runner_ms) = (Vec::new(), Vec::new(), Vec::new());
        let mut warm_ms = Vec::new();
        let mut code_cpu = common::CpuMeter::new(code.pid().unwrap(), true);
        let mut direct_cpu = common::CpuMeter::new(direct.pid().unwrap(), true);
        // Interleaved, so machine noise hits both alike.
        for _ in 0..runs {
            code_cpu.start();
            let t = Instant::now();
            run_once(&code, &program).await;
            run_ms.push(t.elapsed().as_secs_f64() * 1e3);
            code_cpu.stop(1, Duration::ZERO);
            direct_cpu.start();
            let t = Instant::now();
            direct_once(&direct).await;
            direct_ms.push(t.elapsed().as_secs_f64() * 1e3);
            direct_cpu.stop(1, Duration::ZERO);
            let t = Instant::now();
            runner_once(&runner, &program).await;
            runner_ms.push(t.elapsed().as_secs_f64() * 1e3);
            warm.warm_up().await;
            let t = Instant::now();
            runner_once(&warm, &program).await;
            warm_ms.push(t.elapsed().as_secs_f64() * 1e3);
            // The warm runner's next spare starts in this process as its run ends; let it finish here, so it
            // does not run beside the next arm's clock.
            warm.warm_up().await;
        }
        // One after another, nothing between: each run's answer is followed at once by the next request, and
        // toolgate starts the spare that replaces the one a run took while the next run goes (the worst case
        // for a pool of one).
        let consecutive = common::number("--consecutive", runs);
        let mut consecutive_ms = Vec::new();
        let mut consecutive_cpu = common::CpuMeter::new(code.pid().unwrap(), true);
        consecutive_cpu.start();
        for _ in 0..consecutive {
            let t = Instant::now();
            run_once(&code, &program).await;
            consecutive_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        consecutive_cpu.stop(consecutive, Duration::ZERO);
        // Spaced: what a model's thinking between programs leaves the spare and the caches to do.
        let (spaced, gap) = (common::number("--spaced", 40), common::number("--gap", 200));
        let (mut spaced_ms, mut spaced_direct_ms) = (Vec::new(), Vec::new());
        for _ in 0..spaced {
            tokio::time::sleep(Duration::from_millis(gap as u64)).await;
            let t = Instant::now();
            run_once(&code, &program).await;
            spaced_ms.push(t.elapsed().as_secs_f64() * 1e3);
            tokio::time::sleep(Duration::from_millis(gap as u64)).await;
            let t = Instant::now();
            direct_once(&direct).await;
            spaced_direct_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        // A session's first run, right after it initialised; and for scale a direct session's first 6 calls, which
        // wait as the run does for the upstreams and the first catalog of a gateway just started. Then the same
        // after the session's first `tools/list`, as every client lists before its model can call a tool: what
        // is left is the first run's own cost, not the upstreams' start.
        let fresh = common::number("--fresh", 20);
        let (mut fresh_ms, mut fresh_direct_ms) = (Vec::new(), Vec::new());
        let (mut listed_ms, mut listed_direct_ms) = (Vec::new(), Vec::new());
        for _ in 0..fresh {
            for (listed, code_ms, direct_ms) in [
                (false, &mut fresh_ms, &mut fresh_direct_ms),
                (true, &mut listed_ms, &mut listed_direct_ms),
            ] {
                let mut first = common::serve(&config, &["--mode", "code"]).await;
                if listed {
                    first.request("tools/list", json!({})).await.unwrap();
                }
                let t = Instant::now();
                run_once(&first, &program).await;
                code_ms.push(t.elapsed().as_secs_f64() * 1e3);
                first.close(Duration::from_secs(30)).await;
                let mut first = common::serve(&config, &[]).await;
                if listed {
                    first.request("tools/list", json!({})).await.unwrap();
                }
                let t = Instant::now();
                direct_once(&first).await;
                direct_ms.push(t.elapsed().as_secs_f64() * 1e3);
                first.close(Duration::from_secs(30)).await;
            }
        }
        println!("{runs} runs after {WARMUP} warm-up runs, {CALLS} calls each (ms; cpu: toolgate's user + system per run, with its reaped workers):");
        println!(
            "{:<26} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "", "p50", "p90", "p99", "max", "mean", "cpu ms"
        );
        row("run_code, back to back", &mut run_ms, Some(code_cpu.per_call() / 1e3));
        row("runner alone, cold", &mut runner_ms, None);
        row("runner alone, warm", &mut warm_ms, None);
        row("6 direct calls", &mut direct_ms, Some(direct_cpu.per_call() / 1e3));
        if consecutive > 0 {
            let cpu = consecutive_cpu.per_call() / 1e3;
            row("run_code, one after other", &mut consecutive_ms, Some(cpu));
        }
        if spaced > 0 {
            row(&format!("run_code, {gap} ms apart"), &mut spaced_ms, None);
            row(&format!("6 direct, {gap} ms apart"), &mut spaced_direct_ms, None);
        }
        if fresh > 0 {
            row("run_code, session's first", &mut fresh_ms, None);
            row("6 direct, session's first", &mut fresh_direct_ms, None);
            row("run_code, first, listed", &mut listed_ms, None);
            row("6 direct, first, listed", &mut listed_direct_ms, None);
        }
        println!("Goal: run_code p50 ≤ 5 ms, p90 ≤ 8 ms, back to back, spaced and first alike.");
        for client in [&mut code, &mut direct] {
            client.close(Duration::from_secs(30)).await;
        }
    });
}
