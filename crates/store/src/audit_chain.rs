//! The audit chain's witness: the newest head the gateway saw written and every anchor a prune or recovery
//! wrote. The audit log cannot prove where its own end is, nor that its first-line anchor is genuine; these rows
//! can, because they live in the database rather than beside the log as text an editor could cut. The store only
//! keeps them; comparing them with the log is the audit crate's job.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use crate::error::Result;
use crate::events::ReportEvent;
use crate::handle::Store;
use crate::time::Timestamp;

/// The newest audit event recorded as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditHead {
    /// Its sequence number.
    pub seq: u64,
    /// Its hash.
    pub hash: String,
}

/// An anchor record written at the start of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditAnchor {
    /// The anchor record's own hash.
    pub hash: String,
    /// The sequence number the first event after it carries.
    pub next_seq: u64,
    /// The hash that event names as `prev`.
    pub prev: String,
    /// When it was written.
    pub created_at: Timestamp,
}

/// One audit chain's witness among several a store keeps for a namespace (replicas sharing a database each write
/// a chain of their own, `WitnessStore::audit_chains`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainWitness {
    /// The chain's name: the replica that writes it (`""` for a store's one chain).
    pub chain: String,
    /// Its recorded head, if any event was recorded as written.
    pub head: Option<AuditHead>,
    /// Its anchors, oldest first.
    pub anchors: Vec<AuditAnchor>,
}

impl Store {
    /// The recorded head, if any event was ever recorded as written.
    pub fn audit_head(&self) -> Result<Option<AuditHead>> {
        let row = self
            .conn
            .query_row("SELECT seq, hash FROM audit_head WHERE id = 1", [], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .optional()?;
        Ok(row.map(|(seq, hash)| AuditHead {
            seq: u64::try_from(seq).unwrap_or(0),
            hash,
        }))
    }

    /// Moves the recorded head forward to `head`; a head at or before the recorded one changes nothing, so
    /// writers in several processes that record out of order never move it back.
    pub fn advance_audit_head(&mut self, head: &AuditHead, now: Timestamp) -> Result<()> {
        advance_head(&self.conn, head, now)
    }

    /// Reporting events and the witnessed head in one transaction: one commit, one sync.
    pub fn record_written(
        &mut self,
        events: &[ReportEvent],
        head: &AuditHead,
        now: Timestamp,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        crate::events::insert_events(&tx, events)?;
        advance_head(&tx, head, now)?;
        tx.commit()?;
        Ok(())
    }

    /// Records an anchor about to start the log.
    pub fn record_audit_anchor(
        &mut self,
        hash: &str,
        next_seq: u64,
        prev: &str,
        now: Timestamp,
    ) -> Result<()> {
        let next = i64::try_from(next_seq).unwrap_or(i64::MAX);
        self.conn.execute(
            "INSERT OR IGNORE INTO audit_anchors (hash, next_seq, prev, created_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![hash, next, prev, now.as_millis()],
        )?;
        Ok(())
    }

    /// Every anchor recorded, oldest first.
    pub fn audit_anchors(&self) -> Result<Vec<AuditAnchor>> {
        let mut stmt = self.conn.prepare(
            "SELECT hash, next_seq, prev, created_at FROM audit_anchors ORDER BY created_at, hash",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(AuditAnchor {
                hash: r.get(0)?,
                next_seq: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                prev: r.get(2)?,
                created_at: Timestamp::from_millis(r.get(3)?),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// Moves the recorded head forward to `head`; a head at or before the recorded one changes nothing.
fn advance_head(conn: &rusqlite::Connection, head: &AuditHead, now: Timestamp) -> Result<()> {
    let seq = i64::try_from(head.seq).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT INTO audit_head (id, seq, hash, updated_at) VALUES (1, ?1, ?2, ?3)
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash,
                                        updated_at = excluded.updated_at
         WHERE excluded.seq > audit_head.seq",
    )?
    .execute(params![seq, head.hash, now.as_millis()])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let ns = crate::Namespace::open(&dir.path().join("state"), &ws).unwrap();
        let s = Store::open(&ns).unwrap();
        (dir, s)
    }

    #[test]
    fn head_only_moves_forward() {
        let (_d, mut s) = store();
        assert_eq!(s.audit_head().unwrap(), None);
        let at = |seq: u64, hash: &str| AuditHead {
            seq,
            hash: hash.into(),
        };
        s.advance_audit_head(&at(5, "e"), Timestamp::from_millis(1))
            .unwrap();
        s.advance_audit_head(&at(3, "c"), Timestamp::from_millis(2))
            .unwrap();
        assert_eq!(s.audit_head().unwrap(), Some(at(5, "e")));
        s.advance_audit_head(&at(6, "f"), Timestamp::from_millis(3))
            .unwrap();
        assert_eq!(s.audit_head().unwrap(), Some(at(6, "f")));
    }

    #[test]
    fn anchors_are_kept_once_each() {
        let (_d, mut s) = store();
        for _ in 0..2 {
            s.record_audit_anchor("a1", 4, "p", Timestamp::from_millis(1))
                .unwrap();
        }
        s.record_audit_anchor("a2", 9, "q", Timestamp::from_millis(2))
            .unwrap();
        let hashes: Vec<_> = s
            .audit_anchors()
            .unwrap()
            .into_iter()
            .map(|a| a.hash)
            .collect();
        assert_eq!(hashes, ["a1", "a2"]);
    }
}
