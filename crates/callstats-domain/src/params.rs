//! The request parameters as values: each parameter's type with the parser that refuses what is
//! not one, and [`ParamError`], which names the parameter, the form expected and the value
//! received. The query strings that carry them are read in callstats-api.

use std::fmt;

use serde::Serialize;

use crate::calendar::{DateRange, Day, EndBeforeStart, MAX_RANGE_DAYS, Month};
use crate::identifiers::QueueName;
use crate::limits::EarliestDay;

/// Default of `limit` on /scripts/stats.
pub const SCRIPTS_LIMIT_DEFAULT: u8 = 20;
/// Upper bound of `limit` on /scripts/stats.
pub const SCRIPTS_LIMIT_MAX: u8 = 100;
/// Longest accepted shift label, in characters.
pub const SHIFT_MAX_CHARS: usize = 64;
/// How much of a rejected value an error message quotes back.
const ECHO_MAX_CHARS: usize = 40;

// The forms each error names as the one expected.
/// `direction`.
pub const DIRECTION_FORM: &str = "'inbound' or 'outbound'";
/// `limit`.
pub const LIMIT_FORM: &str = "an integer from 1 to 100";
/// `shift`.
pub const SHIFT_FORM: &str = "a shift label of 1 to 64 printable characters";
/// `team`.
pub const TEAM_FORM: &str = "a team label of 1 to 64 printable characters";
/// How many of the roster's values a refused `team` or `shift` lists.
const ROSTER_VALUES_SHOWN: usize = 50;
/// `sl_threshold`.
pub const SL_THRESHOLD_FORM: &str = "whole seconds from 1 to 3600";
/// `short_abandon`.
pub const SHORT_ABANDON_FORM: &str = "whole seconds from 0 to 600";
/// `interval`.
pub const INTERVAL_FORM: &str = "15, 30 or 60 (minutes)";
/// `granularity`.
pub const GRANULARITY_FORM: &str = "'day', 'week' or 'month'";
/// `compare`.
pub const COMPARE_FORM: &str = "'previous_period', 'previous_week' or 'previous_year'";
/// `queue`.
pub const QUEUE_FORM: &str = "a queue name of 1 to 64 bytes of printable text";

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
    #[error(transparent)]
    EndBeforeStart(#[from] EndBeforeStart),
    /// A call period that starts before the history horizon (after the 31-day clamp).
    #[error("{}", before_horizon(value, *earliest, *clamped))]
    BeforeHorizon {
        /// `start` as given.
        value: String,
        earliest: EarliestDay,
        /// Where the period starts once clamped to its latest days, and how many it keeps,
        /// when it was.
        clamped: Option<(Day, usize)>,
    },
    /// A `compare` whose earlier period starts before the history horizon.
    #[error(
        "invalid {} {:?}: the earlier period would start on {starts}, but call records are kept \
         for {} days, so the earliest date allowed is {}",
        Param::query("compare"),
        compare.as_str(),
        earliest.horizon_days,
        earliest.day
    )]
    CompareBeforeHorizon {
        compare: Compare,
        starts: Day,
        earliest: EarliestDay,
    },
    /// A `team` or `shift` that no operator of the roster has: the message lists those there
    /// are (at most 50, sorted).
    #[error("{}", not_in_roster(param, value, existing))]
    NotInRoster {
        param: Param,
        value: String,
        /// Every value of the roster, sorted, each once.
        existing: Vec<String>,
    },
    /// A query string that does not deserialise into the endpoint's query type.
    #[error("the query string cannot be read: {0}")]
    Unreadable(String),
}

fn before_horizon(value: &str, earliest: EarliestDay, clamped: Option<(Day, usize)>) -> String {
    let EarliestDay { day, horizon_days } = earliest;
    let clamp = clamped
        .map(|(start, days)| {
            format!(" (the period, clamped to its latest {days} days, starts on {start})")
        })
        .unwrap_or_default();
    format!(
        "invalid {} {value:?}: call records are kept for {horizon_days} days, so the earliest \
         start is {day}{clamp}",
        Param::query("start")
    )
}

fn not_in_roster(param: &Param, value: &str, existing: &[String]) -> String {
    let shown = existing
        .iter()
        .take(ROSTER_VALUES_SHOWN)
        .map(|value| format!("{value:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let more = existing.len().saturating_sub(ROSTER_VALUES_SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let value: String = value.chars().take(ECHO_MAX_CHARS).collect();
    format!("invalid {param} {value:?}: no operator of the roster has it; it has {shown}{more}")
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

fn day(raw: &str, param: Param) -> Result<Day, ParamError> {
    Day::parse(raw).map_err(|err| ParamError::invalid(param, raw, err.expected))
}

/// Parses a month, naming `param` when it is not one.
pub fn month(raw: &str, param: Param) -> Result<Month, ParamError> {
    Month::parse(raw).map_err(|err| ParamError::invalid(param, raw, err.expected))
}

/// The period of `start` and `end` as given (`end` defaults to `start`), clamped to its latest
/// `max_days` days, or the error naming the parameter at fault, `start` first.
pub fn period(start: &str, end: Option<&str>, max_days: u32) -> Result<DateRange, ParamError> {
    let start = day(start, Param::query("start"))?;
    let end = match end {
        Some(raw) => day(raw, Param::query("end"))?,
        None => start,
    };
    Ok(DateRange::up_to(start, end, max_days)?)
}

/// `range` (clamped already) refused, naming `start` as given, when it starts before
/// `earliest` (the history horizon; `None` without one).
pub fn within_horizon(
    range: DateRange,
    start: &str,
    earliest: Option<EarliestDay>,
) -> Result<DateRange, ParamError> {
    match earliest {
        Some(earliest) if range.start() < earliest.day => Err(ParamError::BeforeHorizon {
            value: start.chars().take(ECHO_MAX_CHARS).collect(),
            earliest,
            clamped: range.clamped().then(|| (range.start(), range.days())),
        }),
        _ => Ok(range),
    }
}

/// Call direction; `inbound` is the default of /calls/summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Inbound,
    Outbound,
}

impl Direction {
    /// Each direction once.
    pub const ALL: [Self; 2] = [Self::Inbound, Self::Outbound];

    /// Parses `inbound` or `outbound`, case-sensitively.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        match raw {
            "inbound" => Ok(Self::Inbound),
            "outbound" => Ok(Self::Outbound),
            _ => Err(ParamError::invalid(
                Param::query("direction"),
                raw,
                DIRECTION_FORM,
            )),
        }
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
        label(raw, "shift", SHIFT_FORM).map(Self)
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A roster's team as a partner asks for it: 1 to 64 characters without control characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Team(String);

impl Team {
    /// Accepts 1 to 64 characters without control characters.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        label(raw, "team", TEAM_FORM).map(Self)
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A roster label (`shift`, `team`) of 1 to 64 characters without control characters, or the
/// error naming `name`.
fn label(raw: &str, name: &'static str, form: &'static str) -> Result<String, ParamError> {
    let chars = raw.chars().count();
    if chars == 0 || chars > SHIFT_MAX_CHARS || raw.chars().any(char::is_control) {
        return Err(ParamError::invalid(Param::query(name), raw, form));
    }
    Ok(raw.to_owned())
}

/// The agents of /calls/agents narrowed to a team and/or a shift of the roster (exact,
/// case-sensitive); both `None`: every agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RosterFilter {
    pub team: Option<Team>,
    pub shift: Option<Shift>,
}

impl RosterFilter {
    /// Whether it narrows the list at all.
    #[must_use]
    pub const fn is_set(&self) -> bool {
        self.team.is_some() || self.shift.is_some()
    }

    /// Whether an operator of `team` on `shift` is listed.
    #[must_use]
    pub fn admits(&self, team: &str, shift: &str) -> bool {
        self.team.as_ref().is_none_or(|t| t.as_str() == team)
            && self.shift.as_ref().is_none_or(|s| s.as_str() == shift)
    }

    /// Refuses a team or a shift that no operator of the roster (`(team, shift)` of each) has,
    /// listing those it has; the team is checked first.
    pub fn check<'a>(
        &self,
        roster: impl Iterator<Item = (&'a str, &'a str)> + Clone,
    ) -> Result<(), ParamError> {
        let known = |asked: Option<&str>, name: &'static str, values: Vec<&str>| {
            let Some(asked) = asked else { return Ok(()) };
            if values.contains(&asked) {
                return Ok(());
            }
            let mut existing: Vec<String> = values.into_iter().map(str::to_owned).collect();
            existing.sort();
            existing.dedup();
            Err(ParamError::NotInRoster {
                param: Param::query(name),
                value: asked.to_owned(),
                existing,
            })
        };
        known(
            self.team.as_ref().map(Team::as_str),
            "team",
            roster.clone().map(|(team, _)| team).collect(),
        )?;
        known(
            self.shift.as_ref().map(Shift::as_str),
            "shift",
            roster.map(|(_, shift)| shift).collect(),
        )
    }
}

/// The query parameter `name` as a whole number within `range`: ASCII digits only (no sign,
/// no fraction, no spaces), or the error naming `name` and `form`.
fn whole_number(
    raw: &str,
    name: &'static str,
    form: &'static str,
    range: std::ops::RangeInclusive<u16>,
) -> Result<u16, ParamError> {
    let invalid = || ParamError::invalid(Param::query(name), raw, form);
    if raw.is_empty() || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    raw.parse::<u32>()
        .ok()
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| range.contains(n))
        .ok_or_else(invalid)
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
        let limit = whole_number(raw, "limit", LIMIT_FORM, 1..=u16::from(SCRIPTS_LIMIT_MAX))?;
        u8::try_from(limit)
            .map(Self)
            .map_err(|_| ParamError::invalid(Param::query("limit"), raw, LIMIT_FORM))
    }

    #[must_use]
    pub fn get(self) -> usize {
        usize::from(self.0)
    }
}

/// `sl_threshold`: the wait, in whole seconds 1..=3600, within which an answered call counts
/// toward the service level; 20 by default (the common "80 % within 20 s" target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlThreshold(u16);

impl Default for SlThreshold {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl SlThreshold {
    pub const DEFAULT: Self = Self(20);
    /// The longest threshold: an hour.
    pub const MAX_SECONDS: u16 = 3600;

    /// Accepts ASCII digits only (no sign, no fraction, no spaces) with a value in 1..=3600.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        whole_number(
            raw,
            "sl_threshold",
            SL_THRESHOLD_FORM,
            1..=Self::MAX_SECONDS,
        )
        .map(Self)
    }

    /// A threshold of `seconds`, when it is one (1..=3600).
    #[must_use]
    pub fn seconds(seconds: u16) -> Option<Self> {
        (1..=Self::MAX_SECONDS)
            .contains(&seconds)
            .then_some(Self(seconds))
    }

    #[must_use]
    pub const fn get(self) -> u16 {
        self.0
    }
}

/// `short_abandon`: an unanswered call whose known wait is strictly below this many seconds is
/// a short abandon (the caller hung up before anyone could answer), left out of the abandon
/// rate and the service level. Whole seconds 0..=600; 0 (the default) leaves nothing out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ShortAbandon(u16);

impl ShortAbandon {
    /// The longest: ten minutes.
    pub const MAX_SECONDS: u16 = 600;

    /// Accepts ASCII digits only (no sign, no fraction, no spaces) with a value in 0..=600.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        whole_number(
            raw,
            "short_abandon",
            SHORT_ABANDON_FORM,
            0..=Self::MAX_SECONDS,
        )
        .map(Self)
    }

    /// A bound of `seconds`, when it is one (0..=600).
    #[must_use]
    pub fn seconds(seconds: u16) -> Option<Self> {
        (seconds <= Self::MAX_SECONDS).then_some(Self(seconds))
    }

    #[must_use]
    pub const fn get(self) -> u16 {
        self.0
    }

    /// Whether an unanswered call that waited `wait` seconds is a short abandon.
    #[must_use]
    pub fn is_short(self, wait: f64) -> bool {
        wait < f64::from(self.0)
    }
}

/// What the service figures of a set of calls are measured by: the service level's threshold
/// and the short-abandon bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ServiceRules {
    pub sl_threshold: SlThreshold,
    pub short_abandon: ShortAbandon,
}

impl From<SlThreshold> for ServiceRules {
    /// The threshold, with no short abandons.
    fn from(sl_threshold: SlThreshold) -> Self {
        Self {
            sl_threshold,
            short_abandon: ShortAbandon::default(),
        }
    }
}

/// The query parameter `queue`: a queue name, exact and case-sensitive.
pub fn queue(raw: &str) -> Result<QueueName, ParamError> {
    QueueName::new(raw).map_err(|_| ParamError::invalid(Param::query("queue"), raw, QUEUE_FORM))
}

/// `compare` of /calls/summary: which earlier period the figures are set beside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    /// As many days, ending the day before the period starts.
    PreviousPeriod,
    /// The period moved 7 days back.
    PreviousWeek,
    /// The period moved 364 days back: 52 weeks, so weekdays line up.
    PreviousYear,
}

impl Compare {
    /// Each comparison once.
    pub const ALL: [Self; 3] = [Self::PreviousPeriod, Self::PreviousWeek, Self::PreviousYear];

    /// Parses `previous_period`, `previous_week` or `previous_year`, case-sensitively.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        match raw {
            "previous_period" => Ok(Self::PreviousPeriod),
            "previous_week" => Ok(Self::PreviousWeek),
            "previous_year" => Ok(Self::PreviousYear),
            _ => Err(ParamError::invalid(
                Param::query("compare"),
                raw,
                COMPARE_FORM,
            )),
        }
    }

    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::PreviousPeriod => "previous_period",
            Self::PreviousWeek => "previous_week",
            Self::PreviousYear => "previous_year",
        }
    }

    /// Refuses the comparison when its earlier period of `range` starts before `earliest`.
    pub fn within_horizon(
        self,
        range: &DateRange,
        earliest: EarliestDay,
    ) -> Result<(), ParamError> {
        let starts = self.earlier(range).start();
        if starts < earliest.day {
            return Err(ParamError::CompareBeforeHorizon {
                compare: self,
                starts,
                earliest,
            });
        }
        Ok(())
    }

    /// The earlier period set beside `range`: as long as it, never clamped. A period at the
    /// calendar's start compares with itself (no earlier day exists there).
    #[must_use]
    pub fn earlier(self, range: &DateRange) -> DateRange {
        let days = i64::try_from(range.days()).unwrap_or(1);
        let back = match self {
            Self::PreviousPeriod => days,
            Self::PreviousWeek => 7,
            Self::PreviousYear => 364,
        };
        match (range.start().plus_days(-back), range.end().plus_days(-back)) {
            (Some(start), Some(end)) => DateRange::up_to(start, end, MAX_RANGE_DAYS)
                .unwrap_or_else(|_| DateRange::day(start)),
            _ => DateRange::day(range.start()),
        }
    }
}

/// `granularity` of /calls/trend: how its buckets cut the calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// Tashkent calendar days.
    Day,
    /// ISO weeks, Monday to Sunday.
    #[default]
    Week,
    /// Calendar months.
    Month,
}

impl Granularity {
    /// Each granularity once.
    pub const ALL: [Self; 3] = [Self::Day, Self::Week, Self::Month];

    /// Parses `day`, `week` or `month`, case-sensitively.
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        match raw {
            "day" => Ok(Self::Day),
            "week" => Ok(Self::Week),
            "month" => Ok(Self::Month),
            _ => Err(ParamError::invalid(
                Param::query("granularity"),
                raw,
                GRANULARITY_FORM,
            )),
        }
    }

    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }

    /// The first day of the bucket holding `day`: the day itself, the Monday of its ISO week
    /// or the first of its month.
    #[must_use]
    pub fn bucket_start(self, day: Day) -> Day {
        let date = day.date();
        let back = match self {
            Self::Day => 0,
            Self::Week => i64::from(date.weekday().number_days_from_monday()),
            Self::Month => i64::from(date.day()) - 1,
        };
        day.plus_days(-back).unwrap_or(day)
    }
}

/// The longest period of /calls/trend, in days: a longer one keeps its latest 366.
pub const MAX_TREND_DAYS: u32 = 366;

/// The longest period of /calls/intervals, in days: a longer one keeps its latest 7.
pub const MAX_INTERVAL_DAYS: u32 = 7;

/// `interval` of /calls/intervals: 15, 30 or 60 minutes; 30 by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IntervalMinutes(u8);

impl Default for IntervalMinutes {
    fn default() -> Self {
        Self(30)
    }
}

impl IntervalMinutes {
    /// The lengths WFM tools plan with (Amazon Connect's FIFTEEN_MIN and THIRTY_MIN, an hour).
    pub const ALLOWED: [u8; 3] = [15, 30, 60];

    /// Accepts exactly `15`, `30` or `60` (no sign, no leading zero, no unit).
    pub fn parse(raw: &str) -> Result<Self, ParamError> {
        Self::ALLOWED
            .into_iter()
            .find(|minutes| raw == minutes.to_string())
            .map(Self)
            .ok_or_else(|| ParamError::invalid(Param::query("interval"), raw, INTERVAL_FORM))
    }

    /// An interval of `minutes`, when it is one of [`Self::ALLOWED`].
    #[must_use]
    pub fn minutes(minutes: u8) -> Option<Self> {
        Self::ALLOWED.contains(&minutes).then_some(Self(minutes))
    }

    #[must_use]
    pub const fn get(self) -> u8 {
        self.0
    }

    /// Length in seconds.
    #[must_use]
    pub fn seconds(self) -> u32 {
        u32::from(self.0) * 60
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_date_error_names_parameter_format_and_value() {
        let err = period("2026-11-01", Some("2026-02-30"), MAX_RANGE_DAYS).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid query parameter 'end' "2026-02-30": expected a calendar date YYYY-MM-DD"#
        );
    }

    #[test]
    fn error_quotes_at_most_forty_characters_of_the_value() {
        let long = "x".repeat(500);
        let ParamError::Invalid { value, .. } = period(&long, None, MAX_RANGE_DAYS).unwrap_err()
        else {
            panic!()
        };
        assert_eq!(value.len(), 40);
    }

    #[test]
    fn a_period_ends_on_its_start_unless_an_end_is_given_and_never_before_it() {
        let day = |raw| Day::parse(raw).unwrap();
        assert_eq!(
            period("2026-11-03", None, MAX_RANGE_DAYS).unwrap(),
            DateRange::day(day("2026-11-03"))
        );
        let err = period("2026-11-03", Some("2026-11-02"), MAX_RANGE_DAYS).unwrap_err();
        assert!(matches!(err, ParamError::EndBeforeStart(_)));
        assert_eq!(
            err.to_string(),
            "query parameter 'end' (2026-11-02) is before query parameter 'start' (2026-11-03)"
        );
    }

    fn earliest(raw: &str) -> Option<EarliestDay> {
        Some(EarliestDay {
            day: Day::parse(raw).unwrap(),
            horizon_days: 400,
        })
    }

    #[test]
    fn a_period_from_the_first_day_of_the_horizon_is_accepted_and_one_day_earlier_is_not() {
        let horizon = earliest("2025-10-22");
        let within = |start, end| {
            within_horizon(period(start, end, MAX_RANGE_DAYS).unwrap(), start, horizon)
        };
        assert_eq!(
            within("2025-10-22", None).unwrap().start(),
            Day::parse("2025-10-22").unwrap()
        );
        let err = within("2025-10-21", Some("2025-10-30")).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid query parameter 'start' "2025-10-21": call records are kept for 400 days, so the earliest start is 2025-10-22"#
        );
        let range = period("2025-10-21", None, MAX_RANGE_DAYS).unwrap();
        assert!(
            within_horizon(range, "2025-10-21", None).is_ok(),
            "no horizon, no limit"
        );
    }

    #[test]
    fn the_horizon_applies_to_the_period_after_the_31_day_clamp() {
        let horizon = earliest("2025-10-22");
        let within = |start, end| {
            within_horizon(
                period(start, Some(end), MAX_RANGE_DAYS).unwrap(),
                start,
                horizon,
            )
        };
        // From long before the horizon to a day well inside it: the clamp keeps the latest 31
        // days, all of them within the horizon.
        assert!(within("1900-01-01", "2026-11-25").unwrap().clamped());
        // Clamped to a period that still reaches before the horizon: the message says so.
        assert_eq!(
            within("1900-01-01", "2025-11-20").unwrap_err().to_string(),
            r#"invalid query parameter 'start' "1900-01-01": call records are kept for 400 days, so the earliest start is 2025-10-22 (the period, clamped to its latest 31 days, starts on 2025-10-21)"#
        );
    }

    #[test]
    fn a_path_month_names_the_path_segment() {
        assert_eq!(
            month("2026-13", Param::path("month"))
                .unwrap_err()
                .to_string(),
            r#"invalid path segment 'month' "2026-13": expected a month YYYY-MM with month 01 to 12"#
        );
    }

    #[test]
    fn direction_is_case_sensitive() {
        assert_eq!(Direction::parse("outbound").unwrap(), Direction::Outbound);
        assert!(matches!(
            Direction::parse("Inbound"),
            Err(ParamError::Invalid { .. })
        ));
    }

    #[test]
    fn scripts_limit_is_an_integer_from_1_to_100_defaulting_to_20() {
        assert_eq!(ScriptsLimit::default().get(), 20);
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
    }
}
