//! Launched by a client, configured by a client's file, driven from a shell: client config files load unchanged
//! and `doctor` says what each setting does; a trimmed environment or a missing workspace is a clear refusal;
//! admin commands find the state `serve` uses or say where they looked; shell conventions (closed pipes,
//! colours, completions, exit codes) hold.

use crate::support::{call, fixture, legacy, toolgate, Setup};
use pretty_assertions::assert_eq;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use test_support::list_all;

fn corpus(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../config/tests/corpus")
        .join(file)
}

/// toolgate with the environment a client gives a server (only what is set here), started in `dir/ws` with its
/// state in `dir/state`.
fn trimmed(dir: &Path) -> Command {
    let cwd = dir.join("ws");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut cmd = Command::new(toolgate());
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("TOOLGATE_STATE_DIR", dir.join("state"))
        .current_dir(cwd)
        .stdin(Stdio::null());
    cmd
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn doctor_reports_what_each_client_setting_does() {
    let setup = Setup::new(json!({}));
    let ws = setup.workspace();
    let out = trimmed(setup.dir.path())
        .args(["doctor", "--no-start", "--workspace", ws.to_str().unwrap()])
        .arg("--config")
        .arg(corpus("codex_config.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "servers in the config:")
        .take_while(|l| *l == "servers in the config:" || l.starts_with(' '))
        .collect();
    insta::assert_snapshot!("doctor_codex_servers", section.join("\n") + "\n");
}

#[test]
fn vscode_server_needing_an_input_is_listed_as_not_started_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = trimmed(dir.path())
        .args(["doctor", "--no-start", "--config"])
        .arg(corpus("vscode/.vscode/mcp.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "  perplexity       not started: servers.perplexity.env.PERPLEXITY_API_KEY references ${input:perplexity-key}"
        ),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn enabled_and_disabled_tools_hide_and_refuse_the_others() {
    let mut entry = fixture(&[]);
    entry["enabled_tools"] = json!(["echo", "add"]);
    entry["disabled_tools"] = json!(["add"]);
    let setup =
        Setup::new(json!({"mcpServers": {"fx": entry}, "permissions": {"default": "allow"}}));
    let client = legacy(&setup).await;
    let tools = list_all(&client, "tools/list", "tools", None)
        .await
        .unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"fx__echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| *n == "fx__add" || *n == "fx__rich"),
        "{names:?}"
    );
    let refused = call(&client, "fx__add", json!({"a": 1, "b": 2})).await;
    let text = refused.map_or_else(|e| e.to_string(), |r| r.to_string());
    assert!(!text.contains("\"sum\""), "a filtered tool ran: {text}");
}

#[test]
fn unset_variable_error_names_the_variable_the_file_and_the_fix() {
    let setup = Setup::new(
        json!({"mcpServers": {"notes": {"command": "notes-server", "args": ["${NOTES_DIR}"]}}}),
    );
    let out = trimmed(setup.dir.path())
        .args(["serve", "--config", setup.config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for part in [
        "mcpServers.notes.args[0]",
        setup.config.to_str().unwrap(),
        "${NOTES_DIR}",
        "\"env\" block",
    ] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }
}

#[test]
fn started_from_root_without_workspace_refuses_instead_of_turning_approvals_off() {
    let dir = tempfile::tempdir().unwrap();
    let out = trimmed(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .current_dir("/")
        .arg("serve")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no workspace") && err.contains("--workspace"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn approvals_list_names_where_it_looked_and_where_requests_wait() {
    let setup = Setup::new(json!({}));
    let served = setup.workspace();
    let elsewhere = setup.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let ns = store::Namespace::open(&setup.state_dir(), &served).unwrap();
    let mut db = store::Store::open(&ns).unwrap();
    let now = store::Timestamp::now();
    let snapshot = json!({"kind": "tools/call", "server": "fx", "tool": "echo", "arguments": {}});
    db.create_request("fx__echo", &snapshot, now, now.plus_millis(600_000))
        .unwrap();
    let out = trimmed(setup.dir.path())
        .args(["approvals", "list", "--workspace"])
        .arg(&elsewhere)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "no approval requests\n");
    let text = stderr(&out);
    let elsewhere = std::fs::canonicalize(&elsewhere).unwrap();
    assert!(
        text.contains(&format!(
            "looked in workspace {} (state ",
            elsewhere.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "1 request for workspace {} in this state: toolgate approvals watch --workspace {}",
            served.display(),
            served.display()
        )),
        "{text}"
    );
}

/// A client that starts toolgate with a trimmed environment (no `TOOLGATE_STATE_DIR`) keeps its requests under
/// the per-user default; `approvals watch` run from a shell that sets `TOOLGATE_STATE_DIR` says which state it
/// reads, finds them there, and names the command that watches them; its `--state-dir` reads them.
#[test]
fn approvals_watch_names_its_state_and_finds_requests_of_a_trimmed_client() {
    let setup = Setup::new(json!({}));
    let ws = setup.workspace();
    let dir = std::fs::canonicalize(setup.dir.path()).unwrap();
    let trimmed_root = dir.join("home/.local/state/toolgate");
    let ns = store::Namespace::open(&trimmed_root, &ws).unwrap();
    let now = store::Timestamp::now();
    let snapshot = json!({"kind": "tools/call", "server": "fx", "tool": "echo", "arguments": {}});
    let waiting = store::Store::open(&ns)
        .unwrap()
        .create_request("fx__echo", &snapshot, now, now.plus_millis(600_000))
        .unwrap();
    let watch = |extra: &[&str], key: &Path| {
        let out = trimmed(&dir)
            .args(["approvals", "watch", "--workspace"])
            .arg(&ws)
            .args(extra)
            .arg("--operator-key")
            .arg(key)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).replace(&*dir.to_string_lossy(), "[TMP]")
    };
    let shell = watch(&[], &dir.join("state/operator.key"));
    insta::assert_snapshot!("watch_from_a_shell_with_toolgate_state_dir", shell);
    let root = trimmed_root.to_str().unwrap();
    let there = watch(&["--state-dir", root], &trimmed_root.join("operator.key"));
    assert!(
        there.contains(
            "reading state [TMP]/home/.local/state/toolgate (from command line (--state-dir))\n"
        ),
        "{there}"
    );
    let listed = trimmed(&dir)
        .args(["approvals", "list", "--state-dir", root, "--workspace"])
        .arg(&ws)
        .output()
        .unwrap();
    assert!(stdout(&listed).contains(&waiting.id), "{}", stdout(&listed));
}

#[test]
fn default_config_location_is_found_by_every_command() {
    let setup = Setup::new(json!({}));
    let ws = setup.workspace();
    let user = setup.dir.path().join("xdg/toolgate");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("config.json"),
        json!({"workspace": ws, "separator": "-"}).to_string(),
    )
    .unwrap();
    let out = trimmed(setup.dir.path())
        .env("XDG_CONFIG_HOME", setup.dir.path().join("xdg"))
        .args(["doctor", "--no-start"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("config: {}", user.join("config.json").display())),
        "{text}"
    );
    assert!(
        text.contains("separator                      \"-\""),
        "{text}"
    );
    let list = trimmed(setup.dir.path())
        .env("XDG_CONFIG_HOME", setup.dir.path().join("xdg"))
        .args(["approvals", "list"])
        .output()
        .unwrap();
    assert!(
        stderr(&list).contains(&format!("looked in workspace {}", ws.display())),
        "{}",
        stderr(&list)
    );
    let report = trimmed(setup.dir.path())
        .env("XDG_CONFIG_HOME", setup.dir.path().join("xdg"))
        .args(["report", "--group-by", "tool"])
        .output()
        .unwrap();
    assert!(
        stderr(&report).contains(&format!(
            "no reporting events for workspace {}",
            ws.display()
        )),
        "{}",
        stderr(&report)
    );
}

/// A repository (or the agent, through its file tools) could otherwise drop a `toolgate.json` that picks its own
/// firewall rules and upstream commands; naming another workspace inside the file does not get it trusted.
#[test]
fn config_found_in_the_current_directory_inside_the_workspace_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    for planted in [
        json!({"permissions": {"default": "allow"}}),
        json!({"permissions": {"default": "allow"}, "workspace": elsewhere}),
    ] {
        std::fs::write(dir.path().join("ws/toolgate.json"), planted.to_string()).unwrap();
        for args in [&["serve"][..], &["doctor"][..]] {
            let out = trimmed(dir.path()).args(args).output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(2),
                "{args:?} {planted}: {}",
                stdout(&out)
            );
            assert!(
                stderr(&out).contains("inside the workspace"),
                "{}",
                stderr(&out)
            );
        }
    }
    // Commands that start nothing read the same file, so they look where such a `serve` was pointed.
    let list = trimmed(dir.path())
        .args(["approvals", "list"])
        .output()
        .unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    // With the workspace named elsewhere on the command line, the file is outside it and is used.
    let ok = trimmed(dir.path())
        .args(["doctor", "--workspace"])
        .arg(&elsewhere)
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn unknown_profile_lists_the_profiles_that_exist() {
    let setup = Setup::new(
        json!({"profiles": {"readonly": {"default": "deny"}, "dev": {"default": "ask"}}}),
    );
    let out = trimmed(setup.dir.path())
        .args(["doctor", "--no-start", "--profile", "nope", "--config"])
        .arg(&setup.config)
        .arg("--workspace")
        .arg(setup.workspace())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown profile \"nope\""), "{err}");
    assert!(err.contains("dev") && err.contains("readonly"), "{err}");
}

/// `toolgate … | head`: the reader is gone before toolgate writes.
#[test]
fn closed_stdout_ends_quietly_like_other_unix_tools() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["completions", "bash"][..],
        &["doctor", "--no-start"][..],
        &["--help"][..],
    ] {
        let (read, write) = std::io::pipe().unwrap();
        drop(read);
        let out = trimmed(dir.path())
            .args(args)
            .stdout(Stdio::from(write))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn logs_carry_no_colour_codes_when_stderr_is_not_a_terminal() {
    let setup = Setup::new(json!({"someClientSetting": true}));
    let out = trimmed(setup.dir.path())
        .args(["doctor", "--no-start", "--config"])
        .arg(&setup.config)
        .arg("--workspace")
        .arg(setup.workspace())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(err.contains("someClientSetting"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

#[test]
fn completions_are_printed_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(toolgate())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        assert!(stdout(&out).contains("approvals"), "{shell}");
    }
    let bad = Command::new(toolgate())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn an_error_prints_its_cause_once() {
    let out = Command::new(toolgate())
        .args(["doctor", "--config", "/nonexistent/toolgate.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn admin_help_for_config_names_the_default_location() {
    let out = Command::new(toolgate())
        .args(["approvals", "list", "--help"])
        .output()
        .unwrap();
    let help = stdout(&out);
    assert!(help.contains("toolgate/config.toml"), "{help}");
    assert!(!help.contains("serves only its own tools"), "{help}");
}

/// Codex's `startup_timeout_sec` bounds the wait for that server instead of the 30 s default.
#[test]
fn codex_startup_timeout_bounds_the_wait_for_a_silent_server() {
    let setup = Setup::new(json!({"mcp_servers": {"silent": {
        "command": "sleep", "args": ["60"], "startup_timeout_sec": 1
    }}}));
    let started = std::time::Instant::now();
    let out = trimmed(setup.dir.path())
        .args(["doctor", "--config"])
        .arg(&setup.config)
        .arg("--workspace")
        .arg(setup.workspace())
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(took < std::time::Duration::from_secs(15), "took {took:?}");
    assert!(
        stdout(&out).contains("start-up timeout 1 s"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("doctor: starting 1 upstream"),
        "{}",
        stderr(&out)
    );
}
