//! `toolgate policy test`: runs declarative cases (a call, the expected decision, optionally the rule id and
//! reason) against the config's policy and prints a readable diff for every case that disagrees.
//!
//! Cases are judged by the function `serve` and `policy explain` decide with (`Guard::explain_as`): the same
//! built-in rules, canonicaliser and server kinds from the config (`kind` in a case only stands for a server the
//! config does not list). It does not check arguments against tool schemas.

use super::super::common::ConfigArgs;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// Run policy test cases (JSON, or TOML by extension: a list of cases or {"cases": [...]}); exit 1 on any
/// mismatch.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArgs,
    /// The case file. Each case: name, call {server, tool, arguments, kind?}, expect (allow|ask|deny), and
    /// optionally rule, reason and profile.
    #[arg(long, value_name = "FILE|-")]
    cases: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut config = args.config.load()?;
    let cases = policy::parse_cases(&super::read_json(&args.cases)?)?;
    // Cases choose their own profile; the config's profile (or `--profile`) applies to the cases that name
    // none, as it would in `serve`.
    let served = config.profile.take().map(|p| p.value);
    let workspace = crate::runtime::workspace(&config)?;
    crate::runtime::load_guard(&config)?;
    let mut guards: HashMap<Option<String>, Result<gateway::Guard, String>> = HashMap::new();
    let mut results = Vec::new();
    for case in &cases {
        let profile = case.profile.clone().or_else(|| served.clone());
        let guard = guards.entry(profile.clone()).or_insert_with(|| {
            gateway::Guard::load_as(&config, &workspace, profile).map_err(|e| e.to_string())
        });
        let result = match guard {
            Ok(guard) => {
                let kind = super::stated_kind(&config, &case.call)?;
                let c = &case.call;
                // The decision `explain` and `serve` reach: one function.
                let e = guard.explain_as(&c.server, &c.tool, &c.arguments, kind);
                policy::judge_case(case, &e.decision)
            }
            Err(why) => policy::CaseResult {
                name: case.name.clone(),
                passed: false,
                diff: vec![format!("! {why}")],
            },
        };
        results.push(result);
    }
    let passed = results.iter().filter(|r| r.passed).count();
    let report = policy::TestReport {
        failed: results.len() - passed,
        passed,
        results,
    };
    for result in &report.results {
        if result.passed {
            println!("ok    {}", result.name);
        } else {
            println!("FAIL  {}", result.name);
            for line in &result.diff {
                println!("      {line}");
            }
        }
    }
    println!(
        "{} case{}: {} passed, {} failed",
        report.results.len(),
        if report.results.len() == 1 { "" } else { "s" },
        report.passed,
        report.failed
    );
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
