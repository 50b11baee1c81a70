//! The call-day store: the call statistics read a range as its Tashkent days, and each day is
//! fetched from the call platform as its own window, kept, and shared by every endpoint,
//! direction and (with a shared tier) replica. docs/behaviour.md, "Call records", is the
//! contract; docs/operations.md has the settings.
//!
//! - A day that has not begun has no calls: it is answered without asking anyone.
//! - A kept day is looked up in process first, then in the shared tier (one round trip for
//!   every missing day of the request), then in the durable tier (the service's database, one
//!   statement); a day found in a slower tier is copied into the faster ones.
//! - The days still missing are fetched on behalf of the request's key: the days no fetch is
//!   under way for are paid from the key's day budget (all of them or, over the budget,
//!   nothing is fetched: [`CallDaysError::OverBudget`]) and wait as one job in the key's line of
//!   the [`FairQueue`], which lets them out a request at a time, keys in turn, at most its
//!   adaptive limit (`concurrency` at most) at once per replica. Each day is fetched at most
//!   once per replica at a time (single flight) and, with a shared tier, once per deployment
//!   (a lock per day; the other replicas wait for its entry); pages within one day follow
//!   their cursor.
//! - The whole request is bounded by one deadline. A request whose days the queue does not
//!   expect before it is answered at once with when to come back ([`CallDaysError::Busy`]);
//!   its days stay queued. A day that fails makes the request fail (no partial figures); the
//!   fetches run as tasks of their own, so days that arrive are kept even when their request
//!   has already failed or gone. A day the upstream throttles goes to the front of the queue.
//! - A settled day (ended at least `settle` ago when fetched) is kept for `ttl`; a day fetched
//!   before it settled (today) for at most [`UNSETTLED_TTL`]. A settled copy of a day that ended
//!   `revision_days` or more ago is final: it never expires, and is never fetched again.
//! - A settled day fetched here is written to the durable tier by this replica (one write, in
//!   a task of its own); a write that fails is logged at WARN once a minute and changes
//!   nothing else. [`CallDayStore::sweep`] deletes the days before the history horizon.
//! - Stale if error (RFC 5861): the caches keep a copy `max_stale` past its lifetime. When the
//!   days a request misses cannot be fetched (the upstream down or slow, its breaker open, it
//!   throttles, the queue sheds them) and each of them has such a copy, the request is answered
//!   from those copies, marked stale on its [`Requester`]; each day so served is counted and
//!   logged at WARN once a minute. Over a key's day budget stays a refusal.
//! - A day whose answer was unusable (past a bound, a record that breaks the contract) is not
//!   asked again for `unusable_hold`: a request that needs it fails at once.
//! - A trend reads the days' rollups ([`DayRollup`]): final days' rollups kept in process (for
//!   as long as the day is in the history horizon), then those the durable tier holds beside
//!   its days (one statement), then the others made from the held days, read a month of days
//!   at a time, so a year of calls is never in hand at once. The days a trend must fetch are
//!   checked against the key's day budget all together first, so a trend over the budget is
//!   refused whole, before any day is fetched.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use callstats_domain::access::{QuotaBucket, QuotaSubject};
use callstats_domain::calendar::unix_millis;
use callstats_domain::calendar::{DateRange, Day, runs};
use callstats_domain::call_day::{CallDay, Held, HeldDay};
use callstats_domain::error::{cause_chain, whole_seconds};
use callstats_domain::limits::{
    DayBudget, DayBudgetStatus, HistoryFill, HistoryHorizon, OverBudget, Requester,
};
use callstats_domain::ports::{
    CallDayArchive, CallDayCache, CallDaySource, CallDaysError, CallPlatform, Clock, QuotaCounter,
    StoreError, UpstreamError, UpstreamFailure,
};
use callstats_domain::rollup::DayRollup;
use callstats_domain::tz;
use futures::future::try_join_all;
use time::OffsetDateTime;

use crate::fair_queue::{FairQueue, QueueSettings, Slot, Turn};
use crate::log_throttle::LogThrottle;
use crate::replica_lock::{self, Claim, SharedEntry};
use crate::single_flight::{Flight, Flights};

/// Longest a day fetched before it settled is kept.
pub const UNSETTLED_TTL: Duration = Duration::from_secs(60);
/// How long past the fetch deadline a day's cross-replica lock may outlive its holder.
const LOCK_MARGIN: Duration = Duration::from_secs(10);
/// How often a waiting request checks that its days are still expected before its deadline.
const RECHECK: Duration = Duration::from_millis(200);
/// When a request refused because the replica is stopping may ask again (`Retry-After`).
const SHUTDOWN_RETRY_IN: Duration = Duration::from_secs(1);

/// The store's settings; [`CallDaySettings::default`] has the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallDaySettings {
    /// Most day windows fetched at once per replica (`CALLSTATS_CALL_PLATFORM_CONCURRENCY`).
    pub concurrency: usize,
    /// Deadline of a whole request's days (`CALLSTATS_CALL_PLATFORM_FETCH_TIMEOUT_MS`).
    pub fetch_timeout: Duration,
    /// How long after its end a day is settled (`CALLSTATS_CALL_DAY_SETTLE_SECS`).
    pub settle: Duration,
    /// How long a settled day is kept (`CALLSTATS_CALL_DAY_TTL_SECS`).
    pub ttl: Duration,
    /// Day fetches a key may cause per minute (`CALLSTATS_KEY_DAY_FETCHES_PER_MINUTE`).
    pub day_budget: DayBudget,
    /// Most days waiting for their fetch, in all (`CALLSTATS_CALL_DAY_QUEUE_DAYS`).
    pub queue_days: usize,
    /// Most days waiting for one key (`CALLSTATS_CALL_DAY_QUEUE_DAYS_PER_KEY`).
    pub queue_days_per_key: usize,
    /// How long a day whose answer was unusable is not asked again (the breaker's open period,
    /// `CALLSTATS_CALL_PLATFORM_BREAKER_OPEN_MS`).
    pub unusable_hold: Duration,
    /// Days after its end during which a settled day is still fetched again once its lifetime
    /// is over (`CALLSTATS_CALL_DAY_REVISION_DAYS`); after them its settled copy is final.
    pub revision_days: u32,
    /// How long past its lifetime a held copy may still answer when fetching the day again
    /// fails (`CALLSTATS_CALL_DAY_MAX_STALE_SECS`).
    pub max_stale: Duration,
}

impl CallDaySettings {
    pub const DEFAULT_CONCURRENCY: usize = 8;
    pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(15);
    pub const DEFAULT_SETTLE: Duration = Duration::from_secs(3600);
    pub const DEFAULT_TTL: Duration = Duration::from_secs(86_400);
    pub const DEFAULT_UNUSABLE_HOLD: Duration = Duration::from_secs(30);
    pub const DEFAULT_REVISION_DAYS: u32 = 7;
    pub const DEFAULT_MAX_STALE: Duration = Duration::from_secs(604_800);

    /// Whether `day` fetched at Unix second `fetched_at` was fetched settled: it had ended at
    /// least `settle` before.
    #[must_use]
    pub fn settled(&self, day: Day, fetched_at: i64) -> bool {
        let end = tz::local_midnight_unix(day.date()).saturating_add(86_400);
        fetched_at >= end.saturating_add(seconds(self.settle))
    }

    /// Whether `kept` is final at Unix second `now`: fetched settled, and its day ended
    /// `revision_days` or more before `now`.
    #[must_use]
    pub fn is_final(&self, kept: &impl HeldDay, now: i64) -> bool {
        let end = tz::local_midnight_unix(kept.day().date()).saturating_add(86_400);
        kept.held() == Held::Settled
            && now >= end.saturating_add(i64::from(self.revision_days).saturating_mul(86_400))
    }

    /// Unix second until which a day fetched at `fetched_at` may be served.
    #[must_use]
    pub fn expires_at(&self, day: Day, fetched_at: i64) -> i64 {
        let lifetime = if self.settled(day, fetched_at) {
            self.ttl
        } else {
            self.ttl.min(UNSETTLED_TTL)
        };
        fetched_at.saturating_add(seconds(lifetime))
    }

    const fn queue(&self) -> QueueSettings {
        QueueSettings {
            max_concurrency: self.concurrency,
            max_queued_days: self.queue_days,
            max_queued_days_per_key: self.queue_days_per_key,
        }
    }
}

impl Default for CallDaySettings {
    fn default() -> Self {
        Self {
            concurrency: Self::DEFAULT_CONCURRENCY,
            fetch_timeout: Self::DEFAULT_FETCH_TIMEOUT,
            settle: Self::DEFAULT_SETTLE,
            ttl: Self::DEFAULT_TTL,
            day_budget: DayBudget::default(),
            queue_days: QueueSettings::DEFAULT_MAX_QUEUED_DAYS,
            queue_days_per_key: QueueSettings::DEFAULT_MAX_QUEUED_DAYS_PER_KEY,
            unusable_hold: Self::DEFAULT_UNUSABLE_HOLD,
            revision_days: Self::DEFAULT_REVISION_DAYS,
            max_stale: Self::DEFAULT_MAX_STALE,
        }
    }
}

fn seconds(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// What a day's fetch answers.
type Fetched = Result<Arc<CallDay>, UpstreamError>;

/// The store. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct CallDayStore {
    inner: Arc<Inner>,
}

struct Inner {
    platform: Arc<dyn CallPlatform>,
    local: Arc<dyn CallDayCache>,
    shared: Option<Arc<dyn CallDayCache>>,
    /// The durable tier, when days are persisted.
    archive: OnceLock<Arc<dyn CallDayArchive>>,
    /// The history horizon the backfill fills into the durable tier, and its day fetches a
    /// minute, when it runs: a refusal for the day budget then says how far it is.
    backfill: OnceLock<(HistoryHorizon, u32)>,
    /// Which warnings were logged in the last minute.
    warnings: Arc<LogThrottle<Warning>>,
    /// Where the keys' day budgets are counted (with the request quotas).
    budget: Arc<dyn QuotaCounter>,
    clock: Arc<dyn Clock>,
    settings: CallDaySettings,
    queue: Arc<FairQueue>,
    flights: Arc<Flights<i64, Fetched>>,
    /// Days whose answer was unusable: until when they are not asked again, and why.
    unusable: Mutex<HashMap<Day, (Instant, UpstreamError)>>,
    /// The rollups of final days: they never change, so each is made once.
    final_rollups: Mutex<HashMap<Day, Arc<DayRollup>>>,
}

/// Which tier answered, for the metrics.
#[derive(Clone, Copy)]
enum Tier {
    Memory,
    Shared,
    Archive,
}

/// A warning logged at most once a minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Warning {
    ArchiveRead,
    ArchiveWrite,
    ArchiveSweep,
    Stale(Day),
}

/// Whether a look-up counts in `callstats_call_day_lookups_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    Yes,
    No,
}

impl Warning {
    const fn operation(self) -> &'static str {
        match self {
            Self::ArchiveRead => "read",
            Self::ArchiveWrite => "write",
            Self::ArchiveSweep => "sweep",
            Self::Stale(_) => "stale",
        }
    }
}

impl Tier {
    const fn label(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Shared => "redis",
            Self::Archive => "database",
        }
    }
}

impl CallDayStore {
    /// `local` is the in-process tier; `shared`, when set, the tier every replica sees;
    /// `budget` counts the keys' day budgets.
    #[must_use]
    pub fn new(
        platform: Arc<dyn CallPlatform>,
        local: Arc<dyn CallDayCache>,
        shared: Option<Arc<dyn CallDayCache>>,
        budget: Arc<dyn QuotaCounter>,
        clock: Arc<dyn Clock>,
        settings: CallDaySettings,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                platform,
                local,
                shared,
                archive: OnceLock::new(),
                backfill: OnceLock::new(),
                warnings: Arc::default(),
                budget,
                clock,
                queue: FairQueue::new(settings.queue()),
                settings,
                flights: Flights::new(|cause| {
                    Err(UpstreamError::new(format!(
                        "a call-day fetch failed: {cause}"
                    )))
                }),
                unusable: Mutex::default(),
                final_rollups: Mutex::default(),
            }),
        }
    }

    /// The store with a durable tier behind its caches: settled days are read from it and
    /// written to it. Set before the store serves; a second call changes nothing.
    #[must_use]
    pub fn with_archive(self, archive: Arc<dyn CallDayArchive>) -> Self {
        if self.inner.archive.set(archive).is_err() {
            tracing::debug!("the call-day store has a durable tier already");
        }
        self
    }

    /// Tells the store that a backfill fills `history` into the durable tier at `per_minute`
    /// day fetches a minute, so that a refusal for the day budget says how far it is: what
    /// [`crate::Backfill::new`] does with the store it fills. A second call changes nothing.
    #[must_use]
    pub(crate) fn with_backfill(self, history: HistoryHorizon, per_minute: u32) -> Self {
        if self.inner.backfill.set((history, per_minute)).is_err() {
            tracing::debug!("the call-day store knows its backfill already");
        }
        self
    }

    /// The settled days of `history` at `now`, newest first: what the backfill holds in the
    /// durable tier.
    #[must_use]
    pub fn settled_history(&self, history: HistoryHorizon, now: OffsetDateTime) -> Vec<Day> {
        let today = Day::of(now);
        let Some(earliest) = history.earliest(today) else {
            return Vec::new();
        };
        let mut days = Vec::new();
        let mut day = today;
        while day >= earliest.day {
            if self.settled_at(day, now.unix_timestamp()) {
                days.push(day);
            }
            match day.plus_days(-1) {
                Some(before) => day = before,
                None => break,
            }
        }
        days
    }

    /// How far the backfill has filled the history horizon, while it is filling it: `None`
    /// without a backfill, once every settled day is held, or when the durable tier cannot
    /// say (the refusal then says nothing of it).
    async fn history_filling(&self) -> Option<HistoryFill> {
        let inner = &self.inner;
        let (&(history, per_minute), Some(archive)) = (inner.backfill.get()?, inner.archive.get())
        else {
            return None;
        };
        let days = self.settled_history(history, inner.clock.now());
        let (Some(newest), Some(oldest)) = (days.first(), days.last()) else {
            return None;
        };
        // Counted as the backfill's pass counts them: the horizon's days the tier holds.
        let held: HashSet<Day> = archive
            .held_days(*oldest, *newest)
            .await
            .ok()?
            .into_iter()
            .collect();
        let held = days.iter().filter(|day| held.contains(day)).count();
        let (held, days) = (u32::try_from(held).ok()?, u32::try_from(days.len()).ok()?);
        (held < days).then_some(HistoryFill {
            held,
            days,
            per_minute,
        })
    }

    /// `result`, a refusal for the day budget saying how far the history is filled.
    async fn explained<T>(&self, result: Result<T, CallDaysError>) -> Result<T, CallDaysError> {
        match result {
            Err(CallDaysError::OverBudget(mut over)) => {
                over.filling = self.history_filling().await;
                Err(CallDaysError::OverBudget(over))
            }
            other => other,
        }
    }

    /// Whether `day` has settled at Unix second `now`: a fetch now keeps it for good.
    #[must_use]
    pub fn settled_at(&self, day: Day, now: i64) -> bool {
        self.inner.settings.settled(day, now)
    }

    /// Deletes the durable tier's days before `first` (the history horizon's first day): at
    /// most [`SWEEP_BATCH`] days a statement, [`SWEEP_BATCHES`] statements a call, so a sweep
    /// never holds the database long. Answers how many days went.
    pub async fn sweep(&self, first: Day) -> u64 {
        self.inner
            .final_rollups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|day, _| *day >= first);
        let Some(archive) = self.inner.archive.get() else {
            return 0;
        };
        let mut deleted = 0_u64;
        for _ in 0..SWEEP_BATCHES {
            match archive.delete_before(first, SWEEP_BATCH).await {
                Ok(gone) => {
                    deleted = deleted.saturating_add(gone);
                    if gone < u64::from(SWEEP_BATCH) {
                        break;
                    }
                }
                Err(err) => {
                    self.inner.warn(Warning::ArchiveSweep, &err);
                    break;
                }
            }
        }
        metrics::counter!("callstats_call_days_swept_total").increment(deleted);
        deleted
    }

    async fn collect(
        &self,
        range: DateRange,
        requester: &Requester,
    ) -> Result<Vec<Arc<CallDay>>, CallDaysError> {
        let days: Vec<Day> = range.iter_days().collect();
        let Kept { mut found, stale } = self.inner.kept(&days, Duration::ZERO, Counted::Yes).await;
        let missing = missing(&days, &found);
        if !missing.is_empty() {
            let wanted: Vec<Day> = missing.iter().map(|(_, day)| *day).collect();
            let deadline = self.inner.settings.fetch_timeout;
            let until = Instant::now() + deadline;
            let fetched = tokio::time::timeout(deadline, self.fetch(&wanted, requester, until))
                .await
                .unwrap_or_else(|_| {
                    let reason = format!(
                        "the days from {} to {} did not all arrive within {} ms",
                        range.start(),
                        range.end(),
                        deadline.as_millis()
                    );
                    tracing::warn!(%reason, "call platform unavailable");
                    Err(UpstreamError::new(reason).into())
                });
            let fetched = match fetched {
                Ok(fetched) => fetched,
                Err(over @ CallDaysError::OverBudget(_)) => return Err(over),
                Err(failed) => {
                    // Stale if error: every missing day must have a copy within the bound.
                    let copies = missing
                        .iter()
                        .map(|(index, _)| stale.get(*index).cloned().flatten())
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| failed.clone())?;
                    self.inner.served_stale(&copies, &failed, requester);
                    copies
                }
            };
            for ((index, _), day) in missing.into_iter().zip(fetched) {
                if let Some(slot) = found.get_mut(index) {
                    *slot = Some(day);
                }
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// The rollups of `range`'s days: final ones from those kept; the others from the days
    /// held, read a month at a time; the days not held checked against the budget together,
    /// then collected as [`CallDayStore::collect`] does, a month of days at a time.
    async fn collect_rollups(
        &self,
        range: DateRange,
        requester: &Requester,
    ) -> Result<Vec<Arc<DayRollup>>, CallDaysError> {
        let inner = &self.inner;
        let now = inner.clock.now().unix_timestamp();
        let days: Vec<Day> = range.iter_days().collect();
        let mut found: Vec<Option<Arc<DayRollup>>> = {
            let kept = inner
                .final_rollups
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            days.iter().map(|day| kept.get(day).cloned()).collect()
        };
        let pending = |found: &[Option<Arc<DayRollup>>]| -> Vec<Day> {
            days.iter()
                .zip(found)
                .filter(|(_, rollup)| rollup.is_none())
                .map(|(day, _)| *day)
                .collect()
        };
        let first_read = pending(&found);
        if let Some(archive) = inner.archive.get()
            && !first_read.is_empty()
        {
            match archive.rollups(&first_read).await {
                Ok(stored) => {
                    for rollup in stored {
                        if inner.settings.is_final(&*rollup, now) {
                            inner.keep_final_rollup(&rollup);
                            place(&mut found, &range, rollup);
                        }
                    }
                }
                Err(err) => inner.warn(Warning::ArchiveRead, &err),
            }
        }
        let pending = pending(&found);
        let mut not_held = Vec::new();
        for chunk in pending.chunks(MONTH_OF_DAYS) {
            let kept = inner.kept(chunk, Duration::ZERO, Counted::Yes).await;
            for (day, held) in chunk.iter().zip(kept.found) {
                match held {
                    Some(held) => place(&mut found, &range, inner.rollup_of(&held, now)),
                    None => not_held.push(*day),
                }
            }
        }
        if !not_held.is_empty() {
            inner.afford(requester, not_held.len()).await?;
            for run in runs(&not_held, MONTH_OF_DAYS) {
                for held in self.collect(run, requester).await? {
                    place(&mut found, &range, inner.rollup_of(&held, now));
                }
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// The days of `wanted`, none of them kept: those with a fetch under way are joined; the
    /// others are paid from the requester's budget and queued as one job in its line.
    async fn fetch(
        &self,
        wanted: &[Day],
        requester: &Requester,
        deadline: Instant,
    ) -> Result<Vec<Arc<CallDay>>, CallDaysError> {
        let inner = &self.inner;
        inner.refuse_unusable(wanted)?;
        let under_way: Vec<Option<Flight<Fetched>>> = wanted
            .iter()
            .map(|day| inner.flights.running(&day.number()))
            .collect();
        // A fetch the warmer queued waits behind every key: a request that needs it does not.
        for (day, flight) in wanted.iter().zip(&under_way) {
            if flight.is_some() {
                inner.queue.promote(*day);
            }
        }
        let new: Vec<Day> = wanted
            .iter()
            .zip(&under_way)
            .filter(|(_, flight)| flight.is_none())
            .map(|(day, _)| *day)
            .collect();
        let mut started: HashMap<Day, Flight<Fetched>> = HashMap::new();
        if !new.is_empty() {
            let line = requester.key_id();
            if let Err(full) = inner.queue.room_for(line, new.len()) {
                metrics::counter!("callstats_call_day_sheds_total", "reason" => "queue_full")
                    .increment(1);
                return Err(CallDaysError::Busy {
                    retry_after_secs: whole_seconds(full.drained_in),
                });
            }
            inner.pay(requester, new.len()).await?;
            let turns = inner.queue.enqueue(line, &new);
            for (day, turn) in new.iter().zip(turns) {
                started.insert(*day, self.start(*day, turn));
            }
        }
        let flights = wanted
            .iter()
            .zip(under_way)
            .map(|(day, flight)| flight.or_else(|| started.remove(day)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| UpstreamError::new("a day of the request has no fetch"))?;
        self.wait(flights, wanted, deadline).await
    }

    /// Keeps `days` held, for the warmer: each day that has begun and is not held (in process
    /// or in the shared tier) for at least `min_left` more is fetched again, waiting in the
    /// queue's warmer line (behind every key's day) and paid from no key's budget; a fetch
    /// under way is joined. Answers the days held after it, how many fetches it started and
    /// the days that failed.
    pub async fn warm(&self, days: &[Day], min_left: Duration) -> Warmed {
        let inner = &self.inner;
        // Its checks are not the requests' look-ups: they stay out of the hit ratios.
        let found = inner.kept(days, min_left, Counted::No).await.found;
        let stale: Vec<Day> = missing(days, &found)
            .into_iter()
            .map(|(_, day)| day)
            .collect();
        let mut held: Vec<Arc<CallDay>> = found
            .into_iter()
            .flatten()
            .filter(|kept| kept.held() != Held::NotBegun)
            .collect();
        let new: Vec<Day> = stale
            .iter()
            .filter(|day| inner.flights.running(&day.number()).is_none())
            .copied()
            .collect();
        let turns = inner.queue.enqueue_background(&new);
        let mut turns: HashMap<Day, Turn> = new.iter().copied().zip(turns).collect();
        let flights = stale.iter().map(|day| {
            let turn = turns.remove(day);
            let store = Arc::clone(inner);
            let day = *day;
            inner.flights.join(&day.number(), move || {
                // A fetch under way a moment ago may have ended since: this one waits in the
                // warmer's line too.
                let turn = turn.or_else(|| store.queue.enqueue_background(&[day]).pop());
                store.fetch_day(day, turn, min_left)
            })
        });
        let results = futures::future::join_all(flights).await;
        let mut failed = Vec::new();
        for (day, result) in stale.iter().zip(results) {
            match result {
                Ok(kept) => held.push(kept),
                Err(_) => failed.push(*day),
            }
        }
        held.sort_by_key(|kept| kept.day());
        Warmed {
            held,
            fetched: new.len(),
            failed,
        }
    }

    /// Puts `day` in the durable tier with its rollup, for the backfill: a settled copy held
    /// in any tier is written as it is; otherwise the day is fetched, waiting in the queue's
    /// backfill line (behind every key's day and the warmer's) and paid from no key's budget,
    /// and written once fetched settled, as every settled fetch is. A fetch under way is
    /// joined. Answers whether the platform was asked.
    pub async fn backfill(&self, day: Day) -> Result<Backfilled, UpstreamError> {
        let inner = &self.inner;
        let Some(archive) = inner.archive.get() else {
            return Ok(Backfilled::Nothing);
        };
        let kept = inner.kept(&[day], Duration::ZERO, Counted::No).await;
        if let Some(held) = kept.found.into_iter().flatten().next()
            && held.held() == Held::Settled
        {
            archive.put(&held).await.map_err(|err| {
                UpstreamError::new(format!("the database kept no copy of {day}: {err}"))
            })?;
            return Ok(Backfilled::Written);
        }
        let store = Arc::clone(inner);
        inner
            .flights
            .join(&day.number(), move || {
                let turn = store.queue.enqueue_backfill(&[day]).pop();
                store.fetch_day(day, turn, Duration::ZERO)
            })
            .await?;
        Ok(Backfilled::Fetched)
    }

    /// A fetch of `day` that waits for `turn`, unless one is under way already (then `turn`
    /// is never used, and the queue skips it).
    fn start(&self, day: Day, turn: Turn) -> Flight<Fetched> {
        let inner = Arc::clone(&self.inner);
        self.inner.flights.join(&day.number(), move || {
            inner.fetch_day(day, Some(turn), Duration::ZERO)
        })
    }

    /// Waits for every flight, and answers at once when the queue no longer expects the days
    /// before `deadline`.
    async fn wait(
        &self,
        flights: Vec<Flight<Fetched>>,
        wanted: &[Day],
        deadline: Instant,
    ) -> Result<Vec<Arc<CallDay>>, CallDaysError> {
        let wanted: HashSet<Day> = wanted.iter().copied().collect();
        let mut all = try_join_all(flights);
        loop {
            let expected_in = self.inner.queue.estimate(&wanted);
            if Instant::now() + expected_in > deadline {
                metrics::counter!("callstats_call_day_sheds_total", "reason" => "deadline")
                    .increment(1);
                return Err(CallDaysError::Busy {
                    retry_after_secs: whole_seconds(expected_in),
                });
            }
            tokio::select! {
                days = &mut all => return days.map_err(CallDaysError::from),
                () = tokio::time::sleep(RECHECK) => {}
            }
        }
    }
}

/// Shows `callstats_call_days_stale_served_total` at 0 from the start (call it once the metrics
/// recorder is installed), so that the alert on stale answers and its dashboard panel have a
/// series to read before the first stale answer.
pub fn report_no_stale_answers_yet() {
    metrics::counter!("callstats_call_days_stale_served_total").absolute(0);
}

/// Days deleted by one statement of [`CallDayStore::sweep`].
pub const SWEEP_BATCH: u32 = 100;
/// Statements one [`CallDayStore::sweep`] runs at most.
pub const SWEEP_BATCHES: u32 = 10;

/// What the tiers hold of a request's days, by index: the copies fresh enough to answer, and
/// for the others the newest copy still within the stale bound.
struct Kept {
    found: Vec<Option<Arc<CallDay>>>,
    stale: Vec<Option<Arc<CallDay>>>,
}

/// How [`Inner::look_up`] reads a tier: at `now`, for days fresh `min_left` more.
#[derive(Debug, Clone, Copy)]
struct Lookup {
    now: i64,
    min_left: Duration,
    counted: Counted,
}

/// What a pass of [`CallDayStore::warm`] did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Warmed {
    /// The days held after it, in date order (days that have not begun aside).
    pub held: Vec<Arc<CallDay>>,
    /// Day fetches it queued (joined fetches under way aside).
    pub fetched: usize,
    /// Days whose fetch failed; they are tried again on the next pass.
    pub failed: Vec<Day>,
}

/// What [`CallDayStore::backfill`] did for a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backfilled {
    /// The store keeps no durable tier: nothing to fill.
    Nothing,
    /// A settled copy was held already and was written.
    Written,
    /// The platform was asked for the day.
    Fetched,
}

/// The days (with their index) that have no entry in `found` yet.
fn missing(days: &[Day], found: &[Option<Arc<CallDay>>]) -> Vec<(usize, Day)> {
    days.iter()
        .zip(found)
        .enumerate()
        .filter(|(_, (_, kept))| kept.is_none())
        .map(|(index, (day, _))| (index, *day))
        .collect()
}

/// A day's entry in the shared tier, as [`replica_lock`] sees it.
struct SharedDay {
    store: Arc<Inner>,
    tier: Arc<dyn CallDayCache>,
    day: Day,
    /// How long an entry must still be fresh for to count.
    min_left: Duration,
}

#[async_trait]
impl SharedEntry for SharedDay {
    type Value = Arc<CallDay>;

    async fn try_lock(&self, ttl: Duration) -> bool {
        self.tier.try_lock(self.day, ttl).await
    }

    async fn unlock(&self) {
        self.tier.unlock(self.day).await;
    }

    async fn stored(&self) -> Option<Arc<CallDay>> {
        self.store
            .fresh_in(&*self.tier, self.day, self.min_left)
            .await
    }
}

impl Inner {
    /// The days of `days` known without the upstream, in order (`None` where a day must be
    /// fetched): a day that has not begun is empty, nobody asked; a kept day fresh for at
    /// least `min_left` more is read from the in-process tier, then from the shared tier in
    /// one round trip, then from the durable tier in one statement (and copied into the
    /// faster tiers). Beside them, the newest copy of each other day within the stale bound.
    async fn kept(&self, days: &[Day], min_left: Duration, counted: Counted) -> Kept {
        let at = self.clock.now();
        let now = at.unix_timestamp();
        let mut kept = Kept {
            found: days
                .iter()
                .map(|day| {
                    (tz::local_midnight_unix(day.date()) > now)
                        .then(|| Arc::new(CallDay::empty(*day, unix_millis(at))))
                })
                .collect(),
            stale: vec![None; days.len()],
        };
        let look_up = Lookup {
            now,
            min_left,
            counted,
        };
        self.look_up(&*self.local, Tier::Memory, days, &mut kept, look_up)
            .await;
        if let Some(shared) = &self.shared {
            let copied = self
                .look_up(&**shared, Tier::Shared, days, &mut kept, look_up)
                .await;
            for day in copied {
                self.keep_locally(day, now).await;
            }
        }
        if let Some(archive) = self.archive.get() {
            let wanted: Vec<Day> = missing(days, &kept.found)
                .into_iter()
                .map(|(_, day)| day)
                .collect();
            if !wanted.is_empty() {
                let answers = match archive.get(&wanted).await {
                    Ok(held) => wanted
                        .iter()
                        .map(|day| held.iter().find(|copy| copy.day() == *day).cloned())
                        .collect(),
                    Err(err) => {
                        self.warn(Warning::ArchiveRead, &err);
                        vec![None; wanted.len()]
                    }
                };
                let copied = self.fill(Tier::Archive, days, answers, &mut kept, look_up);
                for day in copied {
                    if let (Some(shared), Some(ttl)) = (&self.shared, self.keep_for(&day, now)) {
                        shared.put(Arc::clone(&day), ttl).await;
                    }
                    self.keep_locally(day, now).await;
                }
            }
        }
        kept
    }

    /// Fills the empty slots of `kept` from `tier` with the days it keeps that are fresh as
    /// `look_up` asks (and the stale slots with the others); returns the days it filled.
    async fn look_up(
        &self,
        tier: &dyn CallDayCache,
        label: Tier,
        days: &[Day],
        kept: &mut Kept,
        look_up: Lookup,
    ) -> Vec<Arc<CallDay>> {
        let wanted: Vec<Day> = missing(days, &kept.found)
            .into_iter()
            .map(|(_, day)| day)
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        let answers = tier.get(&wanted).await;
        self.fill(label, days, answers, kept, look_up)
    }

    /// Fills the empty slots of `kept`, in order, from `answers` (one per day still missing).
    fn fill(
        &self,
        label: Tier,
        days: &[Day],
        answers: Vec<Option<Arc<CallDay>>>,
        kept: &mut Kept,
        look_up: Lookup,
    ) -> Vec<Arc<CallDay>> {
        let mut filled = Vec::new();
        for ((index, day), answer) in missing(days, &kept.found).into_iter().zip(answers) {
            let copy = answer.filter(|copy| copy.day() == day);
            let fresh = copy
                .as_ref()
                .is_some_and(|copy| self.is_fresh(copy, day, look_up.now, look_up.min_left));
            if look_up.counted == Counted::Yes {
                let result = if fresh { "hit" } else { "miss" };
                metrics::counter!("callstats_call_day_lookups_total", "tier" => label.label(), "result" => result)
                    .increment(1);
            }
            let Some(copy) = copy else {
                continue;
            };
            if fresh {
                filled.push(Arc::clone(&copy));
                if let Some(slot) = kept.found.get_mut(index) {
                    *slot = Some(copy);
                }
            } else if self.within_stale_bound(&copy, look_up.now)
                && let Some(slot) = kept.stale.get_mut(index)
                && slot
                    .as_ref()
                    .is_none_or(|held| held.fetched_at_ms() < copy.fetched_at_ms())
            {
                *slot = Some(copy);
            }
        }
        filled
    }

    /// Whether a copy past its lifetime may still answer at `now` when fetching it fails.
    fn within_stale_bound(&self, copy: &CallDay, now: i64) -> bool {
        copy.held() != Held::NotBegun
            && now
                <= self
                    .settings
                    .expires_at(copy.day(), copy.fetched_at())
                    .saturating_add(seconds(self.settings.max_stale))
    }

    /// Logs `warning` about the durable tier, at most once a minute.
    fn warn(&self, warning: Warning, err: &StoreError) {
        metrics::counter!("callstats_call_day_archive_failures_total", "operation" => warning.operation())
            .increment(1);
        if self.warnings.due(warning) {
            tracing::warn!(
                operation = warning.operation(),
                error = %cause_chain(err),
                "the call days' database tier failed; serving on from the caches and the call platform"
            );
        }
    }

    /// Counts and logs (once a minute per day) the days answered from `copies` because
    /// fetching them again failed, and marks the request's answer stale.
    fn served_stale(&self, copies: &[Arc<CallDay>], failed: &CallDaysError, requester: &Requester) {
        requester.served_stale();
        let now = self.clock.now().unix_timestamp();
        for copy in copies {
            metrics::counter!("callstats_call_days_stale_served_total").increment(1);
            if self.warnings.due(Warning::Stale(copy.day())) {
                let past =
                    now.saturating_sub(self.settings.expires_at(copy.day(), copy.fetched_at()));
                tracing::warn!(
                    day = %copy.day(),
                    stale_secs = past,
                    error = %failed,
                    "a call day answered stale: fetching it again failed"
                );
            }
        }
    }

    /// Whether `kept` is `day` and fresh for at least `min_left` more from `now`.
    /// A final copy is fresh for ever.
    fn is_fresh(&self, kept: &CallDay, day: Day, now: i64, min_left: Duration) -> bool {
        kept.day() == day
            && (self.settings.is_final(kept, now)
                || now.saturating_add(seconds(min_left))
                    < self.settings.expires_at(day, kept.fetched_at()))
    }

    /// How long a cache may still keep a day from `now`, its stale bound included (a final
    /// day: `ttl` more, then it is read back from the durable tier); `None` when it may not.
    fn keep_for(&self, day: &CallDay, now: i64) -> Option<Duration> {
        let expires = if self.settings.is_final(day, now) {
            now.saturating_add(seconds(self.settings.ttl))
        } else {
            self.settings.expires_at(day.day(), day.fetched_at())
        };
        let left = expires
            .saturating_add(seconds(self.settings.max_stale))
            .saturating_sub(now);
        u64::try_from(left)
            .ok()
            .filter(|left| *left > 0)
            .map(Duration::from_secs)
    }

    async fn keep_locally(&self, day: Arc<CallDay>, now: i64) {
        if let Some(ttl) = self.keep_for(&day, now) {
            self.local.put(day, ttl).await;
        }
    }

    async fn fresh_in(
        &self,
        tier: &dyn CallDayCache,
        day: Day,
        min_left: Duration,
    ) -> Option<Arc<CallDay>> {
        let now = self.clock.now().unix_timestamp();
        tier.get(&[day])
            .await
            .into_iter()
            .flatten()
            .find(|kept| self.is_fresh(kept, day, now, min_left))
    }

    /// Fails when a day of `wanted` gave an unusable answer within the hold: it is not asked
    /// again until then.
    fn refuse_unusable(&self, wanted: &[Day]) -> Result<(), UpstreamError> {
        let mut unusable = self.unusable.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        unusable.retain(|_, (until, _)| *until > now);
        let Some((day, (until, why))) = wanted
            .iter()
            .find_map(|day| unusable.get(day).map(|held| (day, held)))
        else {
            return Ok(());
        };
        metrics::counter!("callstats_call_days_held_back_total").increment(1);
        let rest = until.saturating_duration_since(now);
        Err(UpstreamError::unusable(format!(
            "{day} is not asked again for {} s: its last answer was unusable",
            rest.as_secs()
        ))
        .with_retry_in(rest)
        .with_source(why.clone()))
    }

    /// The rollup of a held day: made once for a final day, kept from then on.
    fn rollup_of(&self, day: &CallDay, now: i64) -> Arc<DayRollup> {
        let mut kept = self
            .final_rollups
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(rollup) = kept.get(&day.day()) {
            return Arc::clone(rollup);
        }
        let rollup = Arc::new(DayRollup::of(day));
        if self.settings.is_final(day, now) {
            kept.insert(day.day(), Arc::clone(&rollup));
        }
        rollup
    }

    /// Keeps the rollup of a final day, read from the durable tier.
    fn keep_final_rollup(&self, rollup: &Arc<DayRollup>) {
        self.final_rollups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(rollup.day(), Arc::clone(rollup));
    }

    /// Refuses, without paying, a request that needs `days` day fetches its key's budget does
    /// not have room for now.
    async fn afford(&self, requester: &Requester, days: usize) -> Result<(), CallDaysError> {
        let Some(limit) = self.settings.day_budget.per_minute() else {
            return Ok(());
        };
        let needed = u32::try_from(days).unwrap_or(u32::MAX);
        let bucket = QuotaBucket::new(&QuotaSubject::KeyDays(requester.key_id()), self.clock.now());
        let used = self.budget.peek(&bucket).await;
        if used.saturating_add(u64::from(needed)) <= u64::from(limit) {
            return Ok(());
        }
        Err(over_budget(requester, needed, limit, used, &bucket))
    }

    /// Pays `days` day fetches from the requester's budget, all or none.
    async fn pay(&self, requester: &Requester, days: usize) -> Result<(), CallDaysError> {
        let Some(limit) = self.settings.day_budget.per_minute() else {
            return Ok(());
        };
        let needed = u32::try_from(days).unwrap_or(u32::MAX);
        let bucket = QuotaBucket::new(&QuotaSubject::KeyDays(requester.key_id()), self.clock.now());
        match self
            .budget
            .add_within(&bucket, u64::from(needed), u64::from(limit))
            .await
        {
            Ok(_) => {
                requester.paid(needed);
                Ok(())
            }
            Err(used) => Err(over_budget(requester, needed, limit, used, &bucket)),
        }
    }

    /// One day: kept by now for `min_left` more (a fetch that just ended), fetched by another
    /// replica (waited for), or fetched here in its turn (`turn`; after a lost turn, from the
    /// queue's front).
    async fn fetch_day(
        self: Arc<Self>,
        day: Day,
        mut turn: Option<Turn>,
        min_left: Duration,
    ) -> Fetched {
        let lock_ttl = self.settings.fetch_timeout.saturating_add(LOCK_MARGIN);
        loop {
            if let Some(kept) = self.fresh_in(&*self.local, day, min_left).await {
                return Ok(kept);
            }
            let turn = turn.take().unwrap_or_else(|| self.queue.first(day));
            let slot = turn.slot().await.ok_or_else(|| {
                // Another replica (or this one restarted) answers in a moment.
                UpstreamError::new("the call-day store is shutting down")
                    .with_retry_in(SHUTDOWN_RETRY_IN)
            })?;
            let lock = match &self.shared {
                None => None,
                Some(shared) => {
                    let entry = Arc::new(SharedDay {
                        store: Arc::clone(&self),
                        tier: Arc::clone(shared),
                        day,
                        min_left,
                    });
                    match replica_lock::claim(entry, lock_ttl).await {
                        Claim::Stored(kept) => {
                            self.keep_locally(Arc::clone(&kept), self.clock.now().unix_timestamp())
                                .await;
                            return Ok(kept);
                        }
                        Claim::Held(lock) => Some(lock),
                        Claim::Taken => {
                            // Another replica is fetching the day: wait for its entry without
                            // holding a slot. When its lock goes (it failed, or died and the
                            // lock expired), this one tries again from the front.
                            drop(slot);
                            metrics::counter!("callstats_call_day_waits_total").increment(1);
                            tokio::time::sleep(replica_lock::POLL).await;
                            if let Some(kept) = self.fresh_in(&**shared, day, min_left).await {
                                self.keep_locally(
                                    Arc::clone(&kept),
                                    self.clock.now().unix_timestamp(),
                                )
                                .await;
                                return Ok(kept);
                            }
                            continue;
                        }
                    }
                }
            };
            let fetched = self.fetch_upstream(day, slot).await;
            if let Some(lock) = lock {
                lock.release().await;
            }
            // None: throttled, so fetched again from the front once the pause is over.
            if let Some(fetched) = fetched {
                return fetched;
            }
        }
    }

    /// Fetches the day's window from the call platform and keeps it in every tier; `None`
    /// when the upstream asked to be called less.
    async fn fetch_upstream(&self, day: Day, slot: Slot) -> Option<Fetched> {
        // When the fetch started: a day still open then is kept as unsettled.
        let started = self.clock.now();
        let in_flight = metrics::gauge!("callstats_call_day_fetches_in_flight");
        in_flight.increment(1.0);
        let fetched = self.platform.calls(DateRange::day(day)).await;
        in_flight.decrement(1.0);
        let records = match fetched {
            Ok(records) => {
                slot.fetched();
                records
            }
            Err(err) => {
                if let UpstreamFailure::Backpressure { retry_after } = err.kind {
                    slot.throttled(retry_after);
                    metrics::counter!("callstats_call_days_fetched_total", "outcome" => "throttled")
                        .increment(1);
                    return None;
                }
                drop(slot);
                if err.kind == UpstreamFailure::Unusable {
                    let until = Instant::now() + self.settings.unusable_hold;
                    self.unusable
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(day, (until, err.clone()));
                }
                metrics::counter!("callstats_call_days_fetched_total", "outcome" => "failed")
                    .increment(1);
                return Some(Err(err));
            }
        };
        metrics::counter!("callstats_call_days_fetched_total", "outcome" => "ok").increment(1);
        let held = if self.settings.settled(day, started.unix_timestamp()) {
            Held::Settled
        } else {
            Held::Provisional
        };
        let kept =
            Arc::new(CallDay::from_fetched(day, unix_millis(started), &records).with_held(held));
        // The calls in flight go as soon as the day is made.
        drop(records);
        let now = self.clock.now().unix_timestamp();
        if let Some(ttl) = self.keep_for(&kept, now) {
            self.local.put(Arc::clone(&kept), ttl).await;
            if let Some(shared) = &self.shared {
                shared.put(Arc::clone(&kept), ttl).await;
            }
        }
        if held == Held::Settled {
            self.persist(Arc::clone(&kept));
        }
        Some(Ok(kept))
    }

    /// Writes a settled day fetched here to the durable tier, in a task of its own: the
    /// request does not wait for the database, and a failed write is only logged.
    fn persist(&self, day: Arc<CallDay>) {
        let Some(archive) = self.archive.get() else {
            return;
        };
        let (archive, warnings) = (Arc::clone(archive), Arc::clone(&self.warnings));
        tokio::spawn(async move {
            match archive.put(&day).await {
                Ok(()) => {
                    metrics::counter!("callstats_call_days_persisted_total", "outcome" => "ok")
                        .increment(1);
                }
                Err(err) => {
                    metrics::counter!("callstats_call_days_persisted_total", "outcome" => "failed")
                        .increment(1);
                    if warnings.due(Warning::ArchiveWrite) {
                        tracing::warn!(
                            day = %day.day(),
                            error = %cause_chain(&err),
                            "a call day could not be written to the database; serving on from the caches"
                        );
                    }
                }
            }
        });
    }
}

/// A refusal for the key's day budget (`used` of `limit` this minute), counted.
fn over_budget(
    requester: &Requester,
    needed: u32,
    limit: u32,
    used: u64,
    bucket: &QuotaBucket,
) -> CallDaysError {
    metrics::counter!("callstats_day_budget_refusals_total").increment(1);
    CallDaysError::OverBudget(OverBudget {
        key: requester.key_id(),
        needed,
        status: DayBudgetStatus::current(limit, used, bucket),
        filling: None,
    })
}

/// How many days a trend reads or fetches at once: a month's worth, as every other endpoint.
const MONTH_OF_DAYS: usize = 31;

/// Puts `rollup` in its day's slot of `found`, the rollups of `range` in order.
fn place(found: &mut [Option<Arc<DayRollup>>], range: &DateRange, rollup: Arc<DayRollup>) {
    let slot = usize::try_from(rollup.day().number() - range.start().number())
        .ok()
        .and_then(|index| found.get_mut(index));
    if let Some(slot) = slot {
        *slot = Some(rollup);
    }
}

#[async_trait]
impl CallDaySource for CallDayStore {
    async fn days(
        &self,
        range: DateRange,
        requester: &Requester,
    ) -> Result<Vec<Arc<CallDay>>, CallDaysError> {
        self.explained(self.collect(range, requester).await).await
    }

    async fn rollups(
        &self,
        range: DateRange,
        requester: &Requester,
    ) -> Result<Vec<Arc<DayRollup>>, CallDaysError> {
        self.explained(self.collect_rollups(range, requester).await)
            .await
    }
}

#[cfg(test)]
mod tests;
