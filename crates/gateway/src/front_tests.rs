//! The transport-neutral session API, driven with no process and no transport: the stream each outgoing message
//! is tagged with, the checks made with each message's `RequestMeta`, and the answers to framing errors.

use crate::front::FramingError;
use crate::gateway::Gateway;
use crate::outbox::Stream;
use crate::rebuild::ListKind;
use crate::session::Session;
use crate::state::State;
use crate::testkit::Wire;
use jsonrpc::Id;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A client of the public API that names its own request ids and sees each message's stream; a front end minus
/// the transport (`testkit::Wire`).
pub(crate) struct Client {
    pub wire: Wire,
}

impl Client {
    pub(crate) fn open(gw: &Arc<Gateway>) -> Self {
        Self {
            wire: Wire::open(gw),
        }
    }

    pub(crate) fn session(&self) -> &Arc<Session> {
        &self.wire.session
    }

    pub(crate) async fn send(&self, msg: Value) {
        self.wire.handle(&msg).await;
    }

    pub(crate) async fn request(&self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    /// The next outgoing message and its stream.
    pub(crate) async fn next(&mut self) -> (Stream, Value) {
        tokio::time::timeout(Duration::from_secs(30), self.wire.next())
            .await
            .expect("a message within 30 s")
            .expect("the session is open")
    }

    /// Closes the session and waits (bounded) until its requests have ended: a call still held would otherwise
    /// be cancelled only after the gateway shut down.
    pub(crate) async fn closed(&self) {
        self.wire.close();
        for _ in 0..100 {
            if Arc::strong_count(self.session()) == 1 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Whether the drain has ended (bounded wait).
    pub(crate) async fn ended(&mut self) -> bool {
        self.wire.ended(Duration::from_secs(10)).await
    }

    pub(crate) async fn initialize(&mut self, capabilities: Value) {
        self.request(
            json!(0),
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities}),
        )
        .await;
        let (stream, answer) = self.next().await;
        assert_eq!(stream, Stream::Request(Id::Int(0)));
        assert!(answer.get("result").is_some(), "{answer}");
    }
}

/// A gateway with no upstream, configured by `config` (JSON), its workspace and state under `dir`.
fn gateway(dir: &Path, config: Value) -> Arc<Gateway> {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let config = config::parse_str(
        &config.to_string(),
        config::Format::Json,
        Path::new("toolgate.json"),
        &|_| None,
        &config::Overrides::default(),
    )
    .unwrap();
    let state = State::open_in(&dir.join("state"), &ws).unwrap();
    crate::testkit::gateway(&config, &ws, Some(Arc::new(state)))
}

/// `toolgate_status` is held for a human; nothing decides, so the call waits `wait_seconds`.
fn held_status(dir: &Path, elicitation: bool) -> Arc<Gateway> {
    gateway(
        dir,
        json!({
            "permissions": {"default": "allow", "ask": ["mcp__toolgate__toolgate_status"]},
            "approvals": {"wait_seconds": 1, "elicitation": elicitation}
        }),
    )
}

fn held_call(id: i64) -> (Value, Value) {
    let params =
        json!({"name": "toolgate_status", "arguments": {}, "_meta": {"progressToken": "tok"}});
    (json!(id), params)
}

#[tokio::test]
async fn responses_carry_the_stream_of_their_request() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), json!({}));
    let mut client = Client::open(&gw);
    client.initialize(json!({})).await;
    client.request(json!("p"), "ping", json!({})).await;
    let (stream, answer) = client.next().await;
    assert_eq!(stream, Stream::Request(Id::Str("p".into())));
    assert_eq!(answer["id"], "p");
    let call = json!({"name": "toolgate_status", "arguments": {}});
    client.request(json!(5), "tools/call", call).await;
    let (stream, answer) = client.next().await;
    assert_eq!(stream, Stream::Request(Id::Int(5)));
    assert!(answer["result"]["content"].is_array(), "{answer}");
    gw.shutdown().await;
}

/// A call held for approval tells its client it is still waiting, on the call's stream, then answers there.
#[tokio::test]
async fn held_call_waiting_notification_carries_the_calls_stream() {
    let dir = tempfile::tempdir().unwrap();
    let gw = held_status(dir.path(), false);
    let mut client = Client::open(&gw);
    client.initialize(json!({})).await;
    let (id, params) = held_call(7);
    client.request(id, "tools/call", params).await;
    let (stream, waiting) = client.next().await;
    assert_eq!(waiting["method"], "notifications/progress", "{waiting}");
    assert_eq!(waiting["params"]["progressToken"], "tok");
    assert_eq!(stream, Stream::Request(Id::Int(7)));
    let answer = loop {
        let (stream, msg) = client.next().await;
        assert_eq!(stream, Stream::Request(Id::Int(7)), "{msg}");
        if msg.get("id").is_some() {
            break msg;
        }
    };
    assert_eq!(
        answer["result"]["structuredContent"]["outcome"], "APPROVAL_REQUIRED",
        "{answer}"
    );
    gw.shutdown().await;
}

/// The approval question toolgate asks through the client is about one call: it goes on that call's stream.
#[tokio::test]
async fn approval_question_carries_the_calls_stream() {
    let dir = tempfile::tempdir().unwrap();
    let gw = held_status(dir.path(), true);
    let mut client = Client::open(&gw);
    client.initialize(json!({"elicitation": {}})).await;
    let (id, params) = held_call(8);
    client.request(id, "tools/call", params).await;
    let question = loop {
        let (stream, msg) = client.next().await;
        assert_eq!(stream, Stream::Request(Id::Int(8)), "{msg}");
        if msg["method"] == "elicitation/create" {
            break msg;
        }
    };
    let declined = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}});
    client.send(declined).await;
    client.closed().await;
    gw.shutdown().await;
}

/// Progress an upstream sends for a forwarded call names the token the client gave with that call: it goes on
/// the call's stream. A token no request in flight gave has no request to belong to. Its message holds none of
/// the server's credentials' values.
#[tokio::test]
async fn forwarded_progress_carries_the_stream_of_the_request_that_gave_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let gw = held_status(dir.path(), false);
    let mut client = Client::open(&gw);
    client.initialize(json!({})).await;
    let (id, params) = held_call(9);
    client.request(id, "tools/call", params).await;
    let (_, waiting) = client.next().await;
    assert_eq!(waiting["method"], "notifications/progress");
    let routes: Arc<dyn upstream::ProgressRoutes> = gw.stages.progress.clone();
    let credentials = Arc::new(crate::credentials::Credentials::new(&[
        config::Credential {
            name: "fx-key".into(),
            server: "fx".into(),
            target: config::CredentialTarget::Env("FX_KEY".into()),
            secret: config::Secret::new("progress-secret-0123".into()),
            grant: config::Grant::Everyone,
            source: config::SecretSource::Value,
        },
    ]));
    for (client_token, expected) in [
        (json!("tok"), Stream::Request(Id::Int(9))),
        (json!("other"), Stream::Request(Id::Int(10))),
    ] {
        let Stream::Request(request) = &expected else {
            unreachable!()
        };
        let route = gw.stages.progress.register(
            client.session().progress_for(request, client_token.clone()),
            "fx",
            Arc::clone(&credentials),
        );
        let message = "step 1 with progress-secret-0123";
        assert!(routes
            .deliver(&json!({"progressToken": route.token, "progress": 1, "message": message})));
        let (stream, progress) = loop {
            let (stream, msg) = client.next().await;
            if msg["params"]["progress"] == 1 {
                break (stream, msg);
            }
        };
        assert_eq!(progress["params"]["progressToken"], client_token);
        assert_eq!(progress["params"]["message"], "step 1 with [credential]");
        assert_eq!(stream, expected);
    }
    client.closed().await;
    gw.shutdown().await;
}

/// A list change is caused by no request of this client: a legacy client gets it on the session's stream. A
/// modern client gets it as part of its `subscriptions/listen` request, on that request's stream.
#[tokio::test]
async fn list_change_carries_the_session_stream_or_the_listen_requests() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), json!({}));
    let mut legacy = Client::open(&gw);
    legacy.initialize(json!({})).await;
    legacy.session().list_changed(ListKind::Tools).await;
    let (stream, changed) = legacy.next().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(stream, Stream::Session);

    let mut modern = Client::open(&gw);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": upstream::MODERN_VERSION,
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let listen = json!({"notifications": {"toolsListChanged": true}, "_meta": meta});
    modern
        .request(json!("l"), "subscriptions/listen", listen)
        .await;
    let (stream, ack) = modern.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(stream, Stream::Request(Id::Str("l".into())));
    modern.session().list_changed(ListKind::Tools).await;
    let (stream, changed) = modern.next().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(stream, Stream::Request(Id::Str("l".into())));
    gw.shutdown().await;
}

/// Session hijack: a session is bound to the identity its first message came with. Another identity's request
/// is refused, and its cancellation of the owner's call is dropped: the call keeps running.
#[tokio::test]
async fn session_refuses_messages_from_another_identity() {
    let dir = tempfile::tempdir().unwrap();
    let gw = held_status(dir.path(), false);
    let mut client = Client::open(&gw);
    client.wire.meta.identity = Some("alice".into());
    client.initialize(json!({})).await;
    let (id, params) = held_call(1);
    client.request(id, "tools/call", params).await;
    let (_, waiting) = client.next().await;
    assert_eq!(waiting["method"], "notifications/progress");

    for intruder in [Some("mallory".to_owned()), None] {
        client.wire.meta.identity = intruder;
        client.request(json!(2), "ping", json!({})).await;
        let (stream, refused) = client.next().await;
        assert_eq!(stream, Stream::Request(Id::Int(2)));
        assert_eq!(
            refused["error"]["code"],
            jsonrpc::INVALID_REQUEST,
            "{refused}"
        );
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
        client.send(cancel).await;
        let token = client
            .session()
            .lock()
            .in_flight
            .get(&Id::Int(1))
            .cloned()
            .unwrap();
        assert!(
            !token.is_cancelled(),
            "another identity cancelled the owner's call"
        );
    }
    client.wire.meta.identity = Some("alice".into());
    client.request(json!(3), "ping", json!({})).await;
    let (_, pong) = client.next().await;
    assert_eq!(pong["result"], json!({}), "{pong}");
    client.closed().await;
    gw.shutdown().await;
}

/// The version a transport declares must be the version the message is read in.
#[tokio::test]
async fn transport_version_that_disagrees_with_the_message_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), json!({}));
    let code = |msg: &Value| msg["error"]["code"].as_i64();

    let mut unknown = Client::open(&gw);
    unknown.wire.meta.protocol_version = Some("1999-01-01".into());
    unknown.request(json!(1), "ping", json!({})).await;
    assert_eq!(
        code(&unknown.next().await.1),
        Some(jsonrpc::UNSUPPORTED_PROTOCOL_VERSION)
    );

    let mut legacy = Client::open(&gw);
    legacy.wire.meta.protocol_version = Some("2025-06-18".into());
    legacy.initialize(json!({})).await;
    legacy.request(json!(1), "ping", json!({})).await;
    assert_eq!(code(&legacy.next().await.1), Some(jsonrpc::HEADER_MISMATCH));
    legacy.wire.meta.protocol_version = Some("2025-11-25".into());
    legacy.request(json!(2), "ping", json!({})).await;
    assert_eq!(code(&legacy.next().await.1), None);

    let mut modern = Client::open(&gw);
    modern.wire.meta.protocol_version = Some("2025-11-25".into());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": upstream::MODERN_VERSION,
                      "io.modelcontextprotocol/clientCapabilities": {}});
    modern
        .request(json!(1), "server/discover", json!({"_meta": meta}))
        .await;
    assert_eq!(code(&modern.next().await.1), Some(jsonrpc::HEADER_MISMATCH));
    modern.wire.meta.protocol_version = Some(upstream::MODERN_VERSION.into());
    modern
        .request(json!(2), "server/discover", json!({"_meta": meta}))
        .await;
    assert_eq!(code(&modern.next().await.1), None);
    gw.shutdown().await;
}

/// Framing errors are answered by the session: on the stream of the id read from the frame, else the session's.
#[tokio::test]
async fn framing_errors_are_answered_on_the_stream_of_their_id() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), json!({}));
    let mut client = Client::open(&gw);
    let limits = client.session().limits();
    let bad = jsonrpc::decode(br#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#, &limits).unwrap_err();
    client
        .session()
        .answer_framing_error(FramingError::Undecodable(bad))
        .await;
    let (stream, answer) = client.next().await;
    assert_eq!(stream, Stream::Request(Id::Int(4)));
    assert_eq!(answer["id"], 4);
    client
        .session()
        .answer_framing_error(FramingError::Oversized {
            len: 1 << 30,
            id: None,
        })
        .await;
    let (stream, answer) = client.next().await;
    assert_eq!(stream, Stream::Session);
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], jsonrpc::PARSE_ERROR);
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("exceeds the limit"));
    gw.shutdown().await;
}

/// Closing a session keeps what was already queued for its client: the drain yields it, then ends once the
/// session and its requests are gone, so a front end flushes the last answers and stops without a timeout.
#[tokio::test]
async fn drain_yields_what_was_queued_then_ends_after_close() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), json!({}));
    let mut client = Client::open(&gw);
    client.initialize(json!({})).await;
    client.request(json!(1), "ping", json!({})).await;
    // The ping's answer is queued by its own task; it is in the outbox once the task has let go of the session.
    client.closed().await;
    let mut drain = client.wire.release();
    let answer = drain.next().await.expect("the answer queued before close");
    assert_eq!(answer.stream(), &Stream::Request(Id::Int(1)));
    let ended = tokio::time::timeout(Duration::from_secs(10), drain.next()).await;
    assert!(
        matches!(ended, Ok(None)),
        "the drain ends once nothing can send"
    );
    gw.shutdown().await;
}

#[test]
fn a_request_task_scoped_to_its_traceparent_is_not_twice_its_own_size() {
    let holding = || async {
        let state = [1u8; 4096];
        tokio::task::yield_now().await;
        state[4095]
    };
    let inner = std::mem::size_of_val(&holding());
    for traceparent in [
        None,
        Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned()),
    ] {
        let scoped = super::with_traceparent(traceparent, holding());
        let size = std::mem::size_of_val(&scoped);
        assert!(size < inner + 128, "{inner} bytes became {size}");
    }
}
