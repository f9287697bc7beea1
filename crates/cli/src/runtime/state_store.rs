//! The workspace's durable state as every command opens it: the trusted state root, what no command toolgate
//! runs may reach, the configured store (SQLite in the state root, or PostgreSQL), and where else approvals wait.

use config::Config;
use std::path::{Path, PathBuf};

use super::workspace;
use std::sync::Arc;

/// The trusted state root: the configured one, else `TOOLGATE_STATE_DIR` or the platform default.
pub fn state_root(config: &Config) -> anyhow::Result<PathBuf> {
    match &config.state_dir {
        Some(dir) => Ok(dir.value.clone()),
        None => gateway::state_root().map_err(anyhow::Error::msg),
    }
}

/// What no command toolgate runs (workspace tools, git, hooks) may read or write: the approvals it may be
/// waiting for, the policy that governs it, and the audit witness kept outside the state root. Without a state
/// root there are no approvals to protect, only the config.
pub(super) fn protected_paths(config: &Config) -> Vec<PathBuf> {
    state_root(config)
        .ok()
        .into_iter()
        .chain(config.source.clone())
        .chain(config.audit_witness.as_ref().map(|w| w.value.clone()))
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .collect()
}

/// The workspace's durable state (approvals, pins, reporting, audit), as `serve` and the admin commands see it.
pub fn state(config: &Config) -> anyhow::Result<gateway::State> {
    let state = open_state(config)?;
    let r = &config.reporting;
    let retention = store::Retention {
        max_age_days: r.max_age_days,
        max_events: r.max_events,
    };
    state.set_reporting(r.enabled.value, retention);
    Ok(state)
}

fn open_state(config: &Config) -> anyhow::Result<gateway::State> {
    let workspace = workspace(config)?;
    let root = state_root(config)?;
    let Some(witness) = &config.audit_witness else {
        return open_configured(config, &root, &workspace, None);
    };
    // Its worth is lying where the state root's writer does not reach; inside the state root or the workspace it
    // would be cut together with the log.
    let canonical = |p: &Path| {
        std::path::absolute(p)
            .map(|a| std::fs::canonicalize(&a).unwrap_or(a))
            .unwrap_or_else(|_| p.to_owned())
    };
    let file = canonical(&witness.value);
    for (what, dir) in [
        ("state root", canonical(&root)),
        ("workspace", workspace.clone()),
    ] {
        if file.starts_with(&dir) {
            anyhow::bail!(
                "auditWitness {} ({}) lies inside the {what} {}: keep it outside, where what can write the \
                 {what} cannot",
                witness.value.display(),
                witness.from,
                dir.display()
            );
        }
    }
    open_configured(config, &root, &workspace, Some(&witness.value))
}

/// The state on the configured store: SQLite in the state root, or the PostgreSQL server of `"store"` (whose
/// schema must be current: `toolgate store migrate` moves it on, start-up never does).
fn open_configured(
    config: &Config,
    root: &Path,
    workspace: &Path,
    witness: Option<&Path>,
) -> anyhow::Result<gateway::State> {
    let config::Store::Postgres(url, pool) = &config.store else {
        return match witness {
            None => gateway::State::open_in(root, workspace),
            Some(w) => gateway::State::open_witnessed(root, workspace, w),
        }
        .map_err(anyhow::Error::msg);
    };
    // Each replica writes its own audit chain, witnessed in the database under its name (`replica`).
    store::Namespace::open(root, workspace).map_err(anyhow::Error::msg)?;
    let chain = crate::replica::name(root)?;
    let open = |namespace: &store::Namespace| -> Result<Arc<dyn store::StateStore>, store::Error> {
        Ok(Arc::new(store::PostgresStore::open_chain_with(
            url.value.expose(),
            namespace,
            &chain,
            pg_options(pool),
        )?))
    };
    gateway::State::open_chain(root, workspace, witness, &open, &chain)
        .map_err(|e| anyhow::anyhow!("{e} (store {} from {})", url.value, url.from))
}

/// The store's pool and deadlines as the config's `store` section gives them.
pub fn pg_options(pool: &config::StorePool) -> store::PgOptions {
    store::PgOptions {
        pool_size: pool.size,
        connect_timeout: pool.connect_timeout,
        statement_timeout: pool.statement_timeout,
    }
}

/// The state `serve` runs with. State that cannot be opened stops start-up: approvals are never quietly off.
/// Without a configured workspace the current directory stands in, which is where a client that starts toolgate
/// from `/` or the home directory ends up; the refusal then says how to name the workspace.
pub fn serve_state(config: &Config) -> anyhow::Result<Option<Arc<gateway::State>>> {
    match state(config) {
        Ok(s) => Ok(Some(Arc::new(s))),
        Err(e) if config.workspace.is_none() => {
            let cwd = std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|_| "an unreadable directory".to_owned());
            Err(e.context(format!(
                "no workspace: toolgate was started in {cwd} without --workspace or \"workspace\" in the config, \
                 and cannot keep approvals for that directory. Clients start servers in a directory of their \
                 choosing: add \"--workspace\", \"/path/to/project\" to toolgate's args in the client's config"
            )))
        }
        Err(e) => Err(e),
    }
}

/// Other workspaces whose namespaces hold pending approval requests, for admin commands that found none in
/// theirs (read-only; a failure to look is not an error of the command).
pub fn pending_elsewhere(state: &gateway::State) -> Vec<(PathBuf, u64)> {
    let ns = state.namespace();
    store::pending_elsewhere(ns.state_root(), ns, store::Timestamp::now()).unwrap_or_default()
}

/// "workspace W (state D)", so an admin command says exactly where it looked.
pub fn where_state_is(state: &gateway::State) -> String {
    let ns = state.namespace();
    format!(
        "workspace {} (state {})",
        ns.workspace().display(),
        ns.dir().display()
    )
}
