//! Reloading `serve`'s configuration while it serves: on SIGHUP, and when the config file changes (its size,
//! modification time and content, looked at once a second on a blocking thread). The new file is loaded and its
//! policy compiled exactly as at start-up; anything that fails leaves the old configuration in force, and stderr
//! says why. What is reloaded is the policy and its profiles (`Gateway::reload_policy`); sessions and calls
//! under way, held ones included, carry on.
//!
//! It does not restart upstreams or the HTTP listener, nor re-read API keys: a change to those takes a restart,
//! and a reload that finds one changed says so on stderr (`not_applied`).

use config::Config;
use gateway::Gateway;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How often the config file is looked at.
const POLL: Duration = Duration::from_secs(1);

/// Loads the configuration again the way the command loaded it at start (same flags, same checks).
pub type Load = Box<dyn Fn() -> anyhow::Result<Config> + Send + Sync>;

/// What `serve` reloads from: how to load, the file to watch (none when no file was found at start), and the
/// configuration it started with, whose settings read only at start stay in force.
pub struct Reloader {
    pub load: Load,
    pub file: Option<PathBuf>,
    pub started: Config,
}

/// Reloads on every SIGHUP and every change of the file, until the gateway's runtime ends.
pub async fn watch(gw: Arc<Gateway>, reloader: Reloader) {
    let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot listen for SIGHUP, the config is not reloaded on it: {e}");
            return;
        }
    };
    let mut last = fingerprint(reloader.file.clone()).await;
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let cause = tokio::select! {
            _ = hup.recv() => "SIGHUP",
            _ = tick.tick() => {
                let now = fingerprint(reloader.file.clone()).await;
                if now == last {
                    continue;
                }
                "the config file changed"
            }
        };
        match reload_once(&gw, &reloader).await {
            Ok(kept) if kept.is_empty() => eprintln!("toolgate: config reloaded ({cause})"),
            Ok(kept) => eprintln!(
                "toolgate: config reloaded ({cause}); what changed in {} takes a restart of toolgate and is \
                 not applied",
                kept.join(", ")
            ),
            Err(e) => eprintln!(
                "toolgate: config not reloaded ({cause}); the previous one stays in force: {}",
                crate::runtime::error_chain(&e)
            ),
        }
        // A reload caused by a signal also takes in the file as it is now, so it does not reload twice.
        last = fingerprint(reloader.file.clone()).await;
    }
}

/// Reloads the policy; returns the sections read only at start that differ from the running ones.
async fn reload_once(gw: &Gateway, reloader: &Reloader) -> anyhow::Result<Vec<&'static str>> {
    let config = (reloader.load)()?;
    let guard = crate::runtime::load_guard(&config)?;
    gw.reload_policy(&config, Arc::new(guard)).await?;
    Ok(not_applied(&reloader.started, &config))
}

/// The sections of `next` that a reload does not apply and that differ from what serving started with.
fn not_applied(started: &Config, next: &Config) -> Vec<&'static str> {
    let changed = [
        ("mcpServers", started.servers != next.servers),
        ("http", started.http != next.http),
        ("hooks", started.hooks != next.hooks),
        ("sandbox", started.sandbox != next.sandbox),
        ("store", started.store != next.store),
        ("stateDir", started.state_dir != next.state_dir),
        ("auditWitness", started.audit_witness != next.audit_witness),
    ];
    changed
        .into_iter()
        .filter_map(|(name, differs)| differs.then_some(name))
        .collect()
}

/// The file's size, modification time and a hash of its content; `None` when it cannot be read.
async fn fingerprint(file: Option<PathBuf>) -> Option<(u64, std::time::SystemTime, u64)> {
    let file = file?;
    tokio::task::spawn_blocking(move || read_fingerprint(&file))
        .await
        .ok()
        .flatten()
}

fn read_fingerprint(file: &Path) -> Option<(u64, std::time::SystemTime, u64)> {
    use std::hash::{Hash, Hasher};
    let meta = std::fs::metadata(file).ok()?;
    let bytes = std::fs::read(file).ok()?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    Some((meta.len(), meta.modified().ok()?, hasher.finish()))
}
