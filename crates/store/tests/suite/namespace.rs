//! State root placement, workspace binding, namespace isolation and file modes.

use std::fs;

use store::{Error, Namespace, Store};

use crate::support::{snapshot, Env, MINUTE, T0};

#[test]
fn id_from_other_workspace_is_not_found() {
    let env = Env::new();
    let other_ws = env.workspace.with_file_name("other-ws");
    fs::create_dir(&other_ws).unwrap();
    let mut a = env.store();
    let id = a
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap()
        .id;
    a.approve(&id, "alice", T0).unwrap();

    let ns_b = Namespace::open(&env.state_root, &other_ws).unwrap();
    let mut b = Store::open(&ns_b).unwrap();
    let foreign = b.get_request(&id, T0).unwrap_err();
    let unknown = b
        .get_request("apr_ffffffffffffffffffffffffffffffff", T0)
        .unwrap_err();
    assert!(matches!(foreign, Error::RequestNotFound));
    // Same shape as an unknown id: nothing reveals that the id exists elsewhere.
    assert_eq!(foreign.to_string(), unknown.to_string());
    assert!(matches!(b.consume(&id, T0), Err(Error::RequestNotFound)));
    assert!(matches!(
        b.reject(&id, "m", T0),
        Err(Error::RequestNotFound)
    ));
    // And workspace A still has it, untouched.
    a.consume(&id, T0).unwrap();
}

#[test]
fn namespace_bound_to_other_workspace_is_refused() {
    let env = Env::new();
    let ns = env.namespace();
    let binding = ns.dir().join("workspace-binding.json");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&binding).unwrap()).unwrap();
    v["workspace_hex"] = serde_json::json!(hex_of("/somewhere/else"));
    fs::write(&binding, serde_json::to_vec(&v).unwrap()).unwrap();
    assert!(matches!(
        Namespace::open(&env.state_root, &env.workspace),
        Err(Error::NamespaceBoundElsewhere)
    ));
}

#[test]
fn corrupt_binding_is_refused_not_rewritten() {
    let env = Env::new();
    let ns = env.namespace();
    let binding = ns.dir().join("workspace-binding.json");
    fs::write(&binding, b"{not json").unwrap();
    assert!(matches!(
        Namespace::open(&env.state_root, &env.workspace),
        Err(Error::CorruptBinding)
    ));
    assert_eq!(fs::read(&binding).unwrap(), b"{not json");
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn state_root_inside_workspace_is_refused() {
    let env = Env::new();
    let inside = env.workspace.join(".toolgate-state");
    assert!(matches!(
        Namespace::open(&inside, &env.workspace),
        Err(Error::StateRootInsideWorkspace)
    ));
    assert!(!inside.exists(), "a refused root must not be created");
    assert!(matches!(
        Namespace::open(&env.workspace, &env.workspace),
        Err(Error::StateRootInsideWorkspace)
    ));
    let dotted = env.workspace.join("sub").join("..").join("state");
    assert!(matches!(
        Namespace::open(&dotted, &env.workspace),
        Err(Error::StateRootInsideWorkspace)
    ));
}

#[test]
fn sibling_with_shared_prefix_is_not_inside_workspace() {
    let env = Env::new();
    // `/…/ws-evil` shares the string prefix `/…/ws` but is a different directory.
    let sibling = env.workspace.with_file_name("ws-evil");
    let ns = Namespace::open(&sibling, &env.workspace).unwrap();
    assert_eq!(ns.state_root(), fs::canonicalize(&sibling).unwrap());
}

#[cfg(unix)]
#[test]
fn state_root_symlinked_into_workspace_is_refused() {
    let env = Env::new();
    let target = env.workspace.join("hidden");
    fs::create_dir(&target).unwrap();
    let link = env.workspace.with_file_name("innocent-looking");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(matches!(
        Namespace::open(&link, &env.workspace),
        Err(Error::StateRootInsideWorkspace)
    ));
}

#[cfg(unix)]
#[test]
fn symlinked_workspace_shares_the_canonical_namespace() {
    let env = Env::new();
    let link = env.workspace.with_file_name("ws-link");
    std::os::unix::fs::symlink(&env.workspace, &link).unwrap();
    let a = env.namespace();
    let b = Namespace::open(&env.state_root, &link).unwrap();
    assert_eq!(a.id(), b.id());
    assert_eq!(a.dir(), b.dir());
}

#[test]
fn namespace_directory_name_holds_no_path() {
    let env = Env::new();
    let ns = env.namespace();
    let name = ns.dir().file_name().unwrap().to_str().unwrap();
    assert_eq!(name, ns.id());
    assert_eq!(name.len(), 64);
    assert!(name.bytes().all(|b| b.is_ascii_hexdigit()));
}

#[test]
fn relative_state_root_and_missing_workspace_are_refused() {
    let env = Env::new();
    assert!(matches!(
        Namespace::open(std::path::Path::new("relative/state"), &env.workspace),
        Err(Error::StateRootNotAbsolute)
    ));
    assert!(matches!(
        Namespace::open(&env.state_root, &env.workspace.join("nope")),
        Err(Error::WorkspaceNotDirectory(_))
    ));
}

#[cfg(unix)]
#[test]
fn state_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let ns = env.namespace();
    let mut s = Store::open(&ns).unwrap();
    s.create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&env.state_root), 0o700);
    assert_eq!(mode(&env.state_root.join("workspaces")), 0o700);
    assert_eq!(mode(ns.dir()), 0o700);
    assert_eq!(mode(&ns.dir().join("workspace-binding.json")), 0o600);
    assert_eq!(mode(&ns.db_path()), 0o600);
    let wal = ns.dir().join("state.db-wal");
    assert!(wal.exists());
    assert_eq!(mode(&wal), 0o600);
}

#[cfg(unix)]
#[test]
fn state_root_below_symlinked_workspace_is_refused_before_creation() {
    let env = Env::new();
    let link = env.workspace.with_file_name("ws-alias");
    std::os::unix::fs::symlink(&env.workspace, &link).unwrap();
    let sneaky = link.join("deep").join("state");
    assert!(matches!(
        Namespace::open(&sneaky, &env.workspace),
        Err(Error::StateRootInsideWorkspace)
    ));
    assert!(
        !env.workspace.join("deep").exists(),
        "nothing created in the workspace"
    );
}

/// An admin command that looked in the wrong workspace must be able to name the one holding the requests.
#[test]
fn pending_elsewhere_names_other_workspaces_with_pending_requests() {
    let env = Env::new();
    let other_ws = env.workspace.with_file_name("served-ws");
    fs::create_dir(&other_ws).unwrap();
    let ns_other = Namespace::open(&env.state_root, &other_ws).unwrap();
    let mut other = Store::open(&ns_other).unwrap();
    for _ in 0..2 {
        other
            .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
            .unwrap();
    }
    let decided = other
        .create_request("t", &snapshot(), T0, T0.plus_millis(MINUTE))
        .unwrap();
    other.reject(&decided.id, "m", T0).unwrap();
    let here = env.namespace();
    let found = store::pending_elsewhere(here.state_root(), &here, T0).unwrap();
    assert_eq!(found, vec![(ns_other.workspace().to_path_buf(), 2)]);
    // Expired requests are not pending; the namespace itself is never listed.
    let later = T0.plus_millis(2 * MINUTE);
    assert!(store::pending_elsewhere(here.state_root(), &here, later)
        .unwrap()
        .is_empty());
    assert!(
        store::pending_elsewhere(ns_other.state_root(), &ns_other, T0)
            .unwrap()
            .is_empty()
    );
}

/// A state root given for one workspace (ToolHub's `TOOLHUB_STATE_ROOT`) is bound as a whole: it never serves
/// another workspace, whether through `bind_state_root` again or through `Namespace::open`.
#[cfg(unix)]
#[test]
fn a_bound_state_root_serves_its_one_workspace_only() {
    let env = Env::new();
    let other_ws = env.workspace.with_file_name("other-ws");
    fs::create_dir(&other_ws).unwrap();
    let root = store::bind_state_root(&env.state_root, &env.workspace).unwrap();
    assert_eq!(root, fs::canonicalize(&env.state_root).unwrap());
    // Binding again to the same workspace (every start does) is fine, also through a symlinked spelling.
    let link = env.workspace.with_file_name("ws-link");
    std::os::unix::fs::symlink(&env.workspace, &link).unwrap();
    store::bind_state_root(&env.state_root, &link).unwrap();
    env.namespace();
    let binding = fs::read(env.state_root.join("workspace-binding.json")).unwrap();
    assert!(matches!(
        store::bind_state_root(&env.state_root, &other_ws),
        Err(Error::NamespaceBoundElsewhere)
    ));
    assert!(matches!(
        Namespace::open(&env.state_root, &other_ws),
        Err(Error::NamespaceBoundElsewhere)
    ));
    // Refused without a trace: the binding is unchanged and no namespace was made for the other workspace.
    assert_eq!(
        fs::read(env.state_root.join("workspace-binding.json")).unwrap(),
        binding
    );
    assert_eq!(
        fs::read_dir(env.state_root.join("workspaces"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn a_state_root_is_not_bound_inside_the_workspace_nor_relative() {
    let env = Env::new();
    let inside = env.workspace.join("state");
    assert!(matches!(
        store::bind_state_root(&inside, &env.workspace),
        Err(Error::StateRootInsideWorkspace)
    ));
    assert!(!inside.exists(), "a refused root must not be created");
    assert!(matches!(
        store::bind_state_root(std::path::Path::new("rel"), &env.workspace),
        Err(Error::StateRootNotAbsolute)
    ));
}
