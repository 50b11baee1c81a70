//! Rows as diesel reads and writes them, and their conversion to the domain's records.
//!
//! Read rows select only the columns the API shows: no struct here that a read path loads
//! has a `username` or `phone` field, so those columns cannot leave the database by accident.

use std::collections::BTreeMap;

use callstats_domain::access::ApiKeyRecord;
use callstats_domain::calendar::{LocalDateTime, Month};
use callstats_domain::model::{
    AgentNumber, CallScore, KpiOperatorRow, KpiTotals, LocalizedText, Metric, OffDayKind,
    OffDayRecord, OffDaySource, Operator, Script, Sentiment, Sheet,
};
use callstats_domain::ports::StoreError;
use callstats_domain::scope::ScopeSet;
use diesel::prelude::*;
use time::{Date, OffsetDateTime, PrimitiveDateTime};

use crate::schema::{
    api_keys, call_scores, kpi_metrics, kpi_rows, kpi_sheets, off_days, operators, scripts,
};

/// An enum stored as one of a fixed set of lower-case words.
pub trait TextCode: Sized + Copy + 'static {
    /// Every stored word, in declaration order.
    const CODES: &'static [&'static str];
    fn code(self) -> &'static str;
    fn from_code(code: &str) -> Option<Self>;
}

macro_rules! text_codes {
    ($ty:ty { $($variant:ident => $code:literal),+ $(,)? }) => {
        impl TextCode for $ty {
            const CODES: &'static [&'static str] = &[$($code),+];

            fn code(self) -> &'static str {
                match self {
                    $(Self::$variant => $code),+
                }
            }

            fn from_code(code: &str) -> Option<Self> {
                match code {
                    $($code => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

text_codes!(OffDayKind { Dam => "dam", Unpaid => "unpaid" });
text_codes!(OffDaySource { Admin => "admin", Auto => "auto", Swap => "swap" });
text_codes!(Sentiment { Positive => "positive", Neutral => "neutral", Negative => "negative" });

/// A stored value the domain cannot accept: the portal wrote something outside the schema's
/// contract. Reported as "unavailable" rather than guessed at.
fn corrupt(table: &str, column: &str, value: impl std::fmt::Display) -> StoreError {
    StoreError::new(format!("{table}.{column} holds an invalid value: {value}"))
}

/// The same, for a value the domain refused with an error of its own.
fn invalid(
    table: &str,
    column: &str,
    error: impl std::error::Error + Send + Sync + 'static,
) -> StoreError {
    StoreError::from_source(format!("{table}.{column} holds an invalid value"), error)
}

fn agent(table: &str, raw: &str) -> Result<AgentNumber, StoreError> {
    AgentNumber::new(raw).map_err(|error| invalid(table, "agent_number", error))
}

fn code<T: TextCode>(table: &str, column: &str, raw: &str) -> Result<T, StoreError> {
    T::from_code(raw).ok_or_else(|| corrupt(table, column, format!("{raw:?}")))
}

fn instant(table: &str, column: &str, unix: i64) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::from_unix_timestamp(unix).map_err(|error| invalid(table, column, error))
}

/// A roster entry as the API reads it.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = operators)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct OperatorRow {
    agent_number: String,
    name: String,
    team: String,
    shift: String,
    staff_role: Option<String>,
    joined_at: PrimitiveDateTime,
}

impl TryFrom<OperatorRow> for Operator {
    type Error = StoreError;

    fn try_from(row: OperatorRow) -> Result<Self, StoreError> {
        Ok(Self {
            agent_number: agent("operators", &row.agent_number)?,
            name: row.name,
            team: row.team,
            shift: row.shift,
            staff_role: row.staff_role,
            joined_at: LocalDateTime::new(row.joined_at),
        })
    }
}

/// A roster entry as seeding writes it, private columns included.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = operators, treat_none_as_default_value = false)]
pub(crate) struct NewOperator {
    pub(crate) agent_number: String,
    pub(crate) name: String,
    pub(crate) team: String,
    pub(crate) shift: String,
    pub(crate) staff_role: Option<String>,
    pub(crate) joined_at: PrimitiveDateTime,
    pub(crate) username: Option<String>,
    pub(crate) phone: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = off_days)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct OffDayRow {
    pub(crate) agent_number: String,
    pub(crate) day: Date,
    pub(crate) kind: String,
    pub(crate) source: String,
}

impl TryFrom<OffDayRow> for OffDayRecord {
    type Error = StoreError;

    fn try_from(row: OffDayRow) -> Result<Self, StoreError> {
        Ok(Self {
            agent_number: agent("off_days", &row.agent_number)?,
            date: callstats_domain::calendar::Day::new(row.day),
            kind: code("off_days", "kind", &row.kind)?,
            source: code("off_days", "source", &row.source)?,
        })
    }
}

/// A sheet's header; the `published` filter is every query's, never the caller's.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = kpi_sheets)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct SheetRow {
    id: i64,
    name: String,
    month: String,
    shift: String,
    updated_at: PrimitiveDateTime,
}

impl TryFrom<SheetRow> for Sheet {
    type Error = StoreError;

    fn try_from(row: SheetRow) -> Result<Self, StoreError> {
        Ok(Self {
            id: row.id,
            month: Month::parse(&row.month)
                .map_err(|_| corrupt("kpi_sheets", "month", format!("{:?}", row.month)))?,
            name: row.name,
            shift: row.shift,
            updated_at: LocalDateTime::new(row.updated_at),
        })
    }
}

/// The totals row of the source spreadsheet, as stated there.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = kpi_sheets)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct StatedTotalsRow {
    stated_kpi_sum: Option<f64>,
    stated_fiksa: Option<f64>,
    stated_bonus: Option<f64>,
    stated_fine: Option<f64>,
    stated_payout: Option<f64>,
}

impl From<StatedTotalsRow> for KpiTotals {
    fn from(row: StatedTotalsRow) -> Self {
        Self {
            kpi_sum: row.stated_kpi_sum,
            fiksa: row.stated_fiksa,
            bonus: row.stated_bonus,
            fine: row.stated_fine,
            payout: row.stated_payout,
        }
    }
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = kpi_sheets, treat_none_as_default_value = false)]
pub(crate) struct NewSheet {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) month: String,
    pub(crate) shift: String,
    pub(crate) published: bool,
    pub(crate) updated_at: PrimitiveDateTime,
    pub(crate) stated_kpi_sum: Option<f64>,
    pub(crate) stated_fiksa: Option<f64>,
    pub(crate) stated_bonus: Option<f64>,
    pub(crate) stated_fine: Option<f64>,
    pub(crate) stated_payout: Option<f64>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = kpi_rows, treat_none_as_default_value = false)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct KpiRowRow {
    pub(crate) sheet_id: i64,
    pub(crate) sheet_row: i32,
    pub(crate) agent_number: Option<String>,
    pub(crate) name: String,
    pub(crate) kpi_percent: f64,
    pub(crate) kpi_sum: f64,
    pub(crate) fiksa: Option<f64>,
    pub(crate) bonus: Option<f64>,
    pub(crate) fine: Option<f64>,
    pub(crate) payout: Option<f64>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = kpi_metrics, treat_none_as_default_value = false)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct MetricRow {
    pub(crate) sheet_id: i64,
    pub(crate) sheet_row: i32,
    pub(crate) ordinal: i32,
    pub(crate) name: String,
    pub(crate) value: f64,
    pub(crate) ratio: Option<f64>,
    pub(crate) kpi: f64,
}

/// Joins rows (ordered by `sheet_row`) with their metrics (ordered by row, then ordinal).
pub(crate) fn assemble_rows(
    rows: Vec<KpiRowRow>,
    metrics: Vec<MetricRow>,
) -> Result<Vec<KpiOperatorRow>, StoreError> {
    let mut by_row: BTreeMap<i32, Vec<Metric>> = BTreeMap::new();
    for metric in metrics {
        by_row.entry(metric.sheet_row).or_default().push(Metric {
            name: metric.name,
            value: metric.value,
            ratio: metric.ratio,
            kpi: metric.kpi,
        });
    }
    rows.into_iter()
        .map(|row| {
            Ok(KpiOperatorRow {
                agent_number: row
                    .agent_number
                    .as_deref()
                    .map(|raw| agent("kpi_rows", raw))
                    .transpose()?,
                row: u32::try_from(row.sheet_row)
                    .map_err(|_| corrupt("kpi_rows", "sheet_row", row.sheet_row))?,
                metrics: by_row.remove(&row.sheet_row).unwrap_or_default(),
                name: row.name,
                kpi_percent: row.kpi_percent,
                kpi_sum: row.kpi_sum,
                fiksa: row.fiksa,
                bonus: row.bonus,
                fine: row.fine,
                payout: row.payout,
            })
        })
        .collect()
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = scripts)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct ScriptRow {
    pub(crate) id: i64,
    pub(crate) title_uz: String,
    pub(crate) title_ru: String,
    pub(crate) category_uz: String,
    pub(crate) category_ru: String,
    pub(crate) views: i64,
}

impl TryFrom<ScriptRow> for Script {
    type Error = StoreError;

    fn try_from(row: ScriptRow) -> Result<Self, StoreError> {
        Ok(Self {
            id: row.id,
            views: u64::try_from(row.views).map_err(|_| corrupt("scripts", "views", row.views))?,
            title: LocalizedText {
                uz: row.title_uz,
                ru: row.title_ru,
            },
            category: LocalizedText {
                uz: row.category_uz,
                ru: row.category_ru,
            },
        })
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = call_scores)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct CallScoreRow {
    pub(crate) call_id: String,
    pub(crate) agent_number: String,
    pub(crate) started_at_unix: i64,
    pub(crate) checklist_percent: f64,
    pub(crate) sentiment: String,
}

impl TryFrom<CallScoreRow> for CallScore {
    type Error = StoreError;

    fn try_from(row: CallScoreRow) -> Result<Self, StoreError> {
        Ok(Self {
            agent_number: agent("call_scores", &row.agent_number)?,
            started_at: row.started_at_unix,
            checklist_percent: row.checklist_percent,
            sentiment: code("call_scores", "sentiment", &row.sentiment)?,
        })
    }
}

/// A key as stored: everything but the key itself.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = api_keys)]
#[diesel(check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct KeyRow {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) display_prefix: String,
    pub(crate) scopes: String,
    pub(crate) rate_limit_per_minute: i32,
    pub(crate) allowed_origin: Option<String>,
    pub(crate) created_at_unix: i64,
    pub(crate) expires_at_unix: Option<i64>,
    pub(crate) revoked_at_unix: Option<i64>,
}

impl TryFrom<KeyRow> for ApiKeyRecord {
    type Error = StoreError;

    fn try_from(row: KeyRow) -> Result<Self, StoreError> {
        let at =
            |column, unix: Option<i64>| unix.map(|u| instant("api_keys", column, u)).transpose();
        Ok(Self {
            id: row.id,
            scopes: ScopeSet::parse_list(&row.scopes)
                .map_err(|error| invalid("api_keys", "scopes", error))?,
            rate_limit_per_minute: u32::try_from(row.rate_limit_per_minute).map_err(|_| {
                corrupt(
                    "api_keys",
                    "rate_limit_per_minute",
                    row.rate_limit_per_minute,
                )
            })?,
            allowed_origin: row.allowed_origin,
            expires_at: at("expires_at_unix", row.expires_at_unix)?,
            revoked_at: at("revoked_at_unix", row.revoked_at_unix)?,
            name: row.name.into(),
        })
    }
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = api_keys, treat_none_as_default_value = false)]
pub(crate) struct NewKeyRow {
    pub(crate) name: String,
    pub(crate) key_digest: String,
    pub(crate) display_prefix: String,
    pub(crate) scopes: String,
    pub(crate) rate_limit_per_minute: i32,
    pub(crate) allowed_origin: Option<String>,
    pub(crate) created_at_unix: i64,
    pub(crate) expires_at_unix: Option<i64>,
    pub(crate) revoked_at_unix: Option<i64>,
}
