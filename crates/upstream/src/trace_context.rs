//! The W3C `traceparent` an HTTP upstream's requests carry: set by the gateway around the call it forwards
//! (`with_traceparent`), read by the HTTP links when they build a request, so the upstream's spans join the call's
//! trace. A task-local, as trace context is carried in OpenTelemetry itself: the link writes the request in the
//! caller's task. Unset (telemetry off, a stdio upstream), nothing is added.
//!
//! It does not check or build the value: the telemetry crate does.

use std::future::Future;
use tokio_util::either::Either;

/// The header's name.
pub(crate) const TRACEPARENT: &str = "traceparent";

tokio::task_local! {
    static TRACEPARENT_VALUE: String;
}

/// Runs `fut` with the `traceparent` its upstream requests carry; `None` runs it as it is. The future it gives is
/// `fut`'s size (an `async fn` would hold `fut` and its scope both).
pub fn with_traceparent<F: Future>(
    traceparent: Option<String>,
    fut: F,
) -> impl Future<Output = F::Output> {
    match traceparent {
        Some(value) => Either::Left(TRACEPARENT_VALUE.scope(value, fut)),
        None => Either::Right(fut),
    }
}

/// The `traceparent` set around this task's work, as text: for work that goes on in other tasks and joins the same
/// trace (a code-mode run's calls).
pub fn current_traceparent() -> Option<String> {
    TRACEPARENT_VALUE.try_with(Clone::clone).ok()
}

/// The `traceparent` of the call this task forwards, if any.
pub(crate) fn traceparent() -> Option<reqwest::header::HeaderValue> {
    TRACEPARENT_VALUE
        .try_with(|v| reqwest::header::HeaderValue::from_str(v).ok())
        .ok()
        .flatten()
}
