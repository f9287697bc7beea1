//! MCP tool definitions (name, description, inputSchema, outputSchema, annotations) for the built-in tools, and
//! the policy adapter that reads their arguments as resources. Both come from one table: each argument is
//! declared once with its schema and what it is to the policy (a path, a patch, a program, or inert), so the
//! schema a client sees and the resources the policy decides on cannot drift apart.
//!
//! These are the contract the agent sees; the handlers in `builtin` must accept exactly these inputs (their
//! argument structs deny unknown fields). This module only describes and classifies; it does not validate or
//! dispatch. Output schemas use single types only (no `"type": [..., "null"]`, which not every client renders);
//! an absent value is an absent property.

use policy::{Access, Operation, RawAction, Scope, UnknownReason};
use serde_json::{json, Value};

/// Tool names, as exposed to clients.
pub const LIST_DIRECTORY: &str = "filesystem_list_directory";
/// See [`LIST_DIRECTORY`].
pub const READ_FILE: &str = "filesystem_read_file";
/// See [`LIST_DIRECTORY`].
pub const WRITE_FILE: &str = "filesystem_write_file";
/// See [`LIST_DIRECTORY`].
pub const APPLY_PATCH: &str = "filesystem_apply_patch";
/// See [`LIST_DIRECTORY`].
pub const GIT_STATUS: &str = "git_status";
/// See [`LIST_DIRECTORY`].
pub const GIT_DIFF: &str = "git_diff";
/// See [`LIST_DIRECTORY`].
pub const SHELL_RUN: &str = "shell_run";
/// See [`LIST_DIRECTORY`].
pub const LOCK_ACQUIRE: &str = "filesystem_lock_acquire";
/// See [`LIST_DIRECTORY`].
pub const LOCK_RELEASE: &str = "filesystem_lock_release";

/// Every outcome a call of a built-in tool can answer with: the tool's own, and the gateway's approval outcomes
/// (a held call answers with its approval handle in the same `structuredContent`, which clients validate).
const OUTCOMES: [&str; 12] = [
    "APPROVAL_REQUIRED",
    "APPROVAL_PENDING",
    "APPROVAL_APPROVED",
    "APPROVAL_REJECTED",
    "APPROVAL_EXPIRED",
    "APPROVAL_CONSUMED",
    "SUCCEEDED",
    "COMMAND_FAILED",
    "TIMED_OUT",
    "CONFLICT",
    "REFUSED",
    "FAILED",
];

fn error_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "message": {"type": "string"},
            "retryable": {"type": "boolean"}
        },
        "required": ["code", "message", "retryable"]
    })
}

/// Output schema: the common `outcome`/`error` envelope plus tool-specific properties.
fn output(extra: Value) -> Value {
    let mut properties = json!({
        "outcome": {"type": "string", "enum": OUTCOMES},
        "error": error_schema()
    });
    if let (Some(p), Some(e)) = (properties.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    json!({"type": "object", "properties": properties, "required": ["outcome"]})
}

fn capture_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "total_bytes": {"type": "integer"},
            "retained_bytes": {"type": "integer"},
            "dropped_bytes": {"type": "integer"}
        }
    })
}

fn process_output(extra: Value) -> Value {
    let mut base = json!({
        "exit_code": {"type": "integer"},
        "signal": {"type": "integer"},
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "stdout_capture": capture_schema(),
        "stderr_capture": capture_schema(),
        "duration_ms": {"type": "integer"},
        "sandbox": {"type": "array", "items": {"type": "object"}}
    });
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    output(base)
}

fn annotations(title: &str, read_only: bool, destructive: bool, idempotent: bool) -> Value {
    json!({
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": false
    })
}

/// A lease id as `filesystem_lock_acquire` returns it; one that is not is simply no lease.
fn lease_schema() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64})
}

fn paths_schema() -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": "Workspace-relative paths to limit to."})
}

/// What one argument is to the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A workspace path; the value is the default when the argument is absent.
    Path(Option<&'static str>),
    /// A list of workspace paths; the value is the default when the argument is absent or empty.
    Paths(&'static str),
    /// A unified diff: every file it touches is a resource.
    Patch,
    /// The program of a command.
    Program,
    /// The arguments of a command.
    Argv,
    /// The working directory of a command (a path resource).
    Cwd,
    /// A SHA-256 the current content must have: a guess can be confirmed, so it reads the file.
    ContentHash,
    /// Not a resource (content to write, flags, limits).
    Inert,
}

/// One argument: its name, whether it is required, its schema and its role.
pub struct Arg {
    pub name: &'static str,
    pub required: bool,
    pub schema: Value,
    pub role: Role,
}

/// One built-in tool: what a client sees and what the policy reads.
pub struct Tool {
    pub name: &'static str,
    description: &'static str,
    pub args: Vec<Arg>,
    /// The operation on the path arguments, and how far beneath them it reaches.
    pub operation: Operation,
    scope: Scope,
    /// Further operations on the same paths (a diff reads the files it compares).
    also: &'static [(Operation, Scope)],
    output: Value,
    annotations: Value,
}

fn arg(name: &'static str, required: bool, schema: Value, role: Role) -> Arg {
    Arg {
        name,
        required,
        schema,
        role,
    }
}

fn string() -> Value {
    json!({"type": "string"})
}

/// Every built-in tool, in a stable order: built once per process (their schemas are a few hundred JSON nodes,
/// and the policy's adapter and the guard look a tool up on every call of toolgate's own tools).
pub fn tools() -> &'static [Tool] {
    static TOOLS: std::sync::LazyLock<Vec<Tool>> = std::sync::LazyLock::new(build);
    &TOOLS
}

fn build() -> Vec<Tool> {
    use Operation::{FsRead, FsWrite, GitRead, ShellExec};
    vec![
        Tool {
            name: LIST_DIRECTORY,
            description: "List a directory inside the workspace. Symlinks are listed, not followed.",
            args: vec![arg(
                "path",
                false,
                json!({"type": "string", "description": "Workspace-relative directory; default the root."}),
                Role::Path(Some(".")),
            )],
            operation: FsRead,
            scope: Scope::Children,
            also: &[],
            output: output(json!({
                "path": {"type": "string"},
                "entries": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "type": {"type": "string"}, "size": {"type": "integer"}}}},
                "truncated": {"type": "boolean"}
            })),
            annotations: annotations("List directory", true, false, true),
        },
        Tool {
            name: READ_FILE,
            description: "Read a text file inside the workspace. Binary files are reported with size and hash only.",
            args: vec![arg("path", true, string(), Role::Path(None))],
            operation: FsRead,
            scope: Scope::Exact,
            also: &[],
            output: output(json!({
                "path": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"},
                "binary": {"type": "boolean"},
                "content": {"type": "string", "description": "Absent for binary files."}
            })),
            annotations: annotations("Read file", true, false, true),
        },
        Tool {
            name: WRITE_FILE,
            description: "Atomically write a text file inside the workspace. Pass expected_hash (SHA-256 of the current content, from a read) to fail with CONFLICT if it changed, and lock_lease_id when you hold the file's lock. A file another holder locked is refused with LOCK_CONFLICT.",
            args: vec![
                arg("path", true, string(), Role::Path(None)),
                arg("content", true, string(), Role::Inert),
                arg(
                    "expected_hash",
                    false,
                    json!({"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}),
                    Role::ContentHash,
                ),
                arg("lock_lease_id", false, lease_schema(), Role::Inert),
            ],
            operation: FsWrite,
            scope: Scope::Exact,
            also: &[],
            output: output(json!({
                "path": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"},
                "created": {"type": "boolean"}
            })),
            annotations: annotations("Write file", false, true, true),
        },
        Tool {
            name: APPLY_PATCH,
            description: "Apply a unified diff to files in the workspace: every hunk applies, or nothing is written. A file another holder locked is refused with LOCK_CONFLICT; name your leases in lock_lease_ids.",
            args: vec![
                arg("patch", true, string(), Role::Patch),
                arg(
                    "lock_lease_ids",
                    false,
                    json!({"type": "object", "additionalProperties": lease_schema(),
                           "description": "The lease (from filesystem_lock_acquire) each locked file is written under, by path."}),
                    Role::Inert,
                ),
            ],
            operation: FsWrite,
            scope: Scope::Exact,
            also: &[],
            output: output(json!({
                "files": {"type": "array", "items": {"type": "object", "properties": {
                    "path": {"type": "string"}, "action": {"type": "string"}, "hunks": {"type": "integer"},
                    "sha256": {"type": "string", "description": "Absent for deleted files."}}}}
            })),
            annotations: annotations("Apply patch", false, true, false),
        },
        Tool {
            name: LOCK_ACQUIRE,
            description: "Take an advisory lock on a workspace file before changing what you read, so other agents' writes to it are refused until you release it or it lapses (ttl_seconds, default 300, at most 3600). Pass your lease_id again to renew. Returns the lease_id that filesystem_write_file and filesystem_apply_patch take. A file someone else holds is refused with LOCK_CONFLICT.",
            args: vec![
                arg("path", true, string(), Role::Path(None)),
                arg("owner", false, json!({"type": "string", "maxLength": 64,
                                            "description": "Who holds it, as others are shown."}), Role::Inert),
                arg("ttl_seconds", false, json!({"type": "integer", "minimum": 1, "maximum": 3600}), Role::Inert),
                arg("lease_id", false, lease_schema(), Role::Inert),
            ],
            // A lock holds other writers back: only a caller that may write the file may take it.
            operation: FsWrite,
            scope: Scope::Exact,
            also: &[],
            output: output(json!({
                "path": {"type": "string"}, "lease_id": {"type": "string"}, "owner": {"type": "string"},
                "expires_at": {"type": "string"}, "ttl_seconds": {"type": "integer"}, "renewed": {"type": "boolean"}
            })),
            annotations: annotations("Lock file", false, false, false),
        },
        Tool {
            name: LOCK_RELEASE,
            description: "Release an advisory lock you hold on a workspace file (its lease_id). released is false when no lease held it any more.",
            args: vec![
                arg("path", true, string(), Role::Path(None)),
                arg("lease_id", true, lease_schema(), Role::Inert),
            ],
            // Giving up one's own lease changes no file and holds nobody back.
            operation: FsRead,
            scope: Scope::Exact,
            also: &[],
            output: output(json!({"path": {"type": "string"}, "released": {"type": "boolean"}})),
            annotations: annotations("Unlock file", false, false, true),
        },
        Tool {
            name: GIT_STATUS,
            description: "Read-only `git status` of the workspace repository.",
            args: vec![arg("paths", false, paths_schema(), Role::Paths("."))],
            operation: GitRead,
            scope: Scope::Exact,
            // Status names files anywhere beneath the paths.
            also: &[(FsRead, Scope::NamesBeneath)],
            output: process_output(json!({
                "branch": {"type": "string", "description": "Absent when detached or unborn."},
                "entries": {"type": "array", "items": {"type": "object", "properties": {
                    "status": {"type": "string"}, "path": {"type": "string"}}}}
            })),
            annotations: annotations("Git status", true, false, true),
        },
        Tool {
            name: GIT_DIFF,
            description: "Read-only `git diff` of the work tree (or the index with staged=true), optionally against a base revision.",
            args: vec![
                arg("staged", false, json!({"type": "boolean"}), Role::Inert),
                arg("base", false, string(), Role::Inert),
                arg("paths", false, paths_schema(), Role::Paths(".")),
            ],
            operation: GitRead,
            scope: Scope::Exact,
            // A diff prints the content of the files beneath the paths.
            also: &[(FsRead, Scope::ContentBeneath)],
            output: process_output(json!({})),
            annotations: annotations("Git diff", true, false, true),
        },
        Tool {
            name: SHELL_RUN,
            description: "Run one program with an argument vector (no shell string) in the workspace, inside the sandbox. Requires approval.",
            args: vec![
                arg("program", true, string(), Role::Program),
                arg("args", false, json!({"type": "array", "items": {"type": "string"}}), Role::Argv),
                arg("cwd", false, string(), Role::Cwd),
                arg("timeout_seconds", false, json!({"type": "integer", "minimum": 1}), Role::Inert),
            ],
            operation: ShellExec,
            scope: Scope::Exact,
            also: &[],
            output: process_output(json!({})),
            annotations: annotations("Run command", false, true, false),
        },
    ]
}

impl Tool {
    /// The MCP definition a client sees.
    pub fn definition(&self) -> Value {
        let properties: serde_json::Map<String, Value> = self
            .args
            .iter()
            .map(|a| (a.name.to_owned(), a.schema.clone()))
            .collect();
        let required: Vec<&str> = self
            .args
            .iter()
            .filter(|a| a.required)
            .map(|a| a.name)
            .collect();
        let mut schema =
            json!({"type": "object", "properties": properties, "additionalProperties": false});
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": schema,
            "outputSchema": self.output,
            "annotations": self.annotations,
        })
    }

    /// The resources a call of this tool touches, read by each argument's role.
    pub fn adapt(&self, name: String, args: &Value) -> RawAction {
        match self.read(name.clone(), args) {
            Ok(raw) => raw,
            Err(reason) => RawAction::new(self.operation, name).unknown(reason),
        }
    }

    fn read(&self, name: String, args: &Value) -> Result<RawAction, UnknownReason> {
        let known: Vec<&str> = self.args.iter().map(|a| a.name).collect();
        policy::only_known_arguments(args, &known)?;
        let mut paths = Vec::new();
        let (mut program, mut argv, mut cwd) = (None, Vec::new(), None);
        let mut reads = Vec::new();
        let (mut deletes, mut writes_only) = (Vec::new(), Vec::new());
        for a in &self.args {
            let present = !matches!(args.get(a.name), None | Some(Value::Null));
            if a.required && !present {
                return Err(UnknownReason::MissingArgument);
            }
            match a.role {
                Role::Path(default) => match (policy::str_arg(args, a.name)?, default) {
                    (Some(p), _) => paths.push(p.to_owned()),
                    (None, Some(d)) => paths.push(d.to_owned()),
                    (None, None) => {}
                },
                Role::Paths(default) => {
                    let list = policy::str_list(args, a.name)?;
                    if list.is_empty() {
                        paths.push(default.to_owned());
                    }
                    paths.extend(list);
                }
                Role::Patch => {
                    let patch = policy::required_str(args, a.name)?;
                    let targets = crate::patch::patch_targets(patch)
                        .map_err(|_| UnknownReason::BadArgument)?;
                    if targets.is_empty() {
                        return Err(UnknownReason::BadArgument);
                    }
                    for (path, action) in targets {
                        // Hunks must match the current content, so applying one confirms what a file holds.
                        match action {
                            "created" => writes_only.push(path),
                            "deleted" => {
                                reads.push(path.clone());
                                deletes.push(path);
                            }
                            _ => {
                                reads.push(path.clone());
                                paths.push(path);
                            }
                        }
                    }
                }
                Role::Program => program = policy::str_arg(args, a.name)?.map(str::to_owned),
                Role::Argv => argv = policy::str_list(args, a.name)?,
                Role::Cwd => cwd = Some(policy::str_arg(args, a.name)?.unwrap_or(".").to_owned()),
                Role::ContentHash if present => reads.push(String::new()),
                Role::ContentHash | Role::Inert => {}
            }
        }
        if let Some(program) = program {
            let mut full = vec![program];
            full.extend(argv);
            return Ok(policy::command_action(name, full, cwd));
        }
        // A hash check reads the file the tool writes.
        if reads.iter().any(String::is_empty) {
            reads = paths.clone();
        }
        paths.extend(writes_only);
        let mut raw = RawAction::new(self.operation, name);
        raw.scope = self.scope;
        for (op, scope) in self.also {
            raw = raw.with_access(Access::new(*op, paths.clone(), *scope));
        }
        if !reads.is_empty() {
            raw = raw.with_access(Access::new(Operation::FsRead, reads, Scope::Exact));
        }
        if !deletes.is_empty() {
            raw = raw.with_access(Access::new(
                Operation::FsDelete,
                deletes.clone(),
                Scope::Exact,
            ));
            paths.extend(deletes);
        }
        raw.paths = paths;
        Ok(raw)
    }
}

/// Every built-in tool definition, in a stable order.
pub fn tool_definitions() -> Vec<Value> {
    tools().iter().map(Tool::definition).collect()
}

/// The policy adapter of the built-in tools (`tool` as exposed, `name` as rules see it); an unknown tool is
/// `unknown`.
pub fn adapt(tool: &str, name: String, args: &Value) -> RawAction {
    match tools().iter().find(|t| t.name == tool) {
        Some(t) => t.adapt(name, args),
        None => RawAction::new(Operation::Unknown, name).unknown(UnknownReason::UnknownTool),
    }
}

#[cfg(test)]
#[path = "definitions_tests.rs"]
mod tests;
