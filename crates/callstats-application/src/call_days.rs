//! The call-day store: the call statistics read a range as its Tashkent days, and each day is
//! fetched from the call platform as its own window, kept, and shared by every endpoint,
//! direction and (with a shared tier) replica. docs/behaviour.md, "Call records", is the
//! contract; docs/operations.md has the settings.
//!
//! - A day that has not begun has no calls: it is answered without asking anyone.
//! - A kept day is looked up in process first, then in the shared tier (one round trip for
//!   every missing day of the request); a day found in the shared tier is copied in process.
//! - The days still missing are fetched concurrently, each one at most once per replica at a
//!   time (single flight) and, with a shared tier, once per deployment (a lock per day; the
//!   other replicas wait for its entry). At most `concurrency` windows are fetched at once per
//!   replica, whatever the number of requests; pages within one day follow their cursor.
//! - The whole request is bounded by one deadline. A day that fails makes the request fail (no
//!   partial figures); the fetches run as tasks of their own, so days that arrive are kept even
//!   when their request has already failed or gone.
//! - A settled day (ended at least `settle` ago when fetched) is kept for `ttl`; a day fetched
//!   before it settled (today) for at most [`UNSETTLED_TTL`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use callstats_domain::calendar::{DateRange, Day};
use callstats_domain::call_day::CallDay;
use callstats_domain::ports::{CallDayCache, CallDays, CallPlatform, Clock, UpstreamError};
use callstats_domain::tz;
use futures::FutureExt as _;
use futures::future::try_join_all;
use tokio::sync::Semaphore;

use crate::flight::{Flight, Flights, panic_message};

/// Longest a day fetched before it settled is kept.
pub const UNSETTLED_TTL: Duration = Duration::from_secs(60);
/// How often a replica waiting for another's fetch of a day looks for its entry.
const WAIT_POLL: Duration = Duration::from_millis(50);
/// How long past the fetch deadline a day's cross-replica lock may outlive its holder.
const LOCK_MARGIN: Duration = Duration::from_secs(10);

/// The store's settings; [`CallDaySettings::default`] has the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallDaySettings {
    /// Day windows fetched at once per replica (`CALLSTATS_CALL_PLATFORM_CONCURRENCY`).
    pub concurrency: usize,
    /// Deadline of a whole request's days (`CALLSTATS_CALL_PLATFORM_FETCH_TIMEOUT_MS`).
    pub fetch_timeout: Duration,
    /// How long after its end a day is settled (`CALLSTATS_CALL_DAY_SETTLE_SECS`).
    pub settle: Duration,
    /// How long a settled day is kept (`CALLSTATS_CALL_DAY_TTL_SECS`).
    pub ttl: Duration,
}

impl CallDaySettings {
    pub const DEFAULT_CONCURRENCY: usize = 8;
    pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(15);
    pub const DEFAULT_SETTLE: Duration = Duration::from_secs(3600);
    pub const DEFAULT_TTL: Duration = Duration::from_secs(86_400);

    /// Unix second until which a day fetched at `fetched_at` may be served.
    #[must_use]
    pub fn expires_at(&self, day: Day, fetched_at: i64) -> i64 {
        let end = tz::local_midnight_unix(day.date()).saturating_add(86_400);
        let settled = fetched_at >= end.saturating_add(seconds(self.settle));
        let lifetime = if settled {
            self.ttl
        } else {
            self.ttl.min(UNSETTLED_TTL)
        };
        fetched_at.saturating_add(seconds(lifetime))
    }
}

impl Default for CallDaySettings {
    fn default() -> Self {
        Self {
            concurrency: Self::DEFAULT_CONCURRENCY,
            fetch_timeout: Self::DEFAULT_FETCH_TIMEOUT,
            settle: Self::DEFAULT_SETTLE,
            ttl: Self::DEFAULT_TTL,
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
    clock: Arc<dyn Clock>,
    settings: CallDaySettings,
    permits: Semaphore,
    flights: Arc<Flights<i64, Fetched>>,
}

/// Which tier answered, for the metrics.
#[derive(Clone, Copy)]
enum Tier {
    Memory,
    Shared,
}

impl Tier {
    const fn label(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Shared => "redis",
        }
    }
}

impl CallDayStore {
    /// `local` is the in-process tier; `shared`, when set, the tier every replica sees.
    #[must_use]
    pub fn new(
        platform: Arc<dyn CallPlatform>,
        local: Arc<dyn CallDayCache>,
        shared: Option<Arc<dyn CallDayCache>>,
        clock: Arc<dyn Clock>,
        settings: CallDaySettings,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                platform,
                local,
                shared,
                clock,
                permits: Semaphore::new(settings.concurrency.max(1)),
                settings,
                flights: Flights::new(|cause| {
                    Err(UpstreamError::new(format!(
                        "a call-day fetch failed: {cause}"
                    )))
                }),
            }),
        }
    }

    async fn collect(&self, range: DateRange) -> Result<Vec<Arc<CallDay>>, UpstreamError> {
        let inner = &self.inner;
        let now = inner.clock.now().unix_timestamp();
        let days: Vec<Day> = range.iter_days().collect();
        let mut found: Vec<Option<Arc<CallDay>>> = days
            .iter()
            .map(|day| {
                // A day that has not begun has no calls, and nobody is asked.
                (tz::local_midnight_unix(day.date()) > now)
                    .then(|| Arc::new(CallDay::empty(*day, now)))
            })
            .collect();
        inner
            .look_up(&*inner.local, Tier::Memory, &days, &mut found, now)
            .await;
        if let Some(shared) = &inner.shared {
            let copied = inner
                .look_up(&**shared, Tier::Shared, &days, &mut found, now)
                .await;
            for day in copied {
                inner.keep_locally(day, now).await;
            }
        }
        let missing = missing(&days, &found);
        let fetched = try_join_all(missing.iter().map(|(_, day)| self.fetch(*day))).await?;
        for ((index, _), day) in missing.into_iter().zip(fetched) {
            if let Some(slot) = found.get_mut(index) {
                *slot = Some(day);
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// The fetch of `day` under way on this replica, or a new one.
    fn fetch(&self, day: Day) -> Flight<Fetched> {
        let inner = Arc::clone(&self.inner);
        self.inner
            .flights
            .join(&day.number(), move || inner.fetch_day(day))
    }
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

impl Inner {
    /// Fills the empty slots of `found` from `tier` with the days it keeps that are still
    /// fresh; returns the days it filled.
    async fn look_up(
        &self,
        tier: &dyn CallDayCache,
        label: Tier,
        days: &[Day],
        found: &mut [Option<Arc<CallDay>>],
        now: i64,
    ) -> Vec<Arc<CallDay>> {
        let missing = missing(days, found);
        if missing.is_empty() {
            return Vec::new();
        }
        let wanted: Vec<Day> = missing.iter().map(|(_, day)| *day).collect();
        let answers = tier.get(&wanted).await;
        let mut filled = Vec::new();
        for ((index, day), answer) in missing.into_iter().zip(answers) {
            let fresh = answer.filter(|kept| self.is_fresh(kept, day, now));
            let result = if fresh.is_some() { "hit" } else { "miss" };
            metrics::counter!("callstats_call_day_lookups_total", "tier" => label.label(), "result" => result)
                .increment(1);
            if let (Some(kept), Some(slot)) = (fresh, found.get_mut(index)) {
                filled.push(Arc::clone(&kept));
                *slot = Some(kept);
            }
        }
        filled
    }

    fn is_fresh(&self, kept: &CallDay, day: Day, now: i64) -> bool {
        kept.day() == day && now < self.settings.expires_at(day, kept.fetched_at())
    }

    /// How long a day may still be kept from `now`; `None` when it may not.
    fn keep_for(&self, day: &CallDay, now: i64) -> Option<Duration> {
        let left = self
            .settings
            .expires_at(day.day(), day.fetched_at())
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

    async fn fresh_in(&self, tier: &dyn CallDayCache, day: Day) -> Option<Arc<CallDay>> {
        let now = self.clock.now().unix_timestamp();
        tier.get(&[day])
            .await
            .into_iter()
            .flatten()
            .find(|kept| self.is_fresh(kept, day, now))
    }

    /// One day: kept by now (a fetch that just ended), fetched by another replica (waited
    /// for), or fetched here.
    async fn fetch_day(self: Arc<Self>, day: Day) -> Fetched {
        let lock_ttl = self.settings.fetch_timeout.saturating_add(LOCK_MARGIN);
        loop {
            if let Some(kept) = self.fresh_in(&*self.local, day).await {
                return Ok(kept);
            }
            let permit = self
                .permits
                .acquire()
                .await
                .map_err(|_| UpstreamError::new("the call-day store is shutting down"))?;
            let Some(shared) = &self.shared else {
                return self.fetch_upstream(day).await;
            };
            if shared.try_lock(day, lock_ttl).await {
                // A fetch that panics still gives the lock up, so other replicas do not wait
                // out its lifetime.
                let fetched = AssertUnwindSafe(self.fetch_upstream(day))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| {
                        Err(UpstreamError::new(format!(
                            "a call-day fetch failed: {}",
                            panic_message(panic.as_ref())
                        )))
                    });
                shared.unlock(day).await;
                return fetched;
            }
            // Another replica is fetching the day: wait for its entry without holding a slot.
            // When its lock goes (it failed, or died and the lock expired), this one tries.
            drop(permit);
            metrics::counter!("callstats_call_day_waits_total").increment(1);
            tokio::time::sleep(WAIT_POLL).await;
            if let Some(kept) = self.fresh_in(&**shared, day).await {
                self.keep_locally(Arc::clone(&kept), self.clock.now().unix_timestamp())
                    .await;
                return Ok(kept);
            }
        }
    }

    /// Fetches the day's window from the call platform and keeps it in every tier.
    async fn fetch_upstream(&self, day: Day) -> Fetched {
        // When the fetch started: a day still open then is kept as unsettled.
        let started = self.clock.now().unix_timestamp();
        let in_flight = metrics::gauge!("callstats_call_day_fetches_in_flight");
        in_flight.increment(1.0);
        let fetched = self.platform.calls(DateRange::day(day)).await;
        in_flight.decrement(1.0);
        let records = match fetched {
            Ok(records) => records,
            Err(err) => {
                metrics::counter!("callstats_call_days_fetched_total", "outcome" => "failed")
                    .increment(1);
                return Err(err);
            }
        };
        metrics::counter!("callstats_call_days_fetched_total", "outcome" => "ok").increment(1);
        let kept = Arc::new(CallDay::from_records(day, started, records));
        let now = self.clock.now().unix_timestamp();
        if let Some(ttl) = self.keep_for(&kept, now) {
            self.local.put(Arc::clone(&kept), ttl).await;
            if let Some(shared) = &self.shared {
                shared.put(Arc::clone(&kept), ttl).await;
            }
        }
        Ok(kept)
    }
}

#[async_trait]
impl CallDays for CallDayStore {
    async fn days(&self, range: DateRange) -> Result<Vec<Arc<CallDay>>, UpstreamError> {
        let deadline = self.inner.settings.fetch_timeout;
        tokio::time::timeout(deadline, self.collect(range))
            .await
            .unwrap_or_else(|_| {
                let reason = format!(
                    "the days from {} to {} did not all arrive within {} ms",
                    range.start(),
                    range.end(),
                    deadline.as_millis()
                );
                tracing::warn!(%reason, "call platform unavailable");
                Err(UpstreamError::new(reason))
            })
    }
}

#[cfg(test)]
#[path = "call_days_tests.rs"]
mod tests;
