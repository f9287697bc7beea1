//! Session grants: "in this session, this tool, with this exact definition, may run calls of this scope".
//!
//! A grant is keyed by (session id, tool identity, definition hash, scope) and sealed like an approval row; a
//! lookup with any other hash or scope is not a grant, so a tool that changes its definition mid-session loses
//! its grant, and a grant given for one set of arguments covers no other. The scope is an opaque string the
//! gateway derives from what the human saw (for example the canonical arguments); this module compares it
//! byte for byte and never widens it. It does not decide when a grant is created and sets no expiry of its own.

use rusqlite::params;

use crate::error::Result;
use crate::handle::Store;
use crate::seal::Field;
use crate::time::Timestamp;

/// Separates grant seals from request seals.
pub(crate) const DOMAIN: &str = "toolgate session grant v2";

impl Store {
    /// Records (or renews) the grant of `scope` for `tool` in `session_id`, bound to `definition_sha256`.
    pub fn grant_session(
        &mut self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        scope: &str,
        now: Timestamp,
    ) -> Result<()> {
        let granted_at = now.as_millis();
        let seal = self.key.seal(
            DOMAIN,
            &grant_fields(
                &self.namespace_id,
                session_id,
                tool,
                definition_sha256,
                scope,
                granted_at,
            ),
        );
        self.conn.execute(
            "INSERT INTO session_grants (session_id, tool, definition_sha256, scope, granted_at, seal)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (session_id, tool, definition_sha256, scope)
             DO UPDATE SET granted_at = excluded.granted_at, seal = excluded.seal",
            params![session_id, tool, definition_sha256, scope, granted_at, seal],
        )?;
        Ok(())
    }

    /// True only if `session_id` holds an authentic grant for `tool` at exactly `definition_sha256` and
    /// exactly `scope`. A grant row whose seal does not verify is no grant.
    pub fn session_grant_valid(
        &self,
        session_id: &str,
        tool: &str,
        definition_sha256: &str,
        scope: &str,
    ) -> Result<bool> {
        let mut stmt = self.conn.prepare(
            "SELECT granted_at, seal FROM session_grants
             WHERE session_id = ?1 AND tool = ?2 AND definition_sha256 = ?3 AND scope = ?4",
        )?;
        let mut rows = stmt.query(params![session_id, tool, definition_sha256, scope])?;
        while let Some(r) = rows.next()? {
            let (granted_at, seal): (i64, String) = (r.get(0)?, r.get(1)?);
            let fields = grant_fields(
                &self.namespace_id,
                session_id,
                tool,
                definition_sha256,
                scope,
                granted_at,
            );
            if self.key.verify(DOMAIN, &fields, &seal) {
                return Ok(true);
            }
        }
        Ok(false)
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

pub(crate) fn grant_fields<'a>(
    namespace_id: &'a str,
    session_id: &'a str,
    tool: &'a str,
    definition_sha256: &'a str,
    scope: &'a str,
    granted_at: i64,
) -> [Field<'a>; 6] {
    [
        Field::Text(namespace_id),
        Field::Text(session_id),
        Field::Text(tool),
        Field::Text(definition_sha256),
        Field::Text(scope),
        Field::Int(granted_at),
    ]
}
