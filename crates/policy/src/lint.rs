//! `policy check`: every load error plus warnings about rules that can never decide anything.
//!
//! The shadowing analysis is conservative: it reports a rule only when another rule provably matches every call it
//! matches (same or wider operations, tools, path prefixes, command prefixes, host suffixes, methods). It may miss
//! shadowing that needs real glob reasoning; it never reports a rule that can still decide.

use serde::Serialize;

use crate::error::Error;
use crate::load::{compile, PolicySources};
use crate::operation::{Effect, Operation};
use crate::path::Context;
use crate::rule::Rule;

/// How bad a finding is; errors make [`crate::Policy::load`] fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One finding of `policy check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintFinding {
    pub severity: Severity,
    /// Stable code: the [`Error::code`] of load errors, or `SHADOWED_RULE`, `UNKNOWN_NEVER_ALLOWED`,
    /// `UNCONSTRAINED_ALLOW`.
    pub code: &'static str,
    pub rule_id: Option<String>,
    pub message: String,
}

impl From<&Error> for LintFinding {
    fn from(e: &Error) -> Self {
        LintFinding {
            severity: Severity::Error,
            code: e.code(),
            rule_id: e.rule_id().map(str::to_owned),
            message: e.to_string(),
        }
    }
}

/// Checks a policy's sources: all load errors (not just the first) followed by warnings.
pub fn check_policy(sources: PolicySources<'_>, ctx: &Context) -> Vec<LintFinding> {
    let compiled = compile(sources, ctx);
    let mut out: Vec<LintFinding> = compiled.errors.iter().map(LintFinding::from).collect();
    let policy = compiled.policy;
    out.extend(rule_warnings(&policy.rules, 0));
    for profile in policy.profiles.values() {
        let all: Vec<Rule> = policy
            .rules
            .iter()
            .chain(profile.rules.iter())
            .cloned()
            .collect();
        out.extend(rule_warnings(&all, policy.rules.len()));
    }
    out
}

/// Warnings for rules at index `from..`, considering every rule as a possible shadow.
fn rule_warnings(rules: &[Rule], from: usize) -> Vec<LintFinding> {
    let mut out = Vec::new();
    let warn = |rule: &Rule, code, message: String| LintFinding {
        severity: Severity::Warning,
        code,
        rule_id: Some(rule.id.clone()),
        message,
    };
    for (j, b) in rules.iter().enumerate().skip(from) {
        if b.effect != Effect::Deny && b.ops & Operation::Unknown.bit() != 0 {
            out.push(warn(
                b,
                "UNKNOWN_NEVER_ALLOWED",
                format!("`{}`: `unknown` operations are always denied", b.id),
            ));
        }
        if b.effect == Effect::Allow && b.ops == 0 && b.tools.is_empty() && b.is_resource_free() {
            out.push(warn(
                b,
                "UNCONSTRAINED_ALLOW",
                format!("`{}` allows every call", b.id),
            ));
        }
        let shadow = rules.iter().enumerate().find_map(|(i, a)| {
            if i == j || !covers(a, b) {
                return None;
            }
            match (a.effect, b.effect) {
                (Effect::Deny, Effect::Allow | Effect::Ask) => {
                    Some(format!("deny rule `{}` matches every call it does", a.id))
                }
                (Effect::Ask, Effect::Allow) => Some(format!(
                    "ask rule `{}` matches every call it does and ask beats allow",
                    a.id
                )),
                (x, y) if x == y && i < j => Some(format!(
                    "earlier {x} rule `{}` matches every call it does",
                    a.id
                )),
                _ => None,
            }
        });
        if let Some(why) = shadow {
            out.push(warn(
                b,
                "SHADOWED_RULE",
                format!("`{}` can never decide: {why}", b.id),
            ));
        }
    }
    out
}

/// True when rule `a` provably matches every action that rule `b` matches.
fn covers(a: &Rule, b: &Rule) -> bool {
    let ops = a.ops == 0 || (b.ops != 0 && b.ops & !a.ops == 0);
    let tools = a.tools.is_empty()
        || (!b.tools.is_empty()
            && b.tools
                .iter()
                .all(|(bt, _)| a.tools.iter().any(|(at, _)| name_within(bt, at))));
    let paths = a.paths.is_empty()
        || (!b.paths.is_empty()
            && b.paths
                .iter()
                .all(|(bp, _)| a.paths.iter().any(|(ap, _)| path_within(bp, ap))));
    let commands = a.commands.is_empty()
        || (!b.commands.is_empty()
            && b.commands.iter().all(|bc| {
                a.commands.iter().any(|ac| {
                    if ac.prefix {
                        bc.tokens.starts_with(&ac.tokens)
                    } else {
                        !bc.prefix && bc.tokens == ac.tokens
                    }
                })
            }));
    let hosts = a.hosts.is_empty()
        || (!b.hosts.is_empty()
            && b.hosts
                .iter()
                .all(|(_, bh)| a.hosts.iter().any(|(_, ah)| bh.within(ah))));
    let methods = a.methods.is_empty()
        || (!b.methods.is_empty() && b.methods.iter().all(|m| a.methods.contains(m)));
    ops && tools && paths && commands && hosts && methods
}

/// Characters that make a pattern more than a literal (see `glob.rs`); a prefix containing one is not compared.
const GLOB_META: [char; 6] = ['*', '?', '\\', '[', '{', '!'];

/// True when `source` matches only itself: no glob syntax outside `${workspace}` / `${home}` (whose substituted values
/// are escaped).
fn is_literal(source: &str) -> bool {
    !source
        .replace("${workspace}", "")
        .replace("${home}", "")
        .contains(GLOB_META)
}

fn strip_mcp(s: &str) -> &str {
    s.strip_prefix("mcp__").unwrap_or(s)
}

/// `b` (a glob source) admits only names that `a` admits: equal, `*`, or a literal prefix followed by one `*`.
fn name_within(b: &str, a: &str) -> bool {
    let (a, b) = (strip_mcp(a), strip_mcp(b));
    if a == b || a == "*" {
        return true;
    }
    match a.strip_suffix('*') {
        Some(prefix) if is_literal(prefix) => b.starts_with(prefix),
        _ => false,
    }
}

/// `b` (a path pattern source) admits only paths `a` admits: equal, `**`, or `a` is `PREFIX/**` with a literal
/// prefix that `b` starts with at a segment boundary.
fn path_within(b: &str, a: &str) -> bool {
    if a == b || a == "**" || a == "/**" {
        return true;
    }
    match a.strip_suffix("/**") {
        Some(prefix) if is_literal(prefix) => b == prefix || b.starts_with(&format!("{prefix}/")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(policy: serde_json::Value) -> Vec<(&'static str, Option<String>)> {
        let ctx = Context {
            workspace: "/ws".into(),
            home: None,
        };
        check_policy(
            PolicySources {
                policy: Some(&policy),
                ..Default::default()
            },
            &ctx,
        )
        .into_iter()
        .map(|f| (f.code, f.rule_id))
        .collect()
    }

    #[test]
    fn shadowed_rules_are_reported() {
        let found = codes(json!({"rules": [
            {"id": "no-secrets", "effect": "deny", "paths": ["${workspace}/**"]},
            {"id": "read-src", "effect": "allow", "operations": ["fs.read"], "paths": ["${workspace}/src/**"]},
            {"id": "ask-npm", "effect": "ask", "command_prefixes": [["npm"]]},
            {"id": "allow-npm-test", "effect": "allow", "commands": [["npm", "test"]]},
            {"id": "read-docs", "effect": "allow", "operations": ["fs.read"], "paths": ["/docs/**"]},
        ]}));
        assert_eq!(
            found,
            vec![
                ("SHADOWED_RULE", Some("read-src".into())),
                ("SHADOWED_RULE", Some("allow-npm-test".into())),
            ]
        );
    }

    #[test]
    fn structural_errors_are_all_listed() {
        let found = codes(json!({"rules": [
            {"id": "a", "effect": "allow", "operations": ["net.request"], "methods": ["GET"]},
            {"id": "a", "effect": "allow", "paths": ["${wrkspace}/**"]},
            {"id": "b", "effect": "allow", "operations": ["fs.read"], "hosts": ["x.com"]},
            {"id": "c", "effect": "allow", "operations": ["unknown"], "tools": ["x__y"]},
        ]}));
        assert_eq!(
            found,
            vec![
                ("INVALID_NET_FIELDS", Some("a".into())),
                ("UNKNOWN_VARIABLE", Some("a".into())),
                ("INVALID_NET_FIELDS", Some("b".into())),
                ("UNKNOWN_NEVER_ALLOWED", Some("c".into())),
            ]
        );
    }

    #[test]
    fn prefix_helpers_respect_segment_boundaries() {
        assert!(path_within("${workspace}/src/**", "${workspace}/**"));
        assert!(!path_within("${workspace}-evil/**", "${workspace}/**"));
        assert!(name_within("mcp__files__read_file", "files__read_*"));
        assert!(!path_within("${workspace}/a/**", "${workspace}/{a,b}/**"));
        assert!(!name_within("files__x", "files__{x,y}*"));
        assert!(!name_within("files__*", "files__read_*"));
    }
}
