//! The client side of the official MCP conformance suite: `conformance client --command "toolgate
//! conformance-client" --scenario <name>` runs toolgate's upstream HTTP client against the suite's own server for
//! each scenario. Every client scenario that applies to a client without OAuth runs (the suite's list, less
//! `auth/…` and the `[extension]` ones); a scenario may fail only if `tests/conformance/client-expected-failures.yml`
//! lists it with a reason, and a listed one that passes fails the test too, so the file only shrinks.

use crate::support::{peers, toolgate};
use std::path::{Path, PathBuf};
use std::process::Command;

const EXPECTED: &str = "tests/conformance/client-expected-failures.yml";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The listed scenarios, each with its reason (`- entry: <scenario>` then `reason: <text>`, folded lines go on).
fn expected_failures(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line == "client:" {
            continue;
        }
        if let Some(entry) = line.strip_prefix("- entry:") {
            out.push((entry.trim().to_owned(), String::new()));
        } else if let Some(last) = out.last_mut() {
            let reason = line.strip_prefix("reason:").unwrap_or(line).trim();
            last.1 = format!("{} {reason}", last.1).trim().to_owned();
        }
    }
    out
}

/// The client scenarios the suite lists that apply here: not OAuth (`auth/…`), not an extension.
fn scenarios(node: &Path, suite: &Path) -> Vec<String> {
    let out = Command::new(node).arg(suite).arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip_while(|l| !l.starts_with("Client scenarios"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- "))
        .filter(|l| !l.contains("[extension]"))
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| !name.starts_with("auth/"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn conformance_client_scenarios_without_oauth() {
    let peers = peers();
    let node = peers.join("node_modules/.bin/node");
    let suite = peers.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        suite.is_file(),
        "the conformance suite is not installed in {}: run scripts/test",
        peers.display()
    );
    let text = std::fs::read_to_string(workspace_root().join(EXPECTED)).unwrap();
    let expected = expected_failures(&text);
    for (entry, reason) in &expected {
        assert!(!reason.is_empty(), "{entry} has no reason");
    }
    let scenarios = scenarios(&node, &suite);
    // The suite's list is read, not written here: a parse that found little would make this test hollow.
    for known in ["initialize", "tools_call", "sse-retry", "request-metadata"] {
        assert!(
            scenarios.iter().any(|s| s == known),
            "{known} not in {scenarios:?}"
        );
    }
    let command = format!("{} conformance-client", toolgate().display());
    let out = tempfile::tempdir().unwrap();
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    for scenario in &scenarios {
        let result = Command::new(&node)
            .arg(&suite)
            .args(["client", "--command", &command, "--scenario", scenario])
            .arg("--output-dir")
            .arg(out.path().join("results"))
            .current_dir(out.path())
            .output()
            .unwrap();
        let listed = expected.iter().any(|(e, _)| e == scenario);
        match (result.status.success(), listed) {
            (false, false) => unexpected.push(format!(
                "{scenario}:\n{}\n{}",
                String::from_utf8_lossy(&result.stdout),
                String::from_utf8_lossy(&result.stderr)
            )),
            (true, true) => stale.push(scenario.clone()),
            _ => {}
        }
    }
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "failing and not listed in {EXPECTED}: {unexpected:#?}\nlisted but passing (remove them): {stale:?}"
    );
}

#[test]
fn client_expected_failures_file_reads_entries_and_reasons() {
    let text =
        "client:\n  - entry: a\n    reason: one\n      more\n  - entry: b\n    reason: two\n";
    assert_eq!(
        expected_failures(text),
        [
            ("a".to_owned(), "one more".to_owned()),
            ("b".to_owned(), "two".to_owned())
        ]
    );
}
