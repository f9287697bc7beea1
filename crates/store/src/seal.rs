//! Authentication of security-relevant rows: an HMAC-SHA256 seal over each approval request and session grant.
//!
//! The database lives in a directory the agent's tools are kept out of, but "kept out" is one defence; this is
//! the second. Every row toolgate writes carries a seal computed with a 256-bit key that lives beside the
//! namespaces in the state root (`approval.key`, created 0600 on first use and never shown). A row whose seal
//! does not verify — edited by hand, written by another program, copied from another workspace or from another
//! request — is reported as tampered and no transition or execution accepts it. The seal cannot tell an old
//! genuine row from the current one (a restored backup of the whole database); it only proves toolgate wrote
//! exactly these values. This module neither reads nor writes the database.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use hmac::{Hmac, KeyInit, Mac};
use rand::TryRng;
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::namespace::create_private_file;

/// The key file's name in the state root.
const KEY_FILE: &str = "approval.key";
/// Key length: the SHA-256 block would allow more, 256 bits is already beyond guessing.
const KEY_BYTES: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// One field of a sealed row. The encoding is length-prefixed and tags absence, so no two different rows can
/// produce the same sealed bytes by shifting text between fields.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'a> {
    Text(&'a str),
    Int(i64),
    OptText(Option<&'a str>),
    OptInt(Option<i64>),
}

/// The seal key of one state root.
#[derive(Clone)]
pub(crate) struct SealKey([u8; KEY_BYTES]);

impl std::fmt::Debug for SealKey {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

impl SealKey {
    /// Reads the key of `state_root`, creating it on first use. A key file that others may read is refused
    /// rather than trusted: someone else may already hold it.
    pub(crate) fn load_or_create(state_root: &Path) -> Result<Self> {
        load_or_create_secret(state_root, KEY_FILE).map(Self)
    }

    /// The seal of `fields` under `domain` (which keeps a grant's seal from ever verifying as a request's), hex.
    pub(crate) fn seal(&self, domain: &str, fields: &[Field<'_>]) -> String {
        hex::encode(self.mac(domain, fields).finalize().into_bytes())
    }

    /// Whether `seal` (hex) is the seal of `fields`; constant time in the comparison.
    pub(crate) fn verify(&self, domain: &str, fields: &[Field<'_>], seal: &str) -> bool {
        match hex::decode(seal) {
            Ok(bytes) => self.mac(domain, fields).verify_slice(&bytes).is_ok(),
            Err(_) => false,
        }
    }

    /// A key of its own for `label`, derived from this one (a purpose's key never verifies another's).
    pub(crate) fn derive(&self, label: &str) -> [u8; KEY_BYTES] {
        self.mac(label, &[]).finalize().into_bytes().into()
    }

    fn mac(&self, domain: &str, fields: &[Field<'_>]) -> HmacSha256 {
        // HMAC pads a key shorter than the hash's block with zeros; padding it here gives the same MAC through
        // the constructor that cannot fail.
        let mut block = [0u8; 64];
        block[..KEY_BYTES].copy_from_slice(&self.0);
        let mut mac = <HmacSha256 as KeyInit>::new(&block.into());
        put(&mut mac, domain.as_bytes());
        for field in fields {
            match *field {
                Field::Text(s) => put(&mut mac, s.as_bytes()),
                Field::Int(n) => put(&mut mac, &n.to_be_bytes()),
                Field::OptText(None) | Field::OptInt(None) => mac.update(&[0]),
                Field::OptText(Some(s)) => {
                    mac.update(&[1]);
                    put(&mut mac, s.as_bytes());
                }
                Field::OptInt(Some(n)) => {
                    mac.update(&[1]);
                    put(&mut mac, &n.to_be_bytes());
                }
            }
        }
        mac
    }
}

fn put(mac: &mut HmacSha256, bytes: &[u8]) {
    mac.update(&(bytes.len() as u64).to_be_bytes());
    mac.update(bytes);
}

/// Reads the 256-bit secret `name` of `state_root`, creating it (0600) on first use. A file that others may read
/// is refused rather than trusted: someone else may already hold it.
pub(crate) fn load_or_create_secret(state_root: &Path, name: &str) -> Result<[u8; KEY_BYTES]> {
    let path = state_root.join(name);
    if !path.exists() {
        create(state_root, name, &path)?;
    }
    let file = fs::File::open(&path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata()?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(Error::SecretExposed(name.to_owned()));
        }
    }
    let mut bytes = Vec::with_capacity(KEY_BYTES);
    file.take(KEY_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    bytes
        .try_into()
        .map_err(|_| Error::Corrupt(format!("{name} has the wrong length")))
}

/// Writes a fresh random key to a private temporary file and links it into place; when another process won the
/// race, its key stands and this one is discarded.
fn create(dir: &Path, name: &str, path: &Path) -> Result<()> {
    let mut key = [0u8; KEY_BYTES];
    let mut nonce = [0u8; 8];
    rand::rngs::SysRng
        .try_fill_bytes(&mut key)
        .and_then(|()| rand::rngs::SysRng.try_fill_bytes(&mut nonce))
        .map_err(|_| Error::Rng)?;
    let tmp = dir.join(format!("{name}.{}.tmp", hex::encode(nonce)));
    {
        let mut f = create_private_file(&tmp)?;
        f.write_all(&key)?;
        f.sync_all()?;
    }
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_cannot_be_shifted_between_each_other() {
        let key = SealKey([7; KEY_BYTES]);
        let a = key.seal("d", &[Field::Text("ab"), Field::Text("c")]);
        let b = key.seal("d", &[Field::Text("a"), Field::Text("bc")]);
        assert_ne!(a, b);
        let none = key.seal("d", &[Field::OptText(None)]);
        let empty = key.seal("d", &[Field::OptText(Some(""))]);
        assert_ne!(none, empty);
        assert_ne!(key.seal("x", &[]), key.seal("y", &[]));
        assert!(key.verify("d", &[Field::Text("ab"), Field::Text("c")], &a));
        assert!(!key.verify("d", &[Field::Text("ab"), Field::Text("c")], "zz"));
    }

    #[cfg(unix)]
    #[test]
    fn key_is_created_private_once_and_a_readable_key_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let first = SealKey::load_or_create(dir.path()).unwrap();
        let again = SealKey::load_or_create(dir.path()).unwrap();
        assert_eq!(first.0, again.0);
        let path = dir.path().join(KEY_FILE);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            SealKey::load_or_create(dir.path()),
            Err(Error::SecretExposed(_))
        ));
    }
}
