//! The request parameters: one typed query per endpoint, which deserialises from a query string,
//! documents itself for the OpenAPI document (feature `openapi`) and validates into the domain's
//! value types, or into a [`ParamError`] that names the parameter, the form expected and the
//! value received.
//!
//! A query deserialises every value given under each known name ([`ParamValues`]) and ignores unknown
//! names; validation comes later, after the caller is admitted, in a fixed order per endpoint, so
//! the first error reported does not depend on the order of the query string.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::calendar::{
    DATE_FORM, DateRange, Day, EndBeforeStart, MAX_RANGE_DAYS, MONTH_FORM, Month,
};
use crate::identifiers::QueueName;
use crate::limits::EarliestDay;
use crate::request::ApiRequest;

/// Default of `limit` on /scripts/stats.
pub const SCRIPTS_LIMIT_DEFAULT: u8 = 20;
/// Upper bound of `limit` on /scripts/stats.
pub const SCRIPTS_LIMIT_MAX: u8 = 100;
/// Longest accepted shift label, in characters.
pub const SHIFT_MAX_CHARS: usize = 64;
/// How much of a rejected value an error message quotes back.
const ECHO_MAX_CHARS: usize = 40;

const DIRECTION_FORM: &str = "'inbound' or 'outbound'";
const LIMIT_FORM: &str = "an integer from 1 to 100";
const SHIFT_FORM: &str = "a shift label of 1 to 64 printable characters";
const TEAM_FORM: &str = "a team label of 1 to 64 printable characters";
/// How many of the roster's values a refused `team` or `shift` lists.
const ROSTER_VALUES_SHOWN: usize = 50;
const SL_THRESHOLD_FORM: &str = "whole seconds from 1 to 3600";
const SHORT_ABANDON_FORM: &str = "whole seconds from 0 to 600";
const INTERVAL_FORM: &str = "15, 30 or 60 (minutes)";
const GRANULARITY_FORM: &str = "'day', 'week' or 'month'";
const COMPARE_FORM: &str = "'previous_period', 'previous_week' or 'previous_year'";
const QUEUE_FORM: &str = "a queue name of 1 to 64 bytes of printable text";

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

/// One query parameter as the request gave it: every value under its name, in order; none when
/// it is absent. A known parameter given twice is an error rather than a silent pick.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamValues(Vec<String>);

impl<'de> Deserialize<'de> for ParamValues {
    /// A sequence of strings, or one string: inside a flattened struct ([`PeriodQuery`]) serde
    /// hands a parameter given once over as a plain string.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMore {
            One(String),
            More(Vec<String>),
        }
        Ok(Self(match OneOrMore::deserialize(deserializer)? {
            OneOrMore::One(value) => vec![value],
            OneOrMore::More(values) => values,
        }))
    }
}

impl ParamValues {
    /// The one value given: `None` when absent, an error when empty or repeated.
    fn value(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<Option<&str>, ParamError> {
        let param = Param::query(name);
        match self.0.as_slice() {
            [] => Ok(None),
            [value] if value.is_empty() => Err(ParamError::Empty { param, expected }),
            [value] => Ok(Some(value)),
            _ => Err(ParamError::Repeated { param }),
        }
    }

    /// The one value given; absent is an error too.
    fn required(&self, name: &'static str, expected: &'static str) -> Result<&str, ParamError> {
        self.value(name, expected)?.ok_or(ParamError::Missing {
            param: Param::query(name),
            expected,
        })
    }
}

impl<S: Into<String>> FromIterator<S> for ParamValues {
    fn from_iter<I: IntoIterator<Item = S>>(values: I) -> Self {
        Self(values.into_iter().map(Into::into).collect())
    }
}

fn day(raw: &str, param: Param) -> Result<Day, ParamError> {
    Day::parse(raw).map_err(|err| ParamError::invalid(param, raw, err.expected))
}

/// Parses a month, naming `param` when it is not one.
pub fn month(raw: &str, param: Param) -> Result<Month, ParamError> {
    Month::parse(raw).map_err(|err| ParamError::invalid(param, raw, err.expected))
}

/// The period every /calls endpoint takes, `start` and `end`: each endpoint's query holds it
/// (flattened, so the names stay top-level) beside the parameters of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct PeriodQuery {
    /// First day (Tashkent). Required. Must exist in the calendar.
    #[cfg_attr(feature = "openapi", param(value_type = String, required = true, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$", example = "2026-11-01"))]
    pub start: ParamValues,
    /// Last day (Tashkent), defaults to `start`; not before `start`. A period longer than the
    /// endpoint's longest (31 days; 7 on /calls/intervals, 366 on /calls/trend) keeps its
    /// latest days: the answer's `period` says which.
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$", example = "2026-11-07"))]
    pub end: ParamValues,
}

impl PeriodQuery {
    /// A period of `start`, through `end` when one is given.
    #[must_use]
    pub fn of(start: &str, end: Option<&str>) -> Self {
        Self {
            start: [start].into_iter().collect(),
            end: end.into_iter().collect(),
        }
    }

    /// `start` (required) and `end` (defaults to `start`), in that order, clamped to their
    /// latest `max_days` days.
    fn range(&self, max_days: u32) -> Result<DateRange, ParamError> {
        let start = day(
            self.start.required("start", DATE_FORM)?,
            Param::query("start"),
        )?;
        let end = match self.end.value("end", DATE_FORM)? {
            Some(raw) => day(raw, Param::query("end"))?,
            None => start,
        };
        Ok(DateRange::up_to(start, end, max_days)?)
    }

    /// `range` (clamped already) refused, naming `start`, when it starts before `earliest`.
    fn within_horizon(
        &self,
        range: DateRange,
        earliest: Option<EarliestDay>,
    ) -> Result<DateRange, ParamError> {
        match earliest {
            Some(earliest) if range.start() < earliest.day => Err(ParamError::BeforeHorizon {
                value: self
                    .start
                    .0
                    .first()
                    .map(|raw| raw.chars().take(ECHO_MAX_CHARS).collect())
                    .unwrap_or_default(),
                earliest,
                clamped: range.clamped().then(|| (range.start(), range.days())),
            }),
            _ => Ok(range),
        }
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
                DIRECTION_FORM,
            )),
        }
    }

    /// The optional query parameter `direction`, inbound by default.
    fn given(given: &ParamValues) -> Result<Self, ParamError> {
        given
            .value("direction", DIRECTION_FORM)?
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

    /// The optional query parameter `sl_threshold`.
    fn given(given: &ParamValues) -> Result<Self, ParamError> {
        given
            .value("sl_threshold", SL_THRESHOLD_FORM)?
            .map_or(Ok(Self::default()), Self::parse)
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

    /// The optional query parameter `short_abandon`.
    fn given(given: &ParamValues) -> Result<Self, ParamError> {
        given
            .value("short_abandon", SHORT_ABANDON_FORM)?
            .map_or(Ok(Self::default()), Self::parse)
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

/// The optional query parameter `queue`: a queue name, exact and case-sensitive.
fn queue_given(given: &ParamValues) -> Result<Option<QueueName>, ParamError> {
    given
        .value("queue", QUEUE_FORM)?
        .map(|raw| {
            QueueName::new(raw)
                .map_err(|_| ParamError::invalid(Param::query("queue"), raw, QUEUE_FORM))
        })
        .transpose()
}

/// What measures the service figures of the /calls endpoints that show them (summary, queues,
/// intervals, trend): each endpoint's query holds it, flattened, beside its own parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct ServiceQuery {
    /// Call direction, case-sensitive; default `inbound`.
    #[cfg_attr(feature = "openapi", param(value_type = Option<Direction>, inline))]
    pub direction: ParamValues,
    /// Service-level threshold: an answered call counts toward the service level when its
    /// wait is at most this many seconds. Whole seconds from 1 to 3600; default 20.
    #[cfg_attr(feature = "openapi", param(value_type = Option<u16>, minimum = 1, maximum = 3600, example = 20))]
    pub sl_threshold: ParamValues,
    /// Short abandons: an unanswered call whose wait is known and strictly below this many
    /// seconds leaves the abandon rate and the service level (its call counts stay). Whole
    /// seconds from 0 to 600; default 0 (none).
    #[cfg_attr(feature = "openapi", param(value_type = Option<u16>, minimum = 0, maximum = 600, example = 5))]
    pub short_abandon: ParamValues,
}

impl ServiceQuery {
    /// The direction, the threshold, then the short-abandon bound.
    fn parse(&self) -> Result<(Direction, ServiceRules), ParamError> {
        let direction = Direction::given(&self.direction)?;
        let sl_threshold = SlThreshold::given(&self.sl_threshold)?;
        let short_abandon = ShortAbandon::given(&self.short_abandon)?;
        Ok((
            direction,
            ServiceRules {
                sl_threshold,
                short_abandon,
            },
        ))
    }
}

/// `queue` of the /calls endpoints whose figures one queue's calls can give (summary,
/// intervals, trend), flattened into their queries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct QueueQuery {
    /// Only the calls offered by this queue (exact, case-sensitive). A queue without calls in
    /// the period gives zeros; empty is a 400.
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]+$", example = "sales"))]
    pub queue: ParamValues,
}

impl QueueQuery {
    fn parse(&self) -> Result<Option<QueueName>, ParamError> {
        queue_given(&self.queue)
    }
}

/// Query of /calls/summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct SummaryQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub period: PeriodQuery,
    /// `direction`, `sl_threshold` and `short_abandon`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub service: ServiceQuery,
    /// `queue`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub queue: QueueQuery,
    /// The same figures for an earlier period, in `comparison`: `previous_period` (as many
    /// days, ending the day before the period starts), `previous_week` (the period 7 days
    /// earlier) or `previous_year` (364 days earlier, so weekdays line up). It applies to the
    /// period after the 31-day clamp; an earlier period starting before the history horizon is
    /// a 400 naming the earliest date allowed.
    #[cfg_attr(feature = "openapi", param(value_type = Option<Compare>, inline))]
    pub compare: ParamValues,
}

impl SummaryQuery {
    /// The range, the direction, the threshold, the queue, the comparison, then the range and
    /// the earlier period against the history horizon (`earliest`, `None` without one).
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_RANGE_DAYS)?;
        let (direction, rules) = self.service.parse()?;
        let queue = self.queue.parse()?;
        let compare = Compare::given(&self.compare)?;
        let range = self.period.within_horizon(range, earliest)?;
        if let (Some(compare), Some(earliest)) = (compare, earliest) {
            let starts = compare.earlier(&range).start();
            if starts < earliest.day {
                return Err(ParamError::CompareBeforeHorizon {
                    compare,
                    starts,
                    earliest,
                });
            }
        }
        Ok(ApiRequest::CallsSummary {
            range,
            direction,
            rules,
            queue,
            compare,
        })
    }
}

/// `compare` of /calls/summary: which earlier period the figures are set beside.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

    /// The optional query parameter `compare`.
    fn given(given: &ParamValues) -> Result<Option<Self>, ParamError> {
        given
            .value("compare", COMPARE_FORM)?
            .map(Self::parse)
            .transpose()
    }

    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::PreviousPeriod => "previous_period",
            Self::PreviousWeek => "previous_week",
            Self::PreviousYear => "previous_year",
        }
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

    /// The optional query parameter `granularity`, week by default.
    fn given(given: &ParamValues) -> Result<Self, ParamError> {
        given
            .value("granularity", GRANULARITY_FORM)?
            .map_or(Ok(Self::default()), Self::parse)
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

/// Query of /calls/trend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct TrendQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub period: PeriodQuery,
    /// The buckets: `day` (Tashkent days), `week` (ISO weeks, Monday to Sunday) or `month`
    /// (calendar months); default `week`. Anything else is a 400.
    #[cfg_attr(feature = "openapi", param(value_type = Option<Granularity>, inline))]
    pub granularity: ParamValues,
    /// `direction`, `sl_threshold` and `short_abandon`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub service: ServiceQuery,
    /// `queue`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub queue: QueueQuery,
}

impl TrendQuery {
    /// The range (trimmed to its latest 366 days), the granularity, the direction, the
    /// threshold, the short-abandon bound, the queue, then the range against the history
    /// horizon.
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_TREND_DAYS)?;
        let granularity = Granularity::given(&self.granularity)?;
        let (direction, rules) = self.service.parse()?;
        let queue = self.queue.parse()?;
        Ok(ApiRequest::CallsTrend {
            range: self.period.within_horizon(range, earliest)?,
            direction,
            granularity,
            rules,
            queue,
        })
    }
}

/// Query of /calls/queues: the period and the service options, nothing of its own (its
/// document lists `PeriodQuery` and `ServiceQuery`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct QueuesQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    pub period: PeriodQuery,
    /// `direction`, `sl_threshold` and `short_abandon`.
    #[serde(flatten)]
    pub service: ServiceQuery,
}

impl QueuesQuery {
    /// The range, the direction, the threshold, the short-abandon bound, then the range
    /// against the history horizon.
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_RANGE_DAYS)?;
        let (direction, rules) = self.service.parse()?;
        Ok(ApiRequest::CallsQueues {
            range: self.period.within_horizon(range, earliest)?,
            direction,
            rules,
        })
    }
}

/// The schema of `interval` on /calls/intervals: one of 15, 30 or 60 minutes, 30 by default.
#[cfg(feature = "openapi")]
fn interval_minutes_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .enum_values(Some(IntervalMinutes::ALLOWED))
        .default(Some(30.into()))
        .examples([15])
        .into()
}

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

    fn given(given: &ParamValues) -> Result<Self, ParamError> {
        given
            .value("interval", INTERVAL_FORM)?
            .map_or(Ok(Self::default()), Self::parse)
    }
}

/// Query of /calls/intervals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct IntervalsQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub period: PeriodQuery,
    /// Length of an interval in minutes: 15, 30 or 60; default 30. Anything else is a 400.
    #[cfg_attr(feature = "openapi", param(required = false, schema_with = interval_minutes_schema))]
    pub interval: ParamValues,
    /// `direction`, `sl_threshold` and `short_abandon`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub service: ServiceQuery,
    /// `queue`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub queue: QueueQuery,
}

impl IntervalsQuery {
    /// The range (trimmed to its latest 7 days), the interval, the direction, the threshold,
    /// the queue, then the range against the history horizon.
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_RANGE_DAYS)?.latest(MAX_INTERVAL_DAYS);
        let interval = IntervalMinutes::given(&self.interval)?;
        let (direction, rules) = self.service.parse()?;
        let queue = self.queue.parse()?;
        Ok(ApiRequest::CallsIntervals {
            range: self.period.within_horizon(range, earliest)?,
            direction,
            interval,
            rules,
            queue,
        })
    }
}

/// Query of /calls/agents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct AgentsQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", param(ignore))]
    pub period: PeriodQuery,
    /// Accepted and validated (a bad value is a 400) but ignored: the leaderboard counts both
    /// directions.
    #[cfg_attr(feature = "openapi", param(value_type = Option<Direction>, inline))]
    pub direction: ParamValues,
    /// Only the calls offered by this queue (exact, case-sensitive): the agents who answered
    /// them. A queue without calls in the period gives an empty list; empty is a 400.
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]+$", example = "sales"))]
    pub queue: ParamValues,
    /// Only the agents of the roster with this team (exact, case-sensitive, as /operators
    /// shows it); `share_percent` is then over the listed agents. A team no operator has is a
    /// 400 listing the teams there are; empty is a 400.
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]+$", example = "A"))]
    pub team: ParamValues,
    /// Only the agents of the roster on this shift (exact, case-sensitive, as /operators shows
    /// it), with `team` when both are given. A shift no operator has is a 400 listing the
    /// shifts there are; empty is a 400.
    #[cfg_attr(feature = "openapi", param(value_type = Option<String>, min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]+$", example = "day"))]
    pub shift: ParamValues,
}

impl AgentsQuery {
    /// The range; the direction is validated, so that one query string works on both call
    /// endpoints, but the leaderboard always counts both directions; the queue, the team and
    /// the shift; then the range against the history horizon (`earliest`, `None` without one).
    /// Whether the roster has the team and the shift is checked when answered.
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_RANGE_DAYS)?;
        Direction::given(&self.direction)?;
        let queue = queue_given(&self.queue)?;
        let team = self
            .team
            .value("team", TEAM_FORM)?
            .map(Team::parse)
            .transpose()?;
        let shift = self
            .shift
            .value("shift", SHIFT_FORM)?
            .map(Shift::parse)
            .transpose()?;
        Ok(ApiRequest::CallsAgents {
            range: self.period.within_horizon(range, earliest)?,
            queue,
            roster: RosterFilter { team, shift },
        })
    }
}

/// Path of /kpi/{month}.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Path)
)]
pub struct MonthPath {
    /// The month, `YYYY-MM` with month 01 to 12 (`2026-13` is a 400).
    #[cfg_attr(
        feature = "openapi",
        param(pattern = r"^\d{4}-(0[1-9]|1[0-2])$", example = "2026-11")
    )]
    pub month: String,
}

/// Query of /kpi/{month}.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct KpiQuery {
    /// Shift label of the sheet to show (1 to 64 characters, no control characters). Without
    /// it, the lowest-sorting shift (byte-wise) is shown; a shift with no published sheet that
    /// month is a 404 listing the shifts that exist.
    // The pattern excludes exactly what `char::is_control` refuses (Unicode category Cc).
    #[cfg_attr(
        feature = "openapi",
        param(
            value_type = Option<String>,
            min_length = 1,
            max_length = 64,
            pattern = r"^[^\x00-\x1F\x7F-\x9F]+$",
            example = "day"
        )
    )]
    pub shift: ParamValues,
}

impl KpiQuery {
    /// The shift asked for, if any.
    pub fn parse(&self) -> Result<Option<Shift>, ParamError> {
        self.shift
            .value("shift", SHIFT_FORM)?
            .map(Shift::parse)
            .transpose()
    }
}

/// Query of /schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct ScheduleQuery {
    /// The month, `YYYY-MM` with month 01 to 12. Required.
    #[cfg_attr(feature = "openapi", param(value_type = String, required = true, pattern = r"^\d{4}-(0[1-9]|1[0-2])$", example = "2026-11"))]
    pub month: ParamValues,
}

impl ScheduleQuery {
    /// The month (required).
    pub fn parse(&self) -> Result<Month, ParamError> {
        month(
            self.month.required("month", MONTH_FORM)?,
            Param::query("month"),
        )
    }
}

/// Query of /scripts/stats.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct ScriptsQuery {
    /// How many scripts, ASCII digits only, 1 to 100.
    #[cfg_attr(feature = "openapi", param(value_type = Option<u8>, minimum = 1, maximum = 100, default = 20, example = 10))]
    pub limit: ParamValues,
}

impl ScriptsQuery {
    /// The limit, 20 by default.
    pub fn parse(&self) -> Result<ScriptsLimit, ParamError> {
        self.limit
            .value("limit", LIMIT_FORM)?
            .map_or(Ok(ScriptsLimit::default()), ScriptsLimit::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(values: &[&str]) -> ParamValues {
        values.iter().copied().collect()
    }

    /// The period of a validated summary request.
    fn summary_range(request: ApiRequest) -> DateRange {
        match request {
            ApiRequest::CallsSummary { range, .. } => range,
            other => panic!("not a summary: {other:?}"),
        }
    }

    fn summary(start: &[&str], end: &[&str], direction: &[&str]) -> SummaryQuery {
        SummaryQuery {
            period: PeriodQuery {
                start: given(start),
                end: given(end),
            },
            service: ServiceQuery {
                direction: given(direction),
                ..ServiceQuery::default()
            },
            ..SummaryQuery::default()
        }
    }

    #[test]
    fn invalid_date_error_names_parameter_format_and_value() {
        let err = summary(&["2026-11-01"], &["2026-02-30"], &[])
            .parse(None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid query parameter 'end' "2026-02-30": expected a calendar date YYYY-MM-DD"#
        );
    }

    #[test]
    fn error_quotes_at_most_forty_characters_of_the_value() {
        let long = "x".repeat(500);
        let ParamError::Invalid { value, .. } =
            summary(&[&long], &[], &[]).parse(None).unwrap_err()
        else {
            panic!()
        };
        assert_eq!(value.len(), 40);
    }

    #[test]
    fn range_end_defaults_to_start() {
        let Ok(ApiRequest::CallsSummary {
            range, direction, ..
        }) = summary(&["2026-11-03"], &[], &[]).parse(None)
        else {
            panic!("not a summary")
        };
        assert_eq!(range, DateRange::day(Day::parse("2026-11-03").unwrap()));
        assert_eq!(direction, Direction::Inbound);
    }

    #[test]
    fn range_without_start_is_rejected() {
        let err = summary(&[], &["2026-11-03"], &[]).parse(None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing query parameter 'start': expected a calendar date YYYY-MM-DD"
        );
    }

    #[test]
    fn range_with_end_before_start_is_rejected() {
        let err = summary(&["2026-11-03"], &["2026-11-02"], &[])
            .parse(None)
            .unwrap_err();
        assert!(matches!(err, ParamError::EndBeforeStart(_)));
        assert_eq!(
            err.to_string(),
            "query parameter 'end' (2026-11-02) is before query parameter 'start' (2026-11-03)"
        );
    }

    #[test]
    fn errors_come_in_a_fixed_order_start_end_then_direction() {
        let err = summary(&["x"], &["y"], &["z"]).parse(None).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid query parameter 'start'")
        );
        let err = summary(&["2026-11-01"], &["y"], &["z"])
            .parse(None)
            .unwrap_err();
        assert!(err.to_string().starts_with("invalid query parameter 'end'"));
        let err = summary(&["2026-11-01"], &[], &["z"])
            .parse(None)
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid query parameter 'direction'")
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
        let range = summary(&["2025-10-22"], &[], &[])
            .parse(horizon)
            .map(summary_range)
            .unwrap();
        assert_eq!(range.start(), Day::parse("2025-10-22").unwrap());
        let err = summary(&["2025-10-21"], &["2025-10-30"], &[])
            .parse(horizon)
            .unwrap_err();
        assert!(matches!(err, ParamError::BeforeHorizon { .. }));
        assert_eq!(
            err.to_string(),
            r#"invalid query parameter 'start' "2025-10-21": call records are kept for 400 days, so the earliest start is 2025-10-22"#
        );
        let agents = AgentsQuery {
            period: PeriodQuery::of("2025-10-21", None),
            ..AgentsQuery::default()
        };
        assert_eq!(agents.parse(horizon).unwrap_err(), err);
        assert!(agents.parse(None).is_ok(), "no horizon, no limit");
    }

    #[test]
    fn the_horizon_applies_to_the_period_after_the_31_day_clamp() {
        let horizon = earliest("2025-10-22");
        // From long before the horizon to a day well inside it: the clamp keeps the latest 31
        // days, all of them within the horizon.
        let range = summary(&["1900-01-01"], &["2026-11-25"], &[])
            .parse(horizon)
            .map(summary_range)
            .unwrap();
        assert!(range.clamped());
        // Clamped to a period that still reaches before the horizon: the message says so.
        let err = summary(&["1900-01-01"], &["2025-11-20"], &[])
            .parse(horizon)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid query parameter 'start' "1900-01-01": call records are kept for 400 days, so the earliest start is 2025-10-22 (the period, clamped to its latest 31 days, starts on 2025-10-21)"#
        );
    }

    #[test]
    fn the_horizon_is_checked_after_the_other_parameters() {
        let err = summary(&["2020-01-01"], &[], &["Inbound"])
            .parse(earliest("2025-10-22"))
            .unwrap_err();
        assert!(matches!(err, ParamError::Invalid { .. }), "{err}");
    }

    #[test]
    fn schedule_month_is_required() {
        let err = ScheduleQuery::default().parse().unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing query parameter 'month': expected a month YYYY-MM with month 01 to 12"
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
    fn direction_defaults_to_inbound_and_is_case_sensitive() {
        let direction = |values: &[&str]| Direction::given(&given(values));
        assert_eq!(direction(&[]).unwrap(), Direction::Inbound);
        assert_eq!(direction(&["outbound"]).unwrap(), Direction::Outbound);
        assert!(matches!(
            direction(&["Inbound"]),
            Err(ParamError::Invalid { .. })
        ));
        assert!(matches!(direction(&[""]), Err(ParamError::Empty { .. })));
    }

    #[test]
    fn scripts_limit_is_an_integer_from_1_to_100_defaulting_to_20() {
        assert_eq!(ScriptsQuery::default().parse().unwrap().get(), 20);
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
        let empty = ScriptsQuery {
            limit: given(&[""]),
        };
        assert!(matches!(empty.parse(), Err(ParamError::Empty { .. })));
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
        let empty = KpiQuery {
            shift: given(&[""]),
        };
        assert!(matches!(empty.parse(), Err(ParamError::Empty { .. })));
        assert_eq!(KpiQuery::default().parse().unwrap(), None);
    }

    #[test]
    fn a_known_parameter_given_twice_is_rejected() {
        let err = summary(&["2026-11-01", "2026-11-02"], &[], &[])
            .parse(None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "query parameter 'start' is given more than once"
        );
        let err = summary(&["2026-11-01"], &[], &["", ""])
            .parse(None)
            .unwrap_err();
        assert!(matches!(err, ParamError::Repeated { .. }));
    }
}
