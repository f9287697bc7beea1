//! The stdio front end under a client that floods requests and does not read its answers.

use super::*;
use crate::guard::Guard;
use crate::session::MAX_IN_FLIGHT;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

fn gateway(workspace: &std::path::Path) -> Arc<Gateway> {
    let config = config::Config::empty();
    let guard = Guard::load(&config, workspace).unwrap();
    let opts = crate::gateway::Options::from_config(&config, false);
    Gateway::start(&config, opts, Arc::new(guard), None)
}

/// 9.13: one task per request made a client that never reads grow toolgate without bound. Requests in flight
/// are bounded and the reader stops; once the client reads, every request is answered.
#[tokio::test(flavor = "current_thread")]
async fn client_that_never_reads_holds_bounded_tasks_and_is_served_once_it_reads() {
    const REQUESTS: usize = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let (mut client_in, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, client_out) = tokio::io::duplex(64 * 1024);
    let served = tokio::spawn(serve_stdio(Arc::clone(&gw), server_in, server_out));
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = Arc::clone(&written);
    let writer = tokio::spawn(async move {
        client_in
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}\n")
            .await
            .unwrap();
        for id in 1..=REQUESTS {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
            client_in.write_all(line.as_bytes()).await.unwrap();
            count.store(id, std::sync::atomic::Ordering::Relaxed);
        }
        client_in
    });
    // Let the gateway run until it can make no more progress without the client reading.
    let metrics = tokio::runtime::Handle::current().metrics();
    let mut peak = 0;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        peak = peak.max(metrics.num_alive_tasks());
    }
    let sent = written.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        sent < REQUESTS,
        "the gateway kept reading ({sent} requests) although nobody read its answers"
    );
    // The serve task, its writer, the event loop, the in-flight requests, and the test's own tasks.
    assert!(
        peak <= MAX_IN_FLIGHT + 16,
        "{peak} tasks alive with {MAX_IN_FLIGHT} requests allowed in flight"
    );
    let mut lines = tokio::io::BufReader::new(client_out).lines();
    let mut answered = 0;
    while answered < REQUESTS + 1 {
        let line = lines.next_line().await.unwrap().unwrap();
        let msg: Value = serde_json::from_str(&line).unwrap();
        assert!(msg.get("result").is_some(), "{msg}");
        answered += 1;
    }
    drop(writer.await.unwrap());
    served.await.unwrap().unwrap();
    gw.shutdown().await;
}
