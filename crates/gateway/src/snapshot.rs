//! The protected snapshot of a held request: exactly what runs if a human approves it, as stored in the approval
//! store, and the two views derived from it — the scope a session grant covers and the escaped one-line summary a
//! human is asked about.
//!
//! Four kinds are held: tool calls, prompt gets, resource reads, and code-mode runs (the program is the snapshot,
//! stored with the tool names it writes, so the human approves exactly what will run). This module only shapes
//! data; holding, deciding and running are in `approval`, `elicit` and `codemode`.

use policy::Decision;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// What kind of request a snapshot holds; stored as the method that runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Kind {
    #[serde(rename = "tools/call")]
    ToolCall,
    #[serde(rename = "prompts/get")]
    Prompt,
    #[serde(rename = "resources/read")]
    Resource,
    /// A `run_code` program, held before it started.
    #[serde(rename = "code_run")]
    CodeRun,
}

impl Kind {
    /// The MCP method that runs it (for a run, its kind's name), also the stored `kind`.
    pub(crate) const fn method(self) -> &'static str {
        match self {
            Kind::ToolCall => "tools/call",
            Kind::Prompt => "prompts/get",
            Kind::Resource => "resources/read",
            Kind::CodeRun => "code_run",
        }
    }

    fn target(self, name: &str) -> Target {
        let name = name.to_owned();
        match self {
            Kind::ToolCall | Kind::CodeRun => Target::Tool(name),
            Kind::Prompt => Target::Prompt(name),
            Kind::Resource => Target::Uri(name),
        }
    }
}

/// Exactly what will run if a human approves: stored as the request's protected snapshot.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub kind: Kind,
    pub server: String,
    /// The upstream's own name of the tool or prompt, or the resource URI.
    pub tool: String,
    /// The name the client used.
    pub exposed: String,
    pub arguments: Value,
    /// Empty for prompts and resources, which have no pinned definition.
    pub definition_sha256: String,
    /// For `shell_run`: the resolved command (executable identity, argv, cwd, environment) that will run.
    pub command: Option<Value>,
    /// Why a hook asked, for the human who decides.
    pub note: Option<String>,
}

/// Longest argument summary put into an elicitation question; the full request is one command away.
const MAX_SUMMARY_CHARS: usize = 1500;
/// Longest args prefix a command grant may be given for (and so looked up for): enough for any real command
/// line a human would bless, and a bound on the lookups each command costs.
pub(crate) const MAX_PREFIX_ARGS: usize = 32;

impl Snapshot {
    /// The stored form, sealed with the request; `principal` is the only identity that may read or resume it.
    pub(crate) fn to_json(&self, decision: &Decision, principal: Option<&str>) -> Value {
        let decision = DecisionFields::of(decision);
        let note = self.note.clone();
        let body = match self.kind {
            Kind::ToolCall => Body::ToolCall {
                definition_sha256: self.definition_sha256.clone(),
                command: self.command.clone(),
                note,
                decision,
            },
            Kind::Prompt | Kind::Resource => Body::Other {
                decision,
                note,
                names: None,
                dynamic: None,
            },
            // Shown to the human beside the program; the run itself scans the program again. Names it builds
            // at run time are not approved with it: they run only under allow rules.
            Kind::CodeRun => {
                let scan = self.code_scan();
                Body::Other {
                    decision,
                    note,
                    names: Some(scan.literal_names.into_iter().collect()),
                    dynamic: Some(scan.dynamic),
                }
            }
        };
        let stored = Stored {
            kind: self.kind,
            server: self.server.clone(),
            target: self.kind.target(&self.tool),
            exposed: self.exposed.clone(),
            arguments: self.arguments.clone(),
            body,
            principal: principal.map(str::to_owned),
        };
        // A struct of strings and JSON values always serialises; were it not to, the null stored would be a
        // request toolgate refuses to run.
        serde_json::to_value(&stored).unwrap_or_default()
    }

    /// For a code run: what the program says about the tools it calls.
    pub(crate) fn code_scan(&self) -> codemode::Scan {
        let program = self.arguments.get("code").and_then(Value::as_str);
        codemode::scan(program.unwrap_or_default())
    }

    /// For a code run: the tool names its program writes as literals, escaped for a one-line question.
    pub(crate) fn code_names(&self) -> Vec<String> {
        let names = self.code_scan().literal_names;
        names.iter().map(|n| ascii_json(&json!(n))).collect()
    }

    /// Why a hook asked, or which calls a run needs approved and why, escaped for a one-line question.
    pub(crate) fn escaped_note(&self) -> String {
        self.note
            .as_ref()
            .map(|n| ascii_json(&json!(n)))
            .unwrap_or_default()
    }

    /// A stored snapshot, as this or any earlier toolgate wrote it; `None` for anything else (a kind not held,
    /// a field of the wrong type, a tool call without the definition it was pinned to).
    pub(crate) fn from_json(v: &Value) -> Option<Snapshot> {
        let stored = Stored::deserialize(v).ok()?;
        let (definition_sha256, command, note) = match (stored.kind, stored.body) {
            (
                Kind::ToolCall,
                Body::ToolCall {
                    definition_sha256,
                    command,
                    note,
                    ..
                },
            ) => (definition_sha256, command, note),
            (Kind::ToolCall, Body::Other { .. }) => return None,
            (
                Kind::Prompt | Kind::Resource | Kind::CodeRun,
                Body::Other { note, .. } | Body::ToolCall { note, .. },
            ) => (String::new(), None, note),
        };
        let tool = match (stored.kind, stored.target) {
            (Kind::ToolCall | Kind::CodeRun, Target::Tool(t))
            | (Kind::Prompt, Target::Prompt(t))
            | (Kind::Resource, Target::Uri(t)) => t,
            _ => return None,
        };
        Some(Snapshot {
            kind: stored.kind,
            server: stored.server,
            tool,
            exposed: stored.exposed,
            arguments: stored.arguments,
            definition_sha256,
            command,
            note,
        })
    }

    /// The identity a session grant is keyed by: tools keep `server__tool`; prompts and resources are prefixed so
    /// they can never share a grant with a tool of the same name.
    pub(crate) fn grant_target(&self) -> String {
        match self.kind {
            Kind::ToolCall => format!("{}__{}", self.server, self.tool),
            Kind::Prompt => format!("prompt:{}__{}", self.server, self.tool),
            Kind::Resource => format!("resource:{}:{}", self.server, self.tool),
            Kind::CodeRun => format!("code_run:{}__{}", self.server, self.tool),
        }
    }

    /// What a session grant given for this request covers: exactly these arguments (for a command, exactly this
    /// argv, cwd, environment and timeout), compared as canonical JSON, so keys in another order are the same
    /// call and anything else is a new question.
    pub(crate) fn grant_scope(&self) -> String {
        format!(
            "arguments-sha256:{}",
            jsonrpc::sha256_hex(jsonrpc::canonical_json(&self.arguments).as_bytes())
        )
    }

    /// For a command: what a grant for "this program, these other arguments, and args starting with the first
    /// `n` of these args" covers. Everything but `args` (program, cwd, environment, timeout) must stay the same;
    /// `n` is part of the scope, so a grant for one prefix length never answers for another. `None` for anything
    /// that is not a command, or for an `n` beyond the args.
    pub(crate) fn prefix_scope(&self, n: usize) -> Option<String> {
        self.command.as_ref()?;
        let args = self.arguments.get("args")?.as_array()?;
        if n > args.len() || n > MAX_PREFIX_ARGS {
            return None;
        }
        let mut shape = self.arguments.clone();
        shape["args"] = Value::Array(args[..n].to_vec());
        let hash = jsonrpc::sha256_hex(jsonrpc::canonical_json(&shape).as_bytes());
        Some(format!("args-prefix-{n}:{hash}"))
    }

    /// Every prefix scope that could cover this command, shortest first.
    pub(crate) fn prefix_scopes(&self) -> Vec<String> {
        (0..=MAX_PREFIX_ARGS)
            .map_while(|n| self.prefix_scope(n))
            .collect()
    }

    /// The arguments as a human should see them in a one-line question: JSON with every non-ASCII or control
    /// character escaped (so nothing invisible or reordering hides in it), cut at a fixed length.
    pub(crate) fn escaped_arguments(&self) -> String {
        let shown = match &self.command {
            // For a command, what runs: the program and argv as resolved.
            Some(c) => {
                json!({"program": c.get("program"), "args": c.get("args"), "cwd": c.get("cwd")})
            }
            None => self.arguments.clone(),
        };
        let text = ascii_json(&shown);
        if text.chars().count() <= MAX_SUMMARY_CHARS {
            return text;
        }
        let cut: String = text.chars().take(MAX_SUMMARY_CHARS).collect();
        format!("{cut}… (cut; see the full request)")
    }
}

/// A snapshot as the approval store keeps it. The fields are in the order they have always been written (a
/// repeated prompt or resource read is found by the hash of these bytes, so the order is part of the format),
/// which differs by kind: see `Body`.
#[derive(Serialize, Deserialize)]
struct Stored {
    kind: Kind,
    server: String,
    #[serde(flatten)]
    target: Target,
    exposed: String,
    #[serde(default = "empty_object")]
    arguments: Value,
    #[serde(flatten)]
    body: Body,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
}

/// What follows the arguments. A tool call is pinned to its definition and has its decision last; every other
/// kind has always had the decision before the note.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Body {
    ToolCall {
        definition_sha256: String,
        /// For a command: the resolved command that runs. Written as `null` when there is none.
        #[serde(default)]
        command: Option<Value>,
        #[serde(default)]
        note: Option<String>,
        decision: DecisionFields,
    },
    Other {
        decision: DecisionFields,
        #[serde(default)]
        note: Option<String>,
        /// Code runs only: the tool names the program writes as literals, and whether it builds others.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        names: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// The key that names what a snapshot runs.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Target {
    /// A tool's upstream name (for a run, `run_code`'s).
    Tool(String),
    Prompt(String),
    Uri(String),
}

/// A decision as toolgate writes it down: stored with a snapshot (for the records of its resumed run) and in a
/// refusal's Contract V1 fields.
#[derive(Serialize, Deserialize)]
pub(crate) struct DecisionFields {
    pub effect: policy::Effect,
    pub reason: String,
    pub rule_id: Option<String>,
    /// Where the rule was written (`toolgate.json:28`). Absent when unknown, so what was stored before it
    /// existed is stored, and hashed, byte for byte as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_at: Option<String>,
    pub operation: String,
}

impl DecisionFields {
    pub(crate) fn of(d: &Decision) -> Self {
        Self {
            effect: d.effect,
            reason: d.reason.as_str().to_owned(),
            rule_id: d.rule_id.clone(),
            rule_at: d.rule_at.clone(),
            operation: d.operation.to_string(),
        }
    }
}

/// The decision of a stored snapshot, read without the rest of it.
#[derive(Deserialize)]
struct Decided {
    decision: DecisionFields,
}

/// The identity of a stored snapshot, read without the rest of it.
#[derive(Deserialize)]
struct Owned {
    #[serde(default)]
    principal: Option<String>,
}

/// The decision stored with a snapshot, if it has a readable one.
pub(crate) fn stored_decision(v: &Value) -> Option<DecisionFields> {
    Decided::deserialize(v).ok().map(|d| d.decision)
}

/// The identity a stored snapshot is sealed to, if any.
pub(crate) fn owner(v: &Value) -> Option<String> {
    Owned::deserialize(v).ok()?.principal
}

/// JSON text in printable ASCII: non-ASCII and control characters become `\uXXXX` escapes.
pub(crate) fn ascii_json(v: &Value) -> String {
    let text = v.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(arguments: Value) -> Snapshot {
        Snapshot {
            kind: Kind::ToolCall,
            server: "toolgate".into(),
            tool: "shell_run".into(),
            exposed: "shell_run".into(),
            arguments,
            definition_sha256: "ab".into(),
            command: None,
            note: None,
        }
    }

    #[test]
    fn grant_scope_is_the_exact_arguments_in_any_key_order() {
        let a = snap(json!({"argv": ["cargo", "test"], "cwd": "."}));
        let reordered = snap(json!({"cwd": ".", "argv": ["cargo", "test"]}));
        let other = snap(json!({"argv": ["rm", "-rf", "."], "cwd": "."}));
        assert_eq!(a.grant_scope(), reordered.grant_scope());
        assert_ne!(a.grant_scope(), other.grant_scope());
    }

    #[test]
    fn command_prefix_grant_covers_longer_args_only_with_everything_else_equal() {
        let command = |args: Value, cwd: &str| Snapshot {
            command: Some(json!({"program": "cargo"})),
            ..snap(json!({"program": "cargo", "args": args, "cwd": cwd}))
        };
        let granted = command(json!(["test", "--all"]), ".")
            .prefix_scope(1)
            .unwrap();
        let covers = |s: &Snapshot| s.prefix_scopes().contains(&granted);
        assert!(covers(&command(json!(["test", "--release"]), ".")));
        assert!(covers(&command(json!(["test"]), ".")));
        assert!(!covers(&command(json!(["build"]), ".")));
        assert!(!covers(&command(json!([]), ".")));
        assert!(!covers(&command(json!(["test"]), "sub")));
        let mut other_program = command(json!(["test"]), ".");
        other_program.arguments["program"] = json!("rm");
        assert!(!covers(&other_program));
        // Not a command: no prefix scopes at all.
        assert!(snap(json!({"args": ["test"]})).prefix_scopes().is_empty());
    }

    #[test]
    fn question_shows_arguments_escaped() {
        let s = snap(json!({"argv": ["echo", "ok\u{202e}\n\u{1b}[2J"]}));
        let shown = s.escaped_arguments();
        assert_eq!(shown, r#"{"argv":["echo","ok\u202e\n\u001b[2J"]}"#);
        let long = snap(json!({"text": "x".repeat(5000)})).escaped_arguments();
        assert!(long.ends_with("(cut; see the full request)"), "{long}");
    }

    #[test]
    fn snapshots_round_trip_for_every_kind() {
        let d = Decision {
            effect: policy::Effect::Ask,
            reason: policy::ReasonCode::AskRule,
            rule_id: None,
            rule_at: None,
            operation: policy::Operation::McpCall,
            unknown: None,
        };
        for kind in [Kind::ToolCall, Kind::Prompt, Kind::Resource, Kind::CodeRun] {
            let mut s = snap(json!({"a": 1}));
            s.kind = kind;
            let back = Snapshot::from_json(&s.to_json(&d, None)).unwrap();
            assert_eq!(
                (back.kind, back.tool, back.arguments),
                (kind, s.tool, s.arguments)
            );
        }
    }
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod stored_tests;
