//! Loading: raw `policy`, `permissions` and `profiles` JSON values → a compiled [`Policy`], collecting every error.
//!
//! The config crate hands over the raw values; this module owns their schema (`deny_unknown_fields` everywhere)
//! and runs each rule's `match` / `not_match` examples. It does not decide calls (`decide.rs`) and does not lint
//! for style (`lint.rs`), but `lint.rs` reuses the error list produced here.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::Value;

use crate::action::{normalise, RawAction, RawCommand};
use crate::adapter::{adapt, Servers, ToolMapping};
use crate::claude::translate_permission;
use crate::error::{Error, Result};
use crate::glob::PathCase;
use crate::index::RuleIndex;
use crate::operation::{Effect, Precedence};
use crate::path::{lexical_normalise, Context, Lexical};
use crate::profile::{Profile, ProfileMode, ToolVisibility};
use crate::rule::{Example, Rule, RuleSpec};

/// Ids of toolgate's own rules, which an embedding puts in front of the user's structured rules.
pub const BUILTIN_PREFIX: &str = "builtin.";

/// The raw values the config crate found; any may be absent.
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicySources<'a> {
    /// Structured form: `{version, default, path_case, names, rules: [...], mappings: [...]}`.
    pub policy: Option<&'a Value>,
    /// Claude Code form: `{default, allow: [...], ask: [...], deny: [...]}`.
    pub permissions: Option<&'a Value>,
    /// `{NAME: {description, default, mode, rules, permissions, tools: {visible, deferred, blocked, default}}}`.
    pub profiles: Option<&'a Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    version: Option<u32>,
    #[serde(default)]
    default: Option<Effect>,
    #[serde(default)]
    path_case: PathCase,
    /// How matching allow and ask rules rank: toolgate's strictest-wins unless the file says otherwise (a
    /// ToolFence policy says `first_match`).
    #[serde(default)]
    precedence: Precedence,
    #[serde(default)]
    names: Names,
    #[serde(default)]
    rules: Vec<Value>,
    #[serde(default)]
    mappings: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionsFile {
    #[serde(default)]
    default: Option<Effect>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    default: Option<Effect>,
    #[serde(default)]
    rules: Vec<Value>,
    #[serde(default)]
    permissions: Option<Value>,
    #[serde(default)]
    tools: ToolVisibility,
    /// What a client of this profile sees: every tool, or code mode's `search_tools` and `run_code`.
    #[serde(default)]
    mode: Option<ProfileMode>,
}

/// What a deny rule means for a call that only lists or searches names (`list_directory`, `directory_tree`,
/// `search_files`, `git_status`): `hidden` (the default) keeps the names of denied files from any listing that
/// may show one the rule does not spell out, at every depth (such a listing asks); `shown` protects content
/// only, so listings are decided by the allow and ask rules. A listing inside a denied tree is denied either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Names {
    #[default]
    Hidden,
    Shown,
}

/// A loaded, validated policy. Cheap to clone; immutable once built.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) default: Effect,
    pub(crate) precedence: Precedence,
    pub(crate) case: PathCase,
    pub(crate) names: Names,
    pub(crate) ctx: Context,
    pub(crate) rules: Vec<Rule>,
    pub(crate) mappings: Vec<ToolMapping>,
    pub(crate) profiles: BTreeMap<String, Profile>,
    /// Set by [`Policy::with_profile`]: the profile whose tool visibility applies to decisions.
    pub(crate) active: Option<(String, ToolVisibility)>,
    /// Candidate index over `rules`; rebuilt whenever `rules` changes.
    pub(crate) index: RuleIndex,
    /// What the embedding told the adapters about its servers (own tools, a filesystem server's directories).
    pub(crate) servers: Servers,
    /// Each rule's text as the user wrote it (a permission string, a structured rule's `id`), by id, base and
    /// profile rules alike, in the order they were read; and where it was written, once [`Policy::with_origins`] saw the file.
    pub(crate) written: Vec<(String, String)>,
    pub(crate) origins: BTreeMap<String, String>,
}

/// What compilation produced: the policy (when the shape allowed building one) and every error found.
pub(crate) struct Compiled {
    pub(crate) policy: Policy,
    pub(crate) errors: Vec<Error>,
}

impl Policy {
    /// Loads and validates; the first error (naming its key, rule or example) is returned.
    pub fn load(sources: PolicySources<'_>, ctx: &Context) -> Result<Policy> {
        let compiled = compile(sources, ctx);
        match compiled.errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(compiled.policy),
        }
    }

    /// The same policy with adapters that know `servers`: toolgate's own tools and how a filesystem server
    /// resolves relative paths. Without it those calls are `unknown`.
    pub fn with_servers(mut self, servers: Servers) -> Policy {
        self.servers = servers;
        self
    }

    /// The decision when no rule matches.
    pub fn default_effect(&self) -> Effect {
        self.default
    }

    /// How matching allow and ask rules rank, as the policy file says.
    pub fn precedence(&self) -> Precedence {
        self.precedence
    }

    /// The context patterns were compiled against (needed to normalise calls for this policy).
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Declared tool mappings, for [`crate::adapt`].
    pub fn mappings(&self) -> &[ToolMapping] {
        &self.mappings
    }

    /// Profile names, sorted.
    pub fn profile_names(&self) -> Vec<&str> {
        self.profiles.keys().map(String::as_str).collect()
    }

    /// The structured form of every rule in evaluation order (permission strings appear as their twins), for
    /// `policy check` listings.
    pub fn rule_specs(&self) -> impl Iterator<Item = &RuleSpec> {
        self.rules.iter().map(|r| &r.spec)
    }

    /// Rule ids in evaluation order.
    pub fn rule_ids(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.id.as_str()).collect()
    }

    /// The effective policy of a profile: base rules plus the profile's rules, the profile's default if it sets one,
    /// and the profile's tool visibility applied to decisions.
    pub fn with_profile(&self, name: &str) -> Result<Policy> {
        let profile = self
            .profiles
            .get(name)
            .ok_or_else(|| Error::UnknownProfile(name.to_owned()))?;
        let mut out = self.clone();
        out.rules.extend(profile.rules.iter().cloned());
        out.index = RuleIndex::build(&out.rules);
        if let Some(d) = profile.default {
            out.default = d;
        }
        out.active = Some((name.to_owned(), profile.tools.clone()));
        Ok(out)
    }
}

fn parse<T: for<'de> Deserialize<'de>>(key: &str, value: &Value) -> Result<T> {
    T::deserialize(value).map_err(|e| Error::parse(key, e))
}

/// Compiles everything it can, recording each problem instead of stopping at the first.
pub(crate) fn compile(sources: PolicySources<'_>, ctx: &Context) -> Compiled {
    let mut errors = Vec::new();
    // Patterns are anchored at these values, so they must already be canonical: absolute, no `.`/`..`/`//`.
    let canonical = |v: &str| v == "/" || (lexical_normalise(v).as_deref() == Some(v));
    if !canonical(&ctx.workspace) {
        errors.push(Error::parse(
            "context.workspace",
            format!("`{}` is not a canonical absolute path", ctx.workspace),
        ));
    }
    if let Some(home) = ctx.home.as_deref().filter(|h| !canonical(h)) {
        errors.push(Error::parse(
            "context.home",
            format!("`{home}` is not a canonical absolute path"),
        ));
    }
    let file: Option<PolicyFile> = sources
        .policy
        .and_then(|v| parse("policy", v).map_err(|e| errors.push(e)).ok());
    let perms: Option<PermissionsFile> = sources
        .permissions
        .and_then(|v| parse("permissions", v).map_err(|e| errors.push(e)).ok());
    if let Some(v) = file.as_ref().and_then(|f| f.version).filter(|v| *v != 1) {
        errors.push(Error::parse(
            "policy.version",
            format!("unsupported version {v}; this build reads version 1"),
        ));
    }
    let case = file.as_ref().map(|f| f.path_case).unwrap_or_default();
    let precedence = file.as_ref().map(|f| f.precedence).unwrap_or_default();
    let names = file.as_ref().map(|f| f.names).unwrap_or_default();
    let default = match (
        file.as_ref().and_then(|f| f.default),
        perms.as_ref().and_then(|p| p.default),
    ) {
        (Some(a), Some(b)) if a != b => {
            errors.push(Error::parse(
                "permissions.default",
                format!("`{b}` contradicts policy.default `{a}`"),
            ));
            Effect::Deny
        }
        (Some(a), _) | (None, Some(a)) => a,
        // Deny by default: a policy that says nothing admits nothing.
        (None, None) => Effect::Deny,
    };
    let mut specs = Vec::new();
    let mut written = Vec::new();
    if let Some(f) = &file {
        specs.extend(rule_specs(
            "policy.rules",
            &f.rules,
            &mut written,
            &mut errors,
        ));
    }
    if let Some(p) = &perms {
        specs.extend(permission_specs("", p, &mut written, &mut errors));
    }
    let mut mappings = Vec::new();
    for (i, m) in file.iter().flat_map(|f| f.mappings.iter()).enumerate() {
        let key = format!("policy.mappings[{i}]");
        match parse::<ToolMapping>(&key, m)
            .and_then(|m| m.compile().map_err(|e| Error::parse(&key, e)))
        {
            Ok(m) => mappings.push(m),
            Err(e) => errors.push(e),
        }
    }
    let rules = compile_rules(specs, ctx, case, &mappings, &mut errors);
    let mut profiles = BTreeMap::new();
    if let Some(v) = sources.profiles {
        match parse::<BTreeMap<String, ProfileFile>>("profiles", v) {
            Ok(files) => {
                for (name, pf) in files {
                    let mut specs = rule_specs(
                        &format!("profiles.{name}.rules"),
                        &pf.rules,
                        &mut written,
                        &mut errors,
                    );
                    let mut default = pf.default;
                    if let Some(pv) = &pf.permissions {
                        let key = format!("profiles.{name}.permissions");
                        match parse::<PermissionsFile>(&key, pv) {
                            Ok(p) => {
                                match (default, p.default) {
                                    (Some(a), Some(b)) if a != b => errors.push(Error::parse(
                                        format!("{key}.default"),
                                        format!("`{b}` contradicts profiles.{name}.default `{a}`"),
                                    )),
                                    (None, b) => default = b,
                                    _ => {}
                                }
                                specs.extend(permission_specs(
                                    &format!("{name}."),
                                    &p,
                                    &mut written,
                                    &mut errors,
                                ))
                            }
                            Err(e) => errors.push(e),
                        }
                    }
                    let rules = compile_rules(specs, ctx, case, &mappings, &mut errors);
                    let tools = pf.tools.compile().map_err(|e| {
                        errors.push(Error::parse(format!("profiles.{name}.tools"), e))
                    });
                    let tools = tools.unwrap_or_default();
                    profiles.insert(
                        name,
                        Profile {
                            description: pf.description,
                            mode: pf.mode,
                            default,
                            rules,
                            tools,
                        },
                    );
                }
            }
            Err(e) => errors.push(e),
        }
    }
    // Ids must be unique across the base policy and every profile: decisions and audit records name them.
    let mut seen = BTreeSet::new();
    for r in rules
        .iter()
        .chain(profiles.values().flat_map(|p| p.rules.iter()))
    {
        if !seen.insert(r.id.clone()) {
            errors.push(Error::DuplicateId(r.id.clone()));
        }
    }
    let index = RuleIndex::build(&rules);
    let policy = Policy {
        default,
        precedence,
        case,
        names,
        ctx: ctx.clone(),
        rules,
        mappings,
        profiles,
        active: None,
        index,
        servers: Servers::default(),
        written,
        origins: BTreeMap::new(),
    };
    Compiled { policy, errors }
}

/// Reads rule specs, naming a bad one by its position in the user's list: toolgate's own rules (ids `builtin.…`,
/// which the gateway puts in front) are not counted, so a user's first rule is `policy.rules[0]`.
fn rule_specs(
    key: &str,
    values: &[Value],
    written: &mut Vec<(String, String)>,
    errors: &mut Vec<Error>,
) -> Vec<RuleSpec> {
    let mut out = Vec::new();
    let own = |v: &Value| {
        v.get("id")
            .and_then(Value::as_str)
            .is_some_and(|id| id.starts_with(BUILTIN_PREFIX))
    };
    let builtin = values.iter().take_while(|v| own(v)).count();
    for (at, v) in values.iter().enumerate() {
        let i = at.saturating_sub(builtin);
        let name = v.get("id").and_then(Value::as_str).map_or_else(
            || format!("{key}[{i}]"),
            |id| format!("{key}[{i}] (`{id}`)"),
        );
        match parse::<RuleSpec>(&name, v) {
            Ok(spec) => {
                written.push((spec.id.clone(), spec.id.clone()));
                out.push(spec)
            }
            Err(e) => errors.push(e),
        }
    }
    out
}

/// Generated ids are the permission's own text (`Read(**/.env)`), prefixed with `PROFILE.` inside a profile, so a
/// refusal, an approval or an audit record names the rule as the user wrote it. The same text in two lists (a
/// contradiction lint reports) keeps ids unique by naming its list: `allow:Read(**/.env)`.
fn permission_specs(
    prefix: &str,
    p: &PermissionsFile,
    written: &mut Vec<(String, String)>,
    errors: &mut Vec<Error>,
) -> Vec<RuleSpec> {
    let mut out = Vec::new();
    let mut taken = BTreeSet::new();
    for (list, effect) in [
        (&p.deny, Effect::Deny),
        (&p.ask, Effect::Ask),
        (&p.allow, Effect::Allow),
    ] {
        for (i, text) in list.iter().enumerate() {
            let mut id = format!("{prefix}{text}");
            if !taken.insert(id.clone()) {
                id = format!("{prefix}{effect}:{text}");
                if !taken.insert(id.clone()) {
                    id = format!("{prefix}{effect}[{i}]:{text}");
                    taken.insert(id.clone());
                }
            }
            written.push((id.clone(), text.clone()));
            match translate_permission(text, effect, &id) {
                Ok(spec) => out.push(spec),
                Err(e) => errors.push(e),
            }
        }
    }
    out
}

fn compile_rules(
    specs: Vec<RuleSpec>,
    ctx: &Context,
    case: PathCase,
    mappings: &[ToolMapping],
    errors: &mut Vec<Error>,
) -> Vec<Rule> {
    let mut rules = Vec::new();
    for spec in specs {
        match Rule::compile(spec, ctx, case) {
            Ok(rule) => {
                errors.extend(check_examples(&rule, ctx, case, mappings));
                rules.push(rule);
            }
            Err(e) => errors.push(e),
        }
    }
    rules
}

/// Runs a rule's examples through normalisation (lexical only: examples describe paths, not a filesystem).
fn check_examples(
    rule: &Rule,
    ctx: &Context,
    case: PathCase,
    mappings: &[ToolMapping],
) -> Vec<Error> {
    let mut errors = Vec::new();
    for (list, examples, want) in [
        ("match", &rule.spec.match_examples, true),
        ("not_match", &rule.spec.not_match, false),
    ] {
        for (index, ex) in examples.iter().enumerate() {
            let raw = match example_action(ex, ctx, mappings) {
                Some(raw) => raw,
                None => {
                    let message = "needs exactly one of `call` or `operation`".to_owned();
                    errors.push(Error::Example {
                        rule: rule.id.clone(),
                        list,
                        index,
                        message,
                    });
                    continue;
                }
            };
            let action = normalise(&raw, ctx, &Lexical);
            let folded = crate::decide::prepare_paths(&action, case);
            let prepared = crate::rule::Prepared::new(&action, &folded);
            let got = rule
                .check(&action, &prepared, rule.path_mode())
                .map_err(|m| m.describe(&action));
            if got.is_ok() != want {
                let message = match got {
                    Ok(()) => "matches, but should not".to_owned(),
                    Err(why) => format!(
                        "does not match ({})",
                        serde_json::to_string(&why).unwrap_or_default()
                    ),
                };
                errors.push(Error::Example {
                    rule: rule.id.clone(),
                    list,
                    index,
                    message,
                });
            }
        }
    }
    errors
}

fn example_action(ex: &Example, ctx: &Context, mappings: &[ToolMapping]) -> Option<RawAction> {
    let operation = match (&ex.call, ex.operation) {
        (Some(call), None) => {
            // Variables in an example call's arguments are expanded first, as a real call would spell the path.
            let mut call = call.clone();
            expand_strings(&mut call.arguments, ctx);
            let mut raw = adapt(&call, mappings);
            raw.paths = raw.paths.iter().map(|p| expand_vars(p, ctx)).collect();
            return Some(raw);
        }
        (None, Some(op)) => op,
        _ => return None,
    };
    let tool = ex
        .tool
        .as_deref()
        .map(|t| t.strip_prefix("mcp__").unwrap_or(t))
        .unwrap_or("example__example");
    let mut raw = RawAction::new(operation, tool.to_owned());
    raw.paths = ex.paths.iter().map(|p| expand_vars(p, ctx)).collect();
    raw.command = match (&ex.command, &ex.shell) {
        (Some(argv), _) => Some(RawCommand::Argv(argv.clone())),
        (None, Some(s)) => Some(RawCommand::Shell(s.clone())),
        (None, None) => None,
    };
    raw.url.clone_from(&ex.url);
    raw.method.clone_from(&ex.method);
    raw.via_shell = raw.command.is_some() && operation != crate::Operation::ShellExec;
    Some(raw)
}

fn expand_strings(value: &mut Value, ctx: &Context) {
    match value {
        Value::String(s) => *s = expand_vars(s, ctx),
        Value::Array(items) => items.iter_mut().for_each(|v| expand_strings(v, ctx)),
        Value::Object(m) => m.values_mut().for_each(|v| expand_strings(v, ctx)),
        _ => {}
    }
}

/// Plain substitution for example paths (they are paths, not patterns, so nothing is escaped).
pub(crate) fn expand_vars(p: &str, ctx: &Context) -> String {
    let home = ctx.home.as_deref().unwrap_or("~");
    let p = p
        .replace("${workspace}", &ctx.workspace)
        .replace("${home}", home);
    match p.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{home}{rest}"),
        _ => p,
    }
}
