//! Piped mode with every layer, as stdio upstreams are started: the child is kept out of protected paths,
//! sees only its own processes in its own /proc, gets a private temporary directory, and takes every descendant
//! (a `setsid` one included) with it when its handle is dropped.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use sandbox::{spawn_piped, Layer, LayerMode, LayerState, Piped, PipedSpec, PipedStderr};

fn spec(script: &str, protected: &[PathBuf]) -> PipedSpec {
    let mut spec = PipedSpec::new("/bin/sh");
    spec.args = vec!["-c".into(), script.into()];
    spec.env
        .insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    spec.stderr = PipedStderr::Pipe;
    spec.layers.landlock = LayerMode::BestEffort;
    spec.layers.private_tmp = true;
    spec.layers.protected_paths = protected.to_vec();
    spec
}

/// Everything the child writes to standard output, until the end of its tree.
fn output(child: &mut Piped) -> String {
    let mut out = String::new();
    std::fs::File::from(child.take_stdout().unwrap())
        .read_to_string(&mut out)
        .unwrap();
    out
}

fn active(child: &Piped, layer: Layer) -> bool {
    child.layers().state(layer) == &LayerState::Active
}

#[test]
fn piped_child_cannot_read_a_protected_path() {
    // Outside the shared temporary directory, which a child with a private one cannot read anyway.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let secret = dir.path().join("approval.key");
    std::fs::write(&secret, "secret").unwrap();
    let script = format!("cat {} || echo refused", secret.display());
    let mut child = spawn_piped(&spec(&script, std::slice::from_ref(&secret))).unwrap();
    assert!(active(&child, Layer::Landlock));
    let out = output(&mut child);
    assert!(!out.contains("secret"), "{out}");
    assert!(out.contains("refused"), "{out}");
}

#[test]
fn piped_child_sees_only_its_own_processes_in_proc() {
    let mut child = spawn_piped(&spec("ls /proc | grep -c '^[0-9]'", &[])).unwrap();
    assert!(active(&child, Layer::PidNamespace) && active(&child, Layer::OwnProc));
    let count: usize = output(&mut child).trim().parse().unwrap();
    // The namespace's init, the shell, `ls` and `grep`: nothing of the host's.
    assert!((2..=4).contains(&count), "{count} processes in its /proc");
}

#[test]
fn piped_child_cannot_read_its_inits_environment_or_executable() {
    let script = "cat /proc/1/environ >/dev/null 2>&1 && echo environ; \
                  readlink /proc/1/exe >/dev/null 2>&1 && echo exe; \
                  tr -d '\\0' < /proc/1/cmdline; echo end";
    let mut child = spawn_piped(&spec(script, &[])).unwrap();
    assert_eq!(output(&mut child).trim(), "end");
}

#[test]
fn piped_child_writes_only_its_private_tmp_which_goes_with_it() {
    let mut child = spawn_piped(&spec(
        "echo x > \"$TMPDIR/f\" && echo \"$TMPDIR\"; echo y > /etc/sandbox-piped-test || echo refused",
        &[],
    ))
    .unwrap();
    let out = output(&mut child);
    let tmp = PathBuf::from(out.lines().next().unwrap());
    assert!(out.contains("refused"), "{out}");
    assert!(tmp.join("f").is_file());
    drop(child);
    assert!(!tmp.exists(), "{} outlived the child", tmp.display());
}

/// Host pids whose command line is `sleep MARKER`.
fn sleepers(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c == format!("sleep\0{marker}\0").as_bytes())
        })
        .collect()
}

#[test]
fn setsid_grandchild_of_a_piped_child_dies_when_it_is_dropped() {
    let marker = format!("{}", 800_000 + std::process::id() % 99_999);
    let script = format!("setsid sleep {marker} & echo started; exec sleep 1000");
    let mut child = spawn_piped(&spec(&script, &[])).unwrap();
    let mut line = [0u8; 8];
    let mut stdout = std::fs::File::from(child.take_stdout().unwrap());
    stdout.read_exact(&mut line).unwrap();
    let mut found = Vec::new();
    for _ in 0..100 {
        found = sleepers(&marker);
        if !found.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !found.is_empty(),
        "the grandchild runs while the child does"
    );
    drop(child);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        sleepers(&marker),
        Vec::<i32>::new(),
        "the setsid grandchild survived"
    );
}

#[test]
fn piped_writable_path_that_exposes_a_protected_one_is_refused() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let mut spec = spec("true", std::slice::from_ref(&state));
    spec.layers.writable_paths = vec![dir.path().to_path_buf()];
    assert!(matches!(
        spawn_piped(&spec),
        Err(sandbox::Error::ProtectedPathExposed { .. })
    ));
}
