//! /calls/queues: the service figures of each queue.

use callstats_domain::calendar::MAX_RANGE_DAYS;
use callstats_domain::limits::EarliestDay;
use callstats_domain::model::QueueName;
use callstats_domain::params::{Direction, ParamError};
use callstats_domain::request::ApiRequest;
use callstats_domain::stats::queues::{QueueTally, Queues};
use callstats_domain::stats::service_level::{
    average_abandon_time_seconds, speed_of_answer_percentiles,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::blocks::{
    Freshness, Measured, Period, RowCounts, RowHandling, RowServiceLevel, SpeedOfAnswerPercentiles,
};
use crate::query::{PeriodQuery, ServiceQuery};

/// The body of /calls/queues.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct QueuesResponse {
    /// The dates actually used (after the 31-day clamp).
    pub period: Period,
    #[schema(value_type = crate::schemas::Direction)]
    pub direction: Direction,
    pub clamped: bool,
    #[serde(flatten)]
    pub measured: Measured,
    #[serde(flatten)]
    pub freshness: Freshness,
    /// One entry per queue with a call in the period: by offered descending, then name
    /// (byte-wise); the calls without a queue last, as `queue: null`.
    pub queues: Vec<QueueEntry>,
}

/// One queue of /calls/queues: the figures of /calls/summary over that queue's calls.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct QueueEntry {
    /// The queue's name; null for the calls without a queue (listed last).
    #[schema(value_type = Option<String>, example = "sales")]
    pub queue: Option<QueueName>,
    #[serde(flatten)]
    pub counts: RowCounts,
    #[serde(flatten)]
    pub service_level: RowServiceLevel,
    /// `speed_of_answer_percentiles` of /calls/summary with this queue.
    pub speed_of_answer_percentiles: Option<SpeedOfAnswerPercentiles>,
    #[serde(flatten)]
    pub handling: RowHandling,
    /// `average_abandon_time_seconds` of /calls/summary with this queue.
    pub average_abandon_time_seconds: Option<f64>,
}

impl From<&Queues> for QueuesResponse {
    fn from(queues: &Queues) -> Self {
        let measurement = &queues.measurement;
        Self {
            period: Period::from(&measurement.range),
            direction: measurement.direction,
            clamped: measurement.range.clamped(),
            measured: measurement.rules.into(),
            freshness: (&measurement.freshness).into(),
            queues: queues.queues.iter().map(QueueEntry::from).collect(),
        }
    }
}

impl From<&QueueTally> for QueueEntry {
    fn from(QueueTally { queue, tally }: &QueueTally) -> Self {
        Self {
            queue: queue.clone(),
            counts: tally.into(),
            service_level: tally.into(),
            speed_of_answer_percentiles: speed_of_answer_percentiles(tally).map(Into::into),
            handling: tally.into(),
            average_abandon_time_seconds: average_abandon_time_seconds(tally),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{assert_holds, fields, names};
    use callstats_domain::call_day::CallDay;
    use callstats_domain::params::SlThreshold;
    use callstats_domain::stats::queues_response;
    use callstats_domain::testing::{CallExt, call, range, worked_example};
    use serde_json::{Value, json};

    /// The rows of /calls/queues for `calls` on 2 November 2026.
    fn entries(calls: &[callstats_domain::model::CallRecord]) -> Vec<QueueEntry> {
        let r = range("2026-11-02", "2026-11-02");
        let days = CallDay::split(&r, 0, calls);
        let queues = queues_response(&r, Direction::Inbound, SlThreshold::DEFAULT, &days);
        QueuesResponse::from(&queues).queues
    }

    /// Those rows as JSON.
    fn rows(calls: &[callstats_domain::model::CallRecord]) -> Vec<Value> {
        entries(calls)
            .iter()
            .map(|entry| serde_json::to_value(entry).unwrap())
            .collect()
    }

    #[test]
    fn an_entry_carries_the_service_figures_of_its_calls_in_order() {
        let at = "2026-11-02T10:00:00+05:00";
        let calls = [
            call(Direction::Inbound, None, at, 60.0)
                .waited(50.0)
                .queued("billing"),
            call(Direction::Inbound, Some("102"), at, 60.0)
                .waited(10.0)
                .queued("billing"),
        ];
        let typed = &entries(&calls)[0];
        let entry = &serde_json::to_value(typed).unwrap();
        assert_holds(
            entry,
            &json!({
                "queue": "billing", "offered": 2, "answered": 1, "unanswered": 1,
                "short_abandoned_calls": 0,
                "abandon_rate_percent": 50.0, "service_level_percent": 50.0,
                "answered_within_threshold": 1, "calls_with_wait": 2,
                "average_speed_of_answer_seconds": 10.0,
                "speed_of_answer_percentiles": {"p50": 10.0, "p80": 10.0, "p90": 10.0, "p95": 10.0},
                "average_handle_time_seconds": 60.0,
                "longest_wait_seconds": 50.0, "average_abandon_time_seconds": 50.0
            }),
        );
        // Its own fields around the blocks, each block's where it is flattened.
        let order = [
            vec!["queue".to_owned()],
            names(&typed.counts),
            names(&typed.service_level),
            vec!["speed_of_answer_percentiles".to_owned()],
            names(&typed.handling),
            vec!["average_abandon_time_seconds".to_owned()],
        ]
        .concat();
        assert_eq!(fields(entry), order);
    }

    #[test]
    fn the_body_states_its_period_bounds_and_freshness_in_order() {
        let r = range("2026-11-02", "2026-11-02");
        let days = CallDay::split(&r, 1_795_000_000_123, &worked_example());
        let queues = queues_response(&r, Direction::Inbound, SlThreshold::DEFAULT, &days);
        let body = serde_json::to_value(QueuesResponse::from(&queues)).unwrap();
        assert_eq!(
            fields(&body),
            [
                "period",
                "direction",
                "clamped",
                "sl_threshold_seconds",
                "short_abandon_seconds",
                "as_of",
                "provisional_from",
                "queues"
            ]
        );
        assert_eq!(body["sl_threshold_seconds"], 20);
        assert_eq!(body["as_of"], "2026-11-18T11:06:40.123Z");
    }

    /// docs/behaviour.md's worked example, per queue: the table of /calls/queues for the day
    /// of the summary's example, its columns in the page's order.
    #[test]
    fn the_worked_example_per_queue_is_what_the_code_answers() {
        let columns = [
            "queue",
            "offered",
            "answered",
            "unanswered",
            "abandon_rate_percent",
            "service_level_percent",
            "answered_within_threshold",
            "calls_with_wait",
            "average_speed_of_answer_seconds",
            "average_handle_time_seconds",
            "longest_wait_seconds",
            "average_abandon_time_seconds",
        ];
        let table: Vec<Vec<Value>> = rows(&worked_example())
            .iter()
            .map(|row| columns.iter().map(|column| row[*column].clone()).collect())
            .collect();
        let null = Value::Null;
        assert_eq!(
            table,
            [
                [
                    json!("sales"),
                    json!(2),
                    json!(2),
                    json!(0),
                    json!(0.0),
                    json!(100.0),
                    json!(2),
                    json!(2),
                    json!(12.25),
                    json!(90.0),
                    json!(20.0),
                    null.clone()
                ],
                [
                    json!("support"),
                    json!(2),
                    json!(1),
                    json!(1),
                    json!(50.0),
                    json!(0.0),
                    json!(0),
                    json!(2),
                    json!(41.0),
                    json!(30.0),
                    json!(95.25),
                    json!(95.25)
                ],
                [
                    null.clone(),
                    json!(1),
                    json!(1),
                    json!(0),
                    json!(0.0),
                    null.clone(),
                    json!(0),
                    json!(0),
                    null.clone(),
                    json!(90.0),
                    null.clone(),
                    null
                ],
            ]
        );
        let percentiles: Vec<Value> = rows(&worked_example())
            .iter()
            .map(|row| row["speed_of_answer_percentiles"].clone())
            .collect();
        assert_eq!(
            percentiles,
            [
                json!({"p50": 4.5, "p80": 20.0, "p90": 20.0, "p95": 20.0}),
                json!({"p50": 41.0, "p80": 41.0, "p90": 41.0, "p95": 41.0}),
                Value::Null,
            ]
        );
    }
}
