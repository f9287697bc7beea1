//! Rules: the serde spelling (`RuleSpec`), compilation against a [`Context`], and matching one rule against one
//! normalised action. Precedence between rules lives in `decide.rs`.
//!
//! Within a rule every stated field must match (AND); within a field any listed pattern may match (OR). Resource
//! fields differ by effect, always towards the stricter answer: an allow/ask rule needs EVERY path of the call to
//! match, a deny rule fires when ANY path does; deny command patterns also match the program's basename and every
//! segment of a shell string, allow/ask patterns match structured argv only; a deny rule with `methods` fires when
//! the call's method is unknown, an allow/ask rule does not.

use std::borrow::Cow;

use globset::Candidate;
use serde::{Deserialize, Serialize};

use crate::action::{Action, Command, ToolCall};
use crate::error::{Error, Result};
use crate::glob::{escape, split_path, NameGlob, PathCase, PathGlob};
use crate::host::HostPattern;
use crate::operation::{Effect, Operation};
use crate::path::Context;
use crate::wrapper::{basename, expand_argv, expand_segments, Run, Runs};

/// A rule as written in the structured form. Claude Code permission strings are translated into this shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    pub id: String,
    pub effect: Effect,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Empty: any operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<Operation>,
    /// Globs over `server__tool` or `mcp__server__tool`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Path globs; `resources` is accepted as an alias for ToolFence-style files.
    #[serde(default, alias = "resources", skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Exact argv lists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<Vec<String>>,
    /// Token prefixes: `["npm", "run", "test"]` admits `npm run test` and `npm run test --watch`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_prefixes: Vec<Vec<String>>,
    /// `host`, `*.suffix`, optionally `:port`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// Examples this rule must match; checked when the policy loads.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub match_examples: Vec<Example>,
    /// Examples this rule must not match; checked when the policy loads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_match: Vec<Example>,
}

impl RuleSpec {
    /// A spec with only an id and an effect, to be filled in.
    pub fn new(id: &str, effect: Effect) -> RuleSpec {
        RuleSpec {
            id: id.to_owned(),
            effect,
            description: None,
            operations: Vec::new(),
            tools: Vec::new(),
            paths: Vec::new(),
            commands: Vec::new(),
            command_prefixes: Vec::new(),
            hosts: Vec::new(),
            methods: Vec::new(),
            match_examples: Vec::new(),
            not_match: Vec::new(),
        }
    }
}

/// A rule-level example: either a whole call (`call`, run through the adapters) or an action described directly
/// (`operation` plus resources), which tests the rule without an adapter. Exactly one of the two must be given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// May use `${workspace}`, `${home}` and `~`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// A command string that needs a shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// Why a rule did not match an action; part of `explain` output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "field", rename_all = "snake_case")]
pub enum Mismatch {
    Operation,
    Tool,
    NoPaths,
    Path {
        path: String,
    },
    NoCommand,
    Command,
    /// A prefix allow pattern matched, but the command runs other programs (or code toolgate cannot read).
    NestedCommand,
    ShellString,
    NoHost,
    Host {
        host: String,
    },
    NoMethod,
    Method {
        method: String,
    },
}

/// An argv pattern: exact, or a token prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandPattern {
    pub(crate) tokens: Vec<String>,
    pub(crate) prefix: bool,
}

impl CommandPattern {
    fn matches(&self, argv: &[String]) -> bool {
        if self.prefix {
            argv.len() >= self.tokens.len() && argv[..self.tokens.len()] == self.tokens[..]
        } else {
            argv == self.tokens.as_slice()
        }
    }

    /// Allow-side match: exact argv, and a prefix pattern only admits a command that runs nothing else, visibly
    /// (`Bash(find:*)` must not admit `find . -exec rm {} ;`).
    fn admits(&self, argv: &[String], runs: &Runs) -> bool {
        self.matches(argv) && (!self.prefix || runs.is_leaf())
    }

    /// Deny/ask-side match against one command the call runs: also by the program's basename, so `rm` catches
    /// `/usr/bin/rm`. In an open run (`xargs rm`), arguments supplied at run time could be anything, so missing
    /// tokens and `{}` placeholders match.
    fn matches_run(&self, run: &Run) -> bool {
        let Some((program, args)) = run.argv.split_first() else {
            return false;
        };
        if !self
            .tokens
            .first()
            .is_some_and(|t| t == program || t == basename(program))
        {
            return false;
        }
        for (i, t) in self.tokens[1..].iter().enumerate() {
            match args.get(i) {
                Some(a) if a == t || (run.open && a.contains("{}")) => {}
                Some(_) => return false,
                None => return run.open,
            }
        }
        self.prefix || self.tokens.len() == args.len() + 1
    }
}

/// How a rule's path patterns must cover the call's paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathMode {
    /// Every path must match (allow and ask rules).
    Every,
    /// One path suffices (deny rules, and the ask-cap check in `decide.rs`).
    Any,
}

/// Internal mismatch, cheap to build on the hot path; turned into [`Mismatch`] only for explanations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Miss {
    Operation,
    Tool,
    NoPaths,
    Path(usize),
    NoCommand,
    Command,
    NestedCommand,
    ShellString,
    NoHost,
    Host,
    NoMethod,
    Method,
}

impl Miss {
    pub(crate) fn describe(self, action: &Action) -> Mismatch {
        match self {
            Miss::Operation => Mismatch::Operation,
            Miss::Tool => Mismatch::Tool,
            Miss::NoPaths => Mismatch::NoPaths,
            Miss::Path(i) => Mismatch::Path {
                path: action.paths.get(i).cloned().unwrap_or_default(),
            },
            Miss::NoCommand => Mismatch::NoCommand,
            Miss::Command => Mismatch::Command,
            Miss::NestedCommand => Mismatch::NestedCommand,
            Miss::ShellString => Mismatch::ShellString,
            Miss::NoHost => Mismatch::NoHost,
            Miss::Host => Mismatch::Host {
                host: action
                    .net
                    .as_ref()
                    .map(|n| n.host.clone())
                    .unwrap_or_default(),
            },
            Miss::NoMethod => Mismatch::NoMethod,
            Miss::Method => Mismatch::Method {
                method: action.method.clone().unwrap_or_default(),
            },
        }
    }
}

/// What the matchers need from one action, computed once per decision rather than once per rule.
pub(crate) struct Prepared<'a> {
    /// The paths split into segments, for the index.
    pub(crate) parts: Vec<Vec<&'a str>>,
    /// The paths as glob candidates.
    pub(crate) paths: Vec<Candidate<'a>>,
    /// Every command the call runs, seen through wrappers.
    pub(crate) runs: Runs,
}

impl<'a> Prepared<'a> {
    /// `folded`: the action's paths, case-folded when the policy says so (see `decide::prepare_paths`).
    pub(crate) fn new(action: &Action, folded: &'a [Cow<'a, str>]) -> Prepared<'a> {
        let runs = match &action.command {
            Some(Command::Argv(argv)) => expand_argv(argv),
            Some(Command::Shell { segments, .. }) => expand_segments(segments),
            None => Runs::default(),
        };
        Prepared {
            parts: folded.iter().map(|p| split_path(p)).collect(),
            paths: folded.iter().map(|p| Candidate::new(p.as_ref())).collect(),
            runs,
        }
    }
}

/// A compiled rule. The pattern sources are kept for explanations and for the shadowing lint.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub(crate) id: String,
    pub(crate) effect: Effect,
    /// Bitmask of operations; 0 means any.
    pub(crate) ops: u16,
    pub(crate) tools: Vec<(String, NameGlob)>,
    pub(crate) paths: Vec<(String, PathGlob)>,
    pub(crate) commands: Vec<CommandPattern>,
    pub(crate) hosts: Vec<(String, HostPattern)>,
    pub(crate) methods: Vec<String>,
    pub(crate) spec: RuleSpec,
}

/// Substitutes `${workspace}`, `${home}` and a leading `~`; substituted text is escaped so it matches literally.
pub(crate) fn substitute(pattern: &str, ctx: &Context, rule: &str) -> Result<String> {
    substitute_as(pattern, ctx, rule, true)
}

/// `glob`: the result is a path glob (leading `~` expands, values are escaped); otherwise a literal argv token
/// (only `${...}` expands: argv never reaches a shell, so `~` stays literal).
fn substitute_as(pattern: &str, ctx: &Context, rule: &str, glob: bool) -> Result<String> {
    let quote = |v: &str| if glob { escape(v) } else { v.to_owned() };
    let home = || {
        ctx.home.as_deref().ok_or_else(|| {
            Error::rule(
                rule,
                "pattern uses `~`/`${home}` but no home directory is known",
            )
        })
    };
    let mut out = String::new();
    let mut rest = pattern;
    if glob && (rest == "~" || rest.starts_with("~/")) {
        out.push_str(&quote(home()?.trim_end_matches('/')));
        rest = &rest[1..];
    }
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| Error::rule(rule, format!("unclosed `${{` in `{pattern}`")))?;
        let value = match &after[..end] {
            "workspace" => ctx.workspace.as_str(),
            "home" => home()?,
            other => {
                return Err(Error::UnknownVariable {
                    rule: rule.to_owned(),
                    name: other.to_owned(),
                })
            }
        };
        out.push_str(&quote(value.trim_end_matches('/')));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Rule {
    pub(crate) fn compile(spec: RuleSpec, ctx: &Context, case: PathCase) -> Result<Rule> {
        let id = spec.id.clone();
        if id.is_empty() {
            return Err(Error::rule("", "rule id must not be empty"));
        }
        let err = |m: String| Error::rule(&id, m);
        let ops = spec.operations.iter().fold(0u16, |acc, op| acc | op.bit());
        if let Some(v) = spec
            .tools
            .iter()
            .chain(&spec.hosts)
            .find(|t| t.contains("${"))
        {
            return Err(err(format!(
                "`{v}`: variables are only substituted in paths and commands"
            )));
        }
        let tools = spec
            .tools
            .iter()
            .map(|t| {
                NameGlob::new(t.strip_prefix("mcp__").unwrap_or(t))
                    .map(|g| (t.clone(), g))
                    .map_err(err)
            })
            .collect::<Result<_>>()?;
        let mut paths = Vec::new();
        for p in &spec.paths {
            let text = substitute(p, ctx, &id)?;
            if text.split('/').any(|seg| seg == "..") {
                return Err(err(format!("path pattern `{p}` contains `..`")));
            }
            paths.push((p.clone(), PathGlob::new(&text, case).map_err(err)?));
        }
        let mut commands = Vec::new();
        for (list, prefix) in [(&spec.commands, false), (&spec.command_prefixes, true)] {
            for tokens in list {
                if tokens.is_empty() || tokens.iter().any(|t| t.is_empty() || t.contains('\0')) {
                    return Err(err(
                        "command patterns need at least one non-empty token".to_owned()
                    ));
                }
                let tokens = tokens
                    .iter()
                    .map(|t| substitute_as(t, ctx, &id, false))
                    .collect::<Result<Vec<_>>>()?;
                commands.push(CommandPattern { tokens, prefix });
            }
        }
        let hosts = spec
            .hosts
            .iter()
            .map(|h| HostPattern::new(h).map(|p| (h.clone(), p)).map_err(err))
            .collect::<Result<_>>()?;
        let mut methods = Vec::new();
        for m in &spec.methods {
            if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(err(format!("`{m}` is not an HTTP method")));
            }
            methods.push(m.to_ascii_uppercase());
        }
        if !methods.is_empty() && spec.hosts.is_empty() {
            return Err(Error::NetFields {
                rule: id,
                message: "`methods` without `hosts`".to_owned(),
            });
        }
        let net_only = ops & Operation::NetRequest.bit();
        if (!spec.hosts.is_empty() || !methods.is_empty()) && ops != 0 && ops != net_only {
            return Err(Error::NetFields {
                rule: id,
                message: "`hosts`/`methods` on a rule whose operations are not only `net.request`"
                    .to_owned(),
            });
        }
        Ok(Rule {
            id,
            effect: spec.effect,
            ops,
            tools,
            paths,
            commands,
            hosts,
            methods,
            spec,
        })
    }

    /// The path mode this rule's effect implies.
    pub(crate) fn path_mode(&self) -> PathMode {
        if self.effect == Effect::Deny {
            PathMode::Any
        } else {
            PathMode::Every
        }
    }

    /// Checks this rule against `action`, prepared once per decision.
    pub(crate) fn check(
        &self,
        action: &Action,
        prepared: &Prepared<'_>,
        mode: PathMode,
    ) -> Result<(), Miss> {
        if self.ops != 0 {
            let direct = self.ops & action.operation.bit() != 0;
            let as_shell = action.via_shell && self.ops & Operation::ShellExec.bit() != 0;
            if !(direct || as_shell) {
                return Err(Miss::Operation);
            }
        }
        if !self.tools.is_empty() && !self.tools.iter().any(|(_, g)| g.matches(&action.tool)) {
            return Err(Miss::Tool);
        }
        let strict = self.effect != Effect::Deny;
        if !self.paths.is_empty() {
            let paths = &prepared.paths;
            if paths.is_empty() {
                return Err(Miss::NoPaths);
            }
            let hit = |p: &Candidate<'_>| self.paths.iter().any(|(_, g)| g.matches_candidate(p));
            match mode {
                PathMode::Every => {
                    if let Some(miss) = paths.iter().position(|p| !hit(p)) {
                        return Err(Miss::Path(miss));
                    }
                }
                PathMode::Any => {
                    if !paths.iter().any(hit) {
                        return Err(Miss::Path(0));
                    }
                }
            }
        }
        if !self.commands.is_empty() {
            let any_run = || {
                prepared
                    .runs
                    .runs
                    .iter()
                    .any(|r| self.commands.iter().any(|c| c.matches_run(r)))
            };
            match &action.command {
                None => return Err(Miss::NoCommand),
                Some(Command::Shell { .. }) if strict => return Err(Miss::ShellString),
                Some(Command::Shell { .. }) => {
                    if !any_run() {
                        return Err(Miss::Command);
                    }
                }
                // Allow admits only what it names; ask and deny are stricter the more they match, so they see
                // through wrappers like deny always has.
                Some(Command::Argv(argv)) if self.effect == Effect::Allow => {
                    if !self.commands.iter().any(|c| c.admits(argv, &prepared.runs)) {
                        let named = self.commands.iter().any(|c| c.matches(argv));
                        return Err(if named {
                            Miss::NestedCommand
                        } else {
                            Miss::Command
                        });
                    }
                }
                Some(Command::Argv(_)) => {
                    if !any_run() {
                        return Err(Miss::Command);
                    }
                }
            }
        }
        if !self.hosts.is_empty() {
            let target = action.net.as_ref().ok_or(Miss::NoHost)?;
            if !self.hosts.iter().any(|(_, h)| h.matches(target)) {
                return Err(Miss::Host);
            }
        }
        if !self.methods.is_empty() {
            match &action.method {
                None if strict => return Err(Miss::NoMethod),
                None => {}
                Some(m) if !self.methods.contains(m) => return Err(Miss::Method),
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// True when the rule constrains nothing but operations and tools (it applies to every call of those tools).
    pub(crate) fn is_resource_free(&self) -> bool {
        self.paths.is_empty()
            && self.commands.is_empty()
            && self.hosts.is_empty()
            && self.methods.is_empty()
    }
}

#[cfg(test)]
#[path = "rule_tests.rs"]
mod tests;
