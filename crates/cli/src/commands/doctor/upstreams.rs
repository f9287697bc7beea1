//! `doctor`'s last part: every upstream started once, with progress on stderr while slow ones start, and
//! what each one answered (its era, catalog size, last error, and any tool quarantined or flagged).

use std::sync::Arc;

/// Waits for the upstreams' first start, saying on stderr which ones it is still waiting for, so a slow `npx`
/// download does not look like a hang.
async fn with_progress(gw: &Arc<gateway::Gateway>, config: &config::Config) {
    if config.servers.is_empty() {
        return gw.ready().await;
    }
    let longest = config
        .servers
        .iter()
        .map(|s| {
            s.startup_timeout
                .unwrap_or(config.limits.startup_timeout.value)
        })
        .max()
        .unwrap_or_default();
    eprintln!(
        "doctor: starting {} upstream(s), waiting up to {} s…",
        config.servers.len(),
        longest.as_secs_f64()
    );
    let ready = gw.ready();
    tokio::pin!(ready);
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(2));
    tick.tick().await;
    loop {
        tokio::select! {
            r = &mut ready => return r,
            _ = tick.tick() => {
                let waiting: Vec<String> = gw
                    .statuses()
                    .into_iter()
                    .filter(|s| matches!(s.state, upstream::State::Starting | upstream::State::Backoff))
                    .map(|s| s.server)
                    .collect();
                if !waiting.is_empty() {
                    eprintln!("doctor: still waiting for {}", waiting.join(", "));
                }
            }
        }
    }
}

/// Starts every upstream once, reports each, and says whether all stdio upstreams came up.
pub(super) async fn upstreams(
    config: &config::Config,
    guard: Arc<gateway::Guard>,
    state: Option<Arc<gateway::State>>,
    builtin: Option<Arc<builtin::Builtin>>,
) -> bool {
    let opts = crate::runtime::gateway_options(config, false);
    let gw = gateway::Gateway::start_with(config, opts, guard, state, builtin);
    with_progress(&gw, config).await;
    let statuses = gw.statuses();
    let pins = gw.pins();
    let held = gw.aggregate().held.clone();
    gw.shutdown().await;
    println!(
        "upstreams:{}",
        if statuses.is_empty() {
            " none configured"
        } else {
            ""
        }
    );
    let mut healthy = held.is_empty();
    // As wide as the longest name, so long names keep the columns aligned.
    let width = statuses.iter().map(|s| s.server.len()).fold(16, usize::max);
    for s in &statuses {
        let mut line = format!("  {:<width$} {:<14}", s.server, s.state.as_str());
        if let Some(v) = &s.protocol_version {
            line.push_str(&format!(
                " {v}  {} tools, {} resources, {} prompts",
                s.tools, s.resources, s.prompts
            ));
        }
        match &s.last_error {
            Some(e) => line.push_str(&format!("  — {}", audit::redact(e))),
            // Still starting when doctor stopped waiting: the process runs but never finished the handshake.
            None if s.state == upstream::State::Starting => line.push_str(&format!(
                "  — no answer to the handshake within {} s (the server runs but did not complete initialize; \
                 see its stderr below, or raise startup_timeout_sec)",
                startup_timeout(config, &s.server).as_secs()
            )),
            None => {}
        }
        println!("{line}");
        for (list, why) in &s.list_errors {
            println!("      {list} served empty: {}", audit::redact(why));
        }
        if !s.containment.is_empty() {
            println!("      contained: {}", s.containment.join(", "));
        }
        // Servers print tokens and URLs with keys on stderr more often than they should.
        for l in s.stderr_tail.iter().rev().take(3).rev() {
            println!("      stderr: {}", audit::redact(l));
        }
        healthy &= s.state == upstream::State::Ready;
    }
    if !held.is_empty() {
        println!("not served (fix the server or the names, then restart):");
        for h in &held {
            println!("  {} {} {:?}: {}", h.server, h.kind, h.name, h.reason);
        }
    }
    let mut flagged: Vec<_> = pins.iter().filter(|(_, p)| p.withheld()).collect();
    flagged.sort_by(|a, b| a.0.cmp(b.0));
    if !flagged.is_empty() {
        println!("held back (hidden and refused until reviewed with `toolgate pins`):");
        for (name, pin) in flagged {
            if pin.quarantined && pin.new {
                println!(
                    "  {name}: NEW (not offered when its server was first listed; never accepted)"
                );
            } else if pin.quarantined {
                println!("  {name}: QUARANTINED (changed since it was accepted)");
            }
            for f in &pin.flags {
                println!("  {name}: flagged — {f}");
            }
        }
    }
    healthy
}

/// How long `server` may take to answer the handshake: its own setting, else the config's.
fn startup_timeout(config: &config::Config, server: &str) -> std::time::Duration {
    config
        .servers
        .iter()
        .find(|s| s.name == server)
        .and_then(|s| s.startup_timeout)
        .unwrap_or(config.limits.startup_timeout.value)
}
