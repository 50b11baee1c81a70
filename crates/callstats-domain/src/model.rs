//! The records the ports hand in, and the values the statistics make of them. callstats-api
//! writes each as the wire carries it and holds its definition there; the figures here are
//! already rounded (see [`crate::stats::round`]) where a statistic made them, raw where a port
//! returned them.

use serde::Serialize;
use time::OffsetDateTime;

use crate::calendar::{Day, LocalDateTime, Month};
// The identifiers live apart so that the parameters can validate a queue without importing
// the resources; they stay reachable here, where the records that carry them are.
pub use crate::identifiers::{
    AgentNumber, InvalidAgentNumber, InvalidQueueName, MAX_IDENTIFIER_BYTES, QueueName,
};
use crate::params::Direction;
use crate::scope::ScopeSet;

/// Currency of every money figure.
pub const CURRENCY: &str = "UZS";

/// The longest wait (and the longest call) there can be: a day.
pub const MAX_WAIT_SECONDS: f64 = 86_400.0;

/// One call from the upstream call platform, reduced to what the statistics use.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    pub direction: Direction,
    /// `None` for calls no agent answered.
    pub agent_number: Option<AgentNumber>,
    /// Start of the call, Unix seconds (its day is the Tashkent day of this instant; see
    /// [`CallRecord::new`]).
    pub started_at: i64,
    pub duration_seconds: f64,
    /// Seconds from entering the queue until answered or abandoned, 0..=86 400; `None` when
    /// the platform does not track it for this call (outbound calls never have one).
    pub wait_seconds: Option<f64>,
    /// The queue that offered the call; `None` when the platform names none.
    pub queue: Option<QueueName>,
}

impl CallRecord {
    /// A call that started at `started` and lasted `duration_seconds`, answered by no agent,
    /// without a wait or a queue (set the public fields for those).
    ///
    /// `started` may carry any offset: [`CallRecord::started_at`] keeps the instant as Unix
    /// seconds, and the day a call counts on is the Tashkent day of that instant (a call at
    /// 2026-11-01 20:00 UTC is one of 2 November).
    ///
    /// ```
    /// use callstats_domain::calendar::{DateRange, Day};
    /// use callstats_domain::call_day::CallDay;
    /// use callstats_domain::model::CallRecord;
    /// use callstats_domain::params::Direction;
    /// use time::macros::datetime;
    ///
    /// let call = CallRecord::new(Direction::Inbound, datetime!(2026-11-01 20:00 UTC), 30.0);
    /// let first = Day::parse("2026-11-01").unwrap();
    /// let second = Day::parse("2026-11-02").unwrap();
    /// let days = CallDay::split(&DateRange::up_to_31_days(first, second).unwrap(), 0, &[call]);
    /// assert_eq!((days[0].calls().len(), days[1].calls().len()), (0, 1));
    /// ```
    #[must_use]
    pub fn new(direction: Direction, started: OffsetDateTime, duration_seconds: f64) -> Self {
        Self {
            direction,
            agent_number: None,
            started_at: started.unix_timestamp(),
            duration_seconds,
            wait_seconds: None,
            queue: None,
        }
    }
}

/// Sentiment of a scored call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

/// A quality score the portal gave one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallScore {
    pub agent_number: AgentNumber,
    /// Start of the scored call, Unix seconds.
    pub started_at: i64,
    /// 0..=100.
    pub checklist_percent: f64,
    pub sentiment: Sentiment,
}

/// The admitted key /ping reports, and the time it was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub name: String,
    pub scopes: ScopeSet,
    pub rate_limit_per_minute: u32,
    /// ISO 8601 UTC with milliseconds, e.g. `2026-11-21T06:15:30.123Z`.
    pub server_time: String,
}

/// `{date, count}` of the daily series and of `peak_day`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayCount {
    pub date: Day,
    pub count: u64,
}

/// `{hour, count}` of the hourly histogram and of `peak_hour`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HourCount {
    pub hour: u8,
    pub count: u64,
}

/// The nearest-rank percentiles of the answered calls' waits
/// ([`speed_of_answer_percentiles`](crate::stats::service_level::speed_of_answer_percentiles)).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SpeedOfAnswerPercentiles {
    pub p50: f64,
    pub p80: f64,
    pub p90: f64,
    pub p95: f64,
}

/// The service level against a threshold
/// ([`service_level`](crate::stats::service_level::service_level)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceLevel {
    pub threshold_seconds: u16,
    pub answered_within_threshold: u64,
    pub calls_with_wait: u64,
    pub percent: f64,
}

/// A published KPI sheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sheet {
    pub id: i64,
    pub name: String,
    pub month: Month,
    pub shift: String,
    pub updated_at: LocalDateTime,
}

/// KPI money totals. `None` means the sheet does not track that figure.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct KpiTotals {
    pub kpi_sum: Option<f64>,
    pub fiksa: Option<f64>,
    pub bonus: Option<f64>,
    pub fine: Option<f64>,
    pub payout: Option<f64>,
}

/// One metric of a KPI operator row.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    /// `None` when the sheet has no ratio column.
    pub ratio: Option<f64>,
    pub kpi: f64,
}

/// One operator row of a KPI sheet.
#[derive(Debug, Clone, PartialEq)]
pub struct KpiOperatorRow {
    /// `None` for paid operators on the sheet without a portal account.
    pub agent_number: Option<AgentNumber>,
    pub name: String,
    pub row: u32,
    /// A ratio (0.404 is 40.4 %).
    pub kpi_percent: f64,
    pub kpi_sum: f64,
    pub fiksa: Option<f64>,
    pub bonus: Option<f64>,
    pub fine: Option<f64>,
    pub payout: Option<f64>,
    pub metrics: Vec<Metric>,
}

/// What the portal stores for one published sheet besides its header.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SheetContent {
    /// The totals row of the source spreadsheet, as stated there.
    pub sheet_totals: KpiTotals,
    pub operators: Vec<KpiOperatorRow>,
}

/// The named KPI body for keys holding `kpi:detail`.
#[derive(Debug, Clone, PartialEq)]
pub struct KpiDetail {
    pub sheet: Sheet,
    pub operator_count: usize,
    pub totals: KpiTotals,
    pub sheet_totals: KpiTotals,
    pub operators: Vec<KpiOperatorRow>,
}

/// min, p25, median, p75, max and avg of one figure over a sheet's rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub max: f64,
    pub avg: f64,
}

/// The spreads of the aggregate view; each `None` when no row has the figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distribution {
    pub payout: Option<Spread>,
    pub kpi_percent: Option<Spread>,
}

/// An anonymous rank: no name, no agent number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rank {
    pub rank: u32,
    pub kpi_percent: f64,
    pub payout: Option<f64>,
}

/// The anonymous KPI body for keys holding only `kpi:aggregate`.
#[derive(Debug, Clone, PartialEq)]
pub struct KpiAggregate {
    pub sheet: Sheet,
    pub operator_count: usize,
    /// The sums over every row: for a small group too, the group's total.
    pub totals: KpiTotals,
    /// `None` for a sheet of fewer rows than the deployment's minimum for a group's spread.
    pub distribution: Option<Distribution>,
    /// One anonymous entry per row; `None` when `distribution` is.
    pub ranks: Option<Vec<Rank>>,
}

/// A published sheet as a key may see it: named rows, or anonymous figures.
#[derive(Debug, Clone, PartialEq)]
pub enum KpiMonth {
    Detail(KpiDetail),
    Aggregate(KpiAggregate),
}

/// A roster entry. Usernames, phones and credentials have no field here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    pub agent_number: AgentNumber,
    pub name: String,
    pub team: String,
    pub shift: String,
    /// `None` for regular operators; a label for non-operator staff.
    pub staff_role: Option<String>,
    pub joined_at: LocalDateTime,
}

/// Kind of an off-day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OffDayKind {
    /// Regular day off.
    Dam,
    /// Unpaid leave.
    Unpaid,
}

impl OffDayKind {
    /// Every kind.
    pub const ALL: [Self; 2] = [Self::Dam, Self::Unpaid];
}

/// Who set an off-day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OffDaySource {
    Admin,
    Auto,
    Swap,
}

impl OffDaySource {
    /// Every source.
    pub const ALL: [Self; 3] = [Self::Admin, Self::Auto, Self::Swap];
}

/// An off-day as the portal stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffDayRecord {
    pub agent_number: AgentNumber,
    pub date: Day,
    pub kind: OffDayKind,
    pub source: OffDaySource,
}

/// An off-day joined with the operator's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffDay {
    pub agent_number: AgentNumber,
    pub name: String,
    pub date: Day,
    pub kind: OffDayKind,
    pub source: OffDaySource,
}

/// The off-days of a month, by date then agent number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub month: Month,
    pub off_days: Vec<OffDay>,
}

/// Text in Uzbek and Russian.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalizedText {
    pub uz: String,
    pub ru: String,
}

/// A script with its view count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub id: i64,
    pub title: LocalizedText,
    pub category: LocalizedText,
    pub views: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_day_kinds_and_sources_use_the_spec_words() {
        let json = serde_json::to_string(&[OffDayKind::Dam, OffDayKind::Unpaid]).unwrap();
        assert_eq!(json, r#"["dam","unpaid"]"#);
        let json =
            serde_json::to_string(&[OffDaySource::Admin, OffDaySource::Auto, OffDaySource::Swap])
                .unwrap();
        assert_eq!(json, r#"["admin","auto","swap"]"#);
    }
}
