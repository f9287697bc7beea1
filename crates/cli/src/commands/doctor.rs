//! `toolgate doctor`: explains the effective configuration (each value and where it came from) and starts every
//! upstream once to show whether it works, with its protocol era, catalog size and last error.

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
    println!("  {name:<24} {value:<16} ({from})");
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    println!("toolgate {} doctor", env!("CARGO_PKG_VERSION"));
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
    match &config.workspace {
        Some(w) => row("workspace", w.value.display(), &w.from),
        None => println!("  {:<24} none", "workspace"),
    }
    println!(
        "upstream environment passes through only: {}",
        config::UPSTREAM_ENV_ALLOWLIST.join(", ")
    );
    let guard = std::sync::Arc::new(crate::runtime::load_guard(&config)?);
    match guard.profile() {
        Some(p) => println!("policy: loaded, profile {p:?}"),
        None => println!(
            "policy: loaded{}",
            if config.policy.is_empty() {
                " (none configured: every call asks)"
            } else {
                ""
            }
        ),
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
    let rt = crate::runtime::tokio()?;
    let healthy = rt.block_on(async {
        let gw = gateway::Gateway::start(
            &config,
            gateway::Options::from_config(&config, false),
            guard,
            state,
        );
        let ready = Arc::clone(&gw).ready().await;
        let statuses = gw.statuses();
        gw.shutdown().await;
        if let Err(e) = &ready {
            println!("catalog: {e}");
        }
        println!(
            "upstreams: {}",
            if statuses.is_empty() {
                "none configured"
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
                line.push_str(&format!("  — {e}"));
            }
            println!("{line}");
            for l in s.stderr_tail.iter().rev().take(3).rev() {
                println!("      stderr: {l}");
            }
            healthy &= matches!(
                s.state,
                upstream::State::Ready | upstream::State::NotConnected
            );
        }
        healthy
    });
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
