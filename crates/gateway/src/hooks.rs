//! Ordered pre- and post-call hooks around `tools/call`: the `CallHook` trait embedders implement, the list the
//! gateway holds, and the two points where the gateway runs them.
//!
//! Pre-hooks run after the policy decided and only on calls it let through; they can make a call stricter
//! (allow → ask or deny, ask → deny), never looser, and the first deny or ask stops the list. Post-hooks run in
//! order once the outcome is known and only observe: their failures are logged and counted, never returned.
//! A hook sees metadata (names, the decision, the arguments' size and SHA-256); the arguments themselves only
//! when it asks for them, and then redacted. toolgate's own read-only tools skip hooks. This module does not
//! decide policy, hold approvals or write records; the pipeline does that with what it returns.

mod command;
mod input;
mod on_gateway;

pub use command::{command_hooks, CommandHook};

use crate::guard::Verdict;
use crate::outcome::{Refusal, RefusalCode};
use crate::own::OwnTool;
use crate::record::RecordDecision;
use policy::{Decision, Effect, ReasonCode};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A hook's answer before a call runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookDecision {
    /// No objection: the policy's decision stands.
    Allow,
    /// Refuse the call; `reason` is shown to the agent.
    Deny { reason: String },
    /// Hold the call for a human, through the same approvals as a policy ask.
    Ask { reason: String },
}

/// What a hook is told about one call. Metadata only: `arguments` is set only for hooks that ask for it, and
/// then redacted like the audit log redacts text.
#[derive(Clone, Debug, PartialEq)]
pub struct HookCall {
    pub trace_id: String,
    pub server: String,
    pub tool: String,
    /// The name the client called.
    pub exposed: String,
    pub operation: String,
    /// The policy's decision: what a hook may tighten.
    pub effect: Effect,
    pub rule_id: Option<String>,
    /// Where that rule was written in the user's file (`toolgate.json:28`), when it was.
    pub rule_at: Option<String>,
    /// The policy's reason code (`ALLOW_RULE`, `DEFAULT_ASK`, …).
    pub reason: String,
    pub profile: String,
    pub arguments_bytes: u64,
    pub arguments_sha256: String,
    pub arguments: Option<Value>,
}

impl HookCall {
    /// The call as one JSON object, as command hooks read it on stdin.
    pub fn to_json(&self) -> Value {
        // Strings, numbers and JSON values only: serialising cannot fail.
        serde_json::to_value(input::Input::of(self)).unwrap_or_default()
    }
}

/// What a post-hook is told about how a call ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HookOutcome {
    /// The contract's outcome name (`SUCCEEDED`, `FAILED`, `APPROVAL_REQUIRED`, `CANCELLED`, …).
    pub outcome: String,
    pub duration_ms: u64,
    /// Size and SHA-256 of the result the client got, when it got one.
    pub result_bytes: Option<u64>,
    pub result_sha256: Option<String>,
}

impl HookOutcome {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// A pre- and/or post-call hook. Both methods run on a blocking thread, so a hook may block (up to its own
/// limits); a panic counts as a deny before the call and as a failure after it.
pub trait CallHook: Send + Sync {
    /// How messages and logs name this hook.
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// Whether this hook is shown the call's (redacted) arguments.
    fn wants_arguments(&self) -> bool {
        false
    }

    /// Before the call runs. The default has no objection.
    fn before(&self, _call: &HookCall) -> HookDecision {
        HookDecision::Allow
    }

    /// After the outcome is known. An error is logged and counted; it never changes the result.
    fn after(&self, _call: &HookCall, _outcome: &HookOutcome) -> Result<(), String> {
        Ok(())
    }
}

type HookList = Arc<Vec<Arc<dyn CallHook>>>;

/// The gateway's hooks, in order, and how many post-hook runs failed.
#[derive(Default)]
pub(crate) struct Registry {
    hooks: RwLock<HookList>,
    failures: AtomicU64,
}

impl Registry {
    /// Replaces the hooks; a call already under way keeps the list it started with.
    pub(crate) fn set(&self, hooks: Vec<Arc<dyn CallHook>>) {
        *self.hooks.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(hooks);
    }

    /// Post-hook runs that failed (error, timeout, panic) since start.
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    fn list(&self) -> HookList {
        Arc::clone(&self.hooks.read().unwrap_or_else(|p| p.into_inner()))
    }
}

/// A pre-hook's verdict, ready for `call_tool`.
pub(crate) struct Tightened {
    pub verdict: Verdict,
    /// Why a hook asked, for the human who decides (stored with the approval request).
    pub note: Option<String>,
}

/// Longest reason text kept from a hook, so one cannot flood the agent's context or the logs.
const MAX_REASON_CHARS: usize = 500;

/// A hook's reason as the agent and the logs get it: one line, bounded, with secret-shaped text redacted (a
/// failing command's stderr is part of it).
fn clean_reason(reason: &str) -> String {
    let text: String = audit::redact(reason)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REASON_CHARS)
        .collect();
    match text.trim() {
        "" => "no reason given".to_owned(),
        t => t.to_owned(),
    }
}

/// The metadata a hook sees and the hooks to run, fixed when the call is first decided.
pub(crate) type Hooked = (HookCall, HookList);

/// Which call hooks are told about: where it goes and who asked.
pub(crate) struct Called<'a> {
    pub trace_id: &'a str,
    pub profile: &'a str,
    pub exposed: &'a str,
    pub server: &'a str,
    pub tool: &'a str,
}

impl Registry {
    /// The metadata hooks see for a call decided `d`, or `None` when no hook runs for it: no hooks registered,
    /// or it is one of toolgate's read-only tools. Callers do not ask for refused calls: hooks cannot loosen them.
    pub(crate) fn call(
        &self,
        c: Called<'_>,
        d: &RecordDecision,
        arguments: &Value,
    ) -> Option<Hooked> {
        let Called {
            trace_id,
            profile,
            exposed,
            server,
            tool,
        } = c;
        let hooks = self.list();
        if hooks.is_empty() || OwnTool::parse(server, tool).is_some_and(|t| t.is_intrinsic()) {
            return None;
        }
        let digest = audit::Digest::of_json(arguments);
        let call = HookCall {
            trace_id: trace_id.to_owned(),
            server: server.to_owned(),
            tool: tool.to_owned(),
            exposed: exposed.to_owned(),
            operation: d.operation.clone(),
            effect: d.effect,
            rule_id: d.rule_id.clone(),
            rule_at: d.rule_at.clone(),
            reason: d.reason.clone(),
            profile: profile.to_owned(),
            arguments_bytes: digest.bytes,
            arguments_sha256: digest.sha256,
            arguments: None,
        };
        Some((call, hooks))
    }

    /// Runs the pre-hooks in order on a call the policy allowed or asked for; the first deny or ask stops them.
    pub(crate) async fn pre(
        &self,
        (call, hooks): &Hooked,
        verdict: Verdict,
        arguments: &Value,
    ) -> Tightened {
        let operation = match &verdict {
            Verdict::Allow(d) | Verdict::Ask(d) => d.operation,
            Verdict::Refuse(..) => {
                return Tightened {
                    verdict,
                    note: None,
                }
            }
        };
        let trace_id = call.trace_id.clone();
        let (call, hooks) = (call.clone(), Arc::clone(hooks));
        // Arguments are copied (and redacted) only when some hook asked to see them.
        let arguments = hooks
            .iter()
            .any(|h| h.wants_arguments())
            .then(|| arguments.clone());
        let answer = tokio::task::spawn_blocking(move || first_objection(&hooks, call, arguments))
            .await
            .unwrap_or_else(|e| {
                Some(Objection {
                    index: 0,
                    name: "hooks".to_owned(),
                    effect: Effect::Deny,
                    reason: format!("the hooks could not run: {e}"),
                })
            });
        match answer {
            Some(objection) => tighten(verdict, operation, objection, &trace_id),
            None => Tightened {
                verdict,
                note: None,
            },
        }
    }

    /// Runs the post-hooks in order. Each failure is logged and counted; none changes the outcome.
    pub(crate) async fn post(
        &self,
        (call, hooks): &Hooked,
        outcome: &str,
        result: Option<&Value>,
        took: Duration,
    ) {
        let digest = result.map(audit::Digest::of_json);
        let outcome = HookOutcome {
            outcome: outcome.to_owned(),
            duration_ms: took.as_millis() as u64,
            result_bytes: digest.as_ref().map(|d| d.bytes),
            result_sha256: digest.map(|d| d.sha256),
        };
        let (call, hooks) = (call.clone(), Arc::clone(hooks));
        let failed = tokio::task::spawn_blocking(move || {
            let mut failed = 0;
            for (index, hook) in hooks.iter().enumerate() {
                let run = catch_unwind(AssertUnwindSafe(|| hook.after(&call, &outcome)));
                let why = match run {
                    Ok(Ok(())) => continue,
                    Ok(Err(why)) => why,
                    Err(_) => "the hook panicked".to_owned(),
                };
                failed += 1;
                tracing::warn!(hook = %hook.name(), index, "a post-call hook failed (the result stands): {why}");
            }
            failed
        })
        .await
        .unwrap_or(1);
        self.failures.fetch_add(failed, Ordering::Relaxed);
    }
}

/// The verdict after a hook's objection: a deny refuses; an ask holds a call the policy allowed (a policy ask
/// stays the policy's, since its rule is what the approver should see).
fn tighten(
    verdict: Verdict,
    operation: policy::Operation,
    objection: Objection,
    trace_id: &str,
) -> Tightened {
    let Objection {
        index,
        name,
        effect,
        reason: text,
    } = objection;
    let reason = match effect {
        Effect::Ask => ReasonCode::HookAsk,
        Effect::Allow | Effect::Deny => ReasonCode::HookDeny,
    };
    let text = clean_reason(&text);
    let d = Decision {
        effect,
        reason,
        rule_id: Some(format!("hook:{index}")),
        rule_at: None,
        operation,
        unknown: None,
    };
    match (effect, &verdict) {
        (Effect::Deny, _) => {
            tracing::info!(hook = %name, index, "a hook denied a call: {text}");
            let message = format!("toolgate denied this call: hook {index} ({name}) said: {text}");
            let refused = Refusal::new(RefusalCode::Policy(reason), message)
                .with_trace(trace_id)
                .with_decision(d);
            Tightened {
                verdict: Verdict::Refuse(refused),
                note: None,
            }
        }
        (Effect::Ask, Verdict::Allow(_)) => {
            tracing::info!(hook = %name, index, "a hook asked for approval: {text}");
            Tightened {
                verdict: Verdict::Ask(d),
                note: Some(format!("hook {index} ({name}) asked: {text}")),
            }
        }
        _ => Tightened {
            verdict,
            note: None,
        },
    }
}

/// A hook that did not simply allow a call.
#[derive(Debug, PartialEq)]
struct Objection {
    /// Position in the gateway's list: the decision's rule id is `hook:<index>`.
    index: usize,
    name: String,
    /// `Ask` or `Deny`.
    effect: Effect,
    reason: String,
}

/// The first hook with an objection. A panicking hook objects (fail closed).
fn first_objection(
    hooks: &[Arc<dyn CallHook>],
    call: HookCall,
    arguments: Option<Value>,
) -> Option<Objection> {
    let with_arguments = arguments.map(|a| HookCall {
        arguments: Some(audit::redact_json(&a)),
        ..call.clone()
    });
    hooks.iter().enumerate().find_map(|(index, hook)| {
        let shown = match (&with_arguments, hook.wants_arguments()) {
            (Some(full), true) => full,
            _ => &call,
        };
        let answer = catch_unwind(AssertUnwindSafe(|| hook.before(shown))).unwrap_or_else(|_| {
            HookDecision::Deny {
                reason: "the hook panicked".to_owned(),
            }
        });
        let (effect, reason) = match answer {
            HookDecision::Allow => return None,
            HookDecision::Ask { reason } => (Effect::Ask, reason),
            HookDecision::Deny { reason } => (Effect::Deny, reason),
        };
        Some(Objection {
            index,
            name: hook.name().to_owned(),
            effect,
            reason,
        })
    })
}

#[cfg(test)]
mod tests;
