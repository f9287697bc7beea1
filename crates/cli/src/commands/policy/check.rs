//! `toolgate policy check`: lints the config's policy sections against the same context `serve` compiles them in,
//! printing every finding (all load errors, not just the first, then warnings such as `SHADOWED_RULE`).
//!
//! It reads files only; it starts no upstream and decides no call. The rules it lints are the ones `serve`
//! enforces: the config's sections with toolgate's built-in rules in front. A toolscript-mcp `"policy"` list
//! (first match wins) is linted as translated, and each pair of its entries whose meaning toolgate's
//! deny-overrides changes is a warning (`FIRST_MATCH_ORDER`).

use super::super::common::ConfigArgs;
use policy::{LintFinding, Severity};
use std::process::ExitCode;

/// Check the policy of a config: every error and warning with its code and rule id (exit 1 on any error).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut config = args.config.load()?;
    let workspace = crate::runtime::workspace(&config)?;
    if config.policy.is_empty() {
        // Not an error: `serve` runs, but only toolgate's own reads inside the workspace go without a human.
        println!(
            "warning[NO_POLICY]: no policy, permissions or profiles section: every call asks, except reads of \
             the workspace by toolgate's own tools (start from `toolgate policy init`)"
        );
        println!("policy check: 0 errors, 1 warning");
        return Ok(ExitCode::SUCCESS);
    }
    // What `serve` compiles, toolgate's built-in rules included: a user rule they shadow is worth a warning.
    let mut findings = gateway::Guard::lint(&config, &workspace);
    if let Some(list) = &config.policy.toolscript {
        let servers: Vec<&str> = config
            .servers
            .iter()
            .map(|s| s.name.as_str())
            .chain(config.disabled.iter().map(|d| d.name.as_str()))
            .collect();
        findings.extend(policy::toolscript_findings(list, &servers));
    }
    let profile = config.profile.take().map(|p| p.value);
    let base = match errors(&findings) {
        0 => Some(gateway::Guard::load(&config, &workspace).map_err(anyhow::Error::msg)?),
        _ => None,
    };
    // The profile `serve` would apply must exist, or `serve` refuses to start.
    if let (Some(base), Some(name)) = (&base, &profile) {
        if let Err(e) = base.policy().with_profile(name) {
            findings.push(LintFinding::from(&e));
        }
    }
    for f in &findings {
        println!("{}", line(f));
    }
    let failed = errors(&findings);
    let warned = findings.len() - failed;
    let summary = format!(
        "policy check: {failed} error{}, {warned} warning{}",
        plural(failed),
        plural(warned)
    );
    match base {
        Some(base) if failed == 0 => {
            let policy = base.policy();
            let rules = policy.rule_ids().len();
            let profiles = policy.profile_names();
            println!(
                "{summary} ({rules} rule{} with toolgate's own, default {}, profiles: {})",
                plural(rules),
                policy.default_effect(),
                if profiles.is_empty() {
                    "none".to_owned()
                } else {
                    profiles.join(", ")
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        _ => {
            println!("{summary}");
            Ok(ExitCode::from(1))
        }
    }
}

fn errors(findings: &[LintFinding]) -> usize {
    findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count()
}

/// `error[DUPLICATE_ID] rule dup: duplicate rule id `dup``, in the shape compilers use so it reads familiar.
fn line(f: &LintFinding) -> String {
    let severity = match f.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    match &f.rule_id {
        Some(id) => format!("{severity}[{}] rule {id}: {}", f.code, f.message),
        None => format!("{severity}[{}]: {}", f.code, f.message),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
