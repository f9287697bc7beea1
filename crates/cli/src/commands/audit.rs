//! `toolgate audit`: reading, verifying and pruning the workspace's tamper-evident audit log.
//!
//! The log is the one the gateway appends to, in the workspace's state namespace. `tail` shows the newest events
//! (one readable line each, or the raw records); `verify` checks the hash chain against the head and anchors kept
//! in the state database and exits 1 naming the first bad line; `prune` keeps the newest N events and is a dry
//! run unless told to apply; `recover` sets a damaged log aside and starts a new one that continues the chain,
//! which lets a gateway that refuses calls for want of an audit log run again. Every text field shown comes from
//! the log, which an agent's calls fed, so it is escaped for the terminal. This command never writes events.

use super::common::ConfigArgs;
use super::escape::{label, quoted};
use ::audit::PruneMode;
use anyhow::Context;
use gateway::State;
use serde_json::Value;
use std::process::ExitCode;

/// Exit status when the log does not verify.
const BROKEN: u8 = 1;

/// Read, verify and prune the workspace's tamper-evident audit log.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
    // Here, so `audit --config X tail` and `audit tail --config X` both work (the flags are global).
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Print the newest events, oldest first: one readable line each, or the raw JSON records with --json.
    Tail(TailArgs),
    /// Check the hash chain of the whole log, and that it still reaches the newest event recorded as written and
    /// starts from a genuine anchor; exits 1 naming the first bad line when it does not.
    Verify(VerifyArgs),
    /// Keep only the newest N events (a dry run unless --apply); a log that does not verify is refused.
    Prune(PruneArgs),
    /// Set a log that does not verify aside (renamed, nothing deleted) and start a new one continuing the chain,
    /// so calls can run again; the gap stays visible as an anchor naming the set-aside file.
    Recover(VerifyArgs),
}

#[derive(clap::Args)]
struct TailArgs {
    /// How many events to print.
    #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 20)]
    lines: usize,
    /// Print the records as stored, one JSON object per line.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct VerifyArgs {}

#[derive(clap::Args)]
struct PruneArgs {
    /// How many of the newest events to keep.
    #[arg(long, value_name = "N")]
    keep_last: u64,
    /// Rewrite the log; without this flag the command only says what would go.
    #[arg(long)]
    apply: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = &args.config;
    match args.action {
        Action::Tail(a) => tail(&state(config)?, a.lines, a.json),
        Action::Verify(_) => verify(&state(config)?),
        Action::Prune(a) => prune(&state(config)?, a.keep_last, a.apply),
        Action::Recover(_) => recover(&state(config)?),
    }
}

fn state(config: &ConfigArgs) -> anyhow::Result<State> {
    crate::runtime::state(&config.load()?)
}

fn tail(state: &State, n: usize, json: bool) -> anyhow::Result<ExitCode> {
    let events = state
        .audit_log()
        .tail(n)
        .context("cannot read the audit log")?;
    for event in &events {
        if json {
            println!("{}", serde_json::to_string(event)?);
        } else {
            println!("{}", readable(event));
        }
    }
    if events.is_empty() && !json {
        eprintln!("the audit log has no events");
    }
    Ok(ExitCode::SUCCESS)
}

/// Verifies this process's log and, on a store replicas share, every other replica's chain the store witnesses
/// (each replica writes its own): all must verify.
fn verify(state: &State) -> anyhow::Result<ExitCode> {
    let report = state.verify_audit().map_err(anyhow::Error::msg)?;
    println!("{}: {report}", state.audit_log().path().display());
    let mut ok = report.is_ok();
    for (chain, path, report) in state.verify_other_chains().map_err(anyhow::Error::msg)? {
        println!("{} (replica {chain:?}): {report}", path.display());
        if !report.is_ok() {
            ok = false;
            if !path.exists() {
                println!(
                    "  the log of replica {chain:?} is not in this state root: verify it where that replica runs \
                     (TOOLGATE_REPLICA={chain} toolgate audit verify), or copy it here first"
                );
            }
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(BROKEN)
    })
}

/// Evidence is removed or set aside only by the operator: a process descended from a running gateway (the
/// agent's or an upstream's) that prunes to nothing would otherwise leave a log that verifies.
fn refuse_gateway_descendant(what: &str) -> Option<ExitCode> {
    let why = crate::harden::gateway_ancestor()?;
    eprintln!("toolgate: not {what}: {why}; run it from the operator's own terminal or script");
    Some(ExitCode::from(1))
}

/// Keeps the newest `keep` events of the log `state` holds (a dry run unless `apply`).
pub(crate) fn prune(state: &State, keep: u64, apply: bool) -> anyhow::Result<ExitCode> {
    if apply {
        if let Some(refused) = refuse_gateway_descendant("pruned") {
            return Ok(refused);
        }
    }
    let mode = if apply {
        PruneMode::Apply
    } else {
        PruneMode::DryRun
    };
    let plan = state.prune_audit(keep, mode).map_err(anyhow::Error::msg)?;
    let (removed, total, kept) = (plan.removed, plan.total_events, plan.kept);
    if removed == 0 {
        println!("nothing to prune: the log holds {total} events, at most {keep} are kept");
    } else if apply {
        println!("removed {removed} of {total} events; kept the newest {kept}");
    } else {
        println!("would remove {removed} of {total} events and keep the newest {kept} (dry run; add --apply to rewrite the log)");
    }
    Ok(ExitCode::SUCCESS)
}

fn recover(state: &State) -> anyhow::Result<ExitCode> {
    if let Some(refused) = refuse_gateway_descendant("recovered") {
        return Ok(refused);
    }
    match state.recover_audit().map_err(anyhow::Error::msg)? {
        None => println!(
            "{}: verifies; nothing to recover",
            state.audit_log().path().display()
        ),
        Some(r) => println!(
            "set the damaged log aside as {}; the new log continues the chain at sequence {}",
            r.set_aside.display(),
            r.anchor.next_seq
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per event: `seq time kind decision server/tool operation outcome reason`, then the optional
/// correlations as `key=value`. Missing fields show as `-`.
fn readable(event: &Value) -> String {
    let field = |k: &str| match event.get(k) {
        None | Some(Value::Null) => "-".to_owned(),
        Some(Value::String(s)) if s.is_empty() => "-".to_owned(),
        Some(Value::String(s)) => label(s),
        Some(other) => super::escape::json_ascii(other),
    };
    let target = match (event.get("server"), event.get("tool")) {
        (Some(Value::String(s)), Some(Value::String(t))) if !s.is_empty() || !t.is_empty() => {
            format!("{}/{}", label(s), label(t))
        }
        _ => "-".to_owned(),
    };
    let mut line = format!(
        "#{seq} {time} {kind} {decision} {target} {operation} {outcome} {reason}",
        seq = field("seq"),
        time = field("time"),
        kind = field("kind"),
        decision = field("decision"),
        operation = field("operation"),
        outcome = field("outcome"),
        reason = field("reason_code"),
    );
    for key in [
        "profile",
        "rule_id",
        "rule_at",
        "request_id",
        "actor",
        "duration_ms",
        "trace_id",
        "parent_trace_id",
        "resources_omitted",
    ] {
        if event.get(key).is_some_and(|v| !v.is_null() && v != "") {
            line.push_str(&format!(" {key}={}", field(key)));
        }
    }
    // Resources last: they are the longest part of a line.
    if let Some(Value::Array(resources)) = event.get("resources") {
        let shown: Vec<String> = resources
            .iter()
            .map(|r| r.as_str().map_or_else(|| "?".to_owned(), quoted))
            .collect();
        if !shown.is_empty() {
            line.push_str(&format!(" resources=[{}]", shown.join(",")));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn readable_line_escapes_and_skips_missing_fields() {
        let event = json!({
            "seq": 3, "time": "2026-11-30T01:02:03.004Z", "kind": "execution", "decision": "allow",
            "server": "fs", "tool": "write_file", "operation": "fs.write", "outcome": "SUCCEEDED",
            "reason_code": "RULE_ALLOW", "trace_id": "t\u{202e}1", "duration_ms": 12,
            "resources": ["/ws/a\nb"], "hash": "x", "prev": "y",
        });
        assert_eq!(
            readable(&event),
            "#3 2026-11-30T01:02:03.004Z execution allow fs/write_file fs.write SUCCEEDED RULE_ALLOW \
             duration_ms=12 trace_id=\"t\\u202e1\" resources=[\"/ws/a\\nb\"]"
        );
    }

    #[test]
    fn a_program_call_names_its_run() {
        let event = json!({"seq": 2, "time": "t", "kind": "decision", "decision": "deny", "server": "fx",
                           "tool": "env_keys", "operation": "mcp.call", "reason_code": "DENY_RULE",
                           "trace_id": "c1", "parent_trace_id": "run1"});
        assert_eq!(
            readable(&event),
            "#2 t decision deny fx/env_keys mcp.call - DENY_RULE trace_id=c1 parent_trace_id=run1"
        );
    }

    #[test]
    fn an_approval_event_without_a_target() {
        let event = json!({"seq": 1, "time": "t", "kind": "approval", "server": "", "tool": "",
                           "outcome": "APPROVED", "actor": "alice", "request_id": "apr_1"});
        assert_eq!(
            readable(&event),
            "#1 t approval - - - APPROVED - request_id=apr_1 actor=alice"
        );
    }
}
