//! A replica's name: which of several gateways sharing one PostgreSQL store this process is. Each replica writes
//! an audit chain of its own (`audit-NAME.jsonl` in the namespace, witnessed in the store under NAME), so that
//! replicas never race on one chain's head and each log verifies on its own.
//!
//! The name is `TOOLGATE_REPLICA` when set, else the one kept in the state root's `replica` file, made (random)
//! on first use: a machine's `serve` and its admin commands write one chain. Replicas that share one state root
//! on one machine share that name and chain unless each is given its own; that is safe too (the log's file lock
//! orders their appends). Nothing here applies to the SQLite store, whose namespace has one log.

use anyhow::Context;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The environment variable naming this replica.
pub const REPLICA_VAR: &str = "TOOLGATE_REPLICA";
/// The file in the state root keeping the replica's name.
const REPLICA_FILE: &str = "replica";

/// This process's replica name; see the module doc. A name that is not 1 to 64 letters, digits, `-` or `_` is
/// refused.
pub fn name(state_root: &Path) -> anyhow::Result<String> {
    if let Ok(name) = std::env::var(REPLICA_VAR) {
        return checked(name, REPLICA_VAR);
    }
    let path = state_root.join(REPLICA_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => return checked(text.trim().to_owned(), &path.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    let mut bytes = [0u8; 6];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot draw a replica name")?;
    let made: String = std::iter::once("r".to_owned())
        .chain(bytes.iter().map(|b| format!("{b:02x}")))
        .collect();
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path);
    match created {
        Ok(mut f) => {
            f.write_all(format!("{made}\n").as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(made)
        }
        // Another process of this state root made it first: its name is this root's.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => name(state_root),
        Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
    }
}

fn checked(name: String, from: &str) -> anyhow::Result<String> {
    if audit::valid_chain(&name) {
        Ok(name)
    } else {
        anyhow::bail!(
            "replica name {name:?} (from {from}) is not 1 to 64 letters, digits, '-' or '_': name each replica \
             so, or remove the file to have one made"
        )
    }
}
