//! The HTTP contract of callstats: each endpoint's query, read into the domain's request, and
//! its answer as the wire carries it, made from what the domain computed, both with their
//! OpenAPI schema (docs/architecture.md, "callstats-api").
//!
//! A figure that several answers carry is declared once, on a block that each of them flattens
//! ([`blocks`]): its doc comment is its definition in the OpenAPI document, in
//! docs/behaviour.md's figure tables and in the generated clients.

pub mod agents;
pub mod blocks;
pub mod intervals;
pub mod kpi;
pub mod live;
pub mod portal;
pub mod query;
pub mod queues;
pub mod request;
pub mod schemas;
pub mod summary;
pub mod trend;

#[cfg(test)]
mod test_support;

use callstats_domain::live::LiveBody;
use callstats_domain::use_cases::Response;
use serde::Serialize;

/// An answer as the wire carries it: what the application writes as JSON (and, for the
/// endpoints with rows, as CSV).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Wire<'a> {
    CallSummary(Box<summary::CallSummary>),
    Agents(agents::AgentsResponse),
    Queues(queues::QueuesResponse),
    Intervals(intervals::IntervalsResponse),
    Trend(trend::TrendResponse),
    Live(&'a LiveBody),
    Sheets(portal::SheetsResponse),
    Kpi(kpi::KpiMonthResponse),
    Operators(portal::OperatorsResponse),
    Schedule(portal::Schedule),
    Scripts(portal::ScriptsResponse),
}

impl<'a> From<&'a Response> for Wire<'a> {
    fn from(response: &'a Response) -> Self {
        match response {
            Response::CallSummary(summary) => Self::CallSummary(Box::new(summary.into())),
            Response::Agents(board) => Self::Agents(board.into()),
            Response::Queues(queues) => Self::Queues(queues.into()),
            Response::Intervals(intervals) => Self::Intervals(intervals.into()),
            Response::Trend(trend) => Self::Trend(trend.into()),
            Response::Live(body) => Self::Live(body),
            Response::Sheets(sheets) => Self::Sheets(sheets.as_slice().into()),
            Response::Kpi(month) => Self::Kpi(month.into()),
            Response::Operators(roster) => Self::Operators(roster.as_slice().into()),
            Response::Schedule(schedule) => Self::Schedule(schedule.into()),
            Response::Scripts(scripts) => Self::Scripts(scripts.as_slice().into()),
        }
    }
}
