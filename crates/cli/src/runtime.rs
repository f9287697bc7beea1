//! What every subcommand shares: logging to stderr, the tokio runtime, config loading, and the serve loop that
//! `serve` and `wrap` both run.

use anyhow::Context;
use config::{Config, Overrides};
use gateway::{Gateway, Guard, Options};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

/// One thread: toolgate is an I/O-bound proxy, and hopping between worker threads for every message cost more
/// latency than it bought (docs/BENCHMARKS.md). Blocking work goes to tokio's blocking pool.
pub fn tokio() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn self_exe() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// Loads `path` (or an empty config when `None`), then reports warnings on stderr.
pub fn load_config(
    path: Option<&Path>,
    workspace: Option<PathBuf>,
    profile: Option<String>,
) -> anyhow::Result<Config> {
    let overrides = Overrides {
        workspace,
        self_exe: self_exe(),
        profile,
    };
    let env = |k: &str| std::env::var(k).ok();
    let mut config = match path {
        Some(p) => config::load(p, &env, &overrides)?,
        None => {
            let mut c = Config::empty();
            c.workspace = overrides.workspace.map(|w| config::Setting {
                value: w,
                from: config::Provenance::Flag("--workspace"),
            });
            c.profile = overrides.profile.map(|p| config::Setting {
                value: p,
                from: config::Provenance::Flag("--profile"),
            });
            c
        }
    };
    for w in config.warnings.drain(..) {
        tracing::warn!("{w}");
    }
    for s in &config.servers {
        if let config::Transport::Http { url, .. } = &s.transport {
            tracing::warn!(
                "server {} ({url}) is an HTTP upstream: accepted and validated, but not connected by this version",
                s.name
            );
        }
    }
    Ok(config)
}

/// Serves MCP on stdin/stdout until stdin closes or a signal arrives; then ends every upstream process group.
pub fn serve(config: Config, wrap: bool) -> anyhow::Result<ExitCode> {
    let guard = Arc::new(load_guard(&config)?);
    let state = serve_state(&config)?;
    let builtin = builtin_tools(&config)?;
    let rt = tokio()?;
    let code = rt.block_on(async move {
        let gw = Gateway::start_with(
            &config,
            Options::from_config(&config, wrap),
            guard,
            state,
            builtin,
        );
        gw.set_hooks(gateway::command_hooks(&config.hooks));
        // No start-up step can stop serving: an upstream that fails, or lists what cannot be served, is reported
        // by `toolgate_status` and `doctor` while the others serve.
        let (input, output) = jsonrpc::stdio_streams();
        let served = gateway::serve_stdio(Arc::clone(&gw), input, output);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let code = tokio::select! {
            r = served => {
                if let Err(e) = r {
                    tracing::warn!("reading stdin failed: {e}");
                }
                ExitCode::SUCCESS
            }
            _ = tokio::signal::ctrl_c() => ExitCode::SUCCESS,
            _ = term.recv() => ExitCode::SUCCESS,
        };
        gw.shutdown().await;
        Ok::<_, anyhow::Error>(code)
    })?;
    // The stdin reader may still be blocked in a read (a signal ended the loop while the client kept its end
    // open); it must not keep the process alive.
    rt.shutdown_background();
    Ok(code)
}

/// The workspace toolgate guards: the configured one, else the current directory; canonical either way.
pub fn workspace(config: &Config) -> anyhow::Result<PathBuf> {
    let dir = match &config.workspace {
        Some(w) => w.value.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    std::fs::canonicalize(&dir).with_context(|| {
        format!(
            "the workspace {} does not exist or cannot be resolved",
            dir.display()
        )
    })
}

/// The compiled policy for `config`; a policy that does not load stops start-up.
pub fn load_guard(config: &Config) -> anyhow::Result<Guard> {
    let workspace = workspace(config)?;
    Guard::load(config, &workspace).map_err(anyhow::Error::msg)
}

/// The trusted state root: the configured one, else `TOOLGATE_STATE_DIR` or the platform default.
fn state_root(config: &Config) -> anyhow::Result<PathBuf> {
    match &config.state_dir {
        Some(dir) => Ok(dir.value.clone()),
        None => gateway::state_root().map_err(anyhow::Error::msg),
    }
}

/// The workspace's durable state (approvals, pins, reporting, audit), as `serve` and the admin commands see it.
pub fn state(config: &Config) -> anyhow::Result<gateway::State> {
    let workspace = workspace(config)?;
    let root = state_root(config)?;
    gateway::State::open_in(&root, &workspace).map_err(anyhow::Error::msg)
}

/// The state `serve` runs with. With an explicit workspace, state that cannot be opened stops start-up; with the
/// current directory standing in for one, toolgate serves without approvals (every ask is refused) and says why.
pub fn serve_state(config: &Config) -> anyhow::Result<Option<Arc<gateway::State>>> {
    match state(config) {
        Ok(s) => Ok(Some(Arc::new(s))),
        Err(e) if config.workspace.is_none() => {
            tracing::warn!(
                "approvals are off: {e:#}. Give --workspace (with the state directory outside it, see \
                 TOOLGATE_STATE_DIR) to enable them; until then every call the policy marks `ask` is refused"
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// toolgate's own workspace tools, served when a workspace is given explicitly (`--workspace` or "workspace"):
/// the current directory is never handed to an agent by accident. Commands run contained: their own PID
/// namespace, no network and no sockets but IP ones and connected pairs, writes only under the workspace and a
/// private temporary directory, no access at all to the state root or the config file, finite resource limits,
/// no new privileges — each layer where this machine supports it, except the state root and config protection
/// (Landlock), without which no command runs.
pub fn builtin_tools(config: &Config) -> anyhow::Result<Option<Arc<builtin::Builtin>>> {
    if config.workspace.is_none() {
        return Ok(None);
    }
    let root = workspace(config)?;
    let mut settings = builtin::BuiltinConfig::new(&root);
    let wanted = |layer: &str| {
        if config.sandbox.require.iter().any(|l| l == layer) {
            sandbox::LayerMode::Required
        } else {
            sandbox::LayerMode::BestEffort
        }
    };
    let layers = &mut settings.sandbox;
    layers.pid_namespace = wanted("pid_namespace");
    (layers.no_network, layers.socket_filter) = if config.sandbox.network {
        (sandbox::LayerMode::Off, sandbox::LayerMode::Off)
    } else {
        (wanted("no_network"), wanted("socket_filter"))
    };
    layers.landlock = wanted("landlock");
    layers.no_new_privs = wanted("no_new_privs");
    layers.rlimits = wanted("rlimits");
    let l = &config.sandbox.limits;
    layers.limits = sandbox::Rlimits {
        cpu_seconds: Some(l.cpu_seconds),
        address_space_bytes: Some(l.address_space_bytes),
        file_size_bytes: Some(l.file_size_bytes),
        open_files: Some(l.open_files),
        processes: Some(l.processes),
    };
    layers.private_tmp = true;
    // Commands must neither read nor write the approvals they are waiting for, nor the policy that governs
    // them. Without a state root there are no approvals to protect, only the config.
    layers.protected_paths = state_root(config)
        .ok()
        .into_iter()
        .chain(config.source.clone())
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .collect();
    let tools = builtin::Builtin::new(settings)
        .with_context(|| format!("workspace tools for {}", root.display()))?;
    Ok(Some(Arc::new(tools)))
}
