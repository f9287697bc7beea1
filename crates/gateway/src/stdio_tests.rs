//! The stdio front end under a client that floods requests and does not read its answers.

use super::*;
use crate::guard::Guard;
use crate::session::MAX_IN_FLIGHT;
use serde_json::{json, Value};
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

/// A client connected over duplex pipes: what it writes, and its answers line by line.
struct Piped {
    input: tokio::io::DuplexStream,
    answers: tokio::io::Lines<tokio::io::BufReader<tokio::io::DuplexStream>>,
}

impl Piped {
    fn serve(gw: &Arc<Gateway>) -> (Self, tokio::task::JoinHandle<std::io::Result<()>>) {
        let (input, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, client_out) = tokio::io::duplex(64 * 1024);
        let served = tokio::spawn(serve_stdio(Arc::clone(gw), server_in, server_out));
        let answers = tokio::io::BufReader::new(client_out).lines();
        (Self { input, answers }, served)
    }

    async fn send(&mut self, msg: Value) {
        let mut line = serde_json::to_vec(&msg).unwrap();
        line.push(b'\n');
        self.input.write_all(&line).await.unwrap();
    }

    async fn answer(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.answers.next_line())
            .await
            .expect("an answer")
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }

    async fn initialize(&mut self) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
        )
        .await;
        assert!(self.answer().await.get("result").is_some());
    }
}

/// A writer that hangs (a disk that stops answering) must not hang calls or lose their records: a call waits for
/// room at most the bound, then calls fail closed with `AUDIT_UNAVAILABLE` naming the stall; once the writer
/// resumes calls run again, and every call that ran has its decision and execution records.
#[tokio::test(flavor = "current_thread")]
async fn stalled_audit_writer_fails_calls_closed_after_the_bound_and_loses_no_record() {
    const CALLS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let wait = Duration::from_millis(300);
    let state = Arc::new(
        crate::state::State::open_with_queue(&dir.path().join("state"), &ws, 4, wait).unwrap(),
    );
    let config = config::Config::empty();
    let guard = Guard::load(&config, &ws).unwrap();
    let opts = crate::gateway::Options::from_config(&config, false);
    let gw = Gateway::start(&config, opts, Arc::new(guard), Some(Arc::clone(&state)));
    let (mut client, served) = Piped::serve(&gw);
    client.initialize().await;
    let call = |id: usize| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": crate::contract::CAPABILITIES_TOOL, "arguments": {}}})
    };

    state.stall_writer(true);
    let started = std::time::Instant::now();
    let (mut ran, mut refused) = (0, 0);
    for id in 1..=CALLS {
        client.send(call(id)).await;
        let answer = client.answer().await;
        match answer.pointer("/result/structuredContent/error/code") {
            Some(code) => {
                assert_eq!(code, "AUDIT_UNAVAILABLE", "{answer}");
                let text = answer
                    .pointer("/result/content/0/text")
                    .unwrap()
                    .to_string();
                assert!(text.contains("stalled"), "{text}");
                refused += 1;
            }
            None => {
                assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
                ran += 1;
            }
        }
    }
    let took = started.elapsed();
    assert!(refused > 0 && ran > 0, "{ran} ran, {refused} refused");
    assert!(
        took < wait * 10,
        "the bound held: {CALLS} calls took {took:?}"
    );

    state.stall_writer(false);
    let mut resumed = false;
    for id in CALLS + 1..CALLS + 100 {
        client.send(call(id)).await;
        let answer = client.answer().await;
        if answer.pointer("/result/structuredContent/error").is_none() {
            ran += 1;
            resumed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(resumed, "calls resume once the writer catches up");
    state.flush();
    let records = state.audit_tail(1_000);
    let executions: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "execution" && r["outcome"] != "REFUSED")
        .collect();
    assert_eq!(
        executions.len(),
        ran,
        "one execution record per call that ran"
    );
    let refusals = records
        .iter()
        .filter(|r| r["kind"] == "execution" && r["outcome"] == "REFUSED")
        .count();
    assert!(
        refusals >= refused,
        "every refused call has its finished record"
    );
    for e in executions {
        let decided = records
            .iter()
            .any(|r| r["kind"] == "decision" && r["trace_id"] == e["trace_id"]);
        assert!(decided, "the call that ran has its decision record: {e}");
    }
    assert!(state.verify_audit().unwrap().is_ok());
    drop(client);
    served.await.unwrap().unwrap();
    gw.shutdown().await;
}

/// One upstream streams progress to client A, which stopped reading, and log messages to every client. The
/// upstream's reader and the event loop deliver without waiting: A's session is closed once its outbox is full
/// (it ends by itself although A never closed its input), toolgate holds no more than A's byte budget for it,
/// and client B, which reads, receives every message.
#[tokio::test(flavor = "current_thread")]
async fn client_that_never_reads_is_closed_not_waited_on() {
    const MESSAGES: usize = 5_000;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let (mut a, a_served) = Piped::serve(&gw);
    a.initialize().await;
    let a_session = gw.live_sessions().pop().unwrap();
    let (mut b, b_served) = Piped::serve(&gw);
    b.initialize().await;
    let b_reader = tokio::spawn(async move {
        let mut logs = 0;
        while logs < MESSAGES {
            if b.answer().await["method"] == "notifications/message" {
                logs += 1;
            }
        }
        b
    });
    let route = gw.register_progress(crate::pipeline::Progress {
        token: json!("a-token"),
        sink: a_session.clone(),
    });
    let routes = gw.progress_routes();
    let flood = async {
        for i in 0..MESSAGES {
            // What one upstream's reader delivers: progress for A's call, then a log line for every client.
            let progress =
                json!({"progressToken": route.token, "progress": i, "message": "p".repeat(1024)});
            assert!(routes.deliver(&progress));
            let log = json!({"level": "info", "data": "m".repeat(1024)});
            gw.on_event(upstream::Event::Notification {
                server: "fx".into(),
                method: "notifications/message".into(),
                params: Some(log),
            })
            .await;
            // The reader reads its pipe between messages, which lets the clients' writers run.
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), flood)
        .await
        .expect(
            "the upstream's reader and the event loop were held by a client that does not read",
        );
    assert!(!a_session.is_open(), "A is closed");
    let outbox = a_session.outbox();
    assert!(
        outbox.peak_bytes() <= outbox.max_bytes(),
        "{} bytes queued for A, over its budget of {}",
        outbox.peak_bytes(),
        outbox.max_bytes()
    );
    tokio::time::timeout(Duration::from_secs(10), a_served)
        .await
        .expect("A's session ended by itself")
        .unwrap()
        .unwrap();
    let b = tokio::time::timeout(Duration::from_secs(60), b_reader)
        .await
        .expect("B received every message")
        .unwrap();
    drop((a, b));
    b_served.await.unwrap().unwrap();
    drop(route);
    gw.shutdown().await;
}

/// A few huge answers, not many small ones: the queue to a client is bounded in bytes. A client that asks for
/// 160 answers of 512 KiB each (80 MiB, far under the message count a count bound allows) and reads none is
/// closed once its backlog passes the byte budget, and no more than the budget was ever queued for it.
#[tokio::test(flavor = "current_thread")]
async fn huge_results_are_bounded_in_bytes_not_only_count() {
    const CALLS: usize = 160;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let (mut client, served) = Piped::serve(&gw);
    client.initialize().await;
    let session = gw.live_sessions().pop().unwrap();
    // An unknown tool's name is quoted back in the error: an answer as large as the request.
    let name = "n".repeat(512 * 1024);
    let Piped { mut input, answers } = client;
    let writer = tokio::spawn(async move {
        for id in 1..=CALLS {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": {}}});
            let mut line = serde_json::to_vec(&call).unwrap();
            line.push(b'\n');
            if input.write_all(&line).await.is_err() {
                break; // toolgate stopped reading: the session is over
            }
        }
        input
    });
    tokio::time::timeout(Duration::from_secs(60), served)
        .await
        .expect("the session of a client that reads nothing ends by itself")
        .unwrap()
        .unwrap();
    let outbox = session.outbox();
    assert!(outbox.is_closed());
    assert!(
        outbox.peak_bytes() <= outbox.max_bytes(),
        "{} bytes queued, over the budget of {}",
        outbox.peak_bytes(),
        outbox.max_bytes()
    );
    drop(answers);
    drop(writer.await.unwrap());
    gw.shutdown().await;
}
