//! What the domain needs from outside, as traits the adapters implement.
//!
//! With the `mock` feature, every trait `X` here but [`CallPlatform`] has a mockall mock
//! `MockX` beside it, left out of this documentation: [`crate::testing`] lists them, and
//! docs/testing.md shows one at work.
//!
//! The response cache and quota counter are infallible on purpose: when their backend (Redis)
//! is lost, the adapter degrades by itself (a miss, an in-process count), so no request ever
//! fails because of them.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use time::OffsetDateTime;

use crate::access::{ApiKeyRecord, KeyDigest, QuotaBucket};
use crate::calendar::{DateRange, Day, MAX_RANGE_DAYS, Month, runs};
use crate::call_day::{CallDay, FetchedCalls};
use crate::limits::{OverBudget, Requester};
use crate::live::{LiveBody, LiveError, LiveSnapshot};
use crate::model::{CallScore, OffDayRecord, Operator, Script, Sheet, SheetContent};
use crate::rollup::DayRollup;

/// The error an adapter's failure came from (a driver's, a client's, a parser's), kept whole for
/// the log. Shared, so that the port errors stay `Clone`: single flight hands one error to every
/// caller.
type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// The portal database could not answer. The message and its source are for logs; the API
/// says only "portal database unavailable".
#[derive(Debug, Clone, thiserror::Error)]
#[error("portal store unavailable: {message}")]
pub struct StoreError {
    /// What failed, in a few words of the adapter's.
    pub message: String,
    #[source]
    source: Option<Cause>,
}

impl StoreError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// `message`, caused by the adapter's own error.
    pub fn from_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::new(message).with_source(source)
    }

    /// The same, caused by `source`.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }
}

/// Equal when the messages are: a source has no equality of its own, and two failures that
/// read the same are the same to the domain.
impl PartialEq for StoreError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for StoreError {}

/// The call platform could not be reached or failed, answered something unusable, or asked to
/// be called less. The reason and its source are for logs; the API answers 503.
#[derive(Debug, Clone, thiserror::Error)]
#[error("call platform unavailable: {reason}")]
pub struct UpstreamError {
    /// What failed, in a few words of the adapter's.
    pub reason: String,
    pub kind: UpstreamFailure,
    /// When asking again may succeed, when the adapter knows (a breaker's remaining open
    /// period, a day's rest after an unusable answer).
    pub retry_in: Option<Duration>,
    #[source]
    source: Option<Cause>,
}

/// What kind of failure an [`UpstreamError`] is, which says what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamFailure {
    /// Down, failing or too slow: an outage.
    Unavailable,
    /// Up, but it asked for fewer requests (429, or 503 with `Retry-After`): fetch more slowly;
    /// never an outage.
    Backpressure { retry_after: Option<Duration> },
    /// Its answer for the window is unusable (past a bound, a record that breaks the contract,
    /// a malformed page): asking again at once would get the same answer.
    Unusable,
}

impl UpstreamError {
    /// The upstream is down, failed or did not answer in time.
    pub fn new(reason: impl Into<String>) -> Self {
        Self::of_kind(reason, UpstreamFailure::Unavailable)
    }

    /// The upstream asked to be called less, and when again if it said.
    pub fn throttled(reason: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self::of_kind(reason, UpstreamFailure::Backpressure { retry_after })
    }

    /// The upstream's answer for the window cannot be used.
    pub fn unusable(reason: impl Into<String>) -> Self {
        Self::of_kind(reason, UpstreamFailure::Unusable)
    }

    fn of_kind(reason: impl Into<String>, kind: UpstreamFailure) -> Self {
        Self {
            reason: reason.into(),
            kind,
            retry_in: None,
            source: None,
        }
    }

    /// The same, asking again being expected to succeed in `wait`.
    #[must_use]
    pub const fn with_retry_in(mut self, wait: Duration) -> Self {
        self.retry_in = Some(wait);
        self
    }

    /// The same, caused by `source`.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }
}

/// Equal when the reasons and kinds are: a source has no equality of its own.
impl PartialEq for UpstreamError {
    fn eq(&self, other: &Self) -> bool {
        self.reason == other.reason && self.kind == other.kind
    }
}

impl Eq for UpstreamError {}

/// Why a range's days could not all be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallDaysError {
    /// A day could not be fetched, or not all arrived by the deadline.
    #[error(transparent)]
    Unavailable(#[from] UpstreamError),
    /// The days that would be fetched exceed the requester's day budget; nothing was fetched.
    #[error("{0}")]
    OverBudget(OverBudget),
    /// The days cannot arrive before the deadline (the queue ahead of them, recent fetch
    /// times); they stay queued and are expected to be held in `retry_after_secs`.
    #[error("the upstream call platform is busy; retry in {retry_after_secs} s")]
    Busy { retry_after_secs: u32 },
}

/// The API keys, as admission reads them.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait KeyStore: Send + Sync + 'static {
    /// The key with this digest, revoked and expired ones included (the caller decides).
    async fn find_key(&self, digest: &KeyDigest) -> Result<Option<ApiKeyRecord>, StoreError>;
    /// The digest of every key, revoked and expired ones included.
    async fn key_digests(&self) -> Result<Vec<KeyDigest>, StoreError>;
    /// The key with this digest, unless finding out would cost a database look-up of a digest
    /// the store has not seen among the keys it read in the last seconds (a guess, or a key
    /// created since): then [`KeyLookup::Unseen`], and the caller decides whether to ask
    /// [`KeyStore::find_key`]. A store that keeps no such list always looks up.
    async fn find_seen_key(&self, digest: &KeyDigest) -> Result<KeyLookup, StoreError> {
        Ok(match self.find_key(digest).await? {
            Some(key) => KeyLookup::Found(key),
            None => KeyLookup::Absent,
        })
    }
}

/// What [`KeyStore::find_seen_key`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLookup {
    Found(ApiKeyRecord),
    Absent,
    /// Not among the keys read in the last seconds; only a look-up can tell.
    Unseen,
}

/// The call centre portal's data. Read-only; drafts are never returned.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait PortalStore: Send + Sync + 'static {
    /// The whole roster, staff included.
    async fn operators(&self) -> Result<Vec<Operator>, StoreError>;
    /// The off-days dated in `month`.
    async fn off_days(&self, month: Month) -> Result<Vec<OffDayRecord>, StoreError>;
    /// Published sheets, of one month or of all months.
    async fn published_sheets(&self, month: Option<Month>) -> Result<Vec<Sheet>, StoreError>;
    /// Stated totals and rows of a published sheet; `None` if it is not (or no longer) published.
    async fn sheet_content(&self, sheet_id: i64) -> Result<Option<SheetContent>, StoreError>;
    /// Every script with its view count.
    async fn scripts(&self) -> Result<Vec<Script>, StoreError>;
    /// Scores of calls that started in the range (Tashkent days).
    async fn call_scores(&self, range: DateRange) -> Result<Vec<CallScore>, StoreError>;
}

/// The upstream call platform. The call-day store reads it; the statistics read the days it
/// makes ([`CallDaySource`]).
#[async_trait]
pub trait CallPlatform: Send + Sync + 'static {
    /// Every call that started in the range (Tashkent midnight of the start to the midnight
    /// after the end), each once, in the compact form a held day keeps (a day in flight costs
    /// about what it will cost held).
    async fn calls(&self, range: DateRange) -> Result<FetchedCalls, UpstreamError>;

    /// What is happening now: the platform's live snapshot (docs/behaviour.md, "Live"), or
    /// [`LiveError::NotReported`] from a platform that reports none, as this default says.
    async fn live(&self) -> Result<LiveSnapshot, LiveError> {
        Err(LiveError::NotReported)
    }
}

/// The calls of a range as the days they started on: what the call statistics read. The
/// call-day store implements it over the call platform and the day caches.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait CallDaySource: Send + Sync + 'static {
    /// Every day of `range` in order, each with its calls; never part of the range. The days
    /// not held are fetched on behalf of `requester`: in its turn, and paid from its budget.
    async fn days(
        &self,
        range: DateRange,
        requester: &Requester,
    ) -> Result<Vec<Arc<CallDay>>, CallDaysError>;

    /// The rollup of every day of `range` in order ([`DayRollup`]: what a trend reads), held or
    /// fetched as [`CallDaySource::days`] holds and fetches days. This default reads the days a
    /// month at a time, so that a year of calls is never in memory at once; a store that keeps
    /// rollups answers from them.
    async fn rollups(
        &self,
        range: DateRange,
        requester: &Requester,
    ) -> Result<Vec<Arc<DayRollup>>, CallDaysError> {
        let days: Vec<Day> = range.iter_days().collect();
        let mut rollups = Vec::with_capacity(days.len());
        for month in runs(&days, usize::try_from(MAX_RANGE_DAYS).unwrap_or(1)) {
            let days = self.days(month, requester).await?;
            rollups.extend(days.iter().map(|day| Arc::new(DayRollup::of(day))));
        }
        Ok(rollups)
    }
}

/// One tier of kept call days: in process, or shared by every replica. Infallible like the
/// response cache: a tier that cannot answer (Redis lost, an entry it cannot decode) misses.
#[async_trait]
pub trait CallDayCache: Send + Sync + 'static {
    /// The kept entries of `days`, in the same order; `None` where a day is not kept.
    async fn get(&self, days: &[Day]) -> Vec<Option<Arc<CallDay>>>;
    /// Keeps a day for `ttl`; a failure is the tier's to log.
    async fn put(&self, day: Arc<CallDay>, ttl: Duration);
    /// Tries to become the one fetching `day` across replicas, for at most `ttl`. A tier without
    /// a shared notion of locks (or that cannot be reached) says `true`.
    async fn try_lock(&self, _day: Day, _ttl: Duration) -> bool {
        true
    }
    /// Gives up a lock taken with [`CallDayCache::try_lock`].
    async fn unlock(&self, _day: Day) {}
}

/// The durable tier of kept call days (the service's database): settled days outlive a
/// restart, a Redis flush and their lifetime in the caches. Unlike the caches it says when it
/// failed, so the store can warn; the store treats a failed read as a miss and a failed write
/// as nothing kept, never as an error of the request.
#[async_trait]
pub trait CallDayArchive: Send + Sync + 'static {
    /// The stored copies of those of `days` it holds, whatever their age (the store judges
    /// them); a copy it cannot read (another version, corruption) is left out.
    async fn get(&self, days: &[Day]) -> Result<Vec<Arc<CallDay>>, StoreError>;
    /// Stores `day`, replacing the copy it held, with its rollup.
    async fn put(&self, day: &CallDay) -> Result<(), StoreError>;
    /// The rollups of those of `days` it holds with one, whatever their age; one it cannot
    /// read is left out. By default none: the store then makes them from the days.
    async fn rollups(&self, _days: &[Day]) -> Result<Vec<Arc<DayRollup>>, StoreError> {
        Ok(Vec::new())
    }
    /// The days from `first` to `last` it holds with their rollup, in order: what the
    /// backfill need not fetch.
    async fn held_days(&self, first: Day, last: Day) -> Result<Vec<Day>, StoreError>;
    /// Deletes at most `limit` days before `first` (oldest first); answers how many went.
    async fn delete_before(&self, first: Day, limit: u32) -> Result<u64, StoreError>;
}

/// One holder at a time across replicas, for background work one replica does for all (the
/// warmer). A lease expires unless held again within its `ttl`.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait Lease: Send + Sync + 'static {
    /// Takes the lease, or keeps it when this holder has it, for `ttl`; `false` while another
    /// holder has it. A lease without a shared notion of holders (one replica alone, or a
    /// shared store that cannot be reached) says `true`.
    async fn hold(&self, ttl: Duration) -> bool;
    /// Gives it up, if this holder has it.
    async fn release(&self);
}

/// Serialised responses shared between requests (and replicas).
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait ResponseCache: Send + Sync + 'static {
    /// The stored bytes, or `None` on a miss or when the cache cannot be reached.
    async fn get(&self, key: &str) -> Option<Bytes>;
    /// Stores bytes for `ttl`; a failure is the adapter's to log.
    async fn put(&self, key: &str, value: Bytes, ttl: Duration);
    /// Tries to become the one computing `key` across replicas, for at most `ttl`. `true` means
    /// go ahead; a cache without a shared notion of locks (or that cannot be reached) always
    /// says `true`, and the caller's local single-flight is what remains.
    async fn try_lock(&self, _key: &str, _ttl: Duration) -> bool {
        true
    }
    /// Gives up a lock taken with [`ResponseCache::try_lock`].
    async fn unlock(&self, _key: &str) {}
}

/// What [`RequestLedger::count`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The request window's count, this request included.
    pub requests: u64,
    /// The day-budget window's count; 0 when none was asked for.
    pub days_used: u64,
    /// The answer stored under the key asked for.
    pub answer: Option<Bytes>,
}

/// Where admission counts a key's request and finds its cached answer, in one call: a store
/// that keeps both the counters and the answers (Redis) answers it in one round trip, so a
/// cached answer costs one trip, not two.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait RequestLedger: Send + Sync + 'static {
    /// Adds one request to `window` and reads the count of `days` (the key's day budget) and
    /// the answer stored under `answer`.
    async fn count<'a>(
        &self,
        window: &QuotaBucket,
        days: Option<&'a QuotaBucket>,
        answer: Option<&'a str>,
    ) -> Found;
}

/// Per-window counters: requests, and day fetches against a budget.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait QuotaCounter: Send + Sync + 'static {
    /// Adds one request to the bucket and returns its count including this one.
    async fn increment(&self, bucket: &QuotaBucket) -> u64;

    /// The bucket's count so far, without adding to it.
    async fn peek(&self, bucket: &QuotaBucket) -> u64;

    /// Adds `amount` to the bucket if its count stays within `limit` then
    /// ([`crate::limits::fits`]), atomically: `Ok` with the count after, or `Err` with the
    /// count as it stands, unchanged.
    async fn add_within(&self, bucket: &QuotaBucket, amount: u64, limit: u64) -> Result<u64, u64>;
}

/// The live figures as the replicas share them (docs/behaviour.md, "Live"): the application's
/// poller, which asks the call platform at most once per poll interval for the whole deployment.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait LiveSource: Send + Sync + 'static {
    /// The body of `/calls/live` taken at most one poll interval ago, or why there is none: a
    /// 404 ([`DomainError::NotFound`](crate::DomainError::NotFound)) from a platform that
    /// reports no live figures, a 503 when the platform or the roster cannot be read.
    async fn now(&self) -> Result<LiveBody, crate::DomainError>;
}

/// What the replicas share of the live figures (docs/behaviour.md, "Live"): the right to poll the
/// call platform, once a window for the whole deployment, and each poll's frame, handed to every
/// replica. Frames are opaque bytes here: the application encodes them.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait LiveRelay: Send + Sync + 'static {
    /// Claims the deployment's poll for the next `window`: `true` for at most one caller in any
    /// `window`, across replicas. A relay that cannot reach its shared store says `true`: the
    /// replica then polls for itself.
    async fn claim_poll(&self, window: Duration) -> bool;
    /// Hands `frame` to every replica's subscription, this replica's included, and keeps it as
    /// the latest frame for `ttl`.
    async fn publish(&self, frame: Bytes, ttl: Duration);
    /// The latest frame published, while it is kept.
    async fn latest(&self) -> Option<Bytes>;
    /// The frames published from now on, by any replica; `None` when the shared store cannot
    /// be reached. The stream ends when the relay loses its connection: subscribe again then.
    async fn subscribe(&self) -> Option<BoxStream<'static, Bytes>>;
}

/// The open live streams of each key across replicas, for the per-key limit
/// (`CALLSTATS_LIVE_STREAMS_PER_KEY`).
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
#[async_trait]
pub trait StreamSlots: Send + Sync + 'static {
    /// Opens the slot `stream` (an id unique to the stream) for the key `key_id` if the key holds
    /// fewer than `limit` open slots: `true` when opened. A slot lapses unless renewed within
    /// `ttl`, so that the streams of a replica that stopped without closing them stop counting.
    /// A store that cannot be reached says `true`.
    async fn open(&self, key_id: i64, stream: &str, limit: u32, ttl: Duration) -> bool;
    /// Keeps the slot open for another `ttl`.
    async fn renew(&self, key_id: i64, stream: &str, ttl: Duration);
    /// Frees the slot.
    async fn close(&self, key_id: i64, stream: &str);
}

/// The current time, so tests can fix it.
#[cfg_attr(all(any(test, feature = "mock"), not(doc)), mockall::automock)]
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> OffsetDateTime;
}
