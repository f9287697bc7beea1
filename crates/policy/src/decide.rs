//! Deciding: one pass over the rules with a fixed precedence (`explain.rs` runs the same pass with a trace).
//!
//! Precedence, in this exact order:
//! 1. a tool the active profile blocks is denied (`TOOL_HIDDEN`);
//! 2. any matching deny rule wins (`DENY_RULE`, the first matching deny in rule order is reported);
//! 3. an `unknown` operation is denied (`UNKNOWN_OPERATION`), whatever allow/ask rules say;
//! 4. a shell string (operators, quotes, expansions) is never allowed: a matching ask rule asks, otherwise the
//!    default applies but is raised to at least ask (`SHELL_OPERATORS`);
//! 5. ask beats allow: any matching ask rule asks (`ASK_RULE`), regardless of where allow rules stand;
//! 6. a matching allow rule allows (`ALLOW_RULE`);
//! 7. otherwise the policy default (`DEFAULT_DENY` / `DEFAULT_ASK` / `DEFAULT_ALLOW`), except that a default allow
//!    becomes ask (`OPAQUE_COMMAND`) for a command that runs something toolgate cannot see (see `wrapper.rs`);
//! 8. finally, an allow from step 6 or 7 becomes ask (`ASK_RULE`) when an ask rule matches SOME of the call's paths:
//!    allow and ask rules need every path to match, and without this cap a path that needs a human could ride
//!    along with allowed ones.
//!
//! An operation that reaches beneath its paths (a listing, a diff of a directory, a move) also meets the deny rules
//! of paths beneath it (`DENIED_BENEATH`, see `beneath.rs`): right after step 2 it is denied when its directory
//! lies inside a denied tree or a move would carry a denied path out from under its pattern, and at step 8 an
//! allow becomes ask when a denied path may lie beneath and the operation would disclose it (a name nobody
//! spelled out, or content).
//!
//! A call with several operations (a move reads, deletes and writes) is decided once per operation, each on its
//! own paths, and the strictest decision is the call's, so a deny on any of them applies.
//!
//! Allow and ask rules match only when every resource of the call matches the same rule; deny rules match when any
//! resource does.
//!
//! Strictest-wins (rather than first-match) makes the outcome independent of rule order; only the reported rule id
//! depends on order. A policy file may say otherwise (`precedence: first_match`, what a ToolFence policy means):
//! then steps 5 and 6 become one, the first matching allow or ask rule in file order decides; every other step
//! stays. Nothing here touches I/O or time.

use std::borrow::Cow;

use serde::Serialize;

use crate::action::{normalise, Action, Command, Scope, ToolCall, UnknownReason};
use crate::adapter::adapt_with;
use crate::beneath::{reach, Reach};
use crate::explain::RuleTrace;
use crate::glob::PathCase;
use crate::load::{Names, Policy};
use crate::operation::{Effect, Operation, Precedence};
use crate::path::Canonicalise;
use crate::profile::Visibility;
use crate::rule::{Miss, PathMode, Prepared, Rule};

/// Stable reason codes carried by every decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReasonCode {
    DenyRule,
    AskRule,
    AllowRule,
    DefaultDeny,
    DefaultAsk,
    DefaultAllow,
    UnknownOperation,
    ShellOperators,
    /// A command runs code or programs toolgate cannot see (an `awk` program, `sh script`, a wrapper option it does
    /// not know), so the default cannot allow it.
    OpaqueCommand,
    ToolHidden,
    /// A deny rule covers paths beneath what the call lists, diffs or moves.
    DeniedBeneath,
    /// A call hook denied a call the policy let through (the gateway runs hooks; the policy never returns this).
    HookDeny,
    /// A call hook asked for a human on a call the policy allowed.
    HookAsk,
}

impl ReasonCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::DenyRule => "DENY_RULE",
            ReasonCode::AskRule => "ASK_RULE",
            ReasonCode::AllowRule => "ALLOW_RULE",
            ReasonCode::DefaultDeny => "DEFAULT_DENY",
            ReasonCode::DefaultAsk => "DEFAULT_ASK",
            ReasonCode::DefaultAllow => "DEFAULT_ALLOW",
            ReasonCode::UnknownOperation => "UNKNOWN_OPERATION",
            ReasonCode::ShellOperators => "SHELL_OPERATORS",
            ReasonCode::OpaqueCommand => "OPAQUE_COMMAND",
            ReasonCode::ToolHidden => "TOOL_HIDDEN",
            ReasonCode::DeniedBeneath => "DENIED_BENEATH",
            ReasonCode::HookDeny => "HOOK_DENY",
            ReasonCode::HookAsk => "HOOK_ASK",
        }
    }

    fn default_for(effect: Effect) -> ReasonCode {
        match effect {
            Effect::Allow => ReasonCode::DefaultAllow,
            Effect::Ask => ReasonCode::DefaultAsk,
            Effect::Deny => ReasonCode::DefaultDeny,
        }
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The answer for one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub effect: Effect,
    pub reason: ReasonCode,
    /// The decisive rule, when a rule decided.
    pub rule_id: Option<String>,
    /// Where the decisive rule was written (`toolgate.json:28`: the user's file and line, never counting
    /// toolgate's own rules), when the policy was given its source text ([`Policy::with_origins`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_at: Option<String>,
    pub operation: Operation,
    /// Why the call was `unknown`, when it was.
    pub unknown: Option<UnknownReason>,
}

impl std::fmt::Display for Decision {
    /// `deny (DENY_RULE, rule Read(**/.env) at toolgate.json:28)`: one line for logs and CLI output.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}", self.effect, self.reason)?;
        if let Some(rule) = self.rule() {
            write!(f, ", rule {rule}")?;
        }
        if let Some(u) = self.unknown {
            write!(f, ", {}", u.as_str())?;
        }
        f.write_str(")")
    }
}

/// A rule as a person finds it in their file: `Read(**/.env) at toolgate.json:28`, or its name alone when where it
/// was written is not known. Refusals, approvals, records and reports all name rules this way.
pub fn rule_label(id: &str, at: Option<&str>) -> String {
    match at {
        Some(at) => format!("{id} at {at}"),
        None => id.to_owned(),
    }
}

impl Decision {
    /// The decisive rule as a person finds it: `Read(**/.env) at toolgate.json:28`, or only its name when where
    /// it was written is not known (toolgate's own rules, a policy loaded without its file).
    pub fn rule(&self) -> Option<String> {
        let id = self.rule_id.as_deref()?;
        Some(rule_label(id, self.rule_at.as_deref()))
    }

    /// The same decision under another rule (a hook's, a quarantine's), which has no place in the policy file.
    pub fn ruled_by(mut self, rule_id: Option<String>) -> Decision {
        self.rule_id = rule_id;
        self.rule_at = None;
        self
    }
}

/// The strictest of a call's decisions: the main operation's, then each further access's in order; an access
/// replaces the one so far only when stricter. Returns the decision and which access gave it (`None`: the main).
pub(crate) fn strictest(
    main: Decision,
    parts: impl Iterator<Item = Decision>,
) -> (Decision, Option<usize>) {
    let mut out = (main, None);
    for (i, d) in parts.enumerate() {
        if d.effect > out.0.effect {
            out = (d, Some(i));
        }
    }
    out
}

/// Paths in the form rules compare against (folded when the policy is case-insensitive).
pub(crate) fn prepare_paths(action: &Action, case: PathCase) -> Vec<Cow<'_, str>> {
    match case {
        PathCase::Sensitive => action
            .paths
            .iter()
            .map(|p| Cow::Borrowed(p.as_str()))
            .collect(),
        PathCase::Insensitive => action
            .paths
            .iter()
            .map(|p| Cow::Owned(p.to_lowercase()))
            .collect(),
    }
}

impl Policy {
    /// Decides a normalised action.
    pub fn decide(&self, action: &Action) -> Decision {
        self.evaluate(action)
    }

    /// Adapter, normalisation and decision in one step, for callers that need nothing in between.
    pub fn decide_call(&self, call: &ToolCall, canon: &dyn Canonicalise) -> Decision {
        self.decide(&self.action_for(call, canon))
    }

    /// Runs this policy's adapters (declared mappings, then built-in tables) and normalisation on a call.
    pub fn action_for(&self, call: &ToolCall, canon: &dyn Canonicalise) -> Action {
        normalise(
            &adapt_with(call, &self.mappings, &self.servers),
            &self.ctx,
            canon,
        )
    }

    pub(crate) fn is_hidden(&self, tool: &str) -> bool {
        self.active
            .as_ref()
            .is_some_and(|(_, vis)| vis.classify(tool) == Visibility::Blocked)
    }

    /// The call's main operation and each further access of it; the strictest decision wins, the main
    /// operation's on a tie (`explain` keeps the same order, see [`strictest`]).
    fn evaluate(&self, action: &Action) -> Decision {
        let parts = action
            .also
            .iter()
            .map(|a| self.evaluate_one(&action.part(a), None));
        strictest(self.evaluate_one(action, None), parts).0
    }

    /// The strictest way a deny rule reaches beneath the action's paths, for scoped actions.
    fn beneath(&self, action: &Action) -> Option<(Effect, &str)> {
        if action.scope == Scope::Exact {
            return None;
        }
        let fold = |p: &str| match self.case {
            PathCase::Sensitive => p.to_owned(),
            PathCase::Insensitive => p.to_lowercase(),
        };
        let mut worst: Option<(Effect, &str)> = None;
        for rule in self.rules.iter().filter(|r| r.effect == Effect::Deny) {
            let op_applies = rule.ops == 0 || rule.ops & action.operation.bit() != 0;
            let tool_applies =
                rule.tools.is_empty() || rule.tools.iter().any(|(_, g)| g.matches(&action.tool));
            if !op_applies || !tool_applies {
                continue;
            }
            for (text, _) in &rule.paths {
                let Ok(pattern) = crate::rule::substitute(text, &self.ctx, &rule.id) else {
                    continue;
                };
                let pattern = fold(&pattern);
                for dir in &action.paths {
                    let names_only = matches!(action.scope, Scope::Children | Scope::NamesBeneath);
                    let effect = match (action.scope, reach(&pattern, &fold(dir), action.scope)) {
                        (_, Reach::None) | (Scope::Exact, _) => None,
                        (_, Reach::Whole) | (Scope::Moved, _) => Some(Effect::Deny),
                        // A name the rule spells out tells nothing new; `names = "shown"` lets listings show any.
                        (_, Reach::Named) if names_only => None,
                        _ if names_only && self.names == Names::Shown => None,
                        _ => Some(Effect::Ask),
                    };
                    if let Some(e) = effect {
                        if worst.is_none_or(|(w, _)| e > w) {
                            worst = Some((e, rule.id.as_str()));
                        }
                    }
                }
            }
        }
        worst
    }

    pub(crate) fn evaluate_one(
        &self,
        action: &Action,
        mut trace: Option<&mut Vec<RuleTrace>>,
    ) -> Decision {
        let make = |effect, reason, rule_id: Option<&str>| Decision {
            effect,
            reason,
            rule_id: rule_id.map(str::to_owned),
            rule_at: rule_id
                .and_then(|id| self.rule_origin(id))
                .map(str::to_owned),
            operation: action.operation,
            unknown: action.unknown,
        };
        let hidden = self.is_hidden(&action.tool);
        if hidden && trace.is_none() {
            return make(Effect::Deny, ReasonCode::ToolHidden, None);
        }
        let folded = prepare_paths(action, self.case);
        let prepared = Prepared::new(action, &folded);
        let (mut deny, mut ask, mut ask_partial, mut allow) = (None, None, None, None);
        // The first matching allow or ask rule in rule order, for first-match precedence.
        let mut first: Option<(&str, Effect)> = None;
        // `explain` walks every rule so its trace is complete; `decide` walks only the index's candidates.
        let candidates: Vec<&Rule> = match trace {
            Some(_) => self.rules.iter().collect(),
            None => self
                .index
                .candidates(action, &prepared)
                .into_iter()
                .filter_map(|i| self.rules.get(i as usize))
                .collect(),
        };
        for rule in candidates {
            let result = rule.check(action, &prepared, rule.path_mode());
            // An ask rule that covers only some of the call's paths still caps the call at ask, so an allowed path
            // cannot carry a path the policy wants a human to see.
            let partial = rule.effect == Effect::Ask
                && prepared.paths.len() > 1
                && matches!(result, Err(Miss::Path(_)))
                && rule.check(action, &prepared, PathMode::Any).is_ok();
            if let Some(t) = trace.as_deref_mut() {
                t.push(RuleTrace {
                    id: rule.id.clone(),
                    effect: rule.effect,
                    matched: result.is_ok(),
                    partial,
                    why_not: result.err().map(|m| m.describe(action)),
                    decisive: false,
                    beneath: false,
                    at: None,
                });
            }
            if partial {
                ask_partial.get_or_insert(rule.id.as_str());
            }
            if result.is_err() {
                continue;
            }
            let slot = match rule.effect {
                Effect::Deny => &mut deny,
                Effect::Ask => &mut ask,
                Effect::Allow => &mut allow,
            };
            slot.get_or_insert(rule.id.as_str());
            if rule.effect != Effect::Deny {
                first.get_or_insert((rule.id.as_str(), rule.effect));
            }
            if deny.is_some() && trace.is_none() {
                break;
            }
        }
        if hidden {
            return make(Effect::Deny, ReasonCode::ToolHidden, None);
        }
        if let Some(id) = deny {
            return make(Effect::Deny, ReasonCode::DenyRule, Some(id));
        }
        let beneath = self.beneath(action);
        if let Some((Effect::Deny, id)) = beneath {
            return make(Effect::Deny, ReasonCode::DeniedBeneath, Some(id));
        }
        if action.operation == Operation::Unknown {
            return make(Effect::Deny, ReasonCode::UnknownOperation, None);
        }
        if matches!(action.command, Some(Command::Shell { .. })) {
            return match ask {
                Some(id) => make(Effect::Ask, ReasonCode::AskRule, Some(id)),
                None => make(
                    self.default.max(Effect::Ask),
                    ReasonCode::ShellOperators,
                    None,
                ),
            };
        }
        if self.precedence == Precedence::FirstMatch {
            // The first matching rule decides between allow and ask.
            (ask, allow) = match first {
                Some((id, Effect::Ask)) => (Some(id), None),
                Some((id, _)) => (None, Some(id)),
                None => (None, None),
            };
        }
        if let Some(id) = ask {
            return make(Effect::Ask, ReasonCode::AskRule, Some(id));
        }
        let base = match allow {
            Some(id) => make(Effect::Allow, ReasonCode::AllowRule, Some(id)),
            // A command that runs something toolgate cannot see is never allowed by default.
            None if prepared.runs.opaque && self.default == Effect::Allow => {
                make(Effect::Ask, ReasonCode::OpaqueCommand, None)
            }
            None => make(self.default, ReasonCode::default_for(self.default), None),
        };
        match (ask_partial, beneath) {
            (Some(id), _) if base.effect == Effect::Allow => {
                make(Effect::Ask, ReasonCode::AskRule, Some(id))
            }
            (_, Some((_, id))) if base.effect == Effect::Allow => {
                make(Effect::Ask, ReasonCode::DeniedBeneath, Some(id))
            }
            _ => base,
        }
    }
}
