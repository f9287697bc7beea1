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
    for _ in 0..3000 {
        let r = f.call(READ_FILE, json!({"path": "flip/etc/passwd"}));
        if r.outcome == "SUCCEEDED" {
            assert_eq!(
                r.structured["content"], "inside",
                "escaped to the real /etc/passwd"
            );
            assert_ne!(r.structured["content"], real.as_str());
            ok += 1;
        } else {
            refused += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = handle.join().unwrap();
    assert!(flips > 10, "the flipper did not run ({flips} flips)");
    assert_eq!(ok + refused, 3000);
}

#[test]
fn race_flipping_component_during_writes() {
    let f = Fixture::new();
    let outside = f.outside().join("target");
    std::fs::create_dir(&outside).unwrap();
    f.write("flip.dir/file.txt", "inside");
    let stop = Arc::new(AtomicBool::new(false));
    let handle = flipper(&f.root, &outside, Arc::clone(&stop));
    for i in 0..400 {
        let _ = f.call(
            WRITE_FILE,
            json!({"path": "flip/file.txt", "content": format!("w{i}")}),
        );
    }
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
    let escaped: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
    assert!(escaped.is_empty(), "writes escaped: {escaped:?}");
}
