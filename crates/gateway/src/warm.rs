//! What the first governed call of a process would otherwise build while its caller waits: the audit's
//! redaction rules (every record's arguments and result pass through them) and jsonschema's validators of the
//! meta-schemas a tool's `inputSchema` is checked against when it is compiled — 10 to 30 ms of a fresh
//! session's first call. They are built once per process on a thread of their own as the gateway starts, while
//! its upstreams start. A call that comes sooner waits for the same build (each sits behind a `OnceLock`);
//! nothing is built twice and nothing is skipped.

use std::sync::Once;

/// Starts the build once per process; later gateways of the process (tests, a reload) find it done.
pub(crate) fn start() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("toolgate-warm".into())
            .spawn(|| {
                audit::prepare_redaction();
                crate::guard::prepare_schemas();
            });
        if let Err(e) = spawned {
            tracing::debug!(error = %e, "nothing built ahead; the first call builds what it needs");
        }
    });
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    /// Each test runs in a process of its own (nextest), so nothing but `start` has built the rules here.
    #[test]
    fn starting_builds_the_redaction_rules_before_any_record_needs_them() {
        super::start();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !audit::redaction_prepared() {
            assert!(Instant::now() < deadline, "the rules were not built ahead");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
