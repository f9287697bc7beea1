//! Every kind of message toolgate governs, through every front end and upstream transport, in both eras: the
//! official Python SDK client (`py_table.py`) makes a tool call, a prompt get, a resource read, a completion,
//! a subscription and its end (legacy), and two calls during which the upstream asks the client (sampling,
//! elicitation), through `toolgate serve` on stdio and on Streamable HTTP, to the real dual-era server
//! (`conformance_server.py`) over stdio and over Streamable HTTP. Each request leaves one decision record, by the
//! policy's one rule, and at most one finished record; a deny rule on `mcp.sample` stops the upstream's sampling
//! before the client in every combination.

use crate::http_upstreams::{dual_era, serve_http, Served};
use crate::support::{audit_records, peers, toolgate, Setup};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use test_support::free_port;

/// What one trace left: the rule of each decision record, its finished records, the name it was recorded under.
#[derive(Debug, Default)]
struct Left {
    rules: Vec<String>,
    finished: usize,
    tool: String,
}

fn by_trace(records: &[Value]) -> BTreeMap<String, Left> {
    let mut by: BTreeMap<String, Left> = BTreeMap::new();
    for r in records {
        let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
        let left = by.entry(s("trace_id")).or_default();
        match r["kind"].as_str() {
            Some("decision") => left.rules.push(s("rule_id")),
            Some("execution") => left.finished += 1,
            _ => continue,
        }
        left.tool = s("tool");
    }
    by.retain(|_, l| !l.rules.is_empty() || l.finished > 0);
    by
}

/// The upstream: the dual-era server started by toolgate on stdio, or already serving Streamable HTTP.
fn upstream(http: Option<&Served>) -> Value {
    match http {
        Some(served) => {
            json!({"type": "http", "url": format!("http://127.0.0.1:{}/mcp", served.port)})
        }
        None => {
            let peers = peers();
            json!({"command": peers.join(".venv-servers/bin/python"), "args": [peers.join("conformance_server.py")]})
        }
    }
}

/// A config with `server` as its one upstream under a deny default and one allow rule, `table`, and `extra`
/// rules before it; its state and workspace named in the file, since a stdio client starts toolgate with a
/// short environment.
fn setup(server: Value, extra: Value) -> Setup {
    Setup::with(|root| {
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).expect("workspace");
        let mut rules = extra.as_array().cloned().unwrap_or_default();
        rules.push(json!({"id": "table", "effect": "allow"}));
        json!({"mcpServers": {"conf": server}, "prefixTools": false,
               "stateDir": root.join("state"), "workspace": ws,
               "policy": {"default": "deny", "rules": rules},
               "pins": {"newTools": "accept"}})
    })
}

/// Runs `py_table.py` in `mode` through toolgate on stdio, or on its HTTP front; what it printed.
fn run_client(setup: &Setup, mode: &str, http_front: bool) -> Value {
    let peers = peers();
    let mut cmd = Command::new(peers.join(".venv/bin/python"));
    cmd.arg(peers.join("py_table.py")).arg(mode);
    let front = match http_front {
        true => {
            let front = serve_http(setup, Stdio::inherit());
            cmd.arg(format!("http://127.0.0.1:{}/mcp", front.port));
            Some(front)
        }
        false => {
            cmd.arg("stdio").arg(toolgate()).arg(&setup.config);
            None
        }
    };
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .expect("run py_table.py");
    // Its records are read once it has shut down and written what it queued.
    if let Some(front) = front {
        front.stop();
    }
    assert!(out.status.success(), "py_table.py {mode} failed");
    serde_json::from_slice(&out.stdout).expect("py_table.py prints JSON")
}

/// The steps every combination must complete, and the names their requests are recorded under.
const STEPS: &[(&str, &[&str])] = &[
    ("tools/call", &["test_simple_text"]),
    ("prompts/get", &["test_simple_prompt"]),
    ("resources/read", &["resources/read"]),
    ("sampling", &["test_sampling"]),
    ("elicitation", &["test_elicitation"]),
];

/// One combination: every step done, the client asked once for each question, and every request recorded as
/// governed, once (the server has no completions: that request fails upstream, after its decision).
fn check_row(row: &str, printed: &Value, records: &[Value], legacy: bool) {
    for (step, _) in STEPS {
        assert_eq!(printed["steps"][step], "ok", "{row}: {step}: {printed}");
    }
    assert_eq!(
        (printed["sampled"].as_u64(), printed["elicited"].as_u64()),
        (Some(1), Some(1)),
        "{row}"
    );
    let left = by_trace(records);
    let mut want: Vec<&str> = STEPS
        .iter()
        .flat_map(|(_, names)| names.iter().copied())
        .collect();
    want.extend([
        "test_prompt_with_arguments",
        "sampling/createMessage",
        "elicitation/create",
    ]);
    if legacy {
        assert_eq!(
            printed["steps"]["resources/subscribe"], "ok",
            "{row}: {printed}"
        );
        assert_eq!(
            printed["steps"]["resources/unsubscribe"], "ok",
            "{row}: {printed}"
        );
        want.extend(["resources/subscribe", "resources/unsubscribe"]);
    }
    for name in want {
        assert!(
            left.values().any(|l| l.tool == name),
            "{row}: no record of {name}: {left:#?}"
        );
    }
    for l in left.values() {
        assert_eq!(
            l.rules,
            ["table"],
            "{row}: one decision, by the policy: {left:#?}"
        );
        assert!(
            l.finished <= 1,
            "{row}: at most one finished record: {left:#?}"
        );
    }
}

/// Both eras through one front end and one upstream transport.
fn rows(http_upstream: bool, http_front: bool) {
    let served = http_upstream.then(|| dual_era("http", free_port()));
    for mode in ["legacy", "auto"] {
        let setup = setup(upstream(served.as_ref()), json!([]));
        let printed = run_client(&setup, mode, http_front);
        let row = format!("{mode} client, HTTP front {http_front}, HTTP upstream {http_upstream}");
        check_row(
            &row,
            &printed,
            &audit_records(&setup.state_dir()),
            mode == "legacy",
        );
    }
    let no_sampling =
        json!([{"id": "no-sampling", "effect": "deny", "operations": ["mcp.sample"]}]);
    for mode in ["legacy", "auto"] {
        let setup = setup(upstream(served.as_ref()), no_sampling.clone());
        let printed = run_client(&setup, mode, http_front);
        let row = format!("{mode} client, HTTP front {http_front}, HTTP upstream {http_upstream}, sampling denied");
        assert_eq!(
            printed["sampled"], 0,
            "{row}: the client was asked to sample: {printed}"
        );
        assert_ne!(printed["steps"]["sampling"], "ok", "{row}: {printed}");
        assert_eq!(printed["steps"]["elicitation"], "ok", "{row}: {printed}");
        let left = by_trace(&audit_records(&setup.state_dir()));
        let sampled: Vec<&Left> = left
            .values()
            .filter(|l| l.tool == "sampling/createMessage")
            .collect();
        assert!(!sampled.is_empty(), "{row}: {left:#?}");
        for l in sampled {
            assert_eq!(
                (l.rules.as_slice(), l.finished),
                (&["no-sampling".to_owned()][..], 1),
                "{row}"
            );
        }
    }
}

#[test]
fn every_message_kind_is_governed_through_stdio_to_a_stdio_upstream() {
    rows(false, false);
}

#[test]
fn every_message_kind_is_governed_through_stdio_to_an_http_upstream() {
    rows(true, false);
}

#[test]
fn every_message_kind_is_governed_through_http_to_a_stdio_upstream() {
    rows(false, true);
}

#[test]
fn every_message_kind_is_governed_through_http_to_an_http_upstream() {
    rows(true, true);
}
