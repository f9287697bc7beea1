//! `explain`: the decision pass of `decide.rs` run with a trace of every rule, for each part of a call (its main
//! operation and each further access: the names a listing discloses, a move's destination), so an explanation
//! names the same decision, rule and operation as `decide`, and the rule that decided is shown in the part that
//! decided. Rules are named as the user wrote them, with where (`toolgate.toml:12`) when the policy was given its
//! source text ([`Policy::with_origins`]).
//!
//! It decides nothing `decide` would not: `explain(a).decision == decide(a)` always (a property test holds it).

use serde::Serialize;

use crate::action::{Action, Scope, ToolCall};
use crate::decide::{strictest, Decision, ReasonCode};
use crate::load::Policy;
use crate::operation::{Effect, Operation, Precedence};
use crate::path::Canonicalise;
use crate::rule::Mismatch;

/// One rule as `explain` saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleTrace {
    /// The rule's name: its `id`, or a permission's own text (`Read(**/.env)`).
    pub id: String,
    pub effect: Effect,
    pub matched: bool,
    /// An ask rule that matched some but not all of the call's paths (it caps an allow at ask).
    pub partial: bool,
    /// The first field that failed, when the rule did not match.
    pub why_not: Option<Mismatch>,
    /// True for the rule named by the decision, in the part of the call that decided.
    pub decisive: bool,
    /// The rule decided without matching the call's own paths: a path it denies may lie beneath them
    /// (`DENIED_BENEATH`).
    pub beneath: bool,
    /// Where the rule was written (`toolgate.toml:12`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// One further access of a call, decided on its own paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessTrace {
    pub operation: Operation,
    pub paths: Vec<String>,
    #[serde(skip_serializing_if = "is_exact")]
    pub scope: Scope,
    pub decision: Decision,
    pub rules: Vec<RuleTrace>,
}

fn is_exact(scope: &Scope) -> bool {
    *scope == Scope::Exact
}

/// The whole evaluation of one call, serialisable for `policy explain` and admin APIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The call's decision: the strictest of its parts, the one `decide` returns.
    pub decision: Decision,
    pub action: Action,
    pub default: Effect,
    /// How matching rules ranked; shown only when the file chose other than toolgate's own.
    #[serde(skip_serializing_if = "Precedence::is_strictest")]
    pub precedence: Precedence,
    pub profile: Option<String>,
    pub hidden: bool,
    /// The rules as the main operation met them.
    pub rules: Vec<RuleTrace>,
    /// Each further access, in the action's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accesses: Vec<AccessTrace>,
}

impl Explanation {
    /// The rules of the part that decided the call (the main operation's, or a further access's).
    pub fn deciding_rules(&self) -> &[RuleTrace] {
        self.accesses
            .iter()
            .find(|a| a.rules.iter().any(|r| r.decisive))
            .map_or(&self.rules, |a| &a.rules)
    }
}

impl Policy {
    /// Decides and records every rule consulted, for each part of the call.
    pub fn explain(&self, action: &Action) -> Explanation {
        let (main, mut rules) = self.traced(action);
        let mut accesses: Vec<AccessTrace> = action
            .also
            .iter()
            .map(|access| {
                let part = action.part(access);
                let (decision, rules) = self.traced(&part);
                AccessTrace {
                    operation: part.operation,
                    paths: part.paths,
                    scope: part.scope,
                    decision,
                    rules,
                }
            })
            .collect();
        let parts: Vec<Decision> = accesses.iter().map(|a| a.decision.clone()).collect();
        let (decision, from) = strictest(main, parts.into_iter());
        // Only the deciding part's rule is the decisive one; the same rule elsewhere merely matched.
        for (i, a) in accesses.iter_mut().enumerate() {
            if from != Some(i) {
                a.rules.iter_mut().for_each(|r| r.decisive = false);
            }
        }
        if from.is_some() {
            rules.iter_mut().for_each(|r| r.decisive = false);
        }
        Explanation {
            decision,
            action: action.clone(),
            default: self.default,
            precedence: self.precedence,
            profile: self.active.as_ref().map(|(n, _)| n.clone()),
            hidden: self.is_hidden(&action.tool),
            rules,
            accesses,
        }
    }

    /// Adapter, normalisation and `explain` in one step (for `policy explain` on a call).
    pub fn explain_call(&self, call: &ToolCall, canon: &dyn Canonicalise) -> Explanation {
        self.explain(&self.action_for(call, canon))
    }

    /// One part decided with every rule traced; the rule its decision names is marked.
    fn traced(&self, action: &Action) -> (Decision, Vec<RuleTrace>) {
        let mut trace = Vec::with_capacity(self.rules.len());
        let decision = self.evaluate_one(action, Some(&mut trace));
        for t in &mut trace {
            t.decisive = decision.rule_id.as_deref() == Some(t.id.as_str());
            t.beneath = t.decisive && decision.reason == ReasonCode::DeniedBeneath;
            t.at = self.rule_origin(&t.id).map(str::to_owned);
        }
        (decision, trace)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Context, Effect, Lexical, Operation, Policy, PolicySources, ServerKind, ToolCall};
    use serde_json::json;

    /// `git_status` reads git (allowed) and discloses names beneath the repository, where a denied `.env` may
    /// lie: the explanation must name the part that decided, with its operation, as `decide` does.
    #[test]
    fn a_listing_capped_by_a_deny_beneath_is_explained_on_the_part_that_decided() {
        let policy = json!({"default": "deny", "rules": [
            {"id": "allow-git", "effect": "allow", "operations": ["git.read", "fs.read"], "paths": ["${workspace}/**", "${workspace}"]}
        ]});
        let permissions = json!({"deny": ["Read(**/.env)"]});
        let ctx = Context {
            workspace: "/ws".into(),
            home: None,
        };
        let p = Policy::load(
            PolicySources {
                policy: Some(&policy),
                permissions: Some(&permissions),
                profiles: None,
            },
            &ctx,
        )
        .unwrap();
        let call = ToolCall::new(
            "git",
            "git_status",
            json!({"repo_path": "/ws"}),
            Some(ServerKind::Git),
        );
        let e = p.explain_call(&call, &Lexical);
        assert_eq!(e.decision, p.decide_call(&call, &Lexical));
        assert_eq!(e.decision.effect, Effect::Ask);
        assert_eq!(e.decision.rule_id.as_deref(), Some("Read(**/.env)"));
        assert!(e.rules.iter().all(|r| !r.decisive), "{:?}", e.rules);
        let decisive: Vec<_> = e.deciding_rules().iter().filter(|r| r.decisive).collect();
        assert_eq!(decisive.len(), 1);
        assert!(decisive[0].beneath);
        assert_eq!(e.decision.operation, Operation::FsRead);
    }
}
