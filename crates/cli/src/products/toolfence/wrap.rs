//! `toolfence wrap --policy P --server NAME --workspace DIR [--audit FILE] [--approval broker|tty] -- CMD…`:
//! ToolFence's client entry, unchanged, run as `toolgate wrap` with the ToolFence policy (its precedence kept),
//! the server under NAME, and the workspace given.
//!
//! Audit: toolgate's hash-chained log stays in the state root, where its witness is and where no wrapped server
//! reaches; the ToolFence path (`--audit`, default `.toolfence/audit.jsonl` under the workspace) is made a link to
//! it, so what ToolFence users read there is that log, and tampering with the link never touches the records. A
//! file already at that path (ToolFence's own log) is left alone and the real location said on stderr.
//!
//! The policy file is kept out of the wrapped server's reach when it lies outside the workspace; inside it (the
//! sheet's quick start writes `./toolfence.yaml` in the project), the server must reach the workspace, so a deny
//! of writes and deletes of that file is put first in the rules instead.
//!
//! Approvals: with `broker` (the default) an ask is held in the approval store for `toolfence approvals`; with
//! `tty` it is asked on the controlling terminal (`tty`), and without one every ask is denied before anything
//! starts. Asks never go to the MCP client (ToolFence does not elicit).

use super::policy_cli::structured;
use anyhow::Context;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The ToolFence YAML policy.
    #[arg(long)]
    policy: PathBuf,
    /// The server's name in rules, logs and the audit.
    #[arg(long)]
    server: String,
    /// The project directory (`${workspace}` in the policy).
    #[arg(long)]
    workspace: PathBuf,
    /// Where the audit log is shown. Default: .toolfence/audit.jsonl under the workspace.
    #[arg(long)]
    audit: Option<PathBuf>,
    /// Who answers asks: the approval store for `toolfence approvals` (broker), or this terminal (tty).
    #[arg(long, value_enum, default_value = "broker")]
    approval: Approval,
    /// Internal: this process is the gateway a `--approval tty` wrap started, and its parent asks the terminal.
    #[arg(long, hide = true)]
    tty_child: bool,
    /// The server command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Approval {
    Broker,
    Tty,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let workspace = std::fs::canonicalize(&args.workspace)
        .with_context(|| format!("the workspace {} does not exist", args.workspace.display()))?;
    let policy_path = std::path::absolute(&args.policy)
        .with_context(|| format!("cannot resolve {}", args.policy.display()))?;
    let mut policy = structured(&policy_path)?;
    if args.approval == Approval::Tty && !args.tty_child {
        match super::tty::open() {
            Some(tty) => return super::tty::serve_with_terminal(tty, &workspace),
            None => {
                eprintln!(
                    "toolfence: --approval tty but no controlling terminal: every ask is denied"
                );
                deny_asks(&mut policy);
            }
        }
    }
    let inside = policy_path.starts_with(&workspace)
        || std::fs::canonicalize(&policy_path).is_ok_and(|p| p.starts_with(&workspace));
    if inside {
        guard_policy_file(&mut policy, &policy_path);
    }
    let (program, rest) = args
        .command
        .split_first()
        .context("wrap needs a command after --")?;
    // A human at a terminal gets longer to answer than a call waits for the approval terminal by default.
    let wait = if args.tty_child { 300 } else { 20 };
    let text = json!({
        // The server starts in the workspace and may write there, as it would behind ToolFence (its tool calls
        // are what the policy decides); the state root and everything else stays out of its reach.
        "mcpServers": {&args.server: {"command": program, "args": rest, "cwd": workspace,
                                      "sandbox": {"writable": [workspace]}}},
        "policy": policy,
        "workspace": workspace,
        "approvals": {"elicitation": false, "wait_seconds": wait},
    })
    .to_string();
    let overrides = config::Overrides {
        self_exe: crate::runtime::self_exe(),
        workspace: Some(workspace.clone()),
        ..config::Overrides::default()
    };
    let no_vars = |_: &str| None;
    let mut config = config::parse_str(
        &text,
        config::Format::Json,
        &policy_path,
        &no_vars,
        &overrides,
    )?;
    // The policy file is what governs this gateway: no command or server it starts may change it. Kept out of
    // the server's reach when it lies outside the workspace; inside it (the sheet's quick start), the server must
    // reach the workspace, so only its tool calls are kept from writing the file (`guard_policy_file`).
    config.source = (!inside).then_some(policy_path);
    let audit = args
        .audit
        .clone()
        .unwrap_or_else(|| workspace.join(".toolfence").join("audit.jsonl"));
    show_audit_at(&config, &workspace, &audit);
    crate::runtime::serve(config, true, crate::runtime::Transport::Stdio)
}

/// Every ask of the policy (rules and default) made a deny: what ToolFence does when no human can be asked.
fn deny_asks(policy: &mut Value) {
    let ask = |v: &mut Value| {
        if v == "ask" {
            *v = json!("deny");
        }
    };
    ask(&mut policy["default"]);
    if let Some(rules) = policy["rules"].as_array_mut() {
        for r in rules {
            ask(&mut r["effect"]);
        }
    }
}

/// A deny, first in the file, of every write and delete of the policy file through the wrapped server's tools.
fn guard_policy_file(policy: &mut Value, path: &Path) {
    let mut paths = vec![path.display().to_string()];
    if let Ok(real) = std::fs::canonicalize(path) {
        paths.push(real.display().to_string());
    }
    let paths: Vec<String> = paths.iter().map(|p| escape_glob(p)).collect();
    if let Some(rules) = policy["rules"].as_array_mut() {
        rules.insert(
            0,
            json!({"id": "toolfence-policy-file", "effect": "deny", "operations": ["fs.write", "fs.delete"],
                   "paths": paths, "description": "the policy that governs this wrap is not changed through it"}),
        );
    }
}

/// A path as a glob that matches only itself.
fn escape_glob(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Links `at` to the namespace's audit log; says on stderr where the log is when it cannot.
fn show_audit_at(config: &config::Config, workspace: &Path, at: &Path) {
    let log = match audit_log(config, workspace) {
        Ok(p) => p,
        Err(e) => {
            // `serve` opens the same state next and stops with the full reason.
            tracing::debug!("audit location: {e:#}");
            return;
        }
    };
    match link(at, &log) {
        Ok(()) => {}
        Err(why) => eprintln!(
            "toolfence: audit log is {} ({} {why})",
            log.display(),
            at.display()
        ),
    }
}

fn audit_log(config: &config::Config, workspace: &Path) -> anyhow::Result<PathBuf> {
    let root = match &config.state_dir {
        Some(d) => d.value.clone(),
        None => gateway::state_root().map_err(anyhow::Error::msg)?,
    };
    let ns = store::Namespace::open(&root, workspace).map_err(anyhow::Error::msg)?;
    Ok(ns.dir().join(audit::LOG_FILE))
}

/// A link at `at` to `log`, replacing only a link.
fn link(at: &Path, log: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(at) {
        Ok(m) if !m.file_type().is_symlink() => {
            return Err("is a file of its own, left as it is".to_owned())
        }
        Ok(_) if std::fs::read_link(at).is_ok_and(|t| t == log) => return Ok(()),
        Ok(_) => std::fs::remove_file(at).map_err(|e| format!("cannot be replaced: {e}"))?,
        Err(_) => {}
    }
    if let Some(dir) = at.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot be created: {e}"))?;
    }
    std::os::unix::fs::symlink(log, at).map_err(|e| format!("cannot be linked: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_every_ask_becomes_a_deny() {
        let mut p = json!({"default": "ask", "rules": [{"id": "a", "effect": "ask"}, {"id": "b", "effect": "allow"}]});
        deny_asks(&mut p);
        assert_eq!(
            p,
            json!({"default": "deny", "rules": [{"id": "a", "effect": "deny"}, {"id": "b", "effect": "allow"}]})
        );
    }

    #[test]
    fn the_audit_path_is_linked_unless_a_file_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("state/audit.jsonl");
        let at = dir.path().join("ws/.toolfence/audit.jsonl");
        link(&at, &log).unwrap();
        assert_eq!(std::fs::read_link(&at).unwrap(), log);
        link(&at, &log).unwrap();
        let own = dir.path().join("own.jsonl");
        std::fs::write(&own, "{}\n").unwrap();
        assert!(link(&own, &log).is_err());
        assert_eq!(std::fs::read_to_string(&own).unwrap(), "{}\n");
    }
}
