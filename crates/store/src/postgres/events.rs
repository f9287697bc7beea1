//! Reporting events on PostgreSQL, with the rules of the SQLite store (`events`, `report`): metadata only,
//! token fields sanitised as they are stored, retention, export, and reports aggregated by the same code.

use super::pool::{col, Tx};
use crate::error::{Error, Result};
use crate::events::{name, token, Decision, ReportEvent, Retention};
use crate::report::{GroupBy, Groups, Report};
use crate::time::Timestamp;

/// See `ReportStore::record_events`.
pub(crate) fn record(tx: &mut Tx<'_>, ns: &str, events: &[ReportEvent]) -> Result<()> {
    let ms = |v: Option<u64>| v.map(|d| i64::try_from(d).unwrap_or(i64::MAX));
    for e in events {
        tx.execute(
            "INSERT INTO report_events (ns, time_ms, trace_id, profile, server, tool, operation, decision,
                                        reason_code, outcome, duration_ms, error_class, principal, wait_ms, rule)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            &[
                &ns,
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
            ],
        )?;
    }
    Ok(())
}

/// See `ReportStore::apply_retention`.
pub(crate) fn retain(
    tx: &mut Tx<'_>,
    ns: &str,
    retention: &Retention,
    now: Timestamp,
) -> Result<u64> {
    let mut removed = 0;
    if let Some(days) = retention.max_age_days {
        removed += tx.execute(
            "DELETE FROM report_events WHERE ns = $1 AND time_ms < $2",
            &[&ns, &now.minus_days(days).as_millis()],
        )?;
    }
    if let Some(max) = retention.max_events {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        removed += tx.execute(
            "DELETE FROM report_events WHERE ns = $1 AND id NOT IN
               (SELECT id FROM report_events WHERE ns = $1 ORDER BY time_ms DESC, id DESC LIMIT $2)",
            &[&ns, &max],
        )?;
    }
    Ok(removed)
}

/// See `ReportStore::event_count`.
pub(crate) fn count(tx: &Tx<'_>, ns: &str) -> Result<u64> {
    let n: i64 = col(
        &tx.one("SELECT COUNT(*) FROM report_events WHERE ns = $1", &[&ns])?,
        0,
    )?;
    Ok(n.max(0) as u64)
}

/// See `ReportStore::export_events`.
pub(crate) fn export(
    tx: &Tx<'_>,
    ns: &str,
    since: Option<Timestamp>,
    limit: u64,
) -> Result<Vec<ReportEvent>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let since = since.map_or(i64::MIN, Timestamp::as_millis);
    let rows = tx.query(
        "SELECT time_ms, trace_id, profile, server, tool, operation, decision, reason_code, outcome,
                duration_ms, error_class, principal, wait_ms, rule
           FROM (SELECT * FROM report_events WHERE ns = $1 AND time_ms >= $2
                 ORDER BY time_ms DESC, id DESC LIMIT $3) newest
          ORDER BY time_ms, id",
        &[&ns, &since, &limit],
    )?;
    let ms = |v: Option<i64>| v.map(|d| u64::try_from(d).unwrap_or(0));
    rows.iter()
        .map(|r| {
            let decision = match col::<&str>(r, 6)? {
                "allow" => Decision::Allow,
                "ask" => Decision::Ask,
                "deny" => Decision::Deny,
                other => {
                    return Err(Error::Corrupt(format!(
                        "reporting event decision {other:?}"
                    )))
                }
            };
            Ok(ReportEvent {
                time: Timestamp::from_millis(col(r, 0)?),
                trace_id: col(r, 1)?,
                profile: col(r, 2)?,
                server: col(r, 3)?,
                tool: col(r, 4)?,
                operation: col(r, 5)?,
                decision,
                reason_code: col(r, 7)?,
                outcome: col(r, 8)?,
                duration_ms: ms(col(r, 9)?),
                error_class: col(r, 10)?,
                principal: col(r, 11)?,
                wait_ms: ms(col(r, 12)?),
                rule: col(r, 13)?,
            })
        })
        .collect()
}

/// See `ReportStore::report`.
pub(crate) fn report(
    tx: &Tx<'_>,
    ns: &str,
    group_by: GroupBy,
    since: Option<Timestamp>,
) -> Result<Report> {
    let sql = format!(
        "SELECT {}, outcome, reason_code, duration_ms, wait_ms FROM report_events
         WHERE ns = $1 AND time_ms >= $2",
        group_by.key_sql()
    );
    let since_ms = since.map_or(i64::MIN, Timestamp::as_millis);
    let mut groups = Groups::default();
    for r in tx.query(&sql, &[&ns, &since_ms])? {
        groups.add(
            col(&r, 0)?,
            col(&r, 1)?,
            col(&r, 2)?,
            col(&r, 3)?,
            col(&r, 4)?,
        );
    }
    Ok(groups.into_report(group_by, since))
}
