//! The query strings: what each parameter group reads, and the document's words for it.
//!
//! A query deserialises every value given under each known name ([`ParamValues`]) and ignores
//! unknown names; validation comes later, after the caller is admitted, in a fixed order per
//! endpoint, so the first error reported does not depend on the order of the query string.
//! Each endpoint's query sits in the module of its answer and holds the groups here (flattened,
//! so their names stay top-level) beside the parameters of its own.

// utoipa's IntoParams derive qualifies the types it names.
#![allow(unused_qualifications)]

use callstats_domain::calendar::{DATE_FORM, DateRange};
use callstats_domain::identifiers::QueueName;
use callstats_domain::limits::EarliestDay;
use callstats_domain::params::{
    self, DIRECTION_FORM, Direction, Param, ParamError, QUEUE_FORM, SHORT_ABANDON_FORM,
    SL_THRESHOLD_FORM, ServiceRules, ShortAbandon, SlThreshold,
};
use serde::Deserialize;
use utoipa::IntoParams;

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
    pub fn value(
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
    pub fn required(&self, name: &'static str, expected: &'static str) -> Result<&str, ParamError> {
        self.value(name, expected)?.ok_or(ParamError::Missing {
            param: Param::query(name),
            expected,
        })
    }

    /// The one value given, read by `parse`; `None` when absent.
    pub fn parsed<T>(
        &self,
        name: &'static str,
        expected: &'static str,
        parse: impl FnOnce(&str) -> Result<T, ParamError>,
    ) -> Result<Option<T>, ParamError> {
        self.value(name, expected)?.map(parse).transpose()
    }
}

impl<S: Into<String>> FromIterator<S> for ParamValues {
    fn from_iter<I: IntoIterator<Item = S>>(values: I) -> Self {
        Self(values.into_iter().map(Into::into).collect())
    }
}

/// The period every /calls endpoint takes, `start` and `end`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct PeriodQuery {
    /// First day (Tashkent). Required. Must exist in the calendar.
    #[param(value_type = String, required = true, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$", example = "2026-11-01")]
    pub start: ParamValues,
    /// Last day (Tashkent), defaults to `start`; not before `start`. A period longer than the
    /// endpoint's longest (31 days; 7 on /calls/intervals, 366 on /calls/trend) keeps its
    /// latest days: the answer's `period` says which.
    #[param(value_type = Option<String>, format = Date, pattern = r"^\d{4}-\d{2}-\d{2}$", example = "2026-11-07")]
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
    pub(crate) fn range(&self, max_days: u32) -> Result<DateRange, ParamError> {
        let start = self.start.required("start", DATE_FORM)?;
        params::period(start, self.end.value("end", DATE_FORM)?, max_days)
    }

    /// `range` (clamped already) refused, naming `start`, when it starts before `earliest`.
    pub(crate) fn within_horizon(
        &self,
        range: DateRange,
        earliest: Option<EarliestDay>,
    ) -> Result<DateRange, ParamError> {
        let start = self.start.0.first().map_or("", String::as_str);
        params::within_horizon(range, start, earliest)
    }
}

/// `direction`, inbound by default.
pub(crate) fn direction(given: &ParamValues) -> Result<Direction, ParamError> {
    Ok(given
        .parsed("direction", DIRECTION_FORM, Direction::parse)?
        .unwrap_or_default())
}

/// `queue`, exact and case-sensitive.
pub(crate) fn queue(given: &ParamValues) -> Result<Option<QueueName>, ParamError> {
    given.parsed("queue", QUEUE_FORM, params::queue)
}

/// What measures the service figures of the /calls endpoints that show them (summary, queues,
/// intervals, trend).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct ServiceQuery {
    /// Call direction, case-sensitive; default `inbound`.
    #[param(value_type = Option<crate::schemas::Direction>, inline)]
    pub direction: ParamValues,
    /// Service-level threshold: an answered call counts toward the service level when its
    /// wait is at most this many seconds. Whole seconds from 1 to 3600; default 20.
    #[param(value_type = Option<u16>, minimum = 1, maximum = 3600, example = 20)]
    pub sl_threshold: ParamValues,
    /// Short abandons: an unanswered call whose wait is known and strictly below this many
    /// seconds leaves the abandon rate and the service level (its call counts stay). Whole
    /// seconds from 0 to 600; default 0 (none).
    #[param(value_type = Option<u16>, minimum = 0, maximum = 600, example = 5)]
    pub short_abandon: ParamValues,
}

impl ServiceQuery {
    /// The direction, the threshold, then the short-abandon bound.
    pub(crate) fn parse(&self) -> Result<(Direction, ServiceRules), ParamError> {
        let direction = direction(&self.direction)?;
        let sl_threshold = self
            .sl_threshold
            .parsed("sl_threshold", SL_THRESHOLD_FORM, SlThreshold::parse)?
            .unwrap_or_default();
        let short_abandon = self
            .short_abandon
            .parsed("short_abandon", SHORT_ABANDON_FORM, ShortAbandon::parse)?
            .unwrap_or_default();
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
/// intervals, trend).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct QueueQuery {
    /// Only the calls offered by this queue (exact, case-sensitive). A queue without calls in
    /// the period gives zeros; empty is a 400.
    #[param(value_type = Option<String>, min_length = 1, max_length = 64, pattern = r"^[^\x00-\x1F\x7F-\x9F]+$", example = "sales")]
    pub queue: ParamValues,
}

impl QueueQuery {
    pub(crate) fn parse(&self) -> Result<Option<QueueName>, ParamError> {
        queue(&self.queue)
    }
}

/// The service options and `queue`, as the /calls endpoints that give one queue's service
/// figures (summary, intervals, trend) take them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct QueuedServiceQuery {
    /// `direction`, `sl_threshold` and `short_abandon`.
    #[serde(flatten)]
    pub service: ServiceQuery,
    /// `queue`.
    #[serde(flatten)]
    pub queue: QueueQuery,
}

impl QueuedServiceQuery {
    /// The direction, the threshold, the short-abandon bound, then the queue.
    pub(crate) fn parse(&self) -> Result<(Direction, ServiceRules, Option<QueueName>), ParamError> {
        let (direction, rules) = self.service.parse()?;
        Ok((direction, rules, self.queue.parse()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(values: &[&str]) -> ParamValues {
        values.iter().copied().collect()
    }

    #[test]
    fn direction_defaults_to_inbound_and_is_case_sensitive() {
        let direction = |values: &[&str]| direction(&given(values));
        assert_eq!(direction(&[]).unwrap(), Direction::Inbound);
        assert_eq!(direction(&["outbound"]).unwrap(), Direction::Outbound);
        assert!(matches!(
            direction(&["Inbound"]),
            Err(ParamError::Invalid { .. })
        ));
        assert!(matches!(direction(&[""]), Err(ParamError::Empty { .. })));
    }

    #[test]
    fn a_period_without_start_is_refused_and_one_given_twice_too() {
        let missing = PeriodQuery {
            end: given(&["2026-11-03"]),
            ..PeriodQuery::default()
        };
        assert_eq!(
            missing.range(31).unwrap_err().to_string(),
            "missing query parameter 'start': expected a calendar date YYYY-MM-DD"
        );
        let twice = PeriodQuery {
            start: given(&["2026-11-01", "2026-11-02"]),
            ..PeriodQuery::default()
        };
        assert_eq!(
            twice.range(31).unwrap_err().to_string(),
            "query parameter 'start' is given more than once"
        );
    }
}
