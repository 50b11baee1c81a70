//! Request parameters as types that can only hold valid values, and the parsers that turn raw
//! query strings into them or into a [`ParamError`] that tells a partner what to fix.

use std::borrow::Cow;
use std::fmt;

use serde::{Serialize, Serializer};
use time::{Date, Duration, PrimitiveDateTime, Time};

use crate::tz;

/// The longest date range the call endpoints compute; longer ranges keep their latest days.
pub const MAX_RANGE_DAYS: u32 = 31;
/// Default and bounds of `limit` on /scripts/stats.
pub const SCRIPTS_LIMIT_DEFAULT: u8 = 20;
/// Upper bound of `limit` on /scripts/stats.
pub const SCRIPTS_LIMIT_MAX: u8 = 100;
/// Longest accepted shift label, in characters.
pub const SHIFT_MAX_CHARS: usize = 64;
/// How much of a rejected value an error message quotes back.
const ECHO_MAX_CHARS: usize = 40;

/// Where a parameter was read from, so the error can say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Query,
    Path,
}

/// A named request parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub place: Place,
}

impl Param {
    #[must_use]
    pub const fn query(name: &'static str) -> Self {
        Self {
            name,
            place: Place::Query,
        }
    }

    #[must_use]
    pub const fn path(name: &'static str) -> Self {
        Self {
            name,
            place: Place::Path,
        }
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.place {
            Place::Query => write!(f, "query parameter '{}'", self.name),
            Place::Path => write!(f, "path segment '{}'", self.name),
        }
    }
}

/// A rejected parameter; the message names the parameter, the expected form and, where
/// there is one, the value received (shortened).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("missing {param}: expected {expected}")]
    Missing {
        param: Param,
        expected: &'static str,
    },
    #[error("{param} is empty: expected {expected}")]
    Empty {
        param: Param,
        expected: &'static str,
    },
    #[error("{param} is given more than once")]
    Repeated { param: Param },
    #[error("invalid {param} {value:?}: expected {expected}")]
    Invalid {
        param: Param,
        value: String,
        expected: &'static str,
    },
    #[error("query parameter 'end' ({end}) is before query parameter 'start' ({start})")]
    EndBeforeStart { start: Day, end: Day },
}

impl ParamError {
    fn invalid(param: Param, value: &str, expected: &'static str) -> Self {
        Self::Invalid {
            param,
            value: value.chars().take(ECHO_MAX_CHARS).collect(),
            expected,
        }
    }
}

const DATE_EXPECTED: &str = "a calendar date YYYY-MM-DD";
const MONTH_EXPECTED: &str = "a month YYYY-MM with month 01 to 12";
const DIRECTION_EXPECTED: &str = "'inbound' or 'outbound'";
const LIMIT_EXPECTED: &str = "an integer from 1 to 100";
const SHIFT_EXPECTED: &str = "a shift label of 1 to 64 printable characters";

/// Decoded query pairs of one request, borrowed from the query string where no percent-decoding
/// was needed. Unknown parameters are kept and ignored; a known parameter given twice is an
/// error rather than a silent pick.
#[derive(Debug, Clone, Default)]
pub struct QueryParams<'q> {
    pairs: Vec<(Cow<'q, str>, Cow<'q, str>)>,
}

impl<'q> QueryParams<'q> {
    #[must_use]
    pub fn new<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<Cow<'q, str>>,
        V: Into<Cow<'q, str>>,
    {
        Self {
            pairs: pairs
                .into_iter()
                .map(|(name, value)| (name.into(), value.into()))
                .collect(),
        }
    }

    /// The value of query parameter `name`: `None` when absent, an error when empty or repeated.
    pub fn get(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<Option<&str>, ParamError> {
        let param = Param::query(name);
        let mut found = self
            .pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_ref());
        let first = found.next();
        if found.next().is_some() {
            return Err(ParamError::Repeated { param });
        }
        match first {
            Some("") => Err(ParamError::Empty { param, expected }),
            other => Ok(other),
        }
    }
}

/// Checks `s` against a pattern where `d` is an ASCII digit and any other byte stands for itself.
fn matches_digit_pattern(s: &str, pattern: &str) -> bool {
    s.len() == pattern.len()
        && s.bytes().zip(pattern.bytes()).all(|(c, p)| {
            if p == b'd' {
                c.is_ascii_digit()
            } else {
                c == p
            }
        })
}

/// Parses the ASCII digits of `s[range]`; callers have already matched a digit pattern.
fn digits(s: &str, range: std::ops::Range<usize>) -> Option<u16> {
    s.get(range)?.parse().ok()
}

fn month_of(number: u16) -> Option<time::Month> {
    u8::try_from(number)
        .ok()
        .and_then(|m| time::Month::try_from(m).ok())
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
    pub fn parse(raw: &str, param: Param) -> Result<Self, ParamError> {
        Self::from_text(raw).ok_or_else(|| ParamError::invalid(param, raw, DATE_EXPECTED))
    }

    fn from_text(raw: &str) -> Option<Self> {
        if !matches_digit_pattern(raw, "dddd-dd-dd") {
            return None;
        }
        let year = i32::from(digits(raw, 0..4)?);
        let month = month_of(digits(raw, 5..7)?)?;
        let day = u8::try_from(digits(raw, 8..10)?).ok()?;
        Date::from_calendar_date(year, month, day).ok().map(Self)
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

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (year, month, day) = (self.0.year(), u8::from(self.0.month()), self.0.day());
        match u16::try_from(year) {
            // Written digit by digit: cache keys and bodies hold many dates.
            Ok(year @ 0..=9999) => {
                let digit = |value: u16, place: u16| {
                    b'0'.saturating_add(u8::try_from(value / place % 10).unwrap_or(0))
                };
                let (month, day) = (u16::from(month), u16::from(day));
                let text = [
                    digit(year, 1000),
                    digit(year, 100),
                    digit(year, 10),
                    digit(year, 1),
                    b'-',
                    digit(month, 10),
                    digit(month, 1),
                    b'-',
                    digit(day, 10),
                    digit(day, 1),
                ];
                f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
            }
            _ => write!(f, "{year:04}-{month:02}-{day:02}"),
        }
    }
}

impl Serialize for Day {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// An inclusive range of Tashkent days, at most [`MAX_RANGE_DAYS`] long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DateRange {
    start: Day,
    end: Day,
    clamped: bool,
}

impl DateRange {
    /// Builds a range; one longer than 31 days keeps its latest 31 and is marked clamped.
    pub fn new(start: Day, end: Day) -> Result<Self, ParamError> {
        if end < start {
            return Err(ParamError::EndBeforeStart { start, end });
        }
        let span = end.number() - start.number() + 1;
        if span > i64::from(MAX_RANGE_DAYS) {
            let start = end
                .plus_days(1 - i64::from(MAX_RANGE_DAYS))
                .unwrap_or(start);
            return Ok(Self {
                start,
                end,
                clamped: true,
            });
        }
        Ok(Self {
            start,
            end,
            clamped: false,
        })
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

    /// Reads `start` (required) and `end` (defaults to `start`) from a query.
    pub fn from_query(query: &QueryParams<'_>) -> Result<Self, ParamError> {
        let start = query
            .get("start", DATE_EXPECTED)?
            .ok_or(ParamError::Missing {
                param: Param::query("start"),
                expected: DATE_EXPECTED,
            })?;
        let start = Day::parse(start, Param::query("start"))?;
        let end = match query.get("end", DATE_EXPECTED)? {
            Some(raw) => Day::parse(raw, Param::query("end"))?,
            None => start,
        };
        Self::new(start, end)
    }

    #[must_use]
    pub const fn start(&self) -> Day {
        self.start
    }

    #[must_use]
    pub const fn end(&self) -> Day {
        self.end
    }

    /// True when the requested range was longer than 31 days and was trimmed.
    #[must_use]
    pub const fn clamped(&self) -> bool {
        self.clamped
    }

    /// Number of days in the range (1..=31).
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

/// The `period` object of the call responses: the dates actually used.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Period {
    pub start_date: Day,
    pub end_date: Day,
}

impl From<&DateRange> for Period {
    fn from(range: &DateRange) -> Self {
        Self {
            start_date: range.start,
            end_date: range.end,
        }
    }
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
    pub fn parse(raw: &str, param: Param) -> Result<Self, ParamError> {
        Self::from_text(raw).ok_or_else(|| ParamError::invalid(param, raw, MONTH_EXPECTED))
    }

    fn from_text(raw: &str) -> Option<Self> {
        if !matches_digit_pattern(raw, "dddd-dd") {
            return None;
        }
        let year = i32::from(digits(raw, 0..4)?);
        let month = month_of(digits(raw, 5..7)?)?;
        Some(Self::new(year, month))
    }

    /// Reads the required query parameter `month`.
    pub fn from_query(query: &QueryParams<'_>) -> Result<Self, ParamError> {
        let raw = query
            .get("month", MONTH_EXPECTED)?
            .ok_or(ParamError::Missing {
                param: Param::query("month"),
                expected: MONTH_EXPECTED,
            })?;
        Self::parse(raw, Param::query("month"))
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

/// Call direction; `inbound` is the default of /calls/summary.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Inbound,
    Outbound,
}

impl Direction {
    /// Parses `inbound` or `outbound`, case-sensitively.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        match raw {
            "inbound" => Ok(Self::Inbound),
            "outbound" => Ok(Self::Outbound),
            _ => Err(ParamError::invalid(
                Param::query("direction"),
                raw,
                DIRECTION_EXPECTED,
            )),
        }
    }

    /// Reads the optional query parameter `direction`, defaulting to inbound.
    pub fn from_query(query: &QueryParams<'_>) -> Result<Self, ParamError> {
        query
            .get("direction", DIRECTION_EXPECTED)?
            .map_or(Ok(Self::default()), Self::parse)
    }

    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Inbound => "inbound",
            Self::Outbound => "outbound",
        }
    }
}

/// A KPI sheet's shift label as a partner asks for it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shift(String);

impl Shift {
    /// Accepts 1 to 64 characters without control characters.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        let chars = raw.chars().count();
        if chars == 0 || chars > SHIFT_MAX_CHARS || raw.chars().any(char::is_control) {
            return Err(ParamError::invalid(
                Param::query("shift"),
                raw,
                SHIFT_EXPECTED,
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    /// Reads the optional query parameter `shift`.
    pub fn from_query(query: &QueryParams<'_>) -> Result<Option<Self>, ParamError> {
        query
            .get("shift", SHIFT_EXPECTED)?
            .map(Self::parse)
            .transpose()
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `limit` of /scripts/stats: an integer in 1..=100, default 20.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScriptsLimit(u8);

impl Default for ScriptsLimit {
    fn default() -> Self {
        Self(SCRIPTS_LIMIT_DEFAULT)
    }
}

impl ScriptsLimit {
    /// Accepts ASCII digits only (no sign, no spaces) with a value in 1..=100.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        let invalid = || ParamError::invalid(Param::query("limit"), raw, LIMIT_EXPECTED);
        if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        match raw.parse::<u32>() {
            Ok(n) if (1..=u32::from(SCRIPTS_LIMIT_MAX)).contains(&n) => {
                u8::try_from(n).map(Self).map_err(|_| invalid())
            }
            _ => Err(invalid()),
        }
    }

    /// Reads the optional query parameter `limit`.
    pub fn from_query(query: &QueryParams<'_>) -> Result<Self, ParamError> {
        query
            .get("limit", LIMIT_EXPECTED)?
            .map_or(Ok(Self::default()), Self::parse)
    }

    #[must_use]
    pub fn get(self) -> usize {
        usize::from(self.0)
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

    /// Parses exactly `YYYY-MM-DD HH:MM:SS`; `None` when malformed or not a real instant.
    #[must_use]
    pub fn parse(raw: &str) -> Option<Self> {
        if !matches_digit_pattern(raw, "dddd-dd-dd dd:dd:dd") {
            return None;
        }
        let day = Day::from_text(raw.get(0..10)?)?;
        let part = |r| digits(raw, r).and_then(|n| u8::try_from(n).ok());
        let time = Time::from_hms(part(11..13)?, part(14..16)?, part(17..19)?).ok()?;
        Some(Self(PrimitiveDateTime::new(day.0, time)))
    }

    #[must_use]
    pub const fn value(self) -> PrimitiveDateTime {
        self.0
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
    use time::macros::date;

    fn q<'a>(pairs: &[(&'a str, &'a str)]) -> QueryParams<'a> {
        QueryParams::new(pairs.iter().copied())
    }

    fn day(raw: &str) -> Day {
        Day::parse(raw, Param::query("start")).unwrap()
    }

    #[test]
    fn dates_must_be_real_calendar_dates() {
        assert_eq!(day("2024-02-29").date(), date!(2024 - 02 - 29));
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
            "2026-01-01T00:00",
            " 2026-01-01",
            "２０２６-01-01",
        ] {
            let err = Day::parse(bad, Param::query("start")).unwrap_err();
            assert!(matches!(err, ParamError::Invalid { .. }), "{bad}");
        }
    }

    #[test]
    fn invalid_date_error_names_parameter_format_and_value() {
        let err = Day::parse("2026-02-30", Param::query("end")).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid query parameter 'end' "2026-02-30": expected a calendar date YYYY-MM-DD"#
        );
    }

    #[test]
    fn error_quotes_at_most_forty_characters_of_the_value() {
        let long = "x".repeat(500);
        let ParamError::Invalid { value, .. } =
            Day::parse(&long, Param::query("start")).unwrap_err()
        else {
            panic!()
        };
        assert_eq!(value.len(), 40);
    }

    #[test]
    fn range_end_defaults_to_start() {
        let range = DateRange::from_query(&q(&[("start", "2026-11-03")])).unwrap();
        assert_eq!(
            (range.start(), range.end(), range.clamped()),
            (day("2026-11-03"), day("2026-11-03"), false)
        );
        assert!(range.is_single_day());
    }

    #[test]
    fn range_without_start_is_rejected() {
        let err = DateRange::from_query(&q(&[("end", "2026-11-03")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing query parameter 'start': expected a calendar date YYYY-MM-DD"
        );
    }

    #[test]
    fn range_with_end_before_start_is_rejected() {
        let err = DateRange::from_query(&q(&[("start", "2026-11-03"), ("end", "2026-11-02")]))
            .unwrap_err();
        assert!(matches!(err, ParamError::EndBeforeStart { .. }));
        assert_eq!(
            err.to_string(),
            "query parameter 'end' (2026-11-02) is before query parameter 'start' (2026-11-03)"
        );
    }

    #[test]
    fn range_of_31_days_is_not_clamped() {
        let range = DateRange::new(day("2026-10-01"), day("2026-10-31")).unwrap();
        assert_eq!((range.days(), range.clamped()), (31, false));
    }

    #[test]
    fn range_longer_than_31_days_keeps_its_latest_31() {
        let range = DateRange::new(day("2026-01-01"), day("2026-11-20")).unwrap();
        assert_eq!(
            (range.start(), range.end(), range.clamped()),
            (day("2026-10-21"), day("2026-11-20"), true)
        );
        assert_eq!(range.days(), 31);
    }

    #[test]
    fn range_window_runs_from_tashkent_midnight_to_the_midnight_after_end() {
        let range = DateRange::new(day("2026-11-01"), day("2026-11-02")).unwrap();
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
        let last = DateRange::new(day("9999-12-30"), day("9999-12-31")).unwrap();
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
        assert_eq!(
            Month::parse("2026-11", Param::path("month"))
                .unwrap()
                .to_string(),
            "2026-11"
        );
        for bad in [
            "2026-13",
            "2026-00",
            "2026-1",
            "2026-011",
            "2026/11",
            "",
            "2026-11-01",
        ] {
            let err = Month::parse(bad, Param::path("month")).unwrap_err();
            assert!(
                err.to_string().starts_with("invalid path segment 'month'"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn schedule_month_is_required() {
        let err = Month::from_query(&q(&[])).unwrap_err();
        assert!(matches!(err, ParamError::Missing { .. }));
    }

    #[test]
    fn direction_defaults_to_inbound_and_is_case_sensitive() {
        assert_eq!(Direction::from_query(&q(&[])).unwrap(), Direction::Inbound);
        assert_eq!(
            Direction::from_query(&q(&[("direction", "outbound")])).unwrap(),
            Direction::Outbound
        );
        assert!(matches!(
            Direction::from_query(&q(&[("direction", "Inbound")])),
            Err(ParamError::Invalid { .. })
        ));
        assert!(matches!(
            Direction::from_query(&q(&[("direction", "")])),
            Err(ParamError::Empty { .. })
        ));
    }

    #[test]
    fn scripts_limit_is_an_integer_from_1_to_100_defaulting_to_20() {
        assert_eq!(ScriptsLimit::from_query(&q(&[])).unwrap().get(), 20);
        assert_eq!(ScriptsLimit::parse("1").unwrap().get(), 1);
        assert_eq!(ScriptsLimit::parse("100").unwrap().get(), 100);
        assert_eq!(ScriptsLimit::parse("007").unwrap().get(), 7);
        for bad in [
            "0",
            "101",
            "-1",
            "+5",
            "5.0",
            "1e2",
            " 5",
            "99999999999999999999",
            "abc",
        ] {
            assert!(ScriptsLimit::parse(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            ScriptsLimit::from_query(&q(&[("limit", "")])),
            Err(ParamError::Empty { .. })
        ));
    }

    #[test]
    fn shift_must_be_printable_and_at_most_64_characters() {
        assert_eq!(
            Shift::parse("kunduzgi smena").unwrap().as_str(),
            "kunduzgi smena"
        );
        assert!(Shift::parse(&"я".repeat(64)).is_ok());
        assert!(Shift::parse(&"я".repeat(65)).is_err());
        assert!(Shift::parse("day\nnight").is_err());
        assert!(matches!(
            Shift::from_query(&q(&[("shift", "")])),
            Err(ParamError::Empty { .. })
        ));
        assert_eq!(Shift::from_query(&q(&[])).unwrap(), None);
    }

    #[test]
    fn a_known_parameter_given_twice_is_rejected_and_unknown_ones_ignored() {
        let query = q(&[
            ("start", "2026-11-01"),
            ("start", "2026-11-02"),
            ("foo", "bar"),
        ]);
        assert_eq!(
            DateRange::from_query(&query).unwrap_err().to_string(),
            "query parameter 'start' is given more than once"
        );
        let query = q(&[("start", "2026-11-01"), ("foo", "bar"), ("foo", "baz")]);
        assert!(DateRange::from_query(&query).is_ok());
    }

    #[test]
    fn local_date_times_round_trip_in_portal_format() {
        let value = LocalDateTime::parse("2026-11-20 18:00:05").unwrap();
        assert_eq!(value.to_string(), "2026-11-20 18:00:05");
        for bad in [
            "2026-11-20T18:00:05",
            "2026-11-20 24:00:00",
            "2026-02-30 10:00:00",
            "2026-11-20 18:00",
        ] {
            assert_eq!(LocalDateTime::parse(bad), None, "{bad}");
        }
    }
}
