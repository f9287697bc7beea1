//! Paths no command may reach (the state root, the config file) and the private temporary directory: an
//! allowed command must not be able to rewrite its own approvals, wherever the state root lies.

use std::path::{Path, PathBuf};

use sandbox::{run, CommandSpec, Error, Layer, LayerMode, LayerState, Outcome};

use crate::sh;

/// A state root with an approvals file, in the shared temporary directory (where the original attack found
/// it), and a workspace beside it.
struct Scene {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    state: PathBuf,
    config: PathBuf,
}

impl Scene {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let workspace = root.join("ws");
        let state = root.join("state");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(state.join("ns")).unwrap();
        std::fs::write(state.join("ns/approvals.db"), "PENDING").unwrap();
        let config = root.join("toolgate.json");
        std::fs::write(&config, r#"{"secret": "sk-config"}"#).unwrap();
        Self {
            _dir: dir,
            workspace,
            state,
            config,
        }
    }

    /// `script` in the workspace with the state root and the config protected and a private TMPDIR.
    fn spec(&self, script: &str) -> CommandSpec {
        let mut spec = sh(script, &self.workspace);
        spec.layers.landlock = LayerMode::BestEffort;
        spec.layers.writable_paths = vec![self.workspace.clone()];
        spec.layers.protected_paths = vec![self.state.clone(), self.config.clone()];
        spec.layers.private_tmp = true;
        spec
    }

    fn approvals(&self) -> String {
        std::fs::read_to_string(self.state.join("ns/approvals.db")).unwrap()
    }
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[test]
fn allowed_command_cannot_rewrite_its_own_approval_in_the_state_root() {
    let s = Scene::new();
    let db = s.state.join("ns/approvals.db");
    let script = format!(
        "echo APPROVED > {db}; printf APPROVED >> {db}; rm -f {db}; mv {db} {ws}/moved; \
         ln {db} {ws}/hard; mkdir {state}/new; cp {ws}/x {state}/ns/; echo attempted",
        db = q(&db),
        ws = q(&s.workspace),
        state = q(&s.state),
    );
    let r = run(&s.spec(&script)).unwrap();
    assert_eq!(r.layers.state(Layer::Landlock), &LayerState::Active);
    assert_eq!(r.stdout.text, "attempted\n", "{r:?}");
    assert_eq!(s.approvals(), "PENDING");
    assert!(!s.state.join("new").exists());
    assert!(!s.workspace.join("moved").exists() && !s.workspace.join("hard").exists());
}

#[test]
fn allowed_command_cannot_read_or_list_the_state_root() {
    let s = Scene::new();
    let script = format!(
        "cat {state}/ns/approvals.db; ls {state} {state}/ns; echo listed",
        state = q(&s.state)
    );
    let r = run(&s.spec(&script)).unwrap();
    assert_eq!(r.stdout.text, "listed\n", "{r:?}");
}

#[test]
fn protected_config_is_unreadable_directly_through_a_symlink_and_through_proc() {
    let s = Scene::new();
    std::os::unix::fs::symlink(&s.config, s.workspace.join("link")).unwrap();
    // The config opened by this process, as toolgate holds its files: /proc/<pid>/fd/<n> reopens it.
    let held = std::fs::File::open(&s.config).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&held);
    let script = format!(
        "cat {config} link /proc/{pid}/fd/{fd}; echo x >> {config}; echo done",
        config = q(&s.config),
        pid = std::process::id(),
    );
    let r = run(&s.spec(&script)).unwrap();
    assert!(!r.stdout.text.contains("sk-config"), "{r:?}");
    assert_eq!(r.stdout.text, "done\n");
    assert_eq!(
        std::fs::read_to_string(&s.config).unwrap(),
        r#"{"secret": "sk-config"}"#
    );
}

#[test]
fn writable_path_containing_the_state_root_refuses_the_run() {
    let s = Scene::new();
    let parent = s.state.parent().unwrap().to_path_buf();
    for writable in [parent.clone(), s.state.join("ns")] {
        let mut spec = s.spec(&format!("touch {}/ran", q(&parent)));
        spec.layers.writable_paths = vec![writable];
        let err = run(&spec).unwrap_err();
        assert!(matches!(err, Error::ProtectedPathExposed { .. }), "{err}");
    }
    assert!(!parent.join("ran").exists());
}

#[test]
fn protected_paths_require_landlock_even_when_it_was_not_asked_for() {
    let s = Scene::new();
    let mut spec = s.spec(&format!("cat {}", q(&s.config)));
    spec.layers.landlock = LayerMode::Off;
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::Landlock), &LayerState::Active);
    assert!(!r.stdout.text.contains("sk-config"));
}

#[test]
fn shared_tmp_is_out_of_reach_and_each_run_gets_a_fresh_private_one() {
    let s = Scene::new();
    // The scene lives in the shared temporary directory: a file beside the workspace stands for other
    // programs' temporary files.
    let neighbour = s.workspace.parent().unwrap().join("neighbour.txt");
    std::fs::write(&neighbour, "other program's data").unwrap();
    let script = format!(
        "cat {n}; echo x > {n}; touch {shared}/dropped; ls \"$TMPDIR\"; echo kept > \"$TMPDIR/leftover\" && \
         echo \"$TMPDIR\"",
        n = q(&neighbour),
        shared = q(&std::env::temp_dir()),
    );
    let first = run(&s.spec(&script)).unwrap();
    let second = run(&s.spec(&script)).unwrap();
    for r in [&first, &second] {
        assert!(!r.stdout.text.contains("other program"), "{r:?}");
        let tmp = PathBuf::from(r.stdout.text.trim());
        assert!(tmp.starts_with(std::env::temp_dir()) && tmp != std::env::temp_dir());
        assert!(!tmp.exists(), "the private directory outlived the run");
    }
    assert_ne!(first.stdout.text, second.stdout.text);
    assert_eq!(
        std::fs::read_to_string(&neighbour).unwrap(),
        "other program's data"
    );
    assert!(!std::env::temp_dir().join("dropped").exists());
    assert_eq!(first.outcome, Outcome::Succeeded);
}

#[test]
fn operator_program_in_shared_tmp_runs_but_writes_only_its_private_tmp() {
    let s = Scene::new();
    // A hook the operator keeps beside the scene, in the shared temporary directory.
    let parent = s.workspace.parent().unwrap().to_path_buf();
    let tool = parent.join("tool.sh");
    std::fs::write(&tool, "echo tool ran").unwrap();
    let script = format!(
        "sh {tool}; cat {state}/ns/approvals.db; echo x > {parent}/dropped; echo kept > \"$TMPDIR/own\" && \
         cat \"$TMPDIR/own\"",
        tool = q(&tool),
        state = q(&s.state),
        parent = q(&parent),
    );
    let mut spec = s.spec(&script);
    spec.layers.writable_paths.clear();
    spec.layers.shared_tmp_readable = true;
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::Landlock), &LayerState::Active);
    assert_eq!(r.stdout.text, "tool ran\nkept\n", "{r:?}");
    assert!(!parent.join("dropped").exists());
}

#[test]
fn landlock_scoping_stops_signals_to_processes_outside_the_sandbox() {
    let s = Scene::new();
    let script = format!("kill -0 {} && echo reached", std::process::id());
    let mut spec = s.spec(&script);
    // Without a PID namespace this process is visible, so only scoping stands in the way.
    spec.layers.pid_namespace = LayerMode::Off;
    let mut control = spec.clone();
    control.layers.protected_paths.clear();
    control.layers.landlock = LayerMode::Off;
    assert_eq!(run(&control).unwrap().stdout.text, "reached\n");
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::Landlock), &LayerState::Active);
    assert_eq!(r.stdout.text, "", "{r:?}");
}

#[test]
fn read_only_run_in_a_workspace_holding_the_config_sees_everything_but_the_config() {
    let s = Scene::new();
    let config = s.workspace.join(".mcp.json");
    std::fs::write(&config, r#"{"secret": "sk-inside"}"#).unwrap();
    std::fs::write(s.workspace.join("notes.txt"), "notes").unwrap();
    std::fs::create_dir(s.workspace.join("src")).unwrap();
    std::fs::write(s.workspace.join("src/lib.rs"), "code").unwrap();
    // As git runs: no writable path of its own, so the workspace is narrowed rather than refused.
    let mut spec = s.spec("ls -a; cat notes.txt src/lib.rs .mcp.json");
    spec.layers.writable_paths.clear();
    spec.layers.protected_paths.push(config);
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::Landlock), &LayerState::Active);
    assert!(r.stdout.text.contains(".mcp.json\n"), "{r:?}");
    assert!(r.stdout.text.ends_with("notescode"), "{r:?}");
    assert!(!r.stdout.text.contains("sk-inside"), "{r:?}");
}
