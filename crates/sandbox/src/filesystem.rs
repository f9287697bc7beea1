//! The filesystem side of one run, prepared in the parent before the fork: the command's private temporary
//! directory and the Landlock ruleset built from the request's writable, protected and hidden paths.
//!
//! The private directory is created fresh (mode 0700) in this process's temporary directory and removed when the
//! returned guard drops, after the command's tree is gone. This module does not enforce anything in the child
//! (`child` does) and does not decide which paths are protected (the caller names them).

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::grants::{resolve, Grants};
use crate::landlock::{self, PrepareError};
use crate::layers::{Layer, LayerReport, LayerState};
use crate::spec::{LayerMode, LayerRequest};

/// The environment variables that name the temporary directory for common programs.
const TMP_VARS: [&str; 3] = ["TMPDIR", "TMP", "TEMP"];

/// What the parent prepared for one run.
pub(crate) struct Prepared {
    /// The ruleset for the child, when Landlock is wanted and could be built.
    pub landlock_fd: Option<OwnedFd>,
    /// The private temporary directory; removed on drop.
    pub private_tmp: Option<tempfile::TempDir>,
}

impl Prepared {
    /// Closes the parent's copy of the ruleset (the child has its own) and keeps the directory guard.
    pub(crate) fn into_private_tmp(self) -> Option<tempfile::TempDir> {
        self.private_tmp
    }

    /// Points the command's temporary-directory variables at its private directory.
    pub(crate) fn apply_env(&self, env: &mut BTreeMap<String, String>) {
        if let Some(dir) = &self.private_tmp {
            let path = dir.path().to_string_lossy().into_owned();
            for var in TMP_VARS {
                env.insert(var.to_owned(), path.clone());
            }
        }
    }
}

/// Protected paths make Landlock mandatory: without it nothing keeps the command out of them.
pub(crate) fn effective(request: &LayerRequest) -> LayerRequest {
    let mut request = request.clone();
    if !request.protected_paths.is_empty() {
        request.landlock = LayerMode::Required;
    }
    request
}

/// Creates the private directory and builds the ruleset. `Err` refuses the run: a writable path that would
/// expose a protected one, or a private directory that cannot be made. A Landlock that is merely unavailable
/// or failed is recorded in `layers` (the caller refuses when it was required).
pub(crate) fn prepare(
    request: &LayerRequest,
    cwd: &Path,
    layers: &mut LayerReport,
) -> Result<Prepared> {
    let shared_tmp = resolve(&std::env::temp_dir());
    let private_tmp = if request.private_tmp {
        Some(
            tempfile::Builder::new()
                .prefix("toolgate-run-")
                .tempdir_in(&shared_tmp)?,
        )
    } else {
        None
    };
    if !request.landlock.wanted() {
        return Ok(Prepared {
            landlock_fd: None,
            private_tmp,
        });
    }
    let mut writable = Vec::new();
    for path in request
        .writable_paths
        .iter()
        .map(PathBuf::as_path)
        .chain(private_tmp.as_ref().map(tempfile::TempDir::path))
    {
        match std::fs::canonicalize(path) {
            Ok(p) => writable.push(p),
            Err(e) => {
                let why = format!("writable path {}: {e}", path.display());
                layers.set(Layer::Landlock, LayerState::Failed(why));
                return Ok(Prepared {
                    landlock_fd: None,
                    private_tmp,
                });
            }
        }
    }
    let protected: Vec<PathBuf> = request.protected_paths.iter().map(|p| resolve(p)).collect();
    let hidden: Vec<PathBuf> = private_tmp
        .iter()
        .filter(|_| !request.shared_tmp_readable)
        .map(|_| shared_tmp.clone())
        .collect();
    let readable: Vec<PathBuf> = std::fs::canonicalize(cwd).into_iter().collect();
    let rules = Grants {
        writable: &writable,
        readable: &readable,
        protected: &protected,
        hidden: &hidden,
    }
    .rules()
    .map_err(|e| Error::ProtectedPathExposed {
        protected: e.protected,
        writable: e.writable,
    })?;
    let scope_sockets = request.no_network.wanted() || request.socket_filter.wanted();
    let landlock_fd = match landlock::prepare(&rules, scope_sockets) {
        Ok(fd) => Some(fd),
        Err(PrepareError::Unavailable(r)) => {
            layers.set(Layer::Landlock, LayerState::Unavailable(r));
            None
        }
        Err(PrepareError::Failed(r)) => {
            layers.set(Layer::Landlock, LayerState::Failed(r));
            None
        }
    };
    Ok(Prepared {
        landlock_fd,
        private_tmp,
    })
}
