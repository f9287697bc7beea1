use super::*;
use serde_json::json;

fn argv(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_owned).collect()
}

/// The operation and `-C` directory of a classified argv.
fn op_dir(s: &str) -> Result<(Operation, Option<String>), UnknownReason> {
    classify_argv(&argv(s)).map(|g| (g.operation, g.dir))
}

#[test]
fn plain_subcommands_are_classified() {
    assert_eq!(op_dir("status"), Ok((Operation::GitRead, None)));
    assert_eq!(op_dir("commit -m x"), Ok((Operation::GitWrite, None)));
    assert_eq!(op_dir("push origin main"), Ok((Operation::GitRemote, None)));
    assert_eq!(op_dir("branch"), Ok((Operation::GitRead, None)));
    assert_eq!(op_dir("branch -D main"), Ok((Operation::GitWrite, None)));
    assert_eq!(
        op_dir("-C sub status"),
        Ok((Operation::GitRead, Some("sub".into())))
    );
}

#[test]
fn code_running_options_are_unknown() {
    for bad in [
        "-c core.pager=sh status",
        "--git-dir=/x status",
        "--exec-path=/x status",
        "-p log",
        "--config-env=core.pager=X log",
        "diff --output=/etc/x",
        "diff --out=/etc/x",
        "diff --ext-diff",
        "diff --textconv",
        "diff -O/etc/order",
        "log --no-index",
        "cat-file --textconv HEAD:a",
        "cat-file --filters HEAD:a",
        "blame --contents /etc/passwd a",
        "ls-files --exclude-from=/etc/x",
        "push --receive-pack=sh origin",
        "push --rec=sh origin",
        "fetch --upload-pack=sh origin",
        "clone -u sh https://x/y",
        "clone -c core.fsmonitor=sh https://x/y",
        "rebase -x sh main",
        "rebase --exec=sh main",
    ] {
        assert_eq!(
            classify_argv(&argv(bad)),
            Err(UnknownReason::GitFlagInjection),
            "{bad}"
        );
    }
    assert_eq!(
        classify_argv(&argv("frobnicate")),
        Err(UnknownReason::AmbiguousGit)
    );
    assert_eq!(classify_argv(&[]), Err(UnknownReason::AmbiguousGit));
}

#[test]
fn git_grep_attached_pager_option_is_refused() {
    for bad in [
        "grep -Osh x",
        "grep -O sh x",
        "grep -iOsh x",
        "grep --open-files-in-pager=sh x",
        "grep --open=sh x",
        "grep -f /etc/patterns",
        "grep --no-index x /etc",
    ] {
        assert!(classify_argv(&argv(bad)).is_err(), "{bad}");
    }
    assert_eq!(
        op_dir("grep -in -e TODO -- src"),
        Ok((Operation::GitRead, None))
    );
}

#[test]
fn git_operands_outside_are_path_resources() {
    // The caller decides on these paths: outside the workspace they fall outside its allows.
    for (cmd, paths) in [
        (
            "diff /outside/file /dev/null",
            vec!["/outside/file", "/dev/null"],
        ),
        ("diff -- ../../etc/passwd", vec!["../../etc/passwd"]),
        ("log -p -- ~/.ssh/id_rsa", vec!["~/.ssh/id_rsa"]),
        ("-C sub diff ../../x", vec!["../../x"]),
    ] {
        assert_eq!(
            classify_argv(&argv(cmd)).map(|g| g.paths),
            Ok(paths.into_iter().map(String::from).collect()),
            "{cmd}"
        );
    }
    let parsed = parse_argv(&argv("-C sub diff --stat=80 -U3 HEAD~1 -- a.rs /etc/x")).unwrap();
    assert_eq!(parsed.operation, Operation::GitRead);
    assert_eq!(parsed.dir.as_deref(), Some("sub"));
    assert_eq!(parsed.operands, vec!["HEAD~1", "a.rs", "/etc/x"]);
}

#[test]
fn git_pathspec_magic_is_unknown() {
    for bad in [
        "show HEAD:secret/key.txt",
        "show HEAD:../x",
        "show :secret/key.txt",
        "show :0:secret/key.txt",
        "diff -- :/secret",
        "diff -- :(top)secret",
        "diff -- :(glob)**/key.txt",
        "diff -- :!src",
        "diff -- :^src",
        "log -- s*/key.txt",
        "log -- secre?/key.txt",
        "log -- [s]ecret/key.txt",
        "log -- secret\\key.txt",
        "--icase-pathspecs log -- SECRET/key.txt",
        "add :/secret",
        "checkout HEAD -- :(top)secret",
        "push origin ../x:main",
        "clone file:///etc/x",
        "clone ext::sh%20pwn dest",
    ] {
        assert_eq!(
            classify_argv(&argv(bad)).map(|g| g.paths),
            Err(UnknownReason::AmbiguousGit),
            "{bad}"
        );
    }
    assert_eq!(
        classify_argv(&argv("push origin main:main")).map(|g| g.paths),
        Ok(vec!["origin".to_owned()])
    );
}

#[test]
fn safe_read_options_are_accepted_in_every_spelling() {
    for ok in [
        "log --oneline -n 5",
        "log -n5 --format=%H --since 2.weeks",
        "log -5 --graph --decorate=short",
        "diff --cached --stat",
        "diff -M50% -U3 --no-color",
        "show --name-only HEAD",
        "status -sb --porcelain=v2",
        "status -uno",
        "blame -L 1,5 src/a.rs",
        "rev-parse --abbrev-ref HEAD",
        "ls-files -z --others --exclude-standard",
        "--no-pager log",
    ] {
        assert_eq!(
            classify_argv(&argv(ok)).map(|g| g.operation),
            Ok(Operation::GitRead),
            "{ok}"
        );
    }
}

#[test]
fn server_git_arguments_cannot_be_flags() {
    let bad = mcp_server_git(
        "git_diff",
        "g__git_diff".into(),
        &json!({"repo_path": "/ws", "target": "--output=/tmp/x"}),
    );
    assert_eq!(
        bad.err(),
        Some((Operation::GitRead, UnknownReason::GitFlagInjection))
    );
    let ok = mcp_server_git(
        "git_commit",
        "g__git_commit".into(),
        &json!({"repo_path": "/ws", "message": "-fix"}),
    )
    .unwrap();
    assert_eq!(ok.operation, Operation::GitWrite);
    let add = mcp_server_git(
        "git_add",
        "g__git_add".into(),
        &json!({"repo_path": "/ws", "files": ["a.rs"]}),
    )
    .unwrap();
    assert_eq!(add.paths, vec!["/ws".to_owned(), "/ws/a.rs".to_owned()]);
    assert_eq!(
        mcp_server_git("git_frob", "g__git_frob".into(), &json!({}))
            .err()
            .map(|e| e.1),
        Some(UnknownReason::AmbiguousGit)
    );
}
