//! The stdio front end under clients that flood requests, read nothing, or send frames that do not decode.

use frontend::serve_stdio;
use gateway::{Gateway, Guard, Options, MAX_IN_FLIGHT};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

fn gateway(workspace: &std::path::Path) -> Arc<Gateway> {
    let config = config::Config::empty();
    let guard = Guard::load(&config, workspace).unwrap();
    let opts = Options::from_config(&config, false);
    Gateway::start(&config, opts, Arc::new(guard), None)
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

    async fn write(&mut self, line: &[u8]) {
        self.input.write_all(line).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
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
        self.write(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#)
            .await;
        assert!(self.answer().await.get("result").is_some());
    }
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

/// A client that asks for huge answers and reads none is closed once its backlog passes the byte budget: the
/// front end stops reading it and returns by itself, although the client never closed its input.
#[tokio::test(flavor = "current_thread")]
async fn client_that_reads_nothing_is_ended_by_the_front_end() {
    const CALLS: usize = 160;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let (mut client, served) = Piped::serve(&gw);
    client.initialize().await;
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
    drop(answers);
    drop(writer.await.unwrap());
    gw.shutdown().await;
}

/// Frames that do not decode are answered, with the id when one could be read, and the session goes on.
#[tokio::test]
async fn undecodable_and_oversized_frames_are_answered_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let (mut client, served) = Piped::serve(&gw);
    client.initialize().await;
    client
        .write(br#"{"jsonrpc":"2.0","id":1,"method":"ping","id":2}"#)
        .await;
    let answer = client.answer().await;
    assert_eq!(answer["error"]["code"], jsonrpc::PARSE_ERROR, "{answer}");
    client.write(b"{not json").await;
    let answer = client.answer().await;
    assert_eq!(answer["error"]["code"], jsonrpc::PARSE_ERROR, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","method":"ping","params":{{"pad":"{}"}},"id":3}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    client.write(huge.as_bytes()).await;
    let answer = client.answer().await;
    assert_eq!(answer["id"], 3, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("exceeds the limit"),
        "{answer}"
    );
    client
        .write(br#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
        .await;
    assert_eq!(client.answer().await["id"], 4);
    drop(client);
    served.await.unwrap().unwrap();
    gw.shutdown().await;
}
