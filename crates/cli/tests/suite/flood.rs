//! Audit under a flood, end to end: a client pipelines `tools/call`s as fast as it can write them, and the audit
//! log then holds exactly one decision and one execution record for each, with a chain that verifies.
//! Nothing here checks speed beyond finishing; the writer's throughput is measured by the `audit_writer` bench.
//!
//! 100,000 calls, as the audit's promise is stated for; a debug build takes a few minutes for them on a 2-core
//! machine (docs/BENCHMARKS.md has the timings). `TOOLGATE_FLOOD_CALLS=N` runs a shorter flood while working.

use crate::support::{audit_records, toolgate, Setup};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::Command;

const DEFAULT_CALLS: usize = 100_000;

fn calls() -> usize {
    std::env::var("TOOLGATE_FLOOD_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CALLS)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_flood_of_pipelined_calls_records_every_call_exactly_once() {
    let calls = calls();
    let setup = Setup::fixture(&[], json!({}));
    let state = setup.state_dir();
    let mut child = Command::new(toolgate())
        .args(["serve", "--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", &state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = BufWriter::with_capacity(64 * 1024, child.stdin.take().unwrap());
    let mut answers = BufReader::new(child.stdout.take().unwrap()).lines();

    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"flood\",\"version\":\"0\"}}}\n")
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    let init: Value = serde_json::from_str(&answers.next_line().await.unwrap().unwrap()).unwrap();
    assert!(init.get("result").is_some(), "{init}");

    let started = Instant::now();
    // The writer runs as fast as toolgate reads; toolgate reads only as fast as it answers and audits.
    let writer = tokio::spawn(async move {
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();
        for id in 1..=calls {
            let line = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"fx__echo\",\"arguments\":{{\"text\":\"c{id}\"}}}}}}\n"
            );
            stdin.write_all(line.as_bytes()).await.unwrap();
        }
        stdin.flush().await.unwrap();
        stdin
    });
    let mut seen = vec![false; calls + 1];
    let mut answered = 0;
    while answered < calls {
        let line = tokio::time::timeout(Duration::from_secs(60), answers.next_line())
            .await
            .expect("toolgate stopped answering")
            .unwrap()
            .expect("toolgate closed its output early");
        let msg: Value = serde_json::from_str(&line).unwrap();
        let Some(id) = msg.get("id").and_then(Value::as_u64) else {
            continue; // a notification
        };
        let id = id as usize;
        let text = msg
            .pointer("/result/content/0/text")
            .and_then(Value::as_str);
        assert_eq!(text, Some(format!("c{id}").as_str()), "{msg}");
        assert!(!seen[id], "answered twice: {msg}");
        seen[id] = true;
        answered += 1;
    }
    let took = started.elapsed();
    eprintln!(
        "{calls} calls answered in {took:.1?} ({:.0} calls/s)",
        calls as f64 / took.as_secs_f64()
    );
    // End of input: toolgate flushes the audit queue before it exits.
    drop(writer.await.unwrap());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("toolgate exits after its input ends")
        .unwrap();
    assert!(status.success(), "{status}");

    // Exactly one decision and one execution record per call, matched by trace id.
    let mut by_trace: HashMap<String, (usize, usize)> = HashMap::new();
    for r in audit_records(&state) {
        if r["server"] != "fx" || r["tool"] != "echo" {
            continue;
        }
        let counts = by_trace
            .entry(r["trace_id"].as_str().unwrap().to_owned())
            .or_default();
        match r["kind"].as_str() {
            Some("decision") => counts.0 += 1,
            Some("execution") => {
                assert_eq!(r["outcome"], "SUCCEEDED", "{r}");
                counts.1 += 1
            }
            other => panic!("unexpected record kind {other:?}: {r}"),
        }
    }
    assert_eq!(by_trace.len(), calls, "one trace id per call");
    assert!(
        by_trace.values().all(|c| *c == (1, 1)),
        "every call has exactly one decision and one execution record"
    );

    let out = std::process::Command::new(toolgate())
        .args([
            "audit",
            "verify",
            "--config",
            setup.config.to_str().unwrap(),
        ])
        .env("TOOLGATE_STATE_DIR", &state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// End to end through a real upstream: a client starts a call whose upstream streams progress without end, then
/// never reads again (but keeps its input open). The upstream's reader does not wait on it: toolgate closes the
/// client's session, says why on stderr, and exits by itself.
#[tokio::test]
async fn client_that_never_reads_progress_is_closed_and_toolgate_exits() {
    let setup = Setup::fixture(&[], json!({}));
    let mut child = Command::new(toolgate())
        .args(["serve", "--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"slow\",\"version\":\"0\"}}}\n")
        .await
        .unwrap();
    let init: Value = serde_json::from_str(&stdout.next_line().await.unwrap().unwrap()).unwrap();
    assert!(init.get("result").is_some(), "{init}");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fx__slow",
        "arguments": {"steps": 100_000_000u64, "delay_ms": 0}, "_meta": {"progressToken": "p"}}});
    let mut line = serde_json::to_vec(&call).unwrap();
    line.push(b'\n');
    stdin.write_all(&line).await.unwrap();
    // From here on nothing reads stdout.
    let closed = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("closing the client's session") {
                return line;
            }
        }
        panic!("toolgate ended without saying why");
    })
    .await
    .expect("toolgate kept waiting on a client that does not read");
    assert!(closed.contains("has not read"), "{closed}");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("toolgate exits once the session is closed, with the client's input still open")
        .unwrap();
    assert!(status.success(), "{status}");
    drop((stdin, stdout));
}
