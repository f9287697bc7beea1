//! Which executable the helpers of a contained tree (its handle and the namespace's init) run. With a launcher
//! (`sandbox::launcher()`, this suite runs once with one and once without), they are the launcher and hold
//! nothing of the process that started them; without one, they are copies of it. Either way the command runs
//! its own executable, with exactly its own environment, and the probe of the machine's layers reports what a
//! command started the same way gets.

use std::path::Path;

use sandbox::{spawn_piped, LayerMode, PipedSpec, PipedStderr};

/// The process's command name: its executable's file name, cut to 15 bytes (readable by any process, where
/// `/proc/PID/exe` of a non-dumpable one is refused to all but a privileged reader).
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap()
        .trim_end()
        .to_owned()
}

fn comm_of(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    name.chars().take(15).collect()
}

fn children(pid: u32) -> Vec<u32> {
    let list = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    list.split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// The command name a contained tree's handle must have: the launcher's when there is one; else, as a fork of
/// this thread, this thread's.
fn expected_helper() -> String {
    match sandbox::launcher() {
        Some(launcher) => comm_of(launcher),
        None => std::fs::read_to_string("/proc/thread-self/comm")
            .unwrap()
            .trim_end()
            .to_owned(),
    }
}

#[test]
fn a_trees_handle_is_the_launcher_when_there_is_one_and_a_fork_of_the_starter_otherwise() {
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
    // The init is a fork of the handle that never execs and names itself; the command runs its own program.
    assert_eq!(comm(handle), expected_helper());
    assert_eq!(comm(init[0]), "sandbox-init");
    assert_eq!(comm(command[0]), comm_of(&sleep));
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

/// What `/proc/PID/environ` and `cmdline` show of `pid` to another process of the same user: empty when refused.
fn shown(pid: u32, what: &str) -> Vec<u8> {
    std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default()
}

#[test]
fn a_trees_handle_and_init_show_nothing_of_the_starters_environment_or_arguments() {
    let sleep = Path::new("/usr/bin/sleep").canonicalize().unwrap();
    let mut spec = PipedSpec::new(&sleep);
    spec.args = vec!["30".into()];
    spec.layers.pid_namespace = LayerMode::Required;
    let child = spawn_piped(&spec).unwrap();
    let handle = child.id();
    let init = children(handle)[0];
    let own_env: Vec<Vec<u8>> = std::fs::read("/proc/self/environ")
        .unwrap()
        .split(|b| *b == 0)
        .filter(|e| e.len() > 4)
        .map(<[u8]>::to_vec)
        .collect();
    assert!(!own_env.is_empty());
    let own_args = std::fs::read("/proc/self/cmdline").unwrap();
    let own_exe_arg = own_args.split(|b| *b == 0).next().unwrap().to_vec();
    for pid in [handle, init] {
        let environ = shown(pid, "environ");
        for entry in &own_env {
            assert!(
                !environ.windows(entry.len()).any(|w| w == entry.as_slice()),
                "process {pid} shows the starter's {}",
                String::from_utf8_lossy(entry)
            );
        }
        let cmdline = shown(pid, "cmdline");
        assert!(
            !cmdline
                .windows(own_exe_arg.len())
                .any(|w| w == own_exe_arg.as_slice()),
            "process {pid} shows the starter's command line: {}",
            String::from_utf8_lossy(&cmdline)
        );
    }
}

#[test]
fn the_probe_reports_what_a_command_started_the_same_way_gets() {
    let probe = sandbox::probe();
    let mut spec = crate::sh("true", Path::new("/"));
    let layers = &mut spec.layers;
    for mode in [
        &mut layers.pid_namespace,
        &mut layers.no_network,
        &mut layers.landlock,
        &mut layers.socket_filter,
        &mut layers.rlimits,
        &mut layers.no_new_privs,
    ] {
        *mode = LayerMode::BestEffort;
    }
    let run = sandbox::run(&spec).unwrap();
    assert_eq!(run.outcome, sandbox::Outcome::Succeeded, "{run:?}");
    for entry in &probe.entries {
        assert_eq!(
            &entry.state,
            run.layers.state(entry.layer),
            "{:?}: probed {:?}, a command got {:?}",
            entry.layer,
            entry.state,
            run.layers.state(entry.layer)
        );
    }
}
