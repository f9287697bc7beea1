//! The peer over the memory link gets what it would get over a pipe: strict decoding, the size limit with the id
//! recovered, and an end of stream when the server drops its side; shutdown ends the server's input.

use super::*;
use crate::connection::{Connection, Event, Sinks};
use crate::error::CallError;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LONG: Duration = Duration::from_secs(20);

fn limits() -> Limits {
    Limits {
        max_message_bytes: 4096,
        max_depth: 32,
    }
}

fn connect() -> (Arc<Connection>, ServerEnd, mpsc::Receiver<Event>) {
    let (opened, server) = open(limits());
    let (events, events_rx) = mpsc::channel(16);
    let (refresh, _refresh_rx) = mpsc::unbounded_channel();
    let sinks = Sinks {
        events,
        progress: None,
    };
    let conn = Connection::start("mem", opened.link, opened.incoming, sinks, refresh);
    (conn, server, events_rx)
}

fn ask(
    conn: &Arc<Connection>,
    method: &'static str,
) -> tokio::task::JoinHandle<Result<Value, CallError>> {
    let conn = Arc::clone(conn);
    tokio::spawn(async move {
        conn.request(method, None, LONG, &CancellationToken::new())
            .await
    })
}

#[tokio::test]
async fn oversized_value_over_memory_fails_its_request_as_a_stdio_line_would() {
    let (conn, mut server, _events) = connect();
    let call = ask(&conn, "big");
    let sent = server.incoming.recv().await.unwrap();
    let huge = json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"text": "x".repeat(10_000)}});
    server.outgoing.send(huge).await.unwrap();
    let err = call.await.unwrap().unwrap_err();
    assert!(
        matches!(err, CallError::TooLarge { max: 4096, .. }),
        "{err}"
    );
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn value_that_is_not_jsonrpc_is_garbage_and_the_end_fails_what_waits() {
    let (conn, mut server, _events) = connect();
    let call = ask(&conn, "x");
    let _ = server.incoming.recv().await.unwrap();
    server.outgoing.send(json!({"not": "rpc"})).await.unwrap();
    server.outgoing.send(json!("a string")).await.unwrap();
    drop(server.outgoing);
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, CallError::Unavailable { .. }), "{err}");
    assert_eq!(conn.garbage_lines(), 2);
    assert!(conn.is_closed());
}

#[tokio::test]
async fn message_over_the_limit_is_not_sent_to_the_server() {
    let (conn, mut server, _events) = connect();
    let params = json!({"text": "y".repeat(10_000)});
    let err = conn
        .request("big", Some(params), LONG, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::TooLarge { .. }), "{err}");
    conn.notify("small", None).await.unwrap();
    let first = server.incoming.recv().await.unwrap();
    assert_eq!(first["method"], "small", "the oversized request never left");
}

#[tokio::test]
async fn ending_the_connection_ends_the_servers_input() {
    let (conn, mut server, _events) = connect();
    conn.end(Duration::from_millis(10)).await;
    assert!(conn.is_closed());
    assert_eq!(
        tokio::time::timeout(LONG, server.incoming.recv())
            .await
            .unwrap(),
        None
    );
    let err = conn.notify("late", None).await.unwrap_err();
    assert!(matches!(err, CallError::Unavailable { .. }), "{err}");
}
