//! The call-day store's durable tier ([`CallDayArchive`]): table `call_days`, one row per day,
//! created by `migrate` on both backends and written through the same diesel code.
//!
//! A row holds the day in the domain's versioned encoding
//! ([`callstats_infra::encoding::call_day`]), compressed with zstd at level 3, the smallest row of
//! the codecs compared for a day of calls (figures in docs/operations.md, "Call days"). A row whose
//! `version` is not the encoding's, that does not decompress or decode, or holds another day is
//! left out of a read (a miss: the day is fetched again and its row replaced). A row larger than
//! [`MAX_ROW_BYTES`] is refused, and reading decompresses at most [`MAX_DECODED_BYTES`].
//!
//! Beside the day, the row holds the day's rollup ([`callstats_infra::encoding::rollup`],
//! uncompressed: a few kilobytes), which a trend reads instead of the day. A row without one
//! (written before the column) or with one that does not decode is left out of a read of rollups.

use std::io::Read as _;
use std::sync::Arc;

use async_trait::async_trait;
use callstats_domain::calendar::Day;
use callstats_domain::call_day::CallDay;
use callstats_domain::ports::{CallDayArchive, StoreError};
use callstats_domain::rollup::DayRollup;
use callstats_infra::encoding::call_day::{self as call_day_encoding, VERSION};
use callstats_infra::encoding::rollup;
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;
use time::{Date, OffsetDateTime};

use crate::pool::{load_all, with_connection};
use crate::schema::call_days;
use crate::store::{Store, query_failed};

/// zstd's level: its default, the balance measured in docs/operations.md.
const LEVEL: i32 = 3;
/// The largest compressed row written (a day is about 60 KB at 5,000 calls).
pub const MAX_ROW_BYTES: usize = 12 << 20;
/// The most bytes one row decompresses to: a row claiming more is corrupt.
pub const MAX_DECODED_BYTES: u64 = 256 << 20;

/// The days in the service's database. Cheap to clone.
#[derive(Clone, Debug)]
pub struct StoredCallDays {
    store: Arc<Store>,
}

/// The table's size, for its gauges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, QueryableByName)]
pub struct TableSize {
    /// Rows: days held.
    #[diesel(sql_type = BigInt)]
    pub days: i64,
    /// Bytes of their compressed encodings.
    #[diesel(sql_type = BigInt)]
    pub bytes: i64,
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = call_days)]
struct Row {
    day: Date,
    version: i32,
    encoded: Vec<u8>,
}

#[derive(Insertable)]
#[diesel(table_name = call_days)]
struct NewRow<'a> {
    day: Date,
    version: i32,
    fetched_at_ms: i64,
    stored_at_unix: i64,
    encoded: &'a [u8],
    rollup: &'a [u8],
}

impl StoredCallDays {
    /// The tier on `store`, which must be read-write to keep days.
    #[must_use]
    pub const fn new(store: Arc<Store>) -> Self {
        Self { store }
    }

    /// How many days the table holds, and their bytes.
    pub async fn size(&self) -> Result<TableSize, StoreError> {
        with_connection!(&self.store.pools, |conn| {
            diesel::sql_query(
                "SELECT COUNT(*) AS days, \
                 CAST(COALESCE(SUM(LENGTH(encoded)), 0) AS BIGINT) AS bytes FROM call_days",
            )
            .get_result::<TableSize>(conn)
            .await
        })
        .map_err(query_failed)
    }
}

/// `day` as a row's bytes: the encoding, compressed.
///
/// # Errors
/// When the compressed day is larger than [`MAX_ROW_BYTES`].
pub fn compress(day: &CallDay) -> Result<Vec<u8>, StoreError> {
    let plain = call_day_encoding::encode(day);
    let packed = zstd::bulk::compress(&plain, LEVEL)
        .map_err(|error| StoreError::from_source("compressing a call day", error))?;
    if packed.len() > MAX_ROW_BYTES {
        return Err(StoreError::new(format!(
            "the call day {} is {} bytes compressed, over the {MAX_ROW_BYTES}-byte row bound",
            day.day(),
            packed.len()
        )));
    }
    Ok(packed)
}

/// The day a row's bytes hold, if they are `day` in this version.
#[must_use]
pub fn decompress(packed: &[u8], day: Day) -> Option<CallDay> {
    let mut plain = Vec::new();
    zstd::stream::read::Decoder::new(packed)
        .ok()?
        .take(MAX_DECODED_BYTES.saturating_add(1))
        .read_to_end(&mut plain)
        .ok()?;
    if u64::try_from(plain.len()).map_or(true, |len| len > MAX_DECODED_BYTES) {
        return None;
    }
    call_day_encoding::decode(&plain, day)
}

/// A stored value as read, shared; one that could not be read is counted (an operator sees
/// it) and is a miss.
fn counted_read<T>(read: Option<T>) -> Option<Arc<T>> {
    if read.is_none() {
        metrics::counter!("callstats_call_day_undecodable_total").increment(1);
    }
    read.map(Arc::new)
}

#[async_trait]
impl CallDayArchive for StoredCallDays {
    async fn get(&self, days: &[Day]) -> Result<Vec<Arc<CallDay>>, StoreError> {
        if days.is_empty() {
            return Ok(Vec::new());
        }
        let dates: Vec<Date> = days.iter().map(|day| day.date()).collect();
        let rows: Vec<Row> = load_all!(
            &self.store.pools,
            call_days::table
                .filter(call_days::day.eq_any(&dates))
                .select(Row::as_select())
                .order(call_days::day)
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let day = Day::new(row.day);
                counted_read(
                    (row.version == i32::from(VERSION))
                        .then(|| decompress(&row.encoded, day))
                        .flatten(),
                )
            })
            .collect())
    }

    async fn rollups(&self, days: &[Day]) -> Result<Vec<Arc<DayRollup>>, StoreError> {
        if days.is_empty() {
            return Ok(Vec::new());
        }
        let dates: Vec<Date> = days.iter().map(|day| day.date()).collect();
        let rows: Vec<(Date, Option<Vec<u8>>)> = load_all!(
            &self.store.pools,
            call_days::table
                .filter(call_days::day.eq_any(&dates))
                .filter(call_days::rollup.is_not_null())
                .select((call_days::day, call_days::rollup))
                .order(call_days::day)
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|(date, bytes)| counted_read(rollup::decode(&bytes?, Day::new(date))))
            .collect())
    }

    async fn put(&self, day: &CallDay) -> Result<(), StoreError> {
        let encoded = compress(day)?;
        let rollup = rollup::encode(&DayRollup::of(day));
        let row = NewRow {
            day: day.day().date(),
            version: i32::from(VERSION),
            fetched_at_ms: day.fetched_at_ms(),
            stored_at_unix: OffsetDateTime::now_utc().unix_timestamp(),
            encoded: &encoded,
            rollup: &rollup,
        };
        with_connection!(&self.store.pools, |conn| {
            diesel::insert_into(call_days::table)
                .values(&row)
                .on_conflict(call_days::day)
                .do_update()
                .set((
                    call_days::version.eq(excluded(call_days::version)),
                    call_days::fetched_at_ms.eq(excluded(call_days::fetched_at_ms)),
                    call_days::stored_at_unix.eq(excluded(call_days::stored_at_unix)),
                    call_days::encoded.eq(excluded(call_days::encoded)),
                    call_days::rollup.eq(excluded(call_days::rollup)),
                ))
                .execute(conn)
                .await
        })
        .map_err(query_failed)?;
        Ok(())
    }

    async fn held_days(&self, first: Day, last: Day) -> Result<Vec<Day>, StoreError> {
        let (first, last) = (first.date(), last.date());
        let dates: Vec<Date> = load_all!(
            &self.store.pools,
            call_days::table
                .select(call_days::day)
                .filter(call_days::day.ge(first))
                .filter(call_days::day.le(last))
                .filter(call_days::rollup.is_not_null())
                .order(call_days::day)
        )?;
        Ok(dates.into_iter().map(Day::new).collect())
    }

    async fn delete_before(&self, first: Day, limit: u32) -> Result<u64, StoreError> {
        let first = first.date();
        let limit = i64::from(limit);
        let deleted = with_connection!(&self.store.pools, |conn| {
            async {
                let oldest: Vec<Date> = call_days::table
                    .select(call_days::day)
                    .filter(call_days::day.lt(first))
                    .order(call_days::day)
                    .limit(limit)
                    .load(conn)
                    .await?;
                if oldest.is_empty() {
                    return Ok(0);
                }
                diesel::delete(call_days::table.filter(call_days::day.eq_any(&oldest)))
                    .execute(conn)
                    .await
            }
            .await
        })
        .map_err(query_failed)?;
        Ok(u64::try_from(deleted).unwrap_or(0))
    }
}
