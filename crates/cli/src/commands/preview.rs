//! `toolgate preview`: the tool surface a profile gives a client — which installed tools are visible, deferred,
//! blocked or unavailable, and why. It starts every upstream once (as `doctor` does) to learn the real catalog,
//! then shuts them down.
//!
//! It calls no tool; what it shows visible is exactly what a client's `tools/list` gives in `serve` (the gateway
//! computes both), toolgate's own tools included and, in code mode, only code mode's tools, the others shown as
//! reached through `run_code`. Pins included: it opens the same state, so a first look pins definitions exactly
//! as `serve` would. It warns when the profile hides the tools an agent follows an approval with.

use super::common::ConfigArgs;
use policy::{SurfaceEntry, SurfaceReason, ToolListing, Visibility};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::process::ExitCode;
use std::sync::Arc;

/// Show the effective tool surface of a profile (--profile, else the config's): each tool's visibility and reason.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
    /// Print the surface as JSON.
    #[arg(long)]
    json: bool,
}

/// One row: the name a client sees, plus the policy's verdict on the `server__tool` name rules match.
struct Row {
    exposed: String,
    server: String,
    tool: Option<String>,
    entry: SurfaceEntry,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // It starts the upstreams to list their tools.
    let config = args.config.load_to_start()?;
    // They get no more of this process than `serve`'s would.
    crate::harden::gateway();
    let guard = Arc::new(crate::runtime::load_guard(&config)?);
    let profile = guard.profile().map(str::to_owned);
    // The state `serve` would run with: toolgate's own approval tools are listed only when it exists. Without it
    // `serve` would refuse to start; the preview still shows the surface and says so.
    let state = crate::runtime::serve_state(&config).unwrap_or_else(|e| {
        tracing::warn!(
            "serve would refuse to start here: {}",
            crate::runtime::error_chain(&e)
        );
        None
    });
    // toolgate's own workspace tools, as `serve` would serve them.
    let builtin = crate::runtime::builtin_tools(&config, None)?;
    let rt = crate::runtime::tokio()?;
    let rows = rt.block_on(async {
        let gw = gateway::Gateway::start_with(
            &config,
            crate::runtime::gateway_options(&config, false),
            Arc::clone(&guard),
            state,
            builtin,
        );
        gw.ready().await;
        let agg = gw.aggregate();
        let pins = gw.pins();
        let statuses = gw.statuses();
        // What a client's `tools/list` gives, as `serve` computes it: the preview shows that set as visible.
        let listed = gw.listed_tools(None);
        let hidden = gw.hidden_approval_tools(None);
        let code = gw.code_mode();
        gw.shutdown().await;
        let (listed, hidden) = (listed?, hidden?);
        let down: HashSet<String> = statuses
            .iter()
            .filter(|s| s.state != upstream::State::Ready)
            .map(|s| s.server.clone())
            .collect();
        let rows = surface(&guard, &agg, &pins, &statuses, &down, &config)?;
        anyhow::Ok((as_listed(rows, &listed, code), hidden))
    });
    let (rows, hidden) = rows?;
    for tool in &hidden {
        // To stderr: stdout may be JSON for a script.
        eprintln!(
            "warning: this profile hides {tool}, so an agent cannot follow a call held for approval; list it \
             (\"tools\": {{\"visible\": [\"toolgate__{tool}\"]}}) or every approval this profile meets is lost"
        );
    }
    if args.json {
        let entries: Vec<Value> = rows.iter().map(to_json).collect();
        let out = json!({"profile": profile, "tools": entries});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_table(profile.as_deref(), &rows);
    }
    Ok(ExitCode::SUCCESS)
}

/// Every tool of the merged catalog, then one row per server that is down (its tools cannot be listed, so they
/// are unavailable as a whole).
fn surface(
    guard: &gateway::Guard,
    agg: &gateway::Aggregate,
    pins: &gateway::PinView,
    statuses: &[upstream::Status],
    down: &HashSet<String>,
    config: &config::Config,
) -> anyhow::Result<Vec<Row>> {
    let mut rows: Vec<(String, String, Option<String>)> = agg
        .tools
        .iter()
        .zip(&agg.tool_owners)
        .map(|(def, (server, tool))| {
            let exposed = def.get("name").and_then(Value::as_str).unwrap_or(tool);
            (exposed.to_owned(), server.clone(), Some(tool.clone()))
        })
        .collect();
    for s in statuses {
        if down.contains(&s.server) && !rows.iter().any(|(_, server, _)| *server == s.server) {
            let sep = &config.separator.value;
            rows.push((format!("{}{sep}*", s.server), s.server.clone(), None));
        }
    }
    let listings: Vec<ToolListing> = rows
        .iter()
        .map(|(_, server, tool)| {
            let name = format!("{server}__{}", tool.as_deref().unwrap_or("*"));
            let mut l = ToolListing::new(&name);
            l.unavailable = down.contains(server);
            // As in `tools/list`: a changed definition awaits review, a poisoned one is blocked.
            if let Some(pin) = pins.get(&name) {
                l.quarantined = pin.quarantined;
                l.flagged = !pin.flags.is_empty();
            }
            l
        })
        .collect();
    // The guard's policy already has the active profile applied, so `None` previews exactly what `serve` lists.
    let entries = guard.policy().tool_surface(None, &listings)?;
    Ok(rows
        .into_iter()
        .zip(entries)
        .map(|((exposed, server, tool), entry)| Row {
            exposed,
            server,
            tool,
            entry,
        })
        .collect())
}

/// Each row as the client sees it: visible exactly when `tools/list` lists it. In code mode a tool the profile
/// shows is reached through `run_code` instead (deferred, `CODE_MODE`); a listed tool the policy would hide (a
/// quarantined one that asks) is shown visible, as listed.
fn as_listed(rows: Vec<Row>, listed: &[String], code: bool) -> Vec<Row> {
    let listed: HashSet<&str> = listed.iter().map(String::as_str).collect();
    rows.into_iter()
        .map(|mut r| {
            let is_listed = listed.contains(r.exposed.as_str());
            match r.entry.visibility {
                Visibility::Visible if !is_listed && code => {
                    r.entry.visibility = Visibility::Deferred;
                    r.entry.reason = SurfaceReason::CodeMode;
                }
                Visibility::Visible if !is_listed => r.entry.visibility = Visibility::Blocked,
                _ if is_listed => r.entry.visibility = Visibility::Visible,
                _ => {}
            }
            r
        })
        .collect()
}

fn visibility(v: Visibility) -> &'static str {
    match v {
        Visibility::Visible => "visible",
        Visibility::Deferred => "deferred",
        Visibility::Blocked => "blocked",
        Visibility::Unavailable => "unavailable",
    }
}

fn reason(entry: &SurfaceEntry) -> String {
    // The serialised form is the stable SCREAMING_SNAKE_CASE code.
    serde_json::to_value(entry.reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn print_table(profile: Option<&str>, rows: &[Row]) {
    match profile {
        Some(p) => println!("profile: {p}"),
        None => {
            println!("profile: default (no profile: the base policy, as audit and report name it)")
        }
    }
    // Columns as wide as their longest cell, so names of any length stay aligned.
    let reasons: Vec<String> = rows.iter().map(|r| reason(&r.entry)).collect();
    let width = rows.iter().map(|r| r.exposed.len()).fold(4, usize::max);
    let rwidth = reasons.iter().map(String::len).fold(6, usize::max);
    println!(
        "{:<width$}  {:<11}  {:<rwidth$}  RULE",
        "TOOL", "VISIBILITY", "REASON"
    );
    for (r, why) in rows.iter().zip(&reasons) {
        println!(
            "{:<width$}  {:<11}  {:<rwidth$}  {}",
            r.exposed,
            visibility(r.entry.visibility),
            why,
            r.entry.rule_id.as_deref().map_or_else(
                || "-".to_owned(),
                |id| policy::rule_label(id, r.entry.rule_at.as_deref())
            )
        );
    }
    let count = |v: Visibility| rows.iter().filter(|r| r.entry.visibility == v).count();
    println!(
        "{} visible, {} deferred, {} blocked, {} unavailable",
        count(Visibility::Visible),
        count(Visibility::Deferred),
        count(Visibility::Blocked),
        count(Visibility::Unavailable)
    );
}

fn to_json(r: &Row) -> Value {
    json!({
        "name": r.exposed,
        "server": r.server,
        "tool": r.tool,
        "visibility": r.entry.visibility,
        "reason": r.entry.reason,
        "rule_id": r.entry.rule_id,
        "rule_at": r.entry.rule_at,
    })
}
