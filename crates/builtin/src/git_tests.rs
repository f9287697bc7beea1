use super::*;

#[test]
fn option_like_values_are_refused() {
    assert!(check_revision("--output=/tmp/x").is_err());
    assert!(check_revision("HEAD~1").is_ok());
    assert!(check_revision("a b").is_err());
}

#[test]
fn missing_git_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    let mut git = Git::new(sandbox::LayerRequest::default());
    git.search_path = "/nonexistent/bin".into();
    let err = git.status(&ws, &GitStatusArgs::default()).unwrap_err();
    assert!(matches!(err, Error::GitUnavailable(_)), "{err}");
    assert_eq!(err.classify().map(|c| c.code), Some("GIT_UNAVAILABLE"));
}

fn snapshot(program: &str, executable: &str, args: &[&str]) -> CommandSnapshot {
    CommandSnapshot {
        version: crate::shell::SNAPSHOT_VERSION,
        workspace: "/ws".into(),
        program: program.into(),
        executable: executable.into(),
        executable_size: 0,
        executable_sha256: String::new(),
        args: args.iter().map(|a| a.to_string()).collect(),
        cwd: ".".into(),
        timeout_seconds: 1,
        env: BTreeMap::new(),
    }
}

#[test]
fn only_read_only_git_is_hardened() {
    let globals =
        |program: &str, exe: &str, args: &[&str]| read_only_globals(&snapshot(program, exe, args));
    assert_eq!(globals("git", "/usr/bin/git", &["status"]), Some(vec![]));
    assert_eq!(
        globals(
            "/usr/bin/git",
            "/usr/bin/git",
            &["--no-pager", "-C", "sub", "diff", "x"]
        ),
        Some(vec!["--no-pager".into(), "-C".into(), "sub".into()])
    );
    // Found under another name, git is still git.
    assert_eq!(globals("g", "/usr/bin/git", &["log"]), Some(vec![]));
    assert_eq!(globals("git", "/usr/bin/git", &["commit", "-m", "x"]), None);
    assert_eq!(
        globals("git", "/usr/bin/git", &["-c", "a=b", "status"]),
        None
    );
    assert_eq!(globals("true", "/usr/bin/true", &["status"]), None);
}

#[test]
fn hardening_reaches_git_through_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    let mut env: BTreeMap<String, String> = [
        ("PATH", "/bin"),
        ("GIT_CONFIG_PARAMETERS", "'core.fsmonitor=x'"),
        ("GIT_EXTERNAL_DIFF", "x"),
        ("GIT_CONFIG_KEY_40", "core.pager"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into();
    let driver = ("diff.evil.textconv".to_string(), String::new());
    harden_env(&ws, ws.root(), &mut env, std::slice::from_ref(&driver));
    let count: usize = env["GIT_CONFIG_COUNT"].parse().unwrap();
    assert_eq!(count, HARDENING.len() + 1);
    let settings: Vec<(&str, &str)> = (0..count)
        .map(|n| {
            (
                env[&format!("GIT_CONFIG_KEY_{n}")].as_str(),
                env[&format!("GIT_CONFIG_VALUE_{n}")].as_str(),
            )
        })
        .collect();
    assert!(settings.contains(&("core.fsmonitor", "false")));
    assert!(settings.contains(&("diff.evil.textconv", "")));
    assert_eq!(env["GIT_CONFIG_NOSYSTEM"], "1");
    let parent = ws.root().parent().unwrap().to_string_lossy().into_owned();
    assert_eq!(env["GIT_CEILING_DIRECTORIES"], parent);
    assert_eq!(env["PATH"], "/bin");
    for gone in [
        "GIT_CONFIG_PARAMETERS",
        "GIT_EXTERNAL_DIFF",
        "GIT_CONFIG_KEY_40",
    ] {
        assert!(!env.contains_key(gone), "{gone}");
    }
}

#[test]
fn shell_git_reads_only_the_work_tree_it_starts_in() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("repo/.git")).unwrap();
    std::fs::create_dir_all(root.join("repo/sub")).unwrap();
    std::fs::create_dir_all(root.join("linked")).unwrap();
    std::fs::write(root.join("linked/.git"), "gitdir: ../repo/.git").unwrap();
    let top = |cwd: &str, globals: &[&str]| {
        let globals: Vec<String> = globals.iter().map(|g| g.to_string()).collect();
        work_tree_top(&root.join(cwd), &globals)
    };
    assert_eq!(top("repo", &[]).unwrap(), root.join("repo"));
    assert_eq!(top("repo/sub", &["-C", ".."]).unwrap(), root.join("repo"));
    // A subdirectory would read its parent's repository, a `.git` file another one, a `.git` directory itself.
    assert!(top("repo/sub", &[]).is_err());
    assert!(top("linked", &[]).is_err());
    assert!(top("repo", &["-C", ".git"]).is_err());
    assert!(top("missing", &[]).is_err());
}

#[test]
fn porcelain_is_parsed() {
    let (branch, entries) = parse_status("## main\n M a.txt\n?? new file\n");
    assert_eq!(branch.as_deref(), Some("main"));
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].status, "??");
    assert_eq!(entries[1].path, "new file");
}
