//! Reloading `serve`'s configuration while it serves: on SIGHUP, and when the config file or a credential's
//! `valueFile` changes (its size, modification time and content, looked at once a second on a blocking thread),
//! so a secret rotated by rewriting its file is in force within a second. The new file is loaded and
//! checked whole exactly as at start-up (its policy and every profile compiling, each server entry valid, the
//! JWKS file loading, each profile an API key names servable); anything that fails leaves the old
//! configuration in force, and stderr says why. Then it is put in force: the HTTP API keys and JWKS first (a
//! revoked key is refused from its next request on, `frontend::AuthReload`), then the policy, the profiles and
//! the upstreams (`Gateway::apply_reload`: servers added start, removed ones stop, changed ones restart,
//! unchanged ones are left alone). Sessions and calls under way, held ones included, carry on.
//!
//! What is read only at start — the listener's address and its other HTTP settings, turning authentication on
//! or off, the state root, the store, the audit witness, hooks, the sandbox layers every server must have, and
//! the gateway's options (names, limits, approvals, pins, rate limits, code mode's run timeout, telemetry,
//! reporting) — takes a restart: a reload that finds one changed applies the rest and names that section on stderr
//! (`not_applied`). A changed workspace or mode refuses the reload, since the policy is compiled for them.

use config::Config;
use gateway::Gateway;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How often the config file is looked at.
const POLL: Duration = Duration::from_secs(1);

/// Loads the configuration again the way the command loaded it at start (same flags, same checks).
pub type Load = Box<dyn Fn() -> anyhow::Result<Config> + Send + Sync>;

/// What `serve` reloads from: how to load, the file to watch (none when no file was found at start), the
/// configuration it started with, whose settings read only at start stay in force, and the HTTP front end's
/// authentication when it serves HTTP.
pub struct Reloader {
    load: Load,
    file: Option<PathBuf>,
    started: Config,
    auth: Option<frontend::AuthReload>,
    /// The value files of the credentials in force, watched beside the config file.
    secrets: std::sync::Mutex<Vec<PathBuf>>,
}

impl Reloader {
    pub fn new(load: Load, started: &Config) -> Self {
        Self {
            load,
            file: started.source.clone(),
            started: started.clone(),
            auth: None,
            secrets: std::sync::Mutex::new(secret_files(started)),
        }
    }

    /// The files whose change reloads: the config file, then the credentials' value files.
    fn watched(&self) -> Vec<PathBuf> {
        let secrets = self.secrets.lock().unwrap_or_else(|p| p.into_inner());
        self.file.iter().chain(secrets.iter()).cloned().collect()
    }

    /// Reloads the API keys and JWKS of this HTTP front end too.
    pub fn with_auth(mut self, auth: frontend::AuthReload) -> Self {
        self.auth = Some(auth);
        self
    }
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
    let mut last = fingerprint(reloader.watched()).await;
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let cause = tokio::select! {
            _ = hup.recv() => "SIGHUP",
            _ = tick.tick() => {
                let now = fingerprint(reloader.watched()).await;
                if now == last {
                    continue;
                }
                match (reloader.file.is_some(), now.first() == last.first()) {
                    (true, false) => "the config file changed",
                    _ => "a credential's value file changed",
                }
            }
        };
        match reload_once(&gw, &reloader).await {
            Ok(done) => eprintln!("toolgate: config reloaded ({cause}){}", done.describe()),
            Err(e) => eprintln!(
                "toolgate: config not reloaded ({cause}); the previous one stays in force: {}",
                crate::runtime::error_chain(&e)
            ),
        }
        // A reload caused by a signal also takes in the files as they are now, so it does not reload twice.
        last = fingerprint(reloader.watched()).await;
    }
}

/// What one reload did, for its line on stderr.
struct Done {
    upstreams: gateway::Applied,
    /// Legacy HTTP sessions ended because their caller's credential was revoked.
    ended: usize,
    /// The sections read only at start that differ from the running ones.
    kept: Vec<&'static str>,
}

impl Done {
    fn describe(&self) -> String {
        let mut out = String::new();
        for (what, names) in [
            ("started", &self.upstreams.added),
            ("stopped", &self.upstreams.removed),
            ("restarted", &self.upstreams.restarted),
        ] {
            if !names.is_empty() {
                out.push_str(&format!("; servers {what}: {}", names.join(", ")));
            }
        }
        if self.ended > 0 {
            out.push_str(&format!(
                "; {} HTTP session(s) of revoked callers ended",
                self.ended
            ));
        }
        if !self.kept.is_empty() {
            out.push_str(&format!(
                "; what changed in {} takes a restart of toolgate and is not applied",
                self.kept.join(", ")
            ));
        }
        out
    }
}

/// Loads and checks the configuration whole, then puts it in force; on error nothing changed.
async fn reload_once(gw: &Gateway, reloader: &Reloader) -> anyhow::Result<Done> {
    let config = (reloader.load)()?;
    let guard = crate::runtime::serve_guard(&config)?;
    let next = gw.prepare_reload(&config, Arc::new(guard))?;
    let mut kept = not_applied(&reloader.started, &config);
    // Turning authentication on or off takes a restart; the keys of an authenticated server are reloaded.
    let auth = match &reloader.auth {
        Some(auth) if reloader.started.http.auth.any() == config.http.auth.any() => {
            let prepared = auth.prepare(&config.http, |p| next.check_profile(p))?;
            Some((auth, prepared))
        }
        Some(_) => {
            kept.push("http.auth (turning authentication on or off)");
            None
        }
        None => None,
    };
    let ended = auth.map_or(0, |(auth, prepared)| auth.apply(prepared));
    let upstreams = gw.apply_reload(next).await?;
    *reloader.secrets.lock().unwrap_or_else(|p| p.into_inner()) = secret_files(&config);
    Ok(Done {
        upstreams,
        ended,
        kept,
    })
}

/// The sections of `next` that a reload does not apply and that differ from what serving started with.
fn not_applied(started: &Config, next: &Config) -> Vec<&'static str> {
    let (a, b) = (&started.http, &next.http);
    let changed = [
        ("http.listen", a.listen != b.listen),
        (
            "http.allowedHosts/allowedOrigins",
            a.allowed_hosts != b.allowed_hosts || a.allowed_origins != b.allowed_origins,
        ),
        ("http.admin", a.admin != b.admin),
        ("http.limits", a.limits != b.limits),
        (
            "separator/prefixTools",
            started.separator != next.separator || started.prefix_tools != next.prefix_tools,
        ),
        ("limits", started.limits != next.limits),
        ("approvals", started.approvals != next.approvals),
        (
            "pins",
            started.pins_on_change_ask != next.pins_on_change_ask
                || started.pins_accept_new_tools != next.pins_accept_new_tools,
        ),
        ("rateLimits", started.rate_limits != next.rate_limits),
        ("sandbox.timeoutSeconds", started.code != next.code),
        ("telemetry", started.telemetry != next.telemetry),
        ("tool_use_reporting", started.reporting != next.reporting),
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
async fn fingerprint(files: Vec<PathBuf>) -> Vec<Option<(u64, std::time::SystemTime, u64)>> {
    tokio::task::spawn_blocking(move || files.iter().map(|f| read_fingerprint(f)).collect())
        .await
        .unwrap_or_default()
}

/// The value files of `config`'s credentials.
fn secret_files(config: &Config) -> Vec<PathBuf> {
    config
        .credentials
        .iter()
        .filter_map(|c| match &c.source {
            config::SecretSource::File(path) => Some(path.clone()),
            config::SecretSource::Value => None,
        })
        .collect()
}

fn read_fingerprint(file: &Path) -> Option<(u64, std::time::SystemTime, u64)> {
    use std::hash::{Hash, Hasher};
    let meta = std::fs::metadata(file).ok()?;
    let bytes = std::fs::read(file).ok()?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    Some((meta.len(), meta.modified().ok()?, hasher.finish()))
}
