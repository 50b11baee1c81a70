//! /kpi/{month}: a published sheet, named for `kpi:detail`, anonymous for `kpi:aggregate`.

use callstats_domain::calendar::Month;
use callstats_domain::model::{self, AgentNumber, CURRENCY};
use callstats_domain::params::{self, Param, ParamError, SHIFT_FORM, Shift};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::portal::Sheet;
use crate::query::ParamValues;

/// The body of /kpi/{month}, tagged by `granularity`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(tag = "granularity", rename_all = "lowercase")]
pub enum KpiMonthResponse {
    Detail(KpiDetail),
    Aggregate(KpiAggregate),
}

/// The named KPI body for keys holding `kpi:detail`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct KpiDetail {
    pub sheet: Sheet,
    /// The currency of every money figure.
    #[schema(example = "UZS")]
    pub currency: &'static str,
    pub operator_count: usize,
    /// The sums over the operator rows.
    pub totals: KpiTotals,
    /// The totals row of the source spreadsheet, as stated there.
    pub sheet_totals: KpiTotals,
    /// By spreadsheet row.
    pub operators: Vec<KpiOperatorRow>,
}

/// The anonymous KPI body for keys holding only `kpi:aggregate`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct KpiAggregate {
    pub sheet: Sheet,
    /// The currency of every money figure.
    #[schema(example = "UZS")]
    pub currency: &'static str,
    pub operator_count: usize,
    /// The sums over every row: for a small group too, the group's total.
    pub totals: KpiTotals,
    /// Null when the sheet has at least one row but fewer than the deployment's minimum for
    /// showing a group's spread and ranks (`CALLSTATS_KPI_AGGREGATE_MIN_ROWS`: 1 by default,
    /// so never; 5 recommended), as each figure of so small a group is close to one person's
    /// pay.
    pub distribution: Option<Distribution>,
    /// One anonymous entry per row; null when `distribution` is.
    pub ranks: Option<Vec<Rank>>,
}

/// KPI money totals, UZS. null means the sheet does not track that figure, not zero.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct KpiTotals {
    /// Total KPI-earned money.
    pub kpi_sum: Option<f64>,
    /// Fixed salary component.
    pub fiksa: Option<f64>,
    /// Total bonuses.
    pub bonus: Option<f64>,
    /// Total penalties.
    pub fine: Option<f64>,
    /// Total payable for the month.
    pub payout: Option<f64>,
}

/// One operator row of a KPI sheet.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct KpiOperatorRow {
    /// null for paid operators on the sheet without a portal account.
    #[schema(value_type = Option<crate::schemas::AgentNumber>)]
    pub agent_number: Option<AgentNumber>,
    pub name: String,
    /// The row of the source spreadsheet; not a stable identifier.
    pub row: u32,
    /// Overall achievement as a ratio (0.404 is 40.4 %); may exceed 1.
    pub kpi_percent: f64,
    /// `kpi_sum` of [`KpiTotals`], for this operator.
    pub kpi_sum: f64,
    /// `fiksa` of [`KpiTotals`], for this operator.
    pub fiksa: Option<f64>,
    /// `bonus` of [`KpiTotals`], for this operator.
    pub bonus: Option<f64>,
    /// `fine` of [`KpiTotals`], for this operator.
    pub fine: Option<f64>,
    /// `payout` of [`KpiTotals`], for this operator.
    pub payout: Option<f64>,
    /// One entry per metric of the sheet.
    pub metrics: Vec<Metric>,
}

/// One metric of a KPI operator row.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Metric {
    pub name: String,
    /// The raw measured figure.
    pub value: f64,
    /// 1 means the target was met; null when the sheet has no ratio column.
    pub ratio: Option<f64>,
    /// Money earned on the metric.
    pub kpi: f64,
}

/// `distribution` of the aggregate KPI body; null when no row has the figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct Distribution {
    pub payout: Option<Spread>,
    pub kpi_percent: Option<Spread>,
}

/// The spread of one figure over a sheet's rows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct Spread {
    pub min: f64,
    /// The first quartile, by linear interpolation between closest ranks.
    pub p25: f64,
    pub median: f64,
    /// The third quartile.
    pub p75: f64,
    pub max: f64,
    /// The mean.
    pub avg: f64,
}

/// An anonymous rank: no name, no agent number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct Rank {
    /// By `kpi_percent` descending: equal percents share a rank (1, 2, 2, 4).
    pub rank: u32,
    pub kpi_percent: f64,
    pub payout: Option<f64>,
}

impl From<&model::KpiMonth> for KpiMonthResponse {
    fn from(month: &model::KpiMonth) -> Self {
        match month {
            model::KpiMonth::Detail(detail) => Self::Detail(KpiDetail {
                sheet: (&detail.sheet).into(),
                currency: CURRENCY,
                operator_count: detail.operator_count,
                totals: detail.totals.into(),
                sheet_totals: detail.sheet_totals.into(),
                operators: detail.operators.iter().map(KpiOperatorRow::from).collect(),
            }),
            model::KpiMonth::Aggregate(aggregate) => Self::Aggregate(KpiAggregate {
                sheet: (&aggregate.sheet).into(),
                currency: CURRENCY,
                operator_count: aggregate.operator_count,
                totals: aggregate.totals.into(),
                distribution: aggregate.distribution.map(|d| Distribution {
                    payout: d.payout.map(Spread::from),
                    kpi_percent: d.kpi_percent.map(Spread::from),
                }),
                ranks: aggregate
                    .ranks
                    .as_ref()
                    .map(|ranks| ranks.iter().map(Rank::from).collect()),
            }),
        }
    }
}

impl From<model::KpiTotals> for KpiTotals {
    fn from(totals: model::KpiTotals) -> Self {
        Self {
            kpi_sum: totals.kpi_sum,
            fiksa: totals.fiksa,
            bonus: totals.bonus,
            fine: totals.fine,
            payout: totals.payout,
        }
    }
}

impl From<&model::KpiOperatorRow> for KpiOperatorRow {
    fn from(row: &model::KpiOperatorRow) -> Self {
        Self {
            agent_number: row.agent_number.clone(),
            name: row.name.clone(),
            row: row.row,
            kpi_percent: row.kpi_percent,
            kpi_sum: row.kpi_sum,
            fiksa: row.fiksa,
            bonus: row.bonus,
            fine: row.fine,
            payout: row.payout,
            metrics: row
                .metrics
                .iter()
                .map(|metric| Metric {
                    name: metric.name.clone(),
                    value: metric.value,
                    ratio: metric.ratio,
                    kpi: metric.kpi,
                })
                .collect(),
        }
    }
}

impl From<model::Spread> for Spread {
    fn from(spread: model::Spread) -> Self {
        Self {
            min: spread.min,
            p25: spread.p25,
            median: spread.median,
            p75: spread.p75,
            max: spread.max,
            avg: spread.avg,
        }
    }
}

impl From<&model::Rank> for Rank {
    fn from(rank: &model::Rank) -> Self {
        Self {
            rank: rank.rank,
            kpi_percent: rank.kpi_percent,
            payout: rank.payout,
        }
    }
}

/// Path of /kpi/{month}.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct MonthPath {
    /// The month, `YYYY-MM` with month 01 to 12 (`2026-13` is a 400).
    #[param(pattern = r"^\d{4}-(0[1-9]|1[0-2])$", example = "2026-11")]
    pub month: String,
}

impl MonthPath {
    /// The month, naming the path segment when it is not one.
    pub fn parse(&self) -> Result<Month, ParamError> {
        params::month(&self.month, Param::path("month"))
    }
}

/// Query of /kpi/{month}.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct KpiQuery {
    /// Shift label of the sheet to show (1 to 64 characters, no control characters). Without
    /// it, the lowest-sorting shift (byte-wise) is shown; a shift with no published sheet that
    /// month is a 404 listing the shifts that exist.
    // The pattern excludes exactly what `char::is_control` refuses (Unicode category Cc).
    #[param(
        value_type = Option<String>,
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]+$",
        example = "day"
    )]
    pub shift: ParamValues,
}

impl KpiQuery {
    /// The shift asked for, if any.
    pub fn parse(&self) -> Result<Option<Shift>, ParamError> {
        self.shift.parsed("shift", SHIFT_FORM, Shift::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::fields;
    use callstats_domain::model::SheetContent;
    use callstats_domain::scope::KpiView;
    use callstats_domain::stats::{AggregateMinRows, kpi_month};
    use callstats_domain::testing::{row, sheet};
    use serde_json::Value;

    fn body(rows: Vec<model::KpiOperatorRow>, view: KpiView, min_rows: AggregateMinRows) -> Value {
        let content = SheetContent {
            operators: rows,
            ..SheetContent::default()
        };
        let month = kpi_month(sheet(1, "2026-11", "day"), content, view, min_rows);
        serde_json::to_value(KpiMonthResponse::from(&month)).unwrap()
    }

    #[test]
    fn aggregate_body_has_no_names_and_no_agent_numbers() {
        let rows = vec![
            row(1, Some("AGENT-101"), 0.8, Some(100.0)),
            row(2, None, 0.5, None),
        ];
        let value = body(rows, KpiView::Aggregate, AggregateMinRows::DEFAULT);
        let json = value.to_string();
        assert!(
            !json.contains("AGENT-101")
                && !json.contains("Operator 1")
                && !json.contains("agent_number"),
            "{json}"
        );
        assert_eq!(
            fields(&value),
            [
                "granularity",
                "sheet",
                "currency",
                "operator_count",
                "totals",
                "distribution",
                "ranks"
            ]
        );
        assert_eq!(value["granularity"], "aggregate");
        assert_eq!(value["currency"], "UZS");
    }

    #[test]
    fn a_group_too_small_shows_null_distribution_and_ranks() {
        let rows = (1..=4).map(|n| row(n, None, 0.5, Some(1000.0))).collect();
        let value = body(rows, KpiView::Aggregate, AggregateMinRows::RECOMMENDED);
        assert_eq!(
            (&value["distribution"], &value["ranks"]),
            (&Value::Null, &Value::Null)
        );
        assert_eq!(value["totals"]["payout"], 4000.0);
    }

    #[test]
    fn detail_body_has_the_spec_fields() {
        let value = body(
            vec![row(5, None, 0.9, None)],
            KpiView::Detail,
            AggregateMinRows::DEFAULT,
        );
        assert_eq!(
            fields(&value),
            [
                "granularity",
                "sheet",
                "currency",
                "operator_count",
                "totals",
                "sheet_totals",
                "operators"
            ]
        );
        assert_eq!(value["operators"][0]["agent_number"], Value::Null);
        assert_eq!(value["sheet"]["updated_at"], "2026-11-20 18:00:00");
    }
}
