//! Single-flight: concurrent misses on one cache entry are computed once, and every waiter gets
//! the same bytes (or the same error).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use callstats_domain::DomainError;
use tokio::sync::OnceCell;

type Cell = Arc<OnceCell<Result<Bytes, DomainError>>>;

#[derive(Default)]
pub(crate) struct SingleFlight {
    in_flight: Mutex<HashMap<String, Cell>>,
}

impl SingleFlight {
    /// Runs `compute` for `key` unless a run for it is already under way, in which case this
    /// waits for that run's result. If the running caller goes away (its request is dropped),
    /// one of the waiters takes over with its own `compute`.
    pub(crate) async fn run<F, Fut>(&self, key: &str, compute: F) -> Result<Bytes, DomainError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Bytes, DomainError>>,
    {
        let cell = Arc::clone(
            self.in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key.to_owned())
                .or_default(),
        );
        let result = cell.get_or_init(compute).await.clone();
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if in_flight
            .get(key)
            .is_some_and(|current| Arc::ptr_eq(current, &cell))
        {
            in_flight.remove(key);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn concurrent_runs_of_one_key_compute_once() {
        let flights = Arc::new(SingleFlight::default());
        let computed = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (flights, computed) = (Arc::clone(&flights), Arc::clone(&computed));
                tokio::spawn(async move {
                    flights
                        .run("k", || async {
                            computed.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok(Bytes::from_static(b"body"))
                        })
                        .await
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap(), Ok(Bytes::from_static(b"body")));
        }
        assert_eq!(computed.load(Ordering::SeqCst), 1);
        assert!(
            flights.in_flight.lock().unwrap().is_empty(),
            "finished runs are forgotten"
        );
    }

    #[tokio::test]
    async fn errors_are_shared_but_not_remembered() {
        let flights = SingleFlight::default();
        let failed = flights
            .run("k", || async { Err(DomainError::UpstreamUnavailable) })
            .await;
        assert_eq!(failed, Err(DomainError::UpstreamUnavailable));
        let retried = flights
            .run("k", || async { Ok(Bytes::from_static(b"ok")) })
            .await;
        assert_eq!(retried, Ok(Bytes::from_static(b"ok")));
    }

    #[tokio::test]
    async fn a_waiter_takes_over_when_the_running_caller_is_dropped() {
        let flights = Arc::new(SingleFlight::default());
        let leader = {
            let flights = Arc::clone(&flights);
            tokio::spawn(async move {
                flights
                    .run("k", || async {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        Ok(Bytes::from_static(b"never"))
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let follower = {
            let flights = Arc::clone(&flights);
            tokio::spawn(async move {
                flights
                    .run("k", || async { Ok(Bytes::from_static(b"mine")) })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        leader.abort();
        assert_eq!(follower.await.unwrap(), Ok(Bytes::from_static(b"mine")));
    }
}
