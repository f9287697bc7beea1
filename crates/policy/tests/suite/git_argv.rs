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

#[test]
fn git_diff_no_index_outside_is_refused() {
    let p = git_reader();
    for args in [
        vec!["diff", "--no-index", "/outside/file", "/dev/null"],
        vec!["diff", "/outside/file", "/dev/null"],
        vec!["-C", "/ws", "diff", "--", "../etc/passwd"],
        vec!["--git-dir=/outside/.git", "log"],
        vec!["-c", "alias.x=!sh", "x"],
    ] {
        let d = decide(&p, &shell("git", &args));
        assert_eq!(d.effect, Effect::Deny, "{args:?}");
    }
}
