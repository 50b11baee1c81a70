//! The store: one pool, the API's reads (the [`KeyStore`] and [`PortalStore`] ports) and its pool gauges.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::access::{ApiKeyRecord, KeyDigest};
use callstats_domain::calendar::{DateRange, Month};
use callstats_domain::model::{CallScore, OffDayRecord, Operator, Script, Sheet, SheetContent};
use callstats_domain::ports::{KeyStore, PortalStore, StoreError};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::Date;

use crate::config::{ConfigError, DatabaseUrl, StoreConfig};
use crate::pool::{self, Pools, QueryCounter, load_all, with_connection};
use crate::rows::{
    CallScoreRow, KeyRow, KpiRowRow, MetricRow, OffDayRow, OperatorRow, ScriptRow, SheetRow,
    StatedTotalsRow, assemble_rows,
};
use crate::schema::{
    api_keys, call_scores, kpi_metrics, kpi_rows, kpi_sheets, off_days, operators, scripts,
};

/// A snapshot of the connection pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStatus {
    /// Most connections the pool opens.
    pub max_size: usize,
    /// Connections open now, in use or idle.
    pub open: usize,
    /// Open connections not in use.
    pub idle: usize,
    /// Requests waiting for a connection.
    pub waiting: usize,
}

/// The portal database, Postgres or SQLite, behind a bounded pool.
pub struct Store {
    pub(crate) pools: Pools,
    pub(crate) url: DatabaseUrl,
    /// A SQLite file read as an immutable snapshot (see [`Store::read_only_file`]).
    read_only_file: bool,
    queries: QueryCounter,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Builds the pool; nothing connects until the first query, so a database that is down
    /// now is an error of each call (and the store recovers when it is back), not of this one.
    pub fn open(config: &StoreConfig) -> Result<Self, ConfigError> {
        let queries = QueryCounter::default();
        let (pools, read_only_file) = pool::build(config, &queries)?;
        Ok(Self {
            pools,
            url: config.url.clone(),
            read_only_file,
            queries,
        })
    }

    /// Whether this is a SQLite file that neither it nor its folder lets this process write
    /// (a read-only mount, a file and folder without write permission): it is read as an
    /// immutable snapshot, without locks or journal, and every write fails.
    #[must_use]
    pub const fn read_only_file(&self) -> bool {
        self.read_only_file
    }

    /// Statements sent by this store's connections so far.
    #[must_use]
    pub fn queries_run(&self) -> u64 {
        self.queries.get()
    }

    /// How busy the connection pool is now, for the pool gauges.
    #[must_use]
    pub fn pool_status(&self) -> PoolStatus {
        let status = match &self.pools {
            Pools::Postgres(pool) => pool.status(),
            Pools::Sqlite(pool) => pool.status(),
        };
        PoolStatus {
            max_size: status.max_size,
            open: status.size,
            idle: status.available,
            waiting: status.waiting,
        }
    }

    /// Keeps the pool gauges (`callstats_db_pool_*`) current, every 5 seconds, while the store
    /// lives; outside a Tokio runtime there is nothing to report to, and nothing is started.
    pub fn report_pool_usage(self: &Arc<Self>) {
        const INTERVAL: Duration = Duration::from_secs(5);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = Arc::downgrade(self);
        runtime.spawn(async move {
            let mut interval = tokio::time::interval(INTERVAL);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                let Some(store) = store.upgrade() else {
                    break;
                };
                let status = store.pool_status();
                let value = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                metrics::gauge!("callstats_db_pool_max_connections").set(value(status.max_size));
                metrics::gauge!("callstats_db_pool_open_connections").set(value(status.open));
                metrics::gauge!("callstats_db_pool_in_use_connections")
                    .set(value(status.open.saturating_sub(status.idle)));
                metrics::gauge!("callstats_db_pool_waiting").set(value(status.waiting));
            }
        });
    }

    /// Where the store points, password redacted when shown.
    #[must_use]
    pub fn url(&self) -> &DatabaseUrl {
        &self.url
    }
}

pub(crate) fn query_failed(error: diesel::result::Error) -> StoreError {
    StoreError::from_source("query failed", error)
}

fn convert<R, T>(rows: Vec<R>) -> Result<Vec<T>, StoreError>
where
    T: TryFrom<R, Error = StoreError>,
{
    rows.into_iter().map(T::try_from).collect()
}

/// First day of `month` and of the month after it.
/// The first and the last day of `month`, both inclusive (the day after 9999-12-31 is not a
/// date the calendar has).
fn month_bounds(month: Month) -> Result<(Date, Date), StoreError> {
    let day = |day| {
        Date::from_calendar_date(month.year(), month.month(), day)
            .map_err(|error| StoreError::from_source(format!("month {month} out of range"), error))
    };
    Ok((day(1)?, day(month.month().length(month.year()))?))
}

#[async_trait]
impl KeyStore for Store {
    async fn find_key(&self, digest: &KeyDigest) -> Result<Option<ApiKeyRecord>, StoreError> {
        let hex = digest.to_hex();
        let row: Option<KeyRow> = with_connection!(&self.pools, |conn| {
            api_keys::table
                .filter(api_keys::key_digest.eq(&hex))
                .select(KeyRow::as_select())
                .first(conn)
                .await
                .optional()
        })
        .map_err(query_failed)?;
        row.map(ApiKeyRecord::try_from).transpose()
    }

    async fn key_digests(&self) -> Result<Vec<KeyDigest>, StoreError> {
        let rows: Vec<String> =
            load_all!(&self.pools, api_keys::table.select(api_keys::key_digest))?;
        rows.iter()
            .map(|hex| {
                KeyDigest::from_hex(hex).ok_or_else(|| {
                    StoreError::new(format!(
                        "api_keys holds a digest that is not 64 hex digits: {hex:?}"
                    ))
                })
            })
            .collect()
    }
}

#[async_trait]
impl PortalStore for Store {
    async fn operators(&self) -> Result<Vec<Operator>, StoreError> {
        let rows: Vec<OperatorRow> = load_all!(
            &self.pools,
            operators::table
                .select(OperatorRow::as_select())
                .order(operators::agent_number)
        )?;
        convert(rows)
    }

    async fn off_days(&self, month: Month) -> Result<Vec<OffDayRecord>, StoreError> {
        let (first, last) = month_bounds(month)?;
        let rows: Vec<OffDayRow> = load_all!(
            &self.pools,
            off_days::table
                .filter(off_days::day.ge(first).and(off_days::day.le(last)))
                .select(OffDayRow::as_select())
                .order((off_days::day, off_days::agent_number))
        )?;
        convert(rows)
    }

    async fn published_sheets(&self, month: Option<Month>) -> Result<Vec<Sheet>, StoreError> {
        let month = month.map(|m| m.to_string());
        let rows: Vec<SheetRow> = with_connection!(&self.pools, |conn| {
            let mut query = kpi_sheets::table
                .filter(kpi_sheets::published.eq(true))
                .select(SheetRow::as_select())
                .order((
                    kpi_sheets::month.desc(),
                    kpi_sheets::shift.asc(),
                    kpi_sheets::id.asc(),
                ))
                .into_boxed();
            if let Some(month) = &month {
                query = query.filter(kpi_sheets::month.eq(month));
            }
            query.load(conn).await
        })
        .map_err(query_failed)?;
        convert(rows)
    }

    /// Three statements whatever the size of the sheet: the stated totals, the rows, and every
    /// metric of every row. Each one filters on `published`, so a sheet unpublished between
    /// them yields no rows rather than a draft's.
    async fn sheet_content(&self, sheet_id: i64) -> Result<Option<SheetContent>, StoreError> {
        let published = kpi_sheets::id
            .eq(sheet_id)
            .and(kpi_sheets::published.eq(true));
        let read = with_connection!(&self.pools, |conn| {
            async {
                let Some(totals) = kpi_sheets::table
                    .filter(published)
                    .select(StatedTotalsRow::as_select())
                    .first(conn)
                    .await
                    .optional()?
                else {
                    return Ok(None);
                };
                let rows = kpi_rows::table
                    .inner_join(kpi_sheets::table)
                    .filter(published)
                    .select(KpiRowRow::as_select())
                    .order(kpi_rows::sheet_row)
                    .load(conn)
                    .await?;
                let metrics = kpi_metrics::table
                    .inner_join(kpi_sheets::table)
                    .filter(published)
                    .select(MetricRow::as_select())
                    .order((kpi_metrics::sheet_row, kpi_metrics::ordinal))
                    .load(conn)
                    .await?;
                Ok(Some((totals, rows, metrics)))
            }
            .await
        })
        .map_err(query_failed)?;
        read.map(|(totals, rows, metrics)| {
            Ok(SheetContent {
                sheet_totals: totals.into(),
                operators: assemble_rows(rows, metrics)?,
            })
        })
        .transpose()
    }

    async fn scripts(&self) -> Result<Vec<Script>, StoreError> {
        let rows: Vec<ScriptRow> = load_all!(
            &self.pools,
            scripts::table
                .select(ScriptRow::as_select())
                .order((scripts::views.desc(), scripts::id))
        )?;
        convert(rows)
    }

    async fn call_scores(&self, range: DateRange) -> Result<Vec<CallScore>, StoreError> {
        let (from, to) = range.unix_window();
        let rows: Vec<CallScoreRow> = load_all!(
            &self.pools,
            call_scores::table
                .filter(
                    call_scores::started_at_unix
                        .ge(from)
                        .and(call_scores::started_at_unix.lt(to)),
                )
                .select(CallScoreRow::as_select())
                .order((call_scores::started_at_unix, call_scores::call_id))
        )?;
        convert(rows)
    }
}
