//! `toolgate doctor`: explains the effective configuration (each value and where it came from), the policy, the
//! state directory, which containment layers this machine offers, and starts every upstream once to show
//! whether it works — its protocol era, catalog size, last error, and any tool that is quarantined or flagged.

use super::common::ConfigArgs;
use std::fmt::Display;
use std::process::ExitCode;
use std::sync::Arc;

/// Check the configuration and every upstream server, then exit (0 when all stdio upstreams start).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
}

fn row(name: &str, value: impl Display, from: &config::Provenance) {
    println!("  {name:<30} {value:<16} ({from})");
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    println!("toolgate {} doctor", env!("CARGO_PKG_VERSION"));
    settings(&config);
    let guard = Arc::new(crate::runtime::load_guard(&config)?);
    match (guard.profile(), config.policy.is_empty()) {
        (Some(p), _) => println!("policy: loaded, profile {p:?}"),
        (None, true) => {
            println!("policy: none configured — every call asks (toolgate's own reads excepted)")
        }
        (None, false) => println!("policy: loaded"),
    }
    for hook in config.hooks.pre.iter().chain(&config.hooks.post) {
        let tools = if hook.tools.is_empty() {
            "every tool".to_owned()
        } else {
            hook.tools.join(", ")
        };
        println!(
            "hook: {:?}[{}] {} (timeout {} s, {tools}) — {}",
            hook.stage,
            hook.index,
            hook.command,
            hook.timeout.as_secs(),
            hook.from
        );
    }
    let state = crate::runtime::serve_state(&config)?;
    match &state {
        Some(s) => println!(
            "state: {} (approvals, pins, audit, reporting)",
            s.namespace().dir().display()
        ),
        None => println!(
            "state: none — approvals are off and every `ask` is refused (see the warning above)"
        ),
    }
    let audit_ok = state.as_ref().is_none_or(|s| audit_health(s));
    let builtin = crate::runtime::builtin_tools(&config)?;
    match &builtin {
        Some(b) => println!(
            "workspace tools: served for {}",
            b.workspace().root().display()
        ),
        None => println!(
            "workspace tools: not served (give --workspace or \"workspace\" to serve them)"
        ),
    }
    println!("containment layers for commands on this machine:");
    for entry in sandbox::probe().entries {
        println!("  {:<16} {:?}", format!("{:?}", entry.layer), entry.state);
    }
    let rt = crate::runtime::tokio()?;
    let healthy = rt.block_on(upstreams(&config, guard, state, builtin)) && audit_ok;
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The audit line: the whole log verified against its witness, and whether records can be written now (calls are
/// refused while they cannot).
fn audit_health(state: &gateway::State) -> bool {
    let verified = match state.verify_audit() {
        Ok(report) => {
            println!("audit: {} — {report}", state.audit_log().path().display());
            report.is_ok()
        }
        Err(e) => {
            println!("audit: FAILED — {e}");
            false
        }
    };
    match state.audit_problem() {
        None => verified,
        Some(p) => {
            println!(
                "audit: FAILING — {p}; calls are refused until `toolgate audit recover` repairs it"
            );
            false
        }
    }
}

fn settings(config: &config::Config) {
    match &config.source {
        Some(p) => println!("config: {}", p.display()),
        None => println!("config: none (only toolgate's own tools are served)"),
    }
    let l = &config.limits;
    row(
        "separator",
        format!("{:?}", config.separator.value),
        &config.separator.from,
    );
    row(
        "prefixTools",
        config.prefix_tools.value,
        &config.prefix_tools.from,
    );
    row(
        "limits.maxMessageBytes",
        l.max_message_bytes.value,
        &l.max_message_bytes.from,
    );
    row("limits.maxDepth", l.max_depth.value, &l.max_depth.from);
    row(
        "limits.requestTimeoutSeconds",
        l.request_timeout.value.as_secs(),
        &l.request_timeout.from,
    );
    row(
        "limits.startupTimeoutSeconds",
        l.startup_timeout.value.as_secs(),
        &l.startup_timeout.from,
    );
    row("limits.pageSize", l.page_size.value, &l.page_size.from);
    let a = &config.approvals;
    row(
        "approvals.wait_seconds",
        a.wait.value.as_secs(),
        &a.wait.from,
    );
    row(
        "approvals.expire_seconds",
        a.expire.value.as_secs(),
        &a.expire.from,
    );
    row(
        "approvals.elicitation",
        a.elicitation.value,
        &a.elicitation.from,
    );
    match &config.workspace {
        Some(w) => row("workspace", w.value.display(), &w.from),
        None => println!(
            "  {:<30} none (the current directory stands in for state)",
            "workspace"
        ),
    }
    if let Some(s) = &config.state_dir {
        row("stateDir", s.value.display(), &s.from);
    }
    println!(
        "upstream environment passes through only: {}",
        config::UPSTREAM_ENV_ALLOWLIST.join(", ")
    );
}

/// Starts every upstream once, reports each, and says whether all stdio upstreams came up.
async fn upstreams(
    config: &config::Config,
    guard: Arc<gateway::Guard>,
    state: Option<Arc<gateway::State>>,
    builtin: Option<Arc<builtin::Builtin>>,
) -> bool {
    let opts = gateway::Options::from_config(config, false);
    let gw = gateway::Gateway::start_with(config, opts, guard, state, builtin);
    let ready = Arc::clone(&gw).ready().await;
    let statuses = gw.statuses();
    let pins = gw.pins();
    gw.shutdown().await;
    if let Err(e) = &ready {
        println!("catalog: {e}");
    }
    println!(
        "upstreams:{}",
        if statuses.is_empty() {
            " none configured"
        } else {
            ""
        }
    );
    let mut healthy = ready.is_ok();
    for s in &statuses {
        let mut line = format!("  {:<16} {:<14}", s.server, s.state.as_str());
        if let Some(v) = &s.protocol_version {
            line.push_str(&format!(
                " {v}  {} tools, {} resources, {} prompts",
                s.tools, s.resources, s.prompts
            ));
        }
        if let Some(e) = &s.last_error {
            line.push_str(&format!("  — {}", audit::redact(e)));
        }
        println!("{line}");
        // Servers print tokens and URLs with keys on stderr more often than they should.
        for l in s.stderr_tail.iter().rev().take(3).rev() {
            println!("      stderr: {}", audit::redact(l));
        }
        healthy &= matches!(
            s.state,
            upstream::State::Ready | upstream::State::NotConnected
        );
    }
    let mut flagged: Vec<_> = pins.iter().filter(|(_, p)| p.withheld()).collect();
    flagged.sort_by(|a, b| a.0.cmp(b.0));
    if !flagged.is_empty() {
        println!("held back (hidden and refused until reviewed with `toolgate pins`):");
        for (name, pin) in flagged {
            if pin.quarantined {
                println!("  {name}: QUARANTINED (changed since it was pinned, or new on a server already listed)");
            }
            for f in &pin.flags {
                println!("  {name}: flagged — {f}");
            }
        }
    }
    healthy
}
