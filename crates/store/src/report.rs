//! Aggregate reports over reporting events: counts, success rate, top reason codes and
//! latency percentiles, grouped by server, tool, profile, decision or the rule that decided.
//!
//! A call that asked a human has two times: the wait for the human and the rest (toolgate and
//! the tool). Latency percentiles are of the rest, so a human who takes a minute to answer does
//! not pass for a slow gateway; the waits have percentiles of their own, over the calls that
//! waited. An event recorded before waits were recorded counts whole as latency.
//!
//! Percentiles use the nearest-rank method: for `n` sorted durations the p-th percentile
//! is the value at 1-based rank `ceil(p / 100 * n)`. It always returns an observed value
//! (no interpolation), which is what an operator expects to find in the raw data. Only
//! events that carry a duration count towards percentiles. Rendering is in `report_render`.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::Serialize;

use crate::error::Result;
use crate::events::OUTCOME_SUCCEEDED;
use crate::handle::Store;
use crate::time::Timestamp;

/// How many reason codes each row lists.
const TOP_REASONS: usize = 3;

/// The grouping key of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// By upstream server.
    Server,
    /// By `server/tool`, so equal tool names on different servers stay apart.
    Tool,
    /// By policy profile.
    Profile,
    /// By policy decision.
    Decision,
    /// By the rule that decided, as the user wrote it and where (`Read(**/.env) at toolgate.json:28`); `-` for
    /// calls no rule decided (the default did).
    Rule,
}

impl GroupBy {
    /// The spelling used on the command line and in output.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Tool => "tool",
            Self::Profile => "profile",
            Self::Decision => "decision",
            Self::Rule => "rule",
        }
    }
}

impl GroupBy {
    /// The SQL expression of the group key (the same in SQLite and PostgreSQL).
    pub(crate) const fn key_sql(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Tool => "server || '/' || tool",
            Self::Profile => "profile",
            Self::Decision => "decision",
            Self::Rule => "COALESCE(rule, '-')",
        }
    }
}

impl FromStr for GroupBy {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "server" => Ok(Self::Server),
            "tool" => Ok(Self::Tool),
            "profile" => Ok(Self::Profile),
            "decision" => Ok(Self::Decision),
            "rule" => Ok(Self::Rule),
            other => Err(format!(
                "unknown group {other:?}: expected server, tool, profile, decision or rule"
            )),
        }
    }
}

/// A reason code and how often it occurred in a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReasonCount {
    /// The reason code.
    pub reason_code: String,
    /// Occurrences.
    pub count: u64,
}

/// One group of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportRow {
    /// The group's key.
    pub key: String,
    /// Events in the group.
    pub count: u64,
    /// Events whose outcome is `SUCCEEDED`.
    pub succeeded: u64,
    /// `succeeded / count`, in `[0, 1]`.
    pub success_rate: f64,
    /// The most frequent reason codes, most frequent first (ties by name).
    pub top_reasons: Vec<ReasonCount>,
    /// Nearest-rank 50th percentile of durations, if any event had one.
    pub p50_ms: Option<u64>,
    /// Nearest-rank 95th percentile.
    pub p95_ms: Option<u64>,
    /// Nearest-rank 99th percentile.
    pub p99_ms: Option<u64>,
    /// Events that waited for a human (held for approval, or asked through the client).
    pub waited: u64,
    /// Nearest-rank 50th percentile of those waits.
    pub wait_p50_ms: Option<u64>,
    /// Nearest-rank 95th percentile of those waits.
    pub wait_p95_ms: Option<u64>,
}

/// A whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The grouping used.
    pub group_by: GroupBy,
    /// Only events at or after this time were counted.
    pub since: Option<Timestamp>,
    /// Groups, largest first (ties by key).
    pub rows: Vec<ReportRow>,
}

/// Nearest-rank percentile of an ascending slice; `None` when it is empty.
pub fn percentile_nearest_rank(sorted: &[u64], p: u32) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    // ceil(p * n / 100) in integers, clamped to [1, n].
    let rank = (u64::from(p) * n).div_ceil(100).clamp(1, n);
    sorted.get((rank - 1) as usize).copied()
}

#[derive(Default)]
struct Acc {
    count: u64,
    succeeded: u64,
    reasons: BTreeMap<String, u64>,
    /// Each call's time without its wait for a human.
    durations: Vec<u64>,
    waits: Vec<u64>,
}

impl Store {
    /// Aggregates events at or after `since` (all events when `None`).
    pub fn report(&self, group_by: GroupBy, since: Option<Timestamp>) -> Result<Report> {
        let key_sql = group_by.key_sql();
        let sql = format!(
            "SELECT {key_sql}, outcome, reason_code, duration_ms, wait_ms FROM report_events
             WHERE time_ms >= ?1"
        );
        let since_ms = since.map_or(i64::MIN, Timestamp::as_millis);
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query([since_ms])?;
        let mut groups = Groups::default();
        while let Some(r) = rows.next()? {
            groups.add(
                r.get(0)?,
                &r.get::<_, String>(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
            );
        }
        Ok(groups.into_report(group_by, since))
    }
}

/// Events gathered by group, whichever backend read them.
#[derive(Default)]
pub(crate) struct Groups(BTreeMap<String, Acc>);

impl Groups {
    /// Counts one event of group `key`.
    pub(crate) fn add(
        &mut self,
        key: String,
        outcome: &str,
        reason: String,
        duration: Option<i64>,
        wait: Option<i64>,
    ) {
        let acc = self.0.entry(key).or_default();
        acc.count += 1;
        if outcome == OUTCOME_SUCCEEDED {
            acc.succeeded += 1;
        }
        *acc.reasons.entry(reason).or_default() += 1;
        let ms = |v: i64| u64::try_from(v).unwrap_or(0);
        let wait = wait.map(ms);
        if let Some(d) = duration {
            acc.durations.push(ms(d).saturating_sub(wait.unwrap_or(0)));
        }
        if let Some(w) = wait {
            acc.waits.push(w);
        }
    }

    /// The report: groups largest first (ties by key).
    pub(crate) fn into_report(self, group_by: GroupBy, since: Option<Timestamp>) -> Report {
        let mut out: Vec<ReportRow> = self.0.into_iter().map(|(k, a)| finish(k, a)).collect();
        out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        Report {
            group_by,
            since,
            rows: out,
        }
    }
}

fn finish(key: String, mut acc: Acc) -> ReportRow {
    acc.durations.sort_unstable();
    acc.waits.sort_unstable();
    let mut reasons: Vec<ReasonCount> = acc
        .reasons
        .into_iter()
        .map(|(reason_code, count)| ReasonCount { reason_code, count })
        .collect();
    // BTreeMap order is by name, and the sort is stable, so ties stay alphabetical.
    reasons.sort_by_key(|r| std::cmp::Reverse(r.count));
    reasons.truncate(TOP_REASONS);
    ReportRow {
        key,
        count: acc.count,
        succeeded: acc.succeeded,
        success_rate: if acc.count == 0 {
            0.0
        } else {
            acc.succeeded as f64 / acc.count as f64
        },
        top_reasons: reasons,
        p50_ms: percentile_nearest_rank(&acc.durations, 50),
        p95_ms: percentile_nearest_rank(&acc.durations, 95),
        p99_ms: percentile_nearest_rank(&acc.durations, 99),
        waited: acc.waits.len() as u64,
        wait_p50_ms: percentile_nearest_rank(&acc.waits, 50),
        wait_p95_ms: percentile_nearest_rank(&acc.waits, 95),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_matches_the_textbook_example() {
        // Wikipedia's nearest-rank example: 15 20 35 40 50.
        let v = [15, 20, 35, 40, 50];
        assert_eq!(percentile_nearest_rank(&v, 5), Some(15));
        assert_eq!(percentile_nearest_rank(&v, 30), Some(20));
        assert_eq!(percentile_nearest_rank(&v, 40), Some(20));
        assert_eq!(percentile_nearest_rank(&v, 50), Some(35));
        assert_eq!(percentile_nearest_rank(&v, 100), Some(50));
        assert_eq!(percentile_nearest_rank(&[], 50), None);
    }

    #[test]
    fn p99_of_hundred_is_the_99th_value() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_nearest_rank(&v, 50), Some(50));
        assert_eq!(percentile_nearest_rank(&v, 95), Some(95));
        assert_eq!(percentile_nearest_rank(&v, 99), Some(99));
    }

    #[test]
    fn group_by_parses() {
        assert_eq!("tool".parse::<GroupBy>(), Ok(GroupBy::Tool));
        assert!("model".parse::<GroupBy>().is_err());
    }
}
