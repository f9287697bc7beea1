//! git argv through `shell_run`, decided: options that run programs or reach outside are never a `git.read`.

use policy::{Effect, Operation, ReasonCode};
use serde_json::json;

use crate::common::{decide, load, shell};

fn git_reader() -> policy::Policy {
    load(&json!({"policy": {"default": "allow", "rules": [
        {"id": "git-read", "effect": "allow", "operations": ["git.read"]},
    ]}}))
}

#[test]
fn git_grep_attached_pager_option_is_refused() {
    let p = git_reader();
    for args in [
        vec!["grep", "-Osh", "needle"],
        vec!["grep", "-iOsh", "needle"],
        vec!["grep", "--open-files-in-pager=sh", "needle"],
        vec!["grep", "--open=sh", "needle"],
    ] {
        let d = decide(&p, &shell("git", &args));
        assert_eq!(
            (d.effect, d.reason),
            (Effect::Deny, ReasonCode::UnknownOperation),
            "{args:?}"
        );
    }
    let d = decide(&p, &shell("git", &["grep", "-n", "needle"]));
    assert_eq!((d.effect, d.operation), (Effect::Allow, Operation::GitRead));
}

/// git may read the workspace except `secret/`; `shell_run` runs in the workspace root unless told otherwise.
fn git_in_workspace() -> policy::Policy {
    load(&json!({"policy": {"default": "deny", "rules": [
        {"id": "git-ws", "effect": "allow", "operations": ["git.read", "fs.read"], "paths": ["${workspace}/**"]},
        {"id": "deny-secret", "effect": "deny", "paths": ["${workspace}/secret/**"]},
    ]}}))
}

#[test]
fn git_diff_no_index_outside_is_refused() {
    let p = git_in_workspace();
    for args in [
        vec!["diff", "--no-index", "/outside/file", "/dev/null"],
        vec!["diff", "/outside/file", "/dev/null"],
        vec!["-C", "/ws", "diff", "--", "../etc/passwd"],
        vec!["diff", "--", "../../etc/passwd"],
        vec!["-C", "sub", "log", "-p", "--", "../../etc/passwd"],
        vec!["log", "-p", "--", "~/.ssh/id_rsa"],
        vec!["--git-dir=/outside/.git", "log"],
        vec!["-c", "alias.x=!sh", "x"],
    ] {
        let d = decide(&p, &shell("git", &args));
        assert_eq!(d.effect, Effect::Deny, "{args:?}");
    }
    let d = decide(&p, &shell("git", &["diff", "HEAD~1", "--", "src/a.rs"]));
    assert_eq!((d.effect, d.operation), (Effect::Allow, Operation::GitRead));
}

#[test]
fn git_diff_of_a_denied_path_is_denied() {
    let p = git_in_workspace();
    for args in [
        vec!["diff", "secret/key.txt"],
        vec!["diff", "--", "secret/key.txt"],
        vec!["log", "-p", "--", "secret"],
        vec!["-C", "secret", "diff"],
        vec!["-C", "src", "diff", "../secret/key.txt"],
        vec!["blame", "secret/key.txt"],
        vec!["add", "secret/key.txt"],
    ] {
        let d = decide(&p, &shell("git", &args));
        assert_eq!(
            (d.effect, d.rule_id.as_deref()),
            (Effect::Deny, Some("deny-secret")),
            "{args:?}"
        );
    }
}

#[test]
fn git_diff_of_a_path_denied_by_read_is_denied() {
    // `Read(...)` rules are file rules: they reach git's operands, which git prints.
    let p = load(&json!({
        "policy": {"default": "deny", "rules": [
            {"id": "git-ws", "effect": "allow", "operations": ["git.read"], "paths": ["${workspace}/**"]}]},
        "permissions": {"allow": ["Read(./**)"], "deny": ["Read(./secret/**)"]}}));
    for args in [
        vec!["diff", "secret/key.txt"],
        vec!["log", "-p", "--", "secret/key.txt"],
        vec!["-C", "src", "blame", "../secret/key.txt"],
    ] {
        let d = decide(&p, &shell("git", &args));
        assert_eq!(d.effect, Effect::Deny, "{args:?}");
    }
    let d = decide(&p, &shell("git", &["diff", "--", "src/a.rs"]));
    assert_eq!(d.effect, Effect::Allow);
}

#[test]
fn git_pathspec_magic_is_unknown() {
    let p = git_in_workspace();
    for args in [
        vec!["show", "HEAD:secret/key.txt"],
        vec!["show", ":secret/key.txt"],
        vec!["cat-file", "-p", "HEAD:secret/key.txt"],
        vec!["diff", "--", ":/secret"],
        vec!["diff", "--", ":(top)secret"],
        vec!["diff", "--", ":(glob)**/key.txt"],
        vec!["diff", "--", ":!src"],
        vec!["log", "-p", "--", "s*/key.txt"],
        vec!["log", "-p", "--", "secre[t]/key.txt"],
        vec!["--icase-pathspecs", "log", "-p", "--", "SECRET/key.txt"],
        vec!["--glob-pathspecs", "log", "-p", "--", "**/key.txt"],
    ] {
        let d = decide(&p, &shell("git", &args));
        assert_eq!(
            (d.effect, d.reason),
            (Effect::Deny, ReasonCode::UnknownOperation),
            "{args:?}"
        );
    }
}

/// Reading is allowed except `secret/`, and git reads are allowed: a git that prints what lies beneath its
/// directory must meet the deny as a read of that directory's content would.
fn read_denied_beneath() -> policy::Policy {
    load(&json!({
        "policy": {"default": "deny", "rules": [
            {"id": "git-read", "effect": "allow", "operations": ["git.read"]}]},
        "permissions": {"allow": ["Read(./**)"], "deny": ["Read(./secret/**)"]}}))
}

fn assert_not_allowed(p: &policy::Policy, cases: &[&[&str]]) {
    for args in cases {
        let d = decide(p, &shell("git", args));
        assert_ne!(d.effect, Effect::Allow, "{args:?}: {d:?}");
    }
}

fn assert_allowed(p: &policy::Policy, cases: &[&[&str]]) {
    for args in cases {
        let d = decide(p, &shell("git", args));
        assert_eq!(
            (d.effect, d.operation),
            (Effect::Allow, Operation::GitRead),
            "{args:?}"
        );
    }
}

#[test]
fn git_show_of_a_blob_id_under_a_read_deny_is_not_allowed() {
    let p = read_denied_beneath();
    let blob = "5f8d3a1c0b";
    assert_not_allowed(
        &p,
        &[
            &["show", blob],
            &["show", "HEAD"],
            &["show", "--format=%B", blob],
            &["-C", ".", "show", blob],
            &["--no-pager", "show", blob, "--", "src/a.rs"],
            &["diff", blob, "0a1b2c3d", "--", "src/a.rs"],
            &["diff", "v1.0", "--", "src/a.rs"],
            &["grep", "needle", blob],
            &["grep", "-e", "needle", "v1.0", "--", "src"],
            &["grep", "--", "needle", "HEAD"],
            &["grep", "needle"],
            &["ls-tree", "-r", "HEAD"],
            &["rev-list", "--objects", "--all"],
            &["status"],
            &["stash", "show"],
        ],
    );
    // Inside the denied tree it is no question.
    let d = decide(&p, &shell("git", &["-C", "secret", "show", blob]));
    assert_eq!(d.effect, Effect::Deny);
    // Commits limited to paths outside the deny, and names of refs, are still allowed.
    assert_allowed(
        &p,
        &[
            &["show", "HEAD", "--", "src/a.rs"],
            &["diff", "HEAD~1", "--", "src/a.rs"],
            &["grep", "needle", "--", "src"],
            &["rev-parse", "HEAD"],
            &["describe", "--tags"],
            &["branch"],
        ],
    );
}

#[test]
fn git_cat_file_of_an_object_id_is_not_allowed_under_a_read_deny() {
    let p = read_denied_beneath();
    assert_not_allowed(
        &p,
        &[
            &["cat-file", "-p", "5f8d3a1c0b"],
            &["cat-file", "blob", "5f8d3a1c0b"],
            &["cat-file", "-p", "HEAD~1"],
            &["cat-file", "--batch-all-objects", "--batch"],
            &["cat-file", "-p", "./5f8d3a1c0b"],
        ],
    );
}

#[test]
fn git_log_patch_of_the_whole_tree_is_not_allowed_under_a_read_deny() {
    let p = read_denied_beneath();
    assert_not_allowed(
        &p,
        &[
            &["log", "-p"],
            &["log", "-p", "."],
            &["log", "-p", "--", "."],
            &["log", "-p", "--all", "--", "./"],
            &["whatchanged", "-p"],
            &["log", "-p", "--follow", "--", "src/a.rs"],
            &["log", "-L", "1,5:secret/key.txt", "--", "src/a.rs"],
            &["log", "-L1,5:secret/key.txt", "--", "src/a.rs"],
            &["diff"],
            &["diff", "HEAD~1"],
            &["diff", "--cached", "--", "."],
            &["status", "-v"],
            &["blame", "a.rs"],
        ],
    );
    assert_allowed(
        &p,
        &[
            &["log", "-p", "--", "src/a.rs"],
            &["log", "-p", "main", "--", "src"],
            &["-C", "src", "log", "-p", "--", "a.rs"],
            &["blame", "HEAD", "--", "src/a.rs"],
        ],
    );
}
