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
