//! The data that flows through the pipeline stage: a tool call, the raw action an adapter reads out of it, and the
//! normalised action that rules match. `normalise` is the only step that calls back into the caller (for paths).
//!
//! Nothing here decides; see `decide.rs`. Nothing here reads the filesystem; see [`Canonicalise`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::host::{parse_url, NetTarget, UrlError};
use crate::operation::Operation;
use crate::path::{normalise_path, Canonicalise, Context, PathError};
use crate::shell;

/// Which built-in adapter table applies to a server. The caller states it (from config); names are never guessed,
/// because a hostile server could call its tool `read_file` to borrow a filesystem rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    /// `@modelcontextprotocol/server-filesystem`.
    Filesystem,
    /// `mcp-server-git`.
    Git,
    /// Fetch-style servers (tool `fetch` with `url`).
    Fetch,
    /// toolgate's own built-in workspace tools.
    Toolgate,
}

impl ServerKind {
    /// Recognises a well-known server from the launch command the operator configured (trusted input, unlike the
    /// tool names a server reports). `None` when nothing is recognised: the server's calls are then `mcp.call`.
    pub fn from_launch_command(argv: &[String]) -> Option<ServerKind> {
        // `npx -y @modelcontextprotocol/server-filesystem@2026.8.31 /ws`, `uvx mcp-server-git`, script paths.
        argv.iter()
            .flat_map(|arg| arg.split('/'))
            .find_map(|component| {
                let name = component
                    .split('@')
                    .find(|s| !s.is_empty())
                    .unwrap_or(component);
                match name {
                    "server-filesystem" | "mcp-server-filesystem" => Some(ServerKind::Filesystem),
                    "mcp-server-git" | "server-git" => Some(ServerKind::Git),
                    "mcp-server-fetch" | "server-fetch" => Some(ServerKind::Fetch),
                    _ => None,
                }
            })
    }
}

/// One `tools/call` as the gateway sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub server: String,
    pub tool: String,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default, rename = "kind")]
    pub server_kind: Option<ServerKind>,
}

impl ToolCall {
    pub fn new(
        server: &str,
        tool: &str,
        arguments: Value,
        server_kind: Option<ServerKind>,
    ) -> ToolCall {
        ToolCall {
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments,
            server_kind,
        }
    }

    /// `server__tool`, the name rules match (`mcp__server__tool` patterns are rewritten to this form).
    pub fn qualified_name(&self) -> String {
        format!("{}__{}", self.server, self.tool)
    }
}

/// Why an action could not be classified; every one of these makes the call `unknown` and denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum UnknownReason {
    NulByte,
    MissingArgument,
    BadArgument,
    AmbiguousGit,
    GitFlagInjection,
    InvalidUrl,
    UnsupportedScheme,
    NoHome,
    Uncanonicalisable,
    UnknownTool,
    /// An argument the adapter does not know: the server may read it as a resource the policy never saw.
    UnknownArgument,
    /// A relative path for a server whose base directory toolgate cannot model.
    RelativePath,
    /// A URI whose reading differs between parsers (host, encoded separators, dot segments, query).
    AmbiguousUri,
}

impl UnknownReason {
    pub fn as_str(self) -> &'static str {
        match self {
            UnknownReason::NulByte => "NUL_BYTE",
            UnknownReason::MissingArgument => "MISSING_ARGUMENT",
            UnknownReason::BadArgument => "BAD_ARGUMENT",
            UnknownReason::AmbiguousGit => "AMBIGUOUS_GIT",
            UnknownReason::GitFlagInjection => "GIT_FLAG_INJECTION",
            UnknownReason::InvalidUrl => "INVALID_URL",
            UnknownReason::UnsupportedScheme => "UNSUPPORTED_SCHEME",
            UnknownReason::NoHome => "NO_HOME",
            UnknownReason::Uncanonicalisable => "UNCANONICALISABLE",
            UnknownReason::UnknownTool => "UNKNOWN_TOOL",
            UnknownReason::UnknownArgument => "UNKNOWN_ARGUMENT",
            UnknownReason::RelativePath => "RELATIVE_PATH",
            UnknownReason::AmbiguousUri => "AMBIGUOUS_URI",
        }
    }
}

/// A command as the adapter found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RawCommand {
    /// Structured argv: program first, no shell involved.
    Argv(Vec<String>),
    /// A string that needs a shell to interpret (operators, quotes, expansions).
    Shell(String),
}

/// How much of the tree at a path an operation discloses: the path itself, the names of its children (a one-level
/// listing), the names of everything beneath it (a recursive listing or search), the content of everything
/// beneath it (a diff of a directory), or everything beneath it moved elsewhere (a move, after which the moved
/// files are read where they landed). Deny rules on paths beneath apply through it; see `beneath.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    #[default]
    Exact,
    Children,
    NamesBeneath,
    ContentBeneath,
    Moved,
}

impl Scope {
    fn is_exact(&self) -> bool {
        *self == Scope::Exact
    }
}

/// One more thing a call does besides its main operation (a move reads its source and writes its destination).
/// Each access is decided like a call of its own and the strictest answer wins, so a deny on any of them applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Access {
    pub operation: Operation,
    pub paths: Vec<String>,
    #[serde(skip_serializing_if = "Scope::is_exact")]
    pub scope: Scope,
}

impl Access {
    pub fn new(operation: Operation, paths: Vec<String>, scope: Scope) -> Access {
        Access {
            operation,
            paths,
            scope,
        }
    }
}

/// What an adapter read out of a call: an operation plus unnormalised resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RawAction {
    pub operation: Operation,
    /// `server__tool`.
    pub tool: String,
    /// Paths exactly as the arguments spelled them.
    pub paths: Vec<String>,
    /// What the operation discloses of the tree at `paths`.
    pub scope: Scope,
    /// Further operations of the same call, each on its own paths.
    pub also: Vec<Access>,
    pub command: Option<RawCommand>,
    pub url: Option<String>,
    /// Upper-cased HTTP method, when the tool states or implies one.
    pub method: Option<String>,
    /// True when the operation was classified from a command (`git status` run through a shell tool), so
    /// `shell.exec` rules apply to it as well.
    pub via_shell: bool,
    pub unknown: Option<UnknownReason>,
}

impl RawAction {
    /// An action with no resources yet.
    pub fn new(operation: Operation, tool: String) -> RawAction {
        RawAction {
            operation,
            tool,
            paths: Vec::new(),
            scope: Scope::Exact,
            also: Vec::new(),
            command: None,
            url: None,
            method: None,
            via_shell: false,
            unknown: None,
        }
    }

    /// Adds a further operation of the same call.
    pub fn with_access(mut self, access: Access) -> RawAction {
        self.also.push(access);
        self
    }

    /// Marks the action unknown (fail closed) and keeps whatever resources were already read, for explanations.
    pub fn unknown(mut self, reason: UnknownReason) -> RawAction {
        self.operation = Operation::Unknown;
        self.unknown = Some(reason);
        self
    }
}

/// A command ready for matching.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    Argv(Vec<String>),
    /// Never admitted by allow rules. `segments` is a rough split used only so deny rules can still fire.
    Shell {
        raw: String,
        operator: Option<String>,
        segments: Vec<Vec<String>>,
    },
}

/// A normalised action: canonical paths, parsed URL. This is what rules match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Action {
    pub operation: Operation,
    pub tool: String,
    pub paths: Vec<String>,
    #[serde(skip_serializing_if = "Scope::is_exact")]
    pub scope: Scope,
    /// Further operations of the call, paths canonical; each is decided as well and the strictest answer wins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Access>,
    pub command: Option<Command>,
    pub net: Option<NetTarget>,
    pub method: Option<String>,
    pub via_shell: bool,
    pub unknown: Option<UnknownReason>,
}

impl Action {
    /// One further access of this call as an action of its own: same tool, no command or URL.
    pub(crate) fn part(&self, access: &Access) -> Action {
        Action {
            operation: if self.unknown.is_some() {
                Operation::Unknown
            } else {
                access.operation
            },
            tool: self.tool.clone(),
            paths: access.paths.clone(),
            scope: access.scope,
            also: Vec::new(),
            command: None,
            net: None,
            method: None,
            via_shell: false,
            unknown: self.unknown,
        }
    }
}

/// Turns a raw action into a normalised one. The canonicaliser is the only callback; any failure makes the action
/// `unknown` (denied) while keeping the resources that did normalise, so explanations still show them.
pub fn normalise(raw: &RawAction, ctx: &Context, canon: &dyn Canonicalise) -> Action {
    let mut unknown = raw.unknown;
    let mut canonical = |raw_paths: &[String]| {
        let mut paths = Vec::with_capacity(raw_paths.len());
        for p in raw_paths {
            match normalise_path(p, ctx, canon) {
                Ok(c) => paths.push(c),
                Err(e) => {
                    unknown.get_or_insert(match e {
                        PathError::NulByte => UnknownReason::NulByte,
                        PathError::NoHome => UnknownReason::NoHome,
                        PathError::Uncanonicalisable => UnknownReason::Uncanonicalisable,
                    });
                }
            }
        }
        paths
    };
    let paths = canonical(&raw.paths);
    let also: Vec<Access> = raw
        .also
        .iter()
        .map(|a| Access::new(a.operation, canonical(&a.paths), a.scope))
        .collect();
    let command = raw.command.as_ref().map(|c| match c {
        RawCommand::Argv(argv) => {
            if argv.iter().any(|a| a.contains('\0')) {
                unknown.get_or_insert(UnknownReason::NulByte);
            }
            Command::Argv(argv.clone())
        }
        RawCommand::Shell(s) => Command::Shell {
            raw: s.clone(),
            operator: shell::first_operator(s).map(str::to_owned),
            segments: shell::segments(s),
        },
    });
    let net = raw.url.as_ref().and_then(|u| match parse_url(u) {
        Ok(t) => Some(t),
        Err(e) => {
            unknown.get_or_insert(match e {
                UrlError::Malformed(_) => UnknownReason::InvalidUrl,
                UrlError::UnsupportedScheme => UnknownReason::UnsupportedScheme,
            });
            None
        }
    });
    let method = raw.method.as_ref().map(|m| m.to_ascii_uppercase());
    if method
        .as_ref()
        .is_some_and(|m| m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()))
    {
        unknown.get_or_insert(UnknownReason::BadArgument);
    }
    let operation = if unknown.is_some() {
        Operation::Unknown
    } else {
        raw.operation
    };
    Action {
        operation,
        tool: raw.tool.clone(),
        paths,
        scope: raw.scope,
        also,
        command,
        net,
        method,
        via_shell: raw.via_shell,
        unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::Lexical;

    fn ctx() -> Context {
        Context {
            workspace: "/ws".into(),
            home: None,
        }
    }

    #[test]
    fn well_known_servers_are_recognised_from_their_launch_command() {
        let kind = |s: &str| {
            ServerKind::from_launch_command(&s.split(' ').map(str::to_owned).collect::<Vec<_>>())
        };
        assert_eq!(
            kind("npx -y @modelcontextprotocol/server-filesystem@2026.8.31 /ws"),
            Some(ServerKind::Filesystem)
        );
        assert_eq!(
            kind("uvx mcp-server-git --repository /ws"),
            Some(ServerKind::Git)
        );
        assert_eq!(kind("uvx mcp-server-fetch"), Some(ServerKind::Fetch));
        assert_eq!(
            kind("node /opt/servers/mcp-server-git/index.js"),
            Some(ServerKind::Git)
        );
        assert_eq!(kind("npx -y @acme/read-files"), None);
    }

    #[test]
    fn failures_make_the_action_unknown() {
        let mut raw = RawAction::new(Operation::FsRead, "f__read_file".into());
        raw.paths = vec!["a".into(), "b\0".into()];
        let a = normalise(&raw, &ctx(), &Lexical);
        assert_eq!(a.operation, Operation::Unknown);
        assert_eq!(a.unknown, Some(UnknownReason::NulByte));
        assert_eq!(a.paths, vec!["/ws/a".to_owned()]);
    }

    #[test]
    fn urls_and_methods_are_parsed() {
        let mut raw = RawAction::new(Operation::NetRequest, "web__fetch".into());
        raw.url = Some("https://Example.com/x".into());
        raw.method = Some("get".into());
        let a = normalise(&raw, &ctx(), &Lexical);
        assert_eq!(a.operation, Operation::NetRequest);
        assert_eq!(a.net.map(|n| n.host), Some("example.com".into()));
        assert_eq!(a.method.as_deref(), Some("GET"));
        raw.url = Some("file:///etc/passwd".into());
        assert_eq!(
            normalise(&raw, &ctx(), &Lexical).unknown,
            Some(UnknownReason::UnsupportedScheme)
        );
    }
}
