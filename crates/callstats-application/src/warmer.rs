//! The warmer: the recent days are held before anyone asks (docs/behaviour.md, "Recent days
//! are held"), so that a question about them never waits on the call platform.
//!
//! - Every [`WarmerSettings::every`] a pass keeps the last [`WarmerSettings::days`] days (today
//!   included) held: a day not held, or held for less than [`WarmerSettings::margin`] more, is
//!   fetched again ([`CallDayStore::warm`]). Today (kept a minute) is so fetched again about
//!   every 40 s, a day that has not settled too, a settled day once its day-long lifetime is
//!   nearly over.
//! - Its fetches wait in the fair queue's own line, behind every key's day, and are paid from
//!   no key's budget; a request that needs a day it queued takes it to the front.
//! - With several replicas one of them warms for all (a [`Lease`] in the shared store, renewed
//!   while it works); the others find the days in the shared tier.
//! - It runs beside serving: nothing waits for it, readiness included.

use std::sync::Arc;
use std::time::{Duration, Instant};

use callstats_domain::calendar::{Day, unix_millis};
use callstats_domain::call_day::{CallDay, Held};
use callstats_domain::ports::{Clock, Lease};

use crate::call_days::{CallDayStore, Warmed};

/// How the warmer works; [`WarmerSettings::default`] has the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WarmerSettings {
    /// Days held back from today, today included (`CALLSTATS_CALL_DAY_WARM_DAYS`); 0 turns the
    /// warmer off.
    pub days: u32,
    /// How often a pass runs.
    pub every: Duration,
    /// A held day is fetched again once it has less than this left to be kept.
    pub margin: Duration,
}

impl WarmerSettings {
    pub const DEFAULT_DAYS: u32 = 35;
    pub const DEFAULT_EVERY: Duration = Duration::from_secs(5);
    pub const DEFAULT_MARGIN: Duration = Duration::from_secs(20);
}

impl Default for WarmerSettings {
    fn default() -> Self {
        Self {
            days: Self::DEFAULT_DAYS,
            every: Self::DEFAULT_EVERY,
            margin: Self::DEFAULT_MARGIN,
        }
    }
}

/// How long the lease lasts unless renewed; it is renewed every third of it while a pass runs.
const LEASE_TTL: Duration = Duration::from_secs(30);

/// The warmer of one replica.
pub struct Warmer {
    store: CallDayStore,
    lease: Arc<dyn Lease>,
    clock: Arc<dyn Clock>,
    settings: WarmerSettings,
}

impl Warmer {
    #[must_use]
    pub fn new(
        store: CallDayStore,
        lease: Arc<dyn Lease>,
        clock: Arc<dyn Clock>,
        settings: WarmerSettings,
    ) -> Self {
        Self {
            store,
            lease,
            clock,
            settings,
        }
    }

    /// The days it keeps held now: the last `days` Tashkent days, today included, oldest first.
    #[must_use]
    pub fn window(&self) -> Vec<Day> {
        let today = Day::of(self.clock.now());
        let back = i64::from(self.settings.days);
        (1 - back..=0)
            .filter_map(|offset| today.plus_days(offset))
            .collect()
    }

    /// One pass, when this replica holds the lease (renewed while the pass runs); `None` when
    /// another replica does.
    pub async fn pass(&self) -> Option<Warmed> {
        if !self.lease.hold(LEASE_TTL).await {
            return None;
        }
        let window = self.window();
        let warm = self.store.warm(&window, self.settings.margin);
        tokio::pin!(warm);
        loop {
            tokio::select! {
                warmed = &mut warm => return Some(warmed),
                () = tokio::time::sleep(LEASE_TTL / 3) => {
                    self.lease.hold(LEASE_TTL).await;
                }
            }
        }
    }

    /// Runs passes for ever (spawn it): the first complete one (no day failed) is the warm-up,
    /// whose duration is logged and kept as a metric.
    pub async fn run(self) {
        if self.settings.days == 0 {
            return;
        }
        let started = Instant::now();
        let mut warmed_up = false;
        let mut fetches = 0_usize;
        loop {
            if let Some(warmed) = self.pass().await {
                fetches = fetches.saturating_add(warmed.fetched);
                self.report(&warmed);
                if !warmed.failed.is_empty() {
                    tracing::warn!(
                        days = warmed.failed.len(),
                        first = %warmed.failed.first().map(ToString::to_string).unwrap_or_default(),
                        "recent days could not be fetched; the next pass tries again"
                    );
                } else if !warmed_up {
                    warmed_up = true;
                    let took = started.elapsed();
                    metrics::gauge!("callstats_call_day_warmup_seconds").set(took.as_secs_f64());
                    tracing::info!(
                        days = warmed.held.len(),
                        fetches,
                        took_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                        "recent days held"
                    );
                }
            }
            tokio::time::sleep(self.settings.every).await;
        }
    }

    /// The days held by age, and how old the oldest unsettled one is.
    fn report(&self, warmed: &Warmed) {
        let now = self.clock.now();
        let today = Day::of(now);
        let mut by_age = [0_u32; 4];
        for day in &warmed.held {
            let age = today.number().saturating_sub(day.day().number());
            let class = match age {
                ..=0 => 0,
                1 => 1,
                2..=7 => 2,
                _ => 3,
            };
            if let Some(count) = by_age.get_mut(class) {
                *count = count.saturating_add(1);
            }
        }
        for (age, count) in AGE_CLASSES.iter().zip(by_age) {
            metrics::gauge!("callstats_call_day_warm_days", "age" => *age).set(f64::from(count));
        }
        let lag = refresh_lag(&warmed.held, unix_millis(now));
        metrics::gauge!("callstats_call_day_refresh_lag_seconds").set(lag.as_secs_f64());
    }
}

/// The age classes of `callstats_call_day_warm_days`.
const AGE_CLASSES: [&str; 4] = ["today", "yesterday", "2-7 days", "8+ days"];

/// How long ago the oldest held day that may still change was fetched: how far today's
/// figures may lag the platform. Zero when every held day is settled.
fn refresh_lag(held: &[Arc<CallDay>], now_ms: i64) -> Duration {
    let oldest = held
        .iter()
        .filter(|day| day.held() == Held::Provisional)
        .map(|day| now_ms.saturating_sub(day.fetched_at_ms()))
        .max()
        .unwrap_or(0);
    Duration::from_millis(u64::try_from(oldest).unwrap_or(0))
}
