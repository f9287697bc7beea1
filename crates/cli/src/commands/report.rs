//! `toolgate report`: aggregate tool use from the workspace's metadata-only reporting events.
//!
//! Counts, success rate, top reason codes and nearest-rank latency percentiles per server, tool, profile or
//! decision, as a table, JSON or CSV; a call's wait for a human (an `ask`) is reported apart from its latency. The aggregation and the renderings (with their terminal and spreadsheet
//! escaping) are the store's; this file parses the arguments, `--since` among them, and prints. Reporting events
//! hold no arguments or results, so neither can a report.

use super::common::ConfigArgs;
use anyhow::Context;
use std::process::ExitCode;
use store::{GroupBy, ReportFormat, Timestamp};

/// Milliseconds per unit accepted in a relative `--since`.
const UNITS: [(char, i64); 5] = [
    ('s', 1_000),
    ('m', 60_000),
    ('h', 3_600_000),
    ('d', 86_400_000),
    ('w', 604_800_000),
];

/// Summarise tool use from the reporting events: counts, success rate, top reasons, p50/p95/p99 latency (the
/// calls' own time, toolgate's and the tool's), and apart from it how many calls waited for a human and how long
/// (wait_p50_ms, wait_p95_ms).
#[derive(clap::Args)]
pub struct Args {
    /// What each row of the report is.
    #[arg(long, value_enum, default_value = "tool")]
    group_by: Group,
    /// Only events at or after this: a span back from now (90s, 30m, 24h, 7d, 2w) or an RFC 3339 time
    /// (2026-11-30T00:00:00Z).
    #[arg(long, value_name = "DURATION|RFC3339", value_parser = parse_since)]
    since: Option<Since>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Group {
    /// By upstream server.
    Server,
    /// By server and tool.
    Tool,
    /// By policy profile.
    Profile,
    /// By policy decision (allow, ask, deny).
    Decision,
    /// By the rule that decided, as written in the config and where (`-`: the default decided).
    Rule,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    /// Aligned columns.
    Table,
    /// The whole report as pretty JSON.
    Json,
    /// CSV with a header row.
    Csv,
}

/// A `--since` value: relative spans are resolved against the clock when the report runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Since {
    /// This many milliseconds before now.
    Ago(i64),
    /// This instant.
    At(Timestamp),
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = args.config.load()?;
    let reporting = &config.reporting.enabled;
    if !reporting.value {
        // An empty report would otherwise look like no calls: say that none are being counted, and why.
        eprintln!(
            "reporting is off (from {}): the gateway keeps no reporting events for this config; turn it on with \
             \"tool_use_reporting\": {{\"enabled\": true}}",
            reporting.from
        );
    }
    let state = crate::runtime::state(&config)?;
    let since = args.since.map(Since::resolve);
    let (text, empty_table) = render(&state, args.group_by, since, args.format)?;
    print!("{text}");
    if empty_table {
        // Say where this looked: the workspace `serve` reports for may be another one.
        eprintln!(
            "no reporting events{} for {}",
            if since.is_some() {
                " in that period"
            } else {
                ""
            },
            crate::runtime::where_state_is(&state)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The report of `state`'s events grouped by `group_by` (a `--group-by` value) in `format` (a `--format`
/// value), as `run` prints it, and whether it is a table without rows.
pub(crate) fn rendered(
    state: &gateway::State,
    group_by: &str,
    since: Option<Timestamp>,
    format: &str,
) -> anyhow::Result<(String, bool)> {
    use clap::ValueEnum;
    let group = Group::from_str(group_by, true).map_err(|_| {
        anyhow::anyhow!("group_by {group_by:?} is not one of server, tool, profile, decision, rule")
    })?;
    let format = Format::from_str(format, true)
        .map_err(|_| anyhow::anyhow!("format {format:?} is not one of table, json, csv"))?;
    render(state, group, since, format)
}

fn render(
    state: &gateway::State,
    group: Group,
    since: Option<Timestamp>,
    format: Format,
) -> anyhow::Result<(String, bool)> {
    let group_by = match group {
        Group::Server => GroupBy::Server,
        Group::Tool => GroupBy::Tool,
        Group::Profile => GroupBy::Profile,
        Group::Decision => GroupBy::Decision,
        Group::Rule => GroupBy::Rule,
    };
    let report = state
        .store(|s| s.report(group_by, since))
        .context("cannot read the reporting events")?;
    let rendered = match format {
        Format::Table => ReportFormat::Table,
        Format::Json => ReportFormat::Json,
        Format::Csv => ReportFormat::Csv,
    };
    let text = report
        .render(rendered)
        .context("cannot render the report")?;
    Ok((
        text,
        report.rows.is_empty() && matches!(format, Format::Table),
    ))
}

impl Since {
    /// The instant it names, a span counted back from now.
    pub(crate) fn resolve(self) -> Timestamp {
        match self {
            Since::Ago(ms) => {
                Timestamp::from_millis(Timestamp::now().as_millis().saturating_sub(ms))
            }
            Since::At(t) => t,
        }
    }
}

/// Parses a `--since` value: a span back from now (`24h`, `7d`) or an RFC 3339 time.
pub(crate) fn parse_since(s: &str) -> Result<Since, String> {
    if let Some(ms) = parse_span(s) {
        return Ok(Since::Ago(ms));
    }
    if let Some(ms) = parse_rfc3339(s) {
        return Ok(Since::At(Timestamp::from_millis(ms)));
    }
    Err(format!(
        "{s:?} is neither a span (a whole number and s, m, h, d or w: 24h, 7d) nor an RFC 3339 time \
         (2026-11-30T00:00:00Z)"
    ))
}

/// `24h`, `7d`, … as milliseconds; `None` when it is not a span or would overflow.
fn parse_span(s: &str) -> Option<i64> {
    let unit = s.chars().last()?;
    let digits = s.strip_suffix(unit)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (_, per) = UNITS.iter().find(|(u, _)| *u == unit)?;
    digits.parse::<i64>().ok()?.checked_mul(*per)
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` as Unix milliseconds (fraction truncated to milliseconds). Written
/// out rather than pulled in from a date library for this one argument; it validates every field's range.
fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let at = |i: usize, allowed: &[u8]| b.get(i).is_some_and(|c| allowed.contains(c));
    if !(at(4, b"-") && at(7, b"-") && at(10, b"Tt ") && at(13, b":") && at(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if at(i, b".") {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        // Milliseconds from the first three digits, padded: ".5" is 500 ms.
        for k in 0..3 {
            millis = millis * 10 + if k < digits { num(i + 1 + k, 1)? } else { 0 };
        }
        i += 1 + digits;
    }
    let offset_minutes = match b.get(i..)? {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let minutes = oh * 60 + om;
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    // A leap second reads as the last ordinary second: the reporting clock has no leap seconds.
    let second = second.min(59);
    let days = days_from_civil(year, month, day);
    let local = ((days * 24 + hour) * 60 + minute) * 60 + second;
    Some((local - offset_minutes * 60) * 1000 + millis)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm, the inverse of the one the
/// store formats timestamps with).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        assert_eq!(parse_since("24h"), Ok(Since::Ago(86_400_000)));
        assert_eq!(parse_since("7d"), Ok(Since::Ago(7 * 86_400_000)));
        assert_eq!(parse_since("90s"), Ok(Since::Ago(90_000)));
        assert_eq!(parse_since("2w"), Ok(Since::Ago(2 * 604_800_000)));
        for bad in ["h", "24", "-1h", "1.5h", "24x", "", "99999999999999999999d"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rfc3339_times_round_trip_through_the_store_format() {
        for ms in [0, 1_709_210_096_789, 1_796_000_523_004, -86_400_000] {
            let text = Timestamp::from_millis(ms).to_rfc3339();
            assert_eq!(parse_rfc3339(&text), Some(ms), "{text}");
        }
    }

    #[test]
    fn rfc3339_offsets_fractions_and_ranges() {
        let utc = parse_rfc3339("2026-11-30T01:02:03Z").unwrap();
        assert_eq!(parse_rfc3339("2026-11-30T03:02:03+02:00"), Some(utc));
        assert_eq!(parse_rfc3339("2026-11-29T23:32:03-01:30"), Some(utc));
        assert_eq!(parse_rfc3339("2026-11-30t01:02:03.5z"), Some(utc + 500));
        assert_eq!(
            parse_rfc3339("2026-11-30 01:02:03.123456Z"),
            Some(utc + 123)
        );
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00Z"),
            Some(1_709_164_800_000)
        );
        for bad in [
            "2026-11-30",
            "2026-11-30T01:02:03",
            "2025-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T01:02:03.Z",
            "2026-11-30T01:02:03+0200",
            "2026-11-30T01:02:03Zjunk",
            "２026-11-30T01:02:03Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
