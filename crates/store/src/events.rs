//! Metadata-only reporting events: recording, retention and export.
//!
//! An event says who called what, how it was decided and how it went — never with what
//! arguments or what result. The table has no column for payloads, and free-text fields
//! that could smuggle content (reason codes, error classes, operations) must be short
//! tokens or are replaced by `INVALID`. Aggregation lives in `report`.

use rusqlite::params;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::handle::Store;
use crate::time::Timestamp;

/// Cap on name-like fields (trace id, profile, server, tool, rule).
const MAX_NAME_CHARS: usize = 128;
/// Cap on token fields (operation, reason code, error class, outcome).
const MAX_TOKEN_CHARS: usize = 64;
/// Stored in place of a token field that is not a token, so text never leaks through it.
const INVALID_TOKEN: &str = "INVALID";

/// The policy decision the event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Allowed by policy.
    Allow,
    /// Held for human approval.
    Ask,
    /// Denied by policy.
    Deny,
}

impl Decision {
    /// The stored spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// One reporting event. Construct it with only metadata; there is nowhere to put payloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportEvent {
    /// When the call was decided or finished.
    pub time: Timestamp,
    /// Lifecycle correlation id.
    pub trace_id: String,
    /// Policy profile in force.
    pub profile: String,
    /// Who the front end authenticated as the caller; `None` on stdio.
    pub principal: Option<String>,
    /// Upstream server (or `toolgate` for built-in tools).
    pub server: String,
    /// Tool name.
    pub tool: String,
    /// Normalised operation, e.g. `fs.read`.
    pub operation: String,
    /// Policy decision.
    pub decision: Decision,
    /// Stable reason code of the decision, e.g. `RULE_ALLOW`.
    pub reason_code: String,
    /// The rule that decided, as the user wrote it and where (`Read(**/.env) at toolgate.json:28`); `None` when
    /// no rule did. Policy text, never the call's.
    #[serde(default)]
    pub rule: Option<String>,
    /// Outcome token; `SUCCEEDED` counts as success in reports, anything else does not.
    pub outcome: String,
    /// The call's whole time, from first sight to its answer, when it has one (a wait for a human included).
    pub duration_ms: Option<u64>,
    /// The part of `duration_ms` spent waiting for a human (held for approval, or asked through the client), when
    /// the call waited for one; reports show it apart from the time toolgate and the tool took.
    #[serde(default)]
    pub wait_ms: Option<u64>,
    /// Class of error (a token such as `TIMEOUT`), never an error message.
    pub error_class: Option<String>,
}

/// The outcome token reports count as a success.
pub const OUTCOME_SUCCEEDED: &str = "SUCCEEDED";

/// How long reporting events are kept. Both limits apply when both are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retention {
    /// Delete events older than this many days.
    pub max_age_days: Option<u32>,
    /// Keep at most this many of the newest events.
    pub max_events: Option<u64>,
}

impl Retention {
    /// toolgate's default: reporting keeps metadata only, and not forever (30 days and 100,000 events, whichever
    /// is less).
    pub const DEFAULT: Retention = Retention {
        max_age_days: Some(30),
        max_events: Some(100_000),
    };
}

/// The columns an event fills, in the order `bind_event` binds them.
const EVENT_COLUMNS: &str =
    "time_ms, trace_id, profile, server, tool, operation, decision, reason_code, outcome, \
                             duration_ms, error_class, principal, wait_ms, rule";
/// Parameters per event.
const EVENT_PARAMS: usize = 14;
/// Events per multi-row insert: a batch pays a statement's reset, binding and start once for this many rows.
const EVENTS_PER_INSERT: usize = 16;

/// `INSERT … VALUES (…), …` for `rows` events.
fn insert_sql(rows: usize) -> String {
    let row = format!("({})", vec!["?"; EVENT_PARAMS].join(", "));
    format!(
        "INSERT INTO report_events ({EVENT_COLUMNS}) VALUES {}",
        vec![row; rows].join(", ")
    )
}

/// Binds `e`, sanitised, as the row whose first parameter is `first` (1-based).
fn bind_event(
    stmt: &mut rusqlite::CachedStatement<'_>,
    first: usize,
    e: &ReportEvent,
) -> Result<()> {
    let ms = |v: Option<u64>| v.map(|d| i64::try_from(d).unwrap_or(i64::MAX));
    let values: [&dyn rusqlite::ToSql; EVENT_PARAMS] = [
        &e.time.as_millis(),
        &name(&e.trace_id),
        &name(&e.profile),
        &name(&e.server),
        &name(&e.tool),
        &token(&e.operation),
        &e.decision.as_str(),
        &token(&e.reason_code),
        &token(&e.outcome),
        &ms(e.duration_ms),
        &e.error_class.as_deref().map(token),
        &e.principal.as_deref().map(name),
        &ms(e.wait_ms),
        &e.rule.as_deref().map(name),
    ];
    for (i, value) in values.into_iter().enumerate() {
        stmt.raw_bind_parameter(first + i, value)?;
    }
    Ok(())
}

/// One sanitised insert; `conn` is the store's connection or a transaction on it.
pub(crate) fn insert_event(conn: &rusqlite::Connection, e: &ReportEvent) -> Result<()> {
    insert_events(conn, std::slice::from_ref(e))
}

/// Sanitised inserts of `events`, in order: `EVENTS_PER_INSERT` rows per statement, then one per statement for
/// the rest. Both statements are cached: parsing one for every event cost more than inserting it.
pub(crate) fn insert_events(conn: &rusqlite::Connection, events: &[ReportEvent]) -> Result<()> {
    static MANY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    static ONE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let mut chunks = events.chunks_exact(EVENTS_PER_INSERT);
    for chunk in &mut chunks {
        let mut stmt = conn.prepare_cached(MANY.get_or_init(|| insert_sql(EVENTS_PER_INSERT)))?;
        for (i, e) in chunk.iter().enumerate() {
            bind_event(&mut stmt, 1 + i * EVENT_PARAMS, e)?;
        }
        stmt.raw_execute()?;
    }
    for e in chunks.remainder() {
        let mut stmt = conn.prepare_cached(ONE.get_or_init(|| insert_sql(1)))?;
        bind_event(&mut stmt, 1, e)?;
        stmt.raw_execute()?;
    }
    Ok(())
}

impl Store {
    /// Appends one event, capping and sanitising its fields.
    pub fn record_event(&mut self, e: &ReportEvent) -> Result<()> {
        insert_event(&self.conn, e)
    }

    /// Appends several events in one transaction: one commit (and one sync) for the whole batch, which is what
    /// a gateway writing behind its calls wants.
    pub fn record_events(&mut self, events: &[ReportEvent]) -> Result<()> {
        let tx = self.conn.transaction()?;
        insert_events(&tx, events)?;
        tx.commit()?;
        Ok(())
    }

    /// Deletes events beyond the retention limits; returns how many went.
    pub fn apply_retention(&mut self, retention: &Retention, now: Timestamp) -> Result<u64> {
        let tx = self.conn.transaction()?;
        let mut removed = 0u64;
        if let Some(days) = retention.max_age_days {
            removed += tx.execute(
                "DELETE FROM report_events WHERE time_ms < ?1",
                [now.minus_days(days).as_millis()],
            )? as u64;
        }
        if let Some(max) = retention.max_events {
            let max = i64::try_from(max).unwrap_or(i64::MAX);
            removed += tx.execute(
                "DELETE FROM report_events WHERE id NOT IN
                   (SELECT id FROM report_events ORDER BY time_ms DESC, id DESC LIMIT ?1)",
                [max],
            )? as u64;
        }
        tx.commit()?;
        Ok(removed)
    }

    /// The newest `limit` events at or after `since` (all when `None`), oldest first, each as it was stored
    /// (capped and sanitised): what an export writes out.
    pub fn export_events(&self, since: Option<Timestamp>, limit: u64) -> Result<Vec<ReportEvent>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self.conn.prepare(
            "SELECT time_ms, trace_id, profile, server, tool, operation, decision, reason_code, outcome,
                    duration_ms, error_class, principal, wait_ms, rule
               FROM (SELECT * FROM report_events WHERE time_ms >= ?1
                     ORDER BY time_ms DESC, id DESC LIMIT ?2)
              ORDER BY time_ms, id",
        )?;
        let since_ms = since.map_or(i64::MIN, Timestamp::as_millis);
        let mut rows = stmt.query(params![since_ms, limit])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let decision: String = r.get(6)?;
            let decision = match decision.as_str() {
                "allow" => Decision::Allow,
                "ask" => Decision::Ask,
                "deny" => Decision::Deny,
                other => {
                    return Err(Error::Corrupt(format!(
                        "reporting event decision {other:?}"
                    )))
                }
            };
            let duration: Option<i64> = r.get(9)?;
            let wait: Option<i64> = r.get(12)?;
            out.push(ReportEvent {
                time: Timestamp::from_millis(r.get(0)?),
                trace_id: r.get(1)?,
                profile: r.get(2)?,
                server: r.get(3)?,
                tool: r.get(4)?,
                operation: r.get(5)?,
                decision,
                reason_code: r.get(7)?,
                outcome: r.get(8)?,
                duration_ms: duration.map(|d| u64::try_from(d).unwrap_or(0)),
                error_class: r.get(10)?,
                principal: r.get(11)?,
                wait_ms: wait.map(|w| u64::try_from(w).unwrap_or(0)),
                rule: r.get(13)?,
            });
        }
        Ok(out)
    }

    /// Number of stored reporting events.
    pub fn event_count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM report_events", [], |r| r.get(0))?;
        Ok(n as u64)
    }
}

/// Truncates a name-like field to its first `MAX_NAME_CHARS` characters.
pub(crate) fn name(s: &str) -> &str {
    match s.char_indices().nth(MAX_NAME_CHARS) {
        Some((end, _)) => &s[..end],
        None => s,
    }
}

/// Keeps a token field only if it looks like a token: ASCII letters, digits, `_ . : -`.
pub(crate) fn token(s: &str) -> &str {
    let ok = !s.is_empty()
        && s.len() <= MAX_TOKEN_CHARS
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
    if ok {
        s
    } else {
        INVALID_TOKEN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_in_token_fields_is_replaced() {
        assert_eq!(token("RULE_DENY"), "RULE_DENY");
        assert_eq!(token("fs.read"), "fs.read");
        assert_eq!(token("password is hunter2"), INVALID_TOKEN);
        assert_eq!(token(""), INVALID_TOKEN);
        assert_eq!(token(&"A".repeat(65)), INVALID_TOKEN);
    }
}
