//! /kpi/{month}: sheet selection by shift, the named detail view and the anonymous aggregate
//! view, with totals that always reconcile with the rows.

use std::cmp::Ordering;

use crate::calendar::Month;
use crate::error::DomainError;
use crate::model::{
    Distribution, KpiAggregate, KpiDetail, KpiMonth, KpiOperatorRow, KpiTotals, Metric, Rank,
    Sheet, SheetContent, Spread,
};
use crate::params::Shift;
use crate::scope::KpiView;
use crate::stats::round::{round2, round4};

/// Picks the sheet of `month` to show: the one of `shift` when given, else the lowest-sorting
/// shift (byte-wise). Two published sheets of one month and shift resolve to the lower id.
///
/// Errors with 404 when the month has no published sheet, or none of that shift; the latter
/// message lists the shifts that do exist.
pub fn select_sheet(
    month: Month,
    sheets: Vec<Sheet>,
    shift: Option<&Shift>,
) -> Result<Sheet, DomainError> {
    let mut sheets: Vec<Sheet> = sheets.into_iter().filter(|s| s.month == month).collect();
    sheets.sort_by(|a, b| {
        a.shift
            .as_bytes()
            .cmp(b.shift.as_bytes())
            .then(a.id.cmp(&b.id))
    });
    if sheets.is_empty() {
        return Err(DomainError::NotFound(format!(
            "no published KPI sheet for {month}"
        )));
    }
    let Some(wanted) = shift else {
        return sheets
            .into_iter()
            .next()
            .ok_or_else(|| DomainError::NotFound(format!("no published KPI sheet for {month}")));
    };
    let mut shifts: Vec<String> = sheets.iter().map(|s| format!("'{}'", s.shift)).collect();
    shifts.dedup();
    sheets.into_iter().find(|s| s.shift == wanted.as_str()).ok_or_else(|| {
        DomainError::NotFound(format!(
            "no published KPI sheet for {month} with shift '{}'; shifts published for {month}: {}",
            wanted.as_str(),
            shifts.join(", ")
        ))
    })
}

/// The fewest rows a sheet needs for an aggregate-only key to see its `distribution` and
/// `ranks`: in a smaller group each row is close to one person's pay (a sheet of one row is one
/// salary), so such a key gets the group's totals alone. 1, the default, hides nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggregateMinRows(u32);

/// A bound of 0 rows, which would mean the same as 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the KPI aggregate's minimum number of rows must be at least 1 (1 hides nothing), got 0")]
pub struct InvalidAggregateMinRows;

impl AggregateMinRows {
    pub const DEFAULT: Self = Self(1);
    /// What operators are advised to set: a group of 5 no longer points at one person's pay.
    pub const RECOMMENDED: Self = Self(5);

    pub const fn new(rows: u32) -> Result<Self, InvalidAggregateMinRows> {
        if rows == 0 {
            Err(InvalidAggregateMinRows)
        } else {
            Ok(Self(rows))
        }
    }

    #[must_use]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// Whether a sheet of `rows` rows is too small to show its rows' figures (an empty sheet
    /// has none to hide).
    #[must_use]
    pub fn hides(self, rows: usize) -> bool {
        rows > 0 && usize::try_from(self.0).is_ok_and(|bound| rows < bound)
    }
}

impl Default for AggregateMinRows {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The body for `view`: named rows for detail, anonymous figures for aggregate, whose
/// `distribution` and `ranks` are null for a sheet of fewer rows than `min_rows`.
#[must_use]
pub fn kpi_month(
    sheet: Sheet,
    content: SheetContent,
    view: KpiView,
    min_rows: AggregateMinRows,
) -> KpiMonth {
    let operators = rounded_rows(content.operators);
    let totals = totals(&operators);
    let operator_count = operators.len();
    let shown = !min_rows.hides(operator_count);
    match view {
        KpiView::Detail => KpiMonth::Detail(KpiDetail {
            sheet,
            operator_count,
            totals,
            sheet_totals: round_totals(content.sheet_totals),
            operators,
        }),
        KpiView::Aggregate => KpiMonth::Aggregate(KpiAggregate {
            sheet,
            operator_count,
            totals,
            distribution: shown.then(|| Distribution {
                payout: spread(operators.iter().filter_map(|r| r.payout).collect(), round2),
                kpi_percent: spread(operators.iter().map(|r| r.kpi_percent).collect(), round4),
            }),
            ranks: shown.then(|| ranks(&operators)),
        }),
    }
}

/// Rows ordered by spreadsheet row, with every figure rounded as shown, so that everything
/// derived from them (totals, percentiles, ranks) agrees with what a partner sees.
fn rounded_rows(mut rows: Vec<KpiOperatorRow>) -> Vec<KpiOperatorRow> {
    rows.sort_by_key(|r| r.row);
    for row in &mut rows {
        row.kpi_percent = round4(row.kpi_percent);
        row.kpi_sum = round2(row.kpi_sum);
        for money in [
            &mut row.fiksa,
            &mut row.bonus,
            &mut row.fine,
            &mut row.payout,
        ] {
            *money = money.map(round2);
        }
        row.metrics = std::mem::take(&mut row.metrics)
            .into_iter()
            .map(|m| Metric {
                name: m.name,
                value: round4(m.value),
                ratio: m.ratio.map(round4),
                kpi: round2(m.kpi),
            })
            .collect();
    }
    rows
}

fn round_totals(totals: KpiTotals) -> KpiTotals {
    KpiTotals {
        kpi_sum: totals.kpi_sum.map(round2),
        fiksa: totals.fiksa.map(round2),
        bonus: totals.bonus.map(round2),
        fine: totals.fine.map(round2),
        payout: totals.payout.map(round2),
    }
}

/// Column sums of the rows; a column is null when every row has null there.
#[must_use]
pub fn totals(rows: &[KpiOperatorRow]) -> KpiTotals {
    let column = |field: fn(&KpiOperatorRow) -> Option<f64>| {
        rows.iter()
            .filter_map(field)
            .fold(None, |sum: Option<f64>, v| Some(sum.unwrap_or(0.0) + v))
            .map(round2)
    };
    KpiTotals {
        kpi_sum: column(|r| Some(r.kpi_sum)),
        fiksa: column(|r| r.fiksa),
        bonus: column(|r| r.bonus),
        fine: column(|r| r.fine),
        payout: column(|r| r.payout),
    }
}

/// The `q`-th quartile (0..=4) of sorted values by linear interpolation between closest ranks,
/// h = (n−1)·q/4, like PERCENTILE.INC. Integer index arithmetic keeps it exact.
#[must_use]
pub fn quartile(sorted: &[f64], q: usize) -> Option<f64> {
    let scaled = sorted.len().checked_sub(1)? * q;
    let (low, remainder) = (scaled / 4, scaled % 4);
    let lower = *sorted.get(low)?;
    if remainder == 0 {
        return Some(lower);
    }
    let upper = *sorted.get(low + 1)?;
    let fraction = f64::from(u8::try_from(remainder).ok()?) / 4.0;
    Some(lower + fraction * (upper - lower))
}

/// min, quartiles, max and mean of `values`, rounded by `round`; `None` for no values.
#[must_use]
pub fn spread(mut values: Vec<f64>, round: fn(f64) -> f64) -> Option<Spread> {
    values.sort_by(f64::total_cmp);
    let n = u32::try_from(values.len()).ok().filter(|n| *n > 0)?;
    let avg = values.iter().sum::<f64>() / f64::from(n);
    Some(Spread {
        min: round(quartile(&values, 0)?),
        p25: round(quartile(&values, 1)?),
        median: round(quartile(&values, 2)?),
        p75: round(quartile(&values, 3)?),
        max: round(quartile(&values, 4)?),
        avg: round(avg),
    })
}

/// One anonymous entry per row, by kpi_percent descending then payout descending (rows without
/// payout last). Competition ranking on kpi_percent alone: equal percent, equal rank (1, 2, 2, 4).
#[must_use]
pub fn ranks(rows: &[KpiOperatorRow]) -> Vec<Rank> {
    let mut ordered: Vec<&KpiOperatorRow> = rows.iter().collect();
    ordered.sort_by(|a, b| {
        b.kpi_percent
            .total_cmp(&a.kpi_percent)
            .then_with(|| payout_desc(a.payout, b.payout))
            .then(a.row.cmp(&b.row))
    });
    let mut ranks: Vec<Rank> = Vec::with_capacity(ordered.len());
    for (position, row) in (1_u32..).zip(ordered) {
        let rank = match ranks.last() {
            Some(previous)
                if previous.kpi_percent.total_cmp(&row.kpi_percent) == Ordering::Equal =>
            {
                previous.rank
            }
            _ => position,
        };
        ranks.push(Rank {
            rank,
            kpi_percent: row.kpi_percent,
            payout: row.payout,
        });
    }
    ranks
}

fn payout_desc(a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => b.total_cmp(&a),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{month, row, sheet};

    fn shift(raw: &str) -> Shift {
        Shift::parse(raw).unwrap()
    }

    /// The id of the sheet of 2026-11 that `select_sheet` picks among `sheets` for `shift`.
    fn selected(sheets: Vec<Sheet>, shift_name: Option<&str>) -> i64 {
        select_sheet(month("2026-11"), sheets, shift_name.map(shift).as_ref())
            .unwrap()
            .id
    }

    #[test]
    fn without_shift_the_lowest_sorting_shift_is_used_bytewise() {
        let sheets = vec![
            sheet(1, "2026-11", "night"),
            sheet(2, "2026-11", "day"),
            sheet(3, "2026-11", "Tun"),
        ];
        // Byte-wise, 'T' (0x54) sorts before 'd' (0x64).
        assert_eq!(selected(sheets, None), 3);
    }

    #[test]
    fn shift_selects_its_sheet() {
        let sheets = vec![sheet(1, "2026-11", "night"), sheet(2, "2026-11", "day")];
        assert_eq!(selected(sheets, Some("night")), 1);
    }

    #[test]
    fn unknown_shift_is_404_listing_the_shifts_that_exist() {
        let sheets = vec![sheet(1, "2026-11", "night"), sheet(2, "2026-11", "day")];
        let err = select_sheet(month("2026-11"), sheets, Some(&shift("evening"))).unwrap_err();
        assert_eq!(
            err,
            DomainError::NotFound(
                "no published KPI sheet for 2026-11 with shift 'evening'; shifts published for 2026-11: 'day', 'night'".into()
            )
        );
    }

    #[test]
    fn month_without_published_sheet_is_404() {
        let err =
            select_sheet(month("2026-10"), vec![sheet(1, "2026-11", "day")], None).unwrap_err();
        assert_eq!(
            err,
            DomainError::NotFound("no published KPI sheet for 2026-10".into())
        );
    }

    #[test]
    fn duplicate_shift_sheets_resolve_to_the_lower_id() {
        let sheets = vec![sheet(9, "2026-11", "day"), sheet(4, "2026-11", "day")];
        assert_eq!(selected(sheets, Some("day")), 4);
    }

    fn detail(rows: Vec<KpiOperatorRow>, stated: KpiTotals) -> KpiDetail {
        match kpi_month(
            sheet(1, "2026-11", "day"),
            SheetContent {
                sheet_totals: stated,
                operators: rows,
            },
            KpiView::Detail,
            AggregateMinRows::RECOMMENDED,
        ) {
            KpiMonth::Detail(d) => d,
            KpiMonth::Aggregate(_) => panic!("expected detail"),
        }
    }

    fn aggregate(rows: Vec<KpiOperatorRow>) -> KpiAggregate {
        aggregate_of_at_least(rows, AggregateMinRows::DEFAULT)
    }

    fn aggregate_of_at_least(
        rows: Vec<KpiOperatorRow>,
        min_rows: AggregateMinRows,
    ) -> KpiAggregate {
        match kpi_month(
            sheet(1, "2026-11", "day"),
            SheetContent {
                operators: rows,
                ..SheetContent::default()
            },
            KpiView::Aggregate,
            min_rows,
        ) {
            KpiMonth::Aggregate(a) => a,
            KpiMonth::Detail(_) => panic!("expected aggregate"),
        }
    }

    #[test]
    fn totals_are_column_sums_and_null_where_no_row_tracks_the_column() {
        let rows = vec![
            row(5, Some("101"), 0.9, Some(100.5)),
            row(6, None, 0.5, None),
        ];
        let d = detail(rows, KpiTotals::default());
        assert_eq!(
            d.totals,
            KpiTotals {
                kpi_sum: Some(2000.0),
                fiksa: None,
                bonus: Some(20.0),
                fine: None,
                payout: Some(100.5)
            }
        );
    }

    #[test]
    fn totals_reconcile_with_the_rounded_rows() {
        let mut a = row(1, Some("101"), 0.5, Some(0.005));
        let mut b = row(2, Some("102"), 0.5, Some(0.005));
        a.kpi_sum = 0.125;
        b.kpi_sum = 0.125;
        let d = detail(vec![a, b], KpiTotals::default());
        let payout_sum: f64 = d.operators.iter().filter_map(|r| r.payout).sum();
        let kpi_sum: f64 = d.operators.iter().map(|r| r.kpi_sum).sum();
        assert_eq!(d.totals.payout, Some(round2(payout_sum)));
        assert_eq!(d.totals.kpi_sum, Some(round2(kpi_sum)));
    }

    #[test]
    fn sheet_totals_are_reported_as_stated_even_when_they_disagree() {
        let stated = KpiTotals {
            kpi_sum: Some(999.0),
            fiksa: None,
            bonus: Some(0.0),
            fine: Some(0.0),
            payout: Some(1.0),
        };
        let d = detail(vec![row(5, Some("101"), 0.9, Some(100.0))], stated);
        assert_eq!(d.sheet_totals, stated);
        assert_ne!(d.totals.kpi_sum, d.sheet_totals.kpi_sum);
    }

    #[test]
    fn detail_rows_are_ordered_by_row_and_rounded() {
        let d = detail(
            vec![
                row(9, Some("102"), 0.123_456, Some(1.0)),
                row(5, None, 1.5, None),
            ],
            KpiTotals::default(),
        );
        assert_eq!(
            d.operators.iter().map(|r| r.row).collect::<Vec<_>>(),
            [5, 9]
        );
        assert_eq!(d.operators[1].kpi_percent, 0.1235);
        assert_eq!(
            d.operators[0].metrics[0],
            Metric {
                name: "AHT".into(),
                value: 182.1235,
                ratio: Some(0.9512),
                kpi: 500.01
            }
        );
        assert_eq!(d.operator_count, 2);
    }

    #[test]
    fn quartiles_interpolate_linearly_between_closest_ranks() {
        let values = [1.0, 2.0, 3.0, 4.0];
        let got: Vec<f64> = (0..=4).map(|q| quartile(&values, q).unwrap()).collect();
        assert_eq!(got, [1.0, 1.75, 2.5, 3.25, 4.0]);
        assert_eq!(quartile(&[7.0], 2), Some(7.0));
        assert_eq!(quartile(&[], 2), None);
    }

    #[test]
    fn payout_distribution_covers_rows_with_a_payout_and_is_null_without_any() {
        let a = aggregate(vec![
            row(1, Some("1"), 0.5, Some(100.0)),
            row(2, Some("2"), 0.7, None),
            row(3, None, 0.9, Some(300.0)),
        ]);
        let distribution = a.distribution.unwrap();
        let payout = distribution.payout.unwrap();
        assert_eq!(
            (payout.min, payout.median, payout.max, payout.avg),
            (100.0, 200.0, 300.0, 200.0)
        );
        let kpi = distribution.kpi_percent.unwrap();
        assert_eq!(
            (kpi.min, kpi.p25, kpi.median, kpi.max),
            (0.5, 0.6, 0.7, 0.9)
        );
        let none = aggregate(vec![row(1, Some("1"), 0.5, None)]);
        assert_eq!(none.distribution.unwrap().payout, None);
    }

    #[test]
    fn ranks_are_competition_ranks_on_kpi_percent_alone() {
        let a = aggregate(vec![
            row(1, Some("1"), 0.8, Some(100.0)),
            row(2, Some("2"), 0.9, Some(50.0)),
            row(3, Some("3"), 0.8, Some(300.0)),
            row(4, None, 0.7, None),
        ]);
        let got: Vec<(u32, f64, Option<f64>)> = a
            .ranks
            .unwrap()
            .iter()
            .map(|r| (r.rank, r.kpi_percent, r.payout))
            .collect();
        assert_eq!(
            got,
            [
                (1, 0.9, Some(50.0)),
                (2, 0.8, Some(300.0)),
                (2, 0.8, Some(100.0)),
                (4, 0.7, None)
            ]
        );
    }

    #[test]
    fn ranks_put_rows_without_payout_after_equal_percent_rows_with_one() {
        let a = aggregate(vec![
            row(1, Some("1"), 0.8, None),
            row(2, Some("2"), 0.8, Some(1.0)),
        ]);
        assert_eq!(
            a.ranks
                .unwrap()
                .iter()
                .map(|r| (r.rank, r.payout))
                .collect::<Vec<_>>(),
            [(1, Some(1.0)), (1, None)]
        );
    }

    #[test]
    fn a_sheet_of_fewer_rows_than_the_bound_shows_its_totals_but_no_distribution_or_ranks() {
        let rows = |n: u32| -> Vec<KpiOperatorRow> {
            (1..=n)
                .map(|i| row(i, Some("101"), 0.5, Some(1000.0 * f64::from(i))))
                .collect()
        };
        let five = AggregateMinRows::new(5).unwrap();
        let one = aggregate_of_at_least(rows(1), five);
        assert_eq!((one.distribution, one.ranks), (None, None));
        assert_eq!((one.operator_count, one.totals.payout), (1, Some(1000.0)));
        let four = aggregate_of_at_least(rows(4), five);
        assert_eq!((four.distribution, four.ranks.as_ref()), (None, None));
        assert_eq!(
            four.totals.payout,
            Some(10_000.0),
            "the group's total stays"
        );
        let at_the_bound = aggregate_of_at_least(rows(5), five);
        assert_eq!(at_the_bound.ranks.map(|ranks| ranks.len()), Some(5));
        assert!(at_the_bound.distribution.is_some());
        // The default hides nothing, a single row included; an empty sheet has nothing to hide.
        let single = aggregate(rows(1));
        assert_eq!(single.ranks.map(|ranks| ranks.len()), Some(1));
        let empty = aggregate_of_at_least(Vec::new(), five);
        assert_eq!(empty.ranks, Some(Vec::new()));
        assert_eq!(AggregateMinRows::new(0), Err(InvalidAggregateMinRows));
    }

    #[test]
    fn the_bound_changes_no_detail_body() {
        let detail_at = |min_rows| {
            kpi_month(
                sheet(1, "2026-11", "day"),
                SheetContent {
                    operators: vec![row(5, Some("101"), 0.9, Some(100.0))],
                    ..SheetContent::default()
                },
                KpiView::Detail,
                min_rows,
            )
        };
        assert_eq!(
            detail_at(AggregateMinRows::DEFAULT),
            detail_at(AggregateMinRows::new(100).unwrap())
        );
    }
}
