//! ToolFence's YAML policy (`version`, `default`, `rules` of `id`, `effect`, `operations`, `resources`, `commands`,
//! `hosts`, `methods`, with `${workspace}`), read as toolgate's structured policy with ToolFence's precedence, and
//! the test cases and actions its CLI reads. The YAML text itself is parsed by the caller; this module takes the
//! JSON tree.
//!
//! The schema is ToolFence's and strict: only its keys, only its v0.2 operations (toolgate's `mcp.call` is not
//! one), `version: 1`, a `default`, every rule with an `id` and an `effect`. Each rule becomes the same toolgate
//! rule (`resources` are `paths`), and the file says `precedence: first_match`: every matching deny overrides,
//! otherwise the first matching rule wins, and the default applies when none matches. A deny's `commands` are
//! read as prefixes (`[sudo]` denies every `sudo …`), the stricter reading; allow and ask commands are exact
//! argv, as ToolFence documents. Variables, duplicate ids and network fields are checked by the engine when the
//! result loads. Pure.

use serde_json::{json, Map, Value};

use crate::action::{RawAction, RawCommand, ToolCall};
use crate::error::{Error, Result};
use crate::load::expand_vars;
use crate::operation::{Effect, Operation};
use crate::path::Context;

/// The keys of a ToolFence rule.
const RULE_KEYS: &[&str] = &[
    "id",
    "effect",
    "description",
    "operations",
    "resources",
    "commands",
    "hosts",
    "methods",
];

/// The top-level keys of a ToolFence policy.
pub const TOOLFENCE_KEYS: &[&str] = &["version", "default", "rules"];

/// Whether a parsed file is a ToolFence policy: only its top-level keys, with `version` and `rules`.
pub fn is_toolfence_policy(value: &Value) -> bool {
    value.as_object().is_some_and(|top| {
        top.contains_key("version")
            && top.contains_key("rules")
            && top.keys().all(|k| TOOLFENCE_KEYS.contains(&k.as_str()))
    })
}

/// The structured toolgate policy that means what the ToolFence policy `file` means.
pub fn translate_toolfence(file: &Value) -> Result<Value> {
    let top = file.as_object().ok_or_else(|| {
        Error::parse(
            "(top level)",
            "a ToolFence policy is a mapping of version, default, rules",
        )
    })?;
    if let Some(other) = top.keys().find(|k| !TOOLFENCE_KEYS.contains(&k.as_str())) {
        return Err(Error::parse(
            other,
            "unknown key (a ToolFence policy has version, default, rules)",
        ));
    }
    match top.get("version") {
        Some(v) if v.as_u64() == Some(1) => {}
        Some(v) => {
            return Err(Error::parse(
                "version",
                format!("unsupported version {v}; this build reads version 1"),
            ))
        }
        None => return Err(Error::parse("version", "missing (write `version: 1`)")),
    }
    let default = match top.get("default") {
        Some(v) => effect("default", v)?,
        None => return Err(Error::parse("default", "missing (one of allow, ask, deny)")),
    };
    let rules = match top.get("rules") {
        Some(Value::Array(items)) => items,
        Some(Value::Null) => &Vec::new(),
        _ => return Err(Error::parse("rules", "must be a list of rules")),
    };
    let rules = rules
        .iter()
        .enumerate()
        .map(|(i, r)| rule(i, r))
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({
        "version": 1,
        "default": default.as_str(),
        "precedence": "first_match",
        "rules": rules,
    }))
}

fn effect(key: &str, v: &Value) -> Result<Effect> {
    match v.as_str() {
        Some("allow") => Ok(Effect::Allow),
        Some("ask") => Ok(Effect::Ask),
        Some("deny") => Ok(Effect::Deny),
        _ => Err(Error::parse(key, "must be one of allow, ask, deny")),
    }
}

fn rule(i: usize, value: &Value) -> Result<Value> {
    let obj = value
        .as_object()
        .ok_or_else(|| Error::parse(format!("rules[{i}]"), "must be a mapping"))?;
    let id = obj
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| Error::parse(format!("rules[{i}].id"), "missing or empty"))?;
    let at = format!("rules[{i}] (`{id}`)");
    if let Some(other) = obj.keys().find(|k| !RULE_KEYS.contains(&k.as_str())) {
        return Err(Error::parse(
            &at,
            format!("unknown key `{other}` (keys are {})", RULE_KEYS.join(", ")),
        ));
    }
    let effect = effect(
        &format!("{at}.effect"),
        obj.get("effect").unwrap_or(&Value::Null),
    )?;
    let mut out = Map::new();
    out.insert("id".to_owned(), json!(id));
    out.insert("effect".to_owned(), json!(effect.as_str()));
    if let Some(d) = obj.get("description") {
        let d = d
            .as_str()
            .ok_or_else(|| Error::parse(format!("{at}.description"), "must be text"))?;
        out.insert("description".to_owned(), json!(d));
    }
    if let Some(ops) = obj.get("operations") {
        let list = strings(&format!("{at}.operations"), ops)?;
        for op in &list {
            match Operation::parse(op) {
                Some(Operation::McpCall) | None => {
                    return Err(Error::parse(
                        format!("{at}.operations"),
                        format!(
                            "`{op}` is not a ToolFence operation (fs.read, fs.write, fs.delete, shell.exec, \
                             git.read, git.write, git.remote, net.request, unknown)"
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        out.insert("operations".to_owned(), json!(list));
    }
    if let Some(r) = obj.get("resources") {
        out.insert(
            "paths".to_owned(),
            json!(strings(&format!("{at}.resources"), r)?),
        );
    }
    if let Some(c) = obj.get("commands") {
        let key = format!("{at}.commands");
        let list = c
            .as_array()
            .ok_or_else(|| Error::parse(&key, "must be a list of argv lists"))?
            .iter()
            .map(|argv| strings(&key, argv))
            .collect::<Result<Vec<_>>>()?;
        if list.iter().any(Vec::is_empty) {
            return Err(Error::parse(&key, "an argv list is empty"));
        }
        let field = if effect == Effect::Deny {
            "command_prefixes"
        } else {
            "commands"
        };
        out.insert(field.to_owned(), json!(list));
    }
    for key in ["hosts", "methods"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.to_owned(), json!(strings(&format!("{at}.{key}"), v)?));
        }
    }
    Ok(Value::Object(out))
}

fn strings(key: &str, v: &Value) -> Result<Vec<String>> {
    v.as_array()
        .and_then(|items| {
            items
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .ok_or_else(|| Error::parse(key, "must be a list of strings"))
}

/// An action for `policy explain --action` and a case's `action`: either a tool call as the wrapped server
/// receives it (`{"server", "tool", "arguments"}`), or the operation ToolFence normalises it to
/// (`{"operation", "resources"|"paths", "command", "url", "method", "tool"}`); `${workspace}` and `~` expand.
pub enum FenceAction {
    Call(ToolCall),
    Raw(RawAction),
}

/// Reads an action (see [`FenceAction`]).
pub fn parse_action(value: &Value, ctx: &Context) -> Result<FenceAction> {
    let obj = value
        .as_object()
        .ok_or_else(|| Error::parse("action", "must be a mapping"))?;
    if obj.contains_key("tool") && obj.contains_key("server") {
        let call: ToolCall =
            serde::Deserialize::deserialize(value).map_err(|e| Error::parse("action", e))?;
        return Ok(FenceAction::Call(call));
    }
    const KEYS: &[&str] = &[
        "operation",
        "resources",
        "paths",
        "command",
        "url",
        "method",
        "tool",
    ];
    if let Some(other) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(Error::parse(
            "action",
            format!(
                "unknown key `{other}` (a call has server, tool, arguments; an operation has {})",
                KEYS.join(", ")
            ),
        ));
    }
    let op = obj
        .get("operation")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            Error::parse(
                "action",
                "needs `server` and `tool` (a call) or `operation`",
            )
        })?;
    let operation = Operation::parse(op)
        .ok_or_else(|| Error::parse("action.operation", format!("unknown operation `{op}`")))?;
    let tool = obj
        .get("tool")
        .and_then(Value::as_str)
        .unwrap_or("action__action");
    let mut raw = RawAction::new(operation, tool.to_owned());
    for key in ["resources", "paths"] {
        if let Some(v) = obj.get(key) {
            raw.paths
                .extend(strings(key, v)?.iter().map(|p| expand_vars(p, ctx)));
        }
    }
    raw.command = match obj.get("command") {
        None => None,
        Some(Value::String(s)) => Some(RawCommand::Shell(s.clone())),
        Some(v) => Some(RawCommand::Argv(strings("action.command", v)?)),
    };
    raw.url = obj.get("url").and_then(Value::as_str).map(str::to_owned);
    raw.method = obj.get("method").and_then(Value::as_str).map(str::to_owned);
    raw.via_shell = raw.command.is_some() && operation != Operation::ShellExec;
    Ok(FenceAction::Raw(raw))
}

/// One ToolFence test case: a name, an action and the expected decision (`expect`, or `decision`), optionally the
/// rule id that should decide.
pub struct FenceCase {
    pub name: String,
    pub action: FenceAction,
    pub expect: Effect,
    pub rule: Option<String>,
}

/// Reads the cases file: a list of cases, or `{cases: [...]}`.
pub fn parse_fence_cases(value: &Value, ctx: &Context) -> Result<Vec<FenceCase>> {
    let list = match value {
        Value::Array(items) => items,
        Value::Object(m) if m.len() == 1 => match m.get("cases") {
            Some(Value::Array(items)) => items,
            _ => return Err(Error::parse("cases", "expected a list of cases")),
        },
        _ => {
            return Err(Error::parse(
                "cases",
                "expected a list of cases or {cases: [...]}",
            ))
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, c)| {
            let key = format!("cases[{i}]");
            let obj = c
                .as_object()
                .ok_or_else(|| Error::parse(&key, "must be a mapping"))?;
            if let Some(other) = obj
                .keys()
                .find(|k| !["name", "action", "expect", "decision", "rule"].contains(&k.as_str()))
            {
                return Err(Error::parse(
                    &key,
                    format!("unknown key `{other}` (keys are name, action, expect, rule)"),
                ));
            }
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| key.clone(), str::to_owned);
            let action = parse_action(obj.get("action").unwrap_or(&Value::Null), ctx)
                .map_err(|e| Error::parse(format!("{key}.action"), e.to_string()))?;
            let expect = obj
                .get("expect")
                .or_else(|| obj.get("decision"))
                .ok_or_else(|| Error::parse(&key, "needs `expect: allow|ask|deny`"))?;
            let expect = effect(&format!("{key}.expect"), expect)?;
            let rule = obj.get("rule").and_then(Value::as_str).map(str::to_owned);
            Ok(FenceCase {
                name,
                action,
                expect,
                rule,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "toolfence_tests.rs"]
mod tests;
