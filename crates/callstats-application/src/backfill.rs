//! The backfill: the history horizon is held in the database before anyone asks
//! (docs/behaviour.md, "The history horizon is held"), so that a trend over a year answers
//! from the database with no upstream request and no day budget spent.
//!
//! - A pass lists the settled days of the horizon the database does not hold (with their
//!   rollup) and fills them newest first, one day at a time, at most
//!   [`BackfillSettings::per_minute`] day fetches a minute.
//! - Its fetches wait in the fair queue's backfill line, behind every key's day and the
//!   warmer's, and are paid from no key's budget ([`CallDayStore::backfill`]).
//! - With several replicas one of them fills for all (a [`Lease`] of its own in the shared
//!   store, renewed at every day). Final days are never fetched again, so once the horizon is
//!   held a pass asks the platform only for the days that entered it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use callstats_domain::calendar::Day;
use callstats_domain::error::cause_chain;
use callstats_domain::limits::HistoryHorizon;
use callstats_domain::ports::{CallDayArchive, Clock, Lease};

use crate::call_days::{Backfilled, CallDayStore};

/// How the backfill works; [`BackfillSettings::default`] has the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackfillSettings {
    /// Most day fetches a minute (`CALLSTATS_CALL_DAY_BACKFILL_PER_MINUTE`); 0 turns the
    /// backfill off.
    pub per_minute: u32,
    /// How long after the start the first pass begins.
    pub first: Duration,
    /// How long after a pass the next one starts.
    pub every: Duration,
}

impl BackfillSettings {
    pub const DEFAULT_PER_MINUTE: u32 = 10;
    pub const DEFAULT_FIRST: Duration = Duration::from_secs(5);
    pub const DEFAULT_EVERY: Duration = Duration::from_secs(60);

    /// The pause after each day fetched, so that at most `per_minute` go a minute.
    fn pause(self) -> Duration {
        Duration::from_secs(60) / self.per_minute.max(1)
    }
}

impl Default for BackfillSettings {
    fn default() -> Self {
        Self {
            per_minute: Self::DEFAULT_PER_MINUTE,
            first: Self::DEFAULT_FIRST,
            every: Self::DEFAULT_EVERY,
        }
    }
}

/// How long the lease lasts unless renewed; it is renewed at every day.
const LEASE_TTL: Duration = Duration::from_secs(60);

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filled {
    /// The horizon's settled days the database held when the pass began.
    pub held: usize,
    /// The days it asked the platform for, in order.
    pub fetched: Vec<Day>,
    /// The days it wrote from a copy held already.
    pub written: usize,
    /// The days whose fetch failed; the next pass tries again.
    pub failed: usize,
}

/// The backfill of one replica.
pub struct Backfill {
    store: CallDayStore,
    archive: Arc<dyn CallDayArchive>,
    lease: Arc<dyn Lease>,
    clock: Arc<dyn Clock>,
    history: HistoryHorizon,
    settings: BackfillSettings,
}

impl Backfill {
    #[must_use]
    pub fn new(
        store: CallDayStore,
        archive: Arc<dyn CallDayArchive>,
        lease: Arc<dyn Lease>,
        clock: Arc<dyn Clock>,
        history: HistoryHorizon,
        settings: BackfillSettings,
    ) -> Self {
        Self {
            // The store's refusals for the day budget then say how far this fills the history.
            store: store.with_backfill(history, settings.per_minute),
            archive,
            lease,
            clock,
            history,
            settings,
        }
    }

    /// The days it holds now: the horizon's days that have settled, newest first.
    #[must_use]
    pub fn horizon(&self) -> Vec<Day> {
        self.store.settled_history(self.history, self.clock.now())
    }

    /// One pass, when this replica holds the lease; `None` when another replica does, or the
    /// database could not say which days it holds.
    pub async fn pass(&self) -> Option<Filled> {
        if !self.lease.hold(LEASE_TTL).await {
            return None;
        }
        let horizon = self.horizon();
        let (Some(newest), Some(oldest)) = (horizon.first(), horizon.last()) else {
            return Some(Filled::default());
        };
        let held: HashSet<Day> = match self.archive.held_days(*oldest, *newest).await {
            Ok(held) => held.into_iter().collect(),
            Err(err) => {
                tracing::warn!(error = %cause_chain(&err), "the backfill cannot read which days the database holds");
                return None;
            }
        };
        let mut filled = Filled {
            held: horizon.iter().filter(|day| held.contains(day)).count(),
            ..Filled::default()
        };
        report(horizon.len(), filled.held);
        for day in horizon.iter().filter(|day| !held.contains(day)) {
            if !self.lease.hold(LEASE_TTL).await {
                break;
            }
            match self.store.backfill(*day).await {
                Ok(Backfilled::Nothing) => break,
                Ok(Backfilled::Written) => {
                    filled.written += 1;
                    filled.held += 1;
                    continue;
                }
                Ok(Backfilled::Fetched) => {
                    metrics::counter!("callstats_call_day_backfill_fetches_total", "outcome" => "ok")
                        .increment(1);
                    filled.fetched.push(*day);
                    filled.held += 1;
                }
                Err(err) => {
                    metrics::counter!("callstats_call_day_backfill_fetches_total", "outcome" => "failed")
                        .increment(1);
                    if filled.failed == 0 {
                        tracing::warn!(day = %day, error = %cause_chain(&err), "the backfill could not fetch a day; the next pass tries again");
                    }
                    filled.failed += 1;
                }
            }
            report(horizon.len(), filled.held);
            tokio::time::sleep(self.settings.pause()).await;
        }
        Some(filled)
    }

    /// Runs passes for ever (spawn it), the first [`BackfillSettings::first`] after the start
    /// (the server and the warmer's first days before it), then one
    /// [`BackfillSettings::every`] after the last; logs once when the horizon is held.
    pub async fn run(self) {
        if self.settings.per_minute == 0 {
            return;
        }
        let mut was_held = false;
        let mut pause = self.settings.first;
        loop {
            tokio::time::sleep(pause).await;
            pause = self.settings.every;
            if let Some(filled) = self.pass().await {
                let held = filled.failed == 0 && filled.held == self.horizon().len();
                if held && !was_held {
                    tracing::info!(
                        days = filled.held,
                        fetched = filled.fetched.len(),
                        "the history horizon is held in the database"
                    );
                }
                was_held = held;
            }
        }
    }
}

/// The gauges of the horizon: its settled days, and those the database holds.
fn report(days: usize, held: usize) {
    let gauge = |count: usize| u32::try_from(count).map_or(f64::from(u32::MAX), f64::from);
    metrics::gauge!("callstats_call_day_horizon_days").set(gauge(days));
    metrics::gauge!("callstats_call_day_horizon_days_held").set(gauge(held));
}
