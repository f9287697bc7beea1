//! Where each rule was written: the line of the user's file that holds a permission's text or a structured rule's
//! `id`, so explanations and listings say `Read(**/.env)` at `toolgate.toml:12`. The caller reads the file; this
//! module only searches its text (no I/O).
//!
//! The search is for the text as a quoted string (JSON and TOML basic strings, TOML literal strings), first
//! occurrence not already claimed by another rule, so two rules of the same text land on their own lines. A rule
//! that is not found (toolgate's own, or a file written unusually) simply has no origin; nothing decides by it.

use std::collections::BTreeSet;

use crate::load::Policy;

impl Policy {
    /// The same policy, each rule located in `text`, the contents of the file shown as `file`.
    pub fn with_origins(mut self, file: &str, text: &str) -> Policy {
        let lines: Vec<&str> = text.lines().collect();
        let mut claimed = BTreeSet::new();
        for (id, written) in &self.written {
            let needles = [
                serde_json::to_string(written).unwrap_or_default(),
                format!("'{written}'"),
            ];
            let found = lines.iter().enumerate().find(|(n, line)| {
                !claimed.contains(n) && needles.iter().any(|q| !q.is_empty() && line.contains(q))
            });
            if let Some((n, _)) = found {
                claimed.insert(n);
                self.origins.insert(id.clone(), format!("{file}:{}", n + 1));
            }
        }
        self
    }

    /// Where the rule `id` was written (`toolgate.toml:12`), when known.
    pub fn rule_origin(&self, id: &str) -> Option<&str> {
        self.origins.get(id).map(String::as_str)
    }

    /// The rule `id` as the user wrote it: a permission's text, or a structured rule's id.
    pub fn rule_text(&self, id: &str) -> Option<&str> {
        self.written
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, t)| t.as_str())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Context, Lexical, Policy, PolicySources, ServerKind, ToolCall};
    use serde_json::json;

    #[test]
    fn a_permission_is_found_on_its_own_line_and_a_repeated_text_on_the_next() {
        let text = "[permissions]\ndefault = \"ask\"\ndeny = [\"Read(**/.env)\"]\nallow = [\n  \"Read(**/.env)\",\n]\n";
        let permissions =
            json!({"default": "ask", "deny": ["Read(**/.env)"], "allow": ["Read(**/.env)"]});
        let ctx = Context {
            workspace: "/ws".into(),
            home: None,
        };
        let sources = PolicySources {
            permissions: Some(&permissions),
            ..Default::default()
        };
        let p = Policy::load(sources, &ctx)
            .unwrap()
            .with_origins("toolgate.toml", text);
        assert_eq!(p.rule_ids(), vec!["Read(**/.env)", "allow:Read(**/.env)"]);
        assert_eq!(p.rule_origin("Read(**/.env)"), Some("toolgate.toml:3"));
        assert_eq!(
            p.rule_origin("allow:Read(**/.env)"),
            Some("toolgate.toml:5")
        );
        assert_eq!(p.rule_text("allow:Read(**/.env)"), Some("Read(**/.env)"));
    }

    /// A refusal, an approval and a record name the rule where the user wrote it, as explain does: the decision
    /// carries the deciding rule's place, and toolgate's own rules in front do not count.
    #[test]
    fn a_decision_names_where_its_rule_was_written() {
        let text = "{\n  \"permissions\": {\n    \"deny\": [\"Read(**/.env)\"]\n  }\n}\n";
        let permissions = json!({"deny": ["Read(**/.env)"]});
        let builtin = json!({"rules": [{"id": "builtin.protect-state", "effect": "deny",
                                        "operations": ["fs.read"], "paths": ["/state/**"]}]});
        let ctx = Context {
            workspace: "/ws".into(),
            home: None,
        };
        let sources = PolicySources {
            policy: Some(&builtin),
            permissions: Some(&permissions),
            ..Default::default()
        };
        let p = Policy::load(sources, &ctx)
            .unwrap()
            .with_origins("toolgate.json", text);
        let read = |path: &str| {
            let call = ToolCall::new(
                "fs",
                "read_file",
                json!({"path": path}),
                Some(ServerKind::Filesystem),
            );
            p.decide_call(&call, &Lexical)
        };
        let denied = read("/ws/.env");
        assert_eq!(
            (denied.rule_id.as_deref(), denied.rule_at.as_deref()),
            (Some("Read(**/.env)"), Some("toolgate.json:3"))
        );
        assert_eq!(
            denied.to_string(),
            "deny (DENY_RULE, rule Read(**/.env) at toolgate.json:3)"
        );
        let own = read("/state/db");
        assert_eq!(
            (own.rule_id.as_deref(), own.rule_at),
            (Some("builtin.protect-state"), None)
        );
        assert_eq!(read("/ws/a").rule_at, None, "no rule decided");
    }
}
