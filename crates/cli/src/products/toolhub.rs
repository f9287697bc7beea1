//! `mcp-toolhub`: toolgate serving ToolHub's 14 tools over stdio, configured as ToolHub is, by its environment:
//! `TOOLHUB_WORKSPACE_ROOT` (required: an absolute, existing directory, canonicalised once and frozen) and
//! `TOOLHUB_STATE_ROOT` (optional: absolute, outside the workspace, and bound on first use to that one workspace
//! forever; unset, toolgate's usual per-user state base, where each workspace has its own namespace
//! `workspaces/<sha256 of the canonical workspace path>`). `mcp-toolhub-admin` reads the same environment
//! (`toolhub_admin`), so server and administrator share one state.
//!
//! Underneath it is toolgate's gateway with no upstream and no config file: its workspace tools, approvals, audit
//! and policy (no rules: reads inside the workspace pass, writes, patches and every command ask a human), listed
//! under ToolHub's names (`gateway::Surface::ToolHub`). An ask is answered at once with its approval handle, as
//! ToolHub answers, and only the administrator's CLI decides it (no elicitation). Nothing here is a second
//! implementation of a tool, an approval or the audit.

use anyhow::Context;
use clap::{Parser, Subcommand};
use config::{Config, Provenance, Setting};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

pub(super) const WORKSPACE_VAR: &str = "TOOLHUB_WORKSPACE_ROOT";
pub(super) const STATE_VAR: &str = "TOOLHUB_STATE_ROOT";

/// A local stdio MCP server of workspace files, read-only git and approved commands (toolgate speaking ToolHub).
/// Configured by TOOLHUB_WORKSPACE_ROOT (required) and TOOLHUB_STATE_ROOT (optional).
#[derive(Parser)]
#[command(name = "mcp-toolhub", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP on stdin/stdout (nothing but protocol messages on stdout; errors on stderr).
    Serve,
}

pub fn main() -> anyhow::Result<ExitCode> {
    let Cli {
        command: Command::Serve,
    } = Cli::parse();
    crate::runtime::init_logging();
    let config = config(&|k| std::env::var_os(k))?;
    let mut options = crate::runtime::gateway_options(&config, false);
    options.surface = gateway::Surface::ToolHub;
    crate::runtime::serve_with(config, options, crate::runtime::Transport::Stdio)
}

/// ToolHub's environment as toolgate's config: the workspace, the state root (bound to the workspace when
/// given), holds answered at once, and no elicitation. Each error is one of ToolHub's, worded as its
/// troubleshooting list words it, with what to change.
pub(super) fn config(env: &dyn Fn(&str) -> Option<OsString>) -> anyhow::Result<Config> {
    let workspace = workspace(env(WORKSPACE_VAR))?;
    let state_root = match env(STATE_VAR) {
        None => None,
        Some(value) => Some(state_root(&value, &workspace)?),
    };
    let mut config = Config::empty();
    config.workspace = Some(Setting {
        value: workspace,
        from: Provenance::Env(WORKSPACE_VAR),
    });
    config.state_dir = state_root.map(|value| Setting {
        value,
        from: Provenance::Env(STATE_VAR),
    });
    let by = Provenance::Flag("mcp-toolhub");
    // ToolHub answers a call that needs approval at once with its handle; the agent polls and resumes.
    config.approvals.wait = Setting {
        value: Duration::ZERO,
        from: by.clone(),
    };
    // Approval is the administrator's CLI alone, as with ToolHub.
    config.approvals.elicitation = Setting {
        value: false,
        from: by,
    };
    Ok(config)
}

fn workspace(value: Option<OsString>) -> anyhow::Result<PathBuf> {
    let Some(value) = value else {
        anyhow::bail!(
            "{WORKSPACE_VAR} is required: add the absolute path of an existing workspace directory to the MCP \
             client's environment (\"env\": {{\"{WORKSPACE_VAR}\": \"/path/to/project\"}})"
        );
    };
    anyhow::ensure!(
        !value.is_empty(),
        "{WORKSPACE_VAR} is required: it is set but empty"
    );
    let path = PathBuf::from(value);
    anyhow::ensure!(
        path.is_absolute(),
        "{WORKSPACE_VAR} must be an absolute path, not {}",
        path.display()
    );
    match std::fs::canonicalize(&path) {
        Ok(dir) if dir.is_dir() => Ok(dir),
        _ => anyhow::bail!(
            "Workspace is not a directory: {} ({WORKSPACE_VAR}); create the directory or correct the path",
            path.display()
        ),
    }
}

/// The explicit state root, bound to `workspace` on first use (`store::bind_state_root`) and canonical.
fn state_root(value: &OsString, workspace: &Path) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        !value.is_empty(),
        "{STATE_VAR} is set but empty: give an absolute path, or unset it for the per-user default"
    );
    let path = PathBuf::from(value);
    match store::bind_state_root(&path, workspace) {
        Ok(root) => Ok(root),
        Err(store::Error::StateRootNotAbsolute) => anyhow::bail!(
            "{STATE_VAR} must be an absolute path, not {}",
            path.display()
        ),
        Err(store::Error::StateRootInsideWorkspace) => anyhow::bail!(
            "State root must be outside the workspace: {} ({STATE_VAR}) lies inside {}; move it to a trusted \
             directory the MCP filesystem tools cannot address",
            path.display(),
            workspace.display()
        ),
        Err(store::Error::NamespaceBoundElsewhere) => anyhow::bail!(
            "State namespace belongs to a different workspace: {} ({STATE_VAR}) is bound to another workspace \
             than {}; select a different {STATE_VAR} (bindings are never silently reassigned)",
            path.display(),
            workspace.display()
        ),
        Err(e) => Err(e).with_context(|| {
            format!(
                "cannot use {} ({STATE_VAR}) as the state root",
                path.display()
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(vars: &'a [(&'a str, &'a Path)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.as_os_str().to_owned())
        }
    }

    fn error(vars: &[(&str, &Path)]) -> String {
        crate::runtime::error_chain(&config(&with(vars)).unwrap_err())
    }

    #[test]
    fn each_environment_error_is_the_sheets() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        std::fs::create_dir(&ws).unwrap();
        let file = root.join("file");
        std::fs::write(&file, "").unwrap();
        assert!(error(&[]).starts_with("TOOLHUB_WORKSPACE_ROOT is required"));
        let relative = Path::new("ws");
        assert!(error(&[(WORKSPACE_VAR, relative)]).contains("must be an absolute path"));
        for not_dir in [file.as_path(), &root.join("missing")] {
            let e = error(&[(WORKSPACE_VAR, not_dir)]);
            assert!(e.starts_with("Workspace is not a directory"), "{e}");
        }
        let inside = ws.join("state");
        let e = error(&[(WORKSPACE_VAR, &ws), (STATE_VAR, &inside)]);
        assert!(
            e.starts_with("State root must be outside the workspace"),
            "{e}"
        );
        assert!(!inside.exists(), "a refused state root is not created");
        let e = error(&[(WORKSPACE_VAR, &ws), (STATE_VAR, relative)]);
        assert!(e.contains("must be an absolute path"), "{e}");
    }

    #[test]
    fn a_state_root_serves_the_workspace_it_was_first_used_with_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (a, b, state) = (root.join("a"), root.join("b"), root.join("state"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let c = config(&with(&[(WORKSPACE_VAR, &a), (STATE_VAR, &state)])).unwrap();
        assert_eq!(c.workspace.unwrap().value, a);
        assert_eq!(c.state_dir.unwrap().value, state);
        assert_eq!(c.approvals.wait.value, Duration::ZERO);
        assert!(!c.approvals.elicitation.value);
        let e = error(&[(WORKSPACE_VAR, &b), (STATE_VAR, &state)]);
        assert!(
            e.starts_with("State namespace belongs to a different workspace"),
            "{e}"
        );
        config(&with(&[(WORKSPACE_VAR, &a), (STATE_VAR, &state)])).unwrap();
        let unset = config(&with(&[(WORKSPACE_VAR, &b)])).unwrap();
        assert_eq!(unset.state_dir, None, "unset: toolgate's usual state base");
    }
}
