//! Session grants: "in this session, this tool with this exact definition may run".
//!
//! A grant is keyed by (session id, tool identity) and remembers the tool-definition hash
//! it was given for; a lookup with any other hash is not a grant, so a tool that changes
//! its definition mid-session loses its grant. This module does not decide when a grant is
//! created (that is the approval flow in the gateway) and sets no expiry of its own.

use rusqlite::{params, OptionalExtension};

use crate::error::Result;
use crate::handle::Store;
use crate::time::Timestamp;

impl Store {
    /// Records (or replaces) the grant for `tool` in `session_id`, bound to `definition_sha256`.
    pub fn grant_session(
        &mut self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        now: Timestamp,
    ) -> Result<()> {
        self.conn.execute(
            "INSERT INTO session_grants (session_id, tool, definition_sha256, granted_at)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (session_id, tool)
             DO UPDATE SET definition_sha256 = excluded.definition_sha256,
                           granted_at = excluded.granted_at",
            params![session_id, tool, definition_sha256, now.as_millis()],
        )?;
        Ok(())
    }

    /// True only if `session_id` holds a grant for `tool` at exactly `definition_sha256`.
    pub fn session_grant_valid(
        &self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
    ) -> Result<bool> {
        let stored: Option<String> = self
            .conn
            .query_row(
                "SELECT definition_sha256 FROM session_grants WHERE session_id = ?1 AND tool = ?2",
                params![session_id, tool],
                |r| r.get(0),
            )
            .optional()?;
        Ok(stored.is_some_and(|h| h == definition_sha256))
    }

    /// Removes every grant of `session_id` (session end); returns how many went.
    pub fn revoke_session(&mut self, session_id: &str) -> Result<u64> {
        let n = self.conn.execute(
            "DELETE FROM session_grants WHERE session_id = ?1",
            [session_id],
        )?;
        Ok(n as u64)
    }
}
