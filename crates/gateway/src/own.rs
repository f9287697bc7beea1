//! toolgate's own tools by name: the server name they have in rules, each tool's name, and `OwnTool`, the one
//! type the gateway dispatches them on, parsed once when a call is routed. A leaf: it imports nothing of the
//! crate, so the many files that need only a name do not pull the rest of the gateway in with it. It names
//! tools; their definitions, results and execution live with the stages that own them.

/// The server name toolgate's own tools have in rules (`toolgate__toolgate_status`). Config refuses an upstream
/// of this name.
pub const OWN_SERVER: &str = "toolgate";

/// Each upstream's state, what toolgate holds back, and the audit log's health.
pub const STATUS: &str = "toolgate_status";
/// Contract V1: the state of a held request.
pub const REQUEST_STATUS: &str = "toolgate_request_status";
/// Contract V1: runs an approved request, once.
pub const RESUME: &str = "toolgate_resume";
/// Contract V1: what this gateway supports.
pub const CAPABILITIES: &str = "toolgate_capabilities";
pub const PING: &str = "toolgate_ping";
/// The caller's most recent audit records.
pub const AUDIT_RECENT: &str = "toolgate_audit_recent";
/// Code mode: searches the catalog.
pub const SEARCH_TOOLS: &str = "search_tools";
/// Code mode: runs one program.
pub const RUN_CODE: &str = "run_code";

/// One of toolgate's own tools, as a routed call names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OwnTool {
    Status,
    RequestStatus,
    Resume,
    Capabilities,
    Ping,
    AuditRecent,
    SearchTools,
    RunCode,
    /// A built-in workspace tool (`fs_read`, `shell_run`, …), by its name; the built-in executor knows them
    /// and refuses any other.
    Builtin(String),
}

impl OwnTool {
    /// Every own tool that is not a built-in workspace tool.
    pub const NAMED: [OwnTool; 8] = [
        OwnTool::Status,
        OwnTool::RequestStatus,
        OwnTool::Resume,
        OwnTool::Capabilities,
        OwnTool::Ping,
        OwnTool::AuditRecent,
        OwnTool::SearchTools,
        OwnTool::RunCode,
    ];

    /// The own tool a routed `(server, tool)` names; `None` for an upstream's tool.
    pub fn parse(server: &str, tool: &str) -> Option<Self> {
        (server == OWN_SERVER).then(|| Self::named(tool))
    }

    /// The own tool called `tool`: a named one, else a built-in workspace tool of that name.
    pub fn named(tool: &str) -> Self {
        Self::NAMED
            .into_iter()
            .find(|t| t.name() == tool)
            .unwrap_or_else(|| OwnTool::Builtin(tool.to_owned()))
    }

    pub fn name(&self) -> &str {
        match self {
            OwnTool::Status => STATUS,
            OwnTool::RequestStatus => REQUEST_STATUS,
            OwnTool::Resume => RESUME,
            OwnTool::Capabilities => CAPABILITIES,
            OwnTool::Ping => PING,
            OwnTool::AuditRecent => AUDIT_RECENT,
            OwnTool::SearchTools => SEARCH_TOOLS,
            OwnTool::RunCode => RUN_CODE,
            OwnTool::Builtin(name) => name,
        }
    }

    /// toolgate's read-only intrinsics: they start no process and touch no file, so the policy's default does
    /// not apply to them (a rule naming them still does) and hooks skip them.
    pub fn is_intrinsic(&self) -> bool {
        match self {
            OwnTool::Status
            | OwnTool::RequestStatus
            | OwnTool::Resume
            | OwnTool::Capabilities
            | OwnTool::Ping
            | OwnTool::AuditRecent
            | OwnTool::SearchTools => true,
            OwnTool::RunCode | OwnTool::Builtin(_) => false,
        }
    }

    /// Answered even while the audit log cannot be written: it is how an agent learns why calls are refused.
    pub fn is_audit_exempt(&self) -> bool {
        *self == OwnTool::Status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_tool_parses_back_to_itself_and_others_are_builtins() {
        for t in OwnTool::NAMED {
            assert_eq!(OwnTool::parse(OWN_SERVER, t.name()), Some(t.clone()));
            assert_eq!(OwnTool::parse("fx", t.name()), None, "{t:?} of an upstream");
        }
        assert_eq!(
            OwnTool::parse(OWN_SERVER, "shell_run"),
            Some(OwnTool::Builtin("shell_run".into()))
        );
        let names: std::collections::HashSet<&str> =
            OwnTool::NAMED.iter().map(OwnTool::name).collect();
        assert_eq!(names.len(), OwnTool::NAMED.len());
    }

    #[test]
    fn no_builtin_workspace_tool_shares_a_name_with_a_named_own_tool() {
        for t in builtin::tools() {
            assert!(
                matches!(OwnTool::named(t.name), OwnTool::Builtin(_)),
                "{} is both a built-in tool and a named own tool",
                t.name
            );
        }
    }
}
