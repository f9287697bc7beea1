//! The one translation of a `CallOutcome` into what the client receives, per method and era. A `tools/call`
//! result has an error shape, so refusals and holds are Contract V1 results; `prompts/get`, `resources/read`,
//! `resources/subscribe` and `completion/complete` results have none, so they become JSON-RPC errors carrying the
//! same explanation. Every match here is exhaustive: a new outcome cannot reach a client untranslated.
//!
//! It does not decide or record anything; it only shapes.

use crate::adapt;
use crate::contract;
use crate::errors::{invalid_params, to_client};
use crate::outcome::{CallError, CallOutcome, RefusalCode};
use jsonrpc::error_object;
use serde_json::{json, Value};

/// What goes back for one client request.
#[derive(Debug, PartialEq)]
pub(crate) enum Reply {
    Result(Value),
    Error(Value),
    /// The client cancelled the request: it must get no response.
    Cancelled,
    /// A `subscriptions/listen` stream stays open; its only answer would be a graceful close.
    StreamOpen,
}

impl Reply {
    pub(crate) fn from_result(r: Result<Value, Value>) -> Self {
        match r {
            Ok(v) => Reply::Result(v),
            Err(e) => Reply::Error(e),
        }
    }
}

/// Which wire shape an outcome takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `tools/call`: an ordinary result for everything toolgate writes itself.
    ToolResult,
    /// Methods whose results cannot express a refusal: a JSON-RPC error.
    RpcError,
}

/// A request failure as the JSON-RPC error the client gets; `None` for a cancellation.
fn failure(e: CallError) -> Option<Value> {
    match e {
        CallError::BadRequest(message) => Some(invalid_params(message)),
        CallError::Upstream(e) => to_client(e),
    }
}

/// A toolgate-written result as a JSON-RPC error, for methods whose results have no error shape.
fn as_error(result: &Value) -> Value {
    let message = result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or("refused")
        .to_owned();
    error_object(
        jsonrpc::INVALID_REQUEST,
        message,
        result.get("structuredContent").cloned(),
    )
}

/// The era-neutral wire form. `definition` is the called tool's, so that toolgate's own results fit its
/// `outputSchema` (see `contract::fit_to_tool`).
pub(crate) fn reply(outcome: CallOutcome, shape: Shape, definition: Option<&Value>) -> Reply {
    let own = match outcome {
        CallOutcome::Complete(v, _) => return Reply::Result(v),
        CallOutcome::InputRequired(v) | CallOutcome::Bridged { result: v, .. } => {
            let mut v = v;
            v["resultType"] = json!("input_required");
            return Reply::Result(v);
        }
        CallOutcome::Cancelled => return Reply::Cancelled,
        CallOutcome::Failed(e) => return failure(e).map_or(Reply::Cancelled, Reply::Error),
        // A request naming nothing toolgate knows is malformed, in every method.
        CallOutcome::Refused(r) if r.code == RefusalCode::UnknownTarget => {
            return Reply::Error(invalid_params(r.message))
        }
        CallOutcome::Refused(r) => contract::refusal(&r),
        CallOutcome::Held(h) => contract::held(&h),
    };
    match shape {
        Shape::ToolResult => Reply::Result(contract::fit_to_tool(own, definition)),
        Shape::RpcError => Reply::Error(as_error(&own)),
    }
}

/// Fits a reply to the era of the request: modern results gain `resultType` and cache hints; legacy results
/// lose them, and an input-required result, which a legacy client cannot express, becomes an error.
pub(crate) fn for_era(reply: Reply, method: &str, modern: bool) -> Reply {
    match reply {
        Reply::Result(v) if modern => Reply::Result(adapt::for_modern(method, v)),
        Reply::Result(v) => Reply::from_result(adapt::for_legacy(v)),
        other => other,
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
