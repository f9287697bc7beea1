//! Optional layers: each one actually restricts, is reported, and fails closed when required.

use sandbox::{probe, run, Error, Layer, LayerMode, LayerState, Outcome};

use crate::sh;

#[test]
fn probe_reports_every_layer() {
    let report = probe();
    assert_eq!(report.entries.len(), Layer::ALL.len());
    for entry in &report.entries {
        assert_ne!(entry.state, LayerState::NotRequested, "{:?}", entry.layer);
    }
}

#[test]
fn network_namespace_hides_host_interfaces() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("cat /proc/net/dev", dir.path());
    spec.layers.no_network = LayerMode::Required;
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::NoNetwork), &LayerState::Active);
    let interfaces: Vec<&str> = r
        .stdout
        .text
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    assert_eq!(interfaces, ["lo"]);
}

#[test]
fn landlock_write_outside_allowed_dirs_is_denied() {
    let allowed = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let script = format!(
        "echo in > ok.txt && (echo out > '{}/escape.txt') 2>/dev/null; echo done",
        outside.path().display()
    );
    let mut spec = sh(&script, allowed.path());
    spec.layers.landlock = LayerMode::Required;
    spec.layers.writable_paths = vec![allowed.path().to_path_buf()];
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::Landlock), &LayerState::Active);
    assert_eq!(r.layers.state(Layer::NoNewPrivs), &LayerState::Active);
    assert_eq!(r.outcome, Outcome::Succeeded);
    assert!(allowed.path().join("ok.txt").exists());
    assert!(!outside.path().join("escape.txt").exists());
}

#[test]
fn rlimit_file_size_stops_big_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("head -c 100000 /dev/zero > big", dir.path());
    spec.layers.rlimits = LayerMode::Required;
    spec.layers.limits.file_size_bytes = Some(1000);
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::Rlimits), &LayerState::Active);
    assert_eq!(r.outcome, Outcome::CommandFailed);
    assert!(std::fs::metadata(dir.path().join("big")).unwrap().len() <= 1000);
}

#[test]
fn required_layer_that_fails_refuses_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("touch ran", dir.path());
    spec.layers.landlock = LayerMode::Required;
    spec.layers.writable_paths = vec![dir.path().join("does-not-exist")];
    let err = run(&spec).unwrap_err();
    assert!(
        matches!(
            err,
            Error::RequiredLayerNotActive {
                layer: Layer::Landlock,
                ..
            }
        ),
        "{err}"
    );
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn layers_not_asked_for_are_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(&sh("true", dir.path())).unwrap();
    assert_eq!(r.layers.state(Layer::NoNetwork), &LayerState::NotRequested);
    assert_eq!(r.layers.state(Layer::PidNamespace), &LayerState::Active);
}

#[test]
fn every_configured_limit_is_in_force_for_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("cat /proc/self/limits", dir.path());
    spec.layers.rlimits = LayerMode::Required;
    spec.layers.limits = sandbox::Rlimits {
        cpu_seconds: Some(7),
        address_space_bytes: Some(3 << 30),
        file_size_bytes: Some(5 << 20),
        open_files: Some(77),
        processes: Some(99),
    };
    let r = run(&spec).unwrap();
    assert_eq!(r.layers.state(Layer::Rlimits), &LayerState::Active);
    let limit = |name: &str| -> Vec<String> {
        let line = r.stdout.text.lines().find(|l| l.starts_with(name)).unwrap();
        line[name.len()..]
            .split_whitespace()
            .take(2)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(limit("Max cpu time"), ["7", "7"]);
    assert_eq!(limit("Max address space"), ["3221225472", "3221225472"]);
    assert_eq!(limit("Max file size"), ["5242880", "5242880"]);
    assert_eq!(limit("Max open files"), ["77", "77"]);
    assert_eq!(limit("Max processes"), ["99", "99"]);
}

#[test]
fn cpu_hog_is_stopped_by_the_cpu_limit_before_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("while :; do :; done", dir.path());
    spec.layers.rlimits = LayerMode::Required;
    spec.layers.limits.cpu_seconds = Some(1);
    let r = run(&spec).unwrap();
    assert_eq!(r.outcome, Outcome::CommandFailed, "{r:?}");
    assert!(
        matches!(r.exit.signal, Some(libc::SIGXCPU | libc::SIGKILL)),
        "{r:?}"
    );
}

#[test]
fn memory_hog_is_stopped_by_the_address_space_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh("", dir.path());
    spec.program = "/usr/bin/python3".into();
    spec.args = vec![
        "-c".into(),
        "try:\n    bytearray(2 << 30)\n    print('allocated')\nexcept MemoryError:\n    print('refused')"
            .into(),
    ];
    spec.layers.rlimits = LayerMode::Required;
    spec.layers.limits.address_space_bytes = Some(1 << 30);
    let r = run(&spec).unwrap();
    assert_eq!(r.stdout.text, "refused\n", "{r:?}");
}
