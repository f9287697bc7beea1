//! `policy test`: declarative cases (a call, the expected decision, optionally the rule id and reason) evaluated
//! against a policy, returning data with a readable diff. Printing is the CLI's job.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::action::ToolCall;
use crate::decide::Decision;
use crate::error::{Error, Result};
use crate::load::Policy;
use crate::operation::Effect;
use crate::path::Canonicalise;

/// One declarative case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    pub name: String,
    pub call: ToolCall,
    pub expect: Effect,
    /// Expected decisive rule id; `""` means "no rule" (default, unknown, hidden).
    #[serde(default)]
    pub rule: Option<String>,
    /// Expected reason code, e.g. `DEFAULT_DENY`.
    #[serde(default)]
    pub reason: Option<String>,
    /// Evaluate under this profile.
    #[serde(default)]
    pub profile: Option<String>,
}

/// The outcome of one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    pub name: String,
    pub passed: bool,
    /// Two lines per differing field: `- expected FIELD: …` / `+ actual   FIELD: …`.
    pub diff: Vec<String>,
}

/// All outcomes, in case order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestReport {
    pub results: Vec<CaseResult>,
    pub passed: usize,
    pub failed: usize,
}

/// Parses a list of cases (`{"cases": [...]}` or a bare array), naming the bad case on error.
pub fn parse_cases(value: &Value) -> Result<Vec<TestCase>> {
    let list = match value {
        Value::Array(items) => items,
        Value::Object(map) if map.len() == 1 && map.contains_key("cases") => match map.get("cases")
        {
            Some(Value::Array(items)) => items,
            _ => return Err(Error::parse("cases", "expected an array")),
        },
        _ => {
            return Err(Error::parse(
                "cases",
                "expected an array of cases or {\"cases\": [...]}",
            ))
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, v)| TestCase::deserialize(v).map_err(|e| Error::parse(format!("cases[{i}]"), e)))
        .collect()
}

/// Runs every case; a case naming an unknown profile fails with that as its diff.
pub fn run_cases(policy: &Policy, cases: &[TestCase], canon: &dyn Canonicalise) -> TestReport {
    let results: Vec<CaseResult> = cases.iter().map(|c| run_one(policy, c, canon)).collect();
    let passed = results.iter().filter(|r| r.passed).count();
    TestReport {
        failed: results.len() - passed,
        passed,
        results,
    }
}

fn run_one(policy: &Policy, case: &TestCase, canon: &dyn Canonicalise) -> CaseResult {
    let effective = match &case.profile {
        Some(p) => match policy.with_profile(p) {
            Ok(eff) => eff,
            Err(e) => {
                return CaseResult {
                    name: case.name.clone(),
                    passed: false,
                    diff: vec![format!("! {e}")],
                }
            }
        },
        None => policy.clone(),
    };
    judge_case(case, &effective.decide_call(&case.call, canon))
}

/// Compares one case's expectation with the decision its call met; each differing field gives two lines,
/// `- expected FIELD: …` and `+ actual   FIELD: …`.
pub fn judge_case(case: &TestCase, d: &Decision) -> CaseResult {
    let mut diff = Vec::new();
    let mut field = |name: &str, want: &str, got: &str| {
        if want != got {
            diff.push(format!("- expected {name}: {want}"));
            diff.push(format!("+ actual   {name}: {got}"));
        }
    };
    field("decision", case.expect.as_str(), d.effect.as_str());
    if let Some(want) = &case.rule {
        field("rule", want, d.rule_id.as_deref().unwrap_or(""));
    }
    if let Some(want) = &case.reason {
        field("reason", want, d.reason.as_str());
    }
    CaseResult {
        name: case.name.clone(),
        passed: diff.is_empty(),
        diff,
    }
}
