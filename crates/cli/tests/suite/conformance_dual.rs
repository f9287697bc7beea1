//! The official conformance suite with a real dual-era server behind toolgate: `tests/peers/conformance_server.py`,
//! written on the official Python SDK 2.x, which answers both `initialize` and `server/discover` and asks
//! mid-call (sampling, elicitation) with requests in the legacy era and with `input_required` in 2026-07-28.
//!
//! For each protocol revision the suite runs direct against that server over Streamable HTTP, then through
//! toolgate's HTTP front end with the server as its upstream, over Streamable HTTP and over stdio, reached in
//! the revision's own era (`"protocol"`), and for 2025-11-25 also reached in the 2026-07-28 era, bridged.
//! (2026-07-28 through a legacy-era upstream is not judged: the bridge names input requests with toolgate's
//! own keys, not the server's, which the suite's checks look for, and the SDK's `roots/list` names no call.) Every check that passes direct must pass through toolgate, the
//! sampling and elicitation scenarios included; what fails direct says nothing about toolgate and is not judged.
//! A check toolgate is known to fail through is listed with its reason in `EXCUSED`, which only shrinks.

use crate::conformance::{checks, front_of};
use crate::support::peers;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_support::free_port;

/// What the Python SDK answers for a tool it does not list, and toolgate does not.
const UNKNOWN_TOOL: &str = "the scenario calls a tool the server does not list: the Python SDK answers with a \
    tool-error result, which the check accepts, toolgate with the JSON-RPC error -32602 naming the unknown tool, \
    its answer for every tool it does not serve";

/// Checks that pass direct and fail through toolgate for a reason of toolgate's own, with the reason:
/// `(revision, scenario, check id, reason)`. The tasks extension is not served through toolgate (see
/// `tests/conformance/server-expected-failures.yml`); these are its checks that a server without it passes.
const EXCUSED: &[(&str, &str, &str, &str)] = &[
    (
        "2026-07-28",
        "tasks-capability-negotiation",
        "sep-2663-server-rejects-undeclared-client",
        UNKNOWN_TOOL,
    ),
    (
        "2026-07-28",
        "tasks-dispatch-and-envelope",
        "sep-2663-legacy-task-param-ignored",
        UNKNOWN_TOOL,
    ),
    (
        "2026-07-28",
        "tasks-dispatch-and-envelope",
        "tasks-immediate-result-shortcut",
        UNKNOWN_TOOL,
    ),
    (
        "2026-07-28",
        "tasks-dispatch-and-envelope",
        "tasks-result-type-complete-on-non-task-responses",
        UNKNOWN_TOOL,
    ),
    (
        "2026-07-28",
        "tasks-lifecycle",
        "tasks-sync-tool-call",
        UNKNOWN_TOOL,
    ),
];

/// The suite runs of these tests one at a time, across test processes: two suites, two servers and two
/// toolgates at once on a small machine make the timing-sensitive scenarios (several streams at once) flaky.
/// The turn is a socket bound to an abstract name, which only one process can hold and the kernel frees when
/// that process ends, however it ends.
fn one_at_a_time() -> std::os::unix::net::UnixListener {
    use std::os::linux::net::SocketAddrExt;
    let name = std::os::unix::net::SocketAddr::from_abstract_name(b"toolgate-conformance-dual")
        .expect("an abstract socket name");
    loop {
        if let Ok(turn) = std::os::unix::net::UnixListener::bind_addr(&name) {
            return turn;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The dual-era server on Streamable HTTP at `127.0.0.1:port/mcp`; killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn python() -> std::path::PathBuf {
    peers().join(".venv-servers/bin/python")
}

fn script() -> String {
    peers()
        .join("conformance_server.py")
        .to_string_lossy()
        .into_owned()
}

fn serve_http() -> (Server, u16) {
    let port = free_port();
    let child = Command::new(python())
        .args([script(), "http".into(), port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the dual-era server");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the dual-era server never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (Server(child), port)
}

type Checks = BTreeMap<String, Vec<(String, String)>>;

/// Runs the server scenarios `revision` requires (and those it reports without scoring) against `url`; the
/// results stay in the returned directory.
fn suite(url: &str, revision: &str) -> (Checks, tempfile::TempDir) {
    let peers = peers();
    let out = tempfile::tempdir().expect("temp dir");
    let result = Command::new(peers.join("node_modules/.bin/node"))
        .arg(peers.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["server", "--url", url, "--requirements", revision])
        .arg("--output-dir")
        .arg(out.path().join("results"))
        .current_dir(out.path())
        .output()
        .expect("run the conformance suite");
    let checks = checks(&out.path().join("results"));
    assert!(
        !checks.is_empty(),
        "the suite wrote no results:\n{}",
        String::from_utf8_lossy(&result.stdout)
    );
    (checks, out)
}

/// What the failed checks of `entries` (`scenario:id`) said, from the suite's result files under `out`.
fn said(out: &std::path::Path, entries: &[String]) -> Vec<String> {
    let mut said = Vec::new();
    for dir in std::fs::read_dir(out.join("results"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(dir.path().join("checks.json")).unwrap_or_default();
        let list: Vec<Value> = serde_json::from_str(&text).unwrap_or_default();
        for c in list {
            let id = c["id"].as_str().unwrap_or_default();
            let name = dir.file_name().to_string_lossy().into_owned();
            if c["status"] != "SUCCESS"
                && entries.iter().any(|e| {
                    e.ends_with(&format!(":{id}"))
                        && name.contains(e.split(':').next().unwrap_or_default())
                })
            {
                said.push(format!(
                    "{id}: {}",
                    c.to_string().chars().take(600).collect::<String>()
                ));
            }
        }
    }
    said
}

/// The checks that pass in `direct` and fail (FAILURE or WARNING, as the suite's baseline counts them) or are
/// missing in `through`, as `scenario:id`; an INFO through (an optional feature not used) is not a failure. A
/// check id may repeat within a scenario; each passing instance direct needs one through.
fn lost(direct: &Checks, through: &Checks) -> Vec<String> {
    let count = |list: Option<&Vec<(String, String)>>, id: &str, ok: fn(&str) -> bool| {
        list.map_or(0, |l| l.iter().filter(|(i, st)| i == id && ok(st)).count())
    };
    let mut lost = Vec::new();
    for (scenario, list) in direct {
        let mut ids: Vec<&str> = list.iter().map(|(id, _)| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let passed = count(Some(list), id, |st| st == "SUCCESS");
            let held = count(through.get(scenario), id, |st| {
                st != "FAILURE" && st != "WARNING"
            });
            if passed > held {
                lost.push(format!("{scenario}:{id}"));
            }
        }
    }
    lost
}

/// Direct, then through toolgate with `upstream` as its server; fails on any check lost on the way.
fn judge(revision: &str, direct: &Checks, upstream: Value, how: &str) {
    let front = front_of(upstream);
    let (through, out) = suite(&front.url, revision);
    drop(front);
    let excused = |entry: &String| {
        EXCUSED
            .iter()
            .any(|(r, s, i, _)| *r == revision && entry == &format!("{s}:{i}"))
    };
    let lost: Vec<String> = lost(direct, &through)
        .into_iter()
        .filter(|e| !excused(e))
        .collect();
    assert!(
        lost.is_empty(),
        "conformance {revision}, upstream over {how}: passing direct and failing through toolgate: {lost:?}: {:?}",
        said(out.path(), &lost)
    );
}

fn direct_and_through(revision: &str, protocols: &[&str]) {
    let _turn = one_at_a_time();
    for (_, scenario, id, reason) in EXCUSED {
        assert!(!reason.is_empty(), "{scenario}:{id} has no reason");
    }
    let (server, port) = serve_http();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (direct, _out) = suite(&url, revision);
    for scenario in [
        "tools-call-sampling",
        "input-required-result-basic-sampling",
    ] {
        if let Some(list) = direct.get(scenario) {
            assert!(
                list.iter().all(|(_, s)| s == "SUCCESS"),
                "the dual-era server itself fails {scenario}: {list:?}"
            );
        }
    }
    for protocol in protocols {
        let http = json!({"type": "http", "url": url, "protocol": protocol});
        judge(
            revision,
            &direct,
            http,
            &format!("Streamable HTTP, {protocol} era"),
        );
        let stdio = json!({"command": python(), "args": [script(), "stdio"], "protocol": protocol});
        judge(revision, &direct, stdio, &format!("stdio, {protocol} era"));
    }
    drop(server);
}

#[test]
fn dual_era_server_passes_through_toolgate_what_it_passes_direct_2025_11_25() {
    // In its own era, and reached modern: the legacy client's questions then come as `input_required`,
    // which toolgate asks the client as the requests it knows (`bridge`).
    direct_and_through("2025-11-25", &["legacy", "modern"]);
}

#[test]
fn dual_era_server_passes_through_toolgate_what_it_passes_direct_2026_07_28() {
    direct_and_through("2026-07-28", &["modern"]);
}

#[test]
fn a_check_passing_direct_and_failing_through_is_reported() {
    let checks = |pairs: &[(&str, &str)]| -> Checks {
        BTreeMap::from([(
            "s".to_owned(),
            pairs
                .iter()
                .map(|(i, st)| ((*i).to_owned(), (*st).to_owned()))
                .collect(),
        )])
    };
    let direct = checks(&[
        ("a", "SUCCESS"),
        ("b", "FAILURE"),
        ("w", "SUCCESS"),
        ("w", "SUCCESS"),
    ]);
    let through = checks(&[("a", "FAILURE"), ("b", "FAILURE"), ("w", "SUCCESS")]);
    assert_eq!(lost(&direct, &through), ["s:a", "s:w"]);
    let informed = checks(&[("a", "INFO"), ("w", "SUCCESS"), ("w", "WARNING")]);
    assert_eq!(lost(&direct, &informed), ["s:w"]);
    assert!(lost(&direct, &direct).is_empty());
    assert_eq!(lost(&direct, &Checks::new()), ["s:a", "s:w"]);
}
