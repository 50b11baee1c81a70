//! A circuit breaker, the one outage state machine of the adapters: after `threshold` failures
//! in a row it refuses for `open_for` without touching the dependency, then lets one probe
//! through; the probe's outcome closes it again or reopens it. The call platform client opens
//! it after several failed fetches; Redis after one failed round trip (threshold 1), so a dead
//! Redis costs one timeout per `retry_after`, not one per request.
//!
//! Failures are counted by burst: a failure counts only if its call began after the last
//! counted failure. Calls in flight together that fail together (one hiccup seen by eight
//! concurrent fetches) count once, so only failures that go on while new calls are tried open
//! the breaker.
//!
//! It logs nothing itself: [`Permit::success`] and [`Permit::failure`] say which
//! [`Transition`] they caused, and each adapter words its own log line.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Breaker {
    /// 0 disables the breaker.
    threshold: u32,
    open_for: Duration,
    state: Mutex<Counted>,
}

/// The state, and how many failures were counted in all: a permit remembers the number it
/// was given at, so a failure of a call begun before the last counted one is not counted again.
#[derive(Debug, Clone, Copy)]
struct Counted {
    state: State,
    failures_counted: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed {
        failures: u32,
    },
    Open {
        until: Instant,
    },
    /// A probe is in flight; everything else is refused until it reports.
    HalfOpen,
}

/// What an outcome changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Nothing the dependency's users would notice.
    None,
    /// The threshold was reached: refusing from now on.
    Opened,
    /// The probe failed: refusing for another period.
    Reopened,
    /// A success after an open period (or during one): serving again.
    Closed,
}

/// The breaker refused; it will let a probe through after `retry_in`.
#[derive(Debug, Clone, Copy)]
pub struct Refused {
    pub retry_in: Duration,
}

/// Leave to call the dependency. Report its outcome; dropped unreported (the call was
/// cancelled), a probe hands its turn to the next caller.
#[derive(Debug)]
pub struct Permit<'a> {
    breaker: &'a Breaker,
    probe: bool,
    reported: bool,
    /// The breaker's count of failures when the call began.
    failures_before: u64,
}

impl Breaker {
    #[must_use]
    pub fn new(threshold: u32, open_for: Duration) -> Self {
        Self {
            threshold,
            open_for,
            state: Mutex::new(Counted {
                state: State::Closed { failures: 0 },
                failures_counted: 0,
            }),
        }
    }

    /// How long an open period lasts.
    #[must_use]
    pub const fn open_for(&self) -> Duration {
        self.open_for
    }

    fn state(&self) -> MutexGuard<'_, Counted> {
        // The state is a plain value, valid whatever a panicking holder left in it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the last outcome left the breaker anything but closed.
    #[must_use]
    pub fn is_open(&self) -> bool {
        !matches!(self.state().state, State::Closed { .. })
    }

    /// Leave to call, or the time until a probe may go.
    ///
    /// # Errors
    /// [`Refused`] while the breaker is open, or half-open with a probe in flight.
    pub fn try_acquire(&self) -> Result<Permit<'_>, Refused> {
        let mut counted = self.state();
        let probe = match counted.state {
            State::Closed { .. } => false,
            State::Open { until } => {
                let now = Instant::now();
                if now < until {
                    return Err(Refused {
                        retry_in: until - now,
                    });
                }
                counted.state = State::HalfOpen;
                true
            }
            State::HalfOpen => {
                return Err(Refused {
                    retry_in: Duration::ZERO,
                });
            }
        };
        Ok(Permit {
            breaker: self,
            probe,
            reported: false,
            failures_before: counted.failures_counted,
        })
    }

    fn record(&self, permit: &Permit<'_>, success: bool) -> Transition {
        let mut counted = self.state();
        let probe = permit.probe;
        // A failure of a call that began before the last counted failure belongs to that burst.
        let same_burst = counted.failures_counted != permit.failures_before;
        let (next, transition) = match (success, probe, counted.state) {
            (true, true, _) | (true, false, State::Open { .. } | State::HalfOpen) => {
                (State::Closed { failures: 0 }, Transition::Closed)
            }
            (true, false, State::Closed { .. }) => {
                (State::Closed { failures: 0 }, Transition::None)
            }
            (false, true, _) => (self.open_until_later(), Transition::Reopened),
            (false, false, current @ State::Closed { .. }) if same_burst => {
                (current, Transition::None)
            }
            (false, false, State::Closed { failures }) => {
                counted.failures_counted = counted.failures_counted.wrapping_add(1);
                let failures = failures.saturating_add(1);
                if self.threshold > 0 && failures >= self.threshold {
                    (self.open_until_later(), Transition::Opened)
                } else {
                    (State::Closed { failures }, Transition::None)
                }
            }
            // A call that began before the circuit opened: the open period stands.
            (false, false, current) => (current, Transition::None),
        };
        counted.state = next;
        transition
    }

    fn open_until_later(&self) -> State {
        let now = Instant::now();
        State::Open {
            until: now.checked_add(self.open_for).unwrap_or(now),
        }
    }
}

impl Permit<'_> {
    /// Whether this is the one call let through after an open period.
    #[must_use]
    pub const fn is_probe(&self) -> bool {
        self.probe
    }

    /// The call succeeded.
    pub fn success(mut self) -> Transition {
        self.reported = true;
        self.breaker.record(&self, true)
    }

    /// The call failed.
    pub fn failure(mut self) -> Transition {
        self.reported = true;
        self.breaker.record(&self, false)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.reported && self.probe {
            let mut counted = self.breaker.state();
            if counted.state == State::HalfOpen {
                counted.state = State::Open {
                    until: Instant::now(),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn opens_after_threshold_failures_in_a_row_and_a_success_resets_the_count() {
        let breaker = Breaker::new(3, Duration::from_secs(60));
        breaker.try_acquire().unwrap().failure();
        breaker.try_acquire().unwrap().failure();
        breaker.try_acquire().unwrap().success();
        breaker.try_acquire().unwrap().failure();
        breaker.try_acquire().unwrap().failure();
        assert!(
            breaker.try_acquire().is_ok(),
            "two failures after a success"
        );
        breaker.try_acquire().unwrap().failure();
        let refused = breaker.try_acquire().unwrap_err();
        assert!(refused.retry_in > Duration::from_secs(50));
    }

    #[test]
    fn after_open_for_one_probe_passes_and_its_success_closes() {
        let breaker = Breaker::new(1, Duration::ZERO);
        breaker.try_acquire().unwrap().failure();
        let probe = breaker.try_acquire().unwrap();
        assert!(breaker.try_acquire().is_err(), "only one probe at a time");
        probe.success();
        breaker.try_acquire().unwrap().failure();
        assert!(breaker.try_acquire().is_ok());
    }

    #[test]
    fn a_failed_probe_reopens_for_the_full_period() {
        let breaker = Breaker::new(1, Duration::from_millis(0));
        breaker.try_acquire().unwrap().failure();
        let breaker = Breaker {
            open_for: Duration::from_secs(60),
            ..breaker
        };
        breaker.try_acquire().unwrap().failure();
        assert!(breaker.try_acquire().is_err());
    }

    #[test]
    fn a_cancelled_probe_hands_its_turn_on() {
        let breaker = Breaker::new(1, Duration::ZERO);
        breaker.try_acquire().unwrap().failure();
        drop(breaker.try_acquire().unwrap());
        assert!(breaker.try_acquire().is_ok());
    }

    #[test]
    fn calls_in_flight_together_that_fail_together_count_as_one_failure() {
        let breaker = Breaker::new(3, Duration::from_secs(60));
        // Eight calls begun together, all failing: one burst.
        let burst: Vec<_> = (0..8).map(|_| breaker.try_acquire().unwrap()).collect();
        for permit in burst {
            assert_eq!(permit.failure(), Transition::None);
        }
        assert!(!breaker.is_open());
        // Two more bursts, each begun after the last failure: three in a row open it.
        breaker.try_acquire().unwrap().failure();
        let (a, b) = (
            breaker.try_acquire().unwrap(),
            breaker.try_acquire().unwrap(),
        );
        assert_eq!(a.failure(), Transition::Opened);
        assert_eq!(b.failure(), Transition::None, "the same burst");
        assert!(breaker.is_open());
    }

    #[test]
    fn a_call_begun_before_a_counted_failure_does_not_count_after_a_success_either() {
        let breaker = Breaker::new(2, Duration::from_secs(60));
        let (early, late) = (
            breaker.try_acquire().unwrap(),
            breaker.try_acquire().unwrap(),
        );
        early.failure();
        breaker.try_acquire().unwrap().success();
        late.failure();
        breaker.try_acquire().unwrap().failure();
        assert!(!breaker.is_open(), "one failure counted since the success");
        breaker.try_acquire().unwrap().failure();
        assert!(breaker.is_open());
    }

    #[test]
    fn threshold_zero_never_opens() {
        let breaker = Breaker::new(0, Duration::from_secs(60));
        for _ in 0..10 {
            breaker.try_acquire().unwrap().failure();
        }
        assert!(breaker.try_acquire().is_ok());
    }

    #[test]
    fn outcomes_name_the_transitions_they_cause() {
        let breaker = Breaker::new(2, Duration::ZERO);
        assert_eq!(breaker.try_acquire().unwrap().failure(), Transition::None);
        assert!(!breaker.is_open());
        assert_eq!(breaker.try_acquire().unwrap().failure(), Transition::Opened);
        assert!(breaker.is_open());
        assert_eq!(
            breaker.try_acquire().unwrap().failure(),
            Transition::Reopened
        );
        assert_eq!(breaker.try_acquire().unwrap().success(), Transition::Closed);
        assert!(!breaker.is_open());
        assert_eq!(breaker.try_acquire().unwrap().success(), Transition::None);
    }
}
