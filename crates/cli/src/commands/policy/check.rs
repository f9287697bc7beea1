//! `toolgate policy check`: lints the config's policy sections against the same context `serve` compiles them in,
//! printing every finding (all load errors, not just the first, then warnings such as `SHADOWED_RULE`).
//!
//! It reads files only; it starts no upstream and decides no call.

use super::super::common::ConfigArgs;
use policy::{LintFinding, PolicySources, Severity};
use std::process::ExitCode;

/// Check the policy of a config: every error and warning with its code and rule id (exit 1 on any error).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    let ctx = super::context(&config)?;
    let sections = &config.policy;
    if sections.is_empty() {
        // Not an error: `serve` runs, but nothing is ever allowed without a human.
        println!(
            "warning[NO_POLICY]: no policy, permissions or profiles section: every call asks \
             (start from `toolgate policy init`)"
        );
        println!("policy check: 0 errors, 1 warning");
        return Ok(ExitCode::SUCCESS);
    }
    // As in the gateway: with profiles alone, the base default is ask (deny-by-default, a human may still say yes).
    let fallback = serde_json::json!({"default": "ask"});
    let permissions = match (&sections.permissions, &sections.policy) {
        (None, None) => Some(&fallback),
        (p, _) => p.as_ref(),
    };
    let sources = PolicySources {
        policy: sections.policy.as_ref(),
        permissions,
        profiles: sections.profiles.as_ref(),
    };
    let mut findings = policy::check_policy(sources, &ctx);
    // The profile `serve` would apply must exist, or `serve` refuses to start.
    if let (Some(profile), true) = (&config.profile, errors(&findings) == 0) {
        if let Err(e) =
            policy::Policy::load(sources, &ctx).and_then(|p| p.with_profile(&profile.value))
        {
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
    if failed > 0 {
        println!("{summary}");
        return Ok(ExitCode::from(1));
    }
    let loaded = policy::Policy::load(sources, &ctx)?;
    let rules = loaded.rule_ids().len();
    let profiles = loaded.profile_names();
    println!(
        "{summary} ({rules} rule{}, default {}, profiles: {})",
        plural(rules),
        loaded.default_effect(),
        if profiles.is_empty() {
            "none".to_owned()
        } else {
            profiles.join(", ")
        }
    );
    Ok(ExitCode::SUCCESS)
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
