//! The governed requests: each is routed to its owner, decided by the policy stage, and only then forwarded.
//! A refused tool call is an ordinary error result that explains itself; a refused read or prompt is a JSON-RPC
//! error with the same explanation. Nothing refused reaches an upstream.

use crate::errors::{invalid_params, to_client};
use crate::guard::{Verdict, OWN_SERVER};
use crate::refusal;
use crate::session::Session;
use crate::status;
use jsonrpc::error_object;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

type Outcome = Option<Result<Value, Value>>;

/// A refusal as a JSON-RPC error, for methods whose results have no error shape.
fn refusal_error(result: Value) -> Value {
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

/// What an ask becomes while no approval channel exists: a refusal that says so.
fn without_approval(verdict: Verdict) -> Result<(), Value> {
    match verdict {
        Verdict::Allow(_) => Ok(()),
        Verdict::Ask(d) => Err(refusal::no_approval_channel(&d)),
        Verdict::Refuse(r) => Err(r),
    }
}

impl Session {
    pub(crate) async fn call_tool(
        self: &Arc<Self>,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Some(Err(invalid_params("tools/call needs a string \"name\"")));
        };
        let agg = self.gateway.aggregate();
        let definition = agg.tool_definition(&name).cloned();
        let arguments = params
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        let guard = &self.gateway.guard;
        if name == status::TOOL_NAME && !self.gateway.opts.wrap {
            let verdict = guard.check_tool(OWN_SERVER, &name, definition.as_ref(), &arguments);
            return Some(Ok(match without_approval(verdict) {
                Ok(()) => status::result(&self.gateway.statuses()),
                Err(refused) => refused,
            }));
        }
        let Some(route) = agg.route_tool(&name).cloned() else {
            return Some(Err(invalid_params(format!("unknown tool: {name}"))));
        };
        drop(agg);
        let verdict = guard.check_tool(&route.server, &route.name, definition.as_ref(), &arguments);
        if let Err(refused) = without_approval(verdict) {
            return Some(Ok(refused));
        }
        params["name"] = Value::String(route.name);
        self.forward(&route.server, "tools/call", params, cancel)
            .await
    }

    pub(crate) async fn get_prompt(
        self: &Arc<Self>,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(route) = self.gateway.aggregate().route_prompt(&name).cloned() else {
            return Some(Err(invalid_params(format!("unknown prompt: {name}"))));
        };
        if let Err(refused) =
            without_approval(self.gateway.guard.check_prompt(&route.server, &route.name))
        {
            return Some(Err(refusal_error(refused)));
        }
        params["name"] = Value::String(route.name);
        self.forward(&route.server, "prompts/get", params, cancel)
            .await
    }

    pub(crate) async fn by_uri(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(server) = self
            .gateway
            .aggregate()
            .route_resource(uri)
            .map(str::to_owned)
        else {
            return Some(Err(invalid_params(format!(
                "no upstream offers the resource {uri:?}"
            ))));
        };
        if method == "resources/read" {
            if let Err(refused) = without_approval(self.gateway.guard.check_resource(&server, uri))
            {
                return Some(Err(refusal_error(refused)));
            }
        }
        self.forward(&server, method, params, cancel).await
    }

    pub(crate) async fn complete(
        self: &Arc<Self>,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let agg = self.gateway.aggregate();
        let server = match params.pointer("/ref/type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = params
                    .pointer("/ref/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                agg.route_prompt(name).cloned().map(|r| {
                    params["ref"]["name"] = Value::String(r.name);
                    r.server
                })
            }
            Some("ref/resource") => {
                let uri = params
                    .pointer("/ref/uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                agg.route_resource(uri).map(str::to_owned)
            }
            _ => {
                return Some(Err(invalid_params(
                    "completion/complete needs ref.type ref/prompt or ref/resource",
                )))
            }
        };
        match server {
            Some(s) => {
                self.forward(&s, "completion/complete", params, cancel)
                    .await
            }
            None => Some(Err(invalid_params(
                "no upstream owns the completion reference",
            ))),
        }
    }

    /// Sends a request to `server` with the client's progress token replaced by a gateway token, and waits.
    pub(crate) async fn forward(
        self: &Arc<Self>,
        server: &str,
        method: &str,
        mut params: Value,
        cancel: &CancellationToken,
    ) -> Outcome {
        let Some(up) = self.gateway.upstream(server).cloned() else {
            return Some(Err(invalid_params(format!("unknown upstream {server}"))));
        };
        let conn = match up.connection() {
            Ok(c) => c,
            Err(e) => return to_client(e).map(Err),
        };
        let client_token = params.pointer("/_meta/progressToken").cloned();
        let _guard = client_token.map(|t| {
            let guard = self.gateway.register_progress(self, t);
            params["_meta"]["progressToken"] = Value::String(guard.token.clone());
            guard
        });
        match conn
            .request(method, Some(params), up.request_timeout(), cancel)
            .await
        {
            Ok(result) => Some(Ok(result)),
            Err(e) => to_client(e).map(Err),
        }
    }
}
