//! A client session as the requester of governed calls: the `CallContext` it builds for each of its requests
//! (its session's grants, its progress token, elicitation through its client, a held call that waits), and the
//! two ways the pipeline reaches it back (`ProgressSink`, `AskHuman`), both on the stream of the request.
//!
//! It runs no stage itself: the pipeline does, given the context; here the outcome is only shaped for the wire.

use crate::client::{Client, ClientEra, LogLevel, Relay};
use crate::guard::Guard;
use crate::outbox::Stream;
use crate::outcome::CallOutcome;
use crate::pipeline::{
    self, AskFuture, AskHuman, CallContext, GrantScope, HoldPolicy, Origin, Progress, ProgressSink,
    Requester,
};
use crate::session::Session;
use crate::wire::{self, Reply, Shape};
use jsonrpc::Id;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl Session {
    /// The context of client request `request` with these params: this session's grants, its progress token
    /// (read from `_meta`), elicitation through this client, and a held call that waits.
    pub(crate) fn call_context(
        self: &Arc<Self>,
        request: &Id,
        params: &Value,
        cancel: &CancellationToken,
    ) -> CallContext {
        let origin = Origin::Client {
            session_id: self.id.clone(),
        };
        let mut ctx = CallContext::new(
            origin,
            HoldPolicy::Wait,
            cancel.clone(),
            Session::guard(self),
        );
        ctx.principal = self.principal();
        ctx.traceparent = crate::front::traceparent();
        let channel = self.channel(request);
        ctx.grants = GrantScope::Session(self.id.clone());
        ctx.progress = jsonrpc::meta_field(params, "progressToken").map(|token| Progress {
            token: token.clone(),
            sink: Arc::clone(&channel) as Arc<dyn ProgressSink>,
        });
        ctx.asker = Some(channel as Arc<dyn AskHuman>);
        let log_level = jsonrpc::meta_field(params, "io.modelcontextprotocol/logLevel")
            .and_then(Value::as_str)
            .and_then(LogLevel::parse);
        let client: Arc<dyn Client> = Arc::clone(self) as Arc<dyn Client>;
        ctx.requester = Some(Requester {
            client: Arc::downgrade(&client),
            request: request.clone(),
            log_level,
        });
        ctx
    }

    /// Client request `request` as the pipeline reaches back to it.
    fn channel(self: &Arc<Self>, request: &Id) -> Arc<RequestChannel> {
        Arc::new(RequestChannel {
            session: Arc::clone(self),
            stream: Stream::Request(request.clone()),
        })
    }

    /// Where progress for client request `request`, which gave progress token `token`, goes.
    #[cfg(test)]
    pub(crate) fn progress_for(self: &Arc<Self>, request: &Id, token: Value) -> Progress {
        Progress {
            token,
            sink: self.channel(request),
        }
    }

    /// `tools/call` from this session's client, as the client receives it. toolgate's own answers (a refusal,
    /// a hold, an approval outcome) are fitted to the called tool's `outputSchema`, so that official clients,
    /// which validate structured content, show them.
    pub(crate) async fn call_tool(
        self: &Arc<Self>,
        request: &Id,
        params: Value,
        cancel: &CancellationToken,
    ) -> Reply {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let ctx = self.call_context(request, &params, cancel);
        let outcome = pipeline::govern_tool(&self.gateway.stages, &ctx, params).await;
        // Only toolgate's own answers are fitted, to the definition the catalog holds as they are given; a
        // tool's result passes as it came, and no call copies its definition.
        let own = matches!(outcome, CallOutcome::Refused(_) | CallOutcome::Held(_));
        let agg = own.then(|| self.gateway.stages.aggregate());
        let definition = agg.as_ref().zip(name).and_then(|(agg, name)| {
            let exposed = crate::codemode::resolve(agg, &name)?;
            agg.tool_definition(&exposed)
        });
        wire::reply(outcome, Shape::ToolResult, definition)
    }

    /// `prompts/get`, `resources/read`, `resources/subscribe`, `resources/unsubscribe` and
    /// `completion/complete` from this session's client.
    pub(crate) async fn govern_read(
        self: &Arc<Self>,
        request: &Id,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Reply {
        let ctx = self.call_context(request, &params, cancel);
        let outcome = pipeline::govern_read(&self.gateway.stages, &ctx, method, params).await;
        wire::reply(outcome, Shape::RpcError, None)
    }

    /// `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update` and `tasks/list` from this session's client.
    pub(crate) async fn govern_task(
        self: &Arc<Self>,
        request: &Id,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Reply {
        let ctx = self.call_context(request, &params, cancel);
        pipeline::govern_task(&self.gateway.stages, &ctx, method, params).await
    }
}

/// One client request as the pipeline reaches back to it: its progress and the approval questions about it go
/// on that request's stream.
struct RequestChannel {
    session: Arc<Session>,
    stream: Stream,
}

impl ProgressSink for RequestChannel {
    /// Posted, never awaited: a client that does not read is closed, it does not hold the upstream's reader.
    fn post_progress(&self, params: Value) -> bool {
        self.session.post_on(
            self.stream.clone(),
            jsonrpc::notification("notifications/progress", Some(params)),
        )
    }
}

impl AskHuman for RequestChannel {
    /// Only a legacy client that declared elicitation: a modern one would need multi round-trip results.
    fn can_ask(&self) -> bool {
        let st = self.session.lock();
        matches!(st.era, ClientEra::Legacy(_)) && st.client_caps.get("elicitation").is_some()
    }

    fn ask(&self, params: Value) -> AskFuture<'_> {
        Box::pin(
            self.session
                .ask_client(self.stream.clone(), "elicitation/create", params),
        )
    }
}

/// The session as the stages see it (`client`): nothing of how it is kept or framed.
impl Client for Session {
    fn session_id(&self) -> &str {
        &self.id
    }

    fn era(&self) -> ClientEra {
        self.lock().era.clone()
    }

    fn identity(&self) -> Option<String> {
        Session::identity(self)
    }

    fn guard(&self) -> Arc<Guard> {
        Session::guard(self)
    }

    fn capabilities(&self) -> Value {
        self.lock().client_caps.clone()
    }

    fn relay_refusal(&self, method: &str, cap: &str) -> Option<String> {
        Session::relay_refusal(self, method, cap)
    }

    fn ask(&self, stream: Stream, method: &str, params: Value) -> AskFuture<'_> {
        let method = method.to_owned();
        Box::pin(async move { self.ask_client(stream, &method, params).await })
    }

    fn subscribed(&self, server: &str, uri: &str) {
        Session::subscribed(self, server, uri)
    }

    fn unsubscribe(&self, server: &str, uri: &str) -> bool {
        Session::unsubscribe(self, server, uri)
    }

    fn relay(self: Arc<Self>, relay: Relay) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move { Session::relay(&self, relay).await })
    }
}
