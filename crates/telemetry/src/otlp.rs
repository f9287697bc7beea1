//! The OTLP/HTTP span exporter: protobuf over toolgate's own reqwest (rustls, no redirects), batched by the SDK's
//! batch processor on its one thread. The processor runs its exports outside any async runtime, so each request is
//! spawned on the gateway's runtime and awaited through its join handle.
//!
//! It exports what the spans carry and nothing else; what goes on a span is decided in `call`.

use crate::TelemetryError;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use std::collections::HashMap;
use std::time::Duration;
use tokio::runtime::Handle;

/// How long one export may take; a collector that does not answer costs dropped spans, never a stalled call.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often spans are sent: short, so an operator sees a call within a second or two.
const EXPORT_INTERVAL: Duration = Duration::from_secs(1);

/// Spans waiting for export; past it spans are dropped (the SDK counts them), never waited for.
const QUEUE: usize = 4096;

/// Bounded because nothing in a collector's answer is read but its status.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// A tracer provider exporting to `otlp`, with its batch thread started.
pub(crate) fn provider(
    otlp: &config::Otlp,
    runtime: Handle,
) -> Result<SdkTracerProvider, TelemetryError> {
    // The process's TLS provider, as for HTTP upstreams (ring); a no-op when one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let headers: HashMap<String, String> = otlp.headers.clone().into_iter().collect();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{}/v1/traces", otlp.endpoint))
        .with_timeout(EXPORT_TIMEOUT)
        .with_headers(headers)
        .with_http_client(Exporting { client, runtime })
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let batch = BatchConfigBuilder::default()
        .with_scheduled_delay(EXPORT_INTERVAL)
        .with_max_queue_size(QUEUE)
        .build();
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch)
        .build();
    let resource = Resource::builder()
        .with_service_name(otlp.service_name.clone())
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource)
        .build())
}

/// The exporter's HTTP client: reqwest on the gateway's runtime.
#[derive(Debug)]
struct Exporting {
    client: reqwest::Client,
    runtime: Handle,
}

#[async_trait::async_trait]
impl HttpClient for Exporting {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let mut answer = client.execute(request).await?;
            let mut response = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                response = response.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = answer.chunk().await? {
                let room = MAX_ANSWER_BYTES.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok::<_, HttpError>(response.body(Bytes::from(body))?)
        });
        sent.await?
    }
}
