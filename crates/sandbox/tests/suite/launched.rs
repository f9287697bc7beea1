//! Which executable the helpers of a contained tree (its handle and the namespace's init) run. With a launcher
//! (`sandbox::launcher()`, this suite runs once with one and once without), they are the launcher and hold
//! nothing of the process that started them; without one, they are copies of it. Either way the command runs
//! its own executable, with exactly its own environment.

use std::path::{Path, PathBuf};

use sandbox::{spawn_piped, LayerMode, PipedSpec, PipedStderr};

fn exe(pid: u32) -> PathBuf {
    std::fs::read_link(format!("/proc/{pid}/exe")).unwrap()
}

fn children(pid: u32) -> Vec<u32> {
    let list = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    list.split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// What a contained tree's helpers must run: the launcher when there is one, else this test's own executable.
fn expected_helper() -> PathBuf {
    match sandbox::launcher() {
        Some(launcher) => launcher.canonicalize().unwrap(),
        None => std::env::current_exe().unwrap().canonicalize().unwrap(),
    }
}

#[test]
fn a_trees_handle_and_init_run_the_launcher_when_there_is_one_and_hold_no_copy_of_the_starter() {
    let sleep = Path::new("/usr/bin/sleep").canonicalize().unwrap();
    let mut spec = PipedSpec::new(&sleep);
    spec.args = vec!["30".into()];
    spec.layers.pid_namespace = LayerMode::Required;
    spec.stderr = PipedStderr::Pipe;
    // `spawn_piped` returns once the command was exec'd.
    let child = spawn_piped(&spec).unwrap();
    let handle = child.id();
    let init = children(handle);
    assert_eq!(init.len(), 1, "the handle's children: {init:?}");
    let command = children(init[0]);
    assert_eq!(command.len(), 1, "the init's children: {command:?}");
    let helper = expected_helper();
    assert_eq!(exe(handle), helper);
    assert_eq!(exe(init[0]), helper);
    assert_eq!(exe(command[0]), sleep);
}

#[test]
fn a_preload_variable_of_the_starter_reaches_neither_the_launcher_nor_the_command() {
    // The dynamic loader of any process started with this variable would complain on its standard error (the
    // command's) that the object cannot be preloaded; a launcher given it would run a library's code before
    // any layer is up. The variable is set in a child process of this test, which then starts the command.
    if std::env::var_os("SANDBOX_SUITE_PRELOAD_CHILD").is_some() {
        let spec = crate::sh("printenv; echo end", Path::new("/"));
        let r = sandbox::run(&spec).unwrap();
        print!("{}command's stderr[{}]", r.stdout.text, r.stderr.text);
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "launched::a_preload_variable_of_the_starter_reaches_neither_the_launcher_nor_the_command",
            "--nocapture",
        ])
        .env("SANDBOX_SUITE_PRELOAD_CHILD", "1")
        .env("LD_PRELOAD", "/nonexistent/toolgate-preload-probe.so")
        .output()
        .unwrap();
    // This test's own child is started with the variable, so its loader complains on its own standard error,
    // which is not looked at: only what the command printed and wrote to its standard error is.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("PATH=/usr/local/bin:/usr/bin:/bin"),
        "{stdout}"
    );
    assert!(stdout.contains("end"), "{stdout}");
    assert!(!stdout.contains("LD_PRELOAD"), "{stdout}");
    assert!(!stdout.contains("SANDBOX_SUITE_PRELOAD_CHILD"), "{stdout}");
    let (_, stderr) = stdout.split_once("command's stderr[").unwrap();
    assert_eq!(stderr.split(']').next(), Some(""), "{stdout}");
}
