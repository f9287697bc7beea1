//! The built-in tool server: configuration, dispatch by tool name, and results as Contract V1 JSON.
//!
//! The gateway calls this after policy and approval; nothing here decides whether a call is allowed. File and
//! process work is blocking, so async entry points move it to tokio's blocking pool. Domain refusals become
//! structured results (`outcome` + `error`); malformed arguments and unknown tools are returned as `Err`.

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::confine::Workspace;
use crate::definitions as names;
use crate::error::{Error, Result};
use crate::fsops;
use crate::git::{self, parse_status, Git, GitDiffArgs, GitStatusArgs};
use crate::leases::Leases;

/// The caller of a tool called without an identity: every unauthenticated caller is this one identity, as in
/// the gateway's bounds.
const LOCAL_CALLER: &str = "local";
use crate::patch;
use crate::shell::{self, CommandSnapshot, ShellRequest, ShellSettings};

/// Size caps for file tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest file `filesystem_read_file` returns.
    pub max_read_bytes: u64,
    /// Largest content `filesystem_write_file` accepts (and largest file a patch may touch or produce).
    pub max_write_bytes: u64,
    /// Largest patch text.
    pub max_patch_bytes: u64,
    /// Most entries a listing returns.
    pub max_list_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_read_bytes: 1 << 20,
            max_write_bytes: 4 << 20,
            max_patch_bytes: 1 << 20,
            max_list_entries: 1000,
        }
    }
}

/// Everything the built-in tools need from configuration.
#[derive(Debug, Clone)]
pub struct BuiltinConfig {
    /// Workspace root (absolute, existing); canonicalised once by [`Builtin::new`].
    pub workspace_root: PathBuf,
    /// File size caps.
    pub limits: Limits,
    /// `shell_run` settings.
    pub shell: ShellSettings,
    /// Sandbox layers for shell and git. For shell runs the workspace root is appended to `writable_paths`;
    /// git gets no writable path of its own. Scratch space is the sandbox's private temporary directory
    /// (`private_tmp`), never the shared one, which may hold the state root.
    pub sandbox: sandbox::LayerRequest,
    /// The state store the advisory file locks live in (`leases`); `None`: no locks.
    pub leases: Option<Arc<dyn store::StateStore>>,
}

impl BuiltinConfig {
    /// Defaults for a workspace root.
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            limits: Limits::default(),
            shell: ShellSettings::default(),
            sandbox: sandbox::LayerRequest::default(),
            leases: None,
        }
    }
}

/// A tool result: the Contract V1 outcome and the structured content.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// `SUCCEEDED`, `COMMAND_FAILED`, `TIMED_OUT`, `CONFLICT`, `REFUSED` or `FAILED`.
    pub outcome: String,
    /// The `structuredContent` object (always has `outcome`).
    pub structured: Value,
    /// MCP `isError`: true unless the tool did its job (a command that ran and exited non-zero did).
    pub is_error: bool,
}

/// Removes null-valued properties at every depth: the output schemas use single types, so an absent value is an
/// absent property rather than `null`.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

impl ToolOutcome {
    pub(crate) fn ok(mut structured: Value) -> Self {
        drop_nulls(&mut structured);
        if let Some(o) = structured.as_object_mut() {
            o.insert("outcome".into(), json!("SUCCEEDED"));
        }
        Self {
            outcome: "SUCCEEDED".into(),
            structured,
            is_error: false,
        }
    }

    /// The structured result for a domain error, or `None` when it must stay a protocol error.
    pub fn from_error(error: &Error) -> Option<Self> {
        let c = error.classify()?;
        Some(Self {
            outcome: c.outcome.into(),
            structured: json!({
                "outcome": c.outcome,
                "error": {"code": c.code, "message": error.to_string(), "retryable": c.retryable}
            }),
            is_error: true,
        })
    }

    fn from_run(run: &sandbox::RunResult, extra: Value) -> Self {
        let outcome = serde_json::to_value(run.outcome)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_else(|| "FAILED".into());
        let mut structured = json!({
            "outcome": outcome,
            "exit_code": run.exit.code,
            "signal": run.exit.signal,
            "stdout": run.stdout.text,
            "stderr": run.stderr.text,
            "stdout_capture": capture(&run.stdout),
            "stderr_capture": capture(&run.stderr),
            "duration_ms": run.duration_ms,
            "sandbox": run.layers.entries,
        });
        if let Some(failure) = &run.failure {
            structured["error"] =
                json!({"code": "SPAWN_FAILED", "message": failure, "retryable": false});
        }
        if let (Some(s), Some(e)) = (structured.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        drop_nulls(&mut structured);
        let is_error = !matches!(
            run.outcome,
            sandbox::Outcome::Succeeded | sandbox::Outcome::CommandFailed
        );
        Self {
            outcome,
            structured,
            is_error,
        }
    }

    /// The MCP `CallToolResult` JSON: a text rendering plus `structuredContent`.
    pub fn to_call_result(&self) -> Value {
        json!({
            "content": [{"type": "text", "text": self.structured.to_string()}],
            "structuredContent": self.structured,
            "isError": self.is_error
        })
    }
}

fn capture(c: &sandbox::Capture) -> Value {
    json!({"total_bytes": c.total_bytes, "retained_bytes": c.retained_bytes, "dropped_bytes": c.dropped_bytes})
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
    #[serde(default)]
    expected_hash: Option<String>,
    #[serde(default)]
    lock_lease_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    patch: String,
    /// The lease each locked file is written under, by path.
    #[serde(default)]
    lock_lease_ids: std::collections::BTreeMap<String, String>,
}

pub(crate) fn parse<T: DeserializeOwned>(args: Value) -> Result<T> {
    // A missing arguments object means "no arguments".
    let args = if args.is_null() { json!({}) } else { args };
    serde_json::from_value(args).map_err(|e| Error::InvalidArguments(e.to_string()))
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

struct Inner {
    ws: Workspace,
    config: BuiltinConfig,
    git: Git,
    leases: Leases,
}

/// The built-in tools bound to one frozen workspace. Cheap to clone.
#[derive(Clone)]
pub struct Builtin {
    inner: Arc<Inner>,
}

impl Builtin {
    /// Opens (and freezes) the workspace.
    pub fn new(config: BuiltinConfig) -> Result<Self> {
        let ws = Workspace::open(&config.workspace_root)?;
        let git = Git::new(config.sandbox.clone());
        let leases = Leases::new(config.leases.clone());
        Ok(Self {
            inner: Arc::new(Inner {
                ws,
                config,
                git,
                leases,
            }),
        })
    }

    /// The frozen workspace (for path normalisation before policy).
    pub fn workspace(&self) -> &Workspace {
        &self.inner.ws
    }

    /// What the tools were configured with (their size caps and `shell_run` settings), for discovery tools that
    /// tell an agent its public limits.
    pub fn config(&self) -> &BuiltinConfig {
        &self.inner.config
    }

    /// Calls a tool by name for the local caller. `Err` only for unknown tools and malformed arguments (protocol
    /// errors).
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutcome> {
        self.call_as(name, args, LOCAL_CALLER).await
    }

    /// Calls a tool by name for `caller`, the identity the front end authenticated: what a caller may hold
    /// (file leases) is counted against its share.
    pub async fn call_as(&self, name: &str, args: Value, caller: &str) -> Result<ToolOutcome> {
        let this = self.clone();
        let (name, caller) = (name.to_string(), caller.to_string());
        tokio::task::spawn_blocking(move || this.call_blocking_as(&name, args, &caller))
            .await
            .map_err(|e| Error::Io(std::io::Error::other(e)))?
    }

    /// Synchronous form of [`Builtin::call`].
    pub fn call_blocking(&self, name: &str, args: Value) -> Result<ToolOutcome> {
        self.call_blocking_as(name, args, LOCAL_CALLER)
    }

    fn call_blocking_as(&self, name: &str, args: Value, caller: &str) -> Result<ToolOutcome> {
        match self.dispatch(name, args, caller) {
            Ok(outcome) => Ok(outcome),
            Err(e) => ToolOutcome::from_error(&e).ok_or(e),
        }
    }

    fn dispatch(&self, name: &str, args: Value, caller: &str) -> Result<ToolOutcome> {
        let ws = &self.inner.ws;
        let limits = &self.inner.config.limits;
        match name {
            names::LIST_DIRECTORY => {
                let a: ListArgs = parse(args)?;
                let rel = ws.relative(a.path.as_deref().unwrap_or("."))?;
                let listing = fsops::list_directory(ws, &rel, limits.max_list_entries)?;
                Ok(ToolOutcome::ok(to_value(&listing)))
            }
            names::READ_FILE => {
                let a: ReadArgs = parse(args)?;
                let rel = ws.relative(&a.path)?;
                Ok(ToolOutcome::ok(to_value(&fsops::read_file(
                    ws,
                    &rel,
                    limits.max_read_bytes,
                )?)))
            }
            names::WRITE_FILE => {
                let a: WriteArgs = parse(args)?;
                let rel = ws.relative(&a.path)?;
                self.inner
                    .leases
                    .check_write(&rel, a.lock_lease_id.as_deref())?;
                let written = fsops::write_file(
                    ws,
                    &rel,
                    a.content.as_bytes(),
                    a.expected_hash.as_deref(),
                    limits.max_write_bytes,
                )?;
                Ok(ToolOutcome::ok(to_value(&written)))
            }
            names::APPLY_PATCH => {
                let a: PatchArgs = parse(args)?;
                if a.patch.len() as u64 > limits.max_patch_bytes {
                    return Err(Error::TooLarge {
                        what: "patch".into(),
                        size: a.patch.len() as u64,
                        limit: limits.max_patch_bytes,
                    });
                }
                self.check_patch_locks(&a)?;
                let files = patch::apply_patch(ws, &a.patch, limits.max_write_bytes)?;
                Ok(ToolOutcome::ok(json!({ "files": files })))
            }
            names::LOCK_ACQUIRE => self.inner.leases.acquire(ws, args, caller),
            names::LOCK_RELEASE => self.inner.leases.release(ws, args),
            names::GIT_STATUS => {
                let a: GitStatusArgs = parse(args)?;
                let run = self.inner.git.status(ws, &a)?;
                let (branch, entries) = parse_status(&run.stdout.text);
                Ok(ToolOutcome::from_run(
                    &run,
                    json!({"branch": branch, "entries": entries}),
                ))
            }
            names::GIT_DIFF => {
                let a: GitDiffArgs = parse(args)?;
                let run = self.inner.git.diff(ws, &a)?;
                Ok(ToolOutcome::from_run(&run, json!({})))
            }
            names::SHELL_RUN => {
                let snapshot = self.prepare_command(args)?;
                self.run_snapshot(&snapshot)
            }
            other => Err(Error::UnknownTool(other.to_string())),
        }
    }

    /// Every file a patch touches passes the lock check, under the lease `lock_lease_ids` names for it; a lease
    /// named for a file the patch does not touch is a mistake, refused before anything is written.
    fn check_patch_locks(&self, a: &PatchArgs) -> Result<()> {
        let ws = &self.inner.ws;
        let mut leases = std::collections::BTreeMap::new();
        for (path, lease) in &a.lock_lease_ids {
            leases.insert(ws.relative(path)?.display(), lease.as_str());
        }
        let mut touched = Vec::new();
        for (path, _) in patch::patch_targets(&a.patch)? {
            let rel = ws.relative(&path)?;
            let lease = leases.remove(&rel.display());
            touched.push((rel, lease));
        }
        if let Some(stray) = leases.keys().next() {
            return Err(Error::InvalidArguments(format!(
                "lock_lease_ids names {stray}, which the patch does not touch"
            )));
        }
        touched
            .iter()
            .try_for_each(|(rel, lease)| self.inner.leases.check_write(rel, *lease))
    }

    /// Step one of `shell_run`: resolve and fingerprint the executable into the snapshot an approval binds.
    pub fn prepare_command(&self, args: Value) -> Result<CommandSnapshot> {
        let request: ShellRequest = parse(args)?;
        let ws = &self.inner.ws;
        let mut snapshot = shell::prepare(ws, &self.inner.config.shell, request)?;
        // A read-only git still runs what the repository's config names (fsmonitor, diff and filter drivers):
        // it gets the built-in git tools' hardening through its environment, which the approval binds.
        if let Some(globals) = git::read_only_globals(&snapshot) {
            let cwd = ws.absolute(&ws.relative(&snapshot.cwd)?);
            let top = git::work_tree_top(&cwd, &globals)?;
            let overrides = self.inner.git.driver_overrides(ws, &cwd, &globals)?;
            git::harden_env(ws, &top, &mut snapshot.env, &overrides);
        }
        Ok(snapshot)
    }

    /// Step two: re-validate the executable and run the approved snapshot in the sandbox.
    /// A changed executable is refused with `EXECUTABLE_CHANGED` and nothing runs.
    pub async fn run_approved(&self, snapshot: CommandSnapshot) -> Result<ToolOutcome> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || match this.run_snapshot(&snapshot) {
            Ok(o) => Ok(o),
            Err(e) => ToolOutcome::from_error(&e).ok_or(e),
        })
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))?
    }

    fn run_snapshot(&self, snapshot: &CommandSnapshot) -> Result<ToolOutcome> {
        let mut spec = shell::verify(&self.inner.ws, snapshot)?;
        if let Some(globals) = git::read_only_globals(snapshot) {
            // Checked again when it runs: the work tree may have changed while an approval waited.
            let ws = &self.inner.ws;
            git::work_tree_top(&ws.absolute(&ws.relative(&snapshot.cwd)?), &globals)?;
        }
        let config = &self.inner.config;
        spec.layers = config.sandbox.clone();
        spec.layers
            .writable_paths
            .push(self.inner.ws.root().to_path_buf());
        let run = sandbox::run(&spec)?;
        Ok(ToolOutcome::from_run(&run, json!({})))
    }
}
