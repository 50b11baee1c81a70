//! /calls/intervals: the service figures of every 15-, 30- or 60-minute interval.

use callstats_domain::calendar::MAX_RANGE_DAYS;
use callstats_domain::limits::EarliestDay;
use callstats_domain::params::{
    Direction, INTERVAL_FORM, IntervalMinutes, MAX_INTERVAL_DAYS, ParamError,
};
use callstats_domain::request::ApiRequest;
use callstats_domain::stats::intervals::{IntervalTally, Intervals};
use callstats_domain::tz;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::blocks::{Period, QueueMeasured, RowCounts, RowHandling, RowServiceLevel};
use crate::query::{ParamValues, PeriodQuery, QueuedServiceQuery};

/// The body of /calls/intervals.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct IntervalsResponse {
    /// The dates actually used (after the 7-day clamp).
    pub period: Period,
    #[schema(value_type = crate::schemas::Direction)]
    pub direction: Direction,
    /// 15, 30 or 60.
    pub interval_minutes: u8,
    /// Always `+05:00`: intervals are Tashkent time.
    #[schema(example = "+05:00")]
    pub timezone: &'static str,
    /// True when the period asked for was longer than 7 days and its latest 7 were kept.
    pub clamped: bool,
    #[serde(flatten)]
    pub asked: QueueMeasured,
    /// Every interval of the period in time order, zero-filled.
    pub intervals: Vec<IntervalEntry>,
}

/// One interval of /calls/intervals: the figures of /calls/summary over the calls that
/// started in it (Tashkent time).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct IntervalEntry {
    /// When the interval begins, Tashkent time with its offset.
    #[schema(format = DateTime, example = "2026-11-21T09:30:00+05:00")]
    pub start: String,
    #[serde(flatten)]
    pub counts: RowCounts,
    #[serde(flatten)]
    pub service_level: RowServiceLevel,
    #[serde(flatten)]
    pub handling: RowHandling,
}

impl From<&Intervals> for IntervalsResponse {
    fn from(intervals: &Intervals) -> Self {
        Self {
            period: Period::from(&intervals.measurement.range),
            direction: intervals.measurement.direction,
            interval_minutes: intervals.interval.get(),
            timezone: tz::TASHKENT_LABEL,
            clamped: intervals.measurement.range.clamped(),
            asked: (&intervals.measurement).into(),
            intervals: intervals
                .intervals
                .iter()
                .map(IntervalEntry::from)
                .collect(),
        }
    }
}

impl From<&IntervalTally> for IntervalEntry {
    fn from(IntervalTally { start, tally }: &IntervalTally) -> Self {
        Self {
            start: start.clone(),
            counts: tally.into(),
            service_level: tally.into(),
            handling: tally.into(),
        }
    }
}

/// The schema of `interval` on /calls/intervals: one of 15, 30 or 60 minutes, 30 by default.
fn interval_minutes_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .enum_values(Some(IntervalMinutes::ALLOWED))
        .default(Some(IntervalMinutes::default().get().into()))
        .examples([15])
        .into()
}

/// Query of /calls/intervals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct IntervalsQuery {
    /// `start` and `end`.
    #[serde(flatten)]
    #[param(ignore)]
    pub period: PeriodQuery,
    /// Length of an interval in minutes: 15, 30 or 60; default 30. Anything else is a 400.
    #[param(required = false, schema_with = interval_minutes_schema)]
    pub interval: ParamValues,
    /// `direction`, `sl_threshold`, `short_abandon` and `queue`.
    #[serde(flatten)]
    #[param(ignore)]
    pub options: QueuedServiceQuery,
}

impl IntervalsQuery {
    /// The range (trimmed to its latest 7 days), the interval, the direction, the threshold,
    /// the queue, then the range against the history horizon.
    pub fn parse(&self, earliest: Option<EarliestDay>) -> Result<ApiRequest, ParamError> {
        let range = self.period.range(MAX_RANGE_DAYS)?.latest(MAX_INTERVAL_DAYS);
        let interval = self
            .interval
            .parsed("interval", INTERVAL_FORM, IntervalMinutes::parse)?
            .unwrap_or_default();
        let (direction, rules, queue) = self.options.parse()?;
        Ok(ApiRequest::CallsIntervals {
            range: self.period.within_horizon(range, earliest)?,
            direction,
            interval,
            rules,
            queue,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::CallSummary;
    use crate::test_support::{assert_holds, fields, names};
    use callstats_domain::call_day::CallDay;
    use callstats_domain::model::{CallRecord, QueueName};
    use callstats_domain::params::{IntervalMinutes, SlThreshold};
    use callstats_domain::stats::{call_summary, intervals_response};
    use callstats_domain::testing::{CallExt, call, day, days_of, range};
    use serde_json::json;

    fn inbound(at: &str) -> CallRecord {
        call(Direction::Inbound, Some("101"), at, 60.0)
    }

    /// /calls/intervals of 2 November 2026 by `minutes`, for `queue`.
    fn answer(minutes: u8, records: &[CallRecord], queue: Option<&QueueName>) -> IntervalsResponse {
        let r = range("2026-11-02", "2026-11-02");
        let days = CallDay::split(&r, 0, records);
        let interval = IntervalMinutes::minutes(minutes).unwrap();
        let measured = intervals_response(
            &r,
            Direction::Inbound,
            interval,
            SlThreshold::DEFAULT,
            queue,
            &days,
        );
        IntervalsResponse::from(&measured)
    }

    #[test]
    fn an_interval_has_the_service_figures_of_its_calls_by_the_same_functions() {
        let answered = inbound("2026-11-02 10:05").waited(10.0);
        let slow = call(Direction::Inbound, Some("101"), "2026-11-02 10:10", 120.0).waited(40.0);
        let abandoned = call(Direction::Inbound, None, "2026-11-02 10:20", 0.0).waited(5.0);
        let outbound = call(
            Direction::Outbound,
            Some("101"),
            "2026-11-02T10:25:00+05:00",
            30.0,
        );
        let records = [answered, slow, abandoned, outbound];
        let body = answer(30, &records, None);
        let row = body
            .intervals
            .iter()
            .find(|row| row.start == "2026-11-02T10:00:00+05:00")
            .unwrap();
        // 1 answered within 20 s of 3 calls with a wait; 1 of 3 abandoned.
        let json = serde_json::to_value(row).unwrap();
        assert_holds(
            &json,
            &json!({
                "start": "2026-11-02T10:00:00+05:00", "offered": 3, "answered": 2,
                "unanswered": 1, "short_abandoned_calls": 0, "abandon_rate_percent": 33.33,
                "service_level_percent": 33.33, "answered_within_threshold": 1,
                "calls_with_wait": 3, "average_speed_of_answer_seconds": 25.0,
                "average_handle_time_seconds": 90.0, "longest_wait_seconds": 40.0
            }),
        );
        let order = [
            vec!["start".to_owned()],
            names(&row.counts),
            names(&row.service_level),
            names(&row.handling),
        ]
        .concat();
        assert_eq!(fields(&json), order);
        // The same calls through /calls/summary: the same figures.
        let r = range("2026-11-02", "2026-11-02");
        let summary = CallSummary::from(&call_summary(
            &r,
            Direction::Inbound,
            SlThreshold::DEFAULT,
            None,
            &days_of(r, &records),
        ));
        let level = summary.service_level.unwrap();
        assert_eq!(
            (
                Some(level.percent),
                level.answered_within_threshold,
                level.calls_with_wait
            ),
            (
                row.service_level.service_level_percent,
                row.service_level.answered_within_threshold,
                row.service_level.calls_with_wait
            )
        );
        assert_eq!(
            summary.average_speed_of_answer_seconds,
            row.service_level.average_speed_of_answer_seconds
        );
        assert_eq!(
            summary.abandon_rate_percent,
            row.counts.abandon_rate_percent
        );
    }

    #[test]
    fn the_body_says_the_interval_the_zone_and_the_queue_in_order() {
        let queue = QueueName::new("sales").unwrap();
        let body = answer(15, &[], Some(&queue));
        assert_eq!(body.period.start_date, day("2026-11-02"));
        assert_eq!(body.intervals.len(), 96);
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(
            fields(&json),
            [
                "period",
                "direction",
                "interval_minutes",
                "timezone",
                "clamped",
                "sl_threshold_seconds",
                "short_abandon_seconds",
                "queue",
                "as_of",
                "provisional_from",
                "intervals"
            ]
        );
        assert_eq!(
            (&json["interval_minutes"], &json["timezone"], &json["queue"]),
            (&json!(15), &json!("+05:00"), &json!("sales"))
        );
        let empty = &json["intervals"][0];
        assert_eq!(
            (&empty["offered"], &empty["service_level_percent"]),
            (&json!(0), &json!(null))
        );
    }
}
