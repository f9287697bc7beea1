//! The headers a caller's credentials add to the requests toolgate sends an HTTP server on that caller's
//! behalf: set by the gateway around the request it forwards (`with_call_headers`), read by the HTTP links when
//! they build a request, and added only by the link of the server they were granted for, so a request to any
//! other server in the same task never carries them. They replace a configured header of the same name (a
//! caller's own credential over the server's). A task-local, as the link writes the request in the caller's
//! task; unset, nothing is added.

use std::future::Future;
use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::either::Either;

/// One caller's headers for one server.
#[derive(Clone)]
pub struct CallHeaders {
    server: Arc<str>,
    headers: Arc<HeaderMap>,
}

impl CallHeaders {
    /// `headers` (name, value) for requests to `server`; a name or value HTTP cannot carry is left out (the
    /// config refuses them before they get here).
    pub fn new(server: &str, headers: &[(String, String)]) -> Self {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let (Ok(name), Ok(mut value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                continue;
            };
            value.set_sensitive(true);
            map.insert(name, value);
        }
        Self {
            server: server.into(),
            headers: Arc::new(map),
        }
    }
}

tokio::task_local! {
    static CALL_HEADERS: CallHeaders;
}

/// Runs `fut` with `headers` on its requests to their server; `None` runs it as it is. Not an `async fn`: the
/// future it gives is `fut`'s size, where an `async fn` held `fut` and its scope both (twice the size of a call's
/// whole future, copied as the call's task is built).
pub fn with_call_headers<F: Future>(
    headers: Option<CallHeaders>,
    fut: F,
) -> impl Future<Output = F::Output> {
    match headers {
        Some(h) => Either::Left(CALL_HEADERS.scope(h, fut)),
        None => Either::Right(fut),
    }
}

/// The call headers in force in this task, to carry them into a task it spawns for the same request.
pub fn current_call_headers() -> Option<CallHeaders> {
    CALL_HEADERS.try_with(Clone::clone).ok()
}

/// The headers this task's request to `server` carries, if any.
pub(crate) fn for_server(server: &str) -> Option<Arc<HeaderMap>> {
    CALL_HEADERS
        .try_with(|h| (&*h.server == server).then(|| Arc::clone(&h.headers)))
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A future holding `N` bytes across an await, as a call's future holds its stages' state.
    async fn holding<const N: usize>() -> u8 {
        let state = [1u8; N];
        tokio::task::yield_now().await;
        state[N - 1]
    }

    #[test]
    fn a_call_scoped_to_its_headers_is_not_twice_its_own_size() {
        let inner = std::mem::size_of_val(&holding::<4096>());
        let scoped = with_call_headers(None, holding::<4096>());
        assert!(
            std::mem::size_of_val(&scoped) < inner + 128,
            "{inner} bytes became {}",
            std::mem::size_of_val(&scoped)
        );
        let traced = crate::with_traceparent(None, holding::<4096>());
        assert!(
            std::mem::size_of_val(&traced) < inner + 128,
            "{inner} bytes became {}",
            std::mem::size_of_val(&traced)
        );
    }

    #[tokio::test]
    async fn headers_given_are_in_force_inside_and_gone_after() {
        let headers = CallHeaders::new("github", &[("authorization".into(), "Bearer t".into())]);
        let inside =
            with_call_headers(Some(headers), async { for_server("github").is_some() }).await;
        assert!(inside);
        assert!(for_server("github").is_none());
        let none = with_call_headers(None, async { current_call_headers().is_none() }).await;
        assert!(none);
    }
}
