//! Tashkent time (UTC+05:00, no daylight saving): every date and hour the API reports is local
//! to it, whatever offset the upstream used.

use time::{Date, OffsetDateTime, UtcOffset, macros::offset};

/// The service's time zone.
pub const TASHKENT: UtcOffset = offset!(+5);
/// How the offset is written in responses.
pub const TASHKENT_LABEL: &str = "+05:00";

const OFFSET_SECONDS: i64 = 5 * 3600;
const SECONDS_PER_DAY: i64 = 86_400;
/// Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i64 = 2_440_588;

/// Days since 1970-01-01 of a calendar date (negative before it).
#[must_use]
pub fn day_number(date: Date) -> i64 {
    i64::from(date.to_julian_day()) - UNIX_EPOCH_JULIAN_DAY
}

/// The Tashkent day number and hour (0..=23) of a Unix timestamp in seconds.
///
/// Plain integer arithmetic: this runs once per call record on the hot path.
#[must_use]
#[inline]
pub fn local_day_and_hour(unix_seconds: i64) -> (i64, usize) {
    let local = unix_seconds.saturating_add(OFFSET_SECONDS);
    let day = local.div_euclid(SECONDS_PER_DAY);
    let hour = local.rem_euclid(SECONDS_PER_DAY) / 3600;
    (day, usize::try_from(hour).unwrap_or(0))
}

/// Unix timestamp (seconds) of Tashkent midnight at the start of `date`.
#[must_use]
pub fn local_midnight_unix(date: Date) -> i64 {
    day_number(date) * SECONDS_PER_DAY - OFFSET_SECONDS
}

/// The same instant as seen in Tashkent.
#[must_use]
pub fn to_tashkent(instant: OffsetDateTime) -> OffsetDateTime {
    instant.to_offset(TASHKENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::{date, datetime};

    #[test]
    fn local_day_and_hour_converts_any_offset_to_tashkent() {
        // 23:30 UTC on Oct 31 is 04:30 on Nov 1 in Tashkent.
        let utc = datetime!(2026-10-31 23:30 UTC).unix_timestamp();
        assert_eq!(
            local_day_and_hour(utc),
            (day_number(date!(2026 - 11 - 01)), 4)
        );
        // 01:00 at +08:00 is 17:00 UTC the day before, 22:00 in Tashkent.
        let plus8 = datetime!(2026-11-02 01:00 +8).unix_timestamp();
        assert_eq!(
            local_day_and_hour(plus8),
            (day_number(date!(2026 - 11 - 01)), 22)
        );
    }

    #[test]
    fn local_midnight_is_19_00_utc_the_day_before() {
        let midnight = local_midnight_unix(date!(2026 - 11 - 01));
        assert_eq!(midnight, datetime!(2026-10-31 19:00 UTC).unix_timestamp());
        assert_eq!(local_day_and_hour(midnight).1, 0);
        assert_eq!(local_day_and_hour(midnight - 1).1, 23);
    }

    #[test]
    fn day_number_counts_from_the_unix_epoch() {
        assert_eq!(day_number(date!(1970 - 01 - 01)), 0);
        assert_eq!(day_number(date!(1969 - 12 - 31)), -1);
    }
}
