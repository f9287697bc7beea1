//! Identifiers toolgate mints: trace ids that follow one call through decision, approval and execution, and
//! session ids. Neither is a secret (approval request ids, which are, come from the store's OS random source);
//! they only need to be unique.

use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// What makes this process's ids its own: the time it first minted one and its process id, read once (asking the
/// clock and the kernel on every call cost more than the hash).
fn process_seed() -> &'static [u8; 20] {
    static SEED: OnceLock<[u8; 20]> = OnceLock::new();
    SEED.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let mut seed = [0; 20];
        seed[..16].copy_from_slice(&nanos.to_le_bytes());
        seed[16..].copy_from_slice(&std::process::id().to_le_bytes());
        seed
    })
}

/// `len` hex digits of a hash over the process's seed and a counter: unique within the process by the counter,
/// across processes by the seed.
fn unique_hex(len: usize) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let digest = Sha256::new()
        .chain_update(process_seed())
        .chain_update(n.to_le_bytes())
        .finalize();
    let mut id = jsonrpc::to_hex(&digest[..len.div_ceil(2).min(digest.len())]);
    id.truncate(len);
    id
}

/// A trace id for one call, carried by its audit events, its approval request and its report event.
pub fn trace_id() -> String {
    unique_hex(24)
}

/// An id for one client connection (session grants are bound to it).
pub fn session_id() -> String {
    unique_hex(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_hex_of_their_length_and_never_repeat() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..20_000 {
            let (t, s) = (trace_id(), session_id());
            assert_eq!(t.len(), 24, "{t}");
            assert_eq!(s.len(), 16, "{s}");
            assert!(t.bytes().chain(s.bytes()).all(|b| b.is_ascii_hexdigit()));
            assert!(seen.insert(t.clone()), "a trace id came twice: {t}");
            assert!(seen.insert(s.clone()), "a session id came twice: {s}");
        }
    }
}
