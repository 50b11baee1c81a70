//! The HTTP contract of callstats: each endpoint's answer as the wire carries it, made from
//! what the domain computed, with its OpenAPI schema (docs/architecture.md, "callstats-api").
//!
//! A figure that several answers carry is declared once, on a block that each of them flattens
//! ([`blocks`]): its doc comment is its definition in the OpenAPI document, in
//! docs/behaviour.md's figure tables and in the generated clients.

pub mod blocks;
pub mod intervals;
pub mod queues;
pub mod summary;
pub mod trend;

#[cfg(test)]
mod test_support;

use callstats_domain::live::LiveBody;
use callstats_domain::model::{
    AgentsResponse, KpiMonthResponse, OperatorsResponse, Schedule, ScriptsResponse, SheetsResponse,
};
use callstats_domain::use_cases::Response;
use serde::Serialize;

/// An answer as the wire carries it: what the application writes as JSON (and, for the
/// endpoints with rows, as CSV).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Wire<'a> {
    CallSummary(Box<summary::CallSummary>),
    Agents(&'a AgentsResponse),
    Queues(queues::QueuesResponse),
    Intervals(intervals::IntervalsResponse),
    Trend(trend::TrendResponse),
    Live(&'a LiveBody),
    Sheets(&'a SheetsResponse),
    Kpi(&'a KpiMonthResponse),
    Operators(&'a OperatorsResponse),
    Schedule(&'a Schedule),
    Scripts(&'a ScriptsResponse),
}

impl<'a> From<&'a Response> for Wire<'a> {
    fn from(response: &'a Response) -> Self {
        match response {
            Response::CallSummary(summary) => Self::CallSummary(Box::new(summary.into())),
            Response::Agents(body) => Self::Agents(body),
            Response::Queues(queues) => Self::Queues(queues.into()),
            Response::Intervals(intervals) => Self::Intervals(intervals.into()),
            Response::Trend(trend) => Self::Trend(trend.into()),
            Response::Live(body) => Self::Live(body),
            Response::Sheets(body) => Self::Sheets(body),
            Response::Kpi(body) => Self::Kpi(body),
            Response::Operators(body) => Self::Operators(body),
            Response::Schedule(body) => Self::Schedule(body),
            Response::Scripts(body) => Self::Scripts(body),
        }
    }
}
