//! Identifiers toolgate mints: trace ids that follow one call through decision, approval and execution, and
//! session ids. Neither is a secret (approval request ids, which are, come from the store's OS random source);
//! they only need to be unique.

use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn unique_hex(len: usize) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // The process id is read once: asking the kernel for it was a system call on every call.
    static PID: OnceLock<u32> = OnceLock::new();
    let pid = PID.get_or_init(std::process::id);
    let digest = Sha256::digest(format!("{nanos}:{pid}:{n}").as_bytes());
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
