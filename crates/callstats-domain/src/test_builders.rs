//! Builders shared by the unit tests.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::calendar::{DateRange, Day, LocalDateTime, Month};
use crate::model::{
    AgentNumber, CallRecord, CallScore, KpiOperatorRow, Metric, Operator, Sentiment, Sheet,
};
use crate::params::Direction;

pub(crate) fn day(raw: &str) -> Day {
    Day::parse(raw).unwrap()
}

pub(crate) fn month(raw: &str) -> Month {
    Month::parse(raw).unwrap()
}

pub(crate) fn range(start: &str, end: &str) -> DateRange {
    DateRange::up_to_31_days(day(start), day(end)).unwrap()
}

fn unix(rfc3339: &str) -> i64 {
    OffsetDateTime::parse(rfc3339, &Rfc3339)
        .unwrap()
        .unix_timestamp()
}

pub(crate) fn call(
    direction: Direction,
    agent: Option<&str>,
    at: &str,
    seconds: f64,
) -> CallRecord {
    CallRecord {
        direction,
        agent_number: agent.map(|a| AgentNumber::new(a).unwrap()),
        started_at: unix(at),
        duration_seconds: seconds,
        wait_seconds: None,
        queue: None,
    }
}

pub(crate) fn score(agent: &str, at: &str, percent: f64, sentiment: Sentiment) -> CallScore {
    CallScore {
        agent_number: AgentNumber::new(agent).unwrap(),
        started_at: unix(at),
        checklist_percent: percent,
        sentiment,
    }
}

pub(crate) fn operator(agent: &str, name: &str, staff_role: Option<&str>) -> Operator {
    Operator {
        agent_number: AgentNumber::new(agent).unwrap(),
        name: name.into(),
        team: "A".into(),
        shift: "day".into(),
        staff_role: staff_role.map(Into::into),
        joined_at: LocalDateTime::parse("2025-01-01 09:00:00").unwrap(),
    }
}

pub(crate) fn sheet(id: i64, month_text: &str, shift: &str) -> Sheet {
    Sheet {
        id,
        name: format!("Sheet {id}"),
        month: month(month_text),
        shift: shift.into(),
        updated_at: LocalDateTime::parse("2026-11-20 18:00:00").unwrap(),
    }
}

pub(crate) fn row(
    row: u32,
    agent: Option<&str>,
    kpi_percent: f64,
    payout: Option<f64>,
) -> KpiOperatorRow {
    KpiOperatorRow {
        agent_number: agent.map(|a| AgentNumber::new(a).unwrap()),
        name: format!("Operator {row}"),
        row,
        kpi_percent,
        kpi_sum: 1000.0,
        fiksa: None,
        bonus: Some(10.0),
        fine: None,
        payout,
        metrics: vec![Metric {
            name: "AHT".into(),
            value: 182.123_456,
            ratio: Some(0.951_23),
            kpi: 500.005,
        }],
    }
}
