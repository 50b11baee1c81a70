//! The examples: each 200 answer's body is computed by the domain's own functions from a small
//! fixed data set, so it shows what the API really sends.

use callstats_api::Wire;
use callstats_api::intervals::IntervalsResponse;
use callstats_api::live::LiveResponse;
use callstats_api::portal::KeyInfo;
use callstats_api::queues::QueuesResponse;
use callstats_api::summary::CallSummary;
use callstats_api::trend::TrendResponse;
use callstats_domain::calendar::{DateRange, Day, LocalDateTime, Month, unix_millis};
use callstats_domain::call_day::CallDay;
use callstats_domain::live::{AgentNow, AgentState, LiveSnapshot, QueueNow, live_figures};
use callstats_domain::model::{
    self, AgentNumber, CallRecord, CallScore, KpiOperatorRow, KpiTotals, LocalizedText, Metric,
    OffDayKind, OffDayRecord, OffDaySource, Operator, QueueName, Script, Sentiment, Sheet,
    SheetContent,
};
use callstats_domain::params::{
    Direction, Granularity, IntervalMinutes, RosterFilter, ScriptsLimit, SlThreshold,
};
use callstats_domain::request::Endpoint;
use callstats_domain::rollup::DayRollup;
use callstats_domain::scope::{KpiView, ScopeSet};
use callstats_domain::stats::{self, AggregateMinRows};
use callstats_domain::use_cases::Response;
use serde_json::Value;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::{Content, RefOr};

/// The JSON of a computed answer, as the application writes it.
fn wire(response: &Response) -> Value {
    serde_json::to_value(Wire::from(response)).unwrap_or(Value::Null)
}

/// One example goes in `example`; several are named in `examples`.
pub(super) fn set_examples(content: &mut Content, examples: Vec<(&str, Value)>) {
    if let [(_, single)] = examples.as_slice() {
        content.example = Some(single.clone());
        return;
    }
    for (name, value) in examples {
        let example = ExampleBuilder::new()
            .summary(name)
            .value(Some(value))
            .build();
        content.examples.insert(name.to_owned(), RefOr::T(example));
    }
}

/// Bodies of the 200 answers, computed by the domain from a small fixed data set.
pub(super) fn success_examples(endpoint: Endpoint) -> Vec<(&'static str, Value)> {
    let Some(sample) = Sample::new() else {
        return Vec::new();
    };
    let value = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
    match endpoint {
        Endpoint::Ping => vec![(
            "key",
            value(serde_json::to_value(KeyInfo::from(&sample.key_info))),
        )],
        Endpoint::CallsSummary => {
            vec![(
                "summary",
                value(serde_json::to_value(CallSummary::from(
                    &stats::call_summary(
                        &sample.range,
                        Direction::Inbound,
                        SlThreshold::DEFAULT,
                        None,
                        &sample.calls,
                    ),
                ))),
            )]
        }
        Endpoint::CallsAgents => {
            let board = stats::agent_leaderboard(
                &sample.range,
                None,
                &RosterFilter::default(),
                &sample.calls,
                &sample.scores,
                &sample.roster,
                stats::PriorWeight::DEFAULT,
            );
            vec![("leaderboard", wire(&Response::Agents(board)))]
        }
        Endpoint::CallsQueues => {
            vec![(
                "queues",
                value(serde_json::to_value(QueuesResponse::from(
                    &stats::queues_response(
                        &sample.range,
                        Direction::Inbound,
                        SlThreshold::DEFAULT,
                        &sample.calls,
                    ),
                ))),
            )]
        }
        Endpoint::CallsIntervals => {
            // One hour of the sample's first day, so that the example stays short.
            let mut intervals = IntervalsResponse::from(&stats::intervals_response(
                &DateRange::day(sample.range.start()),
                Direction::Inbound,
                IntervalMinutes::default(),
                SlThreshold::DEFAULT,
                None,
                &sample.calls,
            ));
            let busy = intervals
                .intervals
                .iter()
                .position(|row| row.counts.offered > 0)
                .unwrap_or(0);
            intervals.intervals = intervals.intervals.into_iter().skip(busy).take(2).collect();
            vec![("intervals", value(serde_json::to_value(intervals)))]
        }
        Endpoint::CallsTrend => {
            let rollups: Vec<DayRollup> = sample.calls.iter().map(DayRollup::of).collect();
            vec![(
                "trend",
                value(serde_json::to_value(TrendResponse::from(
                    &stats::trend_response(
                        &sample.range,
                        Direction::Inbound,
                        Granularity::Week,
                        SlThreshold::DEFAULT,
                        None,
                        &rollups,
                    ),
                ))),
            )]
        }
        Endpoint::CallsLive => live_example(&sample.roster)
            .map(|live| vec![("now", value(serde_json::to_value(live)))])
            .unwrap_or_default(),
        Endpoint::KpiMonths => vec![(
            "sheets",
            wire(&Response::Sheets(stats::sheet_listing(vec![sample.sheet]))),
        )],
        Endpoint::KpiMonth => [
            ("detail", KpiView::Detail, AggregateMinRows::DEFAULT),
            ("aggregate", KpiView::Aggregate, AggregateMinRows::DEFAULT),
            // The same two rows where the deployment sets the recommended minimum of 5.
            (
                "small group",
                KpiView::Aggregate,
                AggregateMinRows::RECOMMENDED,
            ),
        ]
        .into_iter()
        .map(|(name, view, min_rows)| {
            (
                name,
                wire(&Response::Kpi(stats::kpi_month(
                    sample.sheet.clone(),
                    sample.content.clone(),
                    view,
                    min_rows,
                ))),
            )
        })
        .collect(),
        Endpoint::Operators => vec![(
            "roster",
            wire(&Response::Operators(stats::roster(sample.roster))),
        )],
        Endpoint::Schedule => {
            vec![(
                "schedule",
                wire(&Response::Schedule(stats::schedule(
                    sample.month,
                    sample.off_days,
                    &sample.roster,
                ))),
            )]
        }
        Endpoint::ScriptsStats => {
            vec![(
                "scripts",
                wire(&Response::Scripts(stats::top_scripts(
                    sample.scripts,
                    ScriptsLimit::default(),
                ))),
            )]
        }
    }
}

/// What is happening now in the sample's centre: two queues, three agents of its roster.
fn live_example(roster: &[Operator]) -> Option<LiveResponse> {
    let as_of = time::macros::datetime!(2026-11-21 09:15:22 +05:00);
    let queue = |name: &str| QueueName::new(name).ok();
    let agent = |number: &str, state, minutes_before: i64, on: Option<&str>| {
        Some(AgentNow {
            agent_number: AgentNumber::new(number).ok()?,
            state,
            since: as_of - time::Duration::minutes(minutes_before),
            queue: on.and_then(queue),
        })
    };
    let snapshot = LiveSnapshot::new(
        as_of,
        vec![
            QueueNow {
                queue: queue("sales")?,
                waiting: 3,
                oldest_wait_seconds: Some(41.5),
            },
            QueueNow {
                queue: queue("support")?,
                waiting: 0,
                oldest_wait_seconds: None,
            },
        ],
        vec![
            agent("101", AgentState::OnCall, 4, Some("sales"))?,
            agent("102", AgentState::Available, 1, None)?,
            agent("103", AgentState::WrapUp, 0, None)?,
        ],
    )
    .ok()?;
    Some(LiveResponse::from(&live_figures(&snapshot, roster)))
}

/// A tiny, fixed portal and call log.
struct Sample {
    key_info: model::KeyInfo,
    range: DateRange,
    month: Month,
    calls: Vec<CallDay>,
    scores: Vec<CallScore>,
    roster: Vec<Operator>,
    off_days: Vec<OffDayRecord>,
    sheet: Sheet,
    content: SheetContent,
    scripts: Vec<Script>,
}

impl Sample {
    fn new() -> Option<Self> {
        let day = Day::new(time::macros::date!(2026 - 11 - 02));
        let range = DateRange::up_to_31_days(day, day).ok()?;
        let month = day.month();
        let agent = |n: &str| AgentNumber::new(n).ok();
        let at = |hour: i64, minute: i64| range.unix_window().0 + hour * 3600 + minute * 60;
        let call =
            |agent_number: Option<&str>,
             direction,
             (hour, minute),
             duration_seconds,
             (wait_seconds, queue): (Option<f64>, Option<&str>)| CallRecord {
                direction,
                agent_number: agent_number.and_then(agent),
                started_at: at(hour, minute),
                duration_seconds,
                wait_seconds,
                queue: queue.and_then(|queue| QueueName::new(queue).ok()),
            };
        let untracked = (None, None);
        // Fetched the next morning, once the day had settled.
        let fetched = time::macros::datetime!(2026-11-03 06:15:30.123 UTC);
        let calls = CallDay::split(
            &range,
            unix_millis(fetched),
            &[
                call(
                    Some("101"),
                    Direction::Inbound,
                    (9, 5),
                    125.4,
                    (Some(8.0), Some("support")),
                ),
                call(
                    Some("101"),
                    Direction::Inbound,
                    (10, 12),
                    301.0,
                    (Some(31.5), Some("support")),
                ),
                call(
                    Some("102"),
                    Direction::Inbound,
                    (10, 40),
                    88.2,
                    (Some(14.0), Some("sales")),
                ),
                call(
                    None,
                    Direction::Inbound,
                    (10, 41),
                    12.0,
                    (Some(12.0), Some("sales")),
                ),
                call(Some("102"), Direction::Outbound, (14, 3), 64.9, untracked),
            ],
        );
        let score = |n: &str, hour, checklist_percent, sentiment| {
            agent(n).map(|agent_number| CallScore {
                agent_number,
                started_at: at(hour, 0),
                checklist_percent,
                sentiment,
            })
        };
        let scores = [
            score("101", 9, 92.5, Sentiment::Positive),
            score("102", 10, 71.0, Sentiment::Neutral),
        ]
        .into_iter()
        .flatten()
        .collect();
        let joined_at = LocalDateTime::parse("2025-03-01 09:00:00").ok();
        let operator = |n: &str, name: &str, staff_role: Option<&str>| {
            Some(Operator {
                agent_number: agent(n)?,
                name: name.into(),
                team: "A".into(),
                shift: "day".into(),
                staff_role: staff_role.map(Into::into),
                joined_at: joined_at?,
            })
        };
        let roster: Vec<Operator> = [
            operator("101", "Oʻtkir Karimov", None),
            operator("102", "Dilnoza Yusupova", None),
            operator("190", "Malika Rahimova", Some("supervisor")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let off_days = agent("102")
            .map(|agent_number| OffDayRecord {
                agent_number,
                date: day,
                kind: OffDayKind::Dam,
                source: OffDaySource::Auto,
            })
            .into_iter()
            .collect();
        let sheet = Sheet {
            id: 12,
            name: "Noyabr 2026".into(),
            month,
            shift: "day".into(),
            updated_at: LocalDateTime::parse("2026-11-20 18:00:00").ok()?,
        };
        let row = |row, agent_number: Option<&str>, name: &str, kpi_percent, kpi_sum, payout| {
            KpiOperatorRow {
                agent_number: agent_number.and_then(agent),
                name: name.into(),
                row,
                kpi_percent,
                kpi_sum,
                fiksa: Some(3_000_000.0),
                bonus: Some(250_000.0),
                fine: None,
                payout: Some(payout),
                metrics: vec![Metric {
                    name: "AHT".into(),
                    value: 182.0,
                    ratio: Some(0.95),
                    kpi: 400_000.0,
                }],
            }
        };
        let content = SheetContent {
            sheet_totals: KpiTotals {
                kpi_sum: Some(2_250_000.0),
                fiksa: None,
                bonus: Some(500_000.0),
                fine: None,
                payout: Some(9_200_000.0),
            },
            operators: vec![
                row(
                    5,
                    Some("101"),
                    "Oʻtkir Karimov",
                    0.92,
                    1_300_000.0,
                    4_550_000.0,
                ),
                row(6, None, "Sardor Aliyev", 0.7841, 950_000.0, 4_200_000.0),
            ],
        };
        let text = |uz: &str, ru: &str| LocalizedText {
            uz: uz.into(),
            ru: ru.into(),
        };
        let scripts = vec![
            Script {
                id: 1,
                title: text("Salomlashish", "Приветствие"),
                category: text("Kirish", "Вступление"),
                views: 412,
            },
            Script {
                id: 7,
                title: text("E'tirozlar bilan ishlash", "Работа с возражениями"),
                category: text("Savdo", "Продажи"),
                views: 268,
            },
        ];
        let key_info = model::KeyInfo {
            name: "partner-dashboard".into(),
            scopes: ScopeSet::parse_list("calls,kpi:aggregate,operators").ok()?,
            rate_limit_per_minute: 120,
            server_time: "2026-11-21T06:15:30.123Z".into(),
        };
        Some(Self {
            key_info,
            range,
            month,
            calls,
            scores,
            roster,
            off_days,
            sheet,
            content,
            scripts,
        })
    }
}
