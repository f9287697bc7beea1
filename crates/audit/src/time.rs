//! RFC 3339 timestamps for event records, from Unix milliseconds.
//!
//! Written out here so the crate needs no date library for one formatting need. The store
//! crate formats its own timestamps the same way; the audit stage does not depend on the
//! state stage, so it does not borrow that one. Canonical JSON and SHA-256 come from
//! `jsonrpc`, shared with the store and policy.

/// RFC 3339 UTC with milliseconds from Unix milliseconds (Howard Hinnant's civil date).
pub(crate) fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (hour, minute, second) = (sod / 3600, (sod % 3600) / 60, sod % 60);
    if !(0..=9999).contains(&y) {
        return format!("{y:04}-{m:02}-{d:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z");
    }
    // Every other field has a fixed width: the digits are written in place, without the formatter.
    let mut out = *b"0000-00-00T00:00:00.000Z";
    for (at, width, value) in [
        (0, 4, y),
        (5, 2, m),
        (8, 2, d),
        (11, 2, hour),
        (14, 2, minute),
        (17, 2, second),
        (20, 3, milli),
    ] {
        let mut value = value;
        for digit in out[at..at + width].iter_mut().rev() {
            *digit = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    out.iter().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
        assert_eq!(rfc3339(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }

    proptest::proptest! {
        /// The digits written in place read as the formatter prints them, over every instant of years 0 to 9999.
        #[test]
        fn written_digits_match_the_formatter(ms in -62_167_219_200_000i64..253_402_300_800_000) {
            let text = rfc3339(ms);
            let (date, time) = text.split_once('T').unwrap();
            let mut date = date.split('-').map(|p| p.parse::<i64>().unwrap());
            let (y, m, d) = (date.next().unwrap(), date.next().unwrap(), date.next().unwrap());
            let reference = format!("{y:04}-{m:02}-{d:02}T{time}");
            proptest::prop_assert_eq!(&text, &reference);
            proptest::prop_assert_eq!(text.len(), 24);
            let sod = ms.rem_euclid(86_400_000);
            let expected_time = format!(
                "{:02}:{:02}:{:02}.{:03}Z",
                sod / 3_600_000,
                sod / 60_000 % 60,
                sod / 1000 % 60,
                sod % 1000
            );
            proptest::prop_assert_eq!(time, expected_time.as_str());
        }
    }
}
