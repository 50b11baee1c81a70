//! The portal's answers: /operators, /schedule, /kpi/months, /scripts/stats, and /ping's key,
//! each made from the records the portal store hands in, in the order the domain gave them.

use callstats_domain::calendar::{Day, LocalDateTime, MONTH_FORM, Month};
use callstats_domain::model::{self, AgentNumber, OffDayKind, OffDaySource};
use callstats_domain::params::{self, LIMIT_FORM, Param, ParamError, ScriptsLimit};
use callstats_domain::scope::ScopeSet;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::query::ParamValues;

/// The key object of /ping.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct KeyInfo {
    pub ok: bool,
    pub key_name: String,
    #[schema(value_type = crate::schemas::ScopeSet)]
    pub scopes: ScopeSet,
    pub rate_limit_per_minute: u32,
    #[schema(value_type = crate::schemas::ScopeSet)]
    pub available_scopes: ScopeSet,
    /// ISO 8601 UTC with milliseconds, e.g. `2026-11-21T06:15:30.123Z`.
    pub server_time: String,
}

impl From<&model::KeyInfo> for KeyInfo {
    fn from(key: &model::KeyInfo) -> Self {
        Self {
            ok: true,
            key_name: key.name.clone(),
            scopes: key.scopes,
            rate_limit_per_minute: key.rate_limit_per_minute,
            available_scopes: ScopeSet::all(),
            server_time: key.server_time.clone(),
        }
    }
}

/// The body of /operators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct OperatorsResponse {
    /// By agent number; staff stay in (`staff_role` says who they are).
    pub operators: Vec<Operator>,
}

/// A roster entry. Usernames, phones and credentials have no field here, so they cannot be
/// serialised by accident.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Operator {
    #[schema(value_type = crate::schemas::AgentNumber)]
    pub agent_number: AgentNumber,
    /// The operator's display name.
    pub name: String,
    pub team: String,
    pub shift: String,
    /// null for regular operators; a label for non-operator staff.
    pub staff_role: Option<String>,
    #[schema(value_type = crate::schemas::LocalDateTime)]
    pub joined_at: LocalDateTime,
}

impl From<&[model::Operator]> for OperatorsResponse {
    fn from(roster: &[model::Operator]) -> Self {
        Self {
            operators: rows(roster),
        }
    }
}

impl From<&model::Operator> for Operator {
    fn from(operator: &model::Operator) -> Self {
        Self {
            agent_number: operator.agent_number.clone(),
            name: operator.name.clone(),
            team: operator.team.clone(),
            shift: operator.shift.clone(),
            staff_role: operator.staff_role.clone(),
            joined_at: operator.joined_at,
        }
    }
}

/// The body of /schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Schedule {
    #[schema(value_type = crate::schemas::Month)]
    pub month: Month,
    /// By date, then agent number.
    pub off_days: Vec<OffDay>,
}

/// An off-day, joined with the operator's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct OffDay {
    #[schema(value_type = crate::schemas::AgentNumber)]
    pub agent_number: AgentNumber,
    /// The roster's name; the agent number for an operator missing from the roster.
    pub name: String,
    #[schema(value_type = crate::schemas::Date)]
    pub date: Day,
    #[schema(value_type = crate::schemas::OffDayKind)]
    pub kind: OffDayKind,
    #[schema(value_type = crate::schemas::OffDaySource)]
    pub source: OffDaySource,
}

impl From<&model::Schedule> for Schedule {
    fn from(schedule: &model::Schedule) -> Self {
        Self {
            month: schedule.month,
            off_days: rows(&schedule.off_days),
        }
    }
}

impl From<&model::OffDay> for OffDay {
    fn from(day: &model::OffDay) -> Self {
        Self {
            agent_number: day.agent_number.clone(),
            name: day.name.clone(),
            date: day.date,
            kind: day.kind,
            source: day.source,
        }
    }
}

/// The body of /kpi/months.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SheetsResponse {
    /// By month descending, then shift, then id.
    pub sheets: Vec<Sheet>,
}

/// A published KPI sheet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Sheet {
    pub id: i64,
    pub name: String,
    #[schema(value_type = crate::schemas::Month)]
    pub month: Month,
    pub shift: String,
    #[schema(value_type = crate::schemas::LocalDateTime)]
    pub updated_at: LocalDateTime,
}

impl From<&[model::Sheet]> for SheetsResponse {
    fn from(sheets: &[model::Sheet]) -> Self {
        Self {
            sheets: rows(sheets),
        }
    }
}

impl From<&model::Sheet> for Sheet {
    fn from(sheet: &model::Sheet) -> Self {
        Self {
            id: sheet.id,
            name: sheet.name.clone(),
            month: sheet.month,
            shift: sheet.shift.clone(),
            updated_at: sheet.updated_at,
        }
    }
}

/// The body of /scripts/stats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ScriptsResponse {
    /// The most viewed first, then by id.
    pub scripts: Vec<Script>,
}

/// A script with its view count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Script {
    pub id: i64,
    pub title: LocalizedText,
    pub category: LocalizedText,
    pub views: u64,
}

/// Text in Uzbek and Russian.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LocalizedText {
    pub uz: String,
    pub ru: String,
}

impl From<&[model::Script]> for ScriptsResponse {
    fn from(scripts: &[model::Script]) -> Self {
        Self {
            scripts: rows(scripts),
        }
    }
}

impl From<&model::Script> for Script {
    fn from(script: &model::Script) -> Self {
        Self {
            id: script.id,
            title: (&script.title).into(),
            category: (&script.category).into(),
            views: script.views,
        }
    }
}

impl From<&model::LocalizedText> for LocalizedText {
    fn from(text: &model::LocalizedText) -> Self {
        Self {
            uz: text.uz.clone(),
            ru: text.ru.clone(),
        }
    }
}

/// The wire rows of `records`, in their order.
fn rows<'a, R, W: From<&'a R>>(records: &'a [R]) -> Vec<W> {
    records.iter().map(W::from).collect()
}

/// Query of /schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct ScheduleQuery {
    /// The month, `YYYY-MM` with month 01 to 12. Required.
    #[param(value_type = String, required = true, pattern = r"^\d{4}-(0[1-9]|1[0-2])$", example = "2026-11")]
    pub month: ParamValues,
}

impl ScheduleQuery {
    /// The month (required).
    pub fn parse(&self) -> Result<Month, ParamError> {
        params::month(
            self.month.required("month", MONTH_FORM)?,
            Param::query("month"),
        )
    }
}

/// Query of /scripts/stats.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct ScriptsQuery {
    /// How many scripts, ASCII digits only, 1 to 100.
    #[param(value_type = Option<u8>, minimum = 1, maximum = 100, default = 20, example = 10)]
    pub limit: ParamValues,
}

impl ScriptsQuery {
    /// The limit, 20 by default.
    pub fn parse(&self) -> Result<ScriptsLimit, ParamError> {
        Ok(self
            .limit
            .parsed("limit", LIMIT_FORM, ScriptsLimit::parse)?
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roster_entries_serialise_without_private_fields() {
        let operator = model::Operator {
            agent_number: AgentNumber::new("101").unwrap(),
            name: "Oʻtkir Karimov".into(),
            team: "A".into(),
            shift: "day".into(),
            staff_role: None,
            joined_at: LocalDateTime::parse("2025-03-01 09:00:00").unwrap(),
        };
        assert_eq!(
            serde_json::to_string(&Operator::from(&operator)).unwrap(),
            r#"{"agent_number":"101","name":"Oʻtkir Karimov","team":"A","shift":"day","staff_role":null,"joined_at":"2025-03-01 09:00:00"}"#
        );
    }

    #[test]
    fn an_off_day_carries_the_name_it_was_joined_with() {
        let schedule = model::Schedule {
            month: Month::parse("2026-11").unwrap(),
            off_days: vec![model::OffDay {
                agent_number: AgentNumber::new("101").unwrap(),
                name: "Oʻtkir Karimov".into(),
                date: Day::parse("2026-11-05").unwrap(),
                kind: OffDayKind::Unpaid,
                source: OffDaySource::Swap,
            }],
        };
        assert_eq!(
            serde_json::to_string(&Schedule::from(&schedule)).unwrap(),
            r#"{"month":"2026-11","off_days":[{"agent_number":"101","name":"Oʻtkir Karimov","date":"2026-11-05","kind":"unpaid","source":"swap"}]}"#
        );
    }
}
