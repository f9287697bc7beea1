//! Which paths a contained command may reach, as the list of Landlock rules that says so.
//!
//! Landlock only grants: there is no "everything but X" rule. So "read anything except the state root and the
//! config" becomes: grant `/` whole unless something excluded lies beneath it; otherwise grant each of its
//! entries the same way, recursively along the paths to the excluded ones. Directories on such a path (the
//! ancestors of an excluded path) get no content rights, since any right granted on a directory holds for
//! everything beneath it; ancestors of an excluded *file* may still be listed. Writable paths are granted
//! whole and may neither contain nor lie inside a protected path: such a run is refused, not narrowed, so a
//! command never finds its workspace half-writable. This module computes rules; it does not talk to the kernel
//! (see `landlock`).

use std::path::{Path, PathBuf};

/// What one rule grants beneath its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read, list and execute.
    Read,
    /// Read, list, execute, and every write right.
    ReadWrite,
    /// List the directory's entries, nothing else (ancestors of an excluded file).
    ListOnly,
}

/// One Landlock rule: `access` beneath `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub path: PathBuf,
    pub access: Access,
}

/// A writable path that would expose a protected one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exposed {
    pub protected: PathBuf,
    pub writable: PathBuf,
}

/// The paths, already made absolute and canonical by the caller where they exist.
pub(crate) struct Grants<'a> {
    /// Granted read and write, whole.
    pub writable: &'a [PathBuf],
    /// Granted for reading even inside a hidden path (the command's working directory), minus protected paths.
    pub readable: &'a [PathBuf],
    /// Never readable, never writable: the state root, the config file.
    pub protected: &'a [PathBuf],
    /// Not granted by the read-everything rule (the shared temporary directory), though a writable path
    /// beneath one is still granted.
    pub hidden: &'a [PathBuf],
}

impl Grants<'_> {
    /// The rules, or the first writable path that contains or lies inside a protected path.
    pub(crate) fn rules(&self) -> Result<Vec<Rule>, Exposed> {
        for w in self.writable {
            if let Some(p) = self
                .protected
                .iter()
                .find(|p| p.starts_with(w) || w.starts_with(p))
            {
                return Err(Exposed {
                    protected: p.clone(),
                    writable: w.clone(),
                });
            }
        }
        let mut rules: Vec<Rule> = self
            .writable
            .iter()
            .map(|w| Rule {
                path: w.clone(),
                access: Access::ReadWrite,
            })
            .collect();
        let excluded: Vec<&Path> = self
            .protected
            .iter()
            .chain(self.hidden)
            .map(PathBuf::as_path)
            .collect();
        let protected_dirs: Vec<&Path> = self
            .protected
            .iter()
            .filter(|p| !p.exists() || p.is_dir())
            .map(PathBuf::as_path)
            .collect();
        split(Path::new("/"), &excluded, &protected_dirs, &mut rules);
        let protected: Vec<&Path> = self.protected.iter().map(PathBuf::as_path).collect();
        for r in self.readable {
            split(r, &protected, &protected_dirs, &mut rules);
        }
        Ok(rules)
    }
}

/// Grants `dir` for reading unless something excluded lies beneath it; then descends into its entries.
fn split(dir: &Path, excluded: &[&Path], protected_dirs: &[&Path], out: &mut Vec<Rule>) {
    if excluded.iter().any(|x| dir.starts_with(x)) {
        return;
    }
    if !excluded.iter().any(|x| x.starts_with(dir)) {
        out.push(Rule {
            path: dir.to_path_buf(),
            access: Access::Read,
        });
        return;
    }
    // A listing right on an ancestor of a protected directory would hold inside it too.
    if !protected_dirs.iter().any(|p| p.starts_with(dir)) {
        out.push(Rule {
            path: dir.to_path_buf(),
            access: Access::ListOnly,
        });
    }
    // An unreadable directory yields no rules: what cannot be listed here cannot be granted, so it stays denied.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        // A symlink is reached through its target, which has a rule (or none) of its own; granting the link
        // would grant the target, wherever it is.
        match entry.file_type() {
            Ok(t) if !t.is_symlink() => split(&entry.path(), excluded, protected_dirs, out),
            _ => {}
        }
    }
}

/// `path` made absolute and free of symlinks where it exists; where it does not, its longest existing
/// ancestor is resolved and the rest appended, so a protected path created later is still compared by the
/// name it will have.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => resolve(parent).join(name),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'r>(rules: &'r [Rule], path: &Path) -> Option<&'r Rule> {
        rules.iter().find(|r| r.path == path)
    }

    #[test]
    fn nothing_excluded_grants_the_root_whole() {
        let rules = Grants {
            writable: &[],
            readable: &[],
            protected: &[],
            hidden: &[],
        }
        .rules()
        .unwrap();
        assert_eq!(
            rules,
            vec![Rule {
                path: "/".into(),
                access: Access::Read
            }]
        );
    }

    #[test]
    fn protected_directory_and_its_ancestors_get_nothing_siblings_get_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        let state = root.join("state");
        std::fs::create_dir_all(state.join("inner")).unwrap();
        std::fs::write(root.join("sibling.txt"), "x").unwrap();
        std::fs::create_dir(root.join("other")).unwrap();
        let rules = Grants {
            writable: &[],
            readable: &[],
            protected: std::slice::from_ref(&state),
            hidden: &[],
        }
        .rules()
        .unwrap();
        assert!(rules.iter().all(|r| !r.path.starts_with(&state)));
        assert!(rules
            .iter()
            .all(|r| !state.starts_with(&r.path) || r.path == state));
        assert_eq!(
            find(&rules, &root.join("sibling.txt")).map(|r| r.access),
            Some(Access::Read)
        );
        assert_eq!(
            find(&rules, &root.join("other")).map(|r| r.access),
            Some(Access::Read)
        );
    }

    #[test]
    fn ancestors_of_a_protected_file_may_be_listed() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        let config = root.join("config.json");
        std::fs::write(&config, "{}").unwrap();
        let rules = Grants {
            writable: &[],
            readable: &[],
            protected: std::slice::from_ref(&config),
            hidden: &[],
        }
        .rules()
        .unwrap();
        assert_eq!(
            find(&rules, &root).map(|r| r.access),
            Some(Access::ListOnly)
        );
        assert_eq!(find(&rules, &config), None);
    }

    #[test]
    fn writable_path_around_or_inside_a_protected_one_is_exposed() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        let state = root.join("state");
        for writable in [root.clone(), state.join("sub")] {
            let err = Grants {
                writable: std::slice::from_ref(&writable),
                readable: &[],
                protected: std::slice::from_ref(&state),
                hidden: &[],
            }
            .rules()
            .unwrap_err();
            assert_eq!(err.protected, state);
        }
    }

    #[test]
    fn symlinks_are_never_granted() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        let state = root.join("state");
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::symlink(&state, root.join("link")).unwrap();
        let rules = Grants {
            writable: &[],
            readable: &[],
            protected: std::slice::from_ref(&state),
            hidden: &[],
        }
        .rules()
        .unwrap();
        assert_eq!(find(&rules, &root.join("link")), None);
    }

    #[test]
    fn missing_paths_resolve_through_their_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(dir.path());
        std::os::unix::fs::symlink(&root, root.join("alias")).unwrap();
        assert_eq!(
            resolve(&root.join("alias/not/yet")),
            root.join("not").join("yet")
        );
    }
}
