//! A circuit breaker: after `threshold` failed fetches in a row it refuses fetches for
//! `open_for` without touching the upstream, then lets one probe through; the probe's outcome
//! closes it again or reopens it.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct Breaker {
    /// 0 disables the breaker.
    threshold: u32,
    open_for: Duration,
    state: Mutex<State>,
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

/// The breaker refused a fetch; it will let a probe through after `retry_in`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refused {
    pub retry_in: Duration,
}

/// Leave to fetch. Report its outcome; dropped unreported (the fetch was cancelled), a probe
/// hands its turn to the next caller.
#[derive(Debug)]
pub(crate) struct Permit<'a> {
    breaker: &'a Breaker,
    probe: bool,
    reported: bool,
}

impl Breaker {
    pub fn new(threshold: u32, open_for: Duration) -> Self {
        Self {
            threshold,
            open_for,
            state: Mutex::new(State::Closed { failures: 0 }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a plain value, valid whatever a panicking holder left in it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn try_acquire(&self) -> Result<Permit<'_>, Refused> {
        let mut state = self.state();
        let probe = match *state {
            State::Closed { .. } => false,
            State::Open { until } => {
                let now = Instant::now();
                if now < until {
                    return Err(Refused {
                        retry_in: until - now,
                    });
                }
                *state = State::HalfOpen;
                tracing::info!("call platform circuit half-open: letting one probe through");
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
        })
    }

    fn record(&self, probe: bool, success: bool) {
        let mut state = self.state();
        let next = match (success, probe, *state) {
            (true, _, current) => {
                if probe || !matches!(current, State::Closed { .. }) {
                    tracing::info!("call platform circuit closed: the upstream answers again");
                }
                State::Closed { failures: 0 }
            }
            (false, true, _) => {
                tracing::warn!(
                    open_for_ms = millis(self.open_for),
                    "call platform probe failed: circuit open again"
                );
                self.open_until_later()
            }
            (false, false, State::Closed { failures }) => {
                let failures = failures.saturating_add(1);
                if self.threshold > 0 && failures >= self.threshold {
                    tracing::warn!(
                        failures,
                        open_for_ms = millis(self.open_for),
                        "call platform circuit opened: refusing fetches for a while"
                    );
                    self.open_until_later()
                } else {
                    State::Closed { failures }
                }
            }
            // A fetch that began before the circuit opened: the open period stands.
            (false, false, current) => current,
        };
        *state = next;
    }

    fn open_until_later(&self) -> State {
        let now = Instant::now();
        State::Open {
            until: now.checked_add(self.open_for).unwrap_or(now),
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Permit<'_> {
    pub fn success(mut self) {
        self.reported = true;
        self.breaker.record(self.probe, true);
    }

    pub fn failure(mut self) {
        self.reported = true;
        self.breaker.record(self.probe, false);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.reported && self.probe {
            let mut state = self.breaker.state();
            if *state == State::HalfOpen {
                *state = State::Open {
                    until: Instant::now(),
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
    fn threshold_zero_never_opens() {
        let breaker = Breaker::new(0, Duration::from_secs(60));
        for _ in 0..10 {
            breaker.try_acquire().unwrap().failure();
        }
        assert!(breaker.try_acquire().is_ok());
    }
}
