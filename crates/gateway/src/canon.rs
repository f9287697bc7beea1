//! Path canonicalisation for the policy stage: symlinks resolved through the longest existing ancestor, and the
//! stricter variant for servers that open Unicode look-alikes of missing names. It reads the filesystem (which the
//! pure policy crate cannot) and decides nothing.

use policy::ToolCall;
use std::path::{Path, PathBuf};

/// The canonicaliser that resolves paths as the call's server will.
pub(crate) fn canonicaliser(call: &ToolCall) -> fn(&str) -> Option<String> {
    match call.server_kind {
        Some(policy::ServerKind::Filesystem) => canonicalise_like_server_filesystem,
        _ => canonicalise,
    }
}

/// [`canonicalise`] for server-filesystem, which opens a path that does not exist by looking for a name in the same
/// directory that is equal under Unicode NFC. Toolgate does not model Unicode normalisation, so a path whose
/// missing part is not plain ASCII resolves to nothing (the call is `unknown` and denied) rather than to a name
/// that may not be the one the server opens.
pub fn canonicalise_like_server_filesystem(path: &str) -> Option<String> {
    let resolved = canonicalise(path)?;
    let mut existing = Path::new(&resolved);
    while std::fs::symlink_metadata(existing).is_err() {
        let name = existing.file_name()?;
        if !name.to_str().is_some_and(|n| n.is_ascii()) {
            return None;
        }
        existing = existing.parent()?;
    }
    Some(resolved)
}

/// Resolves symlinks in `path` (absolute and already free of `.` and `..`: the policy cleans it first). A path that does not exist yet (a file about to be written) resolves through its
/// longest existing ancestor; a dangling symlink on the way resolves to nothing, which the policy treats as
/// `unknown` and denies.
pub fn canonicalise(path: &str) -> Option<String> {
    let path = Path::new(path);
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        match std::fs::canonicalize(&existing) {
            Ok(real) => {
                let full: PathBuf = rest.iter().rev().fold(real, |acc, c| acc.join(c));
                return full.to_str().map(str::to_owned);
            }
            Err(_) => {
                if std::fs::symlink_metadata(&existing).is_ok() {
                    return None;
                }
                match (existing.file_name(), existing.parent()) {
                    (Some(name), Some(parent)) => {
                        rest.push(name.to_owned());
                        existing = parent.to_path_buf();
                    }
                    _ => return None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_do_not_exist_yet_resolve_through_their_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let target = root.join("new/deeper/file.txt");
        assert_eq!(
            canonicalise(target.to_str().unwrap()),
            Some(target.to_string_lossy().into_owned())
        );
    }

    #[test]
    fn symlink_out_of_the_workspace_resolves_to_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        assert_eq!(
            canonicalise(root.join("link/passwd").to_str().unwrap()).as_deref(),
            Some("/etc/passwd")
        );
    }

    #[test]
    fn unicode_lookalike_of_a_missing_name_resolves_to_nothing_for_server_filesystem() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("caf\u{e9}")).unwrap();
        // NFD spelling of an existing NFC name: the server would open the NFC directory.
        let nfd = root.join("cafe\u{301}/key.txt");
        assert_eq!(
            canonicalise_like_server_filesystem(nfd.to_str().unwrap()),
            None
        );
        let existing = root.join("caf\u{e9}/new.txt");
        assert!(canonicalise_like_server_filesystem(existing.to_str().unwrap()).is_some());
        assert!(
            canonicalise_like_server_filesystem(root.join("plain/new.txt").to_str().unwrap())
                .is_some()
        );
    }

    #[test]
    fn dangling_symlink_resolves_to_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(root.join("missing"), root.join("dangling")).unwrap();
        assert_eq!(canonicalise(root.join("dangling").to_str().unwrap()), None);
    }
}
