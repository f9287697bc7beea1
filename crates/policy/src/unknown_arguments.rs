//! What a tool's calls could be decided before their arguments are known: whether some call of the tool could
//! be decided `ask`, whatever its arguments. Code mode needs this for a program that computes a call's
//! arguments: its run must be approved if any call it could make would ask.
//!
//! It answers from the rules alone, never from arguments: the default asks, an ask rule could name the tool
//! (operations and resources are not narrowed), or the tool runs commands (which never go unasked by default:
//! operators, opaque programs). It does not count the asks a deny rule's paths cause beneath a listing or a diff:
//! such a call, in a run approved for nothing, is refused when made, never run, so missing one costs a program a
//! call, not a question it should have had. Nothing is decided here.

use crate::decide::ReasonCode;
use crate::load::Policy;
use crate::operation::{Effect, Operation};

impl Policy {
    /// Why some call of tool `name` (`server__tool`) could ask: the default or the rule that could, `None` when no
    /// call of it can (each is then allowed or refused). `runs_commands`: the caller knows the tool runs commands
    /// (a mapping to `shell.exec` is found here).
    pub fn may_ask(&self, name: &str, runs_commands: bool) -> Option<(ReasonCode, Option<String>)> {
        if self.default_effect() == Effect::Ask {
            return Some((ReasonCode::DefaultAsk, None));
        }
        let names_it = |tools: &[(String, crate::glob::NameGlob)]| {
            tools.is_empty() || tools.iter().any(|(_, g)| g.matches(name))
        };
        let rule = self
            .rules
            .iter()
            .find(|r| r.effect == Effect::Ask && names_it(&r.tools));
        if let Some(r) = rule {
            return Some((ReasonCode::AskRule, Some(r.id.clone())));
        }
        let mapped_command = self
            .mappings()
            .iter()
            .any(|m| m.applies_to(name) && m.operation == Operation::ShellExec);
        (runs_commands || mapped_command).then_some((ReasonCode::ShellOperators, None))
    }
}

#[cfg(test)]
mod tests {
    use crate::decide::ReasonCode;
    use crate::load::{Policy, PolicySources};
    use crate::path::Context;
    use serde_json::{json, Value};

    fn policy(structured: Value) -> Policy {
        let ctx = Context {
            workspace: "/ws".into(),
            home: None,
        };
        let sources = PolicySources {
            policy: Some(&structured),
            ..Default::default()
        };
        Policy::load(sources, &ctx).unwrap()
    }

    fn reason(p: &Policy, name: &str, commands: bool) -> Option<ReasonCode> {
        p.may_ask(name, commands).map(|(r, _)| r)
    }

    #[test]
    fn a_tool_no_rule_could_ask_about_needs_no_approval_for_any_arguments() {
        let p = policy(json!({"default": "allow", "rules": [
            {"id": "w", "effect": "ask", "tools": ["files__write_file"]},
            {"id": "d", "effect": "deny", "tools": ["files__delete"]},
        ]}));
        assert_eq!(reason(&p, "files__read_file", false), None);
        assert_eq!(
            reason(&p, "files__write_file", false),
            Some(ReasonCode::AskRule)
        );
        // A command is never unasked by default, whatever the rules.
        assert_eq!(
            reason(&p, "toolgate__shell_run", true),
            Some(ReasonCode::ShellOperators)
        );
        let ask = policy(json!({"default": "ask"}));
        assert_eq!(
            reason(&ask, "files__read_file", false),
            Some(ReasonCode::DefaultAsk)
        );
        // An ask rule over paths alone could ask about any tool; a deny rule is no question.
        let paths = policy(json!({"default": "allow", "rules": [
            {"id": "env", "effect": "ask", "paths": ["**/.env"]},
            {"id": "key", "effect": "deny", "paths": ["**/*.key"]},
        ]}));
        assert_eq!(
            reason(&paths, "files__list_directory", false),
            Some(ReasonCode::AskRule)
        );
        let deny = policy(json!({"default": "allow", "rules": [
            {"id": "key", "effect": "deny", "paths": ["**/*.key"]},
        ]}));
        assert_eq!(reason(&deny, "files__list_directory", false), None);
    }
}
