//! toolscript-mcp's policy list, `"policy": [{"match": "mcp__tracker__delete_*", "action": "deny"}, …]`, read
//! as toolgate rules, and where the two readings differ.
//!
//! In toolscript-mcp a tool is `mcp__<server>__<tool>`, `match` is a glob in which only `*` is special (any run
//! of characters), the first matching entry decides and an unmatched tool asks. Each entry becomes one rule
//! `policy[i]` over toolgate's `server__tool` names, limited to the configured servers' tools (toolscript's
//! names never covered anything else, so a `*` does not reach toolgate's own tools): the glob is derived by
//! each server's `mcp__<server>__` prefix (a glob with only `*` derives to a set of its own suffixes), and every
//! other glob character is escaped. The default is `ask`.
//!
//! toolgate does not apply the first match: the strictest matching rule wins (deny, then ask, then allow). The
//! two agree except where an entry is followed by a stricter one that matches some of the same tools;
//! [`toolscript_findings`] names each such pair with a tool both match, and entries that match no configured
//! server's tool. Pure: server names come from the caller.

use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::error::{Error, Result};
use crate::lint::{LintFinding, Severity};
use crate::operation::Effect;

/// One entry of the list.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    pattern: Vec<char>,
    text: String,
    action: Effect,
}

/// The structured toolgate policy (`{"default": "ask", "rules": [...]}`) that means what `list` means, for tools
/// of `servers`.
pub fn translate_toolscript(list: &Value, servers: &[&str]) -> Result<Value> {
    let entries = entries(list)?;
    let mut rules = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let tools: BTreeSet<String> = servers
            .iter()
            .flat_map(|server| {
                let states = suffixes(&e.pattern, server);
                // `*x` already matches all `x` does: the position after a star adds nothing to the rule.
                let kept: Vec<usize> = states
                    .iter()
                    .copied()
                    .filter(|&k| !(k > 0 && e.pattern[k - 1] == '*' && states.contains(&(k - 1))))
                    .collect();
                kept.into_iter().map(move |k| {
                    format!("{}__{}", escape(server.chars()), to_glob(&e.pattern[k..]))
                })
            })
            .collect();
        if tools.is_empty() {
            // It matches no tool toolscript-mcp would name; an empty `tools` would mean every tool.
            continue;
        }
        let mut rule = Map::new();
        rule.insert("id".to_owned(), json!(format!("policy[{i}]")));
        rule.insert("effect".to_owned(), json!(e.action.as_str()));
        rule.insert("tools".to_owned(), json!(tools));
        rule.insert(
            "description".to_owned(),
            json!(format!(
                "toolscript-mcp policy[{i}]: {} → {}",
                e.text, e.action
            )),
        );
        rules.push(Value::Object(rule));
    }
    Ok(json!({"default": "ask", "rules": rules}))
}

/// Warnings for `policy check`: each pair of entries whose meaning changes under deny-overrides
/// (`FIRST_MATCH_ORDER`), and each entry that matches no configured server's tool (`NO_TOOL_MATCHES`).
pub fn toolscript_findings(list: &Value, servers: &[&str]) -> Vec<LintFinding> {
    let Ok(entries) = entries(list) else {
        // Load errors are reported by the load itself.
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if servers.iter().all(|s| suffixes(&e.pattern, s).is_empty()) {
            out.push(LintFinding {
                severity: Severity::Warning,
                code: "NO_TOOL_MATCHES",
                rule_id: Some(format!("policy[{i}]")),
                message: format!(
                    "`{}` matches no tool of a configured server (tools are mcp__<server>__<tool>; servers: {})",
                    e.text,
                    if servers.is_empty() { "none".to_owned() } else { servers.join(", ") }
                ),
            });
        }
    }
    for (j, later) in entries.iter().enumerate() {
        for (i, earlier) in entries.iter().enumerate().take(j) {
            if later.action <= earlier.action {
                continue;
            }
            let Some(tool) = servers.iter().find_map(|s| common_tool(earlier, later, s)) else {
                continue;
            };
            out.push(LintFinding {
                severity: Severity::Warning,
                code: "FIRST_MATCH_ORDER",
                rule_id: Some(format!("policy[{j}]")),
                message: format!(
                    "policy[{i}] (`{}` → {}) and policy[{j}] (`{}` → {}) both match some tools, e.g. `{tool}`: \
                     toolscript-mcp applied the first match, {}; toolgate applies the stricter, {}, whatever \
                     the order. If {} is meant, move policy[{j}] above policy[{i}] so both read alike; if {} is \
                     meant, narrow policy[{j}] so it no longer matches those tools.",
                    earlier.text,
                    earlier.action,
                    later.text,
                    later.action,
                    earlier.action,
                    later.action,
                    later.action,
                    earlier.action,
                ),
            });
        }
    }
    out
}

fn entries(list: &Value) -> Result<Vec<Entry>> {
    let items = list.as_array().ok_or_else(|| {
        Error::parse(
            "policy",
            "a toolscript-mcp policy is a list of {\"match\", \"action\"} entries",
        )
    })?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let key = format!("policy[{i}]");
            let obj = item
                .as_object()
                .ok_or_else(|| Error::parse(&key, "must be an object {\"match\", \"action\"}"))?;
            if let Some(other) = obj.keys().find(|k| *k != "match" && *k != "action") {
                return Err(Error::parse(
                    &key,
                    format!("unknown key `{other}` (keys are match, action)"),
                ));
            }
            let text = obj
                .get("match")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .ok_or_else(|| {
                    Error::parse(
                        format!("{key}.match"),
                        "must be a non-empty glob over tool names",
                    )
                })?;
            let action = match obj.get("action").and_then(Value::as_str) {
                Some("allow") => Effect::Allow,
                Some("ask") => Effect::Ask,
                Some("deny") => Effect::Deny,
                _ => {
                    return Err(Error::parse(
                        format!("{key}.action"),
                        "must be one of \"allow\", \"ask\", \"deny\"",
                    ))
                }
            };
            Ok(Entry {
                pattern: text.chars().collect(),
                text: text.to_owned(),
                action,
            })
        })
        .collect()
}

/// Where in `pattern` matching can stand after reading `mcp__<server>__`: each index `k` means the rest of a
/// name matches `pattern[k..]`. A glob with only `*` derives to such suffixes, so the set is exact.
fn suffixes(pattern: &[char], server: &str) -> BTreeSet<usize> {
    let prefix = format!("mcp__{server}__");
    let mut states: BTreeSet<usize> = closure(pattern, [0].into());
    for c in prefix.chars() {
        let next = states
            .iter()
            .flat_map(|&k| match pattern.get(k) {
                Some('*') => vec![k],
                Some(p) if *p == c => vec![k + 1],
                _ => vec![],
            })
            .collect();
        states = closure(pattern, next);
        if states.is_empty() {
            break;
        }
    }
    states
}

/// Adds the positions after each `*` a state stands on (a `*` may match nothing).
fn closure(pattern: &[char], mut states: BTreeSet<usize>) -> BTreeSet<usize> {
    let mut todo: Vec<usize> = states.iter().copied().collect();
    while let Some(k) = todo.pop() {
        if pattern.get(k) == Some(&'*') && states.insert(k + 1) {
            todo.push(k + 1);
        }
    }
    states
}

/// Positions in two patterns read side by side.
type Pair = (usize, usize);

/// A tool name of `server` both entries match, if there is one (breadth-first over pairs of positions, so the
/// shortest such name).
fn common_tool(a: &Entry, b: &Entry, server: &str) -> Option<String> {
    let (p, q) = (&a.pattern, &b.pattern);
    let starts: Vec<(usize, usize)> = suffixes(p, server)
        .into_iter()
        .flat_map(|i| suffixes(q, server).into_iter().map(move |j| (i, j)))
        .collect();
    let mut parent: HashMap<Pair, Option<(Pair, Option<char>)>> = HashMap::new();
    let mut queue = VecDeque::new();
    for s in starts {
        parent.insert(s, None);
        queue.push_back(s);
    }
    while let Some((i, j)) = queue.pop_front() {
        if i == p.len() && j == q.len() {
            let mut name = Vec::new();
            let mut at = (i, j);
            while let Some(Some((prev, c))) = parent.get(&at) {
                name.extend(*c);
                at = *prev;
            }
            name.reverse();
            return Some(format!(
                "mcp__{server}__{}",
                name.into_iter().collect::<String>()
            ));
        }
        let mut step = |to: (usize, usize), c: Option<char>| {
            if let std::collections::hash_map::Entry::Vacant(slot) = parent.entry(to) {
                slot.insert(Some(((i, j), c)));
                queue.push_back(to);
            }
        };
        match (p.get(i), q.get(j)) {
            (Some('*'), Some('*')) => {
                step((i + 1, j), None);
                step((i, j + 1), None);
            }
            (Some('*'), Some(c)) => {
                step((i + 1, j), None);
                step((i, j + 1), Some(*c));
            }
            (Some(c), Some('*')) => {
                step((i, j + 1), None);
                step((i + 1, j), Some(*c));
            }
            (Some(c), Some(d)) if c == d => step((i + 1, j + 1), Some(*c)),
            (Some('*'), None) => step((i + 1, j), None),
            (None, Some('*')) => step((i, j + 1), None),
            _ => {}
        }
    }
    None
}

/// toolgate's glob for a toolscript glob: runs of `*` become one `*` (toolgate refuses `**` inside a name),
/// everything else is literal.
fn to_glob(pattern: &[char]) -> String {
    let mut out = String::new();
    let mut star = false;
    for &c in pattern {
        if c == '*' {
            if !star {
                out.push('*');
            }
            star = true;
        } else {
            star = false;
            out.push_str(&escape([c].into_iter()));
        }
    }
    out
}

/// Letters, digits, `_` and `-` as they are; any other character escaped, so it is literal in a glob.
fn escape(chars: impl Iterator<Item = char>) -> String {
    let mut out = String::new();
    for c in chars {
        if !(c.is_alphanumeric() || c == '_' || c == '-') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[path = "toolscript_tests.rs"]
mod tests;
