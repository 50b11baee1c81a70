//! The representations an answer is given in: JSON always; CSV (RFC 4180) too for the
//! endpoints whose answer is one table of rows. docs/behaviour.md, "CSV", says which array of
//! each answer becomes the rows and what happens to the fields around it.

use std::borrow::Cow;

use serde::Serialize;

use callstats_api::agents::AgentEntry;
use callstats_api::blocks::SpeedOfAnswerPercentiles;
use callstats_api::intervals::IntervalEntry;
use callstats_api::portal::{OffDay, Operator, Script};
use callstats_api::queues::QueueEntry;
use callstats_api::trend::TrendBucket;
use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::error::DomainError;

use callstats_domain::params::SlThreshold;
use callstats_domain::request::{ApiRequest, Endpoint};
use callstats_domain::stats::intervals::IntervalTally;
use callstats_domain::stats::queues::QueueTally;
use callstats_domain::stats::service_level::ServiceTally;
use callstats_domain::stats::trend::BucketTally;

use crate::csv_answer;

/// The media type of JSON answers, as a 406 names it.
pub const JSON_MEDIA_TYPE: &str = "application/json";
/// The media type of CSV answers, as a 406 names it.
pub const CSV_MEDIA_TYPE: &str = "text/csv";
/// What /calls/live answers in: JSON, or a stream.
pub const LIVE_REPRESENTATIONS: &str = "application/json, text/event-stream";
/// The media type of /calls/live's stream (Server-Sent Events).
pub const EVENT_STREAM_MEDIA_TYPE: &str = "text/event-stream";

/// The form an answer's body is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Representation {
    Json,
    Csv,
}

/// What a request's `Accept` allows, as the web layer read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acceptable {
    /// JSON is acceptable (no `Accept`, or one that gives JSON a quality above 0).
    pub json: bool,
    /// CSV is acceptable and preferred to JSON.
    pub csv_preferred: bool,
}

impl Acceptable {
    /// A request without `Accept`: JSON.
    pub const JSON: Self = Self {
        json: true,
        csv_preferred: false,
    };
    /// A request that prefers CSV and excludes JSON (`Accept: text/csv`).
    pub const CSV_ONLY: Self = Self {
        json: false,
        csv_preferred: true,
    };
}

impl Representation {
    /// The representation `endpoint` answers `accept` with: CSV when the endpoint has it and
    /// it is preferred, else JSON when acceptable; a 406 when the `Accept` excludes every
    /// representation the endpoint has.
    pub fn choose(endpoint: Endpoint, accept: Acceptable) -> Result<Self, DomainError> {
        if accept.csv_preferred && has_csv(endpoint) {
            Ok(Self::Csv)
        } else if accept.json {
            Ok(Self::Json)
        } else {
            Err(DomainError::NotAcceptable {
                representations: if has_csv(endpoint) {
                    "application/json, text/csv"
                } else if matches!(endpoint, Endpoint::CallsLive) {
                    LIVE_REPRESENTATIONS
                } else {
                    JSON_MEDIA_TYPE
                },
            })
        }
    }
}

/// Whether the endpoint answers CSV too.
#[must_use]
pub const fn has_csv(endpoint: Endpoint) -> bool {
    csv_table(endpoint).is_some()
}

/// A CSV endpoint's table: the JSON array whose entries are the rows, and their columns.
#[derive(Debug, Clone, Copy)]
pub struct CsvTable {
    pub rows_field: &'static str,
    /// The rows' [`CsvRow::columns`].
    pub columns: fn() -> Vec<String>,
}

/// The table of `endpoint`'s CSV answers; `None` for an endpoint without CSV.
#[must_use]
pub const fn csv_table(endpoint: Endpoint) -> Option<CsvTable> {
    let (rows_field, columns): (_, fn() -> Vec<String>) = match endpoint {
        Endpoint::CallsAgents => ("agents", AgentEntry::columns),
        Endpoint::CallsIntervals => ("intervals", IntervalEntry::columns),
        Endpoint::CallsTrend => ("buckets", TrendBucket::columns),
        Endpoint::CallsQueues => ("queues", QueueEntry::columns),
        Endpoint::Operators => ("operators", Operator::columns),
        Endpoint::Schedule => ("off_days", OffDay::columns),
        Endpoint::ScriptsStats => ("scripts", Script::columns),
        Endpoint::Ping
        | Endpoint::CallsSummary
        | Endpoint::CallsLive
        | Endpoint::KpiMonths
        | Endpoint::KpiMonth => return None,
    };
    Some(CsvTable {
        rows_field,
        columns,
    })
}

/// The cache key of an answer in `representation`, from the key of its JSON (`json_key`): a CSV
/// answer is an entry of its own, with its own validator. `#` never appears in a JSON answer's
/// key (values are percent-encoded).
#[must_use]
pub fn cache_key_as(
    json_key: Cow<'static, str>,
    representation: Representation,
) -> Cow<'static, str> {
    match representation {
        Representation::Json => json_key,
        Representation::Csv => Cow::Owned(format!("{json_key}#csv")),
    }
}

/// The file name of `request`'s CSV answer (`Content-Disposition`): the endpoint's path with
/// `-` for `/`, then the period used (`start_end`, after clamping) or the month; `None` for an
/// endpoint without CSV.
#[must_use]
pub fn csv_file_name(request: &ApiRequest) -> Option<String> {
    let period =
        |name: &str, range: &DateRange| format!("{name}-{}_{}.csv", range.start(), range.end());
    match request {
        ApiRequest::CallsAgents { range, .. } => Some(period("calls-agents", range)),
        ApiRequest::CallsQueues { range, .. } => Some(period("calls-queues", range)),
        ApiRequest::CallsIntervals { range, .. } => Some(period("calls-intervals", range)),
        ApiRequest::CallsTrend { range, .. } => Some(period("calls-trend", range)),
        ApiRequest::Operators => Some("operators.csv".to_owned()),
        ApiRequest::Schedule { month } => Some(format!("schedule-{month}.csv")),
        ApiRequest::ScriptsStats { .. } => Some("scripts-stats.csv".to_owned()),
        ApiRequest::CallsSummary { .. }
        | ApiRequest::CallsLive
        | ApiRequest::KpiMonths
        | ApiRequest::KpiMonth { .. } => None,
    }
}

/// A row of a CSV answer: an entry of the answer's JSON array, whose fields (nested objects
/// flattened with a dot) are [`CsvRow::columns`], in this order.
pub trait CsvRow: Serialize {
    /// The columns, in order.
    fn columns() -> Vec<String>;
}

/// The columns of the rows `full` is one of, named by its JSON: `full` holds every nested
/// object its rows may hold, so that none of their columns is missing.
fn columns_of(full: &impl Serialize) -> Vec<String> {
    serde_json::to_value(full)
        .map(|value| csv_answer::field_names(&value))
        .unwrap_or_default()
}

/// Columns listed by hand, for the rows still declared in the domain's model.
fn listed(columns: &[&str]) -> Vec<String> {
    columns.iter().map(|column| (*column).to_owned()).collect()
}

impl CsvRow for AgentEntry {
    fn columns() -> Vec<String> {
        listed(&[
            "agent_number",
            "name",
            "calls",
            "inbound_calls",
            "outbound_calls",
            "share_percent",
            "total_duration_seconds",
            "inbound_duration_seconds",
            "outbound_duration_seconds",
            "average_duration_seconds",
            "average_speed_of_answer_seconds",
            "average_handle_time_seconds",
            "checklist_percent",
            "positive_sentiment_percent",
        ])
    }
}

impl CsvRow for QueueEntry {
    fn columns() -> Vec<String> {
        columns_of(&QueueEntry {
            speed_of_answer_percentiles: Some(SpeedOfAnswerPercentiles::default()),
            ..QueueEntry::from(&QueueTally {
                queue: None,
                tally: ServiceTally::new(SlThreshold::DEFAULT),
            })
        })
    }
}

impl CsvRow for IntervalEntry {
    fn columns() -> Vec<String> {
        columns_of(&IntervalEntry::from(&IntervalTally {
            start: String::new(),
            tally: ServiceTally::new(SlThreshold::DEFAULT),
        }))
    }
}

impl CsvRow for TrendBucket {
    fn columns() -> Vec<String> {
        let day = Day::new(time::Date::MIN);
        columns_of(&TrendBucket::from(&BucketTally {
            start: day,
            end: day,
            tally: ServiceTally::new(SlThreshold::DEFAULT),
        }))
    }
}

impl CsvRow for Operator {
    fn columns() -> Vec<String> {
        listed(&[
            "agent_number",
            "name",
            "team",
            "shift",
            "staff_role",
            "joined_at",
        ])
    }
}

impl CsvRow for OffDay {
    fn columns() -> Vec<String> {
        listed(&["agent_number", "name", "date", "kind", "source"])
    }
}

impl CsvRow for Script {
    fn columns() -> Vec<String> {
        listed(&[
            "id",
            "title.uz",
            "title.ru",
            "category.uz",
            "category.ru",
            "views",
        ])
    }
}

#[cfg(test)]
mod tests {
    use callstats_api::intervals::IntervalsResponse;
    use callstats_api::portal::LocalizedText;
    use callstats_api::queues::QueuesResponse;
    use callstats_api::request::UnvalidatedRequest;
    use callstats_api::trend::TrendResponse;
    use callstats_domain::calendar::LocalDateTime;
    use callstats_domain::model::{AgentNumber, OffDayKind, OffDaySource};
    use callstats_domain::params::{Direction, Granularity, IntervalMinutes};
    use callstats_domain::scope::KpiView;
    use callstats_domain::stats;
    use callstats_domain::testing::{days_of, inbound_trend, range, worked_example};

    use super::*;

    fn request(endpoint: Endpoint, query: &str) -> ApiRequest {
        UnvalidatedRequest::from_query(endpoint, query, "")
            .unwrap()
            .validate(KpiView::Aggregate, None)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn csv_is_chosen_only_where_the_endpoint_has_it_and_the_client_prefers_it() {
        let both = Acceptable {
            json: true,
            csv_preferred: true,
        };
        assert_eq!(
            Representation::choose(Endpoint::Operators, both),
            Ok(Representation::Csv)
        );
        assert_eq!(
            Representation::choose(Endpoint::KpiMonth, both),
            Ok(Representation::Json)
        );
        assert_eq!(
            Representation::choose(Endpoint::Operators, Acceptable::JSON),
            Ok(Representation::Json)
        );
        let refused = Representation::choose(Endpoint::KpiMonth, Acceptable::CSV_ONLY)
            .unwrap_err()
            .to_string();
        assert!(refused.ends_with(": application/json"), "{refused}");
        let neither = Acceptable {
            json: false,
            csv_preferred: false,
        };
        let refused = Representation::choose(Endpoint::Schedule, neither)
            .unwrap_err()
            .to_string();
        assert!(
            refused.ends_with(": application/json, text/csv"),
            "{refused}"
        );
    }

    #[test]
    fn the_endpoints_with_csv_are_those_answering_one_table() {
        let with: Vec<_> = Endpoint::ALL
            .into_iter()
            .filter(|e| has_csv(*e))
            .map(Endpoint::path)
            .collect();
        assert_eq!(
            with,
            [
                "/calls/agents",
                "/calls/queues",
                "/calls/intervals",
                "/calls/trend",
                "/operators",
                "/schedule",
                "/scripts/stats"
            ]
        );
    }

    #[test]
    fn a_csv_answer_has_its_own_cache_key_and_a_file_name_of_the_period_used() {
        let agents = request(Endpoint::CallsAgents, "start=2026-01-01&end=2026-11-20");
        assert_eq!(
            cache_key_as(agents.cache_key(), Representation::Json),
            agents.cache_key()
        );
        assert_eq!(
            cache_key_as(agents.cache_key(), Representation::Csv),
            format!("{}#csv", agents.cache_key())
        );
        assert_eq!(
            csv_file_name(&agents).as_deref(),
            Some("calls-agents-2026-10-21_2026-11-20.csv")
        );
        assert_eq!(
            csv_file_name(&request(Endpoint::CallsIntervals, "start=2026-11-24")).as_deref(),
            Some("calls-intervals-2026-11-24_2026-11-24.csv")
        );
        assert_eq!(
            csv_file_name(&request(Endpoint::Schedule, "month=2026-11")).as_deref(),
            Some("schedule-2026-11.csv")
        );
        assert_eq!(
            csv_file_name(&request(Endpoint::ScriptsStats, "limit=5")).as_deref(),
            Some("scripts-stats.csv")
        );
        assert_eq!(
            csv_file_name(&ApiRequest::Operators).as_deref(),
            Some("operators.csv")
        );
        assert_eq!(csv_file_name(&ApiRequest::KpiMonths), None);
    }

    /// The names of `row`'s JSON fields, nested objects flattened with a dot.
    fn flattened<R: CsvRow>(row: &R) -> Vec<String> {
        fn walk(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(fields) => {
                    for (name, field) in fields {
                        let path = if prefix.is_empty() {
                            name.clone()
                        } else {
                            format!("{prefix}.{name}")
                        };
                        walk(&path, field, out);
                    }
                }
                _ => out.push(prefix.to_owned()),
            }
        }
        let mut out = Vec::new();
        walk("", &serde_json::to_value(row).unwrap(), &mut out);
        out
    }

    #[test]
    fn the_columns_are_the_json_field_names_in_their_order() {
        let agent = AgentNumber::new("101").unwrap();
        let check = |names: Vec<String>, columns: Vec<String>| assert_eq!(names, columns);
        check(
            flattened(&AgentEntry {
                agent_number: agent.clone(),
                name: "A".into(),
                calls: 1,
                inbound_calls: 1,
                outbound_calls: 0,
                share_percent: 100.0,
                total_duration_seconds: 1.0,
                inbound_duration_seconds: 1.0,
                outbound_duration_seconds: 0.0,
                average_duration_seconds: 1.0,
                average_speed_of_answer_seconds: None,
                average_handle_time_seconds: Some(1.0),
                checklist_percent: None,
                positive_sentiment_percent: None,
            }),
            AgentEntry::columns(),
        );
        // The service rows, from the calls of docs/behaviour.md's worked example: its first
        // queue has every nested object (its percentiles).
        let r = range("2026-11-02", "2026-11-02");
        let days = days_of(r, &worked_example());
        let queues = stats::queues_response(&r, Direction::Inbound, SlThreshold::DEFAULT, &days);
        let queue = &QueuesResponse::from(&queues).queues[0];
        assert!(queue.speed_of_answer_percentiles.is_some());
        assert_eq!(flattened(queue), QueueEntry::columns());
        let intervals = stats::intervals_response(
            &r,
            Direction::Inbound,
            IntervalMinutes::default(),
            SlThreshold::DEFAULT,
            None,
            &days,
        );
        let busy = IntervalsResponse::from(&intervals)
            .intervals
            .into_iter()
            .max_by_key(|row| row.counts.offered);
        assert_eq!(flattened(&busy.unwrap()), IntervalEntry::columns());
        let trend = TrendResponse::from(&inbound_trend(&r, Granularity::Day, &worked_example()));
        assert_eq!(flattened(&trend.buckets[0]), TrendBucket::columns());
        check(
            flattened(&Operator {
                agent_number: agent.clone(),
                name: "A".into(),
                team: "T".into(),
                shift: "day".into(),
                staff_role: None,
                joined_at: LocalDateTime::parse("2025-03-01 09:00:00").unwrap(),
            }),
            Operator::columns(),
        );
        check(
            flattened(&OffDay {
                agent_number: agent,
                name: "A".into(),
                date: Day::parse("2026-11-02").unwrap(),
                kind: OffDayKind::Dam,
                source: OffDaySource::Admin,
            }),
            OffDay::columns(),
        );
        let text = || LocalizedText {
            uz: "a".into(),
            ru: "b".into(),
        };
        check(
            flattened(&Script {
                id: 1,
                title: text(),
                category: text(),
                views: 3,
            }),
            Script::columns(),
        );
    }
}
