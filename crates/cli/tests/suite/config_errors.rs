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

/// `command --config FILE` with the setup's own state, stdin closed: (exit code, stderr).
fn run_with_config(setup: &Setup, command: &[&str], config: &std::path::Path) -> (i32, String) {
    // Before `--`, where wrap's command begins.
    let at = command
        .iter()
        .position(|a| *a == "--")
        .unwrap_or(command.len());
    let out = Command::new(toolgate())
        .args(&command[..at])
        .arg("--config")
        .arg(config)
        .args(&command[at..])
        .env("TOOLGATE_STATE_DIR", setup.state_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every command that reads a config: each must refuse the same file the same way.
const CONFIG_COMMANDS: &[&[&str]] = &[
    &["serve"],
    &["policy", "check"],
    &["doctor", "--no-start"],
    &["doctor"],
    &["wrap", "--", "cat"],
];

#[test]
fn misspelt_permissions_key_does_not_drop_the_deny() {
    let spelt = Setup::new(json!({"permissions": {"deny": ["Read(**/.env)"]}}));
    let (code, err) = run_with_config(&spelt, &["policy", "check"], &spelt.config);
    assert_eq!(code, 0, "the correctly spelt file is a valid policy: {err}");
    let setup = Setup::new(json!({"permisions": {"deny": ["Read(**/.env)"]}}));
    for command in CONFIG_COMMANDS {
        let (code, err) = run_with_config(&setup, command, &setup.config);
        assert_eq!(code, 2, "{command:?}: {err}");
        assert!(
            err.contains("unknown key permisions (did you mean permissions?)"),
            "{command:?}: {err}"
        );
    }
}

#[test]
fn toolfence_policy_passed_as_config_is_read_as_toolfence_reads_it() {
    let setup = Setup::new(json!({}));
    let yaml = setup.dir.path().join("toolfence.yaml");
    std::fs::write(
        &yaml,
        "version: 1\ndefault: ask\nrules:\n  - id: deny-dotenv\n    effect: deny\n    operations: [fs.read]\n    \
         resources: [\"**/.env\"]\n",
    )
    .unwrap();
    let json_twin = setup.dir.path().join("toolfence.json");
    std::fs::write(
        &json_twin,
        json!({"version": 1, "default": "ask", "rules": []}).to_string(),
    )
    .unwrap();
    for file in [&yaml, &json_twin] {
        let (code, err) = run_with_config(&setup, &["policy", "check"], file);
        assert_eq!(code, 0, "{}: {err}", file.display());
    }
    // A policy's keys beside a config's own are still a slip, refused by every command with the fix.
    let mixed = setup.dir.path().join("mixed.json");
    std::fs::write(
        &mixed,
        json!({"version": 1, "default": "ask", "rules": [], "mcpServers": {}}).to_string(),
    )
    .unwrap();
    for command in CONFIG_COMMANDS {
        let (code, err) = run_with_config(&setup, command, &mixed);
        assert_eq!(code, 2, "{command:?}: {err}");
        assert!(
            err.contains("A ToolFence policy") && err.contains("\"policy\" section"),
            "{command:?}: {err}"
        );
    }
}
