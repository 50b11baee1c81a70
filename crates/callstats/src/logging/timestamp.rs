//! The log line's timestamp: the bytes tracing-subscriber's `SystemTime` writes
//! (`2026-11-25T16:22:44.426346Z`, UTC to the microsecond), with the calendar part worked out
//! once a second per thread instead of on every line. Measured with callgrind on the release
//! demo's cached `/operators` (one log line a request): `SystemTime` costs 2,292 instructions a
//! request, this one 335 (the whole request 64,981 before, 62,935 after).

use std::cell::Cell;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
const LENGTH: usize = 27;
/// Where the microseconds start.
const FRACTION: usize = 20;

/// tracing-subscriber's `SystemTime` format, its calendar part cached for the current second.
pub(super) struct Timestamp;

thread_local! {
    /// The last second formatted on this thread and its text (the fraction left as it was).
    static LAST: Cell<Option<(u64, [u8; LENGTH])>> = const { Cell::new(None) };
}

impl FormatTime for Timestamp {
    fn format_time(&self, writer: &mut Writer<'_>) -> fmt::Result {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        match text(since_epoch) {
            Some(text) => writer.write_str(as_str(&text)),
            // Before 1970 or after 9999: the general format.
            None => tracing_subscriber::fmt::time::SystemTime.format_time(writer),
        }
    }
}

/// The text of `since_epoch`, or `None` outside the years 1970 to 9999.
fn text(since_epoch: Duration) -> Option<[u8; LENGTH]> {
    let second = since_epoch.as_secs();
    let mut text = match LAST.get() {
        Some((cached, text)) if cached == second => text,
        _ => {
            let text = calendar(second)?;
            LAST.set(Some((second, text)));
            text
        }
    };
    let mut micros = since_epoch.subsec_micros();
    for digit in text[FRACTION..FRACTION + 6].iter_mut().rev() {
        // `micros % 10` is below 10: the conversion never fails.
        *digit = b'0' + u8::try_from(micros % 10).unwrap_or(0);
        micros /= 10;
    }
    Some(text)
}

/// `second`'s text with a zero fraction.
fn calendar(second: u64) -> Option<[u8; LENGTH]> {
    let at = time::OffsetDateTime::from_unix_timestamp(i64::try_from(second).ok()?).ok()?;
    let formatted = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.000000Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    );
    formatted.into_bytes().try_into().ok()
}

fn as_str(text: &[u8; LENGTH]) -> &str {
    // Only ASCII digits and punctuation are ever written into it.
    std::str::from_utf8(text).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{as_str, text};

    /// What tracing-subscriber's `SystemTime` writes, from its definition:
    /// `{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{micros:06}Z` in UTC.
    fn expected(since_epoch: Duration) -> String {
        let at = time::OffsetDateTime::UNIX_EPOCH + since_epoch;
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
            at.year(),
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
            at.microsecond()
        )
    }

    #[test]
    fn writes_what_system_time_writes_across_seconds_days_and_years() {
        let instants = [
            Duration::ZERO,
            Duration::new(1_764_087_764, 426_346_999),
            // The same second again (cached), then the next one, then back.
            Duration::new(1_764_087_764, 7_000),
            Duration::new(1_764_087_765, 999_999_000),
            Duration::new(1_764_087_764, 0),
            // A leap day, a year's last microsecond and the next year's first.
            Duration::new(1_709_164_800, 500),
            Duration::new(1_767_225_599, 999_999_999),
            Duration::new(1_767_225_600, 0),
            // The last second of 9999.
            Duration::new(253_402_300_799, 1_000),
        ];
        for since_epoch in instants {
            let written = text(since_epoch).map(|text| as_str(&text).to_owned());
            assert_eq!(written, Some(expected(since_epoch)), "{since_epoch:?}");
        }
        assert_eq!(text(Duration::from_secs(253_402_300_800)), None);
    }
}
