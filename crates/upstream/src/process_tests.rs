use super::*;
use config::{Protocol, ServerKind, ToolFilter};
use pretty_assertions::assert_eq;

fn server(args: &[&str], env: &[(&str, &str)], sandbox: ServerSandbox) -> ServerConfig {
    ServerConfig {
        name: "s".into(),
        transport: Transport::Stdio {
            command: "sh".into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: None,
        },
        protocol: Protocol::Auto,
        kind: ServerKind::Generic,
        request_timeout: None,
        startup_timeout: None,
        tools: ToolFilter::default(),
        notes: Vec::new(),
        sandbox,
    }
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn named_directories_and_the_folders_of_named_files_are_writable() {
    let dir = scratch();
    let root = resolve(dir.path());
    std::fs::create_dir(root.join("allowed")).unwrap();
    std::fs::create_dir(root.join("data")).unwrap();
    let allowed = root.join("allowed").display().to_string();
    let db = format!("--db-path={}", root.join("data/new.db").display());
    let memory = root.join("data/memory.jsonl").display().to_string();
    let config = server(
        &[&allowed, &db],
        &[("MEMORY_FILE_PATH", &memory)],
        ServerSandbox::default(),
    );
    let spec = spec(&config, &Containment::default()).unwrap();
    let w = &spec.layers.writable_paths;
    assert!(w.contains(&root.join("allowed")), "{w:?}");
    assert!(w.contains(&root.join("data")), "{w:?}");
    assert!(!w.contains(&root), "{w:?}");
}

#[test]
fn a_named_path_that_would_reach_the_state_root_is_left_out() {
    let dir = scratch();
    let root = resolve(dir.path());
    let state = root.join("state");
    std::fs::create_dir(&state).unwrap();
    let file = root.join("db.sqlite").display().to_string();
    let inside = state.display().to_string();
    let config = server(&[&file, &inside], &[], ServerSandbox::default());
    let containment = Containment {
        protected_paths: vec![state.clone()],
        require: Vec::new(),
    };
    let spec = spec(&config, &containment).unwrap();
    let w = &spec.layers.writable_paths;
    assert!(
        w.iter()
            .all(|p| !state.starts_with(p) && !p.starts_with(&state)),
        "{w:?}"
    );
    assert_eq!(spec.layers.protected_paths, vec![state]);
    assert!(spec.layers.private_tmp && !spec.layers.shared_tmp_readable);
}

#[test]
fn required_layers_of_the_entry_and_the_top_level_are_required() {
    let sandbox = ServerSandbox {
        network: false,
        require: vec!["no_network".into()],
        ..ServerSandbox::default()
    };
    let containment = Containment {
        protected_paths: Vec::new(),
        require: vec!["own_proc".into()],
    };
    let layers = spec(&server(&[], &[], sandbox), &containment)
        .unwrap()
        .layers;
    assert_eq!(layers.no_network, LayerMode::Required);
    assert_eq!(layers.pid_namespace, LayerMode::Required);
    assert_eq!(layers.landlock, LayerMode::BestEffort);
    assert_eq!(layers.socket_filter, LayerMode::BestEffort);
}

#[test]
fn network_and_unix_sockets_follow_the_entry() {
    let open = spec(
        &server(&[], &[], ServerSandbox::default()),
        &Containment::default(),
    )
    .unwrap()
    .layers;
    assert_eq!(open.no_network, LayerMode::Off);
    assert_eq!(open.socket_filter, LayerMode::BestEffort);
    let sockets = ServerSandbox {
        unix_sockets: true,
        ..ServerSandbox::default()
    };
    let layers = spec(&server(&[], &[], sockets), &Containment::default())
        .unwrap()
        .layers;
    assert_eq!(layers.socket_filter, LayerMode::Off);
}

#[test]
fn an_entry_that_opts_out_gets_no_layers() {
    let off = ServerSandbox {
        enabled: false,
        ..ServerSandbox::default()
    };
    let containment = Containment {
        protected_paths: vec![PathBuf::from("/state")],
        require: Vec::new(),
    };
    let layers = spec(&server(&[], &[], off), &containment).unwrap().layers;
    assert_eq!(layers, uncontained());
}

#[test]
fn an_entry_that_switches_off_a_top_level_requirement_does_not_start() {
    let require = |layers: &[&str]| Containment {
        protected_paths: vec![PathBuf::from("/state")],
        require: layers.iter().map(|l| (*l).to_owned()).collect(),
    };
    let off = ServerSandbox {
        enabled: false,
        ..ServerSandbox::default()
    };
    let e = spec(&server(&[], &[], off), &require(&["landlock"])).unwrap_err();
    assert!(
        e.contains("requires landlock") && e.contains("\"enabled\": false"),
        "{e}"
    );
    // The network is an upstream's unless its entry takes it away: a top-level no_network is not met by it.
    let e = spec(
        &server(&[], &[], ServerSandbox::default()),
        &require(&["no_network"]),
    )
    .unwrap_err();
    assert!(e.contains("requires no_network"), "{e}");
    let offline = ServerSandbox {
        network: false,
        ..ServerSandbox::default()
    };
    let layers = spec(&server(&[], &[], offline), &require(&["no_network"]))
        .unwrap()
        .layers;
    assert_eq!(layers.no_network, LayerMode::Required);
    let sockets = ServerSandbox {
        unix_sockets: true,
        ..ServerSandbox::default()
    };
    let e = spec(&server(&[], &[], sockets), &require(&["socket_filter"])).unwrap_err();
    assert!(e.contains("requires socket_filter"), "{e}");
}

#[test]
fn a_missing_program_says_so() {
    let mut config = server(&[], &[], ServerSandbox::default());
    if let Transport::Stdio { command, .. } = &mut config.transport {
        *command = "no-such-program-anywhere".into();
    }
    let e = spec(&config, &Containment::default()).unwrap_err();
    assert!(e.contains("not found on PATH"), "{e}");
}
