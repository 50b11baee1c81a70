//! The log line's timestamp: the bytes tracing-subscriber's `SystemTime` writes
//! (`2026-11-25T16:22:44.426346Z`, UTC to the microsecond), with the calendar part worked out
//! once a second per thread instead of on every line. Measured with callgrind on the release
//! demo's cached `/operators` (one log line a request): `SystemTime` costs 2,292 instructions a
//! request, this one 335 (the whole request 64,981 before, 62,935 after).

use std::cell::Cell;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arrayvec::ArrayString;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
const LENGTH: usize = 27;
/// `YYYY-MM-DDTHH:MM:SS.`, the part cached for a second.
const CALENDAR: usize = 20;

/// tracing-subscriber's `SystemTime` format, its calendar part cached for the current second.
pub(super) struct Timestamp;

thread_local! {
    /// The last second formatted on this thread and its calendar text.
    static LAST: Cell<Option<(u64, ArrayString<CALENDAR>)>> = const { Cell::new(None) };
}

impl FormatTime for Timestamp {
    fn format_time(&self, writer: &mut Writer<'_>) -> fmt::Result {
        let mut text = ArrayString::<LENGTH>::new();
        if push(&mut text, since_epoch()).is_some() {
            writer.write_str(&text)
        } else {
            // Before 1970 or after 9999: the general format.
            tracing_subscriber::fmt::time::SystemTime.format_time(writer)
        }
    }
}

/// The time since the epoch; zero for a clock set before it.
fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Writes the time now at the end of `line`: as [`Timestamp`] writes it, but straight into the
/// text log's line, without the writer's dynamic calls.
pub(super) fn push_now(line: &mut String) {
    let mut text = ArrayString::<LENGTH>::new();
    match push(&mut text, since_epoch()) {
        Some(()) => line.push_str(&text),
        None => line.push_str("<unknown time>"),
    }
}

/// Writes the text of `since_epoch` into the empty `text`, or `None` outside the years 1970 to
/// 9999. Text kept as text (the calendar part and itoa's digits), not as bytes checked for
/// UTF-8 on every line, and written into the line without the writer's dynamic calls
/// (callgrind, cached `/operators`: 326 instructions a line before, 301 after).
fn push(text: &mut ArrayString<LENGTH>, since_epoch: Duration) -> Option<()> {
    let second = since_epoch.as_secs();
    let calendar = match LAST.get() {
        Some((cached, calendar)) if cached == second => calendar,
        _ => {
            let calendar = calendar(second)?;
            LAST.set(Some((second, calendar)));
            calendar
        }
    };
    text.try_push_str(&calendar).ok()?;
    let mut micros = itoa::Buffer::new();
    let micros = micros.format(since_epoch.subsec_micros());
    text.try_push_str("000000".get(micros.len()..)?).ok()?;
    text.try_push_str(micros).ok()?;
    text.try_push('Z').ok()
}

/// `second`'s calendar text, up to the fraction.
fn calendar(second: u64) -> Option<ArrayString<CALENDAR>> {
    let at = time::OffsetDateTime::from_unix_timestamp(i64::try_from(second).ok()?).ok()?;
    let formatted = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    );
    ArrayString::from(&formatted).ok()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use arrayvec::ArrayString;

    use super::push;

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
            let mut text = ArrayString::new();
            let written = push(&mut text, since_epoch).map(|()| text.to_string());
            assert_eq!(written, Some(expected(since_epoch)), "{since_epoch:?}");
        }
        assert_eq!(
            push(
                &mut ArrayString::new(),
                Duration::from_secs(253_402_300_800)
            ),
            None
        );
    }
}
