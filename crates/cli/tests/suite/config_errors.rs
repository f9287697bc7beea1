//! Start-up refusals: each names what is wrong and exits non-zero before serving anything.

use crate::support::{fixture, toolgate, Setup};
use serde_json::json;
use std::process::Command;

fn serve_output(setup: &Setup) -> (i32, String) {
    let out = Command::new(toolgate())
        .args(["serve", "--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .env_remove("UNSET_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.stdout.is_empty(), "stdout carries protocol bytes only");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn missing_variable_is_named_and_its_absence_stops_startup() {
    let setup = Setup::new(
        json!({"mcpServers": {"x": {"command": "x", "headers": {}, "env": {"T": "${UNSET_TOKEN}"}}}}),
    );
    let (code, err) = serve_output(&setup);
    assert_eq!(code, 2);
    assert!(
        err.contains("${UNSET_TOKEN}") && err.contains("mcpServers.x.env.T"),
        "{err}"
    );
}

#[test]
fn toolgate_listed_as_its_own_upstream_is_refused() {
    let setup =
        Setup::new(json!({"mcpServers": {"me": {"command": toolgate(), "args": ["serve"]}}}));
    let (code, err) = serve_output(&setup);
    assert_eq!(code, 2);
    assert!(err.contains("toolgate itself"), "{err}");
}

#[test]
fn unprefixed_name_collision_is_refused_at_startup_naming_both() {
    let setup = Setup::new(
        json!({"prefixTools": false, "mcpServers": {"a": fixture(&[]), "b": fixture(&[])}}),
    );
    // stdin stays open, as a client's would: the refusal must not wait for it to close.
    let mut child = Command::new(toolgate())
        .args(["serve", "--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("of server a") && err.contains("of server b"),
        "{err}"
    );
}

#[test]
fn http_upstreams_are_accepted_but_reported_as_not_connected() {
    let setup = Setup::new(
        json!({"mcpServers": {"remote": {"type": "http", "url": "https://mcp.example.com/mcp"}}}),
    );
    let out = Command::new(toolgate())
        .args(["doctor", "--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("not-connected"), "{stdout}");
}
