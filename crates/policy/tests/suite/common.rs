//! Shared helpers: a fixed context, policy loading from JSON, call builders and a fake canonicaliser.

use policy::{
    Action, Context, Decision, Lexical, Operation, Policy, PolicySources, RawAction, ServerKind,
    Servers, ToolCall, UnknownReason,
};
use serde_json::Value;

pub const WS: &str = "/ws";

pub fn ctx() -> Context {
    Context {
        workspace: WS.into(),
        home: Some("/home/u".into()),
    }
}

/// Loads `{"policy": ..., "permissions": ..., "profiles": ...}` (each optional).
pub fn load(doc: &Value) -> Policy {
    try_load(doc).unwrap_or_else(|e| panic!("policy failed to load: {e}"))
}

pub fn try_load(doc: &Value) -> policy::Result<Policy> {
    Policy::load(sources(doc), &ctx()).map(|p| p.with_servers(servers()))
}

/// The servers these tests call: a filesystem server `files` started on the workspace, and toolgate's
/// `shell_run` as a stand-in for its own tools (their real adapter lives with their definitions, and the
/// gateway's suite runs it).
pub fn servers() -> Servers {
    let mut servers = Servers {
        own: Some(own_tools),
        ..Servers::default()
    };
    servers
        .filesystem_dirs
        .insert("files".into(), vec![WS.to_owned()]);
    servers
}

fn own_tools(tool: &str, name: String, args: &Value) -> RawAction {
    let program = args.get("program").and_then(Value::as_str);
    match (tool, program) {
        ("shell_run", Some(program)) => {
            let mut argv = vec![program.to_owned()];
            argv.extend(policy::str_list(args, "args").unwrap_or_default());
            let cwd = args.get("cwd").and_then(Value::as_str).unwrap_or(".");
            policy::command_action(name, argv, Some(cwd.to_owned()))
        }
        _ => RawAction::new(Operation::Unknown, name).unknown(UnknownReason::UnknownTool),
    }
}

pub fn sources(doc: &Value) -> PolicySources<'_> {
    PolicySources {
        policy: doc.get("policy"),
        permissions: doc.get("permissions"),
        profiles: doc.get("profiles"),
    }
}

pub fn call(server: &str, tool: &str, args: Value, kind: Option<ServerKind>) -> ToolCall {
    ToolCall::new(server, tool, args, kind)
}

pub fn fs_read(path: &str) -> ToolCall {
    call(
        "files",
        "read_file",
        serde_json::json!({ "path": path }),
        Some(ServerKind::Filesystem),
    )
}

pub fn shell(program: &str, args: &[&str]) -> ToolCall {
    call(
        "toolgate",
        "shell_run",
        serde_json::json!({ "program": program, "args": args }),
        Some(ServerKind::Toolgate),
    )
}

pub fn fetch(url: &str) -> ToolCall {
    call(
        "web",
        "fetch",
        serde_json::json!({ "url": url }),
        Some(ServerKind::Fetch),
    )
}

pub fn action(p: &Policy, c: &ToolCall) -> Action {
    p.action_for(c, &Lexical)
}

pub fn decide(p: &Policy, c: &ToolCall) -> Decision {
    p.decide_call(c, &Lexical)
}

/// A canonicaliser standing in for the filesystem: `links` maps a path prefix to its symlink target.
pub struct FakeFs {
    pub links: Vec<(String, String)>,
}

impl policy::Canonicalise for FakeFs {
    fn canonicalise(&self, path: &str) -> Option<String> {
        for (from, to) in &self.links {
            if path == from {
                return Some(to.clone());
            }
            if let Some(rest) = path.strip_prefix(&format!("{from}/")) {
                return Some(format!("{to}/{rest}"));
            }
        }
        Some(path.to_owned())
    }
}
