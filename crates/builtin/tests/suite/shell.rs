//! Structured shell: approval snapshots, executable re-validation, sandboxed runs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use builtin::SHELL_RUN;
use serde_json::json;

use crate::{assert_refused, Fixture};

fn tool_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn executable_swapped_after_approval() {
    let parent = tempfile::tempdir().unwrap();
    let bin = std::fs::canonicalize(parent.path()).unwrap();
    tool_script(&bin.join("tool"), "echo approved");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let f = Fixture::with(|c| {
        c.shell.env.insert("PATH".into(), path);
    });
    let snapshot = f
        .tools
        .prepare_command(json!({"program": "tool", "args": ["x"]}))
        .unwrap();
    assert_eq!(snapshot.executable, bin.join("tool"));
    assert_eq!(snapshot.args, ["x"]);

    let ran = f.tools.run_approved(snapshot.clone()).await.unwrap();
    assert_eq!(ran.outcome, "SUCCEEDED", "{}", ran.structured);
    assert_eq!(ran.structured["stdout"], "approved\n");

    // Same size, different bytes.
    tool_script(&bin.join("tool"), "echo swapped");
    let refused = f.tools.run_approved(snapshot.clone()).await.unwrap();
    assert_refused(&refused, "EXECUTABLE_CHANGED");

    // Replaced by a symlink to another program.
    std::fs::remove_file(bin.join("tool")).unwrap();
    std::os::unix::fs::symlink("/bin/true", bin.join("tool")).unwrap();
    let refused = f.tools.run_approved(snapshot).await.unwrap();
    assert_refused(&refused, "EXECUTABLE_CHANGED");
}

#[tokio::test]
async fn shell_run_gets_only_the_snapshot_environment_and_cwd() {
    std::env::set_var("TOOLGATE_PARENT_SECRET", "leak");
    let f = Fixture::new();
    std::fs::create_dir(f.root.join("sub")).unwrap();
    let r = f
        .tools
        .call(SHELL_RUN, json!({"program": "env", "cwd": "sub"}))
        .await
        .unwrap();
    assert_eq!(r.outcome, "SUCCEEDED", "{}", r.structured);
    let out = r.structured["stdout"].as_str().unwrap();
    assert!(!out.contains("TOOLGATE_PARENT_SECRET"), "{out}");
    assert!(out.contains("PATH=/usr/local/bin:/usr/bin:/bin"), "{out}");
    let pwd = f.call(SHELL_RUN, json!({"program": "pwd", "cwd": "sub"}));
    assert_eq!(
        pwd.structured["stdout"],
        format!("{}\n", f.root.join("sub").display())
    );
}

#[test]
fn shell_run_timeout_and_failures_are_outcomes() {
    let f = Fixture::new();
    let t = f.call(
        SHELL_RUN,
        json!({"program": "sleep", "args": ["10"], "timeout_seconds": 1}),
    );
    assert_eq!(t.outcome, "TIMED_OUT", "{}", t.structured);
    let c = f.call(SHELL_RUN, json!({"program": "false"}));
    assert_eq!(c.outcome, "COMMAND_FAILED");
    assert!(!c.is_error);
    assert_refused(
        &f.call(SHELL_RUN, json!({"program": "no-such-program-xyz"})),
        "EXECUTABLE_NOT_FOUND",
    );
    assert_refused(
        &f.call(SHELL_RUN, json!({"program": "true", "cwd": "../"})),
        "PATH_OUTSIDE_WORKSPACE",
    );
    // A shell string is just a program name that does not exist.
    assert_refused(
        &f.call(SHELL_RUN, json!({"program": "echo hi && id"})),
        "EXECUTABLE_NOT_FOUND",
    );
}

#[test]
fn shell_run_with_landlock_cannot_write_outside() {
    let f = Fixture::with(|c| c.sandbox.landlock = sandbox::LayerMode::Required);
    let victim = f.outside().join("victim");
    let script = format!(
        "echo in > inside.txt; echo out > '{}'; true",
        victim.display()
    );
    let r = f.call(SHELL_RUN, json!({"program": "sh", "args": ["-c", script]}));
    assert_eq!(r.outcome, "SUCCEEDED", "{}", r.structured);
    assert!(f.root.join("inside.txt").exists());
    assert!(!victim.exists());
}

#[test]
fn snapshot_for_another_workspace_is_refused() {
    let a = Fixture::new();
    let b = Fixture::new();
    let snapshot = a.tools.prepare_command(json!({"program": "true"})).unwrap();
    let r = b
        .tools
        .call_blocking("shell_run", json!({"program": "true"}))
        .unwrap();
    assert_eq!(r.outcome, "SUCCEEDED");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let refused = rt.block_on(b.tools.run_approved(snapshot)).unwrap();
    assert_refused(&refused, "PATH_OUTSIDE_WORKSPACE");
}
