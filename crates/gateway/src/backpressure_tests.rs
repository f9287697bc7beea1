//! Sessions under clients that do not read and an audit writer that stalls, driven through the public session API
//! with no transport: the bounds hold, and nothing one client does stalls another. (A client that floods requests
//! through the stdio front end is tested with that front end.)

use super::tests::Client;
use crate::gateway::Gateway;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

fn gateway(workspace: &std::path::Path) -> Arc<Gateway> {
    crate::testkit::gateway(&config::Config::empty(), workspace, None)
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
    let gw = crate::testkit::gateway(&config::Config::empty(), &ws, Some(Arc::clone(&state)));
    let mut client = Client::open(&gw);
    client.initialize(json!({})).await;
    let call = |id: usize| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": crate::contract::CAPABILITIES_TOOL, "arguments": {}}})
    };

    state.stall_writer(true);
    let started = std::time::Instant::now();
    let (mut ran, mut refused) = (0, 0);
    for id in 1..=CALLS {
        client.send(call(id)).await;
        let (_, answer) = client.next().await;
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
        let (_, answer) = client.next().await;
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
    client.session().close();
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
    let mut a = Client::open(&gw);
    a.initialize(json!({})).await;
    let a_session = Arc::clone(a.session());
    let mut b = Client::open(&gw);
    b.initialize(json!({})).await;
    let b_reader = tokio::spawn(async move {
        let mut logs = 0;
        while logs < MESSAGES {
            if b.next().await.1["method"] == "notifications/message" {
                logs += 1;
            }
        }
        b
    });
    let route = gw.stages.progress.register(
        a_session.progress_for(&jsonrpc::Id::Int(1), json!("a-token")),
        "fx",
        Arc::default(),
    );
    let routes: Arc<dyn upstream::ProgressRoutes> = gw.stages.progress.clone();
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
    tokio::time::timeout(Duration::from_secs(10), a.session().closed())
        .await
        .expect("A's session ended by itself");
    assert!(a.ended().await, "A's drain ends once its session is closed");
    let b = tokio::time::timeout(Duration::from_secs(60), b_reader)
        .await
        .expect("B received every message")
        .unwrap();
    b.session().close();
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
    let mut client = Client::open(&gw);
    client.initialize(json!({})).await;
    let session = Arc::clone(client.session());
    // An unknown tool's name is quoted back in the error: an answer as large as the request.
    let name = "n".repeat(512 * 1024);
    let calls = async {
        for id in 1..=CALLS {
            let call = json!({"name": name, "arguments": {}});
            // What a front end does: stop reading the client once its session is closed.
            tokio::select! {
                () = session.closed() => break,
                () = client.request(json!(id), "tools/call", call) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), calls)
        .await
        .expect("the handling of a client that reads nothing never waits for it");
    tokio::time::timeout(Duration::from_secs(60), session.closed())
        .await
        .expect("the session of a client that reads nothing ends by itself");
    assert!(client.ended().await);
    let outbox = session.outbox();
    assert!(outbox.is_closed());
    assert!(
        outbox.peak_bytes() <= outbox.max_bytes(),
        "{} bytes queued, over the budget of {}",
        outbox.peak_bytes(),
        outbox.max_bytes()
    );
    gw.shutdown().await;
}
