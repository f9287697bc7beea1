//! `toolfence policy init|check|explain|test`: ToolFence's policy development commands on its YAML files, each
//! decided by toolgate's policy engine with the file's own precedence (every matching deny wins, otherwise the
//! first matching rule), and the same canonicaliser `wrap` uses.

use anyhow::Context;
use policy::{Context as PolicyContext, FenceAction, Policy, PolicySources};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// ToolFence's conservative starter: what `policy init` writes.
const STARTER: &str = include_str!("starter.yaml");

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Write a conservative starter policy (never replaces an existing file).
    Init {
        #[arg(long, default_value = "./toolfence.yaml")]
        policy: PathBuf,
    },
    /// Validate the YAML, the strict schema, variables, duplicate ids and network fields.
    Check {
        #[arg(long)]
        policy: PathBuf,
        #[command(flatten)]
        ws: WorkspaceArg,
    },
    /// Print the matching rules and the final decision for one action.
    Explain {
        #[arg(long)]
        policy: PathBuf,
        /// The action (JSON or YAML): a call {server, tool, arguments, kind} or an operation {operation,
        /// resources, command, url, method}.
        #[arg(long)]
        action: PathBuf,
        /// Print the explanation as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        ws: WorkspaceArg,
    },
    /// Run declarative cases (YAML: a list of {name, action, expect, rule?}); exit 1 on any mismatch.
    Test {
        #[arg(long)]
        policy: PathBuf,
        #[arg(long)]
        cases: PathBuf,
        #[command(flatten)]
        ws: WorkspaceArg,
    },
}

#[derive(clap::Args)]
struct WorkspaceArg {
    /// What `${workspace}` stands for. Default: the current directory.
    #[arg(long)]
    workspace: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Init { policy } => init(&policy),
        Command::Check { policy, ws } => check(&policy, &ws),
        Command::Explain {
            policy,
            action,
            json,
            ws,
        } => explain(&policy, &action, json, &ws),
        Command::Test { policy, cases, ws } => test(&policy, &cases, &ws),
    }
}

fn init(path: &Path) -> anyhow::Result<ExitCode> {
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => anyhow::bail!(
            "{} already exists; not replacing it (choose another file with --policy)",
            path.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
    };
    file.write_all(STARTER.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote a conservative starter policy to {}", path.display());
    println!(
        "review it:  toolfence policy check --policy {}",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// What `${workspace}` and `~` mean for these commands.
fn context(ws: &WorkspaceArg) -> anyhow::Result<PolicyContext> {
    let dir = match &ws.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let dir = std::fs::canonicalize(&dir)
        .with_context(|| format!("the workspace {} does not exist", dir.display()))?;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .and_then(|h| std::fs::canonicalize(h).ok())
        .map(|h| h.to_string_lossy().into_owned());
    Ok(PolicyContext {
        workspace: dir.to_string_lossy().into_owned(),
        home,
    })
}

/// Reads a YAML (or JSON) file into a tree, with line and column on a syntax error.
pub(super) fn read_yaml(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(config::parse_yaml(&text, &path.display().to_string())?)
}

/// The ToolFence file as toolgate's structured policy (its precedence included).
pub(super) fn structured(path: &Path) -> anyhow::Result<Value> {
    let file = read_yaml(path)?;
    policy::translate_toolfence(&file)
        .with_context(|| format!("{} (ToolFence policy)", path.display()))
}

fn load(path: &Path, ctx: &PolicyContext) -> anyhow::Result<Policy> {
    let structured = structured(path)?;
    Policy::load(
        PolicySources {
            policy: Some(&structured),
            ..Default::default()
        },
        ctx,
    )
    .with_context(|| format!("{} (ToolFence policy)", path.display()))
}

fn check(path: &Path, ws: &WorkspaceArg) -> anyhow::Result<ExitCode> {
    let ctx = context(ws)?;
    let structured = match structured(path) {
        Ok(s) => s,
        Err(e) => {
            println!("error  {}", crate::runtime::error_chain(&e));
            return Ok(ExitCode::from(crate::runtime::EXIT_FAILURE));
        }
    };
    let sources = PolicySources {
        policy: Some(&structured),
        ..Default::default()
    };
    let findings = policy::check_policy(sources, &ctx);
    let errors = findings
        .iter()
        .filter(|f| f.severity == policy::Severity::Error)
        .count();
    for f in &findings {
        let rule = f
            .rule_id
            .as_deref()
            .map(|r| format!(" [{r}]"))
            .unwrap_or_default();
        let severity = match f.severity {
            policy::Severity::Error => "error",
            policy::Severity::Warning => "warn",
        };
        println!("{severity:<6} {}{rule}: {}", f.code, f.message);
    }
    let rules = structured["rules"].as_array().map_or(0, Vec::len);
    if errors == 0 {
        println!(
            "ok: {} — {rules} rule{}, default {}; {}",
            path.display(),
            if rules == 1 { "" } else { "s" },
            structured["default"].as_str().unwrap_or("deny"),
            policy::Precedence::FirstMatch.describe()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "{} error{} in {}",
            errors,
            if errors == 1 { "" } else { "s" },
            path.display()
        );
        Ok(ExitCode::from(crate::runtime::EXIT_FAILURE))
    }
}

fn explain(path: &Path, action: &Path, json: bool, ws: &WorkspaceArg) -> anyhow::Result<ExitCode> {
    let ctx = context(ws)?;
    let policy = load(path, &ctx)?;
    let action = policy::parse_action(&read_yaml(action)?, &ctx)?;
    let explanation = match &action {
        FenceAction::Call(call) => policy.explain_call(call, &gateway::canonicalise),
        FenceAction::Raw(raw) => {
            policy.explain(&policy::normalise(raw, &ctx, &gateway::canonicalise))
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&explanation)?);
        return Ok(ExitCode::SUCCESS);
    }
    let a = &explanation.action;
    println!("operation  {}", a.operation.as_str());
    for p in &a.paths {
        println!("resource   {p}");
    }
    println!("precedence {}", explanation.precedence.describe());
    for r in &explanation.rules {
        let state = if r.decisive {
            "DECIDES"
        } else if r.matched {
            "matches"
        } else {
            "-"
        };
        let why = r
            .why_not
            .as_ref()
            .map(|m| format!("  (no: {})", serde_json::to_string(m).unwrap_or_default()))
            .unwrap_or_default();
        println!("  {state:<8} {:<6} {}{why}", r.effect.as_str(), r.id);
    }
    let d = &explanation.decision;
    println!(
        "decision   {} ({}{})",
        d.effect.as_str().to_uppercase(),
        d.reason,
        d.rule_id
            .as_deref()
            .map(|r| format!(", rule {r}"))
            .unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}

fn test(path: &Path, cases: &Path, ws: &WorkspaceArg) -> anyhow::Result<ExitCode> {
    let ctx = context(ws)?;
    let policy = load(path, &ctx)?;
    let cases = policy::parse_fence_cases(&read_yaml(cases)?, &ctx)
        .with_context(|| format!("{}", cases.display()))?;
    let mut failed = 0;
    for case in &cases {
        let d = match &case.action {
            FenceAction::Call(call) => policy.decide_call(call, &gateway::canonicalise),
            FenceAction::Raw(raw) => {
                policy.decide(&policy::normalise(raw, &ctx, &gateway::canonicalise))
            }
        };
        let rule_ok = case
            .rule
            .as_deref()
            .is_none_or(|want| d.rule_id.as_deref().unwrap_or("") == want);
        if d.effect == case.expect && rule_ok {
            println!("ok    {}", case.name);
            continue;
        }
        failed += 1;
        println!("FAIL  {}", case.name);
        println!(
            "      expected: {}{}",
            case.expect,
            rule_label(case.rule.as_deref())
        );
        println!(
            "      actual:   {}{} ({})",
            d.effect,
            rule_label(d.rule_id.as_deref()),
            d.reason
        );
    }
    println!(
        "{} case{}: {} passed, {failed} failed",
        cases.len(),
        if cases.len() == 1 { "" } else { "s" },
        cases.len() - failed
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::runtime::EXIT_FAILURE)
    })
}

fn rule_label(rule: Option<&str>) -> String {
    rule.map(|r| format!(" (rule {r})")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy::Effect;

    #[test]
    fn the_starter_policy_loads_and_says_what_the_sheet_shows() {
        let file = config::parse_yaml(STARTER, "starter").unwrap();
        let structured = policy::translate_toolfence(&file).unwrap();
        let ctx = PolicyContext {
            workspace: "/ws".into(),
            home: Some("/home/u".into()),
        };
        let p = Policy::load(
            PolicySources {
                policy: Some(&structured),
                ..Default::default()
            },
            &ctx,
        )
        .unwrap();
        let decide = |v: Value| match policy::parse_action(&v, &ctx).unwrap() {
            FenceAction::Raw(raw) => {
                p.decide(&policy::normalise(&raw, &ctx, &policy::Lexical))
                    .effect
            }
            FenceAction::Call(_) => unreachable!(),
        };
        use serde_json::json;
        assert_eq!(
            decide(json!({"operation": "fs.read", "resources": ["/ws/src/index.ts"]})),
            Effect::Allow
        );
        assert_eq!(
            decide(json!({"operation": "fs.read", "resources": ["~/.ssh/id_rsa"]})),
            Effect::Deny
        );
        assert_eq!(
            decide(json!({"operation": "shell.exec", "command": ["npm", "install"]})),
            Effect::Ask
        );
        assert_eq!(
            decide(json!({"operation": "shell.exec", "command": ["sudo", "rm", "-rf", "/"]})),
            Effect::Deny
        );
    }
}
