//! Observability of the pipeline, opt-in: OpenTelemetry spans (one per governed request, a child per stage)
//! exported over OTLP/HTTP, W3C trace context read from clients and passed to upstreams, and Prometheus metrics.
//!
//! What a span or a metric may carry is written here once: the decision, its reason code, the policy operation,
//! the server, the tool, the outcome and toolgate's trace id. Never an argument, a result, a header or an
//! identity. Off (`Telemetry::off`, the default), a request costs one branch: no span, no clock, no thread.
//!
//! It decides nothing and serves nothing; the gateway calls it, the admin surface asks it for the metrics text.

#![deny(clippy::print_stdout)]

mod metrics;
mod otlp;
pub mod traceparent;

pub use metrics::Gauges;

use metrics::Metrics;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::sync::Arc;
use std::time::Instant;

/// Why telemetry could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("the OTLP exporter could not be set up: {0}")]
    Exporter(String),
}

pub type Result<T> = std::result::Result<T, TelemetryError>;

/// The name of the span of one governed request; its stages are `toolgate.<stage>`.
pub const CALL_SPAN: &str = "toolgate.call";

/// The gateway's telemetry: cheap to clone, and nothing but a `None` when off.
#[derive(Clone, Default)]
pub struct Telemetry {
    inner: Option<Arc<Inner>>,
}

struct Inner {
    tracing: Option<(SdkTracerProvider, SdkTracer)>,
    metrics: Option<Metrics>,
}

impl Telemetry {
    /// Nothing recorded, nothing exported.
    pub fn off() -> Self {
        Self::default()
    }

    /// Telemetry as `settings` ask; exports run on `runtime` (the gateway's), batched on one thread of the SDK.
    pub fn start(settings: &config::Telemetry, runtime: tokio::runtime::Handle) -> Result<Self> {
        if !settings.any() {
            return Ok(Self::off());
        }
        let tracing = match &settings.otlp {
            Some(otlp) => {
                let provider = otlp::provider(otlp, runtime)?;
                let tracer = provider.tracer("toolgate");
                Some((provider, tracer))
            }
            None => None,
        };
        let metrics = settings.metrics.then(Metrics::new);
        Ok(Self {
            inner: Some(Arc::new(Inner { tracing, metrics })),
        })
    }

    pub fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether `/metrics` has anything to serve.
    pub fn metrics_on(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.metrics.is_some())
    }

    /// The span of one governed request under toolgate trace id `trace_id`, the child of the client's
    /// `traceparent` when it sent a valid one.
    pub fn call(&self, traceparent: Option<&str>, trace_id: &str) -> Call {
        let Some(inner) = &self.inner else {
            return Call(None);
        };
        let cx = inner.tracing.as_ref().map(|(_, tracer)| {
            let parent = match traceparent.and_then(traceparent::parse) {
                Some(remote) => Context::new().with_remote_span_context(remote),
                None => Context::new(),
            };
            let span = tracer
                .span_builder(CALL_SPAN)
                .with_kind(SpanKind::Server)
                .with_attributes([KeyValue::new("toolgate.trace_id", trace_id.to_owned())])
                .start_with_context(tracer, &parent);
            parent.with_span(span)
        });
        Call(Some(Box::new(LiveCall {
            inner: Arc::clone(inner),
            cx,
            ended: false,
        })))
    }

    /// A request refused by rate limit `limit` (a closed set of names), for the metrics.
    pub fn rate_limited(&self, limit: &'static str) {
        if let Some(m) = self.inner.as_ref().and_then(|i| i.metrics.as_ref()) {
            m.rate_limited(limit);
        }
    }

    /// A call is held for a human until the returned guard is dropped (the `approvals_held` gauge).
    pub fn held(&self) -> Held {
        let gauge = self
            .inner
            .as_ref()
            .and_then(|i| i.metrics.as_ref())
            .map(|m| m.held.clone());
        if let Some(g) = &gauge {
            g.inc();
        }
        Held(gauge)
    }

    /// The Prometheus text, with the gauges set from `now`; `None` when metrics are off.
    pub fn render_metrics(&self, now: &Gauges) -> Option<String> {
        let metrics = self.inner.as_ref()?.metrics.as_ref()?;
        Some(metrics.render(now))
    }

    /// Sends the spans still queued and stops the exporter's thread; blocks up to the export timeout. Call it
    /// off the runtime's worker threads (the export runs on them).
    pub fn shutdown(&self) {
        if let Some((provider, _)) = self.inner.as_ref().and_then(|i| i.tracing.as_ref()) {
            if let Err(e) = provider.shutdown() {
                tracing::warn!("telemetry: the last spans may not have been exported: {e}");
            }
        }
    }
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.as_ref();
        f.debug_struct("Telemetry")
            .field("otlp", &inner.is_some_and(|i| i.tracing.is_some()))
            .field("metrics", &inner.is_some_and(|i| i.metrics.is_some()))
            .finish()
    }
}

/// A call held for a human (`Telemetry::held`).
pub struct Held(Option<prometheus_client::metrics::gauge::Gauge>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.dec();
        }
    }
}

/// How a governed request ended, as its span and the call counter show it.
#[derive(Clone, Copy, Debug)]
pub struct Ending<'a> {
    /// `allow`, `ask` or `deny`.
    pub decision: &'a str,
    /// The reason code (`ALLOW_RULE`, `DENY_DEFAULT`, a refusal's code).
    pub reason: &'a str,
    /// The policy operation (`fs.read`, `mcp.tool`, …).
    pub operation: &'a str,
    /// The outcome (`SUCCEEDED`, `REFUSED`, `FAILED`, `CANCELLED`, a held state, …).
    pub outcome: &'a str,
}

/// One governed request's span (nothing when telemetry is off). End it with `end`; dropped unended, its span ends
/// as it is.
pub struct Call(Option<Box<LiveCall>>);

struct LiveCall {
    inner: Arc<Inner>,
    cx: Option<Context>,
    ended: bool,
}

impl Call {
    /// The server and its own name of the target the request was routed to.
    pub fn routed(&self, server: &str, tool: &str) {
        if let Some(cx) = self.0.as_ref().and_then(|c| c.cx.as_ref()) {
            let span = cx.span();
            span.set_attribute(KeyValue::new("toolgate.server", server.to_owned()));
            span.set_attribute(KeyValue::new("toolgate.tool", tool.to_owned()));
        }
    }

    /// A stage of this request begins; it ends when the returned guard is dropped.
    pub fn stage(&self, name: &'static str) -> Stage {
        let Some(call) = &self.0 else {
            return Stage(None);
        };
        let cx = call.cx.as_ref().and_then(|parent| {
            let (_, tracer) = call.inner.tracing.as_ref()?;
            let span = tracer
                .span_builder(stage_span_name(name))
                .with_kind(SpanKind::Internal)
                .start_with_context(tracer, parent);
            Some(parent.with_span(span))
        });
        Stage(Some(LiveStage {
            inner: Arc::clone(&call.inner),
            name,
            started: Instant::now(),
            cx,
        }))
    }

    /// The request ended: its attributes, the call counter, and the end of its span. Only the first ending counts.
    pub fn end(&mut self, ending: &Ending<'_>) {
        let Some(call) = self.0.as_mut().filter(|c| !c.ended) else {
            return;
        };
        call.ended = true;
        if let Some(m) = &call.inner.metrics {
            m.call(ending.decision, ending.reason, ending.outcome);
        }
        if let Some(cx) = &call.cx {
            let span = cx.span();
            span.set_attributes([
                KeyValue::new("toolgate.decision", ending.decision.to_owned()),
                KeyValue::new("toolgate.reason", ending.reason.to_owned()),
                KeyValue::new("toolgate.operation", ending.operation.to_owned()),
                KeyValue::new("toolgate.outcome", ending.outcome.to_owned()),
            ]);
            if ending.outcome == "FAILED" {
                span.set_status(Status::error("the call failed"));
            }
            span.end();
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Some(cx) = self
            .0
            .as_ref()
            .filter(|c| !c.ended)
            .and_then(|c| c.cx.as_ref())
        {
            cx.span().end();
        }
    }
}

/// The span names of the stages, written once (a `&'static str` per stage, so no name is built per call).
fn stage_span_name(stage: &'static str) -> &'static str {
    match stage {
        "route" => "toolgate.route",
        "decide" => "toolgate.decide",
        "record" => "toolgate.record",
        "approval" => "toolgate.approval",
        "execute" => "toolgate.execute",
        "finish" => "toolgate.finish",
        _ => "toolgate.stage",
    }
}

/// One stage in progress (nothing when telemetry is off); its span ends and its latency is counted on drop.
pub struct Stage(Option<LiveStage>);

struct LiveStage {
    inner: Arc<Inner>,
    name: &'static str,
    started: Instant,
    cx: Option<Context>,
}

impl Stage {
    /// The `traceparent` an upstream request made in this stage carries, so the upstream's spans are its children.
    pub fn traceparent(&self) -> Option<String> {
        let cx = self.0.as_ref()?.cx.as_ref()?;
        Some(traceparent::format(cx.span().span_context()))
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let Some(stage) = &self.0 else {
            return;
        };
        if let Some(m) = &stage.inner.metrics {
            m.stage(stage.name, stage.started.elapsed().as_secs_f64());
        }
        if let Some(cx) = &stage.cx {
            cx.span().end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics_only() -> Telemetry {
        let settings = config::Telemetry {
            otlp: None,
            metrics: true,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        Telemetry::start(&settings, runtime.handle().clone()).unwrap()
    }

    #[test]
    fn off_records_nothing_and_renders_nothing() {
        let t = Telemetry::off();
        let mut call = t.call(None, "t1");
        assert!(call.stage("execute").traceparent().is_none());
        call.end(&Ending {
            decision: "allow",
            reason: "ALLOW_RULE",
            operation: "mcp.tool",
            outcome: "SUCCEEDED",
        });
        assert!(t.render_metrics(&Gauges::default()).is_none());
    }

    #[test]
    fn a_call_counts_once_and_its_stages_are_timed() {
        let t = metrics_only();
        let mut call = t.call(None, "t1");
        drop(call.stage("decide"));
        let ending = Ending {
            decision: "deny",
            reason: "DENY_RULE",
            operation: "fs.read",
            outcome: "REFUSED",
        };
        call.end(&ending);
        call.end(&ending);
        let _held = (t.held(), t.held());
        drop(t.held());
        let gauges = Gauges {
            audit_queue: 5,
            upstreams: vec![("files".to_owned(), true), ("web".to_owned(), false)],
        };
        let text = t.render_metrics(&gauges).unwrap();
        for line in [
            r#"toolgate_calls_total{decision="deny",reason="DENY_RULE",outcome="REFUSED"} 1"#,
            r#"toolgate_stage_duration_seconds_count{stage="decide"} 1"#,
            "toolgate_approvals_held 2",
            "toolgate_audit_queue_depth 5",
            r#"toolgate_upstream_up{server="files"} 1"#,
            r#"toolgate_upstream_up{server="web"} 0"#,
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from:\n{text}"
            );
        }
    }
}
