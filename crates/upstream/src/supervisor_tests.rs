//! One upstream's life over the in-memory link, with the fixture server in this process: the handshake in both
//! eras, the whole catalog, a call, a request from the server, and a restart when the server ends. No process.

use super::*;
use crate::era::Era;
use crate::memory::MemoryConnector;
use config::{ServerKind, ToolFilter};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use test_support::FixtureOptions;
use tokio::sync::mpsc;

const LONG: Duration = Duration::from_secs(20);

fn config(protocol: Protocol) -> ServerConfig {
    ServerConfig {
        name: "fx".into(),
        transport: Transport::Stdio {
            command: "not-spawned".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
        protocol,
        kind: ServerKind::Generic,
        request_timeout: None,
        startup_timeout: None,
        tools: ToolFilter::default(),
        notes: Vec::new(),
        sandbox: Default::default(),
    }
}

fn fixture(opts: FixtureOptions) -> Arc<MemoryConnector> {
    Arc::new(MemoryConnector::new(move |end| {
        tokio::spawn(test_support::serve(
            opts.clone(),
            end.incoming,
            end.outgoing,
        ));
    }))
}

fn era(era: &str) -> FixtureOptions {
    FixtureOptions {
        era: era.into(),
        ..FixtureOptions::default()
    }
}

struct Running {
    up: Arc<Upstream>,
    events: mpsc::Receiver<Event>,
    connector: Arc<MemoryConnector>,
}

async fn start(protocol: Protocol, opts: FixtureOptions) -> Running {
    let (tx, events) = mpsc::channel(64);
    let connector = fixture(opts);
    let options = Options {
        first_backoff: Duration::from_millis(10),
        probe_timeout: Duration::from_secs(2),
        ..Options::default()
    };
    let sinks = Sinks {
        events: tx,
        progress: None,
    };
    let up = Upstream::start_linked(config(protocol), options, sinks, connector.clone());
    up.wait_settled(LONG).await;
    assert_eq!(up.status().state, State::Ready, "{:?}", up.status());
    Running {
        up,
        events,
        connector,
    }
}

fn tool_names(catalog: &Catalog) -> Vec<&str> {
    catalog
        .tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

async fn call(up: &Upstream, name: &str, arguments: Value) -> Result<Value, CallError> {
    let conn = up.connection()?;
    let params = json!({"name": name, "arguments": arguments});
    conn.request("tools/call", Some(params), LONG, &CancellationToken::new())
        .await
}

#[tokio::test]
async fn auto_probe_agrees_on_the_modern_era_with_a_modern_server_over_memory() {
    let run = start(Protocol::Auto, era("modern")).await;
    assert_eq!(run.up.catalog().era, Some(Era::Modern));
    assert_eq!(run.up.connection().unwrap().era(), Some(Era::Modern));
    let status = run.up.status();
    assert_eq!(
        (status.pid, status.protocol_version.as_deref()),
        (None, Some("2026-07-28"))
    );
    run.up.shutdown().await;
    assert_eq!(run.up.status().state, State::Stopped);
}

#[tokio::test]
async fn legacy_server_is_initialized_in_its_own_version_over_memory() {
    let run = start(Protocol::Auto, era("legacy")).await;
    assert_eq!(run.up.catalog().era, Some(Era::Legacy("2025-11-25".into())));
    let echoed = call(&run.up, "echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(echoed["structuredContent"], json!({"text": "hi"}));
    run.up.shutdown().await;
}

#[tokio::test]
async fn catalog_walks_every_page_of_every_list() {
    let opts = FixtureOptions {
        extra_tools: 120,
        page_size: 7,
        ..FixtureOptions::default()
    };
    let run = start(Protocol::Modern, opts).await;
    let catalog = run.up.catalog();
    let names = tool_names(&catalog);
    assert!(
        names.contains(&"echo") && names.contains(&"tool_119"),
        "{names:?}"
    );
    assert_eq!(names.iter().filter(|n| n.starts_with("tool_")).count(), 120);
    assert!(!catalog.resources.is_empty() && !catalog.prompts.is_empty());
    assert!(catalog.list_errors.is_empty(), "{:?}", catalog.list_errors);
    run.up.shutdown().await;
}

#[tokio::test]
async fn a_call_is_answered_through_the_memory_link() {
    let run = start(Protocol::Modern, FixtureOptions::default()).await;
    let sum = call(&run.up, "add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(sum["structuredContent"], json!({"sum": 5.0}));
    assert_eq!(sum["resultType"], "complete");
    run.up.shutdown().await;
}

#[tokio::test]
async fn upstream_request_arrives_as_an_event_and_its_answer_reaches_the_server() {
    let mut run = start(Protocol::Modern, FixtureOptions::default()).await;
    let up = Arc::clone(&run.up);
    let sampled = tokio::spawn(async move { call(&up, "sample", json!({"prompt": "p"})).await });
    let (id, method) = loop {
        match tokio::time::timeout(LONG, run.events.recv()).await {
            Ok(Some(Event::Request { id, method, .. })) => break (id, method),
            Ok(Some(_)) => continue,
            other => panic!("no request from the server: {other:?}"),
        }
    };
    assert_eq!(method, "sampling/createMessage");
    let answer = json!({"role": "assistant", "content": {"type": "text", "text": "sampled"}});
    let conn = run.up.connection().unwrap();
    conn.respond(id, Ok(answer.clone())).await.unwrap();
    let result = sampled.await.unwrap().unwrap();
    assert_eq!(result["structuredContent"], answer);
    run.up.shutdown().await;
}

#[tokio::test]
async fn server_that_ends_fails_the_call_and_is_restarted_with_a_fresh_link() {
    let run = start(Protocol::Modern, FixtureOptions::default()).await;
    let err = call(&run.up, "crash", json!({})).await.unwrap_err();
    assert!(matches!(err, CallError::Unavailable { .. }), "{err}");
    let deadline = Instant::now() + LONG;
    while !(run.up.status().state == State::Ready && run.up.status().restarts == 1) {
        assert!(
            Instant::now() < deadline,
            "not restarted: {:?}",
            run.up.status()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(run.connector.lives(), 2);
    let echoed = call(&run.up, "echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(echoed["structuredContent"], json!({"text": "again"}));
    run.up.shutdown().await;
}
