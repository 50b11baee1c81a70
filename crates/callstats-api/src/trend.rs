//! /calls/trend: the service figures of each day, ISO week or month of up to 366 days.

use callstats_domain::calendar::Day;
use callstats_domain::limits::EarliestDay;
use callstats_domain::params::{
    Direction, GRANULARITY_FORM, Granularity, MAX_TREND_DAYS, ParamError,
};
use callstats_domain::request::ApiRequest;
use callstats_domain::stats::service_level::{
    average_speed_of_answer_seconds, service_level_percent,
};
use callstats_domain::stats::trend::{BucketTally, Trend};
use callstats_domain::tz;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::blocks::{Period, QueueMeasured, RowCounts, RowHandling};
use crate::query::{ParamValues, PeriodQuery, QueuedServiceQuery};

/// The body of /calls/trend.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TrendResponse {
    /// The dates actually used (after the 366-day clamp).
    pub period: Period,
    #[schema(value_type = crate::schemas::Direction)]
    pub direction: Direction,
    #[schema(value_type = crate::schemas::Granularity)]
    pub granularity: Granularity,
    /// Always `+05:00`: buckets are Tashkent days.
    #[schema(example = "+05:00")]
    pub timezone: &'static str,
    /// True when the period asked for was longer than 366 days and its latest 366 were kept.
    pub clamped: bool,
    #[serde(flatten)]
    pub asked: QueueMeasured,
    /// Every bucket that overlaps the period, in time order, cut to the period.
    pub buckets: Vec<TrendBucket>,
}

/// One bucket of /calls/trend: a day, an ISO week or a month, cut to the period.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TrendBucket {
    /// The bucket's first date inside the period.
    #[schema(value_type = crate::schemas::Date)]
    pub start: Day,
    /// The bucket's last date inside the period.
    #[schema(value_type = crate::schemas::Date)]
    pub end: Day,
    /// The bucket's days inside the period: `end` − `start` + 1.
    pub days: u32,
    #[serde(flatten)]
    pub counts: RowCounts,
    /// `service_level.answered_within_threshold` of /calls/summary over the bucket's calls (0
    /// when none has a wait).
    pub answered_within_threshold: u64,
    /// `service_level.calls_with_wait` of /calls/summary over the bucket's calls (0 when none
    /// has a wait).
    pub calls_with_wait: u64,
    /// `service_level.percent` of /calls/summary over the bucket's calls; null when none has a
    /// wait time.
    pub service_level_percent: Option<f64>,
    /// `average_speed_of_answer_seconds` of /calls/summary over the bucket's calls.
    pub average_speed_of_answer_seconds: Option<f64>,
    #[serde(flatten)]
    pub handling: RowHandling,
}

impl From<&Trend> for TrendResponse {
    fn from(trend: &Trend) -> Self {
        Self {
            period: Period::from(&trend.measurement.range),
            direction: trend.measurement.direction,
            granularity: trend.granularity,
            timezone: tz::TASHKENT_LABEL,
            clamped: trend.measurement.range.clamped(),
            asked: (&trend.measurement).into(),
            buckets: trend.buckets.iter().map(TrendBucket::from).collect(),
        }
    }
}

impl From<&BucketTally> for TrendBucket {
    fn from(bucket: &BucketTally) -> Self {
        let tally = &bucket.tally;
        Self {
            start: bucket.start,
            end: bucket.end,
            days: bucket.days(),
            counts: tally.into(),
            answered_within_threshold: tally.answered_within_threshold(),
            calls_with_wait: tally.calls_with_wait(),
            service_level_percent: service_level_percent(tally),
            average_speed_of_answer_seconds: average_speed_of_answer_seconds(tally),
            handling: tally.into(),
        }
    }
}

/// Query of /calls/trend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct TrendQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    #[param(ignore)]
    pub period: PeriodQuery,
    /// The buckets: `day` (Tashkent days), `week` (ISO weeks, Monday to Sunday) or `month`
    /// (calendar months); default `week`. Anything else is a 400.
    #[param(value_type = Option<crate::schemas::Granularity>, inline)]
    pub granularity: ParamValues,
    /// `direction`, `sl_threshold`, `short_abandon` and `queue`.
    #[serde(flatten)]
    #[param(ignore)]
    pub options: QueuedServiceQuery,
}

impl TrendQuery {
    /// The range (trimmed to its latest 366 days), the granularity, the direction, the
    /// threshold, the short-abandon bound, the queue, then the range against the history
    /// horizon.
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_TREND_DAYS)?;
        let granularity = self
            .granularity
            .parsed("granularity", GRANULARITY_FORM, Granularity::parse)?
            .unwrap_or_default();
        let (direction, rules, queue) = self.options.parse()?;
        Ok(ApiRequest::CallsTrend {
            range: self.period.within_horizon(range, earliest)?,
            direction,
            granularity,
            rules,
            queue,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{assert_holds, fields, names};
    use callstats_domain::calendar::DateRange;
    use callstats_domain::testing::{day, inbound_trend, worked_example};
    use serde_json::json;

    #[test]
    fn a_bucket_states_its_span_and_figures_in_order() {
        let range = DateRange::up_to(day("2026-10-28"), day("2026-11-10"), 366).unwrap();
        let trend = inbound_trend(&range, Granularity::Week, &worked_example());
        let body = TrendResponse::from(&trend);
        let bucket = &body.buckets[1];
        let row = serde_json::to_value(bucket).unwrap();
        assert_holds(
            &row,
            &json!({
                "start": "2026-11-02", "end": "2026-11-08", "days": 7, "offered": 5,
                "answered": 4, "unanswered": 1, "short_abandoned_calls": 0,
                "abandon_rate_percent": 20.0, "answered_within_threshold": 2,
                "calls_with_wait": 4, "service_level_percent": 50.0,
                "average_speed_of_answer_seconds": 21.83,
                "average_handle_time_seconds": 75.0, "longest_wait_seconds": 95.25
            }),
        );
        let order = [
            ["start", "end", "days"].map(str::to_owned).to_vec(),
            names(&bucket.counts),
            [
                "answered_within_threshold",
                "calls_with_wait",
                "service_level_percent",
                "average_speed_of_answer_seconds",
            ]
            .map(str::to_owned)
            .to_vec(),
            names(&bucket.handling),
        ]
        .concat();
        assert_eq!(fields(&row), order);
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(
            fields(&json),
            [
                "period",
                "direction",
                "granularity",
                "timezone",
                "clamped",
                "sl_threshold_seconds",
                "short_abandon_seconds",
                "queue",
                "as_of",
                "provisional_from",
                "buckets"
            ]
        );
    }
}
