//! `toolgate install-links [DIR]`: the products' command names as symbolic links to this binary, so a user's
//! client entries and scripts that run `toolfence …` or `toolscript-mcp …` run toolgate unchanged.
//!
//! A name is linked only when toolgate speaks it; a name already linked to this binary is left as it is, a link
//! to another toolgate binary is pointed here, and anything else at that path (the product itself, installed
//! there, or a link to something that is not toolgate) is never replaced. Each name gets one line saying what was
//! done.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Link the products' command names (toolfence, toolscript-mcp, …) to this binary, so it speaks each product.
#[derive(clap::Args)]
pub struct Args {
    /// Where to create the links. Default: the directory holding this binary.
    dir: Option<PathBuf>,
}

/// What happened to one name.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Linked,
    Relinked(PathBuf),
    AlreadyLinked,
    Refused(String),
    NotSupported,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let me = crate::runtime::self_exe().context("cannot find this toolgate binary")?;
    let dir = match args.dir {
        Some(d) => d,
        None => me
            .parent()
            .map(Path::to_owned)
            .context("this binary has no directory")?,
    };
    anyhow::ensure!(
        dir.is_dir(),
        "{} is not a directory (create it first)",
        dir.display()
    );
    let mut refused = false;
    for product in super::PRODUCTS {
        let path = dir.join(product.name);
        let outcome = if product.supported {
            link(&path, &me)?
        } else {
            Outcome::NotSupported
        };
        match outcome {
            Outcome::Linked => println!("linked     {} -> {}", path.display(), me.display()),
            Outcome::Relinked(old) => println!(
                "relinked   {} -> {} (was -> {})",
                path.display(),
                me.display(),
                old.display()
            ),
            Outcome::AlreadyLinked => {
                println!("unchanged  {} (already this binary)", path.display())
            }
            Outcome::NotSupported => println!(
                "skipped    {}: not supported yet ({})",
                product.name, product.replaces
            ),
            Outcome::Refused(why) => {
                refused = true;
                println!("refused    {}: {why}; left as it is", path.display());
            }
        }
    }
    Ok(if refused {
        ExitCode::from(crate::runtime::EXIT_FAILURE)
    } else {
        ExitCode::SUCCESS
    })
}

fn link(path: &Path, me: &Path) -> anyhow::Result<Outcome> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::os::unix::fs::symlink(me, path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            return Ok(Outcome::Linked);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", path.display())),
        Ok(meta) => meta,
    };
    if !meta.file_type().is_symlink() {
        return Ok(Outcome::Refused(
            "it is not a link to toolgate (the product itself may be installed here)".to_owned(),
        ));
    }
    let target = std::fs::read_link(path)
        .with_context(|| format!("cannot read the link {}", path.display()))?;
    let resolved = std::fs::canonicalize(path).ok();
    if resolved.as_deref() == Some(me) {
        return Ok(Outcome::AlreadyLinked);
    }
    let is_toolgate = resolved
        .as_deref()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "toolgate");
    if !is_toolgate {
        return Ok(Outcome::Refused(format!(
            "it is a link to {}, which is not toolgate",
            target.display()
        )));
    }
    // Replaced in one step: a new link beside it, renamed over the old one.
    let name = path
        .file_name()
        .context("a link needs a file name")?
        .to_string_lossy();
    let fresh = path.with_file_name(format!(".{name}.toolgate-link"));
    let _ = std::fs::remove_file(&fresh);
    std::os::unix::fs::symlink(me, &fresh)
        .with_context(|| format!("cannot create {}", fresh.display()))?;
    std::fs::rename(&fresh, path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(Outcome::Relinked(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absent_names_and_links_to_toolgate_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let me = root.join("bin/toolgate");
        let old = root.join("old/toolgate");
        for p in [&me, &old] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"").unwrap();
        }
        let at = |n: &str| root.join(n);
        assert_eq!(link(&at("a"), &me).unwrap(), Outcome::Linked);
        assert_eq!(link(&at("a"), &me).unwrap(), Outcome::AlreadyLinked);
        std::os::unix::fs::symlink(&old, at("b")).unwrap();
        assert_eq!(link(&at("b"), &me).unwrap(), Outcome::Relinked(old.clone()));
        assert_eq!(std::fs::canonicalize(at("b")).unwrap(), me);
        std::fs::write(at("c"), b"#!/bin/sh\n").unwrap();
        assert!(matches!(link(&at("c"), &me).unwrap(), Outcome::Refused(_)));
        assert_eq!(std::fs::read(at("c")).unwrap(), b"#!/bin/sh\n");
        std::os::unix::fs::symlink("/usr/lib/node_modules/toolfence-mcp/dist/cli.js", at("d"))
            .unwrap();
        assert!(matches!(link(&at("d"), &me).unwrap(), Outcome::Refused(_)));
    }
}
