//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, a pinned test peer) against toolgate's
//! HTTP front end, with the bundled fixture's conformance catalog as the one upstream, unprefixed, behind a
//! deny-by-default policy that allows only that server. Each protocol revision runs exactly the server scenarios
//! its requirement set names (`--requirements`), at that revision's wire.
//!
//! A scenario may fail only if `tests/conformance/server-expected-failures.yml` lists it (or the one failing
//! check), with its reason, under that revision; a listed failure that passes fails the run too, so the file
//! only shrinks. The suite's own baseline check judges the scenarios the revision scores; this test then
//! judges every scenario the suite ran from its result files, including the reported-only ones. The fixture speaks the revision's own era (legacy for 2025-11-25, 2026-07-28 for the
//! modern run), so what is measured is toolgate's carrying of each era, not bridging between them.

use crate::support::{fixture, peers, toolgate, Setup};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::free_port;

/// The checked-in expected failures, relative to the workspace root.
const EXPECTED: &str = "tests/conformance/server-expected-failures.yml";

/// One expected failure: a scenario (or `scenario:check-id`) and why it fails.
#[derive(Debug)]
struct Expected {
    entry: String,
    reason: String,
}

/// Reads the entries listed under `revision` in the expected-failures file: a top-level key per revision
/// (`"2025-11-25":`), then `- entry: <scenario[:check-id]>` items, each followed by `reason: <text>`.
fn expected_failures(text: &str, revision: &str) -> Vec<Expected> {
    let mut out: Vec<Expected> = Vec::new();
    let mut in_section = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if !line.starts_with(' ') {
            let key = trimmed.trim_end_matches(':').trim_matches('"');
            in_section = key == revision;
            continue;
        }
        if !in_section {
            continue;
        }
        if let Some(entry) = trimmed.strip_prefix("- entry:") {
            out.push(Expected {
                entry: entry.trim().to_owned(),
                reason: String::new(),
            });
        } else if let Some(reason) = trimmed.strip_prefix("reason:") {
            let last = out.last_mut().expect("a reason follows its entry");
            last.reason = reason.trim().to_owned();
        } else {
            // A folded reason continues on the next lines.
            let last = out.last_mut().expect("continuation follows an entry");
            last.reason = format!("{} {trimmed}", last.reason);
        }
    }
    out
}

/// `toolgate serve --http` in front of the conformance fixture of `era`; killed when dropped.
pub(crate) struct Front {
    child: Child,
    pub(crate) url: String,
    _setup: Setup,
}

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn front(era: &str) -> Front {
    front_of(fixture(&["--conformance", "--era", era]))
}

/// `toolgate serve --http` with `server` as its one upstream, `conf`, unprefixed, behind a deny-by-default
/// policy that allows only that server.
pub(crate) fn front_of(server: serde_json::Value) -> Front {
    let setup = Setup::new(json!({
        "mcpServers": {"conf": server},
        "prefixTools": false,
        "permissions": {"default": "deny", "allow": ["mcp__conf__*"]},
    }));
    let port = free_port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let child = Command::new(toolgate())
        .args(["serve", "--config"])
        .arg(&setup.config)
        .args(["--http", &addr.to_string()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn toolgate serve --http");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "toolgate did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Front {
        child,
        url: format!("http://{addr}/mcp"),
        _setup: setup,
    }
}

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the server scenarios `revision` requires against toolgate; fails on any failure not listed for it and
/// on any listed one that passes.
fn run(revision: &str, era: &str) {
    let peers = peers();
    let node = peers.join("node_modules/.bin/node");
    let suite = peers.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        suite.is_file(),
        "the conformance suite is not installed in {}: run scripts/test",
        peers.display()
    );
    let text = std::fs::read_to_string(workspace_root().join(EXPECTED)).expect("expected failures");
    let expected = expected_failures(&text, revision);
    for e in &expected {
        assert!(!e.reason.is_empty(), "{} has no reason", e.entry);
    }
    let out = tempfile::tempdir().expect("temp dir");
    let baseline = out.path().join("baseline.yml");
    // The suite's own baseline format: the listed entries under `server`.
    let mut yaml = String::from("server: []\n");
    if !expected.is_empty() {
        yaml = expected.iter().fold(String::from("server:\n"), |y, e| {
            y + &format!("  - {}\n", e.entry)
        });
    }
    std::fs::write(&baseline, yaml).expect("baseline");

    let front = front(era);
    let result = Command::new(node)
        .arg(suite)
        .args(["server", "--url", &front.url, "--requirements", revision])
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("--output-dir")
        .arg(out.path().join("results"))
        .current_dir(out.path())
        .output()
        .expect("run the conformance suite");
    drop(front);
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        result.status.success(),
        "conformance {revision} failed ({}):\n{stdout}\n{stderr}",
        result.status
    );
    // The suite's exit code counts only the scenarios the revision scores; the ones it runs and reports
    // without scoring (extensions, scenarios added after the release, pending ones) are held to the same
    // file here.
    let checks = checks(&out.path().join("results"));
    assert!(!checks.is_empty(), "the suite wrote no results:\n{stdout}");
    let (unexpected, stale) = judge(&checks, &expected);
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "conformance {revision}: failing and not listed in {EXPECTED}: {unexpected:?}; listed but passing \
         (remove them): {stale:?}\n{stdout}"
    );
}

/// Every scenario's checks, `(id, status)`, from the suite's result directories
/// (`server-<scenario>-<timestamp>/checks.json`).
pub(crate) fn checks(results: &Path) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out = BTreeMap::new();
    for dir in std::fs::read_dir(results).expect("results").flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        // The timestamp is the last six dash-separated fields (2026-01-02T03-04-05-678Z).
        let rest = name.strip_prefix("server-").unwrap_or(&name);
        let mut parts: Vec<&str> = rest.split('-').collect();
        parts.truncate(parts.len().saturating_sub(6));
        let scenario = parts.join("-");
        let text = std::fs::read_to_string(dir.path().join("checks.json")).expect("checks.json");
        let list: Vec<serde_json::Value> = serde_json::from_str(&text).expect("checks are JSON");
        let entry: &mut Vec<(String, String)> = out.entry(scenario).or_default();
        for c in list {
            let field = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            entry.push((field("id"), field("status")));
        }
    }
    out
}

/// The failed checks no entry excuses, and the entries that excuse nothing (their scenario or check passed,
/// or never ran). A WARNING is a failure, as the suite's baseline counts it.
fn judge(
    checks: &BTreeMap<String, Vec<(String, String)>>,
    expected: &[Expected],
) -> (Vec<String>, Vec<String>) {
    let failed = |status: &str| status == "FAILURE" || status == "WARNING";
    let listed = |scenario: &str, id: &str| {
        expected
            .iter()
            .any(|e| e.entry == scenario || e.entry == format!("{scenario}:{id}"))
    };
    let mut unexpected = Vec::new();
    for (scenario, list) in checks {
        for (id, status) in list {
            if failed(status) && !listed(scenario, id) {
                unexpected.push(format!("{scenario}:{id}"));
            }
        }
    }
    let stale = expected
        .iter()
        .filter(|e| {
            let (scenario, id) = e.entry.split_once(':').unwrap_or((&e.entry, ""));
            let list = checks.get(scenario).map(Vec::as_slice).unwrap_or_default();
            !list
                .iter()
                .any(|(i, status)| failed(status) && (id.is_empty() || i == id))
        })
        .map(|e| e.entry.clone())
        .collect();
    (unexpected, stale)
}

#[test]
fn conformance_server_scenarios_2025_11_25() {
    run("2025-11-25", "legacy");
}

#[test]
fn conformance_server_scenarios_2026_07_28() {
    run("2026-07-28", "modern");
}

#[test]
fn unlisted_failures_and_listed_passes_are_both_reported() {
    let checks = BTreeMap::from([
        (
            "a".to_owned(),
            vec![
                ("x".to_owned(), "FAILURE".to_owned()),
                ("y".to_owned(), "SUCCESS".to_owned()),
            ],
        ),
        ("b".to_owned(), vec![("z".to_owned(), "WARNING".to_owned())]),
        ("c".to_owned(), vec![("w".to_owned(), "SUCCESS".to_owned())]),
    ]);
    let listed = |entries: &[&str]| -> Vec<Expected> {
        entries
            .iter()
            .map(|e| Expected {
                entry: (*e).to_owned(),
                reason: "r".into(),
            })
            .collect()
    };
    let (unexpected, stale) = judge(&checks, &listed(&["a:x", "c", "a:y", "gone"]));
    assert_eq!(unexpected, ["b:z"]);
    assert_eq!(stale, ["c", "a:y", "gone"]);
    let (unexpected, stale) = judge(&checks, &listed(&["a", "b"]));
    assert!(unexpected.is_empty() && stale.is_empty());
}

#[test]
fn expected_failures_file_reads_entries_and_reasons_per_revision() {
    let text = "# note\n\"2025-11-25\":\n  - entry: a\n    reason: one\n      two\n\"2026-07-28\":\n  - entry: b:c\n    reason: three\n";
    let old = expected_failures(text, "2025-11-25");
    assert_eq!(old.len(), 1);
    assert_eq!(
        (old[0].entry.as_str(), old[0].reason.as_str()),
        ("a", "one two")
    );
    let new = expected_failures(text, "2026-07-28");
    assert_eq!(
        (new[0].entry.as_str(), new[0].reason.as_str()),
        ("b:c", "three")
    );
}
