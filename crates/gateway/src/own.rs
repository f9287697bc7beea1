//! toolgate's own tools by name: the server name they have in rules, each tool's name, and `OwnTool`, the one
//! type the gateway dispatches them on, parsed once when a call is routed; and the surfaces they are listed
//! under (`Surface`): toolgate's own names, or ToolHub's 14 (`TOOLHUB`), each standing for one own tool. A leaf:
//! it imports nothing of the crate, so the many files that need only a name do not pull the rest of the gateway
//! in with it. It names tools; their definitions, results and execution live with the stages that own them.

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
/// Runs an approved `filesystem_write_file` request, once (ToolHub's `filesystem.write_file_approved`).
pub const WRITE_FILE_APPROVED: &str = "filesystem_write_file_approved";
/// Runs an approved `filesystem_apply_patch` request, once (ToolHub's `filesystem.apply_patch_approved`).
pub const APPLY_PATCH_APPROVED: &str = "filesystem_apply_patch_approved";
/// Runs an approved `shell_run` request, once (ToolHub's `shell.run_approved`).
pub const SHELL_RUN_APPROVED: &str = "shell_run_approved";

/// The resume tools bound to one tool: each resumes only requests of the tool it names.
const APPROVED: [(&str, &str); 3] = [
    (WRITE_FILE_APPROVED, builtin::WRITE_FILE),
    (APPLY_PATCH_APPROVED, builtin::APPLY_PATCH),
    (SHELL_RUN_APPROVED, builtin::SHELL_RUN),
];

/// The names toolgate's own tools are listed under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Surface {
    /// toolgate's own: `toolgate_status`, `toolgate_resume`, `filesystem_read_file`, …
    #[default]
    Toolgate,
    /// ToolHub's 14 tools, as `mcp-toolhub` lists them (`TOOLHUB`).
    ToolHub,
}

/// ToolHub's tools, in its order: the name ToolHub lists, and the own tool that name stands for. Exactly these
/// are listed on the ToolHub surface; the approval-gated ones resume through their `*_approved` tool.
pub const TOOLHUB: [(&str, &str); 14] = [
    ("toolhub.ping", PING),
    ("toolhub.audit_recent", AUDIT_RECENT),
    ("toolhub.capabilities", CAPABILITIES),
    ("toolhub.request_status", REQUEST_STATUS),
    ("filesystem.list_directory", builtin::LIST_DIRECTORY),
    ("filesystem.read_file", builtin::READ_FILE),
    ("filesystem.write_file", builtin::WRITE_FILE),
    ("filesystem.write_file_approved", WRITE_FILE_APPROVED),
    ("filesystem.apply_patch", builtin::APPLY_PATCH),
    ("filesystem.apply_patch_approved", APPLY_PATCH_APPROVED),
    ("git.status", builtin::GIT_STATUS),
    ("git.diff", builtin::GIT_DIFF),
    ("shell.run", builtin::SHELL_RUN),
    ("shell.run_approved", SHELL_RUN_APPROVED),
];

/// The own tool a name listed under a product's surface stands for (`filesystem.read_file` is
/// `filesystem_read_file`); `None` for any other name. toolgate's own names are not product names, so the
/// answer does not depend on the surface served.
pub fn internal(listed: &str) -> Option<&'static str> {
    TOOLHUB.iter().find(|(n, _)| *n == listed).map(|(_, t)| *t)
}

/// The name ToolHub lists own tool `tool` under, if it lists it.
pub fn toolhub_name(tool: &str) -> Option<&'static str> {
    TOOLHUB.iter().find(|(_, t)| *t == tool).map(|(n, _)| *n)
}

/// The tool that resumes a held call of own tool `tool` that the client called as `called`: the call's own
/// `*_approved` tool when it was called by its ToolHub name, else `toolgate_resume`.
pub fn resume_tool(server: &str, tool: &str, called: &str) -> &'static str {
    Resumer::of(server, tool, called).name()
}

/// The tool a held call resumes through (`resume_tool`), one byte: it travels in every held answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resumer(u8);

impl Resumer {
    /// `toolgate_resume`.
    pub const TOOLGATE: Self = Self(0);

    /// See [`resume_tool`].
    pub fn of(server: &str, tool: &str, called: &str) -> Self {
        let toolhub = server == OWN_SERVER && internal(called) == Some(tool);
        (1u8..)
            .zip(APPROVED)
            .find(|(_, (_, target))| toolhub && *target == tool)
            .map_or(Self::TOOLGATE, |(i, _)| Self(i))
    }

    pub fn name(self) -> &'static str {
        match self
            .0
            .checked_sub(1)
            .and_then(|i| APPROVED.get(usize::from(i)))
        {
            Some((approved, _)) => toolhub_name(approved).unwrap_or(RESUME),
            None => RESUME,
        }
    }
}

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
    /// A resume bound to one built-in tool (ToolHub's `*_approved` tools): it resumes only that tool's
    /// requests; any other request id is answered as not found.
    ResumeOf(&'static str),
    /// A built-in workspace tool (`fs_read`, `shell_run`, …), by its name; the built-in executor knows them
    /// and refuses any other.
    Builtin(String),
}

impl OwnTool {
    /// Every own tool that is not a built-in workspace tool.
    pub const NAMED: [OwnTool; 11] = [
        OwnTool::Status,
        OwnTool::RequestStatus,
        OwnTool::Resume,
        OwnTool::Capabilities,
        OwnTool::Ping,
        OwnTool::AuditRecent,
        OwnTool::SearchTools,
        OwnTool::RunCode,
        OwnTool::ResumeOf(APPROVED[0].1),
        OwnTool::ResumeOf(APPROVED[1].1),
        OwnTool::ResumeOf(APPROVED[2].1),
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
            OwnTool::ResumeOf(target) => APPROVED
                .iter()
                .find(|(_, t)| t == target)
                .map_or(RESUME, |(approved, _)| approved),
            OwnTool::Builtin(name) => name,
        }
    }

    /// Whether this tool resumes approved requests: `Some(None)` any tool call's, `Some(Some(tool))` only
    /// `tool`'s; `None` when it is no resume.
    pub fn resumes(&self) -> Option<Option<&'static str>> {
        match self {
            OwnTool::Resume => Some(None),
            OwnTool::ResumeOf(target) => Some(Some(target)),
            _ => None,
        }
    }

    /// toolgate's read-only intrinsics: they start no process and touch no file, so the policy's default does
    /// not apply to them (a rule naming them still does) and hooks skip them.
    pub fn is_intrinsic(&self) -> bool {
        match self {
            OwnTool::Status
            | OwnTool::RequestStatus
            | OwnTool::Resume
            | OwnTool::ResumeOf(_)
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
    fn every_toolhub_name_stands_for_one_own_tool_and_gated_calls_resume_through_their_own() {
        let names: std::collections::HashSet<&str> = TOOLHUB.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), 14);
        let builtins: Vec<&str> = builtin::tools().iter().map(|t| t.name).collect();
        for (listed, tool) in TOOLHUB {
            let own = OwnTool::named(tool);
            let known = !matches!(own, OwnTool::Builtin(_)) || builtins.contains(&tool);
            assert!(
                known,
                "{listed} stands for {tool}, which toolgate does not have"
            );
            assert_eq!(internal(listed), Some(tool));
            assert_eq!(toolhub_name(tool), Some(listed));
        }
        assert_eq!(
            resume_tool(OWN_SERVER, builtin::SHELL_RUN, "shell.run"),
            "shell.run_approved"
        );
        assert_eq!(
            OwnTool::named(SHELL_RUN_APPROVED).resumes(),
            Some(Some(builtin::SHELL_RUN))
        );
        // The same tool called by toolgate's name, or an upstream's tool that happens to be called so, resumes
        // through toolgate_resume; a read is never held, but would too.
        assert_eq!(
            resume_tool(OWN_SERVER, builtin::SHELL_RUN, builtin::SHELL_RUN),
            RESUME
        );
        assert_eq!(resume_tool("shell", "run", "shell.run"), RESUME);
        assert_eq!(
            resume_tool(OWN_SERVER, builtin::READ_FILE, "filesystem.read_file"),
            RESUME
        );
        assert_eq!(internal("toolgate_status"), None);
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
