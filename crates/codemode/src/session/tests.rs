//! Each test is an attack on `saveFile` / `readFile` or a bound of `recall`.

use super::*;
use crate::quota::Quota;
use pretty_assertions::assert_eq;
use serde_json::json;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};

fn session(root: &Path) -> (CodeSession, PathBuf) {
    let dir = root.join("codemode").join("session-1");
    (CodeSession::new(Some(dir.clone())), dir)
}

fn real_root() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// The temporary directory itself, canonical, since a symlink anywhere on the path is refused.
fn canonical(t: &tempfile::TempDir) -> PathBuf {
    std::fs::canonicalize(t.path()).unwrap()
}

#[test]
fn save_then_read_round_trips_owner_only() {
    let t = real_root();
    let (s, dir) = session(&canonical(&t));
    let path = s.save_file("issues.json", "[1,2,3]").unwrap();
    assert_eq!(path, dir.join("issues.json"));
    assert_eq!(s.read_file(&path).unwrap(), "[1,2,3]");
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Saving again replaces the file.
    s.save_file("issues.json", "[]").unwrap();
    assert_eq!(s.read_file(&path).unwrap(), "[]");
}

#[test]
fn save_file_refuses_dot_dot_names() {
    let t = real_root();
    let (s, dir) = session(&canonical(&t));
    for name in [
        "..",
        "../x",
        "a..b",
        ".",
        ".hidden",
        "a/b",
        "/etc/passwd",
        "a\\b",
        "a\0b",
        "",
        "a\nb",
    ] {
        let err = s.save_file(name, "x").unwrap_err();
        assert!(err.starts_with("saveFile: the name"), "{name:?}: {err}");
    }
    let long = "a".repeat(256);
    assert!(s
        .save_file(&long, "x")
        .unwrap_err()
        .contains("longer than 255 bytes"));
    assert!(s.save_file(&"a".repeat(255), "x").is_ok());
    // Nothing was written outside the directory.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn save_file_does_not_follow_a_planted_symlink() {
    let t = real_root();
    let root = canonical(&t);
    let (s, dir) = session(&root);
    std::fs::create_dir_all(&dir).unwrap();
    let target = root.join("target.txt");
    std::fs::write(&target, "precious").unwrap();
    symlink(&target, dir.join("out.txt")).unwrap();
    let err = s.save_file("out.txt", "overwritten").unwrap_err();
    assert!(err.contains("symlink"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
}

#[test]
fn save_file_does_not_follow_a_symlinked_session_directory() {
    let t = real_root();
    let root = canonical(&t);
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::create_dir(root.join("codemode")).unwrap();
    symlink(&elsewhere, root.join("codemode").join("session-1")).unwrap();
    let (s, _) = session(&root);
    let err = s.save_file("x.txt", "data").unwrap_err();
    assert!(err.contains("symlink"), "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn save_file_does_not_follow_a_symlinked_parent() {
    let t = real_root();
    let root = canonical(&t);
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, root.join("codemode")).unwrap();
    let (s, _) = session(&root);
    assert!(s.save_file("x.txt", "data").is_err());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn save_file_does_not_write_through_a_planted_hard_link() {
    let t = real_root();
    let root = canonical(&t);
    let (s, dir) = session(&root);
    std::fs::create_dir_all(&dir).unwrap();
    let target = root.join("target.txt");
    std::fs::write(&target, "precious").unwrap();
    std::fs::hard_link(&target, dir.join("out.txt")).unwrap();
    assert!(s.save_file("out.txt", "overwritten").is_err());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
}

#[test]
fn save_file_tightens_a_directory_left_open() {
    let t = real_root();
    let (s, dir) = session(&canonical(&t));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    s.save_file("a.txt", "x").unwrap();
    let meta = std::fs::metadata(&dir).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
}

#[test]
fn save_file_refuses_data_past_its_limit() {
    let t = real_root();
    let (s, _) = session(&canonical(&t));
    let big = "x".repeat(MAX_FILE_BYTES + 1);
    let err = s.save_file("big.txt", &big).unwrap_err();
    assert!(err.contains("limit of 10485760 bytes"), "{err}");
}

#[test]
fn read_file_refuses_a_path_another_session_saved() {
    let t = real_root();
    let root = canonical(&t);
    let one = CodeSession::new(Some(root.join("one")));
    let two = CodeSession::new(Some(root.join("two")));
    let path = one.save_file("secret.txt", "mine").unwrap();
    assert_eq!(
        two.read_file(&path).unwrap_err(),
        "readFile reads only files this session saved"
    );
}

#[test]
fn read_file_refuses_paths_it_did_not_save() {
    let t = real_root();
    let root = canonical(&t);
    let (s, dir) = session(&root);
    let path = s.save_file("a.txt", "x").unwrap();
    let refused = "readFile reads only files this session saved";
    for other in [
        PathBuf::from("/etc/passwd"),
        dir.join("b.txt"),
        dir.join("..").join("session-1").join("a.txt"),
        dir.join(".").join("a.txt"),
        PathBuf::from("a.txt"),
        dir.clone(),
    ] {
        assert_eq!(
            s.read_file(&other).unwrap_err(),
            refused,
            "{}",
            other.display()
        );
    }
    assert_eq!(s.read_file(&path).unwrap(), "x");
}

#[test]
fn read_file_does_not_follow_a_symlink_swapped_in_after_save() {
    let t = real_root();
    let root = canonical(&t);
    let (s, dir) = session(&root);
    let path = s.save_file("a.txt", "x").unwrap();
    std::fs::write(root.join("secret"), "not yours").unwrap();
    std::fs::remove_file(&path).unwrap();
    symlink(root.join("secret"), &path).unwrap();
    let err = s.read_file(&dir.join("a.txt")).unwrap_err();
    assert!(err.contains("symlink"), "{err}");
}

#[test]
fn no_files_without_a_directory() {
    let s = CodeSession::new(None);
    assert!(s
        .save_file("a.txt", "x")
        .unwrap_err()
        .contains("not available"));
    assert!(s.read_file(Path::new("/a.txt")).is_err());
}

#[test]
fn a_relative_directory_is_refused() {
    let s = CodeSession::new(Some(PathBuf::from("relative/dir")));
    assert!(s
        .save_file("a.txt", "x")
        .unwrap_err()
        .contains("not absolute"));
}

#[test]
fn recall_keeps_the_latest_results_and_says_when_one_was_evicted() {
    let s = CodeSession::new(None);
    for _ in 0..KEEP_RESULTS + 5 {
        let seq = s.reserve();
        s.record(seq, &json!(seq));
    }
    assert_eq!(s.lookup(1), Recalled::Evicted);
    assert_eq!(s.lookup(5), Recalled::Evicted);
    assert_eq!(s.lookup(6), Recalled::Kept(json!(6)));
    assert_eq!(s.recall(1005), Some(json!(1005)));
    assert_eq!(s.lookup(1006), Recalled::Missing);
    assert!(Recalled::Evicted
        .message(1)
        .unwrap()
        .contains("no longer kept"));
}

#[test]
fn recall_is_bounded_in_bytes() {
    let s = CodeSession::new(None);
    let big = json!("x".repeat(KEEP_RESULT_BYTES / 2));
    for seq in 1..=3 {
        s.record(seq, &big);
    }
    assert_eq!(s.lookup(1), Recalled::Evicted);
    assert_eq!(s.lookup(3), Recalled::Kept(big.clone()));
    // One value larger than the whole budget is not kept at all, and evicts nothing else.
    s.record(4, &json!("y".repeat(KEEP_RESULT_BYTES + 1)));
    assert_eq!(s.lookup(4), Recalled::Evicted);
    assert_eq!(s.lookup(3), Recalled::Kept(big));
}

#[test]
fn save_file_cannot_fill_the_disk_in_steps() {
    let t = real_root();
    let (s, _) = session(&canonical(&t));
    let chunk = "x".repeat(MAX_FILE_BYTES);
    let fit = MAX_SESSION_BYTES / MAX_FILE_BYTES;
    for i in 0..fit {
        s.save_file(&format!("part{i}"), &chunk).unwrap();
    }
    let err = s.save_file("one_more", &chunk).unwrap_err();
    assert!(err.contains("more than its limit"), "{err}");
    // Overwriting a saved file counts only its new size.
    s.save_file("part0", "small").unwrap();
    s.save_file("one_more", &chunk[..MAX_FILE_BYTES / 2])
        .unwrap();
}

/// Counts the bytes this thread has allocated and not freed, while counting is on, so a test can see what a
/// structure really takes rather than what it says it takes.
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    pub struct Counting;

    thread_local! {
        static ON: Cell<bool> = const { Cell::new(false) };
        static NET: Cell<i64> = const { Cell::new(0) };
    }

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if ON.with(Cell::get) {
                NET.with(|n| n.set(n.get() + layout.size() as i64));
            }
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if ON.with(Cell::get) {
                NET.with(|n| n.set(n.get() - layout.size() as i64));
            }
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// The net bytes `f` left allocated on this thread.
    pub fn net<T>(f: impl FnOnce() -> T) -> (T, i64) {
        NET.with(|n| n.set(0));
        ON.with(|on| on.set(true));
        let out = f();
        ON.with(|on| on.set(false));
        (out, NET.with(Cell::get))
    }
}

#[test]
fn recall_is_bounded_by_its_memory_not_its_serialised_size() {
    // `[[],[],…]`: 3 bytes of text per element, about 23 times that as a parsed value.
    let dense = serde_json::Value::Array(vec![json!([]); 100_000]);
    let text_len = serde_json::to_string(&dense).unwrap().len();
    let bound: u64 = 4 << 20;
    let shares = Shares {
        identity: "key:flood".to_owned(),
        disk: Arc::new(Quota::new(1 << 20, 1 << 20)),
        memory: Arc::new(Quota::new(bound, bound)),
    };
    let s = CodeSession::with_shares(None, shares);
    let ((), held) = counting::net(|| {
        for seq in 1..=30 {
            s.record(seq, &dense);
        }
    });
    assert!(
        held <= bound as i64 + (256 << 10),
        "30 results of {text_len} bytes of text left {held} bytes allocated, over the {bound} bound"
    );
    assert!(s.kept_bytes() <= bound);
    // The newest is still recalled as the value it was.
    assert_eq!(s.recall(30), Some(dense));
    assert_eq!(s.lookup(1), Recalled::Evicted);
}

#[test]
fn recall_memory_is_one_share_per_identity_across_its_sessions() {
    let memory = Arc::new(Quota::new(2_000, 1 << 20));
    let shares = |identity: &str| Shares {
        identity: identity.to_owned(),
        disk: Arc::new(Quota::new(1 << 20, 1 << 20)),
        memory: Arc::clone(&memory),
    };
    let value = json!("x".repeat(1_500));
    let first = CodeSession::with_shares(None, shares("key:flood"));
    first.record(1, &value);
    // A second session of the same identity gets no fresh share.
    let second = CodeSession::with_shares(None, shares("key:flood"));
    second.record(1, &value);
    let Recalled::NotKept(full) = second.lookup(1) else {
        panic!("kept past the identity's share: {:?}", second.lookup(1));
    };
    assert!(Recalled::NotKept(full)
        .message(1)
        .unwrap()
        .contains("its share of 2000 bytes of memory; it frees as they end"));
    // Another identity is not affected.
    let other = CodeSession::with_shares(None, shares("key:quiet"));
    other.record(1, &value);
    assert_eq!(other.recall(1), Some(value.clone()));
    // The first session's end frees its share.
    drop(first);
    second.record(2, &value);
    assert_eq!(second.recall(2), Some(value));
}

#[test]
fn save_file_quota_is_per_identity_and_files_are_removed_when_sessions_end() {
    let t = real_root();
    let root = canonical(&t);
    let disk = Arc::new(Quota::new(3 * 4096, 5 * 4096));
    let shares = |identity: &str| Shares {
        identity: identity.to_owned(),
        disk: Arc::clone(&disk),
        memory: Arc::new(Quota::new(1 << 20, 1 << 20)),
    };
    let session = |id: &str, identity: &str| {
        let dir = root.join("code-files").join(id);
        (
            CodeSession::with_shares(Some(dir.clone()), shares(identity)),
            dir,
        )
    };
    // Each new session of one identity (a 2026-07-28 request is one) shares that identity's one share.
    let (a1, dir1) = session("req-1", "key:flood");
    a1.save_file("one", &"x".repeat(5000)).unwrap();
    let (a2, dir2) = session("req-2", "key:flood");
    a2.save_file("two", "y").unwrap();
    let err = a2.save_file("three", "z").unwrap_err();
    assert!(
        err.contains("this identity's sessions hold 12288 of its share of 12288 bytes"),
        "{err}"
    );
    assert!(err.contains("deleted when their session ends"), "{err}");
    // Another identity still saves, up to the ceiling over everyone.
    let (b, _) = session("req-3", "key:quiet");
    b.save_file("b1", "b").unwrap();
    b.save_file("b2", "b").unwrap();
    let err = b.save_file("b3", "b").unwrap_err();
    assert!(err.contains("toolgate's ceiling of 20480 bytes"), "{err}");
    // A session's end deletes its files and its directory, and gives its share back.
    assert!(dir1.join("one").exists());
    drop(a1);
    assert!(!dir1.exists());
    assert_eq!(disk.held_by("key:flood"), 4096);
    a2.save_file("three", "z").unwrap();
    drop(a2);
    drop(b);
    assert!(!dir2.exists());
    assert_eq!(disk.held(), 0);
}

#[test]
fn a_replaced_file_is_charged_its_new_size_only() {
    let t = real_root();
    let disk = Arc::new(Quota::new(1 << 20, 1 << 20));
    let shares = Shares {
        identity: "local".to_owned(),
        disk: Arc::clone(&disk),
        memory: Arc::new(Quota::new(1 << 20, 1 << 20)),
    };
    let s = CodeSession::with_shares(Some(canonical(&t).join("s")), shares);
    s.save_file("a", &"x".repeat(10_000)).unwrap();
    assert_eq!(disk.held(), disk_cost(10_000));
    s.save_file("a", "small").unwrap();
    assert_eq!(disk.held(), 4096);
}
