//! /calls/summary: the daily series, hourly histogram, peaks and service figures of a period.

use callstats_domain::calendar::{Day, MAX_RANGE_DAYS};
use callstats_domain::limits::EarliestDay;
use callstats_domain::model;
use callstats_domain::params::{COMPARE_FORM, Compare, Direction, ParamError};
use callstats_domain::request::ApiRequest;
use callstats_domain::stats::service_level::{
    ServiceTally, abandon_rate_percent, average_abandon_time_seconds, average_handle_time_seconds,
    average_speed_of_answer_seconds, longest_wait_seconds, service_level,
    speed_of_answer_percentiles,
};
use callstats_domain::stats::summary::{Earlier, Summary};
use callstats_domain::tz;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::blocks::{Freshness, Period, ServiceLevel, SpeedOfAnswerPercentiles};
use crate::query::{ParamValues, PeriodQuery, QueuedServiceQuery};
use crate::schemas::Date;

/// The body of /calls/summary.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct CallSummary {
    pub period: Period,
    #[schema(value_type = crate::schemas::Direction)]
    pub direction: Direction,
    pub clamped: bool,
    pub timezone: &'static str,
    #[serde(flatten)]
    pub freshness: Freshness,
    #[serde(flatten)]
    pub counts: CallCounts,
    /// The `short_abandon` asked for (default 0: no call is a short abandon).
    pub short_abandon_seconds: u16,
    /// 100 × (unanswered_calls − short_abandoned_calls) / (total_calls −
    /// short_abandoned_calls); null when that is 0.
    pub abandon_rate_percent: Option<f64>,
    /// Answered within `sl_threshold` seconds among the calls with a wait time, answered or
    /// not, short abandons left out; null when no call has one (the platform sends no waits,
    /// or outbound calls).
    pub service_level: Option<ServiceLevel>,
    /// Mean wait of the answered calls that have one; null when none has.
    pub average_speed_of_answer_seconds: Option<f64>,
    /// The nearest-rank percentiles of the waits of the answered calls that have one; null
    /// when none has.
    pub speed_of_answer_percentiles: Option<SpeedOfAnswerPercentiles>,
    /// The longest wait among the calls that have one, answered or not; null when none has.
    pub longest_wait_seconds: Option<f64>,
    /// Mean wait of the unanswered calls that have one and are not short abandons; null when
    /// none has.
    pub average_abandon_time_seconds: Option<f64>,
    /// Mean duration of the answered calls (talk time: the records hold no after-call work);
    /// null when none was answered.
    pub average_handle_time_seconds: Option<f64>,
    pub daily: Vec<DayCount>,
    /// 24 buckets, hour ascending, for a single day; null otherwise.
    pub hourly: Option<Vec<HourCount>>,
    pub peak_day: DayCount,
    pub peak_hour: Option<HourCount>,
    /// The count of `peak_hour`, the busiest hour (earliest on a tie); 0 for several days.
    pub peak_hour_count: u64,
    /// The same figures for the earlier period `compare` asked for; null without `compare`.
    pub comparison: Option<Comparison>,
}

/// `{date, count}` of the daily series and of `peak_day`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct DayCount {
    #[schema(value_type = Date)]
    pub date: Day,
    pub count: u64,
}

/// `{hour, count}` of the hourly histogram and of `peak_hour`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct HourCount {
    pub hour: u8,
    pub count: u64,
}

impl From<&model::DayCount> for DayCount {
    fn from(day: &model::DayCount) -> Self {
        Self {
            date: day.date,
            count: day.count,
        }
    }
}

impl From<&model::HourCount> for HourCount {
    fn from(hour: &model::HourCount) -> Self {
        Self {
            hour: hour.hour,
            count: hour.count,
        }
    }
}

/// How many of a period's calls were offered, answered and abandoned: the counts the summary
/// and its comparison open with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct CallCounts {
    /// Calls of the period and direction (and queue, when one is asked), answered or not.
    pub total_calls: u64,
    /// Calls of the period and direction that an agent answered;
    /// `answered_calls + unanswered_calls == total_calls`.
    pub answered_calls: u64,
    /// Calls of the period and direction with no agent (unanswered, abandoned).
    pub unanswered_calls: u64,
    /// Unanswered calls whose wait is known and strictly below `short_abandon_seconds` (the
    /// caller hung up before anyone could answer); 0 when `short_abandon` is 0. They stay in
    /// the call counts.
    pub short_abandoned_calls: u64,
}

impl From<&ServiceTally> for CallCounts {
    fn from(tally: &ServiceTally) -> Self {
        Self {
            total_calls: tally.offered(),
            answered_calls: tally.answered(),
            unanswered_calls: tally.unanswered(),
            short_abandoned_calls: tally.short_abandoned(),
        }
    }
}

/// /calls/summary's figures for an earlier period (`compare`), computed exactly as the body's
/// own: the same direction, queue, `sl_threshold` and `short_abandon`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Comparison {
    /// The `compare` asked for.
    #[schema(value_type = crate::schemas::Compare)]
    pub compare: Compare,
    /// The earlier period: as many days as the body's `period`.
    pub period: Period,
    #[serde(flatten)]
    pub counts: CallCounts,
    /// `abandon_rate_percent` over the earlier period.
    pub abandon_rate_percent: Option<f64>,
    /// `service_level` over the earlier period.
    pub service_level: Option<ServiceLevel>,
    /// `average_speed_of_answer_seconds` over the earlier period.
    pub average_speed_of_answer_seconds: Option<f64>,
    /// `average_handle_time_seconds` over the earlier period.
    pub average_handle_time_seconds: Option<f64>,
    /// `longest_wait_seconds` over the earlier period.
    pub longest_wait_seconds: Option<f64>,
}

impl From<&Summary> for CallSummary {
    fn from(summary: &Summary) -> Self {
        let measurement = &summary.measurement;
        let tally = &summary.tally;
        Self {
            period: Period::from(&measurement.range),
            direction: measurement.direction,
            clamped: measurement.range.clamped(),
            timezone: tz::TASHKENT_LABEL,
            freshness: (&measurement.freshness).into(),
            counts: tally.into(),
            short_abandon_seconds: measurement.rules.short_abandon.get(),
            abandon_rate_percent: abandon_rate_percent(tally),
            service_level: service_level(tally).map(Into::into),
            average_speed_of_answer_seconds: average_speed_of_answer_seconds(tally),
            speed_of_answer_percentiles: speed_of_answer_percentiles(tally).map(Into::into),
            longest_wait_seconds: longest_wait_seconds(tally),
            average_abandon_time_seconds: average_abandon_time_seconds(tally),
            average_handle_time_seconds: average_handle_time_seconds(tally),
            daily: summary.daily.iter().map(DayCount::from).collect(),
            hourly: summary
                .hourly
                .as_ref()
                .map(|hours| hours.iter().map(HourCount::from).collect()),
            peak_day: (&summary.peak_day).into(),
            peak_hour: summary.peak_hour.as_ref().map(HourCount::from),
            peak_hour_count: summary.peak_hour.map_or(0, |hour| hour.count),
            comparison: summary.comparison.as_ref().map(Comparison::from),
        }
    }
}

impl From<&Earlier> for Comparison {
    fn from(
        Earlier {
            compare,
            range,
            tally,
        }: &Earlier,
    ) -> Self {
        Self {
            compare: *compare,
            period: Period::from(range),
            counts: tally.into(),
            abandon_rate_percent: abandon_rate_percent(tally),
            service_level: service_level(tally).map(Into::into),
            average_speed_of_answer_seconds: average_speed_of_answer_seconds(tally),
            average_handle_time_seconds: average_handle_time_seconds(tally),
            longest_wait_seconds: longest_wait_seconds(tally),
        }
    }
}

/// Query of /calls/summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct SummaryQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    #[param(ignore)]
    pub period: PeriodQuery,
    /// `direction`, `sl_threshold`, `short_abandon` and `queue`.
    #[serde(flatten)]
    #[param(ignore)]
    pub options: QueuedServiceQuery,
    /// The same figures for an earlier period, in `comparison`: `previous_period` (as many
    /// days, ending the day before the period starts), `previous_week` (the period 7 days
    /// earlier) or `previous_year` (364 days earlier, so weekdays line up). It applies to the
    /// period after the 31-day clamp; an earlier period starting before the history horizon is
    /// a 400 naming the earliest date allowed.
    #[param(value_type = Option<crate::schemas::Compare>, inline)]
    pub compare: ParamValues,
}

impl SummaryQuery {
    /// The range, the direction, the threshold, the queue, the comparison, then the range and
    /// the earlier period against the history horizon (`earliest`, `None` without one).
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_RANGE_DAYS)?;
        let (direction, rules, queue) = self.options.parse()?;
        let compare = self
            .compare
            .parsed("compare", COMPARE_FORM, Compare::parse)?;
        let range = self.period.within_horizon(range, earliest)?;
        if let (Some(compare), Some(earliest)) = (compare, earliest) {
            compare.within_horizon(&range, earliest)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use callstats_domain::model::CallRecord;
    use callstats_domain::params::{ServiceRules, ShortAbandon, SlThreshold};
    use callstats_domain::stats::call_summary;
    use callstats_domain::testing::{call, days_of, range, worked_example};
    use serde_json::{Value, json};

    /// /calls/summary of `calls` from `start` to `end`, inbound, measured by `rules`.
    fn answer(
        start: &str,
        end: &str,
        rules: impl Into<ServiceRules>,
        calls: &[CallRecord],
    ) -> Value {
        let r = range(start, end);
        let summary = call_summary(&r, Direction::Inbound, rules, None, &days_of(r, calls));
        serde_json::to_value(CallSummary::from(&summary)).unwrap()
    }

    fn inbound(at: &str) -> CallRecord {
        call(Direction::Inbound, Some("101"), at, 60.0)
    }

    /// docs/behaviour.md's worked example ("Service figures"), computed: the page states what
    /// the code answers. The per-queue table of the same day is checked in queues.rs.
    #[test]
    fn the_worked_example_of_the_docs_is_what_the_code_answers() {
        let figures = |threshold: u16| {
            let threshold = SlThreshold::seconds(threshold).unwrap();
            let json = answer("2026-11-02", "2026-11-02", threshold, &worked_example());
            [
                "total_calls",
                "unanswered_calls",
                "abandon_rate_percent",
                "service_level",
                "average_speed_of_answer_seconds",
                "longest_wait_seconds",
                "average_handle_time_seconds",
                "speed_of_answer_percentiles",
                "average_abandon_time_seconds",
            ]
            .map(|field| json[field].clone())
        };
        assert_eq!(
            figures(20),
            [
                json!(5),
                json!(1),
                json!(20.0),
                json!({"threshold_seconds": 20, "answered_within_threshold": 2,
                       "calls_with_wait": 4, "percent": 50.0}),
                json!(21.83),
                json!(95.25),
                json!(75.0),
                json!({"p50": 20.0, "p80": 41.0, "p90": 41.0, "p95": 41.0}),
                json!(95.25),
            ]
        );
        assert_eq!(figures(5)[3]["percent"], 25.0);
        // With `short_abandon=100`, c-3 (95.25 s) is a short abandon.
        let rules = ServiceRules {
            sl_threshold: SlThreshold::DEFAULT,
            short_abandon: ShortAbandon::seconds(100).unwrap(),
        };
        let short = answer("2026-11-02", "2026-11-02", rules, &worked_example());
        assert_eq!(
            [
                "total_calls",
                "unanswered_calls",
                "short_abandoned_calls",
                "short_abandon_seconds",
                "abandon_rate_percent",
                "average_abandon_time_seconds"
            ]
            .map(|field| short[field].clone()),
            [
                json!(5),
                json!(1),
                json!(1),
                json!(100),
                json!(0.0),
                json!(null)
            ]
        );
        assert_eq!(
            (
                &short["service_level"]["calls_with_wait"],
                &short["service_level"]["percent"]
            ),
            (&json!(3), &json!(66.67))
        );
    }

    #[test]
    fn summary_serialises_to_the_spec_shape() {
        let body = answer(
            "2026-11-01",
            "2026-11-02",
            SlThreshold::DEFAULT,
            &[inbound("2026-11-02T10:00:00+05:00")],
        );
        assert_eq!(
            body.to_string(),
            json!({
                "period": {"start_date": "2026-11-01", "end_date": "2026-11-02"},
                "direction": "inbound",
                "clamped": false,
                "timezone": "+05:00",
                "as_of": "1970-01-01T00:00:00.000Z",
                "provisional_from": null,
                "total_calls": 1,
                "answered_calls": 1,
                "unanswered_calls": 0,
                "short_abandoned_calls": 0,
                "short_abandon_seconds": 0,
                "abandon_rate_percent": 0.0,
                "service_level": null,
                "average_speed_of_answer_seconds": null,
                "speed_of_answer_percentiles": null,
                "longest_wait_seconds": null,
                "average_abandon_time_seconds": null,
                "average_handle_time_seconds": 60.0,
                "daily": [{"date": "2026-11-01", "count": 0}, {"date": "2026-11-02", "count": 1}],
                "hourly": null,
                "peak_day": {"date": "2026-11-02", "count": 1},
                "peak_hour": null,
                "peak_hour_count": 0,
                "comparison": null
            })
            .to_string()
        );
    }

    #[test]
    fn single_day_summary_has_hour_buckets_and_peak_hour_objects() {
        let json = answer(
            "2026-11-01",
            "2026-11-01",
            SlThreshold::DEFAULT,
            &[inbound("2026-11-01T10:00:00+05:00")],
        );
        assert_eq!(json["hourly"][10], json!({"hour": 10, "count": 1}));
        assert_eq!(json["peak_hour"], json!({"hour": 10, "count": 1}));
        assert_eq!(json["peak_hour_count"], 1);
    }
}
