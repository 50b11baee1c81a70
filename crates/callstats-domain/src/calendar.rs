//! The house's calendar: Tashkent days, date ranges of at most 31 days, months and the portal's
//! local date-times, each written and read in one fixed form (parsed with `time`'s format
//! descriptions).

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::parsing::Parsed;
use time::{Date, Duration, PrimitiveDateTime, Time};

use crate::tz;

/// The longest date range the call endpoints compute; longer ranges keep their latest days.
pub const MAX_RANGE_DAYS: u32 = 31;

/// How a day is written, and what a request is told to send.
pub const DATE_FORM: &str = "a calendar date YYYY-MM-DD";
/// How a month is written, and what a request is told to send.
pub const MONTH_FORM: &str = "a month YYYY-MM with month 01 to 12";
/// How the portal writes a date and time.
pub const DATE_TIME_FORM: &str = "a date and time YYYY-MM-DD HH:MM:SS";

const DATE: &[BorrowedFormatItem<'_>] = format_description!("[year]-[month]-[day]");
/// An instant in UTC to the millisecond, e.g. `2026-11-21T06:15:30.123Z`.
const UTC_MILLIS: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// `at` in UTC to the millisecond, e.g. `2026-11-21T06:15:30.123Z`.
#[must_use]
pub fn utc_millis(at: time::OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(UTC_MILLIS)
        .unwrap_or_default()
}

/// Unix millisecond `ms` in UTC, e.g. `2026-11-21T06:15:30.123Z`; `None` out of the calendar.
#[must_use]
pub fn utc_millis_of(ms: i64) -> Option<String> {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .map(utc_millis)
}

/// The Unix millisecond of `at`.
#[must_use]
pub fn unix_millis(at: time::OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}
const MONTH: &[BorrowedFormatItem<'_>] = format_description!("[year]-[month]");
const DATE_TIME: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");

/// Text that is not a value of the calendar in its one written form; says the form expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("expected {expected}")]
pub struct NotInCalendar {
    pub expected: &'static str,
}

/// Parses `raw` against `format`, the whole of it. `[year]` also takes a sign (`+2026`, which
/// the house's forms do not have), so a leading sign is refused first.
fn parse_items(
    raw: &str,
    format: &[BorrowedFormatItem<'_>],
    expected: &'static str,
) -> Result<Parsed, NotInCalendar> {
    let not = NotInCalendar { expected };
    if raw.starts_with(['+', '-']) {
        return Err(not);
    }
    let mut parsed = Parsed::new();
    match parsed.parse_items(raw.as_bytes(), format) {
        Ok([]) => Ok(parsed),
        _ => Err(not),
    }
}

/// A real calendar date, written `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Day(Date);

impl Day {
    #[must_use]
    pub const fn new(date: Date) -> Self {
        Self(date)
    }

    /// Parses exactly `YYYY-MM-DD` naming a date that exists (2026-02-30 does not).
    pub fn parse(raw: &str) -> Result<Self, NotInCalendar> {
        let parsed = parse_items(raw, DATE, DATE_FORM)?;
        Date::try_from(parsed).map(Self).map_err(|_| NotInCalendar {
            expected: DATE_FORM,
        })
    }

    /// The Tashkent day `instant` falls on.
    #[must_use]
    pub fn of(instant: time::OffsetDateTime) -> Self {
        Self(tz::to_tashkent(instant).date())
    }

    #[must_use]
    pub const fn date(self) -> Date {
        self.0
    }

    /// Days since 1970-01-01.
    #[must_use]
    pub fn number(self) -> i64 {
        tz::day_number(self.0)
    }

    /// The day `days` later (earlier when negative), or `None` outside the calendar's range.
    #[must_use]
    pub fn plus_days(self, days: i64) -> Option<Self> {
        self.0.checked_add(Duration::days(days)).map(Self)
    }

    #[must_use]
    pub fn month(self) -> Month {
        Month::new(self.0.year(), self.0.month())
    }
}

impl FromStr for Day {
    type Err = NotInCalendar;

    fn from_str(raw: &str) -> Result<Self, NotInCalendar> {
        Self::parse(raw)
    }
}

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let date = self.0;
        write!(
            f,
            "{:04}-{:02}-{:02}",
            date.year(),
            u8::from(date.month()),
            date.day()
        )
    }
}

impl Serialize for Day {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `end` is before `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("query parameter 'end' ({end}) is before query parameter 'start' ({start})")]
pub struct EndBeforeStart {
    pub start: Day,
    pub end: Day,
}

/// An inclusive range of Tashkent days, at most [`MAX_RANGE_DAYS`] long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DateRange {
    start: Day,
    end: Day,
    clamped: bool,
}

impl DateRange {
    /// The days `start` to `end`, up to 31 of them: a longer range keeps its latest 31 days
    /// and says so in [`DateRange::clamped`] (the API's documented clamp, never an error).
    pub fn up_to_31_days(start: Day, end: Day) -> Result<Self, EndBeforeStart> {
        Self::up_to(start, end, MAX_RANGE_DAYS)
    }

    /// The days `start` to `end`, up to `max_days` of them (at least 1): a longer range keeps
    /// its latest `max_days` days and says so in [`DateRange::clamped`].
    pub fn up_to(start: Day, end: Day, max_days: u32) -> Result<Self, EndBeforeStart> {
        if end < start {
            return Err(EndBeforeStart { start, end });
        }
        Ok(Self {
            start,
            end,
            clamped: false,
        }
        .latest(max_days.max(1)))
    }

    /// The latest `max_days` days of the range (the shorter clamp of /calls/intervals), marked
    /// clamped when that trims it; a range that was clamped already stays marked.
    #[must_use]
    pub fn latest(self, max_days: u32) -> Self {
        let span = self.end.number() - self.start.number() + 1;
        if span <= i64::from(max_days) || max_days == 0 {
            return self;
        }
        match self.end.plus_days(1 - i64::from(max_days)) {
            Some(start) => Self {
                start,
                end: self.end,
                clamped: true,
            },
            None => self,
        }
    }

    /// The one-day range of `day`.
    #[must_use]
    pub const fn day(day: Day) -> Self {
        Self {
            start: day,
            end: day,
            clamped: false,
        }
    }

    #[must_use]
    pub const fn start(&self) -> Day {
        self.start
    }

    #[must_use]
    pub const fn end(&self) -> Day {
        self.end
    }

    /// True when the requested range was longer than its endpoint computes and was trimmed.
    #[must_use]
    pub const fn clamped(&self) -> bool {
        self.clamped
    }

    /// Number of days in the range (at least 1).
    #[must_use]
    pub fn days(&self) -> usize {
        usize::try_from(self.end.number() - self.start.number() + 1).unwrap_or(1)
    }

    #[must_use]
    pub fn is_single_day(&self) -> bool {
        self.start == self.end
    }

    /// Every day of the range in order.
    pub fn iter_days(&self) -> impl Iterator<Item = Day> + use<> {
        let start = self.start;
        (0..self.days()).filter_map(move |offset| start.plus_days(i64::try_from(offset).ok()?))
    }

    /// The window as Unix seconds: Tashkent midnight of `start` (inclusive) to the midnight
    /// after `end` (exclusive).
    #[must_use]
    pub fn unix_window(&self) -> (i64, i64) {
        (
            tz::local_midnight_unix(self.start.0),
            tz::local_midnight_unix(self.end.0) + 86_400,
        )
    }

    /// The window as Tashkent-offset instants, as the upstream call platform wants it; `None`
    /// when it ends past the calendar (a range ending on 9999-12-31).
    #[must_use]
    pub fn window(&self) -> Option<(time::OffsetDateTime, time::OffsetDateTime)> {
        let start =
            PrimitiveDateTime::new(self.start.0, Time::MIDNIGHT).assume_offset(tz::TASHKENT);
        let end = start.checked_add(Duration::days(i64::try_from(self.days()).ok()?))?;
        Some((start, end))
    }
}

/// `days` (in order) as ranges of consecutive days, each at most `most` long (at most 31): how
/// a trend reads and fetches its days a month at a time.
#[must_use]
pub fn runs(days: &[Day], most: usize) -> Vec<DateRange> {
    let mut runs: Vec<(Day, Day, usize)> = Vec::new();
    for day in days {
        match runs.last_mut() {
            Some((_, last, length)) if *length < most && last.plus_days(1) == Some(*day) => {
                *last = *day;
                *length += 1;
            }
            _ => runs.push((*day, *day, 1)),
        }
    }
    runs.into_iter()
        .filter_map(|(start, end, _)| DateRange::up_to_31_days(start, end).ok())
        .collect()
}

/// A calendar month, written `YYYY-MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Month {
    year: i32,
    /// 1..=12; kept as a number so months order by (year, month).
    month: u8,
}

impl Month {
    /// Parses exactly `YYYY-MM` with month 01..=12 (2026-13 and 2026-00 are errors).
    pub fn parse(raw: &str) -> Result<Self, NotInCalendar> {
        let parsed = parse_items(raw, MONTH, MONTH_FORM)?;
        match (parsed.year(), parsed.month()) {
            (Some(year), Some(month)) => Ok(Self::new(year, month)),
            _ => Err(NotInCalendar {
                expected: MONTH_FORM,
            }),
        }
    }

    #[must_use]
    pub fn new(year: i32, month: time::Month) -> Self {
        Self {
            year,
            month: u8::from(month),
        }
    }

    #[must_use]
    pub const fn year(self) -> i32 {
        self.year
    }

    #[must_use]
    pub fn month(self) -> time::Month {
        time::Month::try_from(self.month).unwrap_or(time::Month::January)
    }

    /// Whether `day` falls in this month.
    #[must_use]
    pub fn contains(self, day: Day) -> bool {
        day.month() == self
    }
}

impl FromStr for Month {
    type Err = NotInCalendar;

    fn from_str(raw: &str) -> Result<Self, NotInCalendar> {
        Self::parse(raw)
    }
}

impl fmt::Display for Month {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

impl Serialize for Month {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A portal date and time, `YYYY-MM-DD HH:MM:SS`, in Tashkent local time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalDateTime(PrimitiveDateTime);

impl LocalDateTime {
    #[must_use]
    pub const fn new(value: PrimitiveDateTime) -> Self {
        Self(value)
    }

    /// Parses exactly `YYYY-MM-DD HH:MM:SS` naming a real instant.
    pub fn parse(raw: &str) -> Result<Self, NotInCalendar> {
        let parsed = parse_items(raw, DATE_TIME, DATE_TIME_FORM)?;
        PrimitiveDateTime::try_from(parsed)
            .map(Self)
            .map_err(|_| NotInCalendar {
                expected: DATE_TIME_FORM,
            })
    }

    #[must_use]
    pub const fn value(self) -> PrimitiveDateTime {
        self.0
    }
}

impl FromStr for LocalDateTime {
    type Err = NotInCalendar;

    fn from_str(raw: &str) -> Result<Self, NotInCalendar> {
        Self::parse(raw)
    }
}

impl fmt::Display for LocalDateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (h, m, s) = self.0.time().as_hms();
        write!(f, "{} {h:02}:{m:02}:{s:02}", Day(self.0.date()))
    }
}

impl Serialize for LocalDateTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::{date, datetime};

    fn day(raw: &str) -> Day {
        Day::parse(raw).unwrap()
    }

    #[test]
    fn dates_must_be_real_calendar_dates_in_one_form() {
        assert_eq!(day("2024-02-29").date(), date!(2024 - 02 - 29));
        assert_eq!(day("0000-01-01").to_string(), "0000-01-01");
        for bad in [
            "2026-02-30",
            "2025-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-01-00",
            "2026-1-01",
            "26-01-01",
            "2026/01/01",
            "+2026-01-01",
            "-2026-01-01",
            "2026-01-01T00:00",
            "2026-01-01 ",
            " 2026-01-01",
            "２０２６-01-01",
            "",
        ] {
            assert_eq!(
                Day::parse(bad),
                Err(NotInCalendar {
                    expected: DATE_FORM
                }),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_day_of_an_instant_is_its_tashkent_date() {
        // 18:59:59 UTC is 23:59:59 in Tashkent; a second later it is the next day there.
        assert_eq!(
            Day::of(datetime!(2026-11-22 18:59:59 UTC)),
            day("2026-11-22")
        );
        assert_eq!(Day::of(datetime!(2026-11-22 19:00 UTC)), day("2026-11-23"));
        assert_eq!(
            Day::of(datetime!(1969-12-31 18:59:59 UTC)),
            day("1969-12-31")
        );
    }

    #[test]
    fn range_with_end_before_start_is_rejected() {
        let err = DateRange::up_to_31_days(day("2026-11-03"), day("2026-11-02")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "query parameter 'end' (2026-11-02) is before query parameter 'start' (2026-11-03)"
        );
    }

    #[test]
    fn latest_keeps_the_last_days_and_marks_the_range_clamped() {
        let week = DateRange::up_to_31_days(day("2026-11-01"), day("2026-11-07")).unwrap();
        assert_eq!(week.latest(7), week);
        let eight = DateRange::up_to_31_days(day("2026-10-31"), day("2026-11-07")).unwrap();
        let kept = eight.latest(7);
        assert_eq!(
            (kept.start(), kept.end(), kept.clamped(), kept.days()),
            (day("2026-11-01"), day("2026-11-07"), true, 7)
        );
        // A range clamped to 31 days already is trimmed further and stays clamped.
        let year = DateRange::up_to_31_days(day("2026-01-01"), day("2026-11-07")).unwrap();
        let kept = year.latest(7);
        assert_eq!((kept.start(), kept.clamped()), (day("2026-11-01"), true));
        let first = DateRange::up_to_31_days(day("0001-01-01"), day("0001-01-20")).unwrap();
        assert_eq!(first.latest(7).start(), day("0001-01-14"));
    }

    #[test]
    fn range_of_31_days_is_not_clamped() {
        let range = DateRange::up_to_31_days(day("2026-10-01"), day("2026-10-31")).unwrap();
        assert_eq!((range.days(), range.clamped()), (31, false));
    }

    #[test]
    fn range_longer_than_31_days_keeps_its_latest_31() {
        let range = DateRange::up_to_31_days(day("2026-01-01"), day("2026-11-20")).unwrap();
        assert_eq!(
            (range.start(), range.end(), range.clamped()),
            (day("2026-10-21"), day("2026-11-20"), true)
        );
        assert_eq!(range.days(), 31);
    }

    #[test]
    fn range_window_runs_from_tashkent_midnight_to_the_midnight_after_end() {
        let range = DateRange::up_to_31_days(day("2026-11-01"), day("2026-11-02")).unwrap();
        let (from, to) = range.window().unwrap();
        assert_eq!(from.to_string(), "2026-11-01 0:00:00.0 +05:00:00");
        assert_eq!(to.to_string(), "2026-11-03 0:00:00.0 +05:00:00");
        assert_eq!(
            range.unix_window(),
            (from.unix_timestamp(), to.unix_timestamp())
        );
        assert_eq!(
            range.iter_days().map(|d| d.to_string()).collect::<Vec<_>>(),
            ["2026-11-01", "2026-11-02"]
        );
    }

    #[test]
    fn a_window_past_the_calendar_is_none_not_a_panic() {
        let last = DateRange::up_to_31_days(day("9999-12-30"), day("9999-12-31")).unwrap();
        assert_eq!(last.window(), None);
        assert_eq!(
            last.unix_window().1 - last.unix_window().0,
            2 * 86_400,
            "Unix seconds go on past the calendar"
        );
        assert!(DateRange::day(day("9999-12-30")).window().is_some());
    }

    #[test]
    fn months_accept_01_to_12_only() {
        assert_eq!(Month::parse("2026-11").unwrap().to_string(), "2026-11");
        assert_eq!(
            "0042-01".parse::<Month>().unwrap(),
            Month::new(42, time::Month::January)
        );
        for bad in [
            "2026-13",
            "2026-00",
            "2026-1",
            "2026-011",
            "2026/11",
            "",
            "2026-11-01",
            "+2026-11",
        ] {
            assert_eq!(
                Month::parse(bad),
                Err(NotInCalendar {
                    expected: MONTH_FORM
                }),
                "{bad}"
            );
        }
    }

    #[test]
    fn local_date_times_round_trip_in_portal_format() {
        let value = LocalDateTime::parse("2026-11-20 18:00:05").unwrap();
        assert_eq!(value.to_string(), "2026-11-20 18:00:05");
        for bad in [
            "2026-11-20T18:00:05",
            "2026-11-20 24:00:00",
            "2026-11-20 23:59:60",
            "2026-02-30 10:00:00",
            "2026-11-20 18:00",
            "2026-11-20 18:00:05.5",
        ] {
            assert!(LocalDateTime::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn runs_are_consecutive_days_cut_at_their_length() {
        let day = |raw: &str| Day::parse(raw).unwrap();
        let days: Vec<Day> = [
            "2026-11-01",
            "2026-11-02",
            "2026-11-03",
            "2026-11-05",
            "2026-11-06",
        ]
        .map(day)
        .to_vec();
        let spans: Vec<(String, String)> = runs(&days, 2)
            .iter()
            .map(|r| (r.start().to_string(), r.end().to_string()))
            .collect();
        assert_eq!(
            spans,
            [
                ("2026-11-01".to_owned(), "2026-11-02".to_owned()),
                ("2026-11-03".to_owned(), "2026-11-03".to_owned()),
                ("2026-11-05".to_owned(), "2026-11-06".to_owned()),
            ]
        );
        assert!(runs(&[], 31).is_empty());
    }
}
