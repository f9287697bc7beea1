//! A subreaper's orphans: the namespace init of a tree whose handle was killed becomes the parent process's
//! child; `reap_adopted` reaps it, and never the children the sandbox's own callers wait for.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::{reap_adopted, run, spawn_piped, Layer, LayerMode, LayerState, Outcome, PipedSpec};

fn zombie_children() -> Vec<libc::pid_t> {
    sandbox::children()
        .into_iter()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        })
        .collect()
}

#[test]
fn a_reaper_of_orphans_never_takes_a_commands_exit_status() {
    let stop = Arc::new(AtomicBool::new(false));
    let reaper = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                reap_adopted();
            }
        })
    };
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..30 {
        // A command that ends at once: its handle is a zombie while `run` still prepares to wait for it.
        let result = run(&crate::sh("exit 7", dir.path())).unwrap();
        assert_eq!(result.outcome, Outcome::CommandFailed, "{result:?}");
        assert_eq!(result.exit.code, Some(7), "{result:?}");
    }
    stop.store(true, Ordering::Relaxed);
    reaper.join().unwrap();
}

#[test]
fn a_killed_trees_orphaned_init_is_reaped_by_its_adopter() {
    // SAFETY: prctl with integer arguments changes only this process.
    assert_eq!(
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) },
        0
    );
    let mut spec = PipedSpec::new("/bin/sh");
    spec.args = vec!["-c".into(), "sleep 30".into()];
    spec.layers.pid_namespace = LayerMode::Required;
    // Killing a tree kills its handle and its init at once; the init outlives the handle's reaping by a
    // moment, as an orphan of this process (nearly always: five trees, so that one surely does).
    for _ in 0..5 {
        let child = spawn_piped(&spec).unwrap();
        assert_eq!(
            child.layers().state(Layer::PidNamespace),
            &LayerState::Active
        );
        drop(child);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut reaped = 0;
    loop {
        reaped += reap_adopted();
        if reaped > 0 && zombie_children().is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "reaped {reaped}; zombies left: {:?}",
            zombie_children()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
