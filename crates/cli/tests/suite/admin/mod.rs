//! The human side: `toolgate approvals`, `toolgate audit` and `toolgate report` run as the real binary against a
//! temporary state root and workspace. Requests, audit events and reporting events are made directly through the
//! store and audit APIs in the namespace the binary resolves, standing in for a running gateway. This file holds
//! the shared setup; the tests are in the submodules.

mod approvals;
mod logs;
mod watch;

use crate::support::{operator_key, run_on_terminal, toolgate, TerminalRun};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use store::{Approval, ApprovalStatus, Namespace, Store, Timestamp};

/// A state root and two workspaces, all temporary.
pub struct Env {
    _dir: tempfile::TempDir,
    state: PathBuf,
    ws: PathBuf,
    other_ws: PathBuf,
}

pub struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (state, ws, other_ws) = (root.join("state"), root.join("ws"), root.join("other-ws"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&other_ws).unwrap();
        Self {
            _dir: dir,
            state,
            ws,
            other_ws,
        }
    }

    fn namespace(&self, ws: &Path) -> Namespace {
        Namespace::open(&self.state, ws).unwrap()
    }

    fn store(&self) -> Store {
        Store::open(&self.namespace(&self.ws)).unwrap()
    }

    fn audit_log(&self) -> audit::AuditLog {
        audit::AuditLog::new(self.namespace(&self.ws).dir())
    }

    /// A pending request in `ws` as the gateway stores it, live for `ttl_ms` from now.
    fn request_in(&self, ws: &Path, arguments: Value, ttl_ms: i64) -> Approval {
        let now = Timestamp::now();
        Store::open(&self.namespace(ws))
            .unwrap()
            .create_request(
                "trace-7",
                &snapshot(arguments),
                now,
                now.plus_millis(ttl_ms),
            )
            .unwrap()
    }

    fn request(&self, arguments: Value) -> Approval {
        self.request_in(&self.ws, arguments, 600_000)
    }

    fn status(&self, id: &str) -> ApprovalStatus {
        self.store()
            .get_request(id, Timestamp::now())
            .unwrap()
            .status
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(toolgate());
        cmd.args(args)
            .arg("--workspace")
            .arg(&self.ws)
            .env("TOOLGATE_STATE_DIR", &self.state)
            .env("USER", "alice");
        cmd
    }

    /// `toolgate ARGS --operator-key KEY`, as the operator's script runs it.
    fn run_as_operator(&self, args: &[&str]) -> Out {
        let key = operator_key(&self.state);
        let mut all = args.to_vec();
        all.extend(["--operator-key", key.to_str().unwrap()]);
        self.run(&all)
    }

    /// `toolgate ARGS` on a terminal of its own, with `typed` typed there once it asks for the confirmation.
    fn run_on_terminal(&self, args: &[&str], typed: &[u8]) -> TerminalRun {
        run_on_terminal(self.command(args), "Type APPROVE", typed)
    }

    fn run(&self, args: &[&str]) -> Out {
        self.run_with_input(args, b"")
    }

    fn run_with_input(&self, args: &[&str], input: &[u8]) -> Out {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The binary may exit before reading everything (a refusal); a broken pipe is then expected.
        let _ = child.stdin.take().unwrap().write_all(input);
        let out = child.wait_with_output().unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }
}

fn snapshot(arguments: Value) -> Value {
    json!({
        "kind": "tools/call", "server": "fs", "tool": "write_file", "exposed": "fs__write_file",
        "arguments": arguments, "definition_sha256": "ab".repeat(32),
        "decision": {"effect": "ask", "reason": "RULE_ASK", "rule_id": "writes", "operation": "fs.write"},
    })
}
