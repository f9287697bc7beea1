//! Timestamps as UTC milliseconds since the Unix epoch, and their RFC 3339 rendering.
//!
//! The store never reads the clock on its own for decisions: every expiry or retention
//! check takes `now` from the caller so tests (and the gateway) control time. `now()` is
//! offered only as the production source for that argument.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A point in time, UTC milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

/// Milliseconds in one day, for "older than N days" arithmetic.
const DAY_MS: i64 = 86_400_000;

impl Timestamp {
    /// Wraps milliseconds since the epoch.
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// The current wall-clock time; a clock before 1970 reads as the epoch.
    pub fn now() -> Self {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Self(ms)
    }

    /// This time plus `ms` milliseconds, saturating.
    pub const fn plus_millis(self, ms: i64) -> Self {
        Self(self.0.saturating_add(ms))
    }

    /// This time minus `days` days, saturating.
    pub const fn minus_days(self, days: u32) -> Self {
        Self(self.0.saturating_sub(DAY_MS.saturating_mul(days as i64)))
    }

    /// RFC 3339 in UTC with millisecond precision, e.g. `2026-11-30T01:02:03.004Z`.
    pub fn to_rfc3339(self) -> String {
        let secs = self.0.div_euclid(1000);
        let ms = self.0.rem_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
            sod / 3600,
            (sod % 3600) / 60,
            sod % 60
        )
    }
}

impl std::fmt::Display for Timestamp {
    /// RFC 3339, as `to_rfc3339`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// Proleptic Gregorian date from days since 1970-01-01 (Howard Hinnant's algorithm),
/// written out here so the crate needs no date library for one formatting need.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_epoch_and_a_known_date() {
        assert_eq!(
            Timestamp::from_millis(0).to_rfc3339(),
            "1970-01-01T00:00:00.000Z"
        );
        // 2024-02-29T12:34:56.789Z, a leap day.
        assert_eq!(
            Timestamp::from_millis(1_709_210_096_789).to_rfc3339(),
            "2024-02-29T12:34:56.789Z"
        );
    }

    #[test]
    fn minus_days_is_whole_days() {
        let t = Timestamp::from_millis(10 * DAY_MS);
        assert_eq!(t.minus_days(3).as_millis(), 7 * DAY_MS);
    }
}
