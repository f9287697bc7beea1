//! Finding an upstream's era and loading its catalog.
//!
//! The probe order never sends an era-ambiguous request before the era is known: first `server/discover`
//! (modern-only; a legacy server answers "method not found"), then `initialize` (legacy-only). `tools/list` and
//! friends come only after one of them succeeded.

use crate::catalog::Catalog;
use crate::connection::{Connection, Refresh};
use crate::era::{
    Era, CLIENT_CAPABILITIES_META, CLIENT_INFO_META, LEGACY_VERSIONS, MODERN_VERSION,
    PROTOCOL_VERSION_META, SERVER_INFO_META,
};
use crate::error::CallError;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A server that pages forever (or repeats a cursor) is cut off here rather than looping.
const MAX_PAGES: usize = 1000;

pub(crate) fn client_info() -> Value {
    json!({"name": "toolgate", "version": env!("CARGO_PKG_VERSION")})
}

/// What toolgate declares to upstreams. Requests for these are relayed to the client when it declared the same
/// capability, and refused with a clear error otherwise.
fn client_capabilities() -> Value {
    json!({"roots": {"listChanged": false}, "sampling": {}, "elicitation": {}})
}

fn modern_meta() -> Value {
    json!({
        PROTOCOL_VERSION_META: MODERN_VERSION,
        CLIENT_CAPABILITIES_META: {},
        CLIENT_INFO_META: client_info(),
    })
}

#[derive(Debug)]
pub(crate) enum ProbeOutcome {
    Modern(Value),
    /// The server does not speak the modern era (an error answer, or versions without it).
    NotModern,
}

/// Asks `server/discover`. An error answer means "legacy"; a timeout or a dead connection is an `Err`.
pub(crate) async fn discover(
    conn: &Connection,
    timeout: Duration,
) -> Result<ProbeOutcome, CallError> {
    // A modern server may refuse the version first and name the ones it supports: asked once more when ours is
    // among them, as the spec's negotiation says.
    let mut retried = false;
    loop {
        let params = json!({"_meta": modern_meta()});
        let answer = conn
            .request_raw(
                "server/discover",
                Some(params),
                timeout,
                &CancellationToken::new(),
            )
            .await;
        return match answer {
            Ok(result) => {
                let speaks_modern = result
                    .get("supportedVersions")
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().any(|v| v == MODERN_VERSION));
                Ok(if speaks_modern {
                    ProbeOutcome::Modern(result)
                } else {
                    ProbeOutcome::NotModern
                })
            }
            Err(CallError::Rpc(e)) if unsupported_version(&e) => {
                let ours = e
                    .pointer("/data/supported")
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().any(|v| v == MODERN_VERSION));
                if ours && !retried {
                    retried = true;
                    continue;
                }
                // Another modern version only: `initialize` is the one left to try.
                Ok(ProbeOutcome::NotModern)
            }
            // Over HTTP only the answers the spec names mean "legacy"; a 401 or a 500 says nothing about the era.
            Err(CallError::Rpc(e)) if crate::http::probe_falls_back(&e) => {
                Ok(ProbeOutcome::NotModern)
            }
            Err(e) => Err(e),
        };
    }
}

fn unsupported_version(error: &Value) -> bool {
    error.get("code").and_then(Value::as_i64) == Some(jsonrpc::UNSUPPORTED_PROTOCOL_VERSION)
}

/// The era a handshake agreed on, with the server's answer (and the legacy version).
pub(crate) enum Agreed {
    Modern(Value),
    Legacy((Value, String)),
}

/// What probing found, and whether later starts should skip the probe and go straight to `initialize`.
pub(crate) struct Probed {
    pub agreed: Result<Agreed, String>,
    pub stop_probing: bool,
}

/// `server/discover` first; an error answer means legacy. A server silent past `probe_timeout` is either slow
/// to start or ignores unknown methods, so `initialize` is asked as well and whichever era answers first wins:
/// a dual-era server that started slowly answers the probe late and then refuses `initialize`, and a legacy
/// one never answers the probe.
pub(crate) async fn probe(conn: &Connection, probe_timeout: Duration, timeout: Duration) -> Probed {
    let done = |agreed, stop_probing| Probed {
        agreed,
        stop_probing,
    };
    let discover = self::discover(conn, timeout);
    tokio::pin!(discover);
    match tokio::time::timeout(probe_timeout, &mut discover).await {
        Ok(Ok(ProbeOutcome::Modern(result))) => return done(Ok(Agreed::Modern(result)), false),
        Ok(Ok(ProbeOutcome::NotModern)) => {
            return done(initialize(conn, timeout).await.map(Agreed::Legacy), false)
        }
        // Some legacy servers exit on an unknown first request; do not probe them again. A link that ended
        // for a reason of its own (an HTTP server out of reach) or an error answer was not killed by the probe.
        Ok(Err(e @ CallError::Unavailable { .. })) if conn.end_reason().is_none() => {
            return done(
                Err(format!(
                    "the server exited when probed with server/discover: {e}"
                )),
                true,
            )
        }
        Ok(Err(e)) => return done(Err(format!("server/discover failed: {e}")), false),
        Err(_) => {}
    }
    let legacy = initialize(conn, timeout);
    tokio::pin!(legacy);
    let mut probed = false;
    loop {
        tokio::select! {
            // The probe's answer first: a dual-era server that answered it refuses `initialize` after.
            biased;
            answer = &mut discover, if !probed => {
                probed = true;
                if let Ok(ProbeOutcome::Modern(result)) = answer {
                    return done(Ok(Agreed::Modern(result)), false);
                }
            }
            answer = &mut legacy => return match answer {
                // It answers `initialize`: restarts need not wait for the probe again.
                Ok(agreed) => done(Ok(Agreed::Legacy(agreed)), true),
                Err(e) if probed => done(Err(e), true),
                Err(e) => match discover.await {
                    Ok(ProbeOutcome::Modern(result)) => done(Ok(Agreed::Modern(result)), false),
                    _ => done(Err(e), true),
                },
            },
        }
    }
}

/// Runs the legacy handshake; returns the `initialize` result and the agreed version.
pub(crate) async fn initialize(
    conn: &Connection,
    timeout: Duration,
) -> Result<(Value, String), String> {
    let params = json!({
        "protocolVersion": LEGACY_VERSIONS[0],
        "capabilities": client_capabilities(),
        "clientInfo": client_info(),
    });
    let result = conn
        .request_raw(
            "initialize",
            Some(params),
            timeout,
            &CancellationToken::new(),
        )
        .await
        .map_err(|e| format!("initialize failed: {e}"))?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !LEGACY_VERSIONS.contains(&version.as_str()) {
        return Err(format!(
            "the server offered protocol version {version:?}, which toolgate does not speak"
        ));
    }
    conn.notify("notifications/initialized", None)
        .await
        .map_err(|e| e.to_string())?;
    Ok((result, version))
}

/// Builds the catalog skeleton from a handshake result.
pub(crate) fn catalog_from(era: Era, result: &Value) -> Catalog {
    let server_info = match era {
        Era::Modern => result
            .get("_meta")
            .and_then(|m| m.get(SERVER_INFO_META))
            .cloned(),
        Era::Legacy(_) => result.get("serverInfo").cloned(),
    };
    Catalog {
        era: Some(era),
        server_info: server_info.unwrap_or(Value::Null),
        capabilities: result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({})),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..Catalog::default()
    }
}

/// One list: its method, the key of its items in a page, and where it lives in the catalog.
type List = (
    &'static str,
    &'static str,
    fn(&mut Catalog) -> &mut Vec<Value>,
);

/// Loads the lists named by `what` into `catalog`, every page of each.
///
/// A list the server declared but cannot give (an error answer, a timeout, a page over the size limit) is empty
/// and noted in `catalog.list_errors`: servers built on SDKs that answer −32601 for every handler they were not
/// given (resource templates, typically) are still served. Only a dead connection is an `Err`, because then
/// nothing else can be loaded either.
pub(crate) async fn load_lists(
    conn: &Connection,
    catalog: &mut Catalog,
    what: &[Refresh],
    timeout: Duration,
) -> Result<(), CallError> {
    for kind in what {
        let lists: &[List] = match kind {
            Refresh::Tools if catalog.has("tools") => &[("tools/list", "tools", |c| &mut c.tools)],
            Refresh::Resources if catalog.has("resources") => &[
                ("resources/list", "resources", |c| &mut c.resources),
                ("resources/templates/list", "resourceTemplates", |c| {
                    &mut c.resource_templates
                }),
            ],
            Refresh::Prompts if catalog.has("prompts") => {
                &[("prompts/list", "prompts", |c| &mut c.prompts)]
            }
            _ => &[],
        };
        for &(method, key, slot) in lists {
            let items = match fetch_all(conn, method, key, timeout).await {
                Ok(items) => {
                    catalog.list_errors.remove(method);
                    items
                }
                Err(e @ CallError::Unavailable { .. }) => return Err(e),
                Err(e) => {
                    let why = list_failure(&e);
                    tracing::warn!(
                        server = conn.server(),
                        "{method} failed ({why}); serving it as an empty list"
                    );
                    catalog.list_errors.insert(method, audit::redact(&why));
                    Vec::new()
                }
            };
            *slot(catalog) = items;
        }
    }
    Ok(())
}

/// Why a list could not be loaded, in words for `doctor` and the status tool.
fn list_failure(e: &CallError) -> String {
    match e {
        CallError::Rpc(err) => {
            let code = err.get("code").and_then(Value::as_i64).unwrap_or_default();
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            format!("the server answered error {code}: {message}")
        }
        CallError::Unavailable { .. }
        | CallError::Timeout { .. }
        | CallError::Cancelled
        | CallError::TooLarge { .. } => e.to_string(),
    }
}

/// Follows `nextCursor` to the end. A repeated cursor or too many pages ends the walk with what was read.
async fn fetch_all(
    conn: &Connection,
    method: &str,
    key: &str,
    timeout: Duration,
) -> Result<Vec<Value>, CallError> {
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let result = conn
            .request(method, Some(params), timeout, &CancellationToken::new())
            .await?;
        if let Some(Value::Array(page)) = result.get(key) {
            items.extend(page.iter().cloned());
        }
        match result.get("nextCursor") {
            Some(c @ Value::String(s)) if !s.is_empty() && seen.insert(s.clone()) => {
                cursor = Some(c.clone())
            }
            Some(Value::String(s)) if !s.is_empty() => {
                tracing::warn!(
                    server = conn.server(),
                    "{method}: the server repeated cursor {s:?}; stopping"
                );
                break;
            }
            _ => break,
        }
    }
    Ok(items)
}
