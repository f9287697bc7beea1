//! Names exposed to clients for upstream tools and prompts.
//!
//! `<server><separator><name>` by default (`files__read_file`); unprefixed when configured; and always within
//! `^[A-Za-z0-9_-]{1,64}$`, the strictest rule among model APIs. A name outside it is mapped deterministically:
//! every other character becomes `_`, the result is cut to 55 characters, and `_` plus the first 8 hex digits of
//! the SHA-256 of the unmapped name are appended (`files__weird.name` → `files__weird_name_3f2a…`). The gateway
//! keeps the table from exposed to original name, so the mapping is reversed by lookup, and two sources that map
//! to the same name are refused at start-up.

use sha2::{Digest, Sha256};

const MAX_LEN: usize = 64;
const HASH_HEX: usize = 8;

/// Whether every model API accepts `name` as a tool name.
pub fn is_portable(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name a client sees for `name` of `server`.
pub fn expose(server: &str, name: &str, separator: &str, prefix: bool) -> String {
    let raw = if prefix {
        format!("{server}{separator}{name}")
    } else {
        name.to_owned()
    };
    if is_portable(&raw) {
        return raw;
    }
    let cleaned: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_LEN - HASH_HEX - 1)
        .collect();
    let digest = hex::encode(Sha256::digest(raw.as_bytes()));
    format!("{cleaned}_{}", &digest[..HASH_HEX])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_are_prefixed_unchanged() {
        assert_eq!(expose("files", "read_file", "__", true), "files__read_file");
        assert_eq!(expose("files", "read_file", "__", false), "read_file");
        assert_eq!(expose("git", "status", "-", true), "git-status");
    }

    #[test]
    fn dotted_and_long_names_map_deterministically_into_the_portable_set() {
        let a = expose("fx", "weird.name", "__", true);
        assert!(a.starts_with("fx__weird_name_"), "{a}");
        assert!(is_portable(&a));
        assert_eq!(a, expose("fx", "weird.name", "__", true));
        let long = expose("fx", &"y".repeat(100), "__", true);
        assert!(is_portable(&long) && long.len() == 64, "{long}");
        // Names that differ only in what the mapping removes stay distinct.
        assert_ne!(
            expose("fx", "a.b", "__", true),
            expose("fx", "a:b", "__", true)
        );
    }

    #[test]
    fn unicode_lookalike_names_are_mapped_not_passed_through() {
        let cyrillic = expose("fx", "reаd_file", "__", true); // U+0430
        assert!(is_portable(&cyrillic));
        assert_ne!(cyrillic, "fx__read_file");
    }
}
