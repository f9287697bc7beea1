//! `mcp-unified-gateway tool-events`: the metadata-only reporting events of the config's store. `report` is
//! `toolgate report`; `export` writes the events themselves as JSON Lines (or one JSON array); `cleanup` deletes
//! what the retention — the config's, or the limits given — no longer keeps. Each refuses while the config turns
//! reporting off. An event holds who called which tool, how it was decided and how it went; there is no field
//! for arguments, results, secrets or error text (`store::ReportEvent`), so no export can carry them.

use crate::commands::report::{parse_since, Since};
use crate::products::unified::Place;
use crate::products::unified_remote::Remote;
use anyhow::Context;
use clap::Parser;
use serde_json::{json, Value};
use std::io::Write;
use std::process::ExitCode;

/// Events an export writes when `--limit` is not given: the newest this many.
const EXPORT_DEFAULT_LIMIT: u64 = 1000;

#[derive(clap::Args)]
pub(crate) struct EventsArgs {
    #[command(subcommand)]
    command: Events,
}

#[derive(clap::Subcommand)]
enum Events {
    /// Aggregate counts, success rates, top reason codes and latency percentiles.
    Report(ReportArgs),
    /// The events themselves, oldest first: metadata only (no arguments, results, secrets or error text).
    Export(ExportArgs),
    /// Delete the events past the retention now: the config's, or the limits given.
    Cleanup(CleanupArgs),
}

#[derive(clap::Args)]
struct ReportArgs {
    /// server, tool, profile or decision.
    #[arg(long, value_name = "GROUP")]
    group_by: String,
    /// Only events at or after this (24h, 7d, or an RFC 3339 time).
    #[arg(long)]
    since: Option<String>,
    /// table, json or csv.
    #[arg(long)]
    format: Option<String>,
    /// Ask the running gateway at $MCP_UNIFIED_GATEWAY_URL (its admin API, with the key in
    /// $MCP_UNIFIED_GATEWAY_ADMIN_KEY) about its own reporting store.
    #[arg(long, conflicts_with_all = ["config", "workspace"])]
    remote: bool,
    #[command(flatten)]
    place: Place,
}

#[derive(clap::Args)]
struct ExportArgs {
    /// jsonl (one event per line) or json (one array).
    #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
    format: ExportFormat,
    /// Only events at or after this: a span back from now (24h, 7d) or an RFC 3339 time.
    #[arg(long, value_name = "DURATION|RFC3339", value_parser = parse_since)]
    since: Option<Since>,
    /// At most this many events, the newest.
    #[arg(long, default_value_t = EXPORT_DEFAULT_LIMIT)]
    limit: u64,
    /// Ask the running gateway at $MCP_UNIFIED_GATEWAY_URL (its admin API, with the key in
    /// $MCP_UNIFIED_GATEWAY_ADMIN_KEY) about its own reporting store.
    #[arg(long, conflicts_with_all = ["config", "workspace"])]
    remote: bool,
    #[command(flatten)]
    place: Place,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ExportFormat {
    /// JSON Lines: one event per line.
    Jsonl,
    /// One JSON array.
    Json,
}

#[derive(clap::Args)]
struct CleanupArgs {
    /// Delete events older than this many days (default: tool_use_reporting.retention_max_age_days).
    #[arg(long, value_name = "DAYS")]
    max_age_days: Option<u32>,
    /// Keep at most this many of the newest events (default: tool_use_reporting.retention_max_events).
    #[arg(long, value_name = "N")]
    max_events: Option<u64>,
    /// Ask the running gateway at $MCP_UNIFIED_GATEWAY_URL (its admin API, with the key in
    /// $MCP_UNIFIED_GATEWAY_ADMIN_KEY) about its own reporting store.
    #[arg(long, conflicts_with_all = ["config", "workspace"])]
    remote: bool,
    #[command(flatten)]
    place: Place,
}

pub(crate) fn events(args: EventsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Events::Report(a) => report(a),
        Events::Export(a) => export(a),
        Events::Cleanup(a) => {
            let removed = if a.remote {
                let body = json!({"max_age_days": a.max_age_days, "max_events": a.max_events});
                let answer = Remote::from_env()?.post(&["tool-events", "cleanup"], &body)?;
                answer["removed"]
                    .as_u64()
                    .context("the gateway did not say how many events it removed")?
            } else {
                cleanup_at(&a.place, a.max_age_days, a.max_events)?
            };
            println!("removed {removed} tool-use events past the retention");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Deletes the events of the config at `place` past the retention: the config's, or the limits given.
pub(crate) fn cleanup_at(
    place: &Place,
    max_age_days: Option<u32>,
    max_events: Option<u64>,
) -> anyhow::Result<u64> {
    let (state, configured) = reporting_state(place)?;
    let retention = store::Retention {
        max_age_days: max_age_days.or(configured.max_age_days),
        max_events: max_events.or(configured.max_events),
    };
    let removed = state
        .store(|s| s.apply_retention(&retention, store::Timestamp::now()))
        .context("cannot apply the reporting retention")?;
    Ok(removed)
}

fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    if a.remote {
        let mut query = vec![("group_by", a.group_by)];
        if let Some(since) = &a.since {
            let since = parse_since(since).map_err(|e| anyhow::anyhow!("--since: {e}"))?;
            query.push(("since_ms", since.resolve().as_millis().to_string()));
        }
        if let Some(format) = a.format {
            query.push(("format", format));
        }
        let answer = Remote::from_env()?.get(&["tool-events", "report"], &query)?;
        print!("{}", answer["rendered"].as_str().unwrap_or_default());
        if answer["empty_note"].as_bool() == Some(true) {
            eprintln!("no reporting events at the gateway");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (state, retention) = reporting_state(&a.place)?;
    state
        .store(|s| s.apply_retention(&retention, store::Timestamp::now()))
        .context("cannot apply the reporting retention")?;
    drop(state);
    #[derive(Parser)]
    struct Report {
        #[command(flatten)]
        args: crate::commands::report::Args,
    }
    let mut argv: Vec<std::ffi::OsString> = vec![
        "tool-events report".into(),
        "--group-by".into(),
        a.group_by.into(),
    ];
    for (flag, value) in [("--since", a.since), ("--format", a.format)] {
        if let Some(v) = value {
            argv.extend([flag.into(), v.into()]);
        }
    }
    if let Some(p) = a.place.path() {
        argv.extend(["--config".into(), p.into()]);
    }
    let ws = match a.place.workspace {
        Some(w) => w,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    argv.extend(["--workspace".into(), ws.into()]);
    let parsed = Report::try_parse_from(argv).map_err(|e| anyhow::anyhow!("{e}"))?;
    crate::commands::report::run(parsed.args)
}

/// The report of the config at `place`, as `report` prints it: `rendered`, and `empty_note` when a table has no
/// rows (the local verb then says so on stderr).
pub(crate) fn report_at(
    place: &Place,
    group_by: &str,
    since: Option<store::Timestamp>,
    format: Option<&str>,
) -> anyhow::Result<Value> {
    let (state, retention) = reporting_state(place)?;
    state
        .store(|s| s.apply_retention(&retention, store::Timestamp::now()))
        .context("cannot apply the reporting retention")?;
    let (rendered, empty_table) =
        crate::commands::report::rendered(&state, group_by, since, format.unwrap_or("table"))?;
    Ok(json!({"rendered": rendered, "empty_note": empty_table}))
}

fn export(a: ExportArgs) -> anyhow::Result<ExitCode> {
    let since = a.since.map(Since::resolve);
    let (rows, place) = if a.remote {
        let mut query = vec![("limit", a.limit.to_string())];
        if let Some(since) = since {
            query.push(("since_ms", since.as_millis().to_string()));
        }
        let answer = Remote::from_env()?.get(&["tool-events", "export"], &query)?;
        let rows = answer["events"]
            .as_array()
            .cloned()
            .context("the gateway's export holds no events list")?;
        (rows, "the gateway".to_owned())
    } else {
        export_at(&a.place, since, a.limit)?
    };
    let mut out = std::io::stdout().lock();
    match a.format {
        ExportFormat::Jsonl => {
            for row in &rows {
                writeln!(out, "{row}")?;
            }
        }
        ExportFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?,
    }
    out.flush()?;
    if rows.is_empty() {
        let period = if since.is_some() {
            " in that period"
        } else {
            ""
        };
        eprintln!("no reporting events{period} for {place}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The newest `limit` events of the config at `place` since `since`, oldest first, and where they were read.
pub(crate) fn export_at(
    place: &Place,
    since: Option<store::Timestamp>,
    limit: u64,
) -> anyhow::Result<(Vec<Value>, String)> {
    let (state, retention) = reporting_state(place)?;
    // What the retention no longer keeps is not exported either.
    state
        .store(|s| s.apply_retention(&retention, store::Timestamp::now()))
        .context("cannot apply the reporting retention")?;
    let events = state
        .store(|s| s.export_events(since, limit))
        .context("cannot read the reporting events")?;
    let rows = events.iter().map(exported).collect();
    Ok((rows, crate::runtime::where_state_is(&state)))
}

/// One exported event: every field an event has, the time also in RFC 3339.
fn exported(e: &store::ReportEvent) -> Value {
    json!({
        "time": e.time.to_rfc3339(),
        "time_ms": e.time.as_millis(),
        "trace_id": e.trace_id,
        "profile": e.profile,
        "principal": e.principal,
        "server": e.server,
        "tool": e.tool,
        "operation": e.operation,
        "decision": e.decision.as_str(),
        "reason_code": e.reason_code,
        "outcome": e.outcome,
        "duration_ms": e.duration_ms,
        "error_class": e.error_class,
    })
}

/// The state holding the config's reporting events, and its retention; refused when reporting is off.
fn reporting_state(place: &Place) -> anyhow::Result<(gateway::State, store::Retention)> {
    let config = place.load(None, crate::runtime::ConfigUse::Read)?;
    let r = &config.reporting;
    anyhow::ensure!(
        r.enabled.value,
        "tool-use reporting is disabled (tool_use_reporting.enabled, {}); set \"tool_use_reporting\": \
         {{\"enabled\": true}} in the config",
        r.enabled.from
    );
    super::unified::state_outside_workspace(&config)?;
    let state = crate::runtime::state(&config)?;
    let retention = store::Retention {
        max_age_days: r.max_age_days,
        max_events: r.max_events,
    };
    Ok((state, retention))
}
