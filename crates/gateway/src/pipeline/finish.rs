//! The finishing guard: whatever way a governed request leaves the pipeline, it leaves exactly one decision
//! record (a refusal made before the policy is recorded as a deny with the refusal's code), at most one finished
//! record, and — for a call that went ahead — the post-hooks. `close` does this with the outcome; a guard dropped
//! without `close` (its future was dropped mid-call) records the call as cancelled and still runs the post-hooks.
//!
//! It does not decide, run or shape anything.

use crate::hooks::{Hooked, Registry};
use crate::outcome::{CallOutcome, RefusalCode};
use crate::record::{CallRecord, RecordDecision};
use crate::state::State;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// Where the decision record stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decided {
    /// Nothing decided yet.
    No,
    /// Decided, not yet written (written before anything runs, or when the request leaves).
    Pending,
    /// Written, here or — for a resumed call — when the call was first seen.
    Written,
}

/// Where every governed request's records and post-hooks go: the stages' recorder port.
#[derive(Clone)]
pub(crate) struct Recorder {
    /// Where the records go (none: a gateway without state).
    pub(crate) state: Option<Arc<State>>,
    pub(crate) hooks: Arc<Registry>,
    /// Where each request's span and metrics go (off: nothing).
    pub(crate) telemetry: telemetry::Telemetry,
}

/// The records and post-hooks of one governed request. Create it when the request is first seen; `close` it
/// with the outcome.
pub(crate) struct Finish {
    /// Where the records go (none: a gateway without state).
    state: Option<Arc<State>>,
    record: CallRecord,
    decided: Decided,
    /// The post-hooks to run, and the registry that runs them.
    hooks: Option<(Hooked, Arc<Registry>)>,
    started: Instant,
    /// The request's wait for a human, reported apart from the rest of its time.
    human_wait: super::HumanWait,
    closed: bool,
    /// The request's span and its count in the metrics (`telemetry`; nothing when off).
    span: telemetry::Call,
}

impl Finish {
    pub(crate) fn new(
        recorder: &Recorder,
        ctx: &super::CallContext,
        tool: &str,
        arguments: &Value,
    ) -> Self {
        let trace_id = &ctx.trace_id;
        let profile = ctx.guard.profile().unwrap_or("default").to_owned();
        let span = recorder
            .telemetry
            .call(ctx.traceparent.as_deref(), trace_id);
        Self {
            state: recorder.state.clone(),
            record: CallRecord {
                trace_id: trace_id.to_owned(),
                profile,
                principal: ctx.principal.clone(),
                server: String::new(),
                tool: tool.to_owned(),
                arguments: audit::Digest::of_json(arguments),
                decision: RecordDecision::refused(RefusalCode::Failed),
                resources: Vec::new(),
                request_id: None,
                parent_trace_id: None,
                credentials: Vec::new(),
            },
            decided: Decided::No,
            hooks: None,
            started: Instant::now(),
            human_wait: ctx.human_wait.clone(),
            closed: false,
            span,
        }
    }

    /// The trace the request's records carry: its own, or for a resumed call the held call's.
    pub(crate) fn trace_id(&self) -> &str {
        &self.record.trace_id
    }

    /// The request is a call a code-mode program made in run `run_trace_id`: its records name that run.
    pub(crate) fn parent(&mut self, run_trace_id: &str) {
        self.record.parent_trace_id = Some(run_trace_id.to_owned());
    }

    /// The owner the request was routed to, and its own name there.
    pub(crate) fn routed(&mut self, server: &str, target: &str) {
        server.clone_into(&mut self.record.server);
        target.clone_into(&mut self.record.tool);
        self.span.routed(server, target);
    }

    /// The upstream credentials the request goes with, by name (`credentials`).
    pub(crate) fn credentials(&mut self, names: Vec<String>) {
        self.record.credentials = names;
    }

    /// A stage of the request begins; its span and latency end when the guard is dropped (`telemetry`).
    pub(crate) fn stage(&self, name: &'static str) -> telemetry::Stage {
        self.span.stage(name)
    }

    /// What the request touches (canonical paths, programs, hosts), as the guard found it.
    pub(crate) fn touches(&mut self, resources: Vec<String>) {
        self.record.resources = resources;
    }

    /// The request's decision; written by `commit` or on leaving. Deciding twice keeps the last decision (a
    /// hook's replaces the policy's), still one record.
    pub(crate) fn decide(&mut self, decision: RecordDecision) {
        debug_assert!(
            self.decided != Decided::Written,
            "decided after the record was written"
        );
        self.record.decision = decision;
        self.decided = Decided::Pending;
    }

    /// Post-hooks to run on leaving: only calls that went ahead (ran or were held) get them.
    pub(crate) fn post_hooks(&mut self, recorder: &Recorder, hooks: Option<Hooked>) {
        self.hooks = hooks.map(|h| (h, Arc::clone(&recorder.hooks)));
    }

    /// Writes the decision record now: before anything runs or anyone is asked.
    pub(crate) fn commit(&mut self) {
        if self.decided == Decided::Pending {
            if let Some(state) = &self.state {
                self.record.decided(state);
            }
            self.decided = Decided::Written;
        }
    }

    /// An approved call re-entering after approval: its records continue the trace of the call that was held,
    /// under its tool's name and arguments, whose decision record was written when it was first seen.
    pub(crate) fn resumed(&mut self, trace_id: &str, record: CallRecord) {
        debug_assert_eq!(self.decided, Decided::Pending);
        debug_assert_eq!(record.trace_id, trace_id);
        self.record = record;
        self.decided = Decided::Written;
    }

    /// The request left with `outcome`: the decision record if none was written, the finished record, then the
    /// post-hooks.
    pub(crate) async fn close(mut self, outcome: &CallOutcome) {
        self.closed = true;
        let stage = self.span.stage("finish");
        self.write(outcome);
        if let Some((h, hooks)) = self.hooks.take() {
            hooks
                .post(&h, outcome.name(), outcome.result(), self.started.elapsed())
                .await;
        }
        drop(stage);
        self.end_span(outcome);
    }

    /// The request's span ends with its decision and outcome, which the call counter counts.
    fn end_span(&mut self, outcome: &CallOutcome) {
        let d = &self.record.decision;
        self.span.end(&telemetry::Ending {
            decision: d.effect.as_str(),
            reason: &d.reason,
            operation: &d.operation,
            outcome: outcome.name(),
        });
    }

    fn write(&mut self, outcome: &CallOutcome) {
        if self.decided == Decided::No {
            // Left before any decision (a refusal before the policy, a malformed request): a deny for the record.
            let decision = match outcome {
                CallOutcome::Refused(r) => match &r.decision {
                    Some(d) => RecordDecision::of(d),
                    None => RecordDecision::refused(r.code),
                },
                _ => RecordDecision::refused(RefusalCode::Failed),
            };
            self.decide(decision);
        }
        self.commit();
        if let Some(state) = &self.state {
            let took = self.started.elapsed();
            let waited = self.human_wait.total();
            self.record
                .finished(state, outcome.name(), outcome.result(), took, waited);
        }
    }
}

impl Drop for Finish {
    /// The request's future was dropped before it closed: record it as cancelled, and run the post-hooks on
    /// their own task (a drop cannot wait).
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.write(&CallOutcome::Cancelled);
        self.end_span(&CallOutcome::Cancelled);
        let (Some((h, hooks)), Ok(runtime)) =
            (self.hooks.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let took = self.started.elapsed();
        runtime.spawn(async move {
            hooks
                .post(&h, CallOutcome::Cancelled.name(), None, took)
                .await;
        });
    }
}
