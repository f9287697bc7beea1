//! Start-up refusals: each names what is wrong and exits non-zero before serving anything.

use crate::support::{toolgate, Setup};
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
fn unreachable_http_upstream_is_reported_with_its_url_and_the_reason() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let setup = Setup::new(json!({"mcpServers": {"remote": {"type": "http", "url": url}}}));
    let out = Command::new(toolgate())
        .args(["doctor", "--config", setup.config.to_str().unwrap()])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "an unreachable upstream is unhealthy: {stdout}"
    );
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("remote ") && l.contains("backoff"))
        .unwrap_or_default();
    assert!(
        line.contains(&format!("cannot reach {url}")) && line.contains("refused"),
        "{stdout}"
    );
}
