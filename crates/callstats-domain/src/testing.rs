//! Test support for other crates' tests (feature `mock`): the one clock they set and move.

use std::sync::{Arc, Mutex, PoisonError};

use time::{Duration, OffsetDateTime};

use crate::ports::Clock;

/// A [`Clock`] the test sets and moves. Its constructors hand out an `Arc`, because the test
/// keeps one handle to move it while the code under test reads another.
pub struct TestClock {
    /// What it reads before it is moved.
    base: Base,
    /// How far it has been moved since.
    moved: Mutex<Duration>,
}

enum Base {
    At(OffsetDateTime),
    /// Running with another clock: a test against real servers cannot stop time, only move it
    /// forward (quota windows are UTC minutes, and a test cannot wait for the next one).
    Following(Arc<dyn Clock>),
}

impl Base {
    fn now(&self) -> OffsetDateTime {
        match self {
            Self::At(now) => *now,
            Self::Following(clock) => clock.now(),
        }
    }
}

impl TestClock {
    /// A clock standing still at `now` until the test moves it.
    #[must_use]
    pub fn at(now: OffsetDateTime) -> Arc<Self> {
        Self::on(Base::At(now))
    }

    /// A clock running with `clock` (the system's, say), ahead of it by however far the test
    /// moves it.
    #[must_use]
    pub fn following(clock: Arc<dyn Clock>) -> Arc<Self> {
        Self::on(Base::Following(clock))
    }

    fn on(base: Base) -> Arc<Self> {
        Arc::new(Self {
            base,
            moved: Mutex::new(Duration::ZERO),
        })
    }

    /// Makes it read `now` (and, following a clock, run on from there).
    pub fn set(&self, now: OffsetDateTime) {
        *self.moved() = now - self.base.now();
    }

    /// Moves it forward by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        *self.moved() += by;
    }

    /// Moves it to the first instant of the next UTC minute, the start of a quota window.
    pub fn advance_to_next_minute(&self) {
        let mut moved = self.moved();
        let now = self.base.now() + *moved;
        let into_minute = Duration::seconds(i64::from(now.second()))
            + Duration::nanoseconds(i64::from(now.nanosecond()));
        *moved += Duration::MINUTE - into_minute;
    }

    fn moved(&self) -> std::sync::MutexGuard<'_, Duration> {
        // The guarded value is one duration, whole whatever panicked while it was held.
        self.moved.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Clock for TestClock {
    fn now(&self) -> OffsetDateTime {
        self.base.now() + *self.moved()
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn a_clock_at_an_instant_stands_still_until_set_or_advanced() {
        let clock = TestClock::at(datetime!(2026-11-21 06:15:30 UTC));
        assert_eq!(clock.now(), datetime!(2026-11-21 06:15:30 UTC));
        clock.advance(std::time::Duration::from_secs(61));
        assert_eq!(clock.now(), datetime!(2026-11-21 06:16:31 UTC));
        clock.set(datetime!(2026-11-21 06:15:00 UTC));
        assert_eq!(
            clock.now(),
            datetime!(2026-11-21 06:15:00 UTC),
            "set moves it back too"
        );
        clock.advance_to_next_minute();
        assert_eq!(clock.now(), datetime!(2026-11-21 06:16:00 UTC));
        clock.advance_to_next_minute();
        assert_eq!(
            clock.now(),
            datetime!(2026-11-21 06:17:00 UTC),
            "always the next one"
        );
    }

    #[test]
    fn a_following_clock_runs_with_its_base_ahead_by_what_it_was_moved() {
        let base = TestClock::at(datetime!(2026-11-21 06:15:30.25 UTC));
        let followed: Arc<dyn Clock> = base.clone();
        let clock = TestClock::following(followed);
        assert_eq!(clock.now(), base.now());
        clock.advance_to_next_minute();
        assert_eq!(clock.now(), datetime!(2026-11-21 06:16:00 UTC));
        base.advance(std::time::Duration::from_secs(5));
        assert_eq!(
            clock.now(),
            datetime!(2026-11-21 06:16:05 UTC),
            "it runs on"
        );
        clock.set(datetime!(2026-11-22 00:00 UTC));
        base.advance(std::time::Duration::from_secs(1));
        assert_eq!(clock.now(), datetime!(2026-11-22 00:00:01 UTC));
    }
}
