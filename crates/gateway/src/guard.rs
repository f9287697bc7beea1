//! The policy stage as the gateway runs it: arguments checked against the tool's `inputSchema`, the call
//! normalised (paths canonicalised here, where I/O is allowed) and decided by the pure `policy` crate, and the
//! tool surface of the active profile computed for `tools/list`.
//!
//! A call of toolgate's own tools that the executor will certainly refuse (a path outside the workspace, through
//! `..`, an absolute path elsewhere or a symlink that leaves it) is refused here, before any human is asked.
//!
//! It decides; it does not execute, hold approvals or write audit records.

use crate::canon::{canonicalise, canonicaliser};
use crate::error::Error;
use crate::outcome::{Refusal, RefusalCode};
use crate::own::OwnTool;
use config::{Config, ServerKind};
use jsonschema::Validator;
use policy::{
    Decision, Effect, Policy, PolicySources, ReasonCode, ToolCall, ToolListing, Visibility,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

pub use crate::own::OWN_SERVER;
use rules::{context, sources, with_origins};
pub(crate) use schema::{compile, prepare as prepare_schemas};

mod rules;
mod schema;

/// What the gateway does with a call.
#[derive(Debug)]
pub enum Verdict {
    Allow(Decision),
    /// Needs a human; the decision says which rule asked.
    Ask(Decision),
    /// The refusal (never forwarded upstream), carrying the decision when the policy made it (argument-schema
    /// refusals come before any decision).
    Refuse(Refusal),
}

pub struct Guard {
    /// Canonical workspace root, where toolgate's own tools are confined.
    workspace: String,
    policy: Policy,
    profile: Option<String>,
    kinds: HashMap<String, policy::ServerKind>,
    schemas: Mutex<HashMap<String, (Value, Arc<Validator>)>>,
}

impl Guard {
    /// Compiles the policy of `config` for `workspace` (canonical). With no policy section at all, every call
    /// asks: toolgate is deny-by-default, and an ask without an approval channel is refused.
    pub fn load(config: &Config, workspace: &Path) -> Result<Self, Error> {
        let profile = config.profile.as_ref().map(|p| p.value.clone());
        Self::load_as(config, workspace, profile)
    }

    /// Like `load`, under `profile` instead of the one `config` names (`None`: no profile).
    pub fn load_as(
        config: &Config,
        workspace: &Path,
        profile: Option<String>,
    ) -> Result<Self, Error> {
        let (structured, permissions) = sources(config);
        let loaded = Policy::load(
            PolicySources {
                policy: Some(&structured),
                permissions: permissions.as_ref(),
                profiles: config.policy.profiles.as_ref(),
            },
            &context(workspace),
        )
        .map_err(Error::Policy)?;
        let loaded = with_origins(loaded, config).with_servers(policy::Servers {
            own: Some(own_tools),
            filesystem_dirs: crate::fsdirs::filesystem_dirs(config),
        });
        let policy = match &profile {
            Some(name) => loaded.with_profile(name).map_err(|why| Error::Profile {
                name: name.clone(),
                why,
            })?,
            None => loaded,
        };
        let kinds = config
            .servers
            .iter()
            .filter_map(|s| {
                let kind = match s.kind {
                    ServerKind::Filesystem => policy::ServerKind::Filesystem,
                    ServerKind::Git => policy::ServerKind::Git,
                    ServerKind::Fetch => policy::ServerKind::Fetch,
                    ServerKind::Generic => return None,
                };
                Some((s.name.clone(), kind))
            })
            .collect();
        Ok(Self {
            workspace: context(workspace).workspace,
            policy,
            profile,
            kinds,
            schemas: Mutex::new(HashMap::new()),
        })
    }

    /// Every error and warning of the policy `load` compiles for `config` (toolgate's own rules included, so a
    /// rule they shadow or an id they take is reported), for `toolgate policy check`.
    pub fn lint(config: &Config, workspace: &Path) -> Vec<policy::LintFinding> {
        let (structured, permissions) = sources(config);
        let sources = PolicySources {
            policy: Some(&structured),
            permissions: permissions.as_ref(),
            profiles: config.policy.profiles.as_ref(),
        };
        policy::check_policy(sources, &context(workspace))
    }

    pub fn profile(&self) -> Option<&str> {
        self.profile.as_deref()
    }

    /// The canonical workspace root this guard confines toolgate's own tools to.
    pub(crate) fn workspace(&self) -> &str {
        &self.workspace
    }

    /// Decides a tool call. `definition` is the tool's definition as listed (for its `inputSchema`).
    pub fn check_tool(
        &self,
        server: &str,
        tool: &str,
        definition: Option<&Value>,
        arguments: &Value,
    ) -> Verdict {
        self.check(server, tool, definition, arguments).0
    }

    /// Decides a tool call and says what it touches, as the audit log records it: canonical paths, the program of
    /// a command, the host of a URL (the audit crate redacts them before they are written). The call is adapted
    /// and its paths resolved once, for both.
    pub fn check(
        &self,
        server: &str,
        tool: &str,
        definition: Option<&Value>,
        arguments: &Value,
    ) -> (Verdict, Vec<String>) {
        if let Some(schema) = definition.and_then(|d| d.get("inputSchema")) {
            if let Err(why) = self.validate(server, tool, schema, arguments) {
                return (
                    Verdict::Refuse(Refusal::invalid_arguments(&why)),
                    Vec::new(),
                );
            }
        }
        let call = self.call(server, tool, arguments);
        let action = self.policy.action_for(&call, &canonicaliser(&call));
        if server == OWN_SERVER {
            if let Some(why) = self.outside_workspace(tool, arguments, &action) {
                let refusal = Refusal::new(RefusalCode::PathOutsideWorkspace, why);
                return (Verdict::Refuse(refusal), resources(action));
            }
        }
        let decision = own_default(server, tool, self.policy.decide(&action));
        (self.verdict(decision), resources(action))
    }

    /// Why toolgate's own executor will certainly refuse this call's paths, if it will: each path argument must
    /// pass the executor's own confinement (no `..`, absolute only beneath the root), and each must still lie
    /// in the workspace once symlinks are resolved (the executor refuses to follow one out). Asking a human
    /// about such a call would show a harmless-looking name for a target that can never be reached.
    fn outside_workspace(
        &self,
        tool: &str,
        arguments: &Value,
        action: &policy::Action,
    ) -> Option<String> {
        let root = Path::new(&self.workspace);
        let raw = builtin::adapt(tool, String::new(), arguments);
        let spelled: Vec<&String> = if tool == builtin::SHELL_RUN {
            // Only the working directory is the executor's to confine; a command's arguments are the sandbox's.
            raw.paths.iter().take(1).collect()
        } else {
            raw.paths
                .iter()
                .chain(raw.also.iter().flat_map(|a| &a.paths))
                .collect()
        };
        if let Some(Err(e)) = spelled
            .iter()
            .map(|p| builtin::confine_lexically(root, p))
            .find(Result::is_err)
        {
            return Some(format!(
                "toolgate refused this call before asking anyone: {e}"
            ));
        }
        let inside = |p: &String| {
            p == &self.workspace
                || p.strip_prefix(self.workspace.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        };
        let canonical: Vec<&String> = if tool == builtin::SHELL_RUN {
            action.paths.iter().take(1).collect()
        } else {
            action
                .paths
                .iter()
                .chain(action.also.iter().flat_map(|a| &a.paths))
                .collect()
        };
        canonical.into_iter().find(|p| !inside(p)).map(|p| {
            format!(
                "toolgate refused this call before asking anyone: it resolves to {p}, outside the workspace"
            )
        })
    }

    /// The policy's decision alone (no schema check), for hints such as which tools may need approval.
    pub fn decide_only(&self, server: &str, tool: &str, arguments: &Value) -> Verdict {
        let call = self.call(server, tool, arguments);
        self.verdict(self.policy.decide_call(&call, &canonicaliser(&call)))
    }

    /// A tool decided by its name alone (`mcp.call` of `server__tool`: the rules that name it, else the
    /// default), for what must be decided before any argument is known.
    pub fn decide_by_name(&self, server: &str, tool: &str) -> Verdict {
        let raw = policy::RawAction::new(policy::Operation::McpCall, format!("{server}__{tool}"));
        let action = policy::normalise(&raw, self.policy.context(), &canonicalise);
        self.verdict(self.policy.decide(&action))
    }

    /// The whole evaluation of a tool call, as `toolgate policy explain` shows it (no schema check, no I/O
    /// beyond resolving paths).
    pub fn explain_tool(&self, server: &str, tool: &str, arguments: &Value) -> policy::Explanation {
        self.explain_as(server, tool, arguments, None)
    }

    /// `explain_tool`, with `kind` standing for the kind of a server the config does not list (a `wrap`ped
    /// one); a configured server keeps its own. The decision is `check`'s, step for step.
    pub fn explain_as(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
        kind: Option<policy::ServerKind>,
    ) -> policy::Explanation {
        let mut call = self.call(server, tool, arguments);
        call.server_kind = call.server_kind.or(kind);
        let mut e = self.policy.explain_call(&call, &canonicaliser(&call));
        e.decision = own_default(server, tool, e.decision);
        e
    }

    /// A call as the policy's adapters see it: toolgate's own tools are of kind `Toolgate`, upstreams of the kind
    /// their configuration names or their launch command reveals.
    fn call(&self, server: &str, tool: &str, arguments: &Value) -> ToolCall {
        let kind = match server {
            OWN_SERVER => Some(policy::ServerKind::Toolgate),
            _ => self.kinds.get(server).copied(),
        };
        ToolCall::new(server, tool, arguments.clone(), kind)
    }

    /// The well-known kind of `server` (configured, or revealed by its launch command), if it has one.
    pub(crate) fn server_kind(&self, server: &str) -> Option<policy::ServerKind> {
        self.kinds.get(server).copied()
    }

    /// Whether `server` takes its allowed directories from its launch arguments only: a filesystem server would
    /// replace them with the client's roots, behind the policy's back, so toolgate does not relay `roots/list`
    /// to it (the server then keeps the directories it was started with).
    pub fn keeps_own_directories(&self, server: &str) -> bool {
        self.kinds.get(server) == Some(&policy::ServerKind::Filesystem)
    }

    /// The effective policy (the active profile applied).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Decides reading a resource: a `file:` URI is `fs.read` of its path (refused as `unknown` when parsers could
    /// read it differently), `http(s)://` is `net.request`, anything else is `mcp.call` of
    /// `<server>__resources_read`. Schemes compare in any case.
    pub fn check_resource(&self, server: &str, uri: &str) -> Verdict {
        let mut raw = policy::RawAction::new(
            policy::Operation::McpCall,
            format!("{server}__resources_read"),
        );
        let scheme = uri.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
        match policy::file_uri_path(uri) {
            Ok(Some(path)) => {
                raw.operation = policy::Operation::FsRead;
                raw.paths.push(path);
            }
            Err(reason) => raw = raw.unknown(reason),
            Ok(None) if matches!(scheme.as_deref(), Some("http" | "https")) => {
                raw.operation = policy::Operation::NetRequest;
                raw.url = Some(uri.to_owned());
                raw.method = Some("GET".into());
            }
            Ok(None) => {}
        }
        let action = policy::normalise(&raw, self.policy.context(), &canonicalise);
        self.verdict(self.policy.decide(&action))
    }

    /// Decides getting a prompt: `mcp.call` of `<server>__prompts_get`, matched by name rules.
    pub fn check_prompt(&self, server: &str, prompt: &str) -> Verdict {
        let call = ToolCall::new(server, &format!("prompts_get_{prompt}"), json!({}), None);
        self.verdict(self.policy.decide_call(&call, &canonicalise))
    }

    fn verdict(&self, decision: Decision) -> Verdict {
        match decision.effect {
            Effect::Allow => Verdict::Allow(decision),
            Effect::Ask => Verdict::Ask(decision),
            Effect::Deny => Verdict::Refuse(Refusal::denied(&decision)),
        }
    }

    /// Which of `tools` (`(server, tool)` pairs, in order) the active profile lets a client see in a list.
    /// With `quarantine_asks`, a quarantined tool stays listed (its calls ask instead).
    pub fn visible(
        &self,
        tools: &[(String, String)],
        pins: &crate::pins::PinView,
        quarantine_asks: bool,
    ) -> Vec<bool> {
        self.surface(tools, pins, quarantine_asks)
            .iter()
            .map(|e| e.visibility == Visibility::Visible)
            .collect()
    }

    /// How the active profile shows each of `tools`: visible, deferred (found by code mode's search, not
    /// listed), blocked (with the deny rule that blocks every call, when one does) or unavailable.
    pub fn surface(
        &self,
        tools: &[(String, String)],
        pins: &crate::pins::PinView,
        quarantine_asks: bool,
    ) -> Vec<policy::SurfaceEntry> {
        let listings: Vec<ToolListing> = tools
            .iter()
            .map(|(s, t)| {
                let name = format!("{s}__{t}");
                let mut listing = ToolListing::new(&name);
                if let Some(p) = pins.get(&name) {
                    listing.quarantined = p.quarantined && !quarantine_asks;
                    listing.flagged = p.blocked_by_flags();
                }
                listing
            })
            .collect();
        match self.policy.tool_surface(None, &listings) {
            Ok(entries) => entries,
            // A surface that cannot be computed shows nothing: listing less is the safe side.
            Err(_) => listings
                .iter()
                .map(|l| policy::SurfaceEntry {
                    name: l.name.clone(),
                    visibility: Visibility::Blocked,
                    reason: policy::SurfaceReason::ProfileBlocked,
                    rule_id: None,
                    rule_at: None,
                })
                .collect(),
        }
    }
}

/// toolgate's read-only intrinsics start no process and touch no file: the policy's default does not apply to
/// them, though a rule naming them still does; nor to `run_code`, every call of whose program is decided on its
/// own. Shared by `check` and `explain_as`, so an explanation says what a call meets.
fn own_default(server: &str, tool: &str, mut decision: Decision) -> Decision {
    let default = matches!(
        decision.reason,
        ReasonCode::DefaultAsk | ReasonCode::DefaultDeny
    );
    // Nor to `run_code`: every call its program makes is decided on its own, before it starts and as it runs.
    let own_default_free = !matches!(OwnTool::named(tool), OwnTool::Builtin(_));
    if server == OWN_SERVER && own_default_free && default {
        decision.effect = Effect::Allow;
        decision.reason = ReasonCode::DefaultAllow;
    }
    decision
}

/// The adapter of toolgate's own tools: the workspace tools' own, from their definitions; the intrinsics read
/// nothing and are `mcp.call`, decided by name.
fn own_tools(tool: &str, name: String, arguments: &Value) -> policy::RawAction {
    if !matches!(OwnTool::named(tool), OwnTool::Builtin(_)) {
        return policy::RawAction::new(policy::Operation::McpCall, name);
    }
    builtin::adapt(tool, name, arguments)
}

fn resources(action: policy::Action) -> Vec<String> {
    let mut out = action.paths;
    // Further operations of the call touch these too (a move's destination, a patch's files).
    for path in action.also.into_iter().flat_map(|a| a.paths) {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    match action.command {
        Some(policy::Command::Argv(argv)) => out.extend(argv.into_iter().next()),
        Some(policy::Command::Shell { .. }) => out.push("(shell string)".to_owned()),
        None => {}
    }
    if let Some(net) = action.net {
        out.push(format!("{}://{}:{}", net.scheme, net.host, net.port));
    }
    out
}
