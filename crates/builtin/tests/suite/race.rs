//! A path component flipping between a directory and a symlink while operations run: zero escapes.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use builtin::{READ_FILE, WRITE_FILE};
use serde_json::json;

use crate::Fixture;

/// Flips `root/flip` between a real directory (kept as `root/flip.dir` when not in place) and a symlink to
/// `link_target` until `stop` is raised.
fn flipper(root: &Path, link_target: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let (root, link_target) = (root.to_path_buf(), link_target.to_path_buf());
    std::thread::spawn(move || {
        let (flip, parked) = (root.join("flip"), root.join("flip.dir"));
        let mut flips = 0;
        while !stop.load(Ordering::Relaxed) {
            // Errors are ignored: a concurrent write may have created `flip` itself, which is fine.
            let _ = symlink(&link_target, &flip);
            let _ = std::fs::remove_file(&flip);
            let _ = std::fs::rename(&parked, &flip);
            let _ = std::fs::rename(&flip, &parked);
            flips += 1;
        }
        flips
    })
}

#[test]
fn race_flipping_component_between_dir_and_symlink() {
    let f = Fixture::new();
    f.write("flip.dir/etc/passwd", "inside");
    let stop = Arc::new(AtomicBool::new(false));
    let handle = flipper(&f.root, Path::new("/"), Arc::clone(&stop));
    let real = std::fs::read_to_string("/etc/passwd").unwrap();
    let (mut ok, mut refused) = (0, 0);
    // Reads go on past 3,000 until both sides of the race were seen (bounded at 20,000), so a flipper that wins
    // every race for a while on a busy machine does not fail the test.
    for i in 0..20_000 {
        if i >= 3000 && ok > 0 && refused > 0 {
            break;
        }
        let r = f.call(READ_FILE, json!({"path": "flip/etc/passwd"}));
        if r.outcome == "SUCCEEDED" {
            assert_eq!(
                r.structured["content"], "inside",
                "escaped to the real /etc/passwd"
            );
            assert_ne!(r.structured["content"], real.as_str());
            ok += 1;
        } else {
            assert_refused_for_the_race(&r);
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = handle.join().unwrap();
    assert!(flips > 10, "the flipper did not run ({flips} flips)");
    // Both sides of the race were seen: reads through the real directory succeeded, and reads that met the
    // symlink (or the moment it was missing) were refused for that reason.
    assert!(
        ok > 0,
        "no read succeeded: the race never let the real directory through"
    );
    assert!(
        refused > 0,
        "no read was refused: the symlink was never met"
    );
}

/// A read or write that lost the race is refused because it met the symlink or found the component missing,
/// never for another reason.
fn assert_refused_for_the_race(r: &crate::ToolOutcome) {
    assert_eq!(r.outcome, "REFUSED", "{}", r.structured);
    let code = r.structured["error"]["code"].as_str().unwrap_or_default();
    assert!(
        matches!(
            code,
            "SYMLINK_REFUSED" | "PATH_OUTSIDE_WORKSPACE" | "NOT_FOUND"
        ),
        "refused for another reason: {}",
        r.structured
    );
}

#[test]
fn race_flipping_component_during_writes() {
    let f = Fixture::new();
    let outside = f.outside().join("target");
    std::fs::create_dir(&outside).unwrap();
    f.write("flip.dir/file.txt", "inside");
    let stop = Arc::new(AtomicBool::new(false));
    let handle = flipper(&f.root, &outside, Arc::clone(&stop));
    let (mut ok, mut refused) = (0, 0);
    // At least 400 writes, and on a busy machine (where the flipper may win every race for a while) more, until one
    // lands in the real directory: bounded, so a race that never lets one through still fails.
    let mut i = 0;
    while i < 400 || (ok == 0 && i < 20_000) {
        i += 1;
        let r = f.call(
            WRITE_FILE,
            json!({"path": "flip/file.txt", "content": format!("w{i}")}),
        );
        if r.outcome == "SUCCEEDED" {
            ok += 1;
        } else {
            assert_refused_for_the_race(&r);
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
    let escaped: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(escaped.is_empty(), "writes escaped: {escaped:?}");
    // A write that finds `flip` missing may create it as a real directory, which ends the flipping: refusals
    // are then legitimately absent, so only successes are required (and every refusal had the right reason).
    assert!(
        ok > 0,
        "no write succeeded ({refused} refused): the race never let the real directory through"
    );
}
