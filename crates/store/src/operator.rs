//! The operator key: the credential a script presents to approve without a terminal.
//!
//! A 256-bit secret beside the approval key in the state root (`operator.key`, 0600, created on first use). The
//! sandbox keeps the state root from every command, hook and contained upstream, so a process toolgate started
//! cannot present it, while the operator's own scripts can (they run outside toolgate, with the operator's
//! rights). It is a separate file from the approval key so that handing it to a script never hands over the key
//! that seals the rows. This module compares what is presented; deciding what the key allows is the CLI's job.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::seal::load_or_create_secret;

/// The operator key's file name in the state root.
pub const OPERATOR_KEY_FILE: &str = "operator.key";

/// Where the operator key of `state_root` lies.
pub fn operator_key_path(state_root: &Path) -> PathBuf {
    state_root.join(OPERATOR_KEY_FILE)
}

/// Creates the operator key of `state_root` if it does not exist yet.
pub fn ensure_operator_key(state_root: &Path) -> Result<()> {
    load_or_create_secret(state_root, OPERATOR_KEY_FILE).map(|_| ())
}

/// Whether `presented` is the operator key of `state_root`, compared in constant time.
pub fn operator_key_matches(state_root: &Path, presented: &[u8]) -> Result<bool> {
    let key = load_or_create_secret(state_root, OPERATOR_KEY_FILE)?;
    if presented.len() != key.len() {
        return Ok(false);
    }
    let diff = key
        .iter()
        .zip(presented)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    Ok(diff == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_key_itself_matches() {
        let dir = tempfile::tempdir().unwrap();
        ensure_operator_key(dir.path()).unwrap();
        let key = std::fs::read(operator_key_path(dir.path())).unwrap();
        assert!(operator_key_matches(dir.path(), &key).unwrap());
        let mut other = key.clone();
        other[31] ^= 1;
        assert!(!operator_key_matches(dir.path(), &other).unwrap());
        assert!(!operator_key_matches(dir.path(), &key[..31]).unwrap());
        assert!(!operator_key_matches(dir.path(), b"").unwrap());
        let approval = std::fs::read(dir.path().join("approval.key"));
        assert!(approval.is_err(), "the operator key is its own file");
    }
}
