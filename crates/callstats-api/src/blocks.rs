//! The blocks of fields that several answers carry, each flattened into them (`#[serde(flatten)]`)
//! so that its fields sit at the answer's top level, where they always were. A figure on every
//! row that carries a block is one field here, with its one description.

use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::model::{self, QueueName};
use callstats_domain::params::ServiceRules;
use callstats_domain::stats::freshness::{self, Measurement};
use callstats_domain::stats::service_level::{
    ServiceTally, abandon_rate_percent, average_handle_time_seconds,
    average_speed_of_answer_seconds, longest_wait_seconds, service_level_percent,
};
use serde::Serialize;
use utoipa::ToSchema;

use crate::schemas::Date;

/// The `period` object of the call responses: the dates actually used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct Period {
    #[schema(value_type = Date)]
    pub start_date: Day,
    #[schema(value_type = Date)]
    pub end_date: Day,
}

impl From<&DateRange> for Period {
    fn from(range: &DateRange) -> Self {
        Self {
            start_date: range.start(),
            end_date: range.end(),
        }
    }
}

/// The service level of /calls/summary: `percent` = 100 × `answered_within_threshold` /
/// `calls_with_wait`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct ServiceLevel {
    /// The `sl_threshold` asked for (default 20).
    pub threshold_seconds: u16,
    /// Answered calls whose wait was at most `threshold_seconds`.
    pub answered_within_threshold: u64,
    /// Calls with a wait time, answered or not: an unanswered call counts against the level
    /// whatever its wait, unless it is a short abandon.
    pub calls_with_wait: u64,
    /// 100 × `answered_within_threshold` / `calls_with_wait`.
    pub percent: f64,
}

impl From<model::ServiceLevel> for ServiceLevel {
    fn from(level: model::ServiceLevel) -> Self {
        Self {
            threshold_seconds: level.threshold_seconds,
            answered_within_threshold: level.answered_within_threshold,
            calls_with_wait: level.calls_with_wait,
            percent: level.percent,
        }
    }
}

/// The speed of answer's spread: each the wait at 1-based position ⌈p/100 × n⌉ of the n
/// answered calls' waits sorted ascending (nearest rank), rounded to 2 decimals.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, ToSchema)]
pub struct SpeedOfAnswerPercentiles {
    /// The median wait of the answered calls.
    pub p50: f64,
    /// The wait 80 % of the answered calls were answered within.
    pub p80: f64,
    /// The wait 90 % of the answered calls were answered within.
    pub p90: f64,
    /// The wait 95 % of the answered calls were answered within.
    pub p95: f64,
}

impl From<model::SpeedOfAnswerPercentiles> for SpeedOfAnswerPercentiles {
    fn from(spread: model::SpeedOfAnswerPercentiles) -> Self {
        Self {
            p50: spread.p50,
            p80: spread.p80,
            p90: spread.p90,
            p95: spread.p95,
        }
    }
}

/// How fresh a period answer's figures are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Freshness {
    /// When the platform was last asked for the oldest of the period's days that have begun
    /// (UTC, to the millisecond): every figure reflects the platform at least as of then. Null
    /// when no day of the period has begun.
    #[schema(format = DateTime, example = "2026-11-21T06:15:30.123Z")]
    pub as_of: Option<String>,
    /// The first date of the period whose figures may still change (the earliest day not yet
    /// settled, or not yet begun). Null when every day of the period is settled.
    #[schema(value_type = Option<Date>)]
    pub provisional_from: Option<Day>,
}

impl From<&freshness::Freshness> for Freshness {
    fn from(fresh: &freshness::Freshness) -> Self {
        Self {
            as_of: fresh.as_of.clone(),
            provisional_from: fresh.provisional_from,
        }
    }
}

/// The two bounds that measured an answer's service figures, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct Measured {
    /// The `sl_threshold` asked for (default 20).
    pub sl_threshold_seconds: u16,
    /// The `short_abandon` asked for (default 0).
    pub short_abandon_seconds: u16,
}

impl From<ServiceRules> for Measured {
    fn from(rules: ServiceRules) -> Self {
        Self {
            sl_threshold_seconds: rules.sl_threshold.get(),
            short_abandon_seconds: rules.short_abandon.get(),
        }
    }
}

/// How a period answer that may take one queue's calls was measured, and how fresh it is: its
/// bounds, its queue and its freshness, in that order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct QueueMeasured {
    #[serde(flatten)]
    pub measured: Measured,
    /// The `queue` asked for; null when none was.
    #[schema(value_type = Option<String>, example = "sales")]
    pub queue: Option<QueueName>,
    #[serde(flatten)]
    pub freshness: Freshness,
}

impl From<&Measurement> for QueueMeasured {
    fn from(measurement: &Measurement) -> Self {
        Self {
            measured: measurement.rules.into(),
            queue: measurement.queue.clone(),
            freshness: (&measurement.freshness).into(),
        }
    }
}

/// How many of a row's calls were offered, answered and abandoned: the counts of
/// /calls/summary over them. Every service row (a queue, an interval, a trend bucket) opens
/// with them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct RowCounts {
    /// Calls of the row (of the direction, and queue when one is asked), answered or not.
    pub offered: u64,
    /// `answered_calls` of /calls/summary over the row's calls.
    pub answered: u64,
    /// `unanswered_calls` of /calls/summary over the row's calls.
    pub unanswered: u64,
    /// `short_abandoned_calls` of /calls/summary over the row's calls.
    pub short_abandoned_calls: u64,
    /// `abandon_rate_percent` of /calls/summary over the row's calls.
    pub abandon_rate_percent: Option<f64>,
}

impl From<&ServiceTally> for RowCounts {
    fn from(tally: &ServiceTally) -> Self {
        Self {
            offered: tally.offered(),
            answered: tally.answered(),
            unanswered: tally.unanswered(),
            short_abandoned_calls: tally.short_abandoned(),
            abandon_rate_percent: abandon_rate_percent(tally),
        }
    }
}

/// The service level and speed of answer of a queue's or an interval's calls (a trend bucket
/// states the same figures in an order of its own).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct RowServiceLevel {
    /// `service_level.percent` of /calls/summary over the row's calls; null when none has a
    /// wait time.
    pub service_level_percent: Option<f64>,
    /// `service_level.answered_within_threshold` of /calls/summary over the row's calls (0 when
    /// none has a wait): summed over rows with `calls_with_wait`, it gives their service level.
    pub answered_within_threshold: u64,
    /// `service_level.calls_with_wait` of /calls/summary over the row's calls (0 when none has).
    pub calls_with_wait: u64,
    /// `average_speed_of_answer_seconds` of /calls/summary over the row's calls.
    pub average_speed_of_answer_seconds: Option<f64>,
}

impl From<&ServiceTally> for RowServiceLevel {
    fn from(tally: &ServiceTally) -> Self {
        Self {
            service_level_percent: service_level_percent(tally),
            answered_within_threshold: tally.answered_within_threshold(),
            calls_with_wait: tally.calls_with_wait(),
            average_speed_of_answer_seconds: average_speed_of_answer_seconds(tally),
        }
    }
}

/// How long a row's calls lasted and waited at most. Every service row closes with them (a
/// queue then adds its average abandon time).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct RowHandling {
    /// `average_handle_time_seconds` of /calls/summary over the row's calls.
    pub average_handle_time_seconds: Option<f64>,
    /// `longest_wait_seconds` of /calls/summary over the row's calls.
    pub longest_wait_seconds: Option<f64>,
}

impl From<&ServiceTally> for RowHandling {
    fn from(tally: &ServiceTally) -> Self {
        Self {
            average_handle_time_seconds: average_handle_time_seconds(tally),
            longest_wait_seconds: longest_wait_seconds(tally),
        }
    }
}
