//! A repository whose own config tries to make read-only git run programs; none of them may run.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use builtin::{GIT_DIFF, GIT_STATUS};
use serde_json::json;

use crate::Fixture;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn script(path: &Path, marker: &Path, tail: &str) {
    std::fs::write(
        path,
        format!("#!/bin/sh\ntouch '{}'\n{tail}\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn markers(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("MARK_"))
        .collect();
    found.sort();
    found
}

/// Builds the hostile repository; returns the directory where markers appear.
fn hostile_repo(f: &Fixture) -> std::path::PathBuf {
    let out = f.outside();
    let evil = out.join("evil");
    let hooks = evil.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    git(&f.root, &["init", "-q"]);
    f.write("a.txt", "one\n");
    git(&f.root, &["add", "a.txt"]);
    git(&f.root, &["commit", "-q", "-m", "init"]);

    script(
        &evil.join("fsmonitor"),
        &out.join("MARK_fsmonitor"),
        "exit 1",
    );
    script(&evil.join("extdiff"), &out.join("MARK_extdiff"), "exit 0");
    script(
        &evil.join("textconv"),
        &out.join("MARK_textconv"),
        "cat \"$1\"",
    );
    script(&evil.join("clean"), &out.join("MARK_clean"), "cat");
    for hook in [
        "pre-commit",
        "post-checkout",
        "post-index-change",
        "reference-transaction",
        "fsmonitor-watchman",
    ] {
        script(
            &hooks.join(hook),
            &out.join(format!("MARK_hook_{hook}")),
            "exit 0",
        );
        script(
            &f.root.join(".git/hooks").join(hook),
            &out.join(format!("MARK_githook_{hook}")),
            "exit 0",
        );
    }
    let config = format!(
        "[core]\n\tfsmonitor = {e}/fsmonitor\n\thooksPath = {e}/hooks\n\
         [diff]\n\texternal = {e}/extdiff\n\
         [diff \"evil\"]\n\ttextconv = {e}/textconv\n\
         [filter \"evil\"]\n\tclean = {e}/clean\n\tsmudge = {e}/clean\n\trequired = true\n",
        e = evil.display()
    );
    let path = f.root.join(".git/config");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&config);
    std::fs::write(&path, text).unwrap();
    f.write(".gitattributes", "*.txt diff=evil filter=evil\n");
    f.write("a.txt", "two, longer\n");
    out
}

#[test]
fn hostile_repo_config_executes_nothing() {
    let f = Fixture::new();
    let out = hostile_repo(&f);

    // The repository really is hostile: plain git runs its programs.
    let _ = Command::new("git")
        .args(["diff"])
        .current_dir(&f.root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        !markers(&out).is_empty(),
        "the fixture does not trigger anything"
    );
    for m in markers(&out) {
        std::fs::remove_file(out.join(m)).unwrap();
    }

    let status = f.call(GIT_STATUS, json!({}));
    assert_eq!(status.outcome, "SUCCEEDED", "{}", status.structured);
    let entries = status.structured["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e["path"] == "a.txt" && e["status"] == " M"),
        "{}",
        status.structured
    );

    let diff = f.call(GIT_DIFF, json!({"paths": ["a.txt"]}));
    assert_eq!(diff.outcome, "SUCCEEDED", "{}", diff.structured);
    let text = diff.structured["stdout"].as_str().unwrap();
    assert!(
        text.contains("-one") && text.contains("+two, longer"),
        "{text}"
    );

    let staged = f.call(GIT_DIFF, json!({"staged": true, "base": "HEAD"}));
    assert_eq!(staged.outcome, "SUCCEEDED", "{}", staged.structured);

    assert_eq!(
        markers(&out),
        Vec::<String>::new(),
        "a repository-configured program ran"
    );
}

#[test]
fn option_like_user_values_are_refused() {
    let f = Fixture::new();
    git(&f.root, &["init", "-q"]);
    let r = f
        .tools
        .call_blocking(GIT_DIFF, json!({"base": "--output=/tmp/x"}));
    assert!(matches!(r, Err(builtin::Error::InvalidArguments(_))));
    let r = f.tools.call_blocking(GIT_DIFF, json!({"paths": ["-p"]}));
    assert!(matches!(r, Err(builtin::Error::InvalidArguments(_))));
    let escape = f.call(GIT_STATUS, json!({"paths": ["../x"]}));
    assert_eq!(escape.outcome, "REFUSED");
}

#[test]
fn non_repository_is_a_command_failure_not_a_crash() {
    let f = Fixture::new();
    let r = f.call(GIT_STATUS, json!({}));
    assert_eq!(r.outcome, "COMMAND_FAILED", "{}", r.structured);
    assert!(r.structured["stderr"]
        .as_str()
        .unwrap()
        .contains("not a git repository"));
}

#[test]
fn git_still_reads_a_workspace_in_the_shared_tmp_under_full_containment() {
    let state = tempfile::tempdir().unwrap();
    let f = Fixture::with(|c| {
        let l = &mut c.sandbox;
        l.landlock = sandbox::LayerMode::Required;
        l.no_network = sandbox::LayerMode::Required;
        l.socket_filter = sandbox::LayerMode::Required;
        l.private_tmp = true;
        l.protected_paths = vec![state.path().to_path_buf()];
    });
    git(&f.root, &["init", "-q"]);
    f.write("tracked.txt", "one\n");
    git(&f.root, &["add", "tracked.txt"]);
    git(&f.root, &["commit", "-qm", "init"]);
    f.write("tracked.txt", "two\n");
    let status = f.call(GIT_STATUS, json!({}));
    assert_eq!(status.outcome, "SUCCEEDED", "{}", status.structured);
    assert!(
        status.structured.to_string().contains("tracked.txt"),
        "{}",
        status.structured
    );
    let diff = f.call(GIT_DIFF, json!({}));
    assert!(
        diff.structured["stdout"].as_str().unwrap().contains("+two"),
        "{}",
        diff.structured
    );
}
