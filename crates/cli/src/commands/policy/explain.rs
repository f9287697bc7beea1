//! `toolgate policy explain`: the whole evaluation of one tool call, as the gateway would make it — the action the
//! adapter read (paths canonical, symlinks resolved), every rule and why it did or did not match, and the final
//! decision with its rule id and reason code.
//!
//! It does not check the call's arguments against the tool's schema (that needs the upstream's listing) and it
//! forwards nothing.

use super::super::common::ConfigArgs;
use policy::{Action, Command, Explanation, Mismatch, RuleTrace};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

/// Explain how the policy decides one call: `{"server": "...", "tool": "...", "arguments": {...}}`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
    /// The call as JSON, in a file or `-` for stdin. `server` is the server's name in the config.
    #[arg(long, value_name = "FILE|-")]
    call: PathBuf,
    /// Print the explanation as JSON.
    #[arg(long)]
    json: bool,
}

/// The call as an operator writes it. The server kind is not part of it: the gateway takes that from the config,
/// and so does `explain`, so an explanation can never use an adapter `serve` would not.
struct Call {
    server: String,
    tool: String,
    arguments: Value,
}

impl Call {
    /// Refuses unknown keys (a `kind` here would be silently ignored otherwise) and non-string names.
    fn parse(value: Value) -> anyhow::Result<Call> {
        let Value::Object(mut map) = value else {
            anyhow::bail!("the call must be an object {{\"server\", \"tool\", \"arguments\"}}");
        };
        if let Some(key) = map
            .keys()
            .find(|k| !matches!(k.as_str(), "server" | "tool" | "arguments"))
        {
            anyhow::bail!(
                "unknown key {key:?} in the call (the server kind comes from the config)"
            );
        }
        let mut text = |key: &str| match map.remove(key) {
            Some(Value::String(s)) => Ok(s),
            _ => Err(anyhow::anyhow!("the call needs {key:?} as a string")),
        };
        let (server, tool) = (text("server")?, text("tool")?);
        let arguments = map.remove("arguments").unwrap_or_else(|| json!({}));
        Ok(Call {
            server,
            tool,
            arguments,
        })
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    let call = Call::parse(super::read_json(&args.call)?)?;
    let guard = crate::runtime::load_guard(&config)?;
    let explanation = guard.explain_tool(&call.server, &call.tool, &call.arguments);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&explanation)?);
        return Ok(ExitCode::SUCCESS);
    }
    if !super::is_known_server(&config, &call.server) {
        println!(
            "note: no server {:?} in the config; its tools are matched by name only",
            call.server
        );
    }
    // The call as given first: the action below shows paths after symlinks resolve, which may differ.
    println!(
        "{:<10}{} {} {}",
        "call", call.server, call.tool, call.arguments
    );
    print!("{}", render(&explanation));
    Ok(ExitCode::SUCCESS)
}

/// The explanation as aligned text: the action, the rules in evaluation order, then the decision.
fn render(e: &Explanation) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    for (key, value) in action_lines(&e.action) {
        line(format!("{key:<10}{value}"));
    }
    let profile = match (&e.profile, e.hidden) {
        (Some(p), true) => format!("{p} (this tool is blocked by it)"),
        (Some(p), false) => p.clone(),
        (None, _) => "none".to_owned(),
    };
    line(format!("{:<10}{profile}", "profile"));
    line(format!("{:<10}{}", "default", e.default));
    if !e.precedence.is_strictest() {
        line(format!("{:<10}{}", "order", e.precedence.describe()));
    }
    line("rules (in evaluation order):".to_owned());
    let width = e.rules.iter().map(|r| r.id.len()).max().unwrap_or(0);
    for r in &e.rules {
        let row = format!(
            "  {:<8} {:<6} {:<width$}  {}",
            status(r),
            r.effect.as_str(),
            r.id,
            why(r)
        );
        line(row.trim_end().to_owned());
    }
    if e.rules.is_empty() {
        line("  (none)".to_owned());
    }
    line(format!("decision: {}", e.decision));
    out
}

fn action_lines(a: &Action) -> Vec<(&'static str, String)> {
    let mut lines = vec![
        ("tool", a.tool.clone()),
        ("operation", a.operation.to_string()),
    ];
    if let Some(reason) = a.unknown {
        lines.push(("unknown", reason.as_str().to_owned()));
    }
    for p in &a.paths {
        lines.push(("path", p.clone()));
    }
    match &a.command {
        Some(Command::Argv(argv)) => lines.push(("command", format!("{argv:?}"))),
        Some(Command::Shell { raw, .. }) => lines.push(("shell", raw.clone())),
        None => {}
    }
    if let Some(net) = &a.net {
        lines.push(("url", format!("{}://{}:{}", net.scheme, net.host, net.port)));
    }
    if let Some(m) = &a.method {
        lines.push(("method", m.clone()));
    }
    if a.via_shell {
        lines.push(("via", "shell (shell.exec rules apply too)".to_owned()));
    }
    lines
}

fn status(r: &RuleTrace) -> &'static str {
    match (r.decisive, r.matched, r.partial) {
        (true, _, _) => "DECIDES",
        (false, true, _) => "matches",
        (false, false, true) => "partial",
        (false, false, false) => "-",
    }
}

fn why(r: &RuleTrace) -> String {
    if r.partial && !r.matched {
        return "matches some of the paths (caps an allow at ask)".to_owned();
    }
    let Some(miss) = &r.why_not else {
        return String::new();
    };
    match miss {
        Mismatch::Operation => "other operation".to_owned(),
        Mismatch::Tool => "other tool".to_owned(),
        Mismatch::NoPaths => "the call has no path".to_owned(),
        Mismatch::Path { path } => format!("path {path} not covered"),
        Mismatch::NoCommand => "the call runs no command".to_owned(),
        Mismatch::Command => "other command".to_owned(),
        Mismatch::NestedCommand => "a prefix allow admits no command that runs another".to_owned(),
        Mismatch::ShellString => "a shell string (allow and ask match argv only)".to_owned(),
        Mismatch::NoHost => "the call has no host".to_owned(),
        Mismatch::Host { host } => format!("host {host} not covered"),
        Mismatch::NoMethod => "the call has no HTTP method".to_owned(),
        Mismatch::Method { method } => format!("method {method} not covered"),
    }
}
