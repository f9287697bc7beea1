//! What each client request does: the era gate, then the method. Results are fitted to the era of the request.

use crate::client::ClientEra;
use crate::cursor;
use crate::errors::{invalid_params, invalid_request, unsupported_version};
use crate::session::{Session, SUPPORTED_VERSIONS};
use crate::wire::{self, Reply};
use jsonrpc::{error_object, Id};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use upstream::{
    CLIENT_CAPABILITIES_META, MODERN_VERSION, PROTOCOL_META_PREFIX, PROTOCOL_VERSION_META,
    SERVER_INFO_META,
};

/// Requests of the legacy era that protocol 2026-07-28 removed: a modern request naming one is a method not
/// found (HTTP 404 on the Streamable HTTP transport).
const REMOVED_IN_MODERN: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    // The tasks extension of 2026-07-28 inlines a task's result in `tasks/get`.
    "tasks/result",
];

impl Session {
    /// Runs one request whose era `era_gate` already decided (`modern`).
    pub(crate) async fn dispatch(
        self: &Arc<Self>,
        id: &Id,
        method: &str,
        params: Value,
        modern: bool,
        cancel: &CancellationToken,
    ) -> Reply {
        // The handshake answers at once: what toolgate offers does not wait for upstreams (their lists arrive
        // with `list_changed`). Everything else waits, once and bounded, for upstreams still starting. A wrapped
        // server's handshake waits too, because it carries that server's identity.
        let handshake = matches!(
            method,
            "initialize" | "ping" | "server/discover" | "subscriptions/listen"
        );
        if !handshake || self.gateway.stages.opts.wrap {
            self.gateway.first_list().await;
        }
        let reply = match method {
            "initialize" => Reply::from_result(self.initialize()),
            "ping" => Reply::Result(json!({})),
            "server/discover" => Reply::Result(self.discover()),
            "subscriptions/listen" if modern => self.listen(id, &params).await,
            "tools/list" => Reply::from_result(self.list_tools(&params)),
            "prompts/list" => {
                Reply::from_result(self.list(|a| (&a.prompts, &a.prompt_sizes), "prompts", &params))
            }
            "resources/list" => Reply::from_result(self.list(
                |a| (&a.resources, &a.resource_sizes),
                "resources",
                &params,
            )),
            "resources/templates/list" => Reply::from_result(self.list(
                |a| (&a.templates, &a.template_sizes),
                "resourceTemplates",
                &params,
            )),
            // The governed requests: decided, recorded, then run (see `pipeline`).
            "tools/call" => self.call_tool(id, params, cancel).await,
            "prompts/get"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "completion/complete" => self.govern_read(id, method, params, cancel).await,
            // Tasks, under toolgate's ids and only the caller's own (`tasks`).
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/update" => {
                self.govern_task(id, method, params, cancel).await
            }
            "tasks/list" if !modern => self.govern_task(id, "tasks/list", params, cancel).await,
            "logging/setLevel" if !modern => Reply::from_result(self.set_level(params).await),
            _ => Reply::Error(error_object(
                jsonrpc::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
                None,
            )),
        };
        if handshake || method == "tools/list" {
            self.gateway.stages.prepare_code_workers();
        }
        wire::for_era(reply, method, modern)
    }

    /// Decides the request's era and checks it against the connection's; `Ok(true)` for a modern request. Runs
    /// in arrival order, before the request's task starts, so a pipelined `initialize` settles the era for the
    /// requests behind it.
    pub(crate) fn era_gate(&self, method: &str, params: &Value) -> Result<bool, Value> {
        let meta = params.get("_meta");
        let version = meta.and_then(|m| m.get(PROTOCOL_VERSION_META));
        let mut st = self.lock();
        if let Some(version) = version {
            if version.as_str() != Some(MODERN_VERSION) {
                return Err(unsupported_version(&[MODERN_VERSION], version));
            }
            if let ClientEra::Legacy(v) = &st.era {
                return Err(invalid_request(format!(
                    "this connection was initialized with protocol {v}; requests with _meta protocol {MODERN_VERSION} \
                     need a new connection"
                )));
            }
            let caps = meta.and_then(|m| m.get(CLIENT_CAPABILITIES_META));
            // Methods 2026-07-28 removed are unknown to a modern request, not served in the legacy way.
            if REMOVED_IN_MODERN.contains(&method) {
                return Err(error_object(
                    jsonrpc::METHOD_NOT_FOUND,
                    format!(
                        "Method not found: {method} does not exist in protocol {MODERN_VERSION}"
                    ),
                    None,
                ));
            }
            match caps {
                Some(Value::Object(c)) => {
                    if method != "server/discover" {
                        st.era = ClientEra::Modern;
                    }
                    st.client_caps = Value::Object(c.clone());
                }
                _ => {
                    return Err(invalid_params(format!(
                        "_meta[\"{PROTOCOL_META_PREFIX}clientCapabilities\"] is required on every {MODERN_VERSION} request"
                    )))
                }
            }
            return Ok(true);
        }
        match (method, &st.era) {
            ("initialize", ClientEra::Unknown) => {
                let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
                st.era = ClientEra::Legacy(Session::legacy_version_for(requested).to_owned());
                st.client_caps = params.get("capabilities").cloned().unwrap_or_else(|| json!({}));
                Ok(false)
            }
            ("initialize", ClientEra::Legacy(_)) => Err(invalid_request("initialize was already called on this connection")),
            ("initialize", ClientEra::Modern) => {
                Err(invalid_request(format!("this connection already speaks protocol {MODERN_VERSION}")))
            }
            ("ping" | "server/discover", _) => Ok(false),
            (_, ClientEra::Legacy(_)) => Ok(false),
            (_, ClientEra::Modern) => Err(invalid_request(format!(
                "missing _meta[\"{PROTOCOL_META_PREFIX}protocolVersion\"]: every {MODERN_VERSION} request carries it"
            ))),
            (_, ClientEra::Unknown) => Err(invalid_request(format!(
                "not initialized: send initialize first, or use protocol {MODERN_VERSION} with _meta on each request"
            ))),
        }
    }

    fn initialize(&self) -> Result<Value, Value> {
        let version = match &self.lock().era {
            ClientEra::Legacy(v) => v.clone(),
            _ => {
                return Err(invalid_request(
                    "initialize on a connection that is not legacy",
                ))
            }
        };
        let agg = self.gateway.aggregate();
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": agg.capabilities,
            "serverInfo": self.server_info(),
        });
        if let Some(i) = self
            .gateway
            .stages
            .instructions(agg.instructions.as_deref())
        {
            result["instructions"] = Value::String(i);
        }
        Ok(result)
    }

    fn discover(&self) -> Value {
        let agg = self.gateway.aggregate();
        let mut result = json!({
            "supportedVersions": SUPPORTED_VERSIONS,
            "capabilities": agg.capabilities,
            "_meta": {SERVER_INFO_META: self.server_info()},
            "ttlMs": 0,
            "cacheScope": "private",
        });
        if let Some(i) = self
            .gateway
            .stages
            .instructions(agg.instructions.as_deref())
        {
            result["instructions"] = Value::String(i);
        }
        result
    }

    /// toolgate's identity; a wrapped server keeps its own.
    fn server_info(&self) -> Value {
        let own =
            json!({"name": "toolgate", "title": "toolgate", "version": env!("CARGO_PKG_VERSION")});
        if !self.gateway.stages.opts.wrap {
            return own;
        }
        let info = self
            .gateway
            .upstreams()
            .first()
            .map(|u| u.catalog().server_info.clone());
        match info {
            Some(v @ Value::Object(_)) => v,
            _ => own,
        }
    }

    async fn listen(&self, id: &Id, params: &Value) -> Reply {
        let requested = params
            .get("notifications")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let caps = self.gateway.aggregate().capabilities.clone();
        let mut granted = Map::new();
        for (key, cap) in [
            ("toolsListChanged", "tools"),
            ("promptsListChanged", "prompts"),
            ("resourcesListChanged", "resources"),
        ] {
            if requested.get(key) == Some(&Value::Bool(true)) && caps.get(cap).is_some() {
                granted.insert(key.into(), true.into());
            }
        }
        let granted = Value::Object(granted);
        self.lock().listens.push((id.clone(), granted.clone()));
        let meta = json!({"io.modelcontextprotocol/subscriptionId": id.to_value()});
        self.notify_on(
            crate::outbox::Stream::Request(id.clone()),
            "notifications/subscriptions/acknowledged",
            Some(json!({"notifications": granted, "_meta": meta})),
        );
        // The stream stays open until the connection ends; its only answer would be a graceful close.
        Reply::StreamOpen
    }

    /// Only what the active profile lets a client see. Listing is not enforcement: calls are decided again.
    fn list_tools(&self, params: &Value) -> Result<Value, Value> {
        let (agg, visible) = self.gateway.stages.visible_tools(&Session::guard(self));
        let list = cursor::Listing {
            len: visible.len(),
            item: |i| &agg.tools[visible[i]],
            size: |i| agg.tool_sizes[visible[i]],
            key: "tools",
        };
        cursor::page(
            list,
            params.get("cursor"),
            self.gateway.stages.page_limits(),
        )
        .map_err(invalid_params)
    }

    fn list(
        &self,
        pick: impl Fn(&crate::Aggregate) -> (&Vec<Value>, &Vec<usize>),
        key: &str,
        params: &Value,
    ) -> Result<Value, Value> {
        let agg = self.gateway.aggregate();
        let (items, sizes) = pick(&agg);
        cursor::page_slice(
            items,
            sizes,
            key,
            params.get("cursor"),
            self.gateway.stages.page_limits(),
        )
        .map_err(invalid_params)
    }
}
