//! Starting an stdio upstream contained, and ending its whole tree.
//!
//! Every stdio upstream is started through the sandbox (`sandbox::spawn_piped`, on the sandbox's keeper
//! thread, so it dies with toolgate even when toolgate is killed): its own session and process group, and unless
//! its entry says `"sandbox": {"enabled": false}`, its own user, PID and mount namespaces with a /proc of its
//! own (it sees no host process, toolgate included, and can trace none; nothing it starts, `setsid` or not,
//! outlives it), Landlock (reads everywhere but the [`Containment`]'s protected paths — the state root and the
//! config file — and the shared temporary directory; writes only beneath its private temporary directory,
//! the package caches, the paths its entry names, and its `"writable"` list), the socket filter (no unix socket
//! but connected pairs, no netlink, no io_uring, unless `"unixSockets"`), an empty network namespace when
//! `"network": false`, no core dumps, no new privileges, and only its configured environment plus a short
//! allowlist (`config::upstream_env`). A layer the entry or the top-level `"sandbox"` requires that cannot be
//! had stops the start, with the reason, and so does an entry that switches off what the top-level list requires
//! (its opt-out, its network, its unix sockets): that list is never met by silently leaving a layer out. This module builds the spec and ends the tree; it does not frame
//! messages (`stdio` does).

use config::{upstream_env, ServerConfig, ServerSandbox, Transport};
use sandbox::{LayerMode, LayerRequest, Piped, PipedSpec, PipedStderr, Rlimits};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What every contained upstream is kept from, given by whoever starts the gateway.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Containment {
    /// Neither readable nor writable by any upstream: the state root, the config file. Absolute.
    pub protected_paths: Vec<PathBuf>,
    /// Layers required of every contained process (the top-level `"sandbox": {"require": …}`), on top of
    /// what each entry requires.
    pub require: Vec<String>,
}

/// How often a tree that was asked to exit is checked on.
const EXIT_POLL: Duration = Duration::from_millis(10);

/// The spec one life of `config` starts with, or why it cannot start.
pub(crate) fn spec(config: &ServerConfig, containment: &Containment) -> Result<PipedSpec, String> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &config.transport
    else {
        return Err("not an stdio upstream".to_owned());
    };
    let env = upstream_env(env, |k| std::env::var(k).ok());
    let here = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let cwd = match cwd {
        Some(dir) => here.join(dir),
        None => here,
    };
    let program =
        find_program(command, env.get("PATH").map(String::as_str), &cwd).ok_or_else(|| {
            format!(
                "cannot start {command:?}: not found on PATH (install it or give its full path)"
            )
        })?;
    if let Some(why) = unmet_top_level(&config.sandbox, containment) {
        return Err(why);
    }
    let layers = if config.sandbox.enabled {
        contained(config, &env, &cwd, containment)
    } else {
        uncontained()
    };
    Ok(PipedSpec {
        program,
        args: args.clone(),
        env,
        cwd,
        stderr: PipedStderr::Pipe,
        layers,
    })
}

/// Why an entry cannot meet the layers the top-level `"sandbox": {"require": …}` asks of every contained
/// process, when its own settings switch one of them off.
fn unmet_top_level(sandbox: &ServerSandbox, containment: &Containment) -> Option<String> {
    let required = |layer: &str| containment.require.iter().any(|r| r == layer);
    if !sandbox.enabled && !containment.require.is_empty() {
        return Some(format!(
            "not started: the top-level \"sandbox\" requires {} of every contained process, and this server's \
             entry says \"sandbox\": {{\"enabled\": false}} (remove the opt-out, or the top-level requirement)",
            containment.require.join(", ")
        ));
    }
    if sandbox.enabled && sandbox.network && required("no_network") {
        return Some(
            "not started: the top-level \"sandbox\" requires no_network, and this server has the network (an \
             upstream has it unless its entry says \"sandbox\": {\"network\": false}); give it \"network\": \
             false, or require no_network in the entries that need it instead"
                .to_owned(),
        );
    }
    if sandbox.enabled && sandbox.unix_sockets && required("socket_filter") {
        return Some(
            "not started: the top-level \"sandbox\" requires socket_filter, and this server's entry says \
             \"unixSockets\": true (remove one of the two)"
                .to_owned(),
        );
    }
    None
}

/// `"enabled": false`: only what every child gets (its own session and group, death with toolgate).
fn uncontained() -> LayerRequest {
    LayerRequest {
        pid_namespace: LayerMode::Off,
        no_new_privs: LayerMode::Off,
        ..LayerRequest::default()
    }
}

fn contained(
    config: &ServerConfig,
    env: &BTreeMap<String, String>,
    cwd: &Path,
    containment: &Containment,
) -> LayerRequest {
    let sandbox = &config.sandbox;
    let mode = |layers: &[&str]| {
        let required = sandbox
            .require
            .iter()
            .chain(&containment.require)
            .any(|r| layers.contains(&r.as_str()));
        if required {
            LayerMode::Required
        } else {
            LayerMode::BestEffort
        }
    };
    LayerRequest {
        // The mount namespace with its own /proc comes with the PID namespace, in its mode.
        pid_namespace: mode(&["pid_namespace", "own_proc"]),
        no_network: if sandbox.network {
            LayerMode::Off
        } else {
            mode(&["no_network"])
        },
        landlock: mode(&["landlock"]),
        writable_paths: writable(config, sandbox, env, cwd, containment),
        protected_paths: containment.protected_paths.clone(),
        private_tmp: true,
        shared_tmp_readable: false,
        socket_filter: if sandbox.unix_sockets {
            LayerMode::Off
        } else {
            mode(&["socket_filter"])
        },
        // A server lives as long as the gateway: no CPU or size limit; core dumps (which would hold what it
        // was sent) are off.
        rlimits: mode(&["rlimits"]),
        limits: Rlimits::default(),
        no_new_privs: mode(&["no_new_privs"]),
    }
}

/// Where the server may write: its `"writable"` list, whole (a path there that would expose a protected one
/// stops the start); the package caches npx and uvx fill; and the paths its arguments, configured
/// environment and configured directory name — a directory itself, a file (there or to be created) its
/// directory — unless that would reach a protected path, the shared temporary directory, the home folder
/// itself or `/` (then it is left out: name it in `"writable"` if it must be).
fn writable(
    config: &ServerConfig,
    sandbox: &ServerSandbox,
    env: &BTreeMap<String, String>,
    cwd: &Path,
    containment: &Containment,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = sandbox.writable.clone();
    let home = env.get("HOME").map(PathBuf::from);
    let caches = [
        env.get("XDG_CACHE_HOME").map(PathBuf::from),
        home.as_ref().map(|h| h.join(".cache")),
        home.as_ref().map(|h| h.join(".npm")),
        home.as_ref().map(|h| h.join(".local/share/uv")),
    ];
    let Transport::Stdio {
        args,
        env: configured,
        cwd: configured_cwd,
        ..
    } = &config.transport
    else {
        return out;
    };
    let named = args
        .iter()
        .map(|a| a.split_once('=').map_or(a.as_str(), |(_, v)| v))
        .chain(configured.values().map(String::as_str))
        .map(PathBuf::from)
        .chain(configured_cwd.iter().map(|_| cwd.to_path_buf()))
        .filter(|p| p.is_absolute())
        .filter_map(|p| {
            if p.is_dir() {
                Some(p)
            } else {
                p.parent().filter(|d| d.is_dir()).map(Path::to_path_buf)
            }
        });
    let shared_tmp = resolve(&std::env::temp_dir());
    let protected: Vec<PathBuf> = containment
        .protected_paths
        .iter()
        .map(|p| resolve(p))
        .collect();
    let too_wide = |p: &Path| {
        protected
            .iter()
            .any(|x| x.starts_with(p) || p.starts_with(x))
            || shared_tmp.starts_with(p)
            || home.as_deref().is_some_and(|h| resolve(h) == p)
            || p == Path::new("/")
    };
    for path in caches
        .into_iter()
        .flatten()
        .filter(|p| p.is_dir())
        .chain(named)
    {
        let path = resolve(&path);
        if !too_wide(&path) && !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

fn resolve(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Finds `command` as `execvp` would, on the upstream's own `PATH`; a relative path with a slash is taken from
/// its directory.
fn find_program(command: &str, path: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let p = cwd.join(command);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|dir| cwd.join(dir).join(command))
        .find(|p| executable(p))
}

/// The layers of one life, for `doctor`: each `name: state`, or why the server is not contained.
pub(crate) fn describe(config: &ServerConfig, child: &Piped) -> Vec<String> {
    if !config.sandbox.enabled {
        return vec!["not contained (\"sandbox\": {\"enabled\": false})".to_owned()];
    }
    child
        .layers()
        .entries
        .iter()
        .map(|e| format!("{}: {}", e.layer, e.state))
        .collect()
}

/// Starts the child on the sandbox's keeper thread (it dies with the thread that started it, and with
/// toolgate).
pub(crate) async fn spawn(spec: PipedSpec) -> Result<Piped, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    sandbox::spawn_kept(
        spec,
        Box::new(move |started| {
            // A connect abandoned meanwhile drops the child here, which kills it.
            let _ = tx.send(started);
        }),
    )
    .map_err(|e| e.to_string())?;
    match rx.await {
        Ok(started) => started.map_err(|e| e.to_string()),
        Err(_) => Err("the sandbox keeper thread is gone".to_owned()),
    }
}

/// Ends a tree whose stdin was just closed: `grace` to exit on its own, then TERM and `grace` again, then
/// KILL; reaped on the keeper thread.
pub(crate) async fn terminate(mut child: Piped, grace: Duration) {
    if !exited_within(&mut child, grace).await {
        child.signal_group(sandbox::Signal::SIGTERM);
        exited_within(&mut child, grace).await;
    }
    sandbox::dispose(child);
}

async fn exited_within(child: &mut Piped, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if child.has_exited() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(EXIT_POLL).await;
    }
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;
