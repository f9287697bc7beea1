//! How the pipeline decides the messages that are not calls of a tool, prompt or resource: the task methods and
//! the requests an upstream sends toward a client. Each is an action of the pure policy, so a rule can stop it and
//! `explain` shows it; none is held for a human.
//!
//! - A task method (`tasks/get|result|cancel|update`) reads or steers a task a tool call created: it is decided as
//!   that tool by name (`mcp.call` of `server__tool`), the way reading its result would be. The call that created
//!   the task was decided with its arguments, so the policy's default does not apply again; a rule naming the
//!   tool does (a deny added since stops its result reaching anyone). `tasks/list` is toolgate's own list of the
//!   caller's tasks, `mcp.call` of `toolgate__tasks_list`, likewise free of the default.
//! - An upstream's `sampling/createMessage`, `elicitation/create` and `roots/list` are `mcp.sample`,
//!   `mcp.elicit` and `mcp.roots` of `server__<method>`: default-allowed toward the client whose call caused them
//!   (its human sees them), deniable by a rule.
//!
//! An `ask` of either goes ahead: there is no held form of these messages, and the call behind them was decided.

use crate::guard::{Guard, Verdict, OWN_SERVER};
use crate::outcome::Refusal;
use policy::{Decision, Effect, Operation, RawAction, ReasonCode};

/// The policy operation of an upstream's request toward a client; `None` for one toolgate never relays.
pub(crate) fn upstream_operation(method: &str) -> Option<Operation> {
    match method {
        "sampling/createMessage" => Some(Operation::McpSample),
        "elicitation/create" => Some(Operation::McpElicit),
        "roots/list" => Some(Operation::McpRoots),
        _ => None,
    }
}

/// Decides `method` that upstream `server` sends toward a client.
pub(crate) fn upstream_request(guard: &Guard, server: &str, method: &str) -> Verdict {
    let operation = upstream_operation(method).unwrap_or(Operation::Unknown);
    default_free(
        guard,
        RawAction::new(operation, format!("{server}__{method}")),
    )
}

/// Decides a task method on a task of `tool` of `server`.
pub(crate) fn task(guard: &Guard, server: &str, tool: &str) -> Verdict {
    default_free(
        guard,
        RawAction::new(Operation::McpCall, format!("{server}__{tool}")),
    )
}

/// Decides `tasks/list`.
pub(crate) fn task_list(guard: &Guard) -> Verdict {
    task(guard, OWN_SERVER, "tasks_list")
}

/// The policy's decision of `raw` with its default replaced by an allow: only rules decide these actions.
fn default_free(guard: &Guard, raw: RawAction) -> Verdict {
    let policy = guard.policy();
    let action = policy::normalise(&raw, policy.context(), &crate::canon::canonicalise);
    let mut decision: Decision = policy.decide(&action);
    if matches!(
        decision.reason,
        ReasonCode::DefaultAsk | ReasonCode::DefaultDeny
    ) {
        decision.effect = Effect::Allow;
        decision.reason = ReasonCode::DefaultAllow;
    }
    match decision.effect {
        Effect::Allow => Verdict::Allow(decision),
        Effect::Ask => Verdict::Ask(decision),
        Effect::Deny => Verdict::Refuse(Refusal::denied(&decision)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn guard(policy: serde_json::Value) -> Guard {
        let dir = tempfile::tempdir().unwrap();
        let config = config::parse_str(
            &json!({ "policy": policy }).to_string(),
            config::Format::Json,
            std::path::Path::new("toolgate.json"),
            &|_| None,
            &config::Overrides::default(),
        )
        .unwrap();
        Guard::load(&config, dir.path()).unwrap()
    }

    fn effect(v: &Verdict) -> &'static str {
        match v {
            Verdict::Allow(_) => "allow",
            Verdict::Ask(_) => "ask",
            Verdict::Refuse(_) => "deny",
        }
    }

    #[test]
    fn task_result_of_a_tool_a_deny_rule_names_is_refused_and_the_default_never_refuses() {
        let strict = guard(json!({"default": "deny"}));
        assert_eq!(effect(&task(&strict, "fx", "task_work")), "allow");
        assert_eq!(effect(&task_list(&strict)), "allow");
        let denied = guard(json!({"default": "allow", "rules": [
            {"id": "no-work", "effect": "deny", "tools": ["fx__task_work"]}]}));
        assert_eq!(effect(&task(&denied, "fx", "task_work")), "deny");
        assert_eq!(effect(&task(&denied, "fx", "other")), "allow");
    }

    #[test]
    fn upstream_requests_are_their_own_operations_free_of_the_default_and_deniable() {
        let strict = guard(json!({"default": "deny"}));
        for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
            assert_eq!(
                effect(&upstream_request(&strict, "fx", method)),
                "allow",
                "{method}"
            );
        }
        assert_eq!(effect(&upstream_request(&strict, "fx", "ping")), "deny");
        let no_roots = guard(json!({"default": "allow", "rules": [
            {"id": "no-roots", "effect": "deny", "operations": ["mcp.roots"]}]}));
        assert_eq!(
            effect(&upstream_request(&no_roots, "fx", "roots/list")),
            "deny"
        );
        assert_eq!(
            effect(&upstream_request(&no_roots, "fx", "sampling/createMessage")),
            "allow"
        );
    }
}
