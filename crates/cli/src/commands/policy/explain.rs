//! `toolgate policy explain`: the whole evaluation of one tool call, as the gateway would make it — the action the
//! adapter read (paths canonical, symlinks resolved), every rule and why it did or did not match, and the final
//! decision with its rule id and reason code.
//!
//! It does not check the call's arguments against the tool's schema (that needs the upstream's listing) and it
//! forwards nothing.

use super::super::common::ConfigArgs;
use policy::{Action, Command, Explanation, Mismatch, RuleTrace, Scope, ToolCall};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

/// Explain how the policy decides one call: `{"server": "...", "tool": "...", "arguments": {...}}` (and
/// `"kind"` for a server the config does not list). The decision is the one `serve` and `policy test` reach.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
    /// The call as JSON (or TOML by extension), in a file or `-` for stdin: `server` (its name in the config),
    /// `tool`, `arguments`, and `kind` (filesystem, git, fetch) only for a server the config does not list.
    #[arg(long, value_name = "FILE|-")]
    call: PathBuf,
    /// Print the explanation as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    let call = parse_call(super::read_json(&args.call)?)?;
    let kind = super::stated_kind(&config, &call)?;
    let guard = crate::runtime::load_guard(&config)?;
    let explanation = guard.explain_as(&call.server, &call.tool, &call.arguments, kind);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&explanation)?);
        return Ok(ExitCode::SUCCESS);
    }
    if !super::is_known_server(&config, &call.server) {
        println!("{}", super::unknown_server_note(&call.server, kind));
    }
    // The call as given first: the action below shows paths after symlinks resolve, which may differ.
    println!(
        "{:<10}{} {} {}",
        "call", call.server, call.tool, call.arguments
    );
    print!("{}", render(&explanation));
    Ok(ExitCode::SUCCESS)
}

/// The call as an operator writes it, in the shape of a `policy test` case's call: `server`, `tool`,
/// `arguments`, and `kind` for a server the config does not list.
fn parse_call(value: Value) -> anyhow::Result<ToolCall> {
    if !value.is_object() {
        anyhow::bail!(
            "the call must be an object {{\"server\", \"tool\", \"arguments\", \"kind\"?}}"
        );
    }
    let mut call: ToolCall =
        serde_json::from_value(value).map_err(|e| anyhow::anyhow!("the call: {e}"))?;
    if call.arguments.is_null() {
        call.arguments = json!({});
    }
    Ok(call)
}

/// The explanation as aligned text: the action, the rules in evaluation order for each part of the call (its
/// operation, then each further access), then the decision, in the words a refusal or an approval uses.
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
        // The word audit records and the report use for calls under no profile.
        (None, _) => "default (no profile: the base policy)".to_owned(),
    };
    line(format!("{:<10}{profile}", "profile"));
    line(format!("{:<10}{}", "default", e.default));
    if !e.precedence.is_strictest() {
        line(format!("{:<10}{}", "order", e.precedence.describe()));
    }
    let all = e
        .rules
        .iter()
        .chain(e.accesses.iter().flat_map(|a| &a.rules));
    let width = all.map(|r| r.id.len()).max().unwrap_or(0);
    line(format!(
        "rules for {} (in evaluation order):",
        e.action.operation
    ));
    rule_lines(&e.rules, width, &mut line);
    for a in &e.accesses {
        let paths = a.paths.join(", ");
        line(format!(
            "rules for {} of {paths}{} (the call also does this):",
            a.operation,
            scope_words(a.scope)
        ));
        rule_lines(&a.rules, width, &mut line);
    }
    let d = &e.decision;
    line(format!("decision: {d} on {}", d.operation));
    out
}

fn rule_lines(rules: &[RuleTrace], width: usize, line: &mut impl FnMut(String)) {
    for r in rules {
        let at =
            r.at.as_deref()
                .map(|a| format!("  ({a})"))
                .unwrap_or_default();
        let row = format!(
            "  {:<8} {:<6} {:<width$}  {}{at}",
            status(r),
            r.effect.as_str(),
            r.id,
            why(r)
        );
        line(row.trim_end().to_owned());
    }
    if rules.is_empty() {
        line("  (none)".to_owned());
    }
}

/// How far beneath its paths an access reaches, in words.
fn scope_words(scope: Scope) -> &'static str {
    match scope {
        Scope::Exact => "",
        Scope::Children => " (the names directly in it)",
        Scope::NamesBeneath => " (names beneath it)",
        Scope::ContentBeneath => " (content beneath it)",
        Scope::Moved => " (moved with everything beneath it)",
    }
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
    if r.beneath {
        return "it denies paths beneath the call's (DENIED_BENEATH)".to_owned();
    }
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
