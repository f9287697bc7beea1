//! The stages' face of the hooks: the calls the pipeline makes at its two hook points.
//! Kept apart from `hooks.rs` so the hook types and their running depend on nothing of the gateway.

use super::{Called, Hooked, Tightened};
use crate::guard::Verdict;
use crate::pipeline::context::CallContext;
use crate::record::RecordDecision;
use crate::stages::Stages;
use serde_json::Value;

impl Stages {
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
        self.recorder.hooks.call(called, d, arguments)
    }

    pub(crate) async fn pre_hooks(
        &self,
        hooked: &Hooked,
        verdict: Verdict,
        arguments: &Value,
    ) -> Tightened {
        self.recorder.hooks.pre(hooked, verdict, arguments).await
    }
}
