//! What every subcommand shares: logging to stderr, exit codes and error printing, the tokio runtime, config
//! loading, the workspace and its state, and the serve loop that `serve` and `wrap` both run.

use anyhow::Context;
use config::Config;
use gateway::{Gateway, Guard, Options};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::runtime::Handle;

mod config_file;
mod state_store;

pub use config_file::{load_config, ConfigUse};
use state_store::protected_paths;
pub use state_store::{
    pending_elsewhere, pg_options, serve_state, state, state_root, where_state_is,
};

/// The command ran and its answer is a failure: a check found errors, a request was refused, an upstream did not
/// start.
pub const EXIT_FAILURE: u8 = 1;
/// The command could not run as asked: usage, configuration, policy, workspace or state.
pub const EXIT_USAGE: u8 = 2;

pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Colour codes only for a person at a terminal; a client's log file gets plain text.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .init();
}

/// A reader that closed stdout (`toolgate audit tail | head`) ends the command quietly with 0, instead of the
/// panic `println!` raises on a broken pipe. The standard library's message for that panic is fixed, so this
/// hook knows it; every other panic goes to the default hook.
pub fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// An error and its causes on one line, each cause once: a message that already quotes its cause does not get
/// it printed again.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
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

/// Whether an error is a closed stdout, which ends a command quietly (see `quiet_broken_pipe`).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Where `serve` takes its client from.
pub enum Transport {
    /// One client on stdin/stdout.
    Stdio,
    /// Streamable HTTP: the address given, else the config's `http.listen`, else `frontend::DEFAULT_LISTEN`.
    Http(Option<std::net::SocketAddr>),
}

/// Serves MCP on stdin/stdout until stdin closes, or over HTTP; either until a signal arrives. Then every session
/// ends and every upstream process group with it.
pub fn serve(config: Config, wrap: bool, transport: Transport) -> anyhow::Result<ExitCode> {
    let options = gateway_options(&config, wrap);
    serve_with(config, options, transport)
}

/// `serve` with the gateway's options given (a product's surface of the own tools, `mcp-toolhub`'s).
pub fn serve_with(
    config: Config,
    options: Options,
    transport: Transport,
) -> anyhow::Result<ExitCode> {
    serve_reloading(config, options, transport, None)
}

/// `serve_with`, reloading the policy on SIGHUP and when the config file changes (`reload`).
pub fn serve_reloading(
    config: Config,
    mut options: Options,
    transport: Transport,
    reload: Option<crate::reload::Load>,
) -> anyhow::Result<ExitCode> {
    // Before any key is read or any child started: nothing this process starts may read its memory or
    // environment, inherit its terminal, or leave its tree.
    crate::harden::gateway();
    let guard = Arc::new(serve_guard(&config)?);
    let state = serve_state(&config)?;
    let builtin = builtin_tools(&config, state.as_deref())?;
    let rt = tokio()?;
    let code = rt.block_on(async move {
        // Spans are exported from the runtime's threads; nothing starts when the config asks for nothing.
        let telemetry = telemetry::Telemetry::start(&config.telemetry, Handle::current())?;
        options.telemetry = telemetry.clone();
        let gw = Gateway::start_with(&config, options, guard, state, builtin);
        gw.set_hooks(gateway::command_hooks(
            &config.hooks,
            &protected_paths(&config),
        ));
        let reloader = reload.map(|load| crate::reload::Reloader::new(load, &config));
        // No start-up step can stop serving: an upstream that fails, or lists what cannot be served, is reported
        // by `toolgate_status` and `doctor` while the others serve.
        let served = match transport {
            Transport::Stdio => {
                if let Some(reloader) = reloader {
                    tokio::spawn(crate::reload::watch(Arc::clone(&gw), reloader));
                }
                serve_stdio_until_signal(&gw).await
            }
            Transport::Http(addr) => serve_http_until_signal(&gw, &config, addr, reloader).await,
        };
        gw.shutdown().await;
        // The last spans are sent before the runtime goes (bounded by the export timeout).
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
        served
    });
    // The stdin reader may still be blocked in a read (a signal ended the loop while the client kept its end
    // open); it must not keep the process alive.
    rt.shutdown_background();
    crate::harden::end_descendants();
    code
}

async fn serve_stdio_until_signal(gw: &Arc<Gateway>) -> anyhow::Result<ExitCode> {
    let (input, output) = jsonrpc::stdio_streams();
    let served = frontend::serve_stdio(Arc::clone(gw), input, output);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = served => {
            if let Err(e) = r {
                tracing::warn!("reading stdin failed: {e}");
            }
        }
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve_http_until_signal(
    gw: &Arc<Gateway>,
    config: &Config,
    addr: Option<std::net::SocketAddr>,
    reloader: Option<crate::reload::Reloader>,
) -> anyhow::Result<ExitCode> {
    let addr = match addr.or(config.http.listen) {
        Some(a) => a,
        None => frontend::DEFAULT_LISTEN.parse()?,
    };
    let profiles = if config.profile_store.is_some() {
        frontend::ProfileStore::File
    } else {
        frontend::ProfileStore::Config
    };
    let server = frontend::HttpServer::bind(Arc::clone(gw), &config.http, addr)
        .await?
        .profile_store(profiles)
        .admin_verbs(Arc::new(crate::products::unified_admin::UnifiedVerbs::new(
            config,
        )));
    if let Some(reloader) = reloader {
        let reloader = reloader.with_auth(server.auth_reload());
        tokio::spawn(crate::reload::watch(Arc::clone(gw), reloader));
    }
    // The one line a user needs to connect a client; stdout stays free of anything but protocol bytes.
    eprintln!(
        "toolgate: serving MCP over HTTP at http://{}/mcp",
        server.local_addr()
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let signal = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    server.run(signal).await?;
    Ok(ExitCode::SUCCESS)
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

/// The compiled policy for `config`; a policy that does not load stops start-up. An unknown profile is named
/// with the profiles that do exist.
pub fn load_guard(config: &Config) -> anyhow::Result<Guard> {
    let workspace = workspace(config)?;
    Guard::load(config, &workspace).map_err(|e| {
        let Some(profile) = &config.profile else {
            return anyhow::Error::msg(e);
        };
        let mut without = config.clone();
        without.profile = None;
        match Guard::load(&without, &workspace) {
            Ok(base) if base.policy().with_profile(&profile.value).is_err() => {
                let names = base.policy().profile_names();
                let known = if names.is_empty() {
                    "none are defined (\"profiles\" in the config)".to_owned()
                } else {
                    format!("the config defines: {}", names.join(", "))
                };
                anyhow::anyhow!(
                    "unknown profile {:?} ({}); {known}",
                    profile.value,
                    profile.from
                )
            }
            _ => anyhow::Error::msg(e),
        }
    })
}

/// The served profile's policy as `serve` needs it, at start and at every reload alike: `load_guard`, and every
/// other profile the config defines compiling too (one nobody uses yet is still one a key may name tomorrow).
pub fn serve_guard(config: &Config) -> anyhow::Result<Guard> {
    let guard = load_guard(config)?;
    gateway::check_profiles(config, &guard).map_err(anyhow::Error::msg)?;
    Ok(guard)
}

/// The gateway's options for `config`, with what every stdio upstream is kept from: the state root and the
/// config file (as for commands), and the layers the top-level `"sandbox"` requires.
pub fn gateway_options(config: &Config, wrap: bool) -> Options {
    let mut opts = Options::from_config(config, wrap);
    opts.upstream.containment = Arc::new(upstream::Containment {
        protected_paths: protected_paths(config),
        require: config.sandbox.require.clone(),
    });
    opts
}

/// toolgate's own workspace tools, served when a workspace is given explicitly (`--workspace` or "workspace"):
/// the current directory is never handed to an agent by accident. Commands run contained: their own PID
/// namespace, no network and no sockets but IP ones and connected pairs, writes only under the workspace and a
/// private temporary directory, no access at all to the state root or the config file, finite resource limits,
/// no new privileges — each layer where this machine supports it, except the state root and config protection
/// (Landlock), without which no command runs.
pub fn builtin_tools(
    config: &Config,
    state: Option<&gateway::State>,
) -> anyhow::Result<Option<Arc<builtin::Builtin>>> {
    if config.workspace.is_none() {
        return Ok(None);
    }
    let root = workspace(config)?;
    let mut settings = builtin::BuiltinConfig::new(&root);
    // The advisory file locks are the state's, so every process serving this workspace on it sees them.
    settings.leases = state.map(gateway::State::store_handle);
    let wanted = |layer: &str| {
        if config.sandbox.require.iter().any(|l| l == layer) {
            sandbox::LayerMode::Required
        } else {
            sandbox::LayerMode::BestEffort
        }
    };
    let layers = &mut settings.sandbox;
    // The command's own /proc comes with its PID namespace, in the same mode.
    layers.pid_namespace = if wanted("own_proc") == sandbox::LayerMode::Required {
        sandbox::LayerMode::Required
    } else {
        wanted("pid_namespace")
    };
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
    layers.protected_paths = protected_paths(config);
    let tools = builtin::Builtin::new(settings)
        .with_context(|| format!("workspace tools for {}", root.display()))?;
    Ok(Some(Arc::new(tools)))
}

/// A listening address as a user types it: `127.0.0.1:8787`, `[::1]:8787`, `localhost:8787` (the IPv4 loopback)
/// or a bare port (`8787`, on the loopback). Other host names are refused: what they resolve to is not the
/// user's to see, and toolgate serves loopback unless authentication is configured.
pub fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::{Ipv4Addr, SocketAddr};
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("{p:?} is not a port number (0-65535)"))
    };
    if let Ok(p) = text.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, p)));
    }
    match text.rsplit_once(':') {
        Some((host, p)) if host.eq_ignore_ascii_case("localhost") => {
            Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port(p)?)))
        }
        _ => Err(format!(
            "{text:?} is not an address to listen on: give IP:PORT (127.0.0.1:8787), localhost:PORT or a port"
        )),
    }
}

#[cfg(test)]
mod listen_tests {
    use super::parse_listen;

    #[test]
    fn localhost_and_a_bare_port_listen_on_the_loopback() {
        assert_eq!(
            parse_listen("localhost:8787").unwrap().to_string(),
            "127.0.0.1:8787"
        );
        assert_eq!(parse_listen("8787").unwrap().to_string(), "127.0.0.1:8787");
        assert_eq!(parse_listen("[::1]:9").unwrap().to_string(), "[::1]:9");
        let refused = [
            parse_listen("example.com:80").unwrap_err(),
            parse_listen("localhost:x").unwrap_err(),
        ];
        insta::assert_snapshot!("listen_refused", refused.join("\n"));
    }
}
