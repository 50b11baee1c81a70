//! The representations an answer is given in: JSON always; CSV (RFC 4180) too for the
//! endpoints whose answer is one table of rows. docs/behaviour.md, "CSV", says which array of
//! each answer becomes the rows and what happens to the fields around it.

use std::borrow::Cow;

use serde::Serialize;

use callstats_api::intervals::IntervalEntry;
use callstats_api::queues::QueueEntry;
use callstats_api::trend::TrendBucket;
use callstats_domain::calendar::DateRange;
use callstats_domain::error::DomainError;
use callstats_domain::model::{AgentEntry, OffDay, Operator, Script};
use callstats_domain::request::{ApiRequest, Endpoint};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvTable {
    pub rows_field: &'static str,
    pub columns: &'static [&'static str],
}

/// The table of `endpoint`'s CSV answers; `None` for an endpoint without CSV.
#[must_use]
pub const fn csv_table(endpoint: Endpoint) -> Option<CsvTable> {
    let (rows_field, columns) = match endpoint {
        Endpoint::CallsAgents => ("agents", AgentEntry::COLUMNS),
        Endpoint::CallsIntervals => ("intervals", IntervalEntry::COLUMNS),
        Endpoint::CallsTrend => ("buckets", TrendBucket::COLUMNS),
        Endpoint::CallsQueues => ("queues", QueueEntry::COLUMNS),
        Endpoint::Operators => ("operators", Operator::COLUMNS),
        Endpoint::Schedule => ("off_days", OffDay::COLUMNS),
        Endpoint::ScriptsStats => ("scripts", Script::COLUMNS),
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
/// flattened with a dot) are [`CsvRow::COLUMNS`], in this order.
pub trait CsvRow: Serialize {
    const COLUMNS: &'static [&'static str];
}

impl CsvRow for AgentEntry {
    const COLUMNS: &'static [&'static str] = &[
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
    ];
}

/// The columns of a /calls/queues or /calls/intervals row: `$before`, then the service
/// figures both rows begin with, then `$after`.
///
/// Both rows are built by the domain's one list of these figures, so their columns are too.
macro_rules! service_row_columns {
    ([$($before:literal),*], [$($after:literal),*]) => {
        &[
            $($before,)*
            "offered",
            "answered",
            "unanswered",
            "short_abandoned_calls",
            "abandon_rate_percent",
            "service_level_percent",
            "answered_within_threshold",
            "calls_with_wait",
            "average_speed_of_answer_seconds",
            $($after,)*
        ]
    };
}

impl CsvRow for QueueEntry {
    const COLUMNS: &'static [&'static str] = service_row_columns!(
        ["queue"],
        [
            "speed_of_answer_percentiles.p50",
            "speed_of_answer_percentiles.p80",
            "speed_of_answer_percentiles.p90",
            "speed_of_answer_percentiles.p95",
            "average_handle_time_seconds",
            "longest_wait_seconds",
            "average_abandon_time_seconds"
        ]
    );
}

impl CsvRow for IntervalEntry {
    const COLUMNS: &'static [&'static str] = service_row_columns!(
        ["start"],
        ["average_handle_time_seconds", "longest_wait_seconds"]
    );
}

impl CsvRow for TrendBucket {
    const COLUMNS: &'static [&'static str] = &[
        "start",
        "end",
        "days",
        "offered",
        "answered",
        "unanswered",
        "short_abandoned_calls",
        "abandon_rate_percent",
        "answered_within_threshold",
        "calls_with_wait",
        "service_level_percent",
        "average_speed_of_answer_seconds",
        "average_handle_time_seconds",
        "longest_wait_seconds",
    ];
}

impl CsvRow for Operator {
    const COLUMNS: &'static [&'static str] = &[
        "agent_number",
        "name",
        "team",
        "shift",
        "staff_role",
        "joined_at",
    ];
}

impl CsvRow for OffDay {
    const COLUMNS: &'static [&'static str] = &["agent_number", "name", "date", "kind", "source"];
}

impl CsvRow for Script {
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "title.uz",
        "title.ru",
        "category.uz",
        "category.ru",
        "views",
    ];
}

#[cfg(test)]
mod tests {
    use callstats_api::blocks::{RowCounts, RowHandling, RowServiceLevel};
    use callstats_domain::calendar::{Day, LocalDateTime};
    use callstats_domain::model::{
        AgentNumber, LocalizedText, OffDayKind, OffDaySource, QueueName, SpeedOfAnswerPercentiles,
    };
    use callstats_domain::params::SlThreshold;
    use callstats_domain::request::UnvalidatedRequest;
    use callstats_domain::scope::KpiView;
    use callstats_domain::stats::intervals::IntervalTally;
    use callstats_domain::stats::service_level::ServiceTally;
    use callstats_domain::stats::trend::BucketTally;

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
        let check = |names: Vec<String>, columns: &[&str]| assert_eq!(names, columns);
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
            AgentEntry::COLUMNS,
        );
        check(
            flattened(&QueueEntry {
                queue: Some(QueueName::new("sales").unwrap()),
                counts: RowCounts {
                    offered: 1,
                    answered: 1,
                    unanswered: 0,
                    short_abandoned_calls: 0,
                    abandon_rate_percent: Some(0.0),
                },
                service_level: RowServiceLevel {
                    service_level_percent: None,
                    answered_within_threshold: 0,
                    calls_with_wait: 0,
                    average_speed_of_answer_seconds: None,
                },
                speed_of_answer_percentiles: Some(SpeedOfAnswerPercentiles {
                    p50: 1.0,
                    p80: 2.0,
                    p90: 3.0,
                    p95: 4.0,
                }),
                handling: RowHandling {
                    average_handle_time_seconds: None,
                    longest_wait_seconds: None,
                },
                average_abandon_time_seconds: None,
            }),
            QueueEntry::COLUMNS,
        );
        check(
            flattened(&IntervalEntry::from(&IntervalTally {
                start: "2026-11-21T09:30:00+05:00".into(),
                tally: ServiceTally::new(SlThreshold::DEFAULT),
            })),
            IntervalEntry::COLUMNS,
        );
        check(
            flattened(&TrendBucket::from(&BucketTally {
                start: Day::parse("2026-11-02").unwrap(),
                end: Day::parse("2026-11-08").unwrap(),
                tally: ServiceTally::new(SlThreshold::DEFAULT),
            })),
            TrendBucket::COLUMNS,
        );
        check(
            flattened(&Operator {
                agent_number: agent.clone(),
                name: "A".into(),
                team: "T".into(),
                shift: "day".into(),
                staff_role: None,
                joined_at: LocalDateTime::parse("2025-03-01 09:00:00").unwrap(),
            }),
            Operator::COLUMNS,
        );
        check(
            flattened(&OffDay {
                agent_number: agent,
                name: "A".into(),
                date: Day::parse("2026-11-02").unwrap(),
                kind: OffDayKind::Dam,
                source: OffDaySource::Admin,
            }),
            OffDay::COLUMNS,
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
            Script::COLUMNS,
        );
    }
}
