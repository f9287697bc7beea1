//! The gateway's face of its hooks: registering them, and the calls the pipeline makes at its two hook points.
//! Kept apart from `hooks.rs` so the hook types and their running depend on nothing of the gateway.

use super::{CallHook, Called, Hooked, Tightened};
use crate::gateway::Gateway;
use crate::guard::Verdict;
use crate::pipeline::CallContext;
use crate::record::RecordDecision;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

impl Gateway {
    /// Registers the call hooks, in order, replacing any registered before. Meant for start-up, before
    /// serving: a call already under way keeps the list it started with.
    pub fn set_hooks(&self, hooks: Vec<Arc<dyn CallHook>>) {
        self.hooks.set(hooks);
    }

    /// Post-hook runs that failed (error, timeout, panic) since start; none of them changed a result.
    pub fn hook_failures(&self) -> u64 {
        self.hooks.failures()
    }

    /// What hooks see of a call `ctx` makes, or `None` when no hook runs for it (`Registry::call`).
    pub(crate) fn hook_call(
        &self,
        ctx: &CallContext,
        exposed: &str,
        server: &str,
        tool: &str,
        d: &RecordDecision,
        arguments: &Value,
    ) -> Option<Hooked> {
        let called = Called {
            trace_id: &ctx.trace_id,
            profile: ctx.guard.profile().unwrap_or("default"),
            exposed,
            server,
            tool,
        };
        self.hooks.call(called, d, arguments)
    }

    pub(crate) async fn pre_hooks(
        &self,
        hooked: &Hooked,
        verdict: Verdict,
        arguments: &Value,
    ) -> Tightened {
        self.hooks.pre(hooked, verdict, arguments).await
    }

    pub(crate) async fn post_hooks(
        &self,
        hooked: &Hooked,
        outcome: &str,
        result: Option<&Value>,
        took: Duration,
    ) {
        self.hooks.post(hooked, outcome, result, took).await
    }
}
