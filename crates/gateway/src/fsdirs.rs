//! The allowed directories of each filesystem upstream, worked out as `@modelcontextprotocol/server-filesystem`
//! works them out at start-up, so the policy's adapter resolves a relative path exactly as the server will.
//!
//! The server takes its directories from the arguments after its package (or script) in the launch command: `~`
//! from its home, a relative one from its working directory, `.`/`..` resolved lexically, then both the spelled
//! and the real path when a symlink makes them differ, keeping only those that are directories. A launch command
//! that does not show the package, or an argument whose spelling the server would trim (whitespace, quotes), leaves
//! the server out: its relative paths are then `unknown`. This module reads the filesystem; it decides nothing.

use config::{Config, ServerKind, Transport};
use std::collections::BTreeMap;
use std::path::Path;

/// Each filesystem upstream's allowed directories, in the server's order.
pub(crate) fn filesystem_dirs(config: &Config) -> BTreeMap<String, Vec<String>> {
    config
        .servers
        .iter()
        .filter(|s| s.kind == ServerKind::Filesystem)
        .filter_map(|s| match &s.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let home = env
                    .get("HOME")
                    .cloned()
                    .or_else(|| std::env::var("HOME").ok());
                let cwd = cwd
                    .clone()
                    .or_else(|| std::env::current_dir().ok())?
                    .to_string_lossy()
                    .into_owned();
                let argv: Vec<String> = std::iter::once(command.clone())
                    .chain(args.iter().cloned())
                    .collect();
                let dirs = server_dirs(&argv, home.as_deref(), &cwd)?;
                Some((s.name.clone(), dirs))
            }
            Transport::Http { .. } => None,
        })
        .collect()
}

/// The directories a server launched with `argv` allows, or `None` when they cannot be known.
fn server_dirs(argv: &[String], home: Option<&str>, cwd: &str) -> Option<Vec<String>> {
    let package = argv.iter().position(|a| {
        policy::ServerKind::from_launch_command(std::slice::from_ref(a))
            == Some(policy::ServerKind::Filesystem)
    })?;
    let mut dirs = Vec::new();
    for arg in &argv[package + 1..] {
        let trimmed = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '\u{feff}');
        if arg.is_empty() || arg.starts_with(trimmed) || arg.ends_with(trimmed) {
            return None;
        }
        let expanded = match arg.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{}{rest}", home?),
            _ => arg.clone(),
        };
        let absolute = if expanded.starts_with('/') {
            expanded
        } else {
            format!("{cwd}/{expanded}")
        };
        let spelled = policy::lexical_normalise(&absolute)?;
        let real = std::fs::canonicalize(&spelled)
            .ok()
            .and_then(|p| p.to_str().map(str::to_owned));
        for dir in std::iter::once(spelled.clone()).chain(real.filter(|r| *r != spelled)) {
            if Path::new(&dir).is_dir() {
                dirs.push(dir);
            }
        }
    }
    Some(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn directories_follow_the_package_and_keep_both_spellings_of_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let real = root.join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, root.join("link")).unwrap();
        let r = root.to_str().unwrap();
        let dirs = server_dirs(
            &argv(&format!(
                "npx -y @modelcontextprotocol/server-filesystem@2026.8.31 {r}/link ./real missing"
            )),
            None,
            r,
        )
        .unwrap();
        assert_eq!(
            dirs,
            vec![
                format!("{r}/link"),
                format!("{r}/real"),
                format!("{r}/real")
            ]
        );
    }

    #[test]
    fn unknowable_directories_leave_the_server_out() {
        assert_eq!(server_dirs(&argv("node server.js /ws"), None, "/"), None);
        assert_eq!(
            server_dirs(&argv("npx server-filesystem ~/x"), None, "/"),
            None
        );
        assert_eq!(
            server_dirs(
                &["npx".into(), "server-filesystem".into(), "/ws ".into()],
                None,
                "/"
            ),
            None
        );
    }
}
