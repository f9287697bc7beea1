//! The official conformance suite with a real dual-era server behind toolgate: `tests/peers/conformance_server.py`,
//! written on the official Python SDK 2.x, which answers both `initialize` and `server/discover` and asks
//! mid-call (sampling, elicitation) with requests in the legacy era and with `input_required` in 2026-07-28.
//!
//! For each protocol revision the suite runs direct against that server over Streamable HTTP, then through
//! toolgate's HTTP front end with the server as its upstream, over Streamable HTTP and over stdio, reached in
//! the revision's own era (`"protocol"`). Every check that passes direct must pass through toolgate, the
//! sampling and elicitation scenarios included; what fails direct says nothing about toolgate and is not judged.
//! A check toolgate is known to fail through is listed with its reason in `EXCUSED`, which only shrinks.

use crate::conformance::{checks, free_port, front_of};
use crate::support::peers;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Checks that pass direct and fail through toolgate for a reason of toolgate's own, with the reason:
/// `(revision, scenario, check id)`.
const EXCUSED: &[(&str, &str, &str, &str)] = &[];

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

/// Runs the server scenarios `revision` requires (and those it reports without scoring) against `url`.
fn suite(url: &str, revision: &str) -> Checks {
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
    checks
}

/// The checks that pass in `direct` and do not in `through`, as `scenario:id`. A check id may repeat within a
/// scenario; each passing instance direct needs one through.
fn lost(direct: &Checks, through: &Checks) -> Vec<String> {
    let passes = |list: Option<&Vec<(String, String)>>, id: &str| {
        list.map_or(0, |l| {
            l.iter()
                .filter(|(i, status)| i == id && status == "SUCCESS")
                .count()
        })
    };
    let mut lost = Vec::new();
    for (scenario, list) in direct {
        let mut ids: Vec<&str> = list.iter().map(|(id, _)| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            if passes(Some(list), id) > passes(through.get(scenario), id) {
                lost.push(format!("{scenario}:{id}"));
            }
        }
    }
    lost
}

/// Direct, then through toolgate with `upstream` as its server; fails on any check lost on the way.
fn judge(revision: &str, direct: &Checks, upstream: Value, how: &str) {
    let front = front_of(upstream);
    let through = suite(&front.url, revision);
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
        "conformance {revision}, upstream over {how}: passing direct and failing through toolgate: {lost:?}"
    );
}

fn direct_and_through(revision: &str, protocol: &str) {
    let (server, port) = serve_http();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let direct = suite(&url, revision);
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
    let http = json!({"type": "http", "url": url, "protocol": protocol});
    judge(revision, &direct, http, "Streamable HTTP");
    let stdio = json!({"command": python(), "args": [script(), "stdio"], "protocol": protocol});
    judge(revision, &direct, stdio, "stdio");
    drop(server);
}

#[test]
fn dual_era_server_passes_through_toolgate_what_it_passes_direct_2025_11_25() {
    direct_and_through("2025-11-25", "legacy");
}

#[test]
fn dual_era_server_passes_through_toolgate_what_it_passes_direct_2026_07_28() {
    direct_and_through("2026-07-28", "modern");
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
    assert!(lost(&direct, &direct).is_empty());
    assert_eq!(lost(&direct, &Checks::new()), ["s:a", "s:w"]);
}
