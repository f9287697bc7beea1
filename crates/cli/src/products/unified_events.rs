//! `mcp-unified-gateway tool-events`: the metadata-only reporting events of the config's store. `report` is
//! `toolgate report`; `export` writes the events themselves as JSON Lines (or one JSON array); `cleanup` deletes
//! what the retention — the config's, or the limits given — no longer keeps. Each refuses while the config turns
//! reporting off. An event holds who called which tool, how it was decided and how it went; there is no field
//! for arguments, results, secrets or error text (`store::ReportEvent`), so no export can carry them.

use crate::commands::report::{parse_since, Since};
use crate::products::unified::Place;
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
    #[command(flatten)]
    place: Place,
}

pub(crate) fn events(args: EventsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Events::Report(a) => report(a),
        Events::Export(a) => export(a),
        Events::Cleanup(a) => {
            let (state, configured) = reporting_state(&a.place)?;
            let retention = store::Retention {
                max_age_days: a.max_age_days.or(configured.max_age_days),
                max_events: a.max_events.or(configured.max_events),
            };
            let removed = state
                .store(|s| s.apply_retention(&retention, store::Timestamp::now()))
                .context("cannot apply the reporting retention")?;
            println!("removed {removed} tool-use events past the retention");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
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

fn export(a: ExportArgs) -> anyhow::Result<ExitCode> {
    let (state, retention) = reporting_state(&a.place)?;
    let now = store::Timestamp::now();
    // What the retention no longer keeps is not exported either.
    state
        .store(|s| s.apply_retention(&retention, now))
        .context("cannot apply the reporting retention")?;
    let since = a.since.map(Since::resolve);
    let events = state
        .store(|s| s.export_events(since, a.limit))
        .context("cannot read the reporting events")?;
    let rows: Vec<Value> = events.iter().map(exported).collect();
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
        eprintln!(
            "no reporting events{} for {}",
            if since.is_some() {
                " in that period"
            } else {
                ""
            },
            crate::runtime::where_state_is(&state)
        );
    }
    Ok(ExitCode::SUCCESS)
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
