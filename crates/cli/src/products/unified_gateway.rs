//! The `mcp-unified-gateway` verbs that ask a gateway: `explain-policy` and `preview-profile-tools` start one on
//! the config (as `toolgate preview` does: upstreams listed once, then shut down, nothing called) and ask it the
//! admin surface's questions, `Gateway::explain_call` and `Gateway::tool_preview`, whose answers hold no raw
//! arguments (size and SHA-256 only) and which are audited; with `--remote` they ask a running gateway's admin
//! API the same questions (`unified_remote`) and print its answers the same way.
//!
//! MCP Unified's tool names name toolgate's workspace tools (`fs.read` is `filesystem_read_file`); any other name
//! is the exposed name a client calls.

use crate::products::unified::Place;
use crate::products::unified_remote::Remote;
use anyhow::Context;
use policy::Visibility;
use serde_json::Value;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// MCP Unified's names for the workspace tools, and toolgate's.
const TOOL_NAMES: &[(&str, &str)] = &[
    ("fs.list", builtin::LIST_DIRECTORY),
    ("fs.read", builtin::READ_FILE),
    ("fs.write", builtin::WRITE_FILE),
    ("fs.patch", builtin::APPLY_PATCH),
    ("fs.lock_acquire", builtin::LOCK_ACQUIRE),
    ("fs.lock_release", builtin::LOCK_RELEASE),
    ("git.status", builtin::GIT_STATUS),
    ("git.diff", builtin::GIT_DIFF),
    ("shell.run", builtin::SHELL_RUN),
];

#[derive(clap::Args)]
pub(crate) struct PreviewArgs {
    /// The profile (preset or stored) whose surface to show.
    #[arg(long)]
    profile: String,
    /// Only tools of this category: a server kind (filesystem, git, fetch, generic) or a visibility (visible,
    /// deferred, blocked, unavailable).
    #[arg(long)]
    category: Option<String>,
    /// A session of the running gateway (with --remote): said back with what it changes in the preview.
    #[arg(long)]
    session_id: Option<String>,
    /// Leave blocked tools out.
    #[arg(long)]
    exclude_denied: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Ask the running gateway at $MCP_UNIFIED_GATEWAY_URL (its admin API, with the key in
    /// $MCP_UNIFIED_GATEWAY_ADMIN_KEY) instead of one started on the config here.
    #[arg(long, conflicts_with_all = ["config", "workspace"])]
    remote: bool,
    #[command(flatten)]
    place: Place,
}

#[derive(clap::Args)]
#[group(id = "arguments", multiple = false)]
pub(crate) struct ExplainArgs {
    /// The profile (preset or stored) to decide under.
    #[arg(long)]
    profile: String,
    /// The tool: an MCP Unified name (fs.read, fs.patch, …) or the name a client calls.
    #[arg(long)]
    tool: String,
    /// The call's arguments as JSON, in a file (kept out of shell history and process listings).
    #[arg(long, value_name = "FILE", group = "arguments")]
    args_json_file: Option<PathBuf>,
    /// The call's arguments as JSON on standard input.
    #[arg(long, group = "arguments")]
    args_stdin: bool,
    /// The call's arguments as inline JSON (visible in shell history: prefer a file or stdin).
    #[arg(long, value_name = "JSON", group = "arguments")]
    args_json: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Ask the running gateway at $MCP_UNIFIED_GATEWAY_URL (its admin API, with the key in
    /// $MCP_UNIFIED_GATEWAY_ADMIN_KEY) instead of one started on the config here.
    #[arg(long, conflicts_with_all = ["config", "workspace"])]
    remote: bool,
    #[command(flatten)]
    place: Place,
}

/// Starts a gateway on `config` (workspace tools included), asks `ask`, shuts it down.
fn with_gateway<T>(
    config: &config::Config,
    ask: impl FnOnce(&gateway::Gateway) -> T,
) -> anyhow::Result<T> {
    crate::harden::gateway();
    let guard = Arc::new(crate::runtime::load_guard(config)?);
    // The question is answered without state too; it is then not audited, and says why.
    let state = match super::unified::state_outside_workspace(config) {
        Ok(()) => crate::runtime::serve_state(config),
        Err(e) => Err(e),
    }
    .unwrap_or_else(|e| {
        tracing::warn!("not audited: {}", crate::runtime::error_chain(&e));
        None
    });
    let builtin = crate::runtime::builtin_tools(config, state.as_deref())?;
    let rt = crate::runtime::tokio()?;
    Ok(rt.block_on(async {
        let gw = gateway::Gateway::start_with(
            config,
            crate::runtime::gateway_options(config, false),
            guard,
            state,
            builtin,
        );
        gw.ready().await;
        let answer = ask(&gw);
        gw.shutdown().await;
        answer
    }))
}

pub(crate) fn explain(args: ExplainArgs) -> anyhow::Result<ExitCode> {
    let arguments = arguments(&args)?;
    let exposed = TOOL_NAMES
        .iter()
        .find(|(unified, _)| *unified == args.tool)
        .map_or(args.tool.as_str(), |(_, own)| own);
    let answer = if args.remote {
        let body = serde_json::json!({"profile_id": args.profile, "tool_name": exposed, "arguments": arguments});
        Some(Remote::from_env()?.post(&["policy", "explain"], &body)?)
    } else {
        let config = args
            .place
            .load(Some(args.profile.clone()), crate::runtime::ConfigUse::Start)?;
        with_gateway(&config, |gw| {
            gw.audit_admin("policy/explain", Some(&args.profile), Some(exposed));
            gw.explain_call(Some(&args.profile), exposed, &arguments)
        })?
        .map_err(|e| anyhow::anyhow!("{e}"))?
    };
    let Some(mut answer) = answer else {
        anyhow::bail!(
            "no tool {} is listed under this config (the workspace tools are fs.list, fs.read, fs.write, \
             fs.patch, git.status, git.diff, shell.run; other tools by the name a client calls)",
            args.tool
        );
    };
    answer["tool_name"] = Value::String(args.tool.clone());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    let field = |k: &str| match &answer[k] {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    };
    println!("profile    {}", field("profile_id"));
    println!(
        "tool       {} ({}__{})",
        args.tool,
        field("server"),
        field("tool")
    );
    println!("decision   {}", field("effect"));
    println!("reason     {}", field("reason"));
    println!("rule       {}", field("rule_id"));
    println!("operation  {}", field("operation"));
    for t in answer["touches"].as_array().into_iter().flatten() {
        println!("touches    {}", t.as_str().unwrap_or_default());
    }
    println!(
        "arguments  {} bytes, sha256 {} (not shown)",
        answer["arguments"]["bytes"],
        field_in(&answer["arguments"], "sha256")
    );
    Ok(ExitCode::SUCCESS)
}

/// The hypothetical call's arguments, from the one place given; `{}` when none is.
fn arguments(args: &ExplainArgs) -> anyhow::Result<Value> {
    let arguments: Value = match (&args.args_json_file, args.args_stdin, &args.args_json) {
        (Some(file), _, _) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            config::parse_json(&text, &file.display().to_string())?
        }
        (None, true, _) => {
            let text = std::io::read_to_string(std::io::stdin()).context("cannot read stdin")?;
            config::parse_json(&text, "standard input")?
        }
        // Never in a message: the value is the secret the flag's help warns about.
        (None, false, Some(inline)) => serde_json::from_str(inline).map_err(|e| {
            anyhow::anyhow!(
                "--args-json is not JSON (line {}, column {})",
                e.line(),
                e.column()
            )
        })?,
        (None, false, None) => serde_json::json!({}),
    };
    anyhow::ensure!(arguments.is_object(), "the arguments must be a JSON object");
    Ok(arguments)
}

fn field_in(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_default().to_owned()
}

pub(crate) fn preview(args: PreviewArgs) -> anyhow::Result<ExitCode> {
    let category = args.category.as_deref();
    let (visibility, kind) = match category {
        None => (None, None),
        Some(c) => match serde_json::from_value::<Visibility>(Value::String(c.to_owned())) {
            Ok(v) => (Some(v), None),
            Err(_) if ["filesystem", "git", "fetch", "generic"].contains(&c) => (None, Some(c)),
            Err(_) => anyhow::bail!(
                "unknown category {c:?}: a server kind (filesystem, git, fetch, generic) or a visibility \
                 (visible, deferred, blocked, unavailable)"
            ),
        },
    };
    let answer = if args.remote {
        let body = serde_json::json!({"category": category, "include_denied": !args.exclude_denied,
                                      "session_id": args.session_id});
        Remote::from_env()?.post(&["profiles", &args.profile, "tool-preview"], &body)?
    } else {
        anyhow::ensure!(
            args.session_id.is_none(),
            "--session-id names a session of a running gateway: give --remote (a local preview has no sessions)"
        );
        let config = args
            .place
            .load(Some(args.profile.clone()), crate::runtime::ConfigUse::Start)?;
        let mut answer = with_gateway(&config, |gw| {
            gw.audit_admin("profiles/tool-preview", Some(&args.profile), None);
            gw.tool_preview(Some(&args.profile), visibility, !args.exclude_denied)
        })?
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        if let (Some(kind), Some(rows)) = (kind, answer["tools"].as_array_mut()) {
            rows.retain(|row| row["category"] == kind);
        }
        answer
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("profile {}", answer["profile_id"].as_str().unwrap_or("-"));
    let rows = answer["tools"].as_array().cloned().unwrap_or_default();
    let width = rows
        .iter()
        .filter_map(|r| r["name"].as_str().map(str::len))
        .max()
        .unwrap_or(0);
    for row in &rows {
        println!(
            "{:<width$}  {:<11}  {}",
            row["name"].as_str().unwrap_or_default(),
            row["visibility"].as_str().unwrap_or_default(),
            row["reason"].as_str().unwrap_or_default()
        );
    }
    if rows.is_empty() {
        println!("(no tools)");
    }
    if let Some(session) = answer.get("session") {
        println!(
            "session {}: {}",
            session["id"].as_str().unwrap_or_default(),
            session["effect"].as_str().unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}
