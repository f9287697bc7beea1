//! OpenTelemetry and Prometheus end to end: a collector stand-in receives OTLP/HTTP protobuf on loopback; a
//! 2026-07-28 client calls through `toolgate serve --http` with a `traceparent`, to a second toolgate serving the
//! fixture over Streamable HTTP (the HTTP upstream), both exporting to the stand-in. The client's trace id is on
//! every span, the call's span is the child of the client's span, each stage has its span, the upstream's call is
//! the child of the execute stage (so the `traceparent` reached it), and no argument value is in what was
//! exported. `/metrics` on the admin surface counts the calls by decision, reason and outcome, times the stages,
//! shows the upstream up, and needs the admin key like the rest of the admin surface. Over the WebSocket entry
//! point the upgrade's `traceparent` is the parent of every call the socket carries.

use crate::support::{fixture, toolgate, ServedHttp, Setup};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{json, Value};
use sha2::Digest;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ADMIN_KEY: &str = "admin-key-0123456789abcdef";
/// An argument value that must never be exported.
const SECRET: &str = "argument-value-7f3a9c";
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// What the stand-in received: every request body posted to `/v1/traces`.
type Received = Arc<Mutex<Vec<Vec<u8>>>>;

/// An OTLP/HTTP collector stand-in on a free loopback port: its base URL and what it received.
async fn collector() -> (String, Received) {
    let received: Received = Arc::default();
    let kept = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = Arc::clone(&kept);
            async move {
                kept.lock().unwrap().push(body.to_vec());
                // An empty ExportTraceServiceResponse: everything accepted.
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), received)
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

fn serve(setup: &Setup) -> ServedHttp {
    let mut cmd = Command::new(toolgate());
    cmd.args(["serve", "--config"])
        .arg(&setup.config)
        .args(["--http", "127.0.0.1:0"])
        .env("TOOLGATE_STATE_DIR", setup.state_dir());
    ServedHttp::spawn(cmd)
}

/// The upstream: a toolgate serving the fixture over Streamable HTTP, exporting as service `upstream`.
fn upstream(collector: &str) -> Setup {
    Setup::new(json!({
        "mcpServers": {"fx": fixture(&[])},
        "prefixTools": false,
        "permissions": {"default": "allow"},
        "telemetry": {"otlp": {"endpoint": collector, "serviceName": "upstream"}}
    }))
}

/// The gateway under test: the upstream as `remote`, `add` denied, metrics behind the admin key.
fn gateway(collector: &str, upstream_url: &str) -> Setup {
    let digest = hex::encode(sha2::Sha256::digest(ADMIN_KEY.as_bytes()));
    Setup::new(json!({
        "mcpServers": {"remote": {"type": "http", "url": upstream_url}},
        "permissions": {"default": "allow", "deny": ["mcp__remote__add"]},
        "pins": {"newTools": "accept"},
        "http": {"admin": {"keySha256": digest}},
        "telemetry": {"otlp": {"endpoint": collector, "serviceName": "gateway"}, "metrics": true}
    }))
}

/// One 2026-07-28 `tools/call` (a session of its own) with `traceparent`; the JSON-RPC answer.
async fn call(http: &reqwest::Client, url: &str, tool: &str, args: Value) -> Value {
    request(http, url, "tools/call", tool, args).await
}

/// One 2026-07-28 request naming `name` (a tool or a prompt) with `arguments`, with `traceparent`.
async fn request(
    http: &reqwest::Client,
    url: &str,
    method: &str,
    name: &str,
    arguments: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
        "name": name, "arguments": arguments, "_meta": test_support::modern_meta()}});
    let text = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    crate::support::answer_in(&text)
}

/// A span as exported, with the service that sent it.
#[derive(Debug, Clone)]
struct Seen {
    service: String,
    span: Span,
}

impl Seen {
    fn attr(&self, key: &str) -> Option<String> {
        let kv = self.span.attributes.iter().find(|kv| kv.key == key)?;
        match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.clone()),
            other => Some(format!("{other:?}")),
        }
    }
}

fn decode(received: &Received) -> Vec<Seen> {
    let mut out = Vec::new();
    for body in received.lock().unwrap().iter() {
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("OTLP protobuf");
        for resource in request.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                    Any::StringValue(s) => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            for scope in resource.scope_spans {
                for span in scope.spans {
                    out.push(Seen {
                        service: service.clone(),
                        span,
                    });
                }
            }
        }
    }
    out
}

/// Waits until `done` holds of what was exported (spans are sent about every second).
async fn exported(received: &Received, done: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen = decode(received);
        if done(&seen) {
            return seen;
        }
        assert!(Instant::now() < deadline, "not exported in time: {seen:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_stages_are_spans_of_the_clients_trace_and_the_upstream_joins_it() {
    let (collector, received) = collector().await;
    let up_setup = upstream(&collector);
    let up = serve(&up_setup);
    let gw_setup = gateway(&collector, &up.url);
    let gw = serve(&gw_setup);
    let http = client();

    let echoed = call(&http, &gw.url, "remote__echo", json!({"text": SECRET})).await;
    assert!(echoed.to_string().contains(SECRET), "{echoed}");
    let denied = call(&http, &gw.url, "remote__add", json!({"a": 1, "b": 2})).await;
    let prompt = request(
        &http,
        &gw.url,
        "prompts/get",
        "remote__greet",
        json!({"name": SECRET}),
    )
    .await;
    assert!(prompt["result"]["messages"].is_array(), "{prompt}");
    assert!(
        denied.to_string().contains("deny") || denied["result"]["isError"] == true,
        "{denied}"
    );

    let trace = hex::decode(CLIENT_TRACE).unwrap();
    let seen = exported(&received, |seen| {
        let calls = seen.iter().filter(|s| s.span.name == "toolgate.call");
        calls.filter(|s| s.span.trace_id == trace).count() >= 5
    })
    .await;
    let ours: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.service == "gateway" && s.span.trace_id == trace)
        .collect();
    let call_of = |tool: &str| {
        ours.iter()
            .find(|s| {
                s.span.name == "toolgate.call" && s.attr("toolgate.tool").as_deref() == Some(tool)
            })
            .unwrap_or_else(|| panic!("no call span for {tool}: {ours:#?}"))
    };

    let echo = call_of("echo");
    assert_eq!(echo.span.parent_span_id, hex::decode(CLIENT_SPAN).unwrap());
    assert_eq!(echo.attr("toolgate.server").as_deref(), Some("remote"));
    assert_eq!(echo.attr("toolgate.decision").as_deref(), Some("allow"));
    assert_eq!(echo.attr("toolgate.outcome").as_deref(), Some("SUCCEEDED"));
    assert!(echo
        .attr("toolgate.operation")
        .is_some_and(|o| !o.is_empty()));
    let trace_id = echo.attr("toolgate.trace_id").unwrap();
    assert!(!trace_id.is_empty());
    let stages: Vec<&str> = ours
        .iter()
        .filter(|s| s.span.parent_span_id == echo.span.span_id)
        .map(|s| s.span.name.as_str())
        .collect();
    for stage in [
        "toolgate.route",
        "toolgate.decide",
        "toolgate.record",
        "toolgate.execute",
        "toolgate.finish",
    ] {
        assert!(stages.contains(&stage), "{stage} missing among {stages:?}");
    }

    let add = call_of("add");
    assert_eq!(add.attr("toolgate.decision").as_deref(), Some("deny"));
    assert_eq!(add.attr("toolgate.outcome").as_deref(), Some("REFUSED"));
    assert_eq!(add.attr("toolgate.reason").as_deref(), Some("DENY_RULE"));

    // The upstream received the execute stage's traceparent: its call span is that stage's child.
    let execute = ours
        .iter()
        .find(|s| s.span.name == "toolgate.execute" && s.span.parent_span_id == echo.span.span_id)
        .unwrap();
    let upstream_call = seen
        .iter()
        .find(|s| {
            s.service == "upstream"
                && s.span.name == "toolgate.call"
                && s.attr("toolgate.tool").as_deref() == Some("echo")
        })
        .unwrap_or_else(|| panic!("the upstream's call span is missing: {seen:#?}"));
    assert_eq!(upstream_call.span.trace_id, trace);
    assert_eq!(upstream_call.span.parent_span_id, execute.span.span_id);

    // A prompt get takes the same path: its upstream request carries its execute stage's traceparent.
    let greet = call_of("greet");
    assert_eq!(greet.attr("toolgate.outcome").as_deref(), Some("SUCCEEDED"));
    let greet_execute = ours
        .iter()
        .find(|s| s.span.name == "toolgate.execute" && s.span.parent_span_id == greet.span.span_id)
        .unwrap_or_else(|| panic!("no execute stage under the prompt get: {ours:#?}"));
    assert!(seen.iter().any(|s| s.service == "upstream"
        && s.attr("toolgate.tool").as_deref() == Some("greet")
        && s.span.parent_span_id == greet_execute.span.span_id));

    // Arguments are never exported.
    for body in received.lock().unwrap().iter() {
        let text = String::from_utf8_lossy(body);
        assert!(!text.contains(SECRET), "an argument value was exported");
    }

    // The metrics: behind the admin key, then the counts and timings by name and labels.
    let metrics_url = gw.url.replace("/mcp", "/metrics");
    let refused = http.get(&metrics_url).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let wrong = http
        .get(&metrics_url)
        .bearer_auth("not-the-key")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let scraped = http
        .get(&metrics_url)
        .header("x-mcp-gateway-admin-key", ADMIN_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status(), 200);
    let text = scraped.text().await.unwrap();
    let has = |prefix: &str, labels: &[&str]| {
        text.lines()
            .any(|l| l.starts_with(prefix) && labels.iter().all(|x| l.contains(x)))
    };
    assert!(
        has(
            "toolgate_calls_total{",
            &[r#"decision="allow""#, r#"outcome="SUCCEEDED""#]
        ),
        "{text}"
    );
    assert!(
        has(
            "toolgate_calls_total{",
            &[
                r#"decision="deny""#,
                r#"reason="DENY_RULE""#,
                r#"outcome="REFUSED""#
            ]
        ),
        "{text}"
    );
    for stage in ["route", "decide", "record", "execute", "finish"] {
        let label = format!(r#"stage="{stage}""#);
        assert!(
            has("toolgate_stage_duration_seconds_bucket{", &[&label]),
            "{stage}: {text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l == r#"toolgate_upstream_up{server="remote"} 1"#),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l == "toolgate_approvals_held 0"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("toolgate_audit_queue_depth ")),
        "{text}"
    );
    assert!(!text.contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_telemetry_nothing_is_exported_and_metrics_are_not_served() {
    let (collector, received) = collector().await;
    let digest = hex::encode(sha2::Sha256::digest(ADMIN_KEY.as_bytes()));
    let setup = Setup::new(json!({
        "mcpServers": {"fx": fixture(&[])},
        "permissions": {"default": "allow"},
        "http": {"admin": {"keySha256": digest}}
    }));
    let gw = serve(&setup);
    let http = client();
    let echoed = call(&http, &gw.url, "fx__echo", json!({"text": "hi"})).await;
    assert!(echoed.to_string().contains("hi"), "{echoed}");
    let metrics_url = gw.url.replace("/mcp", "/metrics");
    let off = http
        .get(&metrics_url)
        .header("x-mcp-gateway-admin-key", ADMIN_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(off.status(), 404);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        received.lock().unwrap().is_empty(),
        "{collector} received spans"
    );
}

/// In code mode, what a program calls joins its run's trace: each call's span is a child of the `run_code`
/// call's execute stage, under the client's trace id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_mode_programs_calls_are_spans_of_its_runs_execute_stage() {
    let (collector, received) = collector().await;
    let setup = Setup::new(json!({
        "mcpServers": {"fx": fixture(&[])},
        "mode": "code",
        "permissions": {"default": "allow"},
        "pins": {"newTools": "accept"},
        "telemetry": {"otlp": {"endpoint": collector, "serviceName": "gateway"}}
    }));
    let gw = serve(&setup);
    let http = client();
    let program = r#"const a = await call("fx__echo", {text: "one"});
                     const b = await call("fx__echo", {text: "two"});
                     return [a, b].length;"#;
    let ran = call(&http, &gw.url, "run_code", json!({"code": program})).await;
    assert!(ran.get("result").is_some(), "{ran}");

    let trace = hex::decode(CLIENT_TRACE).unwrap();
    let seen = exported(&received, |seen| {
        let calls = seen.iter().filter(|s| s.span.name == "toolgate.call");
        calls.filter(|s| s.span.trace_id == trace).count() >= 3
    })
    .await;
    let ours: Vec<&Seen> = seen.iter().filter(|s| s.span.trace_id == trace).collect();
    let run = ours
        .iter()
        .find(|s| {
            s.span.name == "toolgate.call" && s.attr("toolgate.tool").as_deref() == Some("run_code")
        })
        .unwrap_or_else(|| panic!("no span for the run: {ours:#?}"));
    let execute = ours
        .iter()
        .find(|s| s.span.name == "toolgate.execute" && s.span.parent_span_id == run.span.span_id)
        .unwrap_or_else(|| panic!("no execute stage under the run: {ours:#?}"));
    let echoes: Vec<&&Seen> = ours
        .iter()
        .filter(|s| {
            s.span.name == "toolgate.call" && s.attr("toolgate.tool").as_deref() == Some("echo")
        })
        .collect();
    assert_eq!(echoes.len(), 2, "{ours:#?}");
    for echo in echoes {
        assert_eq!(echo.span.parent_span_id, execute.span.span_id, "{echo:#?}");
    }
}

/// A WebSocket client's calls join the trace its upgrade request carried: each call's span is the child of the
/// client's span, as a POST's is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websockets_calls_are_spans_of_the_trace_its_upgrade_carried() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message as Frame;

    let (collector, received) = collector().await;
    let setup = Setup::new(json!({
        "mcpServers": {"fx": fixture(&[])},
        "permissions": {"default": "allow"},
        "pins": {"newTools": "accept"},
        "telemetry": {"otlp": {"endpoint": collector, "serviceName": "gateway"}}
    }));
    let gw = serve(&setup);
    let ws_url = gw
        .url
        .replacen("http://", "ws://", 1)
        .replace("/mcp", "/mcp/ws");
    let mut request = ws_url.into_client_request().unwrap();
    let headers = request.headers_mut();
    headers.insert("Sec-WebSocket-Protocol", "mcp".parse().unwrap());
    let parent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    headers.insert("traceparent", parent.parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "ws-client", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "fx__echo", "arguments": {"text": SECRET}}}),
    ];
    for message in &messages {
        socket.send(Frame::text(message.to_string())).await.unwrap();
    }
    // The call's answer: the last response the socket carries.
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(20), socket.next())
            .await
            .expect("an answer in time")
            .expect("the socket open")
            .unwrap();
        let Frame::Text(text) = frame else { continue };
        let answer: Value = serde_json::from_str(&text).unwrap();
        if answer["id"] == 2 {
            assert!(answer.to_string().contains(SECRET), "{answer}");
            break;
        }
    }

    let trace = hex::decode(CLIENT_TRACE).unwrap();
    let seen = exported(&received, |seen| {
        seen.iter()
            .any(|s| s.span.name == "toolgate.call" && s.span.trace_id == trace)
    })
    .await;
    let call = seen
        .iter()
        .find(|s| s.span.name == "toolgate.call" && s.span.trace_id == trace)
        .unwrap();
    assert_eq!(call.attr("toolgate.tool").as_deref(), Some("echo"));
    assert_eq!(call.span.parent_span_id, hex::decode(CLIENT_SPAN).unwrap());
    let exported_text = format!("{seen:?}");
    assert!(!exported_text.contains(SECRET), "an argument was exported");
}
