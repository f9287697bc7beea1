//! The routing rules in isolation, for what the fixture upstream cannot be made to do: an upstream withdrawing a
//! request it relayed, several calls of one client, a client that is gone, requests outside any call, resource
//! updates, per-session log levels, roots changes, and a log line still queued when its call ends. What an
//! upstream asks or logs during a real call, with two sessions open, is tested through forwarding in
//! `relay_flow_tests`.
//!
//! The upstream side is a stand-in: the tests hand the gateway the events an upstream's reader would deliver,
//! and mark calls in flight the way forwarding does (`Correlation::begin_for`). The upstreams are configured
//! HTTP servers, which this version lists but never connects, so nothing here starts a process.

use super::*;
use crate::testkit::Wire;
use jsonrpc::Id;
use std::time::Duration;
use upstream::Event;

fn server(name: &str, kind: config::ServerKind) -> config::ServerConfig {
    config::ServerConfig {
        name: name.to_owned(),
        transport: config::Transport::Http {
            url: format!("http://127.0.0.1:9/{name}"),
            headers: Default::default(),
            sse: false,
        },
        protocol: config::Protocol::Auto,
        kind,
        request_timeout: None,
        startup_timeout: None,
        tools: Default::default(),
        notes: Vec::new(),
        sandbox: Default::default(),
    }
}

fn gateway(workspace: &std::path::Path, servers: &[(&str, config::ServerKind)]) -> Arc<Gateway> {
    let mut config = config::Config::empty();
    config.servers = servers.iter().map(|(n, k)| server(n, *k)).collect();
    crate::testkit::gateway(&config, workspace, None)
}

/// One client: its session, and what toolgate queued for it, over `testkit::Wire` (whose `session` the tests
/// reach through this client).
struct Client {
    wire: Wire,
    next_id: i64,
}

impl std::ops::Deref for Client {
    type Target = Wire;

    fn deref(&self) -> &Wire {
        &self.wire
    }
}

impl Client {
    /// A legacy client that declared `capabilities`.
    async fn open(gw: &Arc<Gateway>, capabilities: Value) -> Self {
        let mut c = Self {
            wire: Wire::open(gw),
            next_id: 0,
        };
        let init = c
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities}),
            )
            .await;
        assert!(init.get("result").is_some(), "{init}");
        c
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.wire.handle(&msg).await;
        self.next().await.expect("an answer")
    }

    /// The next message queued for this client, if one comes soon.
    async fn next(&mut self) -> Option<Value> {
        let next = tokio::time::timeout(Duration::from_millis(200), self.wire.next()).await;
        next.ok()?.map(|(_, msg)| msg)
    }

    /// Everything queued for this client by now.
    async fn received(&mut self) -> Vec<Value> {
        let mut all = Vec::new();
        while let Some(m) = self.next().await {
            all.push(m);
        }
        all
    }
}

fn sampling(id: i64) -> Event {
    Event::Request {
        server: "fx".into(),
        id: json!(id),
        method: "sampling/createMessage".into(),
        params: Some(json!({"messages": [], "maxTokens": 5})),
        caller: None,
    }
}

fn note(server: &str, method: &str, params: Value) -> Event {
    Event::Notification {
        server: server.into(),
        method: method.into(),
        params: Some(params),
    }
}

/// The error the upstream is answered with; failing the test when the request was routed to a client.
fn refusal(gw: &Gateway, server: &str, method: &str) -> Value {
    match gw.route_request(server, method, None) {
        Ok(Target::Client(session, _)) => {
            panic!(
                "{method} of {server} was routed to session {}",
                session.session_id()
            )
        }
        Ok(Target::Bridge(..)) => panic!("{method} of {server} was routed to a bridged call"),
        Err(e) => e,
    }
}

/// The session a request was routed to and its cause; failing the test when it was refused or bridged.
fn routed(
    gw: &Gateway,
    server: &str,
    method: &str,
) -> (Arc<dyn crate::client::Client>, Option<Id>) {
    match gw.route_request(server, method, None) {
        Ok(Target::Client(session, cause)) => (session, cause),
        Ok(Target::Bridge(..)) => panic!("{method} of {server} was routed to a bridged call"),
        Err(e) => panic!("{method} of {server} was refused: {e}"),
    }
}

const GENERIC: config::ServerKind = config::ServerKind::Generic;

/// An upstream withdraws a request it relayed (`notifications/cancelled` with its own id): only the client it
/// went to hears of it, under the id toolgate gave it.
#[tokio::test]
async fn upstream_withdrawal_of_a_relayed_request_reaches_only_the_client_it_went_to() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), &[("fx", GENERIC)]);
    let mut a = Client::open(&gw, json!({"sampling": {}})).await;
    let mut b = Client::open(&gw, json!({"sampling": {}})).await;

    let a_call = gw
        .stages
        .correlation
        .begin_for("fx", &a.session, Some(Id::Int(7)));
    gw.on_event(sampling(1)).await;
    let to_a = a.received().await;
    assert_eq!(to_a.len(), 1, "{to_a:?}");
    drop(a_call);
    let b_call = gw
        .stages
        .correlation
        .begin_for("fx", &b.session, Some(Id::Int(3)));
    gw.on_event(sampling(2)).await;
    assert_eq!(b.received().await.len(), 1);

    gw.on_event(note(
        "fx",
        "notifications/cancelled",
        json!({"requestId": 1}),
    ))
    .await;
    let cancelled = a.received().await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0]["method"], "notifications/cancelled");
    assert_eq!(cancelled[0]["params"]["requestId"], to_a[0]["id"]);
    assert!(b.received().await.is_empty());
    drop(b_call);
    gw.shutdown().await;
}

/// Several calls of one client are that client's (with no single request to name as the cause); once that
/// client is gone, what the upstream asks is refused, not handed to the one still open.
#[tokio::test]
async fn upstream_request_during_several_calls_of_one_client_goes_to_it_and_is_refused_once_it_is_gone(
) {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), &[("fx", GENERIC)]);
    let a = Client::open(&gw, json!({"sampling": {}})).await;
    let mut b = Client::open(&gw, json!({"sampling": {}})).await;

    let first = gw
        .stages
        .correlation
        .begin_for("fx", &a.session, Some(Id::Int(1)));
    let second = gw
        .stages
        .correlation
        .begin_for("fx", &a.session, Some(Id::Int(2)));
    let (to, cause) = routed(&gw, "fx", "sampling/createMessage");
    assert_eq!((to.session_id(), cause), (a.session.id.as_str(), None));

    a.session.close();
    let err = refusal(&gw, "fx", "sampling/createMessage");
    assert!(
        err["message"].as_str().unwrap().contains("is gone"),
        "{err}"
    );
    gw.on_event(sampling(9)).await;
    assert!(b.received().await.is_empty());
    drop((first, second));
    gw.shutdown().await;
}

#[tokio::test]
async fn upstream_request_never_falls_back_to_another_client() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), &[("fx", GENERIC)]);
    let a = Client::open(&gw, json!({})).await;
    let mut b = Client::open(&gw, json!({"sampling": {}, "roots": {}})).await;

    // A's call caused it and A cannot answer: refused although B could.
    let call = gw.stages.correlation.begin_for("fx", &a.session, None);
    let err = refusal(&gw, "fx", "sampling/createMessage");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("did not declare the \"sampling\" capability"),
        "{err}"
    );
    gw.on_event(sampling(1)).await;
    assert!(b.received().await.is_empty());
    drop(call);

    // Outside any call: the only client that can answer it.
    let (to, _) = routed(&gw, "fx", "roots/list");
    assert_eq!(to.session_id(), b.session.id);
    let mut c = Client::open(&gw, json!({"roots": {}})).await;
    let err = refusal(&gw, "fx", "roots/list");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("2 connected clients could answer"),
        "{err}"
    );
    assert!(c.received().await.is_empty());
    gw.shutdown().await;
}

#[tokio::test]
async fn resource_updates_reach_only_subscribed_clients() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), &[("fx", GENERIC), ("gx", GENERIC)]);
    let mut a = Client::open(&gw, json!({})).await;
    let mut b = Client::open(&gw, json!({})).await;
    let uri = "fixture://static/1";
    a.session.subscribed("fx", uri);
    let updated = |server: &str, uri: &str| {
        note(
            server,
            "notifications/resources/updated",
            json!({"uri": uri}),
        )
    };

    gw.on_event(updated("fx", uri)).await;
    assert_eq!(a.received().await[0]["params"]["uri"], uri);
    assert!(b.received().await.is_empty(), "B did not subscribe");
    // Another server announcing the same URI is not the one A subscribed at.
    gw.on_event(updated("gx", uri)).await;
    gw.on_event(updated("fx", "fixture://static/2")).await;
    assert!(a.received().await.is_empty());

    // The upstream's subscription is shared: A leaving must not end B's, so it is not forwarded.
    b.session.subscribed("fx", uri);
    assert!(
        !a.session.unsubscribe("fx", uri),
        "B is still subscribed there: the upstream must not be told"
    );
    gw.on_event(updated("fx", uri)).await;
    assert!(a.received().await.is_empty(), "A unsubscribed");
    assert_eq!(b.received().await.len(), 1);
    // The last subscriber's unsubscribe goes to the upstream.
    assert!(b.session.unsubscribe("fx", uri));
    gw.shutdown().await;
}

#[tokio::test]
async fn log_levels_are_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), &[("fx", GENERIC)]);
    let mut a = Client::open(&gw, json!({})).await;
    let mut b = Client::open(&gw, json!({})).await;
    let set = a
        .request("logging/setLevel", json!({"level": "error"}))
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    assert_eq!(gw.upstream_log_level(), Some(LogLevel::Error));
    b.request("logging/setLevel", json!({"level": "debug"}))
        .await;
    assert_eq!(
        gw.upstream_log_level(),
        Some(LogLevel::Debug),
        "the most verbose"
    );
    let bad = a
        .request("logging/setLevel", json!({"level": "loud"}))
        .await;
    assert_eq!(bad["error"]["code"], jsonrpc::INVALID_PARAMS, "{bad}");

    let log = |level: &str| {
        note(
            "fx",
            "notifications/message",
            json!({"level": level, "data": level}),
        )
    };
    gw.on_event(log("info")).await;
    assert!(a.received().await.is_empty(), "A asked for errors only");
    assert_eq!(b.received().await.len(), 1);
    gw.on_event(log("critical")).await;
    assert_eq!(a.received().await.len(), 1);
    assert_eq!(b.received().await.len(), 1);

    // B leaves: upstreams follow A, the one still open.
    b.session.close();
    assert_eq!(gw.upstream_log_level(), Some(LogLevel::Error));
    gw.shutdown().await;
}

#[tokio::test]
async fn roots_change_of_one_client_does_not_reach_an_upstream_for_another() {
    let dir = tempfile::tempdir().unwrap();
    let servers = [
        ("a", GENERIC),
        ("b", GENERIC),
        ("files", config::ServerKind::Filesystem),
    ];
    let gw = gateway(dir.path(), &servers);
    let names =
        |ups: Vec<Arc<Upstream>>| ups.iter().map(|u| u.name().to_owned()).collect::<Vec<_>>();
    let a = Client::open(&gw, json!({"roots": {"listChanged": true}})).await;
    let b = Client::open(&gw, json!({"sampling": {}})).await;

    // Only A can give roots: its change reaches every upstream that takes roots; B's reaches none.
    assert_eq!(names(gw.roots_targets(&a.session)), ["a", "b"]);
    assert!(gw.roots_targets(&b.session).is_empty());

    // Both can: each reaches only the upstream its own call runs on, and none outside a call.
    let b = Client::open(&gw, json!({"roots": {}})).await;
    assert!(gw.roots_targets(&a.session).is_empty());
    let on_a = gw.stages.correlation.begin_for("a", &a.session, None);
    let on_b = gw.stages.correlation.begin_for("b", &b.session, None);
    assert_eq!(names(gw.roots_targets(&a.session)), ["a"]);
    assert_eq!(names(gw.roots_targets(&b.session)), ["b"]);
    // A filesystem server keeps the directories it was started with, whoever calls it.
    let on_files = gw.stages.correlation.begin_for("files", &a.session, None);
    assert_eq!(names(gw.roots_targets(&a.session)), ["a"]);
    drop((on_a, on_b, on_files));
    gw.shutdown().await;
}

/// An upstream writes a log line and then its answer: the answer ends the call at once, the log line still waits
/// in the event queue. The call must stay counted until that line is handled, or the line finds no call and goes
/// to every client.
#[tokio::test]
async fn log_line_queued_before_the_answer_is_still_attributed_to_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), &[("fx", GENERIC)]);
    let a = Client::open(&gw, json!({})).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let table = Arc::new(crate::correlate::Correlation::watching(tx.downgrade()));
    let attributed = |table: &crate::correlate::Correlation| matches!(table.cause("fx"), Cause::Call { client: Some(c), .. } if c.upgrade().unwrap().session_id() == a.session.id);
    let call = table.begin_for("fx", &a.session, None);
    for level in ["info", "debug"] {
        tx.send(note("fx", "notifications/message", json!({"level": level})))
            .await
            .unwrap();
    }
    drop(call);
    assert!(attributed(&table), "ended with two events queued");
    // What the event loop does: take one event, count it taken, handle it, count it handled.
    rx.recv().await.unwrap();
    table.took_one();
    table.handled_one();
    assert!(attributed(&table), "one queued event is not handled yet");
    rx.recv().await.unwrap();
    table.took_one();
    table.handled_one();
    assert!(matches!(table.cause("fx"), Cause::Idle));
    // Nothing queued: forgotten as it ends.
    drop(table.begin_for("fx", &a.session, None));
    assert!(matches!(table.cause("fx"), Cause::Idle));
    gw.shutdown().await;
}

/// The event loop has taken an upstream's log line off the queue but not handled it yet (it is still busy with
/// an event before it, say a catalog rebuild) when the call's answer ends the call. The line is no longer queued,
/// so counting the queue alone forgot the call one event early, and the line went to every client.
#[tokio::test]
async fn log_line_taken_but_not_yet_handled_when_its_call_ends_is_still_attributed_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), &[("fx", GENERIC)]);
    let a = Client::open(&gw, json!({})).await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let table = Arc::new(crate::correlate::Correlation::watching(tx.downgrade()));
    let attributed = |table: &crate::correlate::Correlation| matches!(table.cause("fx"), Cause::Call { client: Some(c), .. } if c.upgrade().unwrap().session_id() == a.session.id);

    // Taken, queue empty: the call ends while the loop handles the one event.
    let call = table.begin_for("fx", &a.session, None);
    tx.send(note(
        "fx",
        "notifications/message",
        json!({"level": "info"}),
    ))
    .await
    .unwrap();
    rx.recv().await.unwrap();
    table.took_one();
    drop(call);
    assert!(attributed(&table), "the line being handled is the call's");
    table.handled_one();
    assert!(matches!(table.cause("fx"), Cause::Idle));

    // One being handled and one queued: kept until both are handled.
    let call = table.begin_for("fx", &a.session, None);
    for level in ["info", "debug"] {
        tx.send(note("fx", "notifications/message", json!({"level": level})))
            .await
            .unwrap();
    }
    rx.recv().await.unwrap();
    table.took_one();
    drop(call);
    table.handled_one();
    assert!(attributed(&table), "the queued line is not handled yet");
    rx.recv().await.unwrap();
    table.took_one();
    table.handled_one();
    assert!(matches!(table.cause("fx"), Cause::Idle));
    gw.shutdown().await;
}

/// An HTTP upstream's request that came on a call's own answer stream names that call (`caller`): it goes to
/// that call's client although another client's call is in flight there (which, by what is in flight alone, is
/// ambiguous and refused); naming a call the table does not hold (one forgotten), it goes to nobody, never to
/// the other client.
#[tokio::test]
async fn upstream_request_naming_its_call_reaches_that_calls_client_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path(), &[("fx", GENERIC)]);
    let a = Client::open(&gw, json!({"sampling": {}})).await;
    let b = Client::open(&gw, json!({"sampling": {}})).await;
    let a_call = gw
        .stages
        .correlation
        .begin_for("fx", &a.session, Some(Id::Int(7)));
    let b_call = gw.stages.correlation.begin_for("fx", &b.session, None);
    assert!(refusal(&gw, "fx", "sampling/createMessage")["message"]
        .as_str()
        .unwrap()
        .contains("calls of 2 clients are in flight"));
    match gw.route_request("fx", "sampling/createMessage", Some(a_call.key())) {
        Ok(Target::Client(to, cause)) => {
            assert_eq!(
                (to.session_id(), cause),
                (a.session.id.as_str(), Some(Id::Int(7)))
            )
        }
        _ => panic!("not routed to the call it names"),
    }
    // Named for another server's call: nobody's.
    assert!(gw
        .route_request("other", "sampling/createMessage", Some(a_call.key()))
        .is_err());
    let gone = a_call.key() + b_call.key() + 1000;
    let err = match gw.route_request("fx", "sampling/createMessage", Some(gone)) {
        Err(e) => e,
        Ok(_) => panic!("a request naming a call that ended was routed"),
    };
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no client to ask"),
        "{err}"
    );
    drop((a_call, b_call));
    gw.shutdown().await;
}
