//! The Prometheus metrics: calls by decision, reason and outcome, each stage's latency, the calls held for a
//! human as they come and go, and at each scrape the gauges the gateway reads then (upstream health, the audit
//! queue). Labels are closed sets
//! (decisions, reason codes, outcomes, stage names) or configured names (servers): never an argument, a tool
//! result, a path or an identity.
//!
//! It serves nothing: the admin surface asks for the text (`render`).

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::Mutex;

type Labels = Vec<(&'static str, String)>;

/// Stage latencies from 50 µs to about 100 s: the pipeline's own stages sit at the low end, an upstream call or
/// a human's approval at the high end.
fn stage_histogram() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.000_05, 4.0, 11,
    ))
}

/// What the gateway knows at the moment of a scrape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gauges {
    /// Records waiting for the audit writer.
    pub audit_queue: i64,
    /// Each configured upstream and whether it is connected.
    pub upstreams: Vec<(String, bool)>,
}

pub(crate) struct Metrics {
    registry: Registry,
    calls: Family<Labels, Counter>,
    stages: Family<Labels, Histogram, fn() -> Histogram>,
    rate_limited: Family<Labels, Counter>,
    pub(crate) held: Gauge,
    audit_queue: Gauge,
    upstream_up: Family<Labels, Gauge>,
    /// Scrapes set the gauges, then encode: one at a time, so two scrapes never interleave their values.
    scrape: Mutex<()>,
}

impl Metrics {
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("toolgate");
        let calls = Family::<Labels, Counter>::default();
        registry.register(
            "calls",
            "Governed requests by decision, reason code and outcome",
            calls.clone(),
        );
        let stages = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(
            stage_histogram as fn() -> Histogram,
        );
        registry.register(
            "stage_duration_seconds",
            "Time spent in each stage of the pipeline",
            stages.clone(),
        );
        let rate_limited = Family::<Labels, Counter>::default();
        registry.register(
            "rate_limited",
            "Requests refused by a rate limit, by limit",
            rate_limited.clone(),
        );
        let held = Gauge::default();
        registry.register(
            "approvals_held",
            "Calls of this process held until a human approves or rejects them",
            held.clone(),
        );
        let audit_queue = Gauge::default();
        registry.register(
            "audit_queue_depth",
            "Audit and report records waiting to be written",
            audit_queue.clone(),
        );
        let upstream_up = Family::<Labels, Gauge>::default();
        registry.register(
            "upstream_up",
            "Whether each upstream server is connected (1) or not (0)",
            upstream_up.clone(),
        );
        Self {
            registry,
            calls,
            stages,
            rate_limited,
            held,
            audit_queue,
            upstream_up,
            scrape: Mutex::new(()),
        }
    }

    pub(crate) fn call(&self, decision: &str, reason: &str, outcome: &str) {
        let labels = vec![
            ("decision", decision.to_owned()),
            ("reason", reason.to_owned()),
            ("outcome", outcome.to_owned()),
        ];
        self.calls.get_or_create(&labels).inc();
    }

    pub(crate) fn stage(&self, stage: &'static str, seconds: f64) {
        self.stages
            .get_or_create(&vec![("stage", stage.to_owned())])
            .observe(seconds);
    }

    pub(crate) fn rate_limited(&self, limit: &'static str) {
        self.rate_limited
            .get_or_create(&vec![("limit", limit.to_owned())])
            .inc();
    }

    /// The text exposition format, with the gauges set from `now`.
    pub(crate) fn render(&self, now: &Gauges) -> String {
        let _one = self
            .scrape
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.audit_queue.set(now.audit_queue);
        // A server removed from the config disappears from the gauge instead of staying at its last value.
        self.upstream_up.clear();
        for (server, up) in &now.upstreams {
            self.upstream_up
                .get_or_create(&vec![("server", server.clone())])
                .set(i64::from(*up));
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}
