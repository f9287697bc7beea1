//! `toolgate policy test`: runs declarative cases (a call, the expected decision, optionally the rule id and
//! reason) against the config's policy and prints a readable diff for every case that disagrees.
//!
//! Cases are judged as `serve` would judge them: the same canonicaliser, and a call without `kind` gets the kind
//! of its server in the config. It does not check arguments against tool schemas.

use super::super::common::ConfigArgs;
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
    let mut cases = policy::parse_cases(&super::read_json(&args.cases)?)?;
    // Cases choose their own profile; the base policy is what they start from. The config's profile (or
    // `--profile`) applies to the cases that name none, as it would in `serve`.
    let profile = config.profile.take().map(|p| p.value);
    let guard = crate::runtime::load_guard(&config)?;
    let kinds = super::server_kinds(&config);
    for case in &mut cases {
        if case.profile.is_none() {
            case.profile.clone_from(&profile);
        }
        if case.call.server_kind.is_none() {
            case.call.server_kind = kinds.get(&case.call.server).copied();
        }
    }
    let report = policy::run_cases(guard.policy(), &cases, &gateway::canonicalise);
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
