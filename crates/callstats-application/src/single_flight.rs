//! Single flight: concurrent requests for one key share one run of the work, which runs as a
//! task of its own, so a caller that goes away (its client disconnected, its deadline passed)
//! neither cancels the work half-way nor wastes it: the result still reaches whatever it
//! stores into. A finished run is forgotten, so an error is shared but never remembered.
//!
//! Spawned work is where panics stop: a task that panics ends there (Tokio catches the unwind),
//! and its [`JoinError`] becomes the run's value through [`join_failure`], here and in the
//! compute pool. What the work held (a lock across replicas) is given up as it unwinds.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use tokio::task::JoinError;
use tracing::Instrument as _;

/// A run every caller of one key awaits.
pub type Flight<V> = Shared<BoxFuture<'static, V>>;

/// The runs under way, by key.
pub struct Flights<K, V> {
    running: Mutex<HashMap<K, Flight<V>>>,
    /// The value of a run that panicked, from the panic's message.
    failed: fn(String) -> V,
}

impl<K, V> Flights<K, V>
where
    K: Eq + Hash + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// `failed` makes the value of a run that panicked (every caller of that run gets it).
    #[must_use]
    pub fn new(failed: fn(String) -> V) -> Arc<Self> {
        Arc::new(Self {
            running: Mutex::new(HashMap::new()),
            failed,
        })
    }

    /// The run under way for `key`, if any.
    pub fn running(&self, key: &K) -> Option<Flight<V>> {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// The run under way for `key`, or a new one of `work`, spawned on the current Tokio
    /// runtime. `work` is only called when no run is under way.
    pub fn join<F>(self: &Arc<Self>, key: &K, work: impl FnOnce() -> F) -> Flight<V>
    where
        F: Future<Output = V> + Send + 'static,
    {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(flight) = running.get(key) {
            return flight.clone();
        }
        // The run carries the span of the request that started it: its lines name that
        // request, also when other requests join the run later.
        let work = work().in_current_span();
        let forget = Forget {
            flights: Arc::clone(self),
            key: key.clone(),
        };
        // Spawned while the map is locked: the run cannot forget itself before it is recorded.
        let task = tokio::spawn(async move {
            let _forget = forget;
            work.await
        });
        let failed = self.failed;
        let flight = async move { task.await.unwrap_or_else(|err| failed(join_failure(err))) }
            .boxed()
            .shared();
        running.insert(key.clone(), flight.clone());
        flight
    }
}

/// Removes a run from the map when it ends, whether it returned or panicked.
struct Forget<K: Eq + Hash, V> {
    flights: Arc<Flights<K, V>>,
    key: K,
}

impl<K: Eq + Hash, V> Drop for Forget<K, V> {
    fn drop(&mut self) {
        self.flights
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}

/// Why a spawned task gave no value: its panic's message, or its cancellation.
#[must_use]
pub fn join_failure(err: JoinError) -> String {
    match err.try_into_panic() {
        Ok(panic) => panic_message(panic.as_ref()),
        Err(err) => err.to_string(),
    }
}

/// The text of a panic's payload.
#[must_use]
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    type Outcome = Result<&'static str, String>;

    fn flights() -> Arc<Flights<&'static str, Outcome>> {
        Flights::new(Err)
    }

    /// No run is under way.
    fn idle(flights: &Flights<&'static str, Outcome>) -> bool {
        flights.running.lock().unwrap().is_empty()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_callers_of_one_key_share_one_run() {
        let flights = flights();
        let runs = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..20)
            .map(|_| {
                let (flights, runs) = (Arc::clone(&flights), Arc::clone(&runs));
                tokio::spawn(async move {
                    flights
                        .join(&"k", || async move {
                            runs.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok("body")
                        })
                        .await
                })
            })
            .collect();
        for caller in callers {
            assert_eq!(caller.await.unwrap(), Ok("body"));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(idle(&flights), "a finished run is forgotten");
    }

    #[tokio::test]
    async fn errors_are_shared_but_not_remembered() {
        let flights = flights();
        let failed = flights
            .join(&"k", || async { Err("down".to_owned()) })
            .await;
        assert_eq!(failed, Err("down".to_owned()));
        let retried = flights.join(&"k", || async { Ok("up") }).await;
        assert_eq!(retried, Ok("up"));
    }

    #[tokio::test]
    async fn a_run_goes_on_when_its_callers_go_away() {
        let flights = flights();
        let finished = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&finished);
        let caller = flights.join(&"k", || async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            seen.fetch_add(1, Ordering::SeqCst);
            Ok("stored")
        });
        drop(caller);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(finished.load(Ordering::SeqCst), 1);
        assert!(idle(&flights));
    }

    #[tokio::test]
    async fn a_run_that_panics_answers_every_caller_and_is_forgotten() {
        let flights = flights();
        let answer = flights.join(&"k", || async { panic!("exploded") }).await;
        assert_eq!(answer, Err("exploded".to_owned()));
        assert!(idle(&flights));
    }
}
